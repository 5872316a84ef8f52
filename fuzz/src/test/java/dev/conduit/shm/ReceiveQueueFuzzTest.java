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
 * ring, or throws {@link ReceiveQueue.CorruptQueueException} for a bad length word, which it skips
 * only within the claims, never past the tail; taking back an unnamed claim (of
 * the tail word's owner or of nobody's), skipping a dead one, the blocked-head queries and the
 * header check never fail.
 */
class ReceiveQueueFuzzTest {

    private static final long CAPACITY = 4096;

    @FuzzTest(maxExecutions = 150_000, maxDuration = "2m")
    void anyRingContentsPollOrCorrupt(FuzzedDataProvider data) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(ReceiveQueue.mappedLength(CAPACITY), 4096);
            ReceiveQueue queue = ReceiveQueue.format(memory, new byte[ReceiveQueue.TOKEN_LENGTH]);
            // The tail word: an owner tag over the tail in lines; named-up-to anywhere near it.
            memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, ReceiveQueue.packTail(data.consumeLong(0, 3 * CAPACITY), data.consumeInt(0, 3)));
            memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, data.consumeLong(0, 3 * CAPACITY));
            byte[] ring = data.consumeRemainingAsBytes();
            MemorySegment.copy(ring, 0, memory, ValueLayout.JAVA_BYTE, ReceiveQueue.HEADER_LENGTH, (int) Math.min(ring.length, CAPACITY));
            for (int round = 0; round < 8; round++) {
                // Exact, rebuilt from position 0: every position here lies within the first 2^32 lines.
                long tail = ReceiveQueue.tailAbove(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET), 0);
                boolean headWithinClaims = queue.headPosition() <= tail;
                try {
                    queue.poll((m, offset, type, length) -> {
                        assertThat(offset).isGreaterThanOrEqualTo(ReceiveQueue.HEADER_LENGTH);
                        assertThat(offset + length).isLessThanOrEqualTo(m.byteSize());
                        assertThat(length).isGreaterThanOrEqualTo(8);
                    }, 64);
                } catch (ReceiveQueue.CorruptQueueException expected) {
                    assertThat(expected.getMessage()).startsWith("receive queue corrupted");
                    // A well-formed record past every claim is read (the head then passes the tail); a bad word is skipped only within the claims.
                    if (headWithinClaims) {
                        assertThat(queue.headPosition()).as("head after skipping a bad word, tail %d", tail).isLessThanOrEqualTo(tail);
                    }
                }
                queue.isHeadBlocked();
                queue.isHeadUnnamed();
                int owner = queue.unnamedClaimant();
                queue.blockedConnection();
                queue.headerDamage(new byte[ReceiveQueue.TOKEN_LENGTH]);
                if (round % 2 == 0) queue.takeBackUnnamedClaim(round % 4 == 0 ? owner : 0);
                else queue.skipDeadClaim();
            }
        }
    }
}
