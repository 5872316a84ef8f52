package dev.conduit.internal.memory;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The slots of one power-of-two size, in chunks this class takes whole from the pool. A slot is
 * named by its index in its chunk, 32 bits read unsigned; its offset is {@code index * slotSize},
 * so a slot is aligned to its size (up to the chunk's page alignment).
 *
 * <p><b>Freed slots</b> are kept as the regions that held them: the free list is a lock-free
 * last-in-first-out stack (Treiber's) of closed {@link PoolRegion}s, linked through
 * {@link PoolRegion#next}. An allocation pops the region freed last and makes a new region of its
 * slot and chunk, with the same segment when the size asked is the one it had (a size-class
 * segment stays usable after its region's close anyway, until the pool closes: {@link dev.conduit.Region}).
 * So allocate + free of a freed slot takes no lock and allocates one object, the new region. The
 * protocol:
 * <ul>
 *   <li>Only a region's {@link PoolRegion#close() close} pushes it, after winning the CAS of its
 *       freed flag, so a region is pushed at most once in its life; a popped one is never pushed
 *       again (the allocation made a new region). A region seen at the head therefore never comes
 *       back to it once popped, and a pop whose CAS expects a region another thread popped
 *       meanwhile fails: no tag against ABA is needed, as the garbage collector keeps a region's
 *       identity while any thread holds it.
 *   <li>A region's {@code next} is written before the CAS that pushes it and read after a
 *       volatile read of the head that returned it, which orders the two; it does not change
 *       while the region is on the list. Its popper clears it, so that a closed region the
 *       application still holds keeps none of the list alive; another popper that read the head
 *       before may then read that null, and its CAS fails all the same.
 *   <li>A push after the pool closed is skipped ({@link RuntimePool#free}), and one that raced
 *       the close is harmless: a closed pool allocates nothing.
 * </ul>
 * The list keeps 80 bytes of heap per freed slot, the region and its segment, which the
 * application held before it freed them: it grows with the slots freed, not with the chunk's size,
 * and a free never waits for a copy of the slots freed before it.
 *
 * <p><b>Slots never handed out</b> come from the newest chunk, in order, low offsets first, under
 * this class's lock, only when the free list is empty. (Listing every slot of a new chunk at once,
 * as before, took 8 bytes of heap per 64-byte slot: a {@code long[]} of 512 MiB for one 64-byte
 * region out of a 4 GiB chunk, and past 2^31 slots a count that overflowed; both threw after the
 * chunk was taken, which the class kept, so every further try took another.)
 */
final class SizeClass {

    private static final VarHandle FREE_LIST;

    static {
        try {
            FREE_LIST = MethodHandles.lookup().findVarHandle(SizeClass.class, "freeList", PoolRegion.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final long slotSize;
    private final RuntimePool pool;
    /** Slots per chunk: at most 2^32, as a slot's index has 32 bits (RuntimePool bounds the chunk size so). */
    private final long slotsPerChunk;
    /** The region freed last, the head of the free list; null when it is empty. Changed through {@link #FREE_LIST}. */
    private volatile PoolRegion freeList;
    /** The chunk whose slots are handed out in order; guarded by this. */
    private PooledChunk newest;
    /** The next slot of {@link #newest} never handed out; {@link #slotsPerChunk} when there is none. Guarded by this. */
    private long unused;

    SizeClass(RuntimePool pool, long slotSize) {
        this.pool = pool;
        this.slotSize = slotSize;
        this.slotsPerChunk = pool.chunkSize() / slotSize;
        this.unused = slotsPerChunk;
    }

    /** A region of {@code size} bytes, at most {@link #slotSize}: the slot freed last, else one never handed out. */
    PoolRegion allocate(long size) {
        PoolRegion freed = popFreed();
        if (freed == null) return allocateUnused(size);
        MemorySegment segment = freed.segment();
        if (segment.byteSize() != size) segment = freed.chunk.segment.asSlice(offset(freed.slot), size);
        return new PoolRegion(pool, this, freed.slot, freed.chunk, segment);
    }

    /** Lists the slot of {@code region}, which its close just freed (and which is never listed twice: see the protocol). */
    void free(PoolRegion region) {
        PoolRegion head;
        do {
            head = freeList;
            region.next = head;
        } while (!FREE_LIST.compareAndSet(this, head, region));
    }

    long offset(int slot) {
        return Integer.toUnsignedLong(slot) * slotSize;
    }

    private PoolRegion popFreed() {
        PoolRegion head;
        PoolRegion next;
        do {
            head = freeList;
            if (head == null) return null;
            next = head.next;
        } while (!FREE_LIST.compareAndSet(this, head, next));
        head.next = null;
        return head;
    }

    private synchronized PoolRegion allocateUnused(long size) {
        if (unused == slotsPerChunk) {
            newest = pool.newSharedChunk();
            unused = 0;
        }
        int slot = (int) unused++;
        return new PoolRegion(pool, this, slot, newest, newest.segment.asSlice(offset(slot), size));
    }
}
