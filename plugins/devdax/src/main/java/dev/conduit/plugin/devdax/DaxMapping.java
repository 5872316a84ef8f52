package dev.conduit.plugin.devdax;

import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ExporterState;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * One mapped range of a device, owned by a shared arena of its own: closing it closes the arena,
 * which unmaps, after which any access through {@link #segment()} throws
 * {@link IllegalStateException} instead of reaching unmapped memory. The provider's chunks and the
 * importer's mappings are both this; the device's descriptor is not kept for it, since a mapping
 * stays valid without one.
 *
 * <p>Thread-safe; {@link #close()} is idempotent. If another thread is inside a native call on
 * the segment, the arena refuses to close ({@link IllegalStateException}) and the mapping stays
 * open, so that a later close can succeed.
 */
final class DaxMapping implements ChunkMapping {

    private final Path device;
    private final long offset;
    private final Arena arena;
    private final MemorySegment segment;
    private final boolean mayFault;
    /** How an importer looks at its exporter ({@link DevdaxImporter#exporterState}); null for a provider's own chunk. */
    private final Supplier<ExporterState> exporter;
    private volatile boolean exporterDead;
    private boolean closed;

    /**
     * @param segment  the mapping, read-only ({@link MemorySegment#asReadOnly()}) when it was mapped
     *                 without {@code PROT_WRITE}, so that a write throws instead of faulting
     * @param mayFault whether an access may fault ({@link #mayFault()}): true for a regular file
     *                 named as the device, which its writers may truncate and which may be sparse
     * @param exporter what {@link #exporterState()} asks, or null: {@code UNKNOWN}
     */
    DaxMapping(Path device, long offset, Arena arena, MemorySegment segment, boolean mayFault, Supplier<ExporterState> exporter) {
        this.device = device;
        this.offset = offset;
        this.arena = arena;
        this.segment = segment;
        this.mayFault = mayFault;
        this.exporter = exporter;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    /** Not on a DAX device, whose size is fixed and which has no holes; on a regular file named as one, yes. */
    @Override
    public boolean mayFault() {
        return mayFault;
    }

    /**
     * {@code DEAD} once the device's header shows that another owner started on it since the
     * export, for good; {@code UNKNOWN} until then, for nothing on the device tells a live owner
     * from a dead one that nobody succeeded ({@link DevdaxImporter#exporterState}). Answers after
     * {@link #close()} too: a look reads the device, not this mapping.
     */
    @Override
    public ExporterState exporterState() {
        if (exporterDead) return ExporterState.DEAD;
        if (exporter == null) return ExporterState.UNKNOWN;
        ExporterState state = exporter.get();
        if (state == ExporterState.DEAD) exporterDead = true;
        return state;
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        arena.close();
        closed = true;
    }

    @Override
    public String toString() {
        return "mapping of " + device + " [" + offset + ", " + (offset + segment.byteSize()) + ")";
    }
}
