package dev.conduit.internal.memory;

import java.util.Arrays;

/**
 * The free slots of one power-of-two size, in chunks this class took whole from the pool. A slot
 * is {@code chunkIndex << 32 | slotIndex}; its offset is {@code slotIndex * slotSize}, so a slot is
 * aligned to its size (up to the chunk's page alignment).
 */
final class SizeClass {

    final long slotSize;
    private final RuntimePool pool;
    private PooledChunk[] chunks = new PooledChunk[4];
    private int chunkCount;
    private long[] free = new long[64];
    private int top;

    SizeClass(RuntimePool pool, long slotSize) {
        this.pool = pool;
        this.slotSize = slotSize;
    }

    synchronized long take() {
        if (top == 0) refill();
        return free[--top];
    }

    synchronized void give(long slot) {
        free[top++] = slot;
    }

    synchronized PooledChunk chunk(long slot) {
        return chunks[(int) (slot >>> 32)];
    }

    long offset(long slot) {
        return (slot & 0xFFFF_FFFFL) * slotSize;
    }

    private void refill() {
        PooledChunk c = pool.newSharedChunk();
        if (chunkCount == chunks.length) chunks = Arrays.copyOf(chunks, chunkCount * 2);
        int index = chunkCount++;
        chunks[index] = c;
        int slots = (int) (pool.chunkSize() / slotSize);
        if (free.length < top + slots) free = Arrays.copyOf(free, Math.max(free.length * 2, top + slots));
        // Pushed in reverse so that low offsets are handed out first.
        for (int i = slots - 1; i >= 0; i--) free[top++] = (long) index << 32 | i;
    }
}
