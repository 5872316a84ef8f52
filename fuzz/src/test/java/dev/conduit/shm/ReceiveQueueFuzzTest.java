package dev.conduit.shm;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A peer that maps a queue may scribble anything over the ring, not only well-framed records. For
 * any ring contents and tail, {@link ReceiveQueue#poll} hands out only records that lie inside the
 * ring, or throws {@link ReceiveQueue.CorruptQueueException}; taking back an unnamed claim,
 * skipping a dead one and the blocked-head queries never fail.
 */
class ReceiveQueueFuzzTest {

    private static final long CAPACITY = 4096;

    @FuzzTest(maxExecutions = 150_000, maxDuration = "2m")
    void anyRingContentsPollOrCorrupt(FuzzedDataProvider data) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(ReceiveQueue.mappedLength(CAPACITY), 4096);
            ReceiveQueue queue = ReceiveQueue.format(memory, new byte[ReceiveQueue.TOKEN_LENGTH]);
            memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, data.consumeLong(0, 3 * CAPACITY));
            byte[] ring = data.consumeRemainingAsBytes();
            MemorySegment.copy(ring, 0, memory, ValueLayout.JAVA_BYTE, ReceiveQueue.HEADER_LENGTH, (int) Math.min(ring.length, CAPACITY));
            for (int round = 0; round < 8; round++) {
                try {
                    queue.poll((m, offset, type, length) -> {
                        assertThat(offset).isGreaterThanOrEqualTo(ReceiveQueue.HEADER_LENGTH);
                        assertThat(offset + length).isLessThanOrEqualTo(m.byteSize());
                        assertThat(length).isGreaterThanOrEqualTo(8);
                    }, 64);
                } catch (ReceiveQueue.CorruptQueueException expected) {
                    assertThat(expected.getMessage()).startsWith("receive queue corrupted");
                }
                queue.isHeadBlocked();
                queue.isHeadUnnamed();
                queue.blockedConnection();
                if (round % 2 == 0) queue.takeBackUnnamedClaim();
                else queue.skipDeadClaim();
            }
        }
    }
}
