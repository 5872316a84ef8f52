package dev.conduit.plugin.devdax;

import dev.conduit.spi.ChunkMapping;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

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
    private boolean closed;

    /**
     * @param segment  the mapping, read-only ({@link MemorySegment#asReadOnly()}) when it was mapped
     *                 without {@code PROT_WRITE}, so that a write throws instead of faulting
     * @param mayFault whether an access may fault ({@link #mayFault()}): true for a regular file
     *                 named as the device, which its writers may truncate and which may be sparse
     */
    DaxMapping(Path device, long offset, Arena arena, MemorySegment segment, boolean mayFault) {
        this.device = device;
        this.offset = offset;
        this.arena = arena;
        this.segment = segment;
        this.mayFault = mayFault;
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
