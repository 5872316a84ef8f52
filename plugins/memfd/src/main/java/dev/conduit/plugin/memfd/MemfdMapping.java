package dev.conduit.plugin.memfd;

import dev.conduit.shm.ExporterLease;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ExporterState;

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
    /** The lease of the provider whose fd server passed the memfd; null when its socket's name carries no owner. */
    private final ExporterLease exporter;
    /** Whether the memfd is huge pages ({@code memfd.hugepages}): see {@link #mayFault()}. */
    private final boolean hugePages;
    private final AtomicBoolean closed = new AtomicBoolean();

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

    /** Unmaps, once, and gives back the exporter's lease its looks kept open ({@link ExporterLease#close}); later calls do nothing. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                arena.close();
            } finally {
                if (exporter != null) exporter.close();
            }
        }
    }

    @Override
    public String toString() {
        return "imported memfd chunk of " + segment.byteSize() + " bytes" + (closed.get() ? ", unmapped" : "");
    }
}
