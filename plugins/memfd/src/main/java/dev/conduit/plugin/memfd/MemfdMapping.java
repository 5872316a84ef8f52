package dev.conduit.plugin.memfd;

import dev.conduit.shm.ExporterLease;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ExporterState;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A chunk imported by {@link MemfdImporter}: a {@code MAP_SHARED} mapping of the producer's
 * memfd, owned by a shared arena of its own. The descriptor itself was closed right after
 * mapping; the mapping keeps the memory alive, even after the producer frees the chunk.
 *
 * <p>Thread-safe; {@link #close()} is idempotent.
 */
final class MemfdMapping implements ChunkMapping {

    private final Arena arena;
    private final MemorySegment segment;
    /** The lease of the provider whose fd server passed the memfd; null when its socket's name carries no owner. */
    private final ExporterLease exporter;
    /** Whether the memfd is huge pages ({@code memfd.hugepages}): see {@link #mayFault()}. */
    private final boolean hugePages;
    private boolean closed;

    MemfdMapping(Arena arena, MemorySegment segment, ExporterLease exporter, boolean hugePages) {
        this.arena = arena;
        this.segment = segment;
        this.exporter = exporter;
        this.hugePages = hugePages;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    /**
     * Only for a memfd of huge pages. The importer maps only a memfd sealed against shrinking
     * ({@code F_SEAL_SHRINK}), but no seal stops a holder from punching a hole into it
     * ({@code fallocate(FALLOC_FL_PUNCH_HOLE)}): normal pages then read zeros there, while a huge
     * page goes back to the kernel's pool, and an access there faults with {@code SIGBUS} once the
     * pool has no free page.
     */
    @Override
    public boolean mayFault() {
        return hugePages;
    }

    /**
     * Whether the provider that exported the chunk holds its lease ({@code conduit-memfd-<owner>.lease},
     * the owner its fd server's socket name carries), judged from this process's view of the shared
     * directory. The memfd itself tells nothing: this mapping keeps its memory whoever else is gone.
     */
    @Override
    public ExporterState exporterState() {
        return exporter == null ? ExporterState.UNKNOWN : exporter.state();
    }

    /**
     * Unmaps, once, and gives back the exporter's lease its looks kept open ({@link ExporterLease#close});
     * later calls do nothing. If another thread is inside a native call on the segment, the arena
     * refuses to close ({@link IllegalStateException}) and the mapping stays open, its lease kept,
     * so that a later close can succeed.
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        arena.close();
        closed = true;
        if (exporter != null) exporter.close();
    }

    @Override
    public synchronized String toString() {
        return "imported memfd chunk of " + segment.byteSize() + " bytes" + (closed ? ", unmapped" : "");
    }
}
