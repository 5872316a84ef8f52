package dev.conduit.plugin.memfd;

import dev.conduit.spi.ChunkMapping;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A chunk imported by {@link MemfdImporter}: a {@code MAP_SHARED} mapping of the producer's
 * memfd, owned by a shared arena of its own. The descriptor itself was closed right after
 * mapping; the mapping keeps the memory alive, even after the producer frees the chunk.
 */
final class MemfdMapping implements ChunkMapping {

    private final Arena arena;
    private final MemorySegment segment;
    private final AtomicBoolean closed = new AtomicBoolean();

    MemfdMapping(Arena arena, MemorySegment segment) {
        this.arena = arena;
        this.segment = segment;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    /** Never: the importer maps only a memfd sealed against shrinking ({@code F_SEAL_SHRINK}). */
    @Override
    public boolean mayFault() {
        return false;
    }

    /** Unmaps, once; later calls do nothing. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "imported memfd chunk of " + segment.byteSize() + " bytes" + (closed.get() ? ", unmapped" : "");
    }
}
