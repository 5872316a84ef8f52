package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * A chunk of another process's memory, mapped here by an {@link IpcImporter}.
 *
 * <p><b>Implemented by</b> plugins; <b>owned by</b> the runtime's IPC cache, which hands out
 * slices of {@link #segment()} to applications and calls {@link #close()} only when no open
 * imported region uses it any more (when it evicts the entry, or, for one it evicted while in use,
 * when the last region on it closes) or when the {@code Conduit} closes.
 */
public interface ChunkMapping extends AutoCloseable {

    /** The mapped chunk, exactly as long as the handle's chunk length. */
    MemorySegment segment();

    /**
     * Whether an access through this mapping may fault ({@code SIGBUS}, which the JDK reports as an
     * {@code InternalError}: {@link MappedMemoryFault}): another process may shrink the chunk under
     * it, or a page of a sparse chunk may be one its file system cannot supply on first touch. A
     * transport then ends each RMA operation on the region with a native call that makes such a
     * fault come out inside the operation, about 10 ns. Asked once, when the runtime maps the chunk;
     * the answer holds for the mapping's life. True unless the plugin rules both out: memfd's
     * chunks are sealed against shrinking and backed by memory, not a file system's space; a DAX
     * device has a fixed size and no holes (a regular file named as one has neither guarantee).
     * Since SPI 1.1.
     */
    default boolean mayFault() {
        return true;
    }

    /**
     * Whether the process that exported this chunk still holds it out, as this process can judge:
     * {@link ExporterState#ALIVE}, {@link ExporterState#DEAD}, or {@link ExporterState#UNKNOWN}
     * (the default: a plugin that cannot tell, or this process may not look). A plugin that answers
     * judges something the exporter holds for as long as it lives and the kernel drops when it
     * dies, never a pid (which another process may have taken since, or which belongs to another
     * PID namespace): memfd and posix take the exporter's lease in the shared directory, as this
     * process sees the directory, which needs only to read it. Once it said {@code DEAD}, it never
     * says {@code ALIVE} again.
     *
     * <p>Each call costs a few system calls (memfd and posix: open the directory and the lease,
     * {@code flock}, close both); for a consumer's occasional check (a reader that finds nothing
     * new, a watchdog), not for a loop per access. Thread-safe; it may be called after
     * {@link #close()}, and answers as before. Since SPI 1.1.
     *
     * @throws ConduitException when the plugin could look and the look failed (naming the errno and what to do)
     */
    default ExporterState exporterState() {
        return ExporterState.UNKNOWN;
    }

    /** Unmaps. Afterwards {@link #segment()} access throws instead of reaching unmapped memory. */
    @Override
    void close();
}
