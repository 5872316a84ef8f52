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
    private long[] free = new long[64];
    private int top;

    SizeClass(RuntimePool pool, long slotSize) {
        this.pool = pool;
        this.slotSize = slotSize;
        this.slotsPerChunk = pool.chunkSize() / slotSize;
        this.unused = slotsPerChunk;
    }

    synchronized long take() {
        if (top > 0) return free[--top];
        if (unused == slotsPerChunk) refill();
        return (long) (chunkCount - 1) << 32 | unused++;
    }

    synchronized void give(long slot) {
        if (top == free.length) free = Arrays.copyOf(free, top * 2);
        free[top++] = slot;
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
