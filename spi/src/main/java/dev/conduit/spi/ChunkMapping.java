package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * A chunk of another process's memory, mapped here by an {@link IpcImporter}.
 *
 * <p><b>Implemented by</b> plugins; <b>owned by</b> the runtime's IPC cache, which hands out
 * slices of {@link #segment()} to applications and calls {@link #close()} only when it evicts an
 * entry that no open imported region uses.
 */
public interface ChunkMapping extends AutoCloseable {

    /** The mapped chunk, exactly as long as the handle's chunk length. */
    MemorySegment segment();

    /**
     * Whether another process may shrink the chunk under this mapping, so that an access to a lost
     * page faults ({@code SIGBUS}, which the JDK reports as an {@code InternalError}:
     * {@link MappedMemoryFault}). A transport then ends each RMA operation on the region with a
     * native call that makes such a fault come out inside the operation, about 10 ns. True unless
     * the plugin rules it out: memfd's chunks are sealed against shrinking, a device does not
     * shrink. Since SPI 1.1.
     */
    default boolean mayShrink() {
        return true;
    }

    /** Unmaps. Afterwards {@link #segment()} access throws instead of reaching unmapped memory. */
    @Override
    void close();
}
