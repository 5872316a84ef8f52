package dev.conduit.internal.worker;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.TransportEndpoint;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.function.IntFunction;

/**
 * The messages of one endpoint that its transport could not take yet, in order: the runtime's
 * backpressure for every plugin. Messages are copied (so the sender's buffers are free when
 * {@code send} returns; a zero-copy send's payload from the endpoint's own buffer, never written
 * here by its encoder, since nothing checks these records) into segments of the Java heap, as
 * records
 *
 * <pre>
 *   id (4) | header length (4) | payload length (8) | header | payload
 * </pre>
 *
 * one after another. A record goes at the end of the last segment if it fits there, else at the
 * start of a new one, or of one of its own size when it is larger; no record spans two segments, so the transport gets the head as ranges of one buffer
 * ({@link TransportEndpoint#trySend(int, MemorySegment, long, int, MemorySegment, long, long)}),
 * never as views of it. The head is read in the first segment, which is recycled once read to its
 * end.
 *
 * <p>Why segments, not one buffer that doubles: a backlog grows by one segment at a time, and no
 * send copies what is already queued. The doubling buffer this replaced moved the whole backlog at
 * each growth (a send that found 1 GiB queued allocated 2 GiB and copied 1 GiB: a stall of the
 * sending thread a send must not have), and was one array, so a backlog stopped at 2 GiB. Now only
 * a single record is bounded by an array's size ({@value #MAX_RECORD} bytes); the backlog, by the
 * heap.
 *
 * <p>Why segments grow, from {@value #SEGMENT} bytes to {@value #MAX_SEGMENT}, each new one half
 * the size of those in use: a backlog is live data, and the collector copies small arrays of it
 * from one young space to the next in its pauses, which stop every thread (G1: a 95 MB backlog of
 * 64 KiB segments, a 390 ms pause on the project's loaded VM), while it never moves an array of
 * half a region or more (G1's humongous objects: 1 MiB under a 2 MiB region, up to 16 MiB). So a
 * small backlog takes small segments, and a large one mostly large ones, that the collector leaves
 * where they are. They stay at most {@value #MAX_SEGMENT} bytes, because a new array is zeroed, its
 * pages touched for the first time, in the send that needs it.
 *
 * <p>Emptied segments are kept for reuse, up to {@value #RETAIN} bytes of them ({@link Spares}):
 * in steady state neither adding nor handing the head to the transport allocates, and a burst's
 * segments beyond that go back to the heap as the queue drains. The queues of one worker's
 * endpoints share what is kept, so that a worker with many endpoints (a publisher with one per
 * subscriber) keeps {@value #RETAIN} bytes once their backlogs drained, not that much per endpoint
 * (64 endpoints after a burst of 4 MB each kept 215 MB of heap until 2026-12-04). A segment the heap cannot give is refused, naming
 * the heap and the remedy, nothing queued.
 *
 * <p>Not thread-safe: its endpoint guards it.
 */
final class PendingQueue {

    /** The size of the first segment; later ones grow to {@link #MAX_SEGMENT}, unless one record needs more. */
    static final int SEGMENT = 64 << 10;
    /** The largest segment made for records smaller than it. */
    static final int MAX_SEGMENT = 8 << 20;
    /** The most bytes of emptied segments kept for reuse. */
    static final int RETAIN = 4 << 20;
    /** The largest record: one heap array's. */
    static final long MAX_RECORD = Integer.MAX_VALUE - 64;
    private static final int RECORD = 16;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.nativeOrder());

    /**
     * Emptied segments kept for reuse, up to {@link #RETAIN} bytes of them, by the queues that
     * share it: those of one worker's endpoints. Locked, for under {@code PASS_THROUGH} endpoints
     * use their queues concurrently; used only as a segment is started or emptied, never per message.
     */
    static final class Spares {
        private Segment[] kept;
        private int count;
        private long bytes;

        /** A kept segment of at least {@code size} bytes, emptied, or {@code null}. */
        synchronized Segment take(long size) {
            for (int i = 0; i < count; i++) {
                Segment s = kept[i];
                if (s.memory.byteSize() >= size) {
                    kept[i] = kept[--count];
                    kept[count] = null;
                    bytes -= s.memory.byteSize();
                    return s;
                }
            }
            return null;
        }

        /** Keeps an emptied segment while the kept ones stay within {@link #RETAIN} bytes; else the heap has it back. */
        synchronized void give(Segment s) {
            long size = s.memory.byteSize();
            if (bytes + size > RETAIN) return;
            if (kept == null) kept = new Segment[RETAIN / SEGMENT];
            if (count == kept.length) return;
            s.head = 0;
            s.tail = 0;
            kept[count++] = s;
            bytes += size;
        }

        synchronized long bytes() {
            return bytes;
        }
    }

    /** One heap array of records, read at {@code head}, written at {@code tail}. */
    private static final class Segment {
        final MemorySegment memory;
        long head;
        long tail;

        Segment(byte[] array) {
            this.memory = MemorySegment.ofArray(array);
        }
    }

    /** Makes the segments' arrays: {@code byte[]::new}, or a test's that fails as a full heap does. */
    private final IntFunction<byte[]> allocator;
    /** The segments holding records, oldest first; made at the first message queued. */
    private ArrayDeque<Segment> segments;
    /** The bytes of {@link #segments}. */
    private long segmentBytes;
    /** Where emptied segments are kept for reuse: this queue's own, or those of its worker's endpoints. */
    private final Spares spares;
    private long messages;
    private long bytes;

    PendingQueue() {
        this(byte[]::new);
    }

    /** A queue that keeps its emptied segments in {@code spares}, which other queues may share. */
    PendingQueue(Spares spares) {
        this(byte[]::new, spares);
    }

    PendingQueue(IntFunction<byte[]> allocator) {
        this(allocator, new Spares());
    }

    PendingQueue(IntFunction<byte[]> allocator, Spares spares) {
        this.allocator = allocator;
        this.spares = spares;
    }

    boolean isEmpty() {
        return messages == 0;
    }

    long messages() {
        return messages;
    }

    /** Header and payload bytes queued. */
    long bytes() {
        return bytes;
    }

    /** Bytes of heap the queue holds: its segments, in use or kept for reuse (by every queue that shares its {@link Spares}) (tests). */
    long heldBytes() {
        return segmentBytes + spares.bytes();
    }

    /** Copies a message in behind the others. */
    void add(int id, MemorySegment header, MemorySegment payload) {
        add(id, header, payload, 0, payload.byteSize());
    }

    /** Copies a message whose payload is {@code payloadLength} bytes of {@code payloadBuffer} at {@code payloadOffset} in behind the others. */
    void add(int id, MemorySegment header, MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        long hl = header.byteSize();
        long size = RECORD + hl + payloadLength;
        Segment last = segments == null ? null : segments.peekLast();
        boolean started = last == null || last.tail + size > last.memory.byteSize();
        if (started) last = startSegment(size);
        MemorySegment m = last.memory;
        long at = last.tail;
        m.set(INT, at, id);
        m.set(INT, at + 4, (int) hl);
        m.set(LONG, at + 8, payloadLength);
        try {
            MemorySegment.copy(header, 0, m, at + RECORD, hl);
            MemorySegment.copy(payloadBuffer, payloadOffset, m, at + RECORD + hl, payloadLength);
        } catch (RuntimeException | Error e) {
            // The caller's segment was closed, or is confined to another thread. A segment started for this record would stay
            // behind, empty but for its fields, and offerHead would send them as a message, ahead of those queued after it.
            if (started) recycle(segments.pollLast());
            throw e;
        }
        last.tail = at + size;
        messages++;
        bytes += hl + payloadLength;
    }

    /**
     * Offers the head record to {@code endpoint} as ranges of its segment, so that no view is made;
     * does not remove it.
     *
     * @return whether the transport took it
     */
    boolean offerHead(TransportEndpoint endpoint) {
        Segment first = segments.peekFirst();
        MemorySegment m = first.memory;
        long head = first.head;
        int hl = m.get(INT, head + 4);
        return endpoint.trySend(m.get(INT, head), m, head + RECORD, hl, m, head + RECORD + hl, m.get(LONG, head + 8));
    }

    /** Drops the head record (the transport took it). */
    void remove() {
        Segment first = segments.peekFirst();
        MemorySegment m = first.memory;
        int hl = m.get(INT, first.head + 4);
        long pl = m.get(LONG, first.head + 8);
        first.head += RECORD + hl + pl;
        messages--;
        bytes -= hl + pl;
        if (first.head == first.tail) recycle(segments.pollFirst());
    }

    /** Discards every record; returns how many there were. */
    long clear() {
        long n = messages;
        messages = 0;
        bytes = 0;
        if (segments != null) {
            for (Segment s = segments.pollFirst(); s != null; s = segments.pollFirst()) recycle(s);
        }
        return n;
    }

    /** Gives an emptied segment to {@link #spares}, which keeps it for reuse or lets the heap have it. */
    private void recycle(Segment s) {
        segmentBytes -= s.memory.byteSize();
        spares.give(s);
    }

    /** Appends a segment with room for a record of {@code size} bytes: a kept one if one is large enough, else a new one. */
    private Segment startSegment(long size) {
        if (size > MAX_RECORD) {
            throw new ConduitException("cannot queue a message of " + Counts.bytes(size) + ": a message waiting in the local queue is one "
                    + "Java array, at most " + MAX_RECORD + " bytes, and " + Counts.messages(messages) + " (" + Counts.bytes(bytes) + ") "
                    + (messages == 1 ? "already waits " : "already wait ")
                    + "locally for this endpoint's transport. Nothing was queued. Progress the worker (and the peer) until pending() "
                    + "is 0, so that the message goes to the transport straight away, or send it in parts");
        }
        if (segments == null) segments = new ArrayDeque<>();
        Segment kept = spares.take(size);
        if (kept != null) {
            segmentBytes += kept.memory.byteSize();
            segments.addLast(kept);
            return kept;
        }
        int length = (int) Math.max(size, Math.clamp(segmentBytes / 2, SEGMENT, MAX_SEGMENT));
        byte[] array;
        try {
            array = allocator.apply(length);
        } catch (OutOfMemoryError e) {
            // The queue is as it was, so the send can be refused rather than leave the application an OutOfMemoryError of no
            // cause it can see.
            throw new ConduitException("cannot queue a message of " + Counts.bytes(size) + ": " + Counts.messages(messages) + " ("
                    + Counts.bytes(bytes) + ") " + (messages == 1 ? "already waits" : "already wait")
                    + " locally for this endpoint's transport (its peer reads slower than this endpoint "
                    + "sends, or the connection's bounce ring is full), and the Java heap has no room for the local queue's "
                    + "segment of " + length + " bytes (the heap's limit, -Xmx, is " + Runtime.getRuntime().maxMemory()
                    + " bytes). Nothing was queued and the endpoint stays usable. Progress the worker (and the peer) so that the "
                    + "queue drains before sending more, shed a peer whose pending() keeps growing (close its endpoint), give the "
                    + "JVM more heap (-Xmx), or make room in the transport for what you send at once (over memfd and posix, "
                    + "<plugin>.bounce.size holds the large payloads in flight)", e);
        }
        Segment s = new Segment(array);
        segmentBytes += length;
        segments.addLast(s);
        return s;
    }
}
