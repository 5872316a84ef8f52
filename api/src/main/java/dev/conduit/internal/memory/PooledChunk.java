package dev.conduit.internal.memory;

import dev.conduit.spi.Chunk;

import java.lang.foreign.MemorySegment;

/** A provider chunk owned by a pool, with its export once it has one (one export per chunk). */
final class PooledChunk {

    final Chunk chunk;
    final MemorySegment segment;
    /** Set under the pool's provider lock, and cleared there by a free the provider refused (which revokes it); read without it. */
    volatile ChunkExport export;
    /**
     * The provider's last refusal to free the chunk (busy), under the pool's provider lock: a
     * provider may refuse to export such a chunk again (devdax), which is that refusal's outcome,
     * not a fault of the plugin's.
     */
    volatile IllegalStateException freeRefused;

    /** {@code segment} is the chunk's, asked once as the pool took the chunk ({@code RuntimePool.newChunk}). */
    PooledChunk(Chunk chunk, MemorySegment segment) {
        this.chunk = chunk;
        this.segment = segment;
    }

    /** The export of a chunk: its id, unique for the pool's origin and never reused, and the plugin's payload. */
    record ChunkExport(long exportId, byte[] payload) {
    }
}
