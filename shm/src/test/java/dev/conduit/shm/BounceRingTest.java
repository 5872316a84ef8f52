package dev.conduit.shm;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;

/** The bounce ring's reservations, with sender and receiver as two flyweights over one segment. */
class BounceRingTest {

    private final MemorySegment memory = Arena.ofAuto().allocate(BounceRing.mappedLength(16 << 10), 4096);
    private final BounceRing sender = BounceRing.format(memory);
    private final BounceRing receiver = BounceRing.attach(memory);

    @Test
    void aPayloadOfMoreThanHalfTheRingFitsOnceTheRingIsEmpty() {
        assertThat(sender.reserve(6 << 10)).isNotNegative();
        assertThat(sender.reserve(12 << 10)).as("6 KiB still in use").isNegative();
        receiver.release(sender.position());
        // 10 KiB to the end, 6 KiB from the start: neither holds 12 KiB, but nothing is in use.
        long offset = sender.reserve(12 << 10);
        assertThat(offset).as("12 KiB in an empty 16 KiB ring").isEqualTo(BounceRing.HEADER_LENGTH);
        assertThat(receiver.contains(offset, 12 << 10)).isTrue();
        assertThat(sender.reserve(4 << 10)).as("nothing more until the receiver releases the 12 KiB").isNegative();
        receiver.release(sender.position());
        assertThat(sender.drained()).isTrue();
        assertThat(sender.reserve(16 << 10)).as("the whole ring, once empty").isEqualTo(BounceRing.HEADER_LENGTH);
    }

    @Test
    void reservationsNeverOverlapWhatTheReceiverHasNotReleased() {
        long a = sender.reserve(4 << 10);
        long b = sender.reserve(4 << 10);
        long c = sender.reserve(4 << 10);
        assertThat(new long[] {a, b, c}).containsExactly(BounceRing.HEADER_LENGTH, BounceRing.HEADER_LENGTH + (4 << 10),
                BounceRing.HEADER_LENGTH + (8 << 10));
        assertThat(sender.reserve(8 << 10)).as("4 KiB free at the end, none at the start").isNegative();
        assertThat(sender.reserve(4 << 10)).isEqualTo(BounceRing.HEADER_LENGTH + (12 << 10));
        assertThat(sender.reserve(1)).as("full").isNegative();
    }
}
