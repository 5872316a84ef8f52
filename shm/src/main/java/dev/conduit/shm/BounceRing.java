package dev.conduit.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The bounce buffer of one connection: a ring of payload bytes that one sender writes and one
 * receiver reads, for messages too large to copy into the receive queue. The sender copies a
 * payload in once and posts a small LARGE record in the receiver's queue; the receiver's handler
 * reads the payload where it lies (zero-copy) and, once the handler returns, releases it by
 * moving {@code consumed}. Messages of a connection are consumed in order, so one position is
 * enough. A payload the receiver's application keeps ({@code Message.keepPayload()}) holds
 * {@code consumed} before it, and the payloads after it, until it is closed; the receiver then
 * says how far it has read in {@code read}, so that a sender that finds its large messages read
 * but not released knows they are kept, not dropped by a receiver that could not map the ring. The ring lives in memory the sender allocated from its own plugin and exported; the
 * receiver maps it once per connection.
 *
 * <pre>
 * offset  size  field          written by   how
 *      0     4  magic "CNDB"   sender       once, before announcing the ring
 *      8     8  capacity       sender       once, a power of two
 *     64     8  consumed       receiver     release store after each payload's handler returned, or once the
 *                                           kept payloads before it are closed (the sender's format stores 0,
 *                                           before the magic)
 *     72     8  read           receiver     release store after each payload's handler returned while an earlier
 *                                           one, or this one, is kept (0 until then, as the sender's format
 *                                           stores it); since queue version 7
 *   4096     …  payload bytes  sender       a payload is contiguous; one that does not fit before
 *                                           the end starts again at 0, the rest of the end unused
 * </pre>
 */
public final class BounceRing {

    public static final int MAGIC = 0x42444E43; // "CNDB"
    static final long CAPACITY_OFFSET = 8;
    static final long CONSUMED_OFFSET = 64;
    static final long READ_OFFSET = 72;
    public static final long HEADER_LENGTH = 4096;
    private static final long ALIGNMENT = 64;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    private final MemorySegment memory;
    /** The payload bytes without the header: what an encoder gets to write a payload in place. */
    private final MemorySegment ring;
    /** The whole memory, read-only: what the receiver hands to handlers. */
    private final MemorySegment delivered;
    private final long capacity;
    private final long mask;
    /** Sender side only: where the next payload goes. */
    private long produced;

    private BounceRing(MemorySegment memory, long capacity) {
        this.memory = memory;
        this.ring = memory.asSlice(HEADER_LENGTH, capacity);
        this.delivered = memory.asReadOnly();
        this.capacity = capacity;
        this.mask = capacity - 1;
    }

    public static long mappedLength(long capacity) {
        return HEADER_LENGTH + capacity;
    }

    /** Formats fresh memory (zeros, as a new chunk reads), taking every page of it; the sender's side. */
    public static BounceRing format(MemorySegment memory) {
        long capacity = memory.byteSize() - HEADER_LENGTH;
        if (capacity < 4096 || Long.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("bounce capacity " + capacity + " must be a power of two of at least 4096");
        }
        // Every page is taken now, as the first lap would take it: a page first written by a send, once another process had
        // filled the shared directory's tmpfs, faulted that send and failed the endpoint for good, blaming the peer. Here a
        // directory too full for the ring fails its creation, which the endpoint survives (ShmEndpoint#createBounce).
        for (long page = HEADER_LENGTH; page < memory.byteSize(); page += 4096) {
            memory.set(ValueLayout.JAVA_BYTE, page, (byte) 0);
        }
        memory.set(ValueLayout.JAVA_LONG, CAPACITY_OFFSET, capacity);
        memory.set(ValueLayout.JAVA_LONG, CONSUMED_OFFSET, 0); // the receiver starts from 0 (follows)
        memory.set(ValueLayout.JAVA_LONG, READ_OFFSET, 0);
        INT.setRelease(memory, 0, MAGIC);
        return new BounceRing(memory, capacity);
    }

    /** Attaches to a ring a sender announced; the receiver's side. */
    public static BounceRing attach(MemorySegment memory) {
        if (memory.byteSize() < HEADER_LENGTH + 4096) throw new IllegalStateException("mapping too short for a bounce ring");
        if ((int) INT.getAcquire(memory, 0) != MAGIC) throw new IllegalStateException("no bounce ring here");
        long capacity = memory.get(ValueLayout.JAVA_LONG, CAPACITY_OFFSET);
        if (capacity != memory.byteSize() - HEADER_LENGTH || Long.bitCount(capacity) != 1) {
            throw new IllegalStateException("bounce ring says capacity " + capacity + " but " + memory.byteSize() + " bytes are mapped");
        }
        return new BounceRing(memory, capacity);
    }

    public MemorySegment memory() {
        return memory;
    }

    /**
     * The payload bytes, from offset {@link #HEADER_LENGTH} of {@link #memory()}: a zero-copy send
     * hands an encoder this and an offset in it. Only this connection's sender writes it and the
     * receiver does not parse it, so a write outside the payload's range changes only this
     * connection's own payloads, never the ring's header or anyone else's messages.
     */
    public MemorySegment ring() {
        return ring;
    }

    /** {@link #memory()} read-only, made once: the receiver delivers payloads from it, so that handlers cannot write the ring. */
    public MemorySegment delivered() {
        return delivered;
    }

    public long capacity() {
        return capacity;
    }

    /**
     * Reserves {@code length} contiguous bytes (at most the capacity).
     *
     * <p>A payload of more than half the ring may fit neither before the ring's end nor after it,
     * however empty the ring: the skipped end plus the payload exceed it. Once the receiver has
     * released everything, the sender may write anywhere, so it then takes the space from the
     * ring's start whatever the skip; the positions count that skip as still in use until the
     * receiver releases past the payload.
     *
     * @return the payload's offset in {@link #memory()}, or -1 when the receiver has not released
     *         enough yet; on success {@link #position()} is the position to announce with it
     * @throws ReceiveQueue.CorruptQueueException when the receiver's release lies past what was
     *         reserved, which no receiver writes on its own ({@link #follows})
     */
    public long reserve(long length) {
        long consumed = (long) LONG.getAcquire(memory, CONSUMED_OFFSET);
        if (consumed - produced > 0) {
            // Only the receiver releases, and only up to positions this sender announced: a record written into its queue in
            // this connection's name moved it. Reserving on would write over payloads the receiver has not read.
            throw new ReceiveQueue.CorruptQueueException("this connection's bounce ring was released up to position " + consumed
                    + ", past the " + produced + " this sender reserved: a record written into the queue in this connection's "
                    + "name, by a process that maps the queue, moved it");
        }
        // At least a line, also for an empty payload: every reservation moves the position, so that a close waits for the
        // receiver to read each large message (drained), not only those with bytes.
        long need = Math.max(ALIGNMENT, (length + ALIGNMENT - 1) & -ALIGNMENT);
        long index = produced & mask;
        long toEnd = capacity - index;
        long skip = need > toEnd ? toEnd : 0;
        boolean empty = produced == consumed;
        if (empty ? need > capacity : skip + need > capacity - (produced - consumed)) return -1;
        produced += skip;
        long offset = HEADER_LENGTH + (produced & mask);
        produced += need;
        return offset;
    }

    /** Undoes the last {@link #reserve} (its record could not be posted); {@code before} is {@link #position()} before it. */
    public void rollback(long before) {
        produced = before;
    }

    /** The sender's position after its last reservation. */
    public long position() {
        return produced;
    }

    /** The receiver's release of every payload up to {@code position}. */
    public void release(long position) {
        LONG.setRelease(memory, CONSUMED_OFFSET, position);
    }

    /** The receiver's word that it read every payload up to {@code position}, some of which it keeps unreleased. */
    public void markRead(long position) {
        LONG.setRelease(memory, READ_OFFSET, position);
    }

    /**
     * Sender side: whether the receiver read every payload reserved so far: released them
     * ({@link #drained()}), or said it read them while it keeps some ({@link #markRead}). Read after
     * the receiver's queue position, as {@code drained()}.
     */
    public boolean readAll() {
        return drained() || (long) LONG.getAcquire(memory, READ_OFFSET) - produced >= 0;
    }

    /**
     * Receiver side: reads the last byte of the payload of {@code length} bytes at {@code offset}
     * (the release word, for an empty one), so that a ring whose file was truncated faults here:
     * a truncation takes a file's pages from its end, so when that byte is there, the whole
     * payload is.
     *
     * @return the byte read, for the caller to keep: C2 drops a read whose value nobody uses, a
     *         volatile one too (it did, and the fault came out in the handler)
     */
    public byte touch(long offset, long length) {
        return (byte) BYTE.getVolatile(memory, length > 0 ? offset + length - 1 : CONSUMED_OFFSET);
    }

    /**
     * Sender side: whether the receiver has handled a large message of this ring, which it maps
     * the ring for (its first release or mark of what it read moves a word off 0). One whose
     * payloads were all empty is not told from a receiver that never mapped it.
     */
    public boolean receiverHandledAny() {
        return (long) LONG.getAcquire(memory, CONSUMED_OFFSET) != 0 || (long) LONG.getAcquire(memory, READ_OFFSET) != 0;
    }

    /** Sender side: whether the receiver released every payload reserved so far. */
    public boolean drained() {
        return (long) LONG.getAcquire(memory, CONSUMED_OFFSET) - produced >= 0; // past it: see reserve; nothing to wait for
    }

    /**
     * Whether a payload of {@code length} bytes at {@code offset}, announced with the sender's
     * position {@code end} after its reservation, can follow the receiver's last release at
     * {@code released}: the payload lies in the ring and fits between its offset and {@code end}
     * (a zero-copy send reserves more than it writes, so not exactly), and {@code end} is not
     * before {@code released} nor two rings past it (a reservation takes at most the room the
     * release left, or, in an empty ring, a skipped end and at most a ring). A receiver checks
     * this before it releases up to {@code end}, so that a record it did not get from this ring's
     * sender (written into its queue in that sender's name) cannot move the release backwards or
     * far ahead, which would make the sender find no room for ever, or write over payloads not yet
     * read.
     */
    public boolean follows(long released, long end, long offset, long length) {
        if (!contains(offset, length)) return false;
        long ahead = end - released;
        long reserved = ((end - (offset - HEADER_LENGTH) - 1) & mask) + 1; // from the payload's start up to end: 1..capacity
        return ahead >= 0 && ahead < 2 * capacity && length <= reserved;
    }

    /** Whether {@code [offset, offset + length)} lies in the payload area: a receiver's check of a peer's record. */
    public boolean contains(long offset, long length) {
        return offset >= HEADER_LENGTH && length >= 0 && length <= capacity && offset - HEADER_LENGTH <= capacity - length;
    }
}
