package dev.conduit.internal.memory;

import java.util.Arrays;

/**
 * The free slots of one power-of-two size, in chunks this class took whole from the pool. A slot
 * is {@code chunkIndex << 32 | slotIndex}; its offset is {@code slotIndex * slotSize}, so a slot is
 * aligned to its size (up to the chunk's page alignment).
 *
 * <p>The newest chunk hands out its slots in order, low offsets first, and only freed slots are
 * listed: the heap this takes grows with the slots freed, not with the chunk's size. (Listing every
 * slot of a new chunk at once, as before, took 8 bytes of heap per 64-byte slot: a {@code long[]}
 * of 512 MiB for one 64-byte region out of a 4 GiB chunk, and past 2^31 slots a count that
 * overflowed; both threw after the chunk was taken, which the class kept, so every further try
 * took another.)
 *
 * <p>The freed slots are kept in pages of {@value #PAGE} rather than one array: a freed slot never
 * waits for a copy of every slot freed before it (a growing array copied gigabytes once billions of
 * regions had been freed), and no count of them can overflow an array's {@code int} length.
 */
final class SizeClass {

    final long slotSize;
    private final RuntimePool pool;
    /** Slots per chunk: at most 2^32, as a slot's index has 32 bits (RuntimePool bounds the chunk size so). */
    private final long slotsPerChunk;
    private PooledChunk[] chunks = new PooledChunk[4];
    private int chunkCount;
    /** The next slot of the newest chunk never handed out; {@link #slotsPerChunk} when there is none. */
    private long unused;
    private static final int PAGE_SHIFT = 12;
    private static final int PAGE = 1 << PAGE_SHIFT;
    /** The freed slots, newest last: slot {@code i} is {@code freePages[i >>> PAGE_SHIFT][i & (PAGE - 1)]}. */
    private long[][] freePages = new long[1][];
    /** How many freed slots are listed; the pages below {@code ceil(freed / PAGE)} exist, those above are dropped. */
    private long freed;

    SizeClass(RuntimePool pool, long slotSize) {
        this.pool = pool;
        this.slotSize = slotSize;
        this.slotsPerChunk = pool.chunkSize() / slotSize;
        this.unused = slotsPerChunk;
    }

    synchronized long take() {
        if (freed > 0) {
            long i = --freed;
            long slot = freePages[(int) (i >>> PAGE_SHIFT)][(int) i & (PAGE - 1)];
            // A page emptied is given back, but only once the one below it empties too, so that a slot freed and taken
            // again and again at a page's edge does not allocate a page each time.
            int keep = (int) ((freed + PAGE - 1) >>> PAGE_SHIFT) + 1;
            if (keep < freePages.length && freePages[keep] != null) freePages[keep] = null;
            return slot;
        }
        if (unused == slotsPerChunk) refill();
        return (long) (chunkCount - 1) << 32 | unused++;
    }

    synchronized void give(long slot) {
        int page = (int) (freed >>> PAGE_SHIFT);
        if (page == freePages.length) freePages = Arrays.copyOf(freePages, page * 2);
        if (freePages[page] == null) freePages[page] = new long[PAGE];
        freePages[page][(int) freed & (PAGE - 1)] = slot;
        freed++;
    }

    synchronized PooledChunk chunk(long slot) {
        return chunks[(int) (slot >>> 32)];
    }

    long offset(long slot) {
        return (slot & 0xFFFF_FFFFL) * slotSize;
    }

    private void refill() {
        // Room first: nothing may fail once the chunk is taken.
        if (chunkCount == chunks.length) chunks = Arrays.copyOf(chunks, chunkCount * 2);
        chunks[chunkCount] = pool.newSharedChunk();
        chunkCount++;
        unused = 0;
    }
}
