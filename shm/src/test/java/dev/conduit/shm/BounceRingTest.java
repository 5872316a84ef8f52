package dev.conduit.shm;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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

    /**
     * A receiver whose application keeps a payload releases the ring only up to it, and says how
     * far it read: its sender tells payloads kept from payloads a receiver that could not map the
     * ring dropped, which it read past without a word.
     */
    @Test
    void aReceiverThatKeepsAPayloadSaysItReadWhatItHasNotReleased() {
        long before = sender.position();
        sender.reserve(4 << 10);
        sender.reserve(4 << 10);
        assertThat(sender.readAll()).as("nothing said yet, as by a receiver that could not map the ring").isFalse();
        receiver.release(before); // the first payload kept: released up to its start
        receiver.markRead(sender.position());
        assertThat(sender.drained()).isFalse();
        assertThat(sender.readAll()).as("both read, one kept").isTrue();
        sender.reserve(4 << 10);
        assertThat(sender.readAll()).as("a payload reserved after the receiver's word").isFalse();
        receiver.release(sender.position());
        assertThat(sender.drained()).isTrue();
        assertThat(sender.readAll()).as("released, past the receiver's last word").isTrue();
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

    /**
     * A payload that does not fit before the ring's end starts again at 0 and leaves the end
     * unused: that end counts as in use too, or the payload would be written over one the receiver
     * has not released, at the ring's start.
     */
    @Test
    void aPayloadThatSkipsTheRingsEndCountsTheSkipAsInUse() {
        sender.reserve(4 << 10);
        sender.reserve(4 << 10);
        sender.reserve(4 << 10);
        receiver.release(4 << 10); // the first released: 4 KiB free at the start, 4 KiB at the end
        assertThat(sender.reserve(6 << 10)).as("4 KiB skipped at the end, and 6 KiB from the start hold 4 KiB unreleased").isNegative();
        assertThat(sender.reserve(4 << 10)).as("what fits before the end").isEqualTo(BounceRing.HEADER_LENGTH + (12 << 10));
        assertThat(sender.reserve(4 << 10)).as("what fits at the start").isEqualTo(BounceRing.HEADER_LENGTH);
    }

    /**
     * Every payload an honest sender announces follows the receiver's last release
     * ({@link BounceRing#follows}): random sizes, reservations larger than the payload written (a
     * zero-copy send), the skipped end of an empty ring; and the receiver releasing in order.
     */
    @Test
    void everyPayloadAnHonestSenderAnnouncesFollowsTheLastRelease() {
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        java.util.ArrayDeque<long[]> announced = new java.util.ArrayDeque<>(); // offset, length, end
        long released = 0;
        for (int i = 0; i < 100_000; i++) {
            long reserved = random.nextInt(4) == 0 ? 9 << 10 : random.nextLong(0, 5 << 10); // now and then more than half the ring
            long written = random.nextBoolean() ? reserved : random.nextLong(0, reserved + 1);
            long offset = sender.reserve(reserved);
            if (offset >= 0) announced.add(new long[] {offset, written, sender.position()});
            if (offset < 0 || random.nextInt(3) == 0) {
                while (!announced.isEmpty() && (offset < 0 || random.nextBoolean())) {
                    long[] a = announced.poll();
                    assertThat(receiver.follows(released, a[2], a[0], a[1])).as("payload %d of %d bytes ending at %d", a[0], a[1], a[2]).isTrue();
                    receiver.release(a[2]);
                    released = a[2];
                }
            }
        }
    }

    /** What no honest sender announces: an end before the last release, two rings past it, a payload past its end or in the header. */
    @Test
    void aReleaseBackwardsFarAheadOrBeforeItsPayloadDoesNotFollow() {
        long offset = sender.reserve(1024);
        long end = sender.position();
        assertThat(receiver.follows(0, end, offset, 1024)).isTrue();
        assertThat(receiver.follows(end + 64, end, offset, 1024)).as("before the last release").isFalse();
        assertThat(receiver.follows(0, end + 2 * receiver.capacity(), offset, 1024)).as("two rings ahead").isFalse();
        assertThat(receiver.follows(0, end, offset + 64, 1024)).as("the payload past the end").isFalse();
        assertThat(receiver.contains(BounceRing.HEADER_LENGTH - 64, 64)).as("a payload in the ring's header").isFalse();
        assertThat(receiver.follows(0, end, 0, 64)).as("a payload in the ring's header").isFalse();
    }

    /**
     * The farthest an honest sender's end gets from the last release: the ring empty one line past
     * its start, a whole ring reserved, which skips all but that line of the end. It follows; an
     * end two rings past the release does not.
     */
    @Test
    void theFarthestEndAnHonestSenderReachesFollowsAndTwoRingsDoesNot() {
        long capacity = receiver.capacity();
        sender.reserve(64);
        receiver.release(64);
        long offset = sender.reserve(capacity);
        assertThat(offset).isEqualTo(BounceRing.HEADER_LENGTH);
        assertThat(sender.position()).isEqualTo(2 * capacity);
        assertThat(receiver.follows(64, sender.position(), offset, capacity)).isTrue();
        assertThat(receiver.follows(0, sender.position(), offset, capacity)).as("two rings past the release").isFalse();
    }

    /** A receiver attaches only to a ring whose capacity word is what it mapped: the ring's mask and bounds come from it. */
    @Test
    void attachingRefusesACapacityWordOtherThanTheMapping() {
        memory.set(java.lang.foreign.ValueLayout.JAVA_LONG, BounceRing.CAPACITY_OFFSET, 8 << 10);
        assertThatThrownBy(() -> BounceRing.attach(memory)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("bounce ring says capacity 8192 but " + memory.byteSize() + " bytes are mapped");
    }

    /** A release past what the sender reserved (a record in its name moved it) fails the sender's next reservation, before it writes over unread payloads. */
    @Test
    void aReleasePastWhatWasReservedFailsTheNextReservation() {
        sender.reserve(1024);
        receiver.release(sender.position() + 4096);
        assertThatThrownBy(() -> sender.reserve(64)).isInstanceOf(ReceiveQueue.CorruptQueueException.class)
                .hasMessageContaining("bounce ring was released up to position");
        assertThat(sender.drained()).as("nothing to wait for in a close").isTrue();
    }

    /** An empty payload still takes a line: the position moves, so that a close waits for the receiver to read it. */
    @Test
    void anEmptyPayloadMovesThePosition() {
        long offset = sender.reserve(0);
        assertThat(offset).isEqualTo(BounceRing.HEADER_LENGTH);
        assertThat(sender.position()).isEqualTo(64);
        assertThat(sender.drained()).as("not until the receiver released it").isFalse();
        assertThat(receiver.follows(0, sender.position(), offset, 0)).isTrue();
        receiver.release(sender.position());
        assertThat(sender.drained()).isTrue();
    }
}
