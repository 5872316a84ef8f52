package dev.conduit.internal.worker;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.TransportEndpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The local queue of an endpoint: order, content, reuse of its segments and a bounded footprint. */
class PendingQueueTest {

    private static byte[] message(Random random, int maxSize) {
        byte[] b = new byte[random.nextInt(maxSize + 1)];
        random.nextBytes(b);
        return b;
    }

    @Test
    void keepsOrderAndContentThroughGrowthAndReuse() {
        PendingQueue q = new PendingQueue();
        ArrayDeque<byte[][]> model = new ArrayDeque<>();
        Random random = new Random(7);
        long live = 0;
        long liveRecords = 0;
        long maxLiveRecords = 0;
        int nextId = 0;
        ArrayDeque<Integer> ids = new ArrayDeque<>();
        for (int step = 0; step < 200_000; step++) {
            if (random.nextInt(100) < 52) {
                byte[] header = message(random, 24);
                byte[] payload = message(random, random.nextInt(50) == 0 ? 20_000 : 300);
                q.add(nextId, MemorySegment.ofArray(header), MemorySegment.ofArray(payload));
                model.add(new byte[][] {header, payload});
                ids.add(nextId++);
                live += header.length + payload.length;
                liveRecords += 16 + header.length + payload.length;
            } else if (!model.isEmpty()) {
                byte[][] expected = model.poll();
                live -= expected[0].length + expected[1].length;
                liveRecords -= 16 + expected[0].length + expected[1].length;
                Head head = Head.of(q);
                assertThat(head.id()).isEqualTo(ids.poll());
                assertThat(head.header()).isEqualTo(expected[0]);
                assertThat(head.payload()).isEqualTo(expected[1]);
                q.remove();
            }
            assertThat(q.messages()).isEqualTo(model.size());
            assertThat(q.bytes()).isEqualTo(live);
            maxLiveRecords = Math.max(maxLiveRecords, liveRecords);
            // Segments are sized by the backlog when they were made, and each holds records up to its end but for less than the
            // largest record (20,064 bytes here).
            assertThat(q.heldBytes()).as("bounded by the largest backlog and what is kept for reuse, not by the traffic")
                    .isLessThanOrEqualTo(4 * maxLiveRecords + 2L * PendingQueue.SEGMENT + PendingQueue.RETAIN);
        }
        assertThat(q.clear()).isEqualTo(model.size());
        assertThat(q.isEmpty()).isTrue();
        assertThat(q.heldBytes()).as("kept for reuse once cleared").isLessThanOrEqualTo(PendingQueue.RETAIN);
    }

    @Test
    void reusesItsSegmentsAndKeepsNoBurstsOnceEmpty() {
        List<Integer> allocated = new ArrayList<>();
        PendingQueue q = new PendingQueue(n -> {
            allocated.add(n);
            return new byte[n];
        });
        MemorySegment small = MemorySegment.ofArray(new byte[100]);
        for (int round = 0; round < 10; round++) {
            for (int i = 0; i < 30; i++) q.add(i, MemorySegment.NULL, small);
            while (!q.isEmpty()) q.remove();
        }
        assertThat(allocated).as("segments made for ten rounds of 30 messages").containsExactly(PendingQueue.SEGMENT);
        assertThat(q.heldBytes()).isEqualTo(PendingQueue.SEGMENT);

        q.add(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[PendingQueue.RETAIN + 1]));
        assertThat(q.heldBytes()).isGreaterThan(PendingQueue.RETAIN);
        q.remove();
        assertThat(q.heldBytes()).as("a burst's segment is not kept").isEqualTo(PendingQueue.SEGMENT);
        q.add(2, MemorySegment.NULL, MemorySegment.NULL);
        Head empty = Head.of(q);
        assertThat(empty.header()).isEmpty();
        assertThat(empty.payload()).isEmpty();
        assertThat(Arrays.asList(q.messages(), q.bytes())).containsExactly(1L, 0L);
    }

    /**
     * The queues of one worker's endpoints share what they keep for reuse: 64 of them, each after a
     * backlog of 4 MB, keep {@link PendingQueue#RETAIN} bytes between them (each kept 3.4 MB of its
     * own until 2026-12-04: 215 MB), and a backlog on one takes what another kept.
     */
    @Test
    void theQueuesThatShareTheirSparesKeepAtMostRetainBetweenThemAndReuseEachOthers() {
        List<Integer> allocated = new ArrayList<>();
        PendingQueue.Spares spares = new PendingQueue.Spares();
        MemorySegment tick = MemorySegment.ofArray(new byte[148]);
        MemorySegment header = MemorySegment.ofArray(new byte[16]);
        List<PendingQueue> queues = new ArrayList<>();
        for (int e = 0; e < 64; e++) {
            PendingQueue q = new PendingQueue(n -> {
                allocated.add(n);
                return new byte[n];
            }, spares);
            queues.add(q);
            for (long b = 0; b < 4_000_000; b += 180) q.add(e, header, tick);
            while (!q.isEmpty()) q.remove();
        }
        assertThat(spares.bytes()).as("kept by 64 drained queues").isPositive().isLessThanOrEqualTo(PendingQueue.RETAIN);
        assertThat(queues.getLast().heldBytes()).isEqualTo(spares.bytes());
        allocated.clear();
        PendingQueue first = queues.getFirst();
        for (int i = 0; i < 10_000; i++) first.add(i, header, tick);
        assertThat(allocated).as("arrays made for a backlog of 1.8 MB on one of them").isEmpty();
        while (!first.isEmpty()) first.remove();
    }

    /**
     * The queue was one buffer that doubled, copying the whole backlog at each growth: a send that
     * found 1 GiB queued allocated 2 GiB and copied 1 GiB before it returned, and a backlog stopped
     * at 2 GiB. Now a backlog grows by a segment at a time, and nothing queued is ever moved.
     */
    @Test
    void aGrowingBacklogTakesASegmentAtATimeAndNeverCopiesWhatIsQueued() {
        // Segments grow (each half the size of those in use, up to MAX_SEGMENT) so that the collector leaves a large
        // backlog where it is: a 95 MB backlog of 64 KiB segments took a 390 ms young-collection pause to copy.
        List<Integer> allocated = new ArrayList<>();
        PendingQueue q = new PendingQueue(n -> {
            allocated.add(n);
            return new byte[n];
        });
        byte[] payload = new byte[1000];
        int count = 20_000; // about 20 MB
        for (int i = 0; i < count; i++) {
            payload[0] = (byte) i;
            q.add(i, MemorySegment.NULL, MemorySegment.ofArray(payload));
        }
        long backlog = 1016L * count;
        assertThat(allocated).as("every array the backlog took: one segment at a time, from the first size to the largest")
                .isSorted().allMatch(n -> n >= PendingQueue.SEGMENT && n <= PendingQueue.MAX_SEGMENT)
                .contains(PendingQueue.MAX_SEGMENT);
        assertThat(allocated.stream().mapToLong(Integer::longValue).sum()).as("bytes of all of them, for a backlog of %d", backlog)
                .isLessThan(backlog + PendingQueue.MAX_SEGMENT);
        for (int i = 0; i < count; i++) {
            Head head = Head.of(q);
            assertThat(head.id()).isEqualTo(i);
            assertThat(head.payload()[0]).isEqualTo((byte) i);
            q.remove();
        }
        assertThat(q.heldBytes()).as("kept for reuse once drained").isPositive().isLessThanOrEqualTo(PendingQueue.RETAIN);
    }

    @Test
    void aMessageLargerThanAnArrayIsRefusedNamingTheLimitAndNothingIsQueued(@TempDir Path dir) throws IOException {
        PendingQueue q = new PendingQueue();
        q.add(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[10]));
        try (Arena arena = Arena.ofConfined();
             FileChannel file = FileChannel.open(dir.resolve("payload"), StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                     StandardOpenOption.WRITE, StandardOpenOption.SPARSE)) {
            MemorySegment huge = file.map(FileChannel.MapMode.READ_WRITE, 0, 3L << 30, arena); // sparse: takes no memory
            assertThatThrownBy(() -> q.add(2, MemorySegment.NULL, huge))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot queue a message of " + (16 + (3L << 30)) + " bytes")
                    .hasMessageContaining("at most " + PendingQueue.MAX_RECORD + " bytes")
                    .hasMessageContaining("1 message (10 bytes) already waits")
                    .hasMessageContaining("Nothing was queued")
                    .hasMessageContaining("pending()");
        }
        assertThat(Arrays.asList(q.messages(), q.bytes())).containsExactly(1L, 10L);
        assertThat(Head.of(q).id()).isEqualTo(1);
    }

    /**
     * A backlog that outgrows the heap (a slow subscriber of a publisher with a small {@code -Xmx}, found by
     * a fan-out run) is refused: a {@code ConduitException} naming the backlog, the heap and the remedy,
     * with nothing queued and the queue intact. It was an {@code OutOfMemoryError} out of
     * {@code Endpoint.send}, which names no cause an application can see.
     */
    @Test
    void aSegmentTheHeapCannotGiveIsRefusedNamingTheHeapAndLeavesTheQueueIntact() {
        int[] made = {0};
        PendingQueue q = new PendingQueue(n -> {
            if (made[0]++ > 0) throw new OutOfMemoryError("Java heap space");
            return new byte[n];
        });
        MemorySegment small = MemorySegment.ofArray(new byte[100]);
        for (int i = 0; i < 20; i++) { // 20 records of 116 bytes fill the first segment in part
            small.set(ValueLayout.JAVA_BYTE, 0, (byte) i);
            q.add(i, MemorySegment.NULL, small);
        }
        assertThat(q.heldBytes()).isEqualTo(PendingQueue.SEGMENT);
        long messages = q.messages();
        long bytes = q.bytes();
        MemorySegment large = MemorySegment.ofArray(new byte[PendingQueue.SEGMENT]);
        assertThatThrownBy(() -> q.add(99, MemorySegment.NULL, large))
                .isInstanceOf(ConduitException.class)
                .hasCauseInstanceOf(OutOfMemoryError.class)
                .hasMessageContaining(messages + " messages (" + bytes + " bytes) already wait locally")
                .hasMessageContaining("Java heap")
                .hasMessageContaining("-Xmx")
                .hasMessageContaining("Nothing was queued")
                .hasMessageContaining("pending()");
        assertThat(q.messages()).isEqualTo(messages);
        assertThat(q.bytes()).isEqualTo(bytes);
        for (int i = 0; i < messages; i++) {
            Head head = Head.of(q);
            assertThat(head.id()).isEqualTo(i);
            assertThat(head.payload()[0]).isEqualTo((byte) i);
            q.remove();
        }
        assertThat(q.isEmpty()).isTrue();
    }

    /**
     * A message whose payload cannot be copied in (its arena closed, or confined to another thread)
     * is refused with the copy's exception and leaves nothing behind: a segment started for it used
     * to stay, holding its fields and no bytes, and was offered as a message ahead of the next one.
     */
    @Test
    void aMessageWhosePayloadCannotBeCopiedInLeavesNoTraceAndTheNextOneTakesItsPlace() {
        PendingQueue q = new PendingQueue();
        q.add(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[10]));
        MemorySegment closed;
        try (Arena arena = Arena.ofConfined()) {
            closed = arena.allocate(100_000); // more than the first segment has left: it would start a segment of its own
        }
        MemorySegment unreadable = closed;
        assertThatThrownBy(() -> q.add(2, MemorySegment.NULL, unreadable)).isInstanceOf(IllegalStateException.class);
        assertThat(q.messages()).isEqualTo(1);
        assertThat(q.bytes()).isEqualTo(10);
        byte[] next = new byte[200_000];
        new Random(3).nextBytes(next);
        q.add(3, MemorySegment.NULL, MemorySegment.ofArray(next));

        assertThat(Head.of(q).id()).isEqualTo(1);
        q.remove();
        Head head = Head.of(q);
        assertThat(head.id()).isEqualTo(3);
        assertThat(head.payload()).isEqualTo(next);
        q.remove();
        assertThat(q.isEmpty()).isTrue();
    }

    @Test
    void aLargeMessageTakesASegmentOfItsOwnSize() {
        // helper h8: one 256 MiB tensor queued behind a full bounce ring took a 512 MiB heap buffer.
        PendingQueue q = new PendingQueue();
        int payload = 5 << 20;
        q.add(1, MemorySegment.ofArray(new byte[8]), MemorySegment.ofArray(new byte[payload]));
        long record = 16 + 8 + payload;
        assertThat(q.heldBytes()).as("the segment of one large record").isEqualTo(record);
        q.add(2, MemorySegment.NULL, MemorySegment.ofArray(new byte[100]));
        assertThat(q.heldBytes()).as("the next record, in a segment half the size of those in use")
                .isEqualTo(record + Math.clamp(record / 2, PendingQueue.SEGMENT, PendingQueue.MAX_SEGMENT));
        assertThat(Arrays.asList(Head.of(q).id(), q.messages())).containsExactly(1, 2L);
    }

    @Test
    void aHeapWithNoRoomForASegmentIsAConduitExceptionNamingTheBacklogAndTheRemedyAndTheQueueKeepsItsMessages() {
        // helper h8: a fourth 256 MiB send while the ring was full threw the JVM's bare "OutOfMemoryError: Java heap space".
        int[] asked = {0};
        PendingQueue q = new PendingQueue(n -> {
            if (n > PendingQueue.SEGMENT) {
                asked[0] = n;
                throw new OutOfMemoryError("Java heap space");
            }
            return new byte[n];
        });
        q.add(7, MemorySegment.NULL, MemorySegment.ofArray(new byte[1000]));
        assertThatThrownBy(() -> q.add(8, MemorySegment.NULL, MemorySegment.ofArray(new byte[100 << 10])))
                .isInstanceOf(ConduitException.class)
                .hasCauseInstanceOf(OutOfMemoryError.class)
                .hasMessageContaining("cannot queue a message of " + (16 + (100 << 10)) + " bytes: ")
                .hasMessageContaining("segment of " + asked[0] + " bytes")
                .hasMessageContaining("1 message (1000 bytes) already waits")
                .hasMessageContaining("-Xmx")
                .hasMessageContaining("Progress the worker")
                .hasMessageContaining("bounce.size");
        assertThat(Arrays.asList(q.messages(), q.bytes())).containsExactly(1L, 1000L);
        assertThat(Head.of(q).payload()).hasSize(1000);
        q.add(9, MemorySegment.NULL, MemorySegment.ofArray(new byte[10]));
        q.remove();
        assertThat(Head.of(q).id()).isEqualTo(9);
    }

    /** What {@link PendingQueue#offerHead} handed over as ranges (never as views), copied out; the transport refused it. */
    private record Head(int id, byte[] header, byte[] payload) {

        static Head of(PendingQueue q) {
            Capture capture = new Capture();
            assertThat(q.offerHead(capture)).isFalse();
            return capture.head;
        }

        private static class Capture implements TransportEndpoint {
            Head head;

            @Override
            public boolean trySend(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                                   MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
                head = new Head(id, headerBuffer.asSlice(headerOffset, headerLength).toArray(ValueLayout.JAVA_BYTE),
                        payloadBuffer.asSlice(payloadOffset, payloadLength).toArray(ValueLayout.JAVA_BYTE));
                return false;
            }

            @Override
            public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
                throw new AssertionError("the queue offers ranges");
            }

            @Override
            public long maxPayloadSize() {
                return Long.MAX_VALUE;
            }

            @Override
            public void close() {
            }
        }
    }
}
