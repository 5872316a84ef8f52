package dev.conduit.internal.worker;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.TransportEndpoint;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The local queue of an endpoint: order, content, reuse of its buffer and a bounded footprint. */
class PendingQueueTest {

    private static byte[] message(Random random, int maxSize) {
        byte[] b = new byte[random.nextInt(maxSize + 1)];
        random.nextBytes(b);
        return b;
    }

    @Test
    void keepsOrderAndContentThroughGrowthAndCompaction() {
        PendingQueue q = new PendingQueue();
        ArrayDeque<byte[][]> model = new ArrayDeque<>();
        Random random = new Random(7);
        long maxLive = 0;
        long live = 0;
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
            } else if (!model.isEmpty()) {
                byte[][] expected = model.poll();
                live -= expected[0].length + expected[1].length;
                Head head = Head.of(q);
                assertThat(head.id()).isEqualTo(ids.poll());
                assertThat(head.header()).isEqualTo(expected[0]);
                assertThat(head.payload()).isEqualTo(expected[1]);
                q.remove();
            }
            assertThat(q.messages()).isEqualTo(model.size());
            assertThat(q.bytes()).isEqualTo(live);
            maxLive = Math.max(maxLive, live + 16L * model.size());
            assertThat(q.capacity()).as("bounded by the largest backlog, not by the traffic").isLessThanOrEqualTo(4 * (maxLive + 20_000 + 64) + PendingQueue.INITIAL);
        }
        assertThat(q.clear()).isEqualTo(model.size());
        assertThat(q.isEmpty()).isTrue();
    }

    @Test
    void reusesItsBufferAndDropsAHugeOneWhenEmpty() {
        PendingQueue q = new PendingQueue();
        MemorySegment small = MemorySegment.ofArray(new byte[100]);
        for (int round = 0; round < 10; round++) {
            for (int i = 0; i < 30; i++) q.add(i, MemorySegment.NULL, small);
            while (!q.isEmpty()) q.remove();
        }
        assertThat(q.capacity()).isEqualTo(4096);

        q.add(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[PendingQueue.RETAIN + 1]));
        assertThat(q.capacity()).isGreaterThan(PendingQueue.RETAIN);
        q.remove();
        assertThat(q.capacity()).as("a burst's buffer is not kept").isZero();
        q.add(2, MemorySegment.NULL, MemorySegment.NULL);
        Head empty = Head.of(q);
        assertThat(empty.header()).isEmpty();
        assertThat(empty.payload()).isEmpty();
        assertThat(Arrays.asList(q.messages(), q.bytes())).containsExactly(1L, 0L);
    }

    /**
     * A backlog that outgrows the heap (a slow subscriber of a publisher with a small {@code -Xmx}, found by
     * a fan-out run) is refused as one past the buffer's bound is: a {@code ConduitException} naming the
     * backlog, the heap and the remedy, with nothing queued and the queue intact. It was an
     * {@code OutOfMemoryError} out of {@code Endpoint.send}, which names no cause an application can see.
     */
    @Test
    void aGrowthTheHeapCannotGiveIsRefusedNamingTheHeapAndLeavesTheQueueIntact() {
        PendingQueue q = new PendingQueue(n -> {
            if (n > PendingQueue.INITIAL) throw new OutOfMemoryError("Java heap space");
            return new byte[n];
        });
        MemorySegment small = MemorySegment.ofArray(new byte[100]);
        for (int i = 0; i < 20; i++) { // 20 records of 116 bytes fill the first buffer, 4 KiB, in part
            small.set(ValueLayout.JAVA_BYTE, 0, (byte) i);
            q.add(i, MemorySegment.NULL, small);
        }
        assertThat(q.capacity()).isEqualTo(PendingQueue.INITIAL);
        long messages = q.messages();
        long bytes = q.bytes();
        MemorySegment large = MemorySegment.ofArray(new byte[PendingQueue.INITIAL]);
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

    @Test
    void aLargeMessageGrowsTheBufferToWhatItNeedsNotToTheNextPowerOfTwo() {
        // helper h8: one 256 MiB tensor queued behind a full bounce ring took a 512 MiB heap buffer.
        PendingQueue q = new PendingQueue();
        int payload = 5 << 20;
        q.add(1, MemorySegment.ofArray(new byte[8]), MemorySegment.ofArray(new byte[payload]));
        long record = 16 + 8 + payload;
        assertThat(q.capacity()).as("the buffer of one large record").isEqualTo(record);
        q.add(2, MemorySegment.NULL, MemorySegment.ofArray(new byte[100]));
        assertThat(q.capacity()).as("it still at least doubles, so that adding stays amortized O(size)").isEqualTo(2 * record);
        assertThat(Arrays.asList(Head.of(q).id(), q.messages())).containsExactly(1, 2L);
    }

    @Test
    void aHeapWithNoRoomForTheBufferIsAConduitExceptionNamingTheBacklogAndTheRemedyAndTheQueueKeepsItsMessages() {
        // helper h8: a fourth 256 MiB send while the ring was full threw the JVM's bare "OutOfMemoryError: Java heap space".
        int[] asked = {0};
        PendingQueue q = new PendingQueue(n -> {
            if (n > 64 << 10) {
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
                .hasMessageContaining("buffer of " + asked[0] + " bytes")
                .hasMessageContaining("1 messages (1000 bytes) already wait")
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
