package dev.conduit.internal.worker;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PayloadEncoder;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The messages of one endpoint that its transport could not take yet, in order: the runtime's
 * backpressure for every plugin. Messages are copied (so the sender's buffers are free when
 * {@code send} returns) — or written there by a zero-copy send's encoder — into one growable heap
 * buffer, as records
 *
 * <pre>
 *   id (4) | header length (4) | payload length (8) | header | payload
 * </pre>
 *
 * written at {@code tail} and read at {@code head}. The buffer is reused: when the queue empties
 * both positions return to 0; when a record does not fit at the end, the unread bytes move to the
 * front if at least half the buffer was read, else the buffer doubles. Each byte is moved at most
 * once per half-buffer of reads, so adding and removing cost amortized O(size). In steady state
 * adding allocates nothing; handing the head to the transport allocates the two views the SPI's
 * {@code trySend} takes (none for an empty header or payload), once per record however often it
 * is retried. A buffer that grew past {@value #RETAIN} bytes is dropped when the queue empties.
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

    private MemorySegment buffer = MemorySegment.NULL;
    private long head;
    private long tail;
    private long messages;
    private long bytes;
    /** Views of the head record, made once per record; {@code null} when not made yet. */
    private MemorySegment headHeader;
    private MemorySegment headPayload;

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
        long hl = header.byteSize();
        long pl = payload.byteSize();
        long size = RECORD + hl + pl;
        if (tail + size > buffer.byteSize()) makeRoom(size);
        buffer.set(INT, tail, id);
        buffer.set(INT, tail + 4, (int) hl);
        buffer.set(LONG, tail + 8, pl);
        MemorySegment.copy(header, 0, buffer, tail + RECORD, hl);
        MemorySegment.copy(payload, 0, buffer, tail + RECORD + hl, pl);
        tail += size;
        messages++;
        bytes += hl + pl;
    }

    /**
     * Lets {@code encoder} write a message's payload in behind the others, into a target of
     * {@code maxLength} bytes; keeps only what it wrote. When it throws, nothing is queued.
     *
     * @return the payload's length
     */
    long add(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        long hl = header.byteSize();
        if (tail + RECORD + hl + maxLength > buffer.byteSize()) makeRoom(RECORD + hl + maxLength);
        long payloadAt = tail + RECORD + hl;
        long pl = PayloadEncoder.checkWritten(encoder.encode(buffer.asSlice(payloadAt, maxLength)), maxLength);
        buffer.set(INT, tail, id);
        buffer.set(INT, tail + 4, (int) hl);
        buffer.set(LONG, tail + 8, pl);
        MemorySegment.copy(header, 0, buffer, tail + RECORD, hl);
        tail = payloadAt + pl;
        messages++;
        bytes += hl + pl;
        return pl;
    }

    int headId() {
        return buffer.get(INT, head);
    }

    MemorySegment headHeader() {
        if (headHeader == null) {
            int hl = buffer.get(INT, head + 4);
            headHeader = hl == 0 ? MemorySegment.NULL : buffer.asSlice(head + RECORD, hl);
        }
        return headHeader;
    }

    MemorySegment headPayload() {
        if (headPayload == null) {
            long pl = buffer.get(LONG, head + 8);
            headPayload = pl == 0 ? MemorySegment.NULL : buffer.asSlice(head + RECORD + buffer.get(INT, head + 4), pl);
        }
        return headPayload;
    }

    /** Drops the head record (the transport took it). */
    void remove() {
        int hl = buffer.get(INT, head + 4);
        long pl = buffer.get(LONG, head + 8);
        head += RECORD + hl + pl;
        messages--;
        bytes -= hl + pl;
        headHeader = null;
        headPayload = null;
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
        headHeader = null;
        headPayload = null;
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
            long newCapacity = Math.max(INITIAL, Math.min(MAX_BUFFER, capacity * 2));
            while (newCapacity < needed) newCapacity = Math.min(MAX_BUFFER, newCapacity * 2);
            MemorySegment grown = MemorySegment.ofArray(new byte[(int) newCapacity]);
            MemorySegment.copy(buffer, head, grown, 0, live);
            buffer = grown;
        }
        tail = live;
        head = 0;
        headHeader = null;
        headPayload = null;
    }
}
