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

    /** Unmaps. Afterwards {@link #segment()} access throws instead of reaching unmapped memory. */
    @Override
    void close();
}
