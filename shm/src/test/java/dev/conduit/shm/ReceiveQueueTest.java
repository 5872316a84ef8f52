package dev.conduit.shm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The ring protocol, with receiver and sender as two flyweights over one segment. */
class ReceiveQueueTest {

    private static final byte[] TOKEN = new byte[16];
    private final MemorySegment memory = Arena.ofAuto().allocate(ReceiveQueue.mappedLength(4096), 4096);
    private final ReceiveQueue receiver = ReceiveQueue.format(memory, TOKEN);
    private final ReceiveQueue sender = ReceiveQueue.attach(memory, TOKEN);

    private long send(int type, long value, int length) {
        long offset = sender.claim(length);
        if (offset < 0) return offset;
        memory.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION, value);
        sender.commit(offset, length, type);
        return offset;
    }

    /** The tail position, rebuilt from the receiver's head. */
    private long tail() {
        return ReceiveQueue.tailAbove(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET), receiver.headPosition());
    }

    /** A sender of {@code owner} that made its CAS on the tail for {@code length} bytes and stopped (or died) before its take. */
    private long claimUnnamed(int length, int owner) {
        long position = tail();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, ReceiveQueue.packTail(position + length, owner));
        return position;
    }

    private long namedUpTo() {
        return memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET);
    }

    private List<Long> drain() {
        List<Long> values = new ArrayList<>();
        receiver.poll((m, offset, type, length) -> values.add(m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION)), 1000);
        return values;
    }

    /** The receiver lists the last 128 connections it refused, with their reasons; a sender finds its own, once the count moved. */
    @Test
    void aSenderFindsItsConnectionAmongTheLast128Refused() {
        assertThat(sender.refusals()).isZero();
        assertThat(sender.refusalOf(42)).isZero();
        for (long connection = 1; connection <= 130; connection++) receiver.refuse(connection, (int) (connection % 3) + 1);
        assertThat(sender.refusals()).isEqualTo(130);
        assertThat(sender.refusalOf(1)).as("overwritten").isZero();
        assertThat(sender.refusalOf(2)).as("overwritten").isZero();
        for (long connection = 3; connection <= 130; connection++) {
            assertThat(sender.refusalOf(connection)).as("connection %d", connection).isEqualTo((int) (connection % 3) + 1);
        }
        assertThat(sender.refusalOf(131)).isZero();
    }

    @Test
    void recordsArriveInOrderAcrossManyWraps() {
        long next = 1;
        long expected = 1;
        for (int round = 0; round < 2000; round++) {
            int length = 64 * (1 + round % 9);
            while (send(ReceiveQueue.MSG, next, length) < 0) {
                for (long v : drain()) assertThat(v).isEqualTo(expected++);
            }
            next++;
        }
        while (receiver.hasPending()) {
            for (long v : drain()) assertThat(v).isEqualTo(expected++);
        }
        assertThat(expected).isEqualTo(next);
        assertThat(receiver.hasPending()).isFalse();
    }

    /**
     * The tail word holds the tail's line count mod 2^32, so it wraps every 2^38 bytes (256 GiB),
     * which a queue of small messages passes within minutes: records of every size still arrive in
     * order across it, the tail rebuilt from the head on both sides, the header check finds no
     * damage in a tail word that wrapped before the head did, and the word's line count never
     * spills into the last claimant's owner tag beside it.
     */
    @Test
    void recordsArriveInOrderAcrossTheTailWordsWrapAt256GiB() {
        MemorySegment ring = Arena.ofAuto().allocate(ReceiveQueue.mappedLength(4096), 4096);
        ReceiveQueue rx = ReceiveQueue.formatFrom(ring, TOKEN, TAIL_WORD_WRAP - 8 * 4096);
        ReceiveQueue tx = ReceiveQueue.attach(ring, TOKEN);
        int owner = 2; // even: a line count spilling into bit 32 would make it 3
        long next = 1;
        long[] expected = {1};
        for (int round = 0; round < 2000; round++) {
            int length = 64 * (1 + round % 9);
            long offset;
            while ((offset = tx.claim(length, (long) owner << 32 | next)) < 0) {
                assertThat(rx.headerDamage(TOKEN)).isNull();
                rx.poll((m, at, type, size) -> assertThat(m.get(ValueLayout.JAVA_LONG, at + ReceiveQueue.CONNECTION))
                        .isEqualTo(expected[0]++), 1000);
            }
            assertThat(ReceiveQueue.tailOwner(ring.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET))).isEqualTo(owner);
            ring.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION, next++);
            tx.commit(offset, length, ReceiveQueue.MSG);
        }
        while (rx.hasPending()) {
            rx.poll((m, at, type, size) -> assertThat(m.get(ValueLayout.JAVA_LONG, at + ReceiveQueue.CONNECTION))
                    .isEqualTo(expected[0]++), 1000);
        }
        assertThat(expected[0]).isEqualTo(next);
        assertThat(rx.headPosition()).as("past the wrap").isGreaterThan(TAIL_WORD_WRAP);
        assertThat(rx.headerDamage(TOKEN)).isNull();
    }

    /** Where the tail word's line count wraps: 2^32 lines of 64 bytes. */
    private static final long TAIL_WORD_WRAP = 1L << 38;

    /**
     * A receiver of a large ring zeroes what it read, and gives it back to its senders, every
     * {@value ReceiveQueue#ZERO_SLICE} bytes, not every 64 KiB (the most its shared head may lag,
     * which senders size their records by, and still do): 64 KiB zeroed at once, every 1,024th
     * small message, cost the one poll that did it some 3 µs, the 99.9th percentile of a ping-pong.
     * Counted in bytes, not timed: after each record read the shared head lags the read position
     * by less than a slice, and it has moved by whole slices.
     */
    @Test
    void aLargeRingIsZeroedAndGivenBackInSlicesOf16KiBNotBatchesOf64() {
        MemorySegment m = Arena.ofAuto().allocate(ReceiveQueue.mappedLength(2 << 20), 4096);
        ReceiveQueue rx = ReceiveQueue.format(m, TOKEN);
        ReceiveQueue tx = ReceiveQueue.attach(m, TOKEN);
        long sharedHead = 0;
        for (int i = 0; i < 1024; i++) { // 64 KiB of 64-byte records, one poll each
            long offset = tx.claim(64);
            tx.commit(offset, 64, ReceiveQueue.MSG);
            assertThat(rx.poll((segment, at, type, length) -> { }, 1)).isEqualTo(1);
            sharedHead = m.get(ValueLayout.JAVA_LONG, ReceiveQueue.HEAD_OFFSET);
            assertThat(rx.headPosition() - sharedHead).as("read and not yet given back, after record %d", i)
                    .isLessThan(ReceiveQueue.ZERO_SLICE);
            assertThat(sharedHead % ReceiveQueue.ZERO_SLICE).isZero();
        }
        assertThat(sharedHead).isEqualTo(64 << 10);
        assertThat(rx.headerDamage(TOKEN)).as("the head the receiver keeps is the one it wrote").isNull();
    }

    @Test
    void aRingFilledUpToTheSharedHeadIsNotReadPastIt() {
        // Reading 63 records zeroes them and moves the shared head to ring offset 4032; the next two
        // stay unzeroed (less than a zero batch), the second of them at ring offset 0.
        long value = 1;
        long expected = 1;
        for (int i = 0; i < 63; i++) send(ReceiveQueue.MSG, value++, 64);
        for (long v : drain()) assertThat(v).isEqualTo(expected++);
        for (int i = 0; i < 2; i++) send(ReceiveQueue.MSG, value++, 64);
        for (int i = 0; i < 2; i++) for (long v : drain()) assertThat(v).isEqualTo(expected++);
        // Senders may now fill the ring exactly up to the shared head: ring offset 4032, where the
        // record read above still lies, consumed and not zeroed.
        while (send(ReceiveQueue.MSG, value, 64) >= 0) value++;
        List<Long> read = new ArrayList<>();
        for (int round = 0; round < 4 && receiver.hasPending(); round++) read.addAll(drain());
        assertThat(read).as("each record once, none of an earlier lap").hasSize((int) (value - expected)).doesNotHaveDuplicates();
        for (long v : read) assertThat(v).isEqualTo(expected++);
    }

    @Test
    void randomSendsAndPartialPollsDeliverEveryRecordOnceInOrder() {
        for (long seed = 0; seed < 40; seed++) {
            java.util.Random random = new java.util.Random(seed);
            MemorySegment m = Arena.ofAuto().allocate(ReceiveQueue.mappedLength(4096), 4096);
            ReceiveQueue rx = ReceiveQueue.format(m, TOKEN);
            ReceiveQueue tx = ReceiveQueue.attach(m, TOKEN);
            java.util.ArrayDeque<Long> inFlight = new java.util.ArrayDeque<>();
            long next = 1;
            for (int step = 0; step < 20_000; step++) {
                if (random.nextInt(3) != 0) {
                    // Lines from 1 to 16; when one does not fit, smaller ones fill the ring up to the shared head,
                    // exactly where a missing bound once read an old record.
                    int length = random.nextBoolean() ? 64 : 64 * (1 + random.nextInt(16));
                    long offset = tx.claim(length);
                    while (offset < 0 && length > 64) {
                        length = Math.max(64, length / 2 & -64);
                        offset = tx.claim(length);
                    }
                    if (offset < 0) continue;
                    m.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION, next);
                    tx.commit(offset, length, ReceiveQueue.MSG);
                    inFlight.add(next++);
                } else {
                    long currentSeed = seed;
                    rx.poll((mem, offset, type, length) -> assertThat(mem.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION))
                            .as("seed %d", currentSeed).isEqualTo(inFlight.poll()), random.nextBoolean() ? 1 + random.nextInt(4) : 1000);
                }
            }
            long currentSeed = seed;
            for (int round = 0; round < 100 && !inFlight.isEmpty(); round++) {
                rx.poll((mem, offset, type, length) -> assertThat(mem.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION))
                        .as("seed %d", currentSeed).isEqualTo(inFlight.poll()), 1000);
            }
            assertThat(inFlight).as("seed %d: records never delivered", seed).isEmpty();
            assertThat(rx.hasPending()).as("seed %d", seed).isFalse();
        }
    }

    @Test
    void aRecordItsHandlerCannotHandleYetStaysAtTheHeadWithEverythingBehindIt() {
        for (long v = 1; v <= 3; v++) send(ReceiveQueue.MSG, v, 64);
        List<Long> handled = new ArrayList<>();
        IllegalStateException why = new IllegalStateException("not now");
        ReceiveQueue.RecordHandler refusingTwo = (m, offset, type, length) -> {
            long v = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION);
            if (v == 2) throw new ReceiveQueue.RecordNotReady(why);
            handled.add(v);
        };
        for (int attempt = 0; attempt < 2; attempt++) {
            assertThatThrownBy(() -> receiver.poll(refusingTwo, 10)).isInstanceOf(ReceiveQueue.RecordNotReady.class)
                    .extracting(e -> ((ReceiveQueue.RecordNotReady) e).reason()).isSameAs(why);
        }
        assertThat(handled).containsExactly(1L);
        assertThat(receiver.hasPending()).isTrue();
        assertThat(drain()).containsExactly(2L, 3L);
        assertThat(receiver.hasPending()).isFalse();
    }

    @Test
    void aRecordThatWaitsForWorkUnderWayEndsThePollWithoutAnErrorAndStaysAtTheHead() {
        for (long v = 1; v <= 3; v++) send(ReceiveQueue.MSG, v, 64);
        List<Long> handled = new ArrayList<>();
        ReceiveQueue.RecordHandler waitingOnTwo = (m, offset, type, length) -> {
            long v = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION);
            if (v == 2) throw ReceiveQueue.RecordNotReady.LATER;
            handled.add(v);
        };
        assertThat(receiver.poll(waitingOnTwo, 10)).as("records handed over, the waiting one not counted").isEqualTo(1);
        long afterTheFirst = sender.readPosition();
        assertThat(receiver.poll(waitingOnTwo, 10)).isZero();
        assertThat(sender.readPosition()).as("what a sender sees read: not the waiting record").isEqualTo(afterTheFirst);
        assertThat(handled).containsExactly(1L);
        assertThat(receiver.hasPending()).isTrue();
        assertThat(drain()).containsExactly(2L, 3L);
        assertThat(receiver.hasPending()).isFalse();
    }

    @Test
    void aSenderSeesWhenTheReceiverHasReadPastItsLastRecord() {
        send(ReceiveQueue.MSG, 1, 64);
        send(ReceiveQueue.MSG, 2, 128);
        long last = sender.claimedUpTo();
        assertThat(sender.readPosition()).as("nothing read yet").isLessThan(last);
        assertThat(drain()).containsExactly(1L, 2L);
        assertThat(sender.readPosition()).isEqualTo(last);
    }

    /**
     * A sender counts its own messages past the receiver's read position, once the receiver reads
     * nothing more: not another connection's, not a control record, not what lies beyond its last
     * message, and a record it cannot parse (a length no sender writes, a claim never taken) costs
     * a line, not the count.
     */
    @Test
    void aSenderCountsItsOwnMessagesThatTheReceiverLeftUnread() {
        send(ReceiveQueue.MSG, 7, 64);
        assertThat(drain()).containsExactly(7L);
        send(ReceiveQueue.MSG, 7, 128);
        send(ReceiveQueue.MSG, 8, 64);
        send(ReceiveQueue.CONNECT, 7, 64);
        long garbled = send(ReceiveQueue.MSG, 9, 64);
        memory.set(ValueLayout.JAVA_INT, garbled, 13); // a length no sender writes
        sender.claim(128); // claimed and never taken: free words
        send(ReceiveQueue.LARGE, 7, 192);
        long last = sender.claimedUpTo();
        send(ReceiveQueue.MSG, 7, 64); // past the end given: another's, or not yet counted

        assertThat(sender.unreadMessagesOf(7, last)).isEqualTo(2);
        assertThat(sender.unreadMessagesOf(8, last)).isEqualTo(1);
        assertThat(sender.unreadMessagesOf(7, sender.readPosition())).isZero();
    }

    /**
     * A record of 8 bytes in the ring's last 8 bytes (a length and type a process that maps the
     * queue wrote; no sender writes a record shorter than a line) has no connection field: the
     * count read 8 bytes past the mapped ring there, and threw IndexOutOfBoundsException out of the
     * liveness check (which then never failed the endpoint, and threw again at every check).
     */
    @Test
    void aSendersCountReadsNoConnectionFieldPastTheRingsEnd() {
        send(ReceiveQueue.MSG, 7, 4032);
        long last = send(ReceiveQueue.MSG, 7, 64);
        assertThat(last).isEqualTo(ReceiveQueue.HEADER_LENGTH + 4032);
        memory.set(ValueLayout.JAVA_LONG, last, ReceiveQueue.twoInts(56, ReceiveQueue.PAD));
        memory.set(ValueLayout.JAVA_LONG, last + 56, ReceiveQueue.twoInts(8, ReceiveQueue.MSG));

        assertThat(sender.unreadMessagesOf(7, sender.claimedUpTo())).isEqualTo(1);
    }

    /**
     * Every record is a whole number of cache lines and starts on one, so the count walks lines: a
     * length 8 bytes past a line (a process that maps the queue wrote it) made it step into the
     * next record, read its connection field as a length, and miss that message; now the walk goes
     * on at the next line, and counts each message of the connection among records of every kind.
     */
    @Test
    void aSendersCountStaysOnLinesPastLengthsThatAreNoWholeLines() {
        send(ReceiveQueue.MSG, 7, 64);
        assertThat(drain()).containsExactly(7L);
        send(ReceiveQueue.MSG, 7, 128);
        long overwritten = send(ReceiveQueue.MSG, 9, 64);
        memory.set(ValueLayout.JAVA_LONG, overwritten, ReceiveQueue.twoInts(72, ReceiveQueue.MSG));
        send(ReceiveQueue.MSG, 7, 64);
        send(ReceiveQueue.PAD, 0, 64);
        long eights = send(ReceiveQueue.MSG, 9, 128);
        for (long at = eights; at < eights + 64; at += 8) memory.set(ValueLayout.JAVA_LONG, at, ReceiveQueue.twoInts(8, ReceiveQueue.PAD));
        long negative = send(ReceiveQueue.MSG, 9, 64);
        memory.set(ValueLayout.JAVA_LONG, negative, ReceiveQueue.twoInts(Integer.MIN_VALUE, ReceiveQueue.MSG));
        send(ReceiveQueue.LARGE, 7, 192);
        send(ReceiveQueue.MSG, 8, 64);
        send(ReceiveQueue.CLOSE, 7, 64);
        send(ReceiveQueue.MSG, 7, 256);

        assertThat(sender.unreadMessagesOf(7, sender.claimedUpTo())).isEqualTo(4);
        assertThat(sender.unreadMessagesOf(8, sender.claimedUpTo())).isEqualTo(1);
    }

    /** A read position no receiver writes (off 8 bytes, by a process that maps the queue) makes the count throw nothing. */
    @Test
    void aSendersCountTrustsNoReadPositionOffEightBytes() {
        send(ReceiveQueue.MSG, 7, 64);
        send(ReceiveQueue.MSG, 7, 64);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.READ_OFFSET, 3);

        assertThat(sender.unreadMessagesOf(7, sender.claimedUpTo())).isBetween(0L, 2L);
    }

    /**
     * A read position more than a ring behind the end given (a process that maps the queue wrote
     * it) is no receiver's: at most a ring was claimed, so the count walks one ring and counts each
     * message once, not once per lap of the ring it would walk from there.
     */
    @Test
    void aSendersCountFromAReadPositionMoreThanARingBehindWalksOneRing() {
        send(ReceiveQueue.MSG, 7, 64);
        send(ReceiveQueue.MSG, 7, 64);
        long upTo = sender.claimedUpTo();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.READ_OFFSET, upTo - 3 * sender.capacity());

        assertThat(sender.unreadMessagesOf(7, upTo)).isEqualTo(2);
    }

    /**
     * A length of whole lines that runs past the ring's end (which no sender writes: a record that
     * does not fit there pads the end) moves the count on by one line, to the ring's start, where
     * the next lap's records are: stepping over it by its length skipped the first line of the
     * next lap, and this sender's message there went uncounted.
     */
    @Test
    void aSendersCountStepsOneLineOverALengthPastTheRingsEnd() {
        for (int i = 0; i < 63; i++) send(ReceiveQueue.MSG, 9, 64);
        assertThat(drain()).hasSize(63);
        long last = send(ReceiveQueue.MSG, 9, 64);
        assertThat(last).isEqualTo(ReceiveQueue.HEADER_LENGTH + 4032);
        memory.set(ValueLayout.JAVA_LONG, last, ReceiveQueue.twoInts(128, ReceiveQueue.MSG));
        send(ReceiveQueue.MSG, 7, 64); // the next lap's first line

        assertThat(sender.unreadMessagesOf(7, sender.claimedUpTo())).isEqualTo(1);
    }

    /**
     * A hung peer's queue is counted while its receiver lives and may read, zero and give back the
     * ring to other senders under the walk: the count throws nothing and never says more than this
     * sender's messages that were unread when it began.
     */
    @Test
    void aSendersCountWhileTheReceiverReadsAndOthersSendThrowsNothingAndStaysWithinWhatItSent() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        ReceiveQueue other = ReceiveQueue.attach(memory, TOKEN);
        java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread reader = Thread.ofPlatform().start(() -> {
            try {
                while (!stop.get()) receiver.poll((m, offset, type, length) -> { }, 1000);
            } catch (Throwable t) {
                failed.set(t);
            }
        });
        Thread others = Thread.ofPlatform().start(() -> {
            try {
                java.util.Random random = new java.util.Random(1);
                while (!stop.get()) {
                    int length = 64 * (1 + random.nextInt(8));
                    long offset = other.claim(length);
                    if (offset < 0) continue;
                    // A payload of lengths and types of every kind, where a walk that lands inside the record reads them.
                    for (long at = offset + ReceiveQueue.CONNECTION; at + 8 <= offset + length; at += 8) {
                        memory.set(ValueLayout.JAVA_LONG, at, ReceiveQueue.twoInts(8 * random.nextInt(600), random.nextInt(8)));
                    }
                    memory.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION, 99);
                    other.commit(offset, length, ReceiveQueue.MSG);
                }
            } catch (Throwable t) {
                failed.set(t);
            }
        });
        try {
            long deadline = System.nanoTime() + 2_000_000_000L;
            long rounds = 0;
            long sent = 0;
            while (System.nanoTime() < deadline && failed.get() == null) {
                for (int i = 0; i < 3; i++) if (send(ReceiveQueue.MSG, 7, 64 * (1 + i)) >= 0) sent++;
                long count = sender.unreadMessagesOf(7, sender.claimedUpTo());
                assertThat(count).as("round %d", rounds).isBetween(0L, Math.min(sent, 4096 / 64));
                rounds++;
            }
        } finally {
            stop.set(true);
            reader.join();
            others.join();
        }
        assertThat(failed.get()).isNull();
    }

    @Test
    void sendersSeeAReceiverThatCloses() {
        assertThat(sender.isClosing()).isFalse();
        receiver.markClosing();
        assertThat(sender.isClosing()).isTrue();
    }

    @Test
    void aFullRingRefusesAClaimUntilTheReceiverReads() {
        int accepted = 0;
        while (send(ReceiveQueue.MSG, accepted + 1, 512) >= 0) accepted++;
        assertThat(accepted).isEqualTo(8);
        assertThat(drain()).hasSize(8);
        assertThat(send(ReceiveQueue.MSG, 9, 512)).isNotNegative();
    }

    /**
     * A sender's look for room (a large message's, before it copies its payload) answers as the
     * claim would, claims nothing, and leaves a tail or head no sender writes to the claim, which
     * reports it.
     */
    @Test
    void aLookForRoomAnswersAsTheClaimWouldAndClaimsNothing() {
        assertThat(sender.hasRoomFor(4096)).isTrue();
        while (sender.hasRoomFor(512)) assertThat(send(ReceiveQueue.MSG, 1, 512)).isNotNegative();
        long tail = memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET);
        assertThat(tail()).as("the ring's 4096 bytes claimed").isEqualTo(4096);
        assertThat(send(ReceiveQueue.MSG, 1, 64)).as("what the look said").isNegative();
        assertThat(sender.hasRoomFor(64)).isFalse();
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET)).as("nothing claimed by looking").isEqualTo(tail);
        assertThat(drain()).hasSize(8);
        assertThat(sender.hasRoomFor(512)).as("once the receiver has read").isTrue();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, ReceiveQueue.packTail(4096 + 2 * 4096, 0));
        assertThat(sender.hasRoomFor(64)).as("a tail more than a ring ahead: the claim says what is wrong").isTrue();
        assertThatThrownBy(() -> sender.claim(64, 1)).isInstanceOf(ReceiveQueue.CorruptQueueException.class);
    }

    /**
     * A last claim that stays unnamed (its claimant stopped or died between its CAS and its take) makes
     * a claim find no room, and so must the look a large message makes before it copies its payload into
     * its bounce ring: answered true, every retry copied the payload and then lost the claim.
     */
    @Test
    void aLookForRoomFindsNoneWhileTheLastClaimIsUnnamedAsTheClaimWould() {
        long position = claimUnnamed(64, 0x0bad_cafe);
        assertThat(sender.claim(64, 0x1234_5678_0000_0001L)).as("the claim").isNegative();
        assertThat(sender.hasRoomFor(64)).as("the look, as the claim").isFalse();
        // The claimant takes its record and names it: room again, for both.
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + position, ReceiveQueue.twoInts(-64, 0x0bad_cafe));
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, position + 64);
        assertThat(sender.hasRoomFor(64)).as("the look once the claim is named").isTrue();
        assertThat(sender.claim(64, 0x1234_5678_0000_0001L)).isNotNegative();
    }

    @Test
    void anUncommittedRecordBlocksUntilUnblocked() {
        long claimed = sender.claim(64);
        memory.set(ValueLayout.JAVA_LONG, claimed + ReceiveQueue.CONNECTION, 77);
        send(ReceiveQueue.MSG, 2, 64);
        assertThat(drain()).isEmpty();
        assertThat(receiver.isHeadBlocked()).isTrue();
        assertThat(receiver.isHeadUnnamed()).isFalse();
        assertThat(receiver.blockedConnection()).isEqualTo(77);
        assertThat(receiver.unnamedClaimant()).isZero();
        assertThat(receiver.takeBackUnnamedClaim(0)).as("a taken record is no unnamed claim").isFalse();
        assertThat(receiver.skipDeadClaim()).isTrue();
        assertThat(drain()).containsExactly(2L);
    }

    @Test
    void aClaimNamesItsSenderBeforeTheSenderWritesAnythingElse() {
        long claimed = sender.claim(64, 77); // the sender now copies its payload, or is descheduled
        send(ReceiveQueue.MSG, 2, 64);
        assertThat(drain()).isEmpty();
        assertThat(receiver.isHeadBlocked()).isTrue();
        assertThat(receiver.blockedConnection()).as("whose claim blocks the head, before its record is written").isEqualTo(77);
        sender.commit(claimed, 64, ReceiveQueue.MSG);
        assertThat(drain()).containsExactly(77L, 2L);
    }

    @Test
    void aTakenRecordHoldsItsLengthNegatedAndItsOwnerTagUntilCommittedWithItsType() {
        long connection = 0x0bad_cafe_0000_0005L;
        long claimed = sender.claim(128, connection);
        assertThat(memory.get(ValueLayout.JAVA_INT, claimed)).as("length while taken").isEqualTo(-128);
        assertThat(memory.get(ValueLayout.JAVA_INT, claimed + ReceiveQueue.TYPE)).as("owner tag while taken").isEqualTo(0x0bad_cafe);
        assertThat(receiver.blockedConnection()).isEqualTo(connection);
        memory.set(ValueLayout.JAVA_LONG, claimed + ReceiveQueue.CONNECTION, 0); // as if the sender had not written it yet
        assertThat(receiver.blockedConnection()).as("the owner bits alone, which its lease is found by").isEqualTo(0x0bad_cafe_0000_0000L);
        memory.set(ValueLayout.JAVA_LONG, claimed + ReceiveQueue.CONNECTION, connection);
        for (long field = ReceiveQueue.MESSAGE_ID; field < 128; field += 8) {
            long bytes = memory.get(ValueLayout.JAVA_LONG, claimed + field);
            // The first word of each line is its free word until the payload covers it; a receiver reads no further than the payload.
            if (field == 64) assertThat(bytes).as("the second line's first word").isEqualTo(sender.freeWord(claimed - ReceiveQueue.HEADER_LENGTH + 64));
            else assertThat(bytes).as("bytes at %d of the record", field).isZero();
        }
        sender.commit(claimed, 128, ReceiveQueue.CLOSE);
        List<Integer> types = new ArrayList<>();
        receiver.poll((m, offset, type, length) -> types.add(type), 10);
        assertThat(types).containsExactly(ReceiveQueue.CLOSE);
    }

    @Test
    void aBadLengthWordCostsOnlyTheLineItIsOnAndTheQueueGoesOn() {
        long offset = sender.claim(64);
        sender.commit(offset, 12, ReceiveQueue.MSG);
        send(ReceiveQueue.MSG, 2, 64);
        assertThatThrownBy(this::drain).isInstanceOf(ReceiveQueue.CorruptQueueException.class)
                .hasMessageContaining("length 12").hasMessageContaining("64 bytes up to the next cache line were skipped");
        assertThat(drain()).containsExactly(2L);
        long tooLong = sender.claim(64);
        sender.commit(tooLong, 1 << 20, ReceiveQueue.MSG); // more than the ring holds
        send(ReceiveQueue.MSG, 3, 64);
        assertThatThrownBy(this::drain).isInstanceOf(ReceiveQueue.CorruptQueueException.class);
        assertThat(drain()).containsExactly(3L);
    }

    @Test
    void anUncommittedRecordWithALengthNoClaimWritesIsSkippedToTheNextLine() {
        long claimed = sender.claim(64, 77);
        memory.set(ValueLayout.JAVA_INT, claimed, Integer.MIN_VALUE);
        send(ReceiveQueue.MSG, 3, 64);
        assertThat(drain()).isEmpty();
        assertThat(receiver.skipDeadClaim()).isTrue();
        assertThat(drain()).containsExactly(3L);
        assertThat(receiver.isHeadBlocked()).isFalse();
    }

    @Test
    void aBadWordPastEveryClaimIsNoRecordAndIsNeverReadPast() {
        send(ReceiveQueue.MSG, 1, 64);
        assertThat(drain()).containsExactly(1L);
        long head = ReceiveQueue.HEADER_LENGTH + 64;
        memory.set(ValueLayout.JAVA_INT, head, 12); // written where no sender has claimed yet
        assertThat(drain()).isEmpty();
        assertThat(receiver.hasPending()).isFalse();
        assertThat(receiver.isHeadBlocked()).isFalse();
        // The claim there takes that line by a plain store, over the bad word.
        send(ReceiveQueue.MSG, 2, 64);
        assertThat(drain()).containsExactly(2L);
    }

    /**
     * A well-formed record written past every claim (a length a sender could write) is read: poll
     * does not read the tail, whose line every claim writes, for each record it takes. The head then
     * passes the tail, and the header check names that among the causes, so that a worker failed by
     * writes into its ring alone is not told only that its header was overwritten (a helper playing
     * a security reviewer: a thread writing random words near a posix worker's head).
     */
    @Test
    void aWellFormedRecordPastEveryClaimIsReadAndTheHeaderCheckSaysSo() {
        send(ReceiveQueue.MSG, 1, 64);
        assertThat(drain()).containsExactly(1L);
        long head = ReceiveQueue.HEADER_LENGTH + 64;
        memory.set(ValueLayout.JAVA_LONG, head + ReceiveQueue.CONNECTION, 7);
        // Written where no sender has claimed yet, long enough that the receiver gives back what it read (a zeroing slice).
        long length = 256; // this 4 KiB ring's zeroing slice
        memory.set(ValueLayout.JAVA_LONG, head, length | (long) ReceiveQueue.MSG << 32);
        assertThat(drain()).containsExactly(7L);
        assertThat(receiver.headerDamage(TOKEN)).contains("is not within a ring of its head " + (64 + length) + " (its tail word was "
                + "written, or this receiver read a well-formed record written into its ring past every claim)");
    }

    @Test
    void aTailNoSenderCouldHaveWrittenIsReportedAsCorruption() {
        for (long tail : new long[] {4096 + 64, 1L << 37}) { // claims never take more than a ring past the head
            memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, ReceiveQueue.packTail(tail, 0x0bad_cafe));
            assertThatThrownBy(() -> sender.claim(64, 1)).isInstanceOf(ReceiveQueue.CorruptQueueException.class)
                    .hasMessageContaining("its tail " + tail + " is more than a ring ahead of its head 0");
            assertThat(receiver.headerDamage(TOKEN)).contains("its tail " + tail + " is not within a ring of its head 0");
        }
    }

    /**
     * Each word {@code format} wrote, overwritten, is header damage naming it: senders refuse such a
     * queue when they attach, and the receiver, which reads its own queue through its head alone,
     * learns it only from this.
     */
    @Test
    void eachWordOfTheFormatOverwrittenIsHeaderDamageNamingIt() {
        assertThat(receiver.headerDamage(TOKEN)).isNull();
        memory.set(ValueLayout.JAVA_INT, ReceiveQueue.VERSION_OFFSET, ReceiveQueue.VERSION + 1);
        assertThat(receiver.headerDamage(TOKEN)).isEqualTo("its version is " + (ReceiveQueue.VERSION + 1));
        memory.set(ValueLayout.JAVA_INT, ReceiveQueue.VERSION_OFFSET, ReceiveQueue.VERSION);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.CAPACITY_OFFSET, 8192);
        assertThat(receiver.headerDamage(TOKEN)).isEqualTo("its capacity is 8192");
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.CAPACITY_OFFSET, 4096);
        memory.set(ValueLayout.JAVA_BYTE, ReceiveQueue.TOKEN_OFFSET + ReceiveQueue.TOKEN_LENGTH - 1, (byte) 1);
        assertThat(receiver.headerDamage(TOKEN)).isEqualTo("its token changed");
        memory.set(ValueLayout.JAVA_BYTE, ReceiveQueue.TOKEN_OFFSET + ReceiveQueue.TOKEN_LENGTH - 1, (byte) 0);
        assertThat(receiver.headerDamage(TOKEN)).isNull();
    }

    /**
     * A taken word no sender writes in the ring's last 8 bytes (a process that maps the queue wrote
     * it there, behind padding of a length no sender writes): no connection field follows it, so the
     * receiver names the owner tag alone, and reads nothing past the ring.
     */
    @Test
    void aTakenWordInTheRingsLastEightBytesNamesItsOwnerWithoutReadingPastTheRing() {
        long capacity = receiver.capacity();
        long record = sender.claim((int) capacity, 1);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + capacity - 8, ReceiveQueue.twoInts(-64, 0x0bad_cafe));
        sender.commit(record, (int) capacity - 8, ReceiveQueue.PAD);
        assertThat(drain()).isEmpty();
        assertThat(receiver.headPosition()).isEqualTo(capacity - 8);
        assertThat(receiver.isHeadBlocked()).isTrue();
        assertThat(receiver.blockedConnection()).isEqualTo(0x0bad_cafe_0000_0000L);
    }

    /**
     * A taken word 16 bytes before the ring's end (a process that maps the queue wrote it there,
     * behind padding of a length no sender writes) has its connection field in the ring's last 8
     * bytes: the receiver names it by that connection, as any taken record, and not by its owner tag
     * alone, which only a field past the ring calls for.
     */
    @Test
    void aTakenWordSixteenBytesBeforeTheRingsEndNamesItsConnectionFromTheRingsLastEightBytes() {
        long capacity = receiver.capacity();
        long record = sender.claim((int) capacity, 1);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + capacity - 16, ReceiveQueue.twoInts(-64, 0x0bad_cafe));
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + capacity - 8, 0x0bad_cafe_0000_0009L);
        sender.commit(record, (int) capacity - 16, ReceiveQueue.PAD);
        assertThat(drain()).isEmpty();
        assertThat(receiver.headPosition()).isEqualTo(capacity - 16);
        assertThat(receiver.blockedConnection()).isEqualTo(0x0bad_cafe_0000_0009L);
    }

    /**
     * A dead sender's taken word in the last 8 bytes of a line (of the ring, here) is skipped as
     * 8 bytes of padding, the room up to the next line: the receiver reads its own padding as
     * padding, and reports no corruption for it. A length of 8 is a record's (the receiver accepts
     * any multiple of 8), only shorter ones are none.
     */
    @Test
    void aDeadTakenWordInALinesLastEightBytesIsSkippedAsEightBytesOfPaddingReadWithoutCorruption() {
        long capacity = receiver.capacity();
        long record = sender.claim((int) capacity, 1);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + capacity - 8, ReceiveQueue.twoInts(-64, 0x0bad_cafe));
        sender.commit(record, (int) capacity - 8, ReceiveQueue.PAD);
        assertThat(drain()).isEmpty();
        assertThat(receiver.skipDeadClaim()).isTrue();
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + capacity - 8))
                .isEqualTo(ReceiveQueue.twoInts(8, ReceiveQueue.PAD));
        assertThat(drain()).isEmpty();
        assertThat(receiver.headPosition()).isEqualTo(capacity);
        assertThat(send(ReceiveQueue.MSG, 4, 64)).isNotNegative();
        assertThat(drain()).containsExactly(4L);
    }

    /** Named-up-to is the end of a claim whose record is taken: never behind the shared head, never past the tail. */
    @Test
    void aNamedUpToOutsideTheHeadAndTheTailIsHeaderDamage() {
        send(ReceiveQueue.MSG, 1, 128);
        assertThat(receiver.headerDamage(TOKEN)).isNull();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, 192);
        assertThat(receiver.headerDamage(TOKEN)).isEqualTo("its named-up-to 192 is not between a ring behind its head 0 and its tail 128");
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, -4160);
        assertThat(receiver.headerDamage(TOKEN)).isEqualTo("its named-up-to -4160 is not between a ring behind its head 0 and its tail 128");
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, 64);
        assertThat(receiver.headerDamage(TOKEN)).as("the start of the last claim, not yet taken").isNull();
    }

    /**
     * Once the receiver read every claim, named-up-to is the tail: a value behind it, within the
     * bounds above, would have every sender wait for ever for a claim nobody will name.
     */
    @Test
    void aNamedUpToBehindTheTailOfAQueueReadToItsEndIsHeaderDamage() {
        send(ReceiveQueue.MSG, 1, 128);
        assertThat(drain()).hasSize(1);
        assertThat(receiver.headerDamage(TOKEN)).isNull();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, 64);
        assertThat(receiver.headerDamage(TOKEN)).isEqualTo("its named-up-to 64 is not its tail 128, though this receiver read every claim");
        assertThat(sender.claim(64)).as("what every sender meets").isEqualTo(-1);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, 128);
        send(ReceiveQueue.MSG, 2, 64);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, 128);
        assertThat(receiver.headerDamage(TOKEN)).as("a claim not yet read: its claimant may not have named it yet").isNull();
    }

    /**
     * A claim that pads the ring's end stores its padding before named-up-to: a receiver that reads
     * past the padding meanwhile, and zeroes it, has its shared head ahead of named-up-to, which is
     * no damage (it was reported as such, and would have failed a healthy worker).
     */
    @Test
    void aClaimThatPadsTheRingsEndIsNoHeaderDamageWhileItsNamedUpToLags() {
        long capacity = receiver.capacity();
        for (long sent = 0; sent < capacity - 64; sent += 64) {
            send(ReceiveQueue.MSG, 1, 64);
            assertThat(drain()).hasSize(1);
        }
        long start = sender.claimedUpTo();
        long record = sender.claim(128, 7L << 32 | 7); // the ring's last line is padding, the record the first two lines
        assertThat(record).isEqualTo(ReceiveQueue.HEADER_LENGTH);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, start); // the claimant stopped before it stored it
        assertThat(drain()).as("the padding read, the record not yet committed").isEmpty();
        assertThat(receiver.headPosition()).isEqualTo(capacity);
        assertThat(receiver.headerDamage(TOKEN)).isNull();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, capacity + 128);
        sender.commit(record, 128, ReceiveQueue.MSG);
        assertThat(drain()).hasSize(1);
    }

    /**
     * Named-up-to is only ever moved forward for a dead last claimant: one found past the tail the
     * receiver read (a live sender claimed and named after that read) stays where it is. Moved back,
     * it would have stopped every sender's claim for good.
     */
    @Test
    void skippingADeadClaimNeverMovesNamedUpToBack() {
        long dead = 0x0bad_cafe_0000_0005L;
        sender.claim(64, dead); // taken, named, never committed: its sender died writing it
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, 128); // as if read after another claim and its name
        assertThat(receiver.skipDeadClaim()).isTrue();
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET)).isEqualTo(128);
    }

    @Test
    void aHeadPastTheTailIsReportedAsCorruption() {
        while (send(ReceiveQueue.MSG, 1, 64) >= 0) { } // full and unread: the next claim reads the shared head
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEAD_OFFSET, 64_000_000);
        long tail = memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET);
        assertThatThrownBy(() -> sender.claim(64, 1)).isInstanceOf(ReceiveQueue.CorruptQueueException.class)
                .hasMessageContaining("is more than a ring ahead of its head 64000000 (or its head is past its tail)");
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET)).as("nothing claimed").isEqualTo(tail);
    }

    /**
     * A claim's read that faults (the page was truncated away) comes before its CAS on the tail and
     * leaves its page unread: nothing is claimed, so no unnamed claim holds every sender while this
     * process lives, and the next claim in the page reads again and faults again.
     */
    @Test
    void aClaimWhoseReadFaultedClaimedNothingAndReadsAgainAtTheNextClaim(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path file = dir.resolve("queue");
        try (Arena arena = Arena.ofShared();
             java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.CREATE_NEW,
                     java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            long length = ReceiveQueue.mappedLength(4096);
            channel.truncate(length);
            MemorySegment mapped = channel.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, length, arena);
            ReceiveQueue.format(mapped, TOKEN);
            ReceiveQueue tx = ReceiveQueue.attach(mapped, TOKEN);
            channel.truncate(ReceiveQueue.HEADER_LENGTH); // the ring's pages are gone; the header, with the tail, stays
            for (int attempt = 0; attempt < 2; attempt++) {
                assertThatThrownBy(() -> tx.claim(64, 1)).as("attempt %d", attempt).isInstanceOf(InternalError.class);
                assertThat(mapped.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET)).as("nothing claimed: no unnamed claim holds the queue").isZero();
            }
        }
    }

    /**
     * A claim that pads the ring's end writes its padding at the tail, in another page than its
     * record at the ring's start, after its CAS: a sender's first claim there reads the tail's page
     * too before the CAS, so a page truncated away under the padding faults with nothing claimed,
     * as under the record (read only the record's page, the CAS went through and the padding's
     * store faulted, leaving a claim unnamed that holds every sender while the process lives).
     */
    @Test
    void aClaimThatPadsTheRingsEndIntoATruncatedPageClaimedNothing(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path file = dir.resolve("queue");
        try (Arena arena = Arena.ofShared();
             java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.CREATE_NEW,
                     java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            long capacity = 8192;
            long length = ReceiveQueue.mappedLength(capacity);
            channel.truncate(length);
            MemorySegment mapped = channel.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, length, arena);
            ReceiveQueue rx = ReceiveQueue.format(mapped, TOKEN);
            ReceiveQueue tx = ReceiveQueue.attach(mapped, TOKEN);
            int lines = (int) (capacity / 64) - 1;
            for (int i = 0; i < lines; i++) tx.commit(tx.claim(64, 1), 64, ReceiveQueue.MSG);
            assertThat(rx.poll((m, offset, type, size) -> { }, Integer.MAX_VALUE)).isEqualTo(lines);
            channel.truncate(ReceiveQueue.HEADER_LENGTH + 4096); // the ring's second page, the last line's, is gone; its first stays
            long tail = mapped.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET);
            ReceiveQueue anotherSender = ReceiveQueue.attach(mapped, TOKEN);

            assertThatThrownBy(() -> anotherSender.claim(128, 2)).as("a claim of 128 bytes at the ring's last line, padding it")
                    .isInstanceOf(InternalError.class);
            assertThat(mapped.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET)).as("nothing claimed: no unnamed claim holds the queue")
                    .isEqualTo(tail);
        }
    }

    @Test
    void aRecordIsClaimedInWholeLines() {
        for (int length : new int[] {0, -64, 56, 72}) {
            assertThatThrownBy(() -> sender.claim(length, 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("record length " + length + " is not a positive multiple of 64");
        }
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET)).as("nothing claimed").isZero();
    }

    @Test
    void twoAdjacentIntsAreOneLongInNativeOrder() {
        MemorySegment pair = Arena.ofAuto().allocate(8, 8);
        pair.set(ValueLayout.JAVA_LONG, 0, ReceiveQueue.twoInts(-64, 0x7ABCDEF0));
        assertThat(pair.get(ValueLayout.JAVA_INT, 0)).isEqualTo(-64);
        assertThat(pair.get(ValueLayout.JAVA_INT, 4)).isEqualTo(0x7ABCDEF0);
        long read = pair.get(ValueLayout.JAVA_LONG, 0);
        assertThat(ReceiveQueue.firstInt(read)).isEqualTo(-64);
        assertThat(ReceiveQueue.secondInt(read)).isEqualTo(0x7ABCDEF0);
    }

    /** A claim packs its claimant's owner tag with the tail in lines; a reader rebuilds the tail from a head within a ring of it. */
    @Test
    void theTailWordNamesTheLastClaimantAndIsRebuiltFromAHeadWithinARing() {
        long connection = 0x0bad_cafe_0000_0007L;
        long offset = sender.claim(128, connection);
        long word = memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET);
        assertThat(ReceiveQueue.tailOwner(word)).isEqualTo(0x0bad_cafe);
        assertThat(ReceiveQueue.tailAbove(word, 0)).isEqualTo(128);
        assertThat(namedUpTo()).as("stored after the take").isEqualTo(128);
        assertThat(memory.get(ValueLayout.JAVA_INT, offset)).as("taken").isEqualTo(-128);
        long far = (1L << 38) * 3 + 4096 * 5 + 192; // past 2^32 lines: the tail word keeps its lines mod 2^32
        long packed = ReceiveQueue.packTail(far, 7);
        for (long head = far - 4096; head <= far; head += 64) {
            assertThat(ReceiveQueue.tailAbove(packed, head)).as("from head %d", head).isEqualTo(far);
        }
        assertThat(ReceiveQueue.tailAbove(packed, far + 64) - (far + 64)).as("a tail behind the head: about 2^38 ahead").isGreaterThan(4096);
    }

    /**
     * Only the last claim can be unnamed: a sender claims only while named-up-to is the tail. A
     * second sender finds no room while the last claim is not yet taken (after a few spins), and
     * claims as soon as it is.
     */
    @Test
    void aSecondSenderWaitsWhileTheLastClaimIsUnnamedAndClaimsOnceItIsNamed() {
        long position = claimUnnamed(64, 0x0bad_cafe);
        long word = memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET);
        assertThat(sender.claim(64, 0x1234_5678_0000_0001L)).as("the last claim is unnamed").isNegative();
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET)).as("nothing claimed").isEqualTo(word);
        // The first claimant takes its record and names it, as its claim() does after its CAS.
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + position, ReceiveQueue.twoInts(-64, 0x0bad_cafe));
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, position + 64);
        long offset = sender.claim(64, 0x1234_5678_0000_0001L);
        assertThat(offset).isEqualTo(ReceiveQueue.HEADER_LENGTH + position + 64);
        assertThat(ReceiveQueue.tailOwner(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET))).isEqualTo(0x1234_5678);
    }

    /**
     * A sender that stopped (or died) right after its CAS on the tail is named by the tail word; its
     * space is taken back, line by line, only for that owner found dead, and the take-back stores
     * named-up-to for it, so that the other senders claim again.
     */
    @Test
    void aClaimNeverTakenIsTakenBackLineByLineOnlyForItsOwnerFoundDead() {
        long position = claimUnnamed(128, 0x0bad_cafe);
        assertThat(drain()).isEmpty();
        assertThat(receiver.isHeadUnnamed()).isTrue();
        assertThat(receiver.unnamedClaimant()).as("the tail word's owner").isEqualTo(0x0bad_cafe);
        assertThat(receiver.skipDeadClaim()).as("an unnamed claim is not a taken record").isFalse();
        assertThat(receiver.takeBackUnnamedClaim(0)).as("a claimant that may live").isFalse();
        assertThat(receiver.takeBackUnnamedClaim(0x1234_5678)).as("another owner's death").isFalse();
        assertThat(receiver.isHeadUnnamed()).isTrue();
        assertThat(receiver.takeBackUnnamedClaim(0x0bad_cafe)).isTrue();
        for (long line = 0; line < 128; line += 64) {
            assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + position + line)).as("line %d", line)
                    .isEqualTo(ReceiveQueue.twoInts(64, ReceiveQueue.PAD));
        }
        assertThat(namedUpTo()).as("released for the dead claimant").isEqualTo(position + 128);
        assertThat(send(ReceiveQueue.MSG, 3, 64)).isNotNegative();
        assertThat(drain()).containsExactly(3L);
        assertThat(receiver.hasPending()).isFalse();
    }

    /** A tail that moved with named-up-to already there is no sender's claim: taken back at once, never past the tail. */
    @Test
    void takingBackNeverGoesPastTheTail() {
        long tail = tail();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, ReceiveQueue.packTail(tail + 64, 0x0bad_cafe));
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.NAMED_OFFSET, tail + 64);
        assertThat(receiver.unnamedClaimant()).as("named-up-to is the tail: nobody's").isZero();
        assertThat(receiver.takeBackUnnamedClaim(0)).isTrue();
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + tail + 64)).as("the line past the tail")
                .isEqualTo(receiver.freeWord(tail + 64));
        assertThat(drain()).isEmpty();
        assertThat(receiver.hasPending()).isFalse();
        send(ReceiveQueue.MSG, 4, 64);
        assertThat(drain()).containsExactly(4L);
    }

    /**
     * A dead last claimant's take-back releases named-up-to and remembers the tail: unnamed space of
     * that claim the take-back stopped short of is taken back later without judging anyone, and
     * never past it, into a live sender's unnamed claim after it.
     */
    @Test
    void unnamedSpaceOfADeadClaimantIsTakenBackUpToItsTailAndNoFurther() {
        long position = claimUnnamed(192, 0x0bad_cafe);
        // A taken word inside the claim (a process that maps the queue wrote it) stops the take-back after the first line.
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + position + 64, ReceiveQueue.twoInts(-64, 0x0bad_cafe));
        assertThat(receiver.takeBackUnnamedClaim(0x0bad_cafe)).isTrue();
        assertThat(namedUpTo()).isEqualTo(position + 192);
        long live = claimUnnamed(64, 0x1234_5678); // a live sender's claim after it, not yet taken
        assertThat(drain()).isEmpty();
        assertThat(receiver.skipDeadClaim()).isTrue();
        assertThat(drain()).isEmpty();
        assertThat(receiver.headPosition()).isEqualTo(position + 128);
        assertThat(receiver.unnamedClaimant()).as("the dead claimant's space").isZero();
        assertThat(receiver.takeBackUnnamedClaim(0)).isTrue();
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + live)).as("the live claim's line")
                .isEqualTo(receiver.freeWord(live));
        assertThat(drain()).isEmpty();
        assertThat(receiver.headPosition()).isEqualTo(live);
        assertThat(receiver.unnamedClaimant()).isEqualTo(0x1234_5678);
        assertThat(receiver.takeBackUnnamedClaim(0)).isFalse();
    }

    /** A dead sender that took its record, the last claim, and died before it stored named-up-to: the skip stores it. */
    @Test
    void skippingADeadLastClaimReleasesNamedUpTo() {
        long position = claimUnnamed(64, 0x0bad_cafe);
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + position, ReceiveQueue.twoInts(-64, 0x0bad_cafe));
        assertThat(sender.claim(64, 1)).as("named-up-to not stored").isNegative();
        assertThat(receiver.skipDeadClaim()).isTrue();
        assertThat(namedUpTo()).isEqualTo(position + 64);
        assertThat(send(ReceiveQueue.MSG, 5, 64)).isNotNegative();
        assertThat(drain()).containsExactly(5L);
    }

    /**
     * A claim may take the whole ring ({@code claim} takes up to the capacity): a dead claimant's
     * unnamed claim of it ends a whole ring past the head, which is still within reach, and its
     * take-back stores named-up-to for it. Left where it was, every sender would find the last claim
     * unnamed for ever, with the ring given back and empty.
     */
    @Test
    void aDeadClaimantsUnnamedClaimOfTheWholeRingIsTakenBackAndReleasesNamedUpTo() {
        long capacity = receiver.capacity();
        long position = claimUnnamed((int) capacity, 0x0bad_cafe);
        assertThat(receiver.unnamedClaimant()).isEqualTo(0x0bad_cafe);
        assertThat(receiver.takeBackUnnamedClaim(0x0bad_cafe)).isTrue();
        assertThat(namedUpTo()).as("released for the dead claimant").isEqualTo(position + capacity);
        assertThat(drain()).isEmpty();
        assertThat(receiver.hasPending()).isFalse();
        assertThat(send(ReceiveQueue.MSG, 3, 64)).isNotNegative();
        assertThat(drain()).containsExactly(3L);
    }

    /**
     * A tail word written more than a ring ahead of the head (a process that maps the queue wrote
     * it) is no dead claimant's tail: a take-back for the owner it names leaves named-up-to where
     * the last honest claim put it. Stored there, named-up-to would be past every claim, and the
     * receiver would remember a dead claimant's tail below which it takes back unnamed claims, live
     * senders' among them, without judging their owners; the header check reports the tail word.
     */
    @Test
    void aTailWordWrittenMoreThanARingAheadIsNoDeadClaimantsAndLeavesNamedUpTo() {
        long tail = tail();
        memory.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, ReceiveQueue.packTail(tail + 2 * receiver.capacity(), 0x0bad_cafe));
        receiver.takeBackUnnamedClaim(0x0bad_cafe);
        assertThat(namedUpTo()).isEqualTo(tail);
        assertThat(receiver.headerDamage(TOKEN)).contains("is not within a ring of its head");
    }

    /**
     * A sender stopped between its CAS and its take holds the ring: no other claim passes it, for a
     * whole ring's worth of tries, and the receiver takes nothing back while it may live.
     */
    @Test
    void aSenderStoppedBeforeItsTakeStopsTheRing() {
        send(ReceiveQueue.MSG, 1, 64);
        assertThat(drain()).containsExactly(1L);
        long position = claimUnnamed(64, 0x0bad_cafe);
        long word = memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET);
        for (long at = 0; at < receiver.capacity(); at += 64) {
            assertThat(send(ReceiveQueue.MSG, 2, 64)).isNegative();
            assertThat(drain()).isEmpty();
        }
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET)).isEqualTo(word);
        assertThat(receiver.unnamedClaimant()).isEqualTo(0x0bad_cafe);
        assertThat(receiver.takeBackUnnamedClaim(0)).isFalse();
        assertThat(memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + position)).isEqualTo(receiver.freeWord(position));
    }

    /**
     * Every line is stamped free for the next lap when it is given back, so that the receiver's
     * take-back, a CAS from the line's free word, takes neither another lap's line nor a record's.
     */
    @Test
    void aFormattedRingHasEveryLinesFreeWordAndNoFreeWordIsZero() {
        for (long line = 0; line < receiver.capacity(); line += 64) {
            long word = memory.get(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + line);
            assertThat(word).as("line %d", line).isEqualTo(receiver.freeWord(line));
            assertThat(ReceiveQueue.firstInt(word)).as("no record's length").isZero();
        }
        java.util.Set<Long> words = new java.util.HashSet<>();
        for (long position = 0; position < 64 * receiver.capacity(); position += 64) {
            long word = receiver.freeWord(position);
            assertThat(word).as("zeroed memory is no free word (a line being given back is zero a moment)").isNotZero();
            words.add(word);
        }
        assertThat(words).as("each line of 64 laps has its own").hasSize(64 * (int) receiver.capacity() / 64);
    }

    @Test
    void aLineGivenBackIsFreeForTheNextLapOnly() {
        long capacity = receiver.capacity();
        for (long sent = 0; sent < capacity; sent += 64) {
            assertThat(send(ReceiveQueue.MSG, 1, 64)).isNotNegative();
            assertThat(drain()).hasSize(1);
        }
        long firstLine = ReceiveQueue.HEADER_LENGTH;
        assertThat(memory.get(ValueLayout.JAVA_LONG, firstLine)).isEqualTo(receiver.freeWord(capacity)).isNotEqualTo(receiver.freeWord(0));
        for (long line = 0; line < capacity; line += 64) {
            long word = memory.get(ValueLayout.JAVA_LONG, firstLine + line);
            assertThat(ReceiveQueue.firstInt(word)).as("line %d", line).isZero();
            assertThat(word).as("line %d", line).isEqualTo(receiver.freeWord(capacity + line));
        }
        assertThat(send(ReceiveQueue.MSG, 2, 64)).as("the next lap's first claim takes its line").isEqualTo(firstLine);
        assertThat(drain()).containsExactly(2L);
    }

    @Test
    void anImpossibleLengthIsReportedAsCorruption() {
        long offset = sender.claim(64);
        sender.commit(offset, 12, ReceiveQueue.MSG);
        assertThatThrownBy(this::drain).isInstanceOf(ReceiveQueue.CorruptQueueException.class).hasMessageContaining("length 12");
    }

    @Test
    void attachingChecksMagicCapacityAndToken() {
        assertThatThrownBy(() -> ReceiveQueue.attach(memory, new byte[]{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}))
                .hasMessageContaining("token");
        MemorySegment blank = Arena.ofAuto().allocate(ReceiveQueue.mappedLength(4096), 4096);
        assertThatThrownBy(() -> ReceiveQueue.attach(blank, TOKEN)).hasMessageContaining("magic");
    }

    /**
     * A sender bounds every record by the capacity the queue's header says: one that is not the
     * mapping's ring, or no power of two (its mask would not wrap positions), or a mapping too short
     * for a queue, or another layout's, is refused when it attaches.
     */
    @Test
    void attachingRefusesAHeaderWhoseCapacityOrVersionOrMappingIsNotAQueuesOfThisLayout() {
        assertThatThrownBy(() -> ReceiveQueue.attach(headerOnly(ReceiveQueue.mappedLength(6144), 6144, ReceiveQueue.VERSION), TOKEN))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("says capacity 6144");
        assertThatThrownBy(() -> ReceiveQueue.attach(headerOnly(ReceiveQueue.mappedLength(4096), 8192, ReceiveQueue.VERSION), TOKEN))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("says capacity 8192");
        assertThatThrownBy(() -> ReceiveQueue.attach(headerOnly(ReceiveQueue.mappedLength(2048), 2048, ReceiveQueue.VERSION), TOKEN))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("too short for a queue");
        assertThatThrownBy(() -> ReceiveQueue.attach(headerOnly(ReceiveQueue.mappedLength(4096), 4096, ReceiveQueue.VERSION + 1), TOKEN))
                .isInstanceOf(ReceiveQueue.OtherLayoutVersion.class);
    }

    /** A mapping of {@code length} bytes whose header says a queue of {@code capacity} and {@code version}, with the token {@link #TOKEN}. */
    private static MemorySegment headerOnly(long length, long capacity, int version) {
        MemorySegment mapping = Arena.ofAuto().allocate(length, 4096);
        mapping.set(ValueLayout.JAVA_INT, ReceiveQueue.MAGIC_OFFSET, ReceiveQueue.MAGIC);
        mapping.set(ValueLayout.JAVA_INT, ReceiveQueue.VERSION_OFFSET, version);
        mapping.set(ValueLayout.JAVA_LONG, ReceiveQueue.CAPACITY_OFFSET, capacity);
        MemorySegment.copy(TOKEN, 0, mapping, ValueLayout.JAVA_BYTE, ReceiveQueue.TOKEN_OFFSET, TOKEN.length);
        return mapping;
    }

    /**
     * Meanwhile the receiver checks its header and looks for unnamed space that is nobody's, as a
     * liveness check would: with claims made and named between its reads, neither must find any
     * (a header check that read the tail before named-up-to reported damage).
     */
    @Test
    void manyThreadsSendingLoseNothingAndTheReceiversChecksFindNothingMeanwhile() throws Exception {
        manyThreadsSendFrom(0);
    }

    /** The same across the tail word's wrap at 2^38 bytes, where the receiver's checks rebuild a wrapped tail from its head. */
    @Test
    void manyThreadsSendingAcrossTheTailWordsWrapLoseNothingAndTheReceiversChecksFindNothing() throws Exception {
        manyThreadsSendFrom(TAIL_WORD_WRAP - 4 * (1 << 16));
    }

    private static void manyThreadsSendFrom(long start) throws Exception {
        MemorySegment big = Arena.ofShared().allocate(ReceiveQueue.mappedLength(1 << 16), 4096);
        ReceiveQueue rx = ReceiveQueue.formatFrom(big, TOKEN, start);
        int threads = 4;
        int perThread = 50_000;
        List<Thread> senders = new ArrayList<>();
        java.util.concurrent.atomic.AtomicReference<Throwable> senderFailure = new java.util.concurrent.atomic.AtomicReference<>();
        for (int t = 0; t < threads; t++) {
            long base = (long) t << 32;
            senders.add(Thread.ofPlatform().start(() -> {
                try {
                    ReceiveQueue tx = ReceiveQueue.attach(big, TOKEN);
                    for (int i = 1; i <= perThread; i++) {
                        long offset;
                        // An owner tag that is not 0, which stands for nobody: the receiver's take-back would be right to take it.
                        while ((offset = tx.claim(64, base + (1L << 32))) < 0) Thread.onSpinWait();
                        big.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION, base | i);
                        tx.commit(offset, 64, ReceiveQueue.MSG);
                    }
                } catch (RuntimeException | Error e) {
                    senderFailure.compareAndSet(null, e);
                }
            }));
        }
        long[] last = new long[threads];
        int[] count = {0};
        while (count[0] < threads * perThread) {
            // A sender that failed sends nothing more: fail with its exception rather than wait for ever.
            if (senderFailure.get() != null) throw new AssertionError("a sender failed", senderFailure.get());
            // While they claim: named-up-to and the tail move under the check, which must not take them for damage.
            assertThat(rx.headerDamage(TOKEN)).isNull();
            if (rx.unnamedClaimant() == 0) assertThat(rx.takeBackUnnamedClaim(0)).as("a live sender's claim taken back").isFalse();
            rx.poll((m, offset, type, length) -> {
                long v = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION);
                int t = (int) (v >>> 32);
                assertThat(v & 0xFFFF_FFFFL).isEqualTo(last[t] + 1);
                last[t]++;
                count[0]++;
            }, 256);
        }
        for (Thread t : senders) t.join();
        assertThat(last).containsOnly(perThread);
    }

    /**
     * Senders die at every point of a claim while others send: between the tail's CAS and the take,
     * between the take and named-up-to, between named-up-to and the commit, and after a commit. The
     * receiver judges the head at once whenever a poll finds nothing, as a liveness check would after
     * {@code unblock.timeout} ({@code ShmTransport#unblockHeadRecord}), and takes back space of nobody's
     * at every look: a dead owner's claim is taken back or skipped, a live one's waited for. No live sender's message may be lost, repeated or
     * reordered, no dead sender's uncommitted record delivered, and the queue must never wedge. A small
     * ring wraps often, so tails are rebuilt across laps, lines given back for the next lap, and live
     * senders' records of two and four lines pad the ring's end.
     */
    @Test
    // A wedged queue fails the test rather than hang the build: its loops spin, and only a separate thread can give up on them.
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void sendersDyingAtEveryPointOfAClaimAmongLiveOnesCostNoLiveMessageAndNeverWedgeTheQueue() throws Exception {
        MemorySegment ring = Arena.ofShared().allocate(ReceiveQueue.mappedLength(1 << 14), 4096);
        ReceiveQueue rx = ReceiveQueue.format(ring, TOKEN);
        int liveSenders = 3;
        int perLiveSender = 20_000;
        int dyingSenders = 400;
        Set<Integer> deadOwners = ConcurrentHashMap.newKeySet();
        AtomicReference<Throwable> senderFailure = new AtomicReference<>();
        List<Thread> senders = startLiveSenders(ring, liveSenders, perLiveSender, senderFailure);
        int[] deaths = new int[4];
        senders.add(Thread.ofPlatform().daemon().start(() -> {
            try {
                java.util.Random random = new java.util.Random(42);
                for (int d = 0; d < dyingSenders; d++) {
                    int owner = 1000 + d;
                    int point = random.nextInt(4);
                    deaths[point]++;
                    if (point == 0 || point == 1) {
                        while (claimAndDie(ring, owner, 64, point == 1 ? DiesAfter.TAKE : DiesAfter.CAS) < 0) Thread.onSpinWait();
                    } else {
                        ReceiveQueue tx = ReceiveQueue.attach(ring, TOKEN);
                        long offset;
                        while ((offset = tx.claim(64, (long) owner << 32 | 1)) < 0) Thread.onSpinWait();
                        if (point == 3) tx.commit(offset, 64, ReceiveQueue.MSG); // a whole message, then death
                    }
                    deadOwners.add(owner); // its lease is gone only once it wrote its last
                    Thread.sleep(0, random.nextInt(100_000));
                }
            } catch (RuntimeException | Error | InterruptedException e) {
                senderFailure.compareAndSet(null, e);
            }
        }));
        JudgingReceiver receiver = new JudgingReceiver(rx, deadOwners, liveSenders);
        while (receiver.delivered < (long) liveSenders * perLiveSender || senders.getLast().isAlive()) {
            if (senderFailure.get() != null) throw new AssertionError("a sender failed", senderFailure.get());
            receiver.receiveOnce();
        }
        for (Thread t : senders) t.join();
        assertThat(senderFailure.get()).isNull();
        // Every sender done: what is left is committed, or dead senders' claims, which the receiver frees.
        while (rx.hasPending()) receiver.receiveOnce();
        assertThat(Arrays.copyOfRange(receiver.last, 1, receiver.last.length)).containsOnly(perLiveSender);
        assertThat(receiver.deadDelivered).as("whole messages of senders that died after them").isEqualTo(deaths[3]);
        // Every way of dying happened, and the receiver freed the head from each kind of dead claim.
        assertThat(deaths).doesNotContain(0);
        assertThat(receiver.untakenGivenBack).as("untaken claims given back").isPositive();
        assertThat(receiver.takenSkipped).as("taken claims skipped").isPositive();
        assertThat(rx.headerDamage(TOKEN)).isNull();
    }

    /**
     * The receiver of {@link #sendersDyingAtEveryPointOfAClaimAmongLiveOnesCostNoLiveMessageAndNeverWedgeTheQueue}:
     * checks each live sender's order, counts dead senders' whole messages, and judges a blocked head
     * at every look that found nothing, as {@code ShmTransport#unblockHeadRecord} does once
     * {@code unblock.timeout} passed, by {@code deadOwners} for leases.
     */
    private static final class JudgingReceiver {
        private final ReceiveQueue rx;
        private final Set<Integer> deadOwners;
        private final List<Long> connections = new ArrayList<>();
        final long[] last;
        long delivered;
        int deadDelivered;
        int untakenGivenBack;
        int takenSkipped;

        JudgingReceiver(ReceiveQueue rx, Set<Integer> deadOwners, int liveSenders) {
            this.rx = rx;
            this.deadOwners = deadOwners;
            this.last = new long[liveSenders + 1];
        }

        void receiveOnce() {
            assertThat(rx.headerDamage(TOKEN)).isNull();
            connections.clear();
            rx.poll((m, offset, type, length) -> connections.add(m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION)), 64);
            for (long connection : connections) {
                int owner = ReceiveQueue.ownerTag(connection);
                if (owner >= 1000) {
                    assertThat(connection & 0xFFFF_FFFFL).as("a dying sender's one message").isEqualTo(1);
                    deadDelivered++;
                    continue;
                }
                assertThat(connection & 0xFFFF_FFFFL).as("sender %d's next message", owner).isEqualTo(last[owner] + 1);
                last[owner]++;
                delivered++;
            }
            if (!connections.isEmpty() || !rx.isHeadBlocked()) return;
            if (rx.isHeadUnnamed()) {
                // Space of nobody's first, at every look, whatever unnamedClaimant says: a live claimant's must stay its own.
                if (rx.takeBackUnnamedClaim(0)) {
                    untakenGivenBack++;
                    return;
                }
                int owner = rx.unnamedClaimant();
                if (owner != 0 && deadOwners.contains(owner) && rx.takeBackUnnamedClaim(owner)) untakenGivenBack++;
            } else if (deadOwners.contains(ReceiveQueue.ownerTag(rx.blockedConnection())) && rx.skipDeadClaim()) {
                takenSkipped++;
            }
        }
    }

    /**
     * A sender dies at each point of a claim that pads the ring's end: after its CAS, after its take
     * (its record at the ring's start, the end still free lines), after storing the padding, after
     * named-up-to. {@link #sendersDyingAtEveryPointOfAClaimAmongLiveOnesCostNoLiveMessageAndNeverWedgeTheQueue}
     * reaches none of these, for its dying senders claim one line, which never pads. One receiver
     * and one live sender on one thread, so that the header is checked at every step of a death,
     * over {@value #PADDING_DEATH_SEEDS} seeds of 400 sends, deaths and looks, on one queue that
     * goes round its ring many times: every live message arrives once and in order,
     * the header is never damaged, and the queue never wedges. The receiver read the padding of a
     * sender that died after storing it, so named-up-to lies behind the head it finds blocked:
     * the skip must store it all the same, or every sender waits for ever.
     */
    @Test
    void aSenderDyingAtEachPointOfAClaimThatPadsTheRingsEndNeitherWedgesNorDamagesTheQueue() {
        Set<Integer> deadOwners = new java.util.HashSet<>();
        JudgingReceiver judge = new JudgingReceiver(receiver, deadOwners, 1);
        int[] paddedDeaths = new int[DiesAfter.values().length];
        long sent = 0;
        int nextDeadOwner = 1000;
        for (long seed = 0; seed < PADDING_DEATH_SEEDS; seed++) {
            java.util.Random random = new java.util.Random(seed);
            for (int step = 0; step < 400; step++) {
                int length = 64 * (1 + random.nextInt(12));
                if (random.nextInt(4) == 0) {
                    DiesAfter diesAfter = DiesAfter.values()[random.nextInt(DiesAfter.values().length)];
                    long padding = claimAndDie(memory, nextDeadOwner, length, diesAfter);
                    if (padding >= 0) deadOwners.add(nextDeadOwner++);
                    if (padding > 0) paddedDeaths[diesAfter.ordinal()]++;
                } else if (send(ReceiveQueue.MSG, 1L << 32 | sent + 1, length) >= 0) {
                    sent++;
                }
                for (int look = random.nextInt(4); look > 0; look--) judge.receiveOnce();
            }
        }
        for (int look = 0; look < 1000 && receiver.hasPending(); look++) judge.receiveOnce();
        assertThat(receiver.hasPending()).as("wedged at %d", receiver.headPosition()).isFalse();
        assertThat(judge.last[1]).isEqualTo(sent);
        assertThat(judge.deadDelivered).as("no dying sender committed").isZero();
        assertThat(paddedDeaths).as("deaths at each point of a claim that padded").doesNotContain(0);
        assertThat(receiver.headerDamage(TOKEN)).isNull();
        assertThat(send(ReceiveQueue.MSG, 1L << 32 | sent + 1, 64)).as("claims go on").isNotNegative();
    }

    private static final int PADDING_DEATH_SEEDS = 100;

    /**
     * Senders die at each point of claims that pad the ring's end while others send, as in
     * {@link #sendersDyingAtEveryPointOfAClaimAmongLiveOnesCostNoLiveMessageAndNeverWedgeTheQueue},
     * whose dying senders claim one line and never pad: here they claim four to sixteen lines of the
     * smallest ring, so that about one claim in eight pads, and the receiver meets each kind of
     * padded death with live claims made and named around it.
     */
    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void sendersDyingAtEachPointOfClaimsThatPadTheRingsEndAmongLiveOnesCostNoLiveMessage() throws Exception {
        MemorySegment ring = Arena.ofShared().allocate(ReceiveQueue.mappedLength(4096), 4096);
        ReceiveQueue rx = ReceiveQueue.format(ring, TOKEN);
        int liveSenders = 2;
        int perLiveSender = 20_000;
        int dyingSenders = 600;
        Set<Integer> deadOwners = ConcurrentHashMap.newKeySet();
        AtomicReference<Throwable> senderFailure = new AtomicReference<>();
        List<Thread> senders = startLiveSenders(ring, liveSenders, perLiveSender, senderFailure);
        int[] paddedDeaths = new int[DiesAfter.values().length];
        senders.add(Thread.ofPlatform().daemon().start(() -> {
            try {
                java.util.Random random = new java.util.Random(7);
                for (int d = 0; d < dyingSenders; d++) {
                    int owner = 1000 + d;
                    int length = 256 << random.nextInt(3);
                    DiesAfter diesAfter = DiesAfter.values()[random.nextInt(DiesAfter.values().length)];
                    long padding;
                    while ((padding = claimAndDie(ring, owner, length, diesAfter)) < 0) Thread.onSpinWait();
                    if (padding > 0) paddedDeaths[diesAfter.ordinal()]++;
                    deadOwners.add(owner);
                    Thread.sleep(0, random.nextInt(100_000));
                }
            } catch (RuntimeException | Error | InterruptedException e) {
                senderFailure.compareAndSet(null, e);
            }
        }));
        JudgingReceiver receiver = new JudgingReceiver(rx, deadOwners, liveSenders);
        while (receiver.delivered < (long) liveSenders * perLiveSender || senders.getLast().isAlive() || rx.hasPending()) {
            if (senderFailure.get() != null) throw new AssertionError("a sender failed", senderFailure.get());
            receiver.receiveOnce();
        }
        for (Thread t : senders) t.join();
        assertThat(senderFailure.get()).isNull();
        assertThat(Arrays.copyOfRange(receiver.last, 1, receiver.last.length)).containsOnly(perLiveSender);
        assertThat(receiver.deadDelivered).as("no dying sender committed").isZero();
        assertThat(paddedDeaths).as("deaths at each point of a claim that padded").doesNotContain(0);
        assertThat(rx.headerDamage(TOKEN)).isNull();
    }

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    /** Where in {@link ReceiveQueue#claim} a sender stops for good: right after its CAS on the tail, its take, its padding, or its named-up-to. */
    private enum DiesAfter { CAS, TAKE, PADDING, NAMING }

    /**
     * A sender of {@code owner} that claims {@code length} bytes as {@link ReceiveQueue#claim} does
     * (once the last claim is named, with room, by CAS on the tail word, padding the ring's end when
     * the record does not fit before it) and stops for good after {@code diesAfter}.
     *
     * @return the padding claimed before the record, or -1 when the last claim is unnamed or the
     *     ring has no room, and nothing was claimed
     */
    private static long claimAndDie(MemorySegment ring, int owner, int length, DiesAfter diesAfter) {
        long capacity = ring.get(ValueLayout.JAVA_LONG, ReceiveQueue.CAPACITY_OFFSET);
        while (true) {
            long head = (long) LONG.getVolatile(ring, ReceiveQueue.HEAD_OFFSET);
            long word = (long) LONG.getVolatile(ring, ReceiveQueue.TAIL_OFFSET);
            long tail = ReceiveQueue.tailAbove(word, head);
            long toEnd = capacity - (tail & (capacity - 1));
            long padding = length > toEnd ? toEnd : 0;
            long end = tail + padding + length;
            if ((long) LONG.getAcquire(ring, ReceiveQueue.NAMED_OFFSET) != tail || end - head > capacity) return -1;
            if (!LONG.compareAndSet(ring, ReceiveQueue.TAIL_OFFSET, word, ReceiveQueue.packTail(end, owner))) continue;
            if (diesAfter.compareTo(DiesAfter.TAKE) >= 0) {
                long offset = ReceiveQueue.HEADER_LENGTH + ((tail + padding) & (capacity - 1));
                ring.set(ValueLayout.JAVA_LONG, offset, ReceiveQueue.twoInts(-length, owner));
                ring.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION, (long) owner << 32 | 1);
            }
            if (diesAfter.compareTo(DiesAfter.PADDING) >= 0 && padding != 0) {
                ring.set(ValueLayout.JAVA_LONG, ReceiveQueue.HEADER_LENGTH + (tail & (capacity - 1)), ReceiveQueue.twoInts((int) padding, ReceiveQueue.PAD));
            }
            if (diesAfter == DiesAfter.NAMING) LONG.setRelease(ring, ReceiveQueue.NAMED_OFFSET, end);
            return padding;
        }
    }

    /**
     * Senders {@code 1} to {@code count}, each sending {@code perSender} messages numbered from 1 in
     * records of one, two and four lines (claims that pad the ring's end), and waiting for room;
     * the first to fail leaves its exception in {@code failure}.
     */
    private static List<Thread> startLiveSenders(MemorySegment ring, int count, int perSender, AtomicReference<Throwable> failure) {
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < count; t++) {
            int owner = t + 1;
            senders.add(Thread.ofPlatform().daemon().start(() -> {
                try {
                    ReceiveQueue tx = ReceiveQueue.attach(ring, TOKEN);
                    for (int i = 1; i <= perSender; i++) {
                        long connection = (long) owner << 32 | i;
                        int length = 64 << i % 3;
                        long offset;
                        while ((offset = tx.claim(length, connection)) < 0) Thread.onSpinWait();
                        tx.commit(offset, length, ReceiveQueue.MSG);
                    }
                } catch (RuntimeException | Error e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        return senders;
    }
}
