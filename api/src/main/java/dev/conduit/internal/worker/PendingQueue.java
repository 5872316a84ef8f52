package dev.conduit.internal.worker;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.TransportEndpoint;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.function.IntFunction;

/**
 * The messages of one endpoint that its transport could not take yet, in order: the runtime's
 * backpressure for every plugin. Messages are copied (so the sender's buffers are free when
 * {@code send} returns; a zero-copy send's payload from the endpoint's own buffer, never written
 * here by its encoder, since nothing checks these records) into one growable heap buffer, as
 * records
 *
 * <pre>
 *   id (4) | header length (4) | payload length (8) | header | payload
 * </pre>
 *
 * written at {@code tail} and read at {@code head}. The buffer is reused: when the queue empties
 * both positions return to 0; when a record does not fit at the end, the unread bytes move to the
 * front if at least half the buffer was read, else the buffer doubles, or grows to what the record
 * needs when that is more. Each byte is moved at most
 * once per half-buffer of reads, so adding and removing cost amortized O(size). In steady state
 * neither adding nor handing the head to the transport allocates: the head goes as ranges of the
 * buffer ({@link TransportEndpoint#trySend(int, MemorySegment, long, int, MemorySegment, long, long)}),
 * not as views of it. A buffer that grew past {@value #RETAIN} bytes is dropped when the queue
 * empties. The buffer is on the Java heap: a backlog is bounded by {@value #MAX_BUFFER} bytes and
 * by the heap, and a growth the heap cannot give is refused as the first bound is, naming the heap
 * and the remedy, nothing queued.
 *
 * <p>Not thread-safe: its endpoint guards it.
 */
final class PendingQueue {

    static final int INITIAL = 4096;
    static final int RETAIN = 4 << 20;
    /** The largest heap buffer: a backlog beyond it is refused rather than dropped. */
    static final long MAX_BUFFER = Integer.MAX_VALUE - 64;
    private static final int RECORD = 16;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.nativeOrder());

    /** Makes the buffer's arrays: {@code byte[]::new}, or a test's that fails as a full heap does. */
    private final IntFunction<byte[]> allocator;
    private MemorySegment buffer = MemorySegment.NULL;
    private long head;
    private long tail;
    private long messages;
    private long bytes;

    PendingQueue() {
        this(byte[]::new);
    }

    PendingQueue(IntFunction<byte[]> allocator) {
        this.allocator = allocator;
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

    /** The buffer's size in bytes (tests). */
    long capacity() {
        return buffer.byteSize();
    }

    /** Copies a message in behind the others. */
    void add(int id, MemorySegment header, MemorySegment payload) {
        add(id, header, payload, 0, payload.byteSize());
    }

    /** Copies a message whose payload is {@code payloadLength} bytes of {@code payloadBuffer} at {@code payloadOffset} in behind the others. */
    void add(int id, MemorySegment header, MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        long hl = header.byteSize();
        long size = RECORD + hl + payloadLength;
        if (tail + size > buffer.byteSize()) makeRoom(size);
        buffer.set(INT, tail, id);
        buffer.set(INT, tail + 4, (int) hl);
        buffer.set(LONG, tail + 8, payloadLength);
        MemorySegment.copy(header, 0, buffer, tail + RECORD, hl);
        MemorySegment.copy(payloadBuffer, payloadOffset, buffer, tail + RECORD + hl, payloadLength);
        tail += size;
        messages++;
        bytes += hl + payloadLength;
    }

    /**
     * Offers the head record to {@code endpoint} as ranges of this queue's buffer, so that no view
     * is made; does not remove it.
     *
     * @return whether the transport took it
     */
    boolean offerHead(TransportEndpoint endpoint) {
        int hl = buffer.get(INT, head + 4);
        return endpoint.trySend(buffer.get(INT, head), buffer, head + RECORD, hl, buffer, head + RECORD + hl, buffer.get(LONG, head + 8));
    }

    /** Drops the head record (the transport took it). */
    void remove() {
        int hl = buffer.get(INT, head + 4);
        long pl = buffer.get(LONG, head + 8);
        head += RECORD + hl + pl;
        messages--;
        bytes -= hl + pl;
        if (messages == 0) reset();
    }

    /** Discards every record; returns how many there were. */
    long clear() {
        long n = messages;
        messages = 0;
        bytes = 0;
        reset();
        return n;
    }

    private void reset() {
        head = 0;
        tail = 0;
        if (buffer.byteSize() > RETAIN) buffer = MemorySegment.NULL;
    }

    private void makeRoom(long size) {
        long live = tail - head;
        long capacity = buffer.byteSize();
        if (live + size <= capacity && head >= capacity / 2) {
            MemorySegment.copy(buffer, head, buffer, 0, live); // overlapping copy is safe (memmove semantics)
        } else {
            long needed = live + size;
            if (needed > MAX_BUFFER) {
                throw new ConduitException("cannot queue a message of " + size + " bytes: " + messages + " messages (" + bytes
                        + " bytes) already wait locally for this endpoint's transport and the local queue is limited to "
                        + MAX_BUFFER + " bytes. Progress the worker (and the peer) so that the queue drains.");
            }
            // At least double (amortized O(size)), but no further than the record needs: doubling again until a large
            // record fitted took up to twice its size of heap (a 256 MiB payload, a 512 MiB buffer).
            long newCapacity = Math.min(MAX_BUFFER, Math.max(INITIAL, Math.max(capacity * 2, needed)));
            byte[] array;
            try {
                array = allocator.apply((int) newCapacity);
            } catch (OutOfMemoryError e) {
                // One large array the heap cannot give now: the queue is as it was, so the send can be refused as at
                // MAX_BUFFER rather than leave the application an OutOfMemoryError of no cause it can see.
                throw new ConduitException("cannot queue a message of " + size + " bytes: " + messages + " messages (" + bytes
                        + " bytes) already wait locally for this endpoint's transport (its peer reads slower than this endpoint "
                        + "sends, or the connection's bounce ring is full), and the Java heap has no room for the local queue's "
                        + "buffer of " + newCapacity + " bytes (grown from " + capacity + "; the heap's limit, -Xmx, is "
                        + Runtime.getRuntime().maxMemory() + " bytes). Nothing was queued and the endpoint stays usable. Progress "
                        + "the worker (and the peer) so that the queue drains before sending more, shed a peer whose pending() "
                        + "keeps growing (close its endpoint), give the JVM more heap (-Xmx), or make room in the transport for "
                        + "what you send at once (over memfd and posix, <plugin>.bounce.size holds the large payloads in flight)", e);
            }
            MemorySegment grown = MemorySegment.ofArray(array);
            MemorySegment.copy(buffer, head, grown, 0, live);
            buffer = grown;
        }
        tail = live;
        head = 0;
    }
}
