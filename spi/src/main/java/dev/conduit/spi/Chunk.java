package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * One chunk of provider memory, mapped in this process.
 *
 * <p><b>Implemented by</b> plugins (holding whatever identifies the chunk: a file descriptor, a
 * file name, a device offset); <b>used by</b> the runtime, which only reads {@link #segment()} and
 * hands the chunk back to {@link MemoryProvider#export(Chunk)} and {@link MemoryProvider#free(Chunk)}.
 */
public interface Chunk {

    /**
     * The chunk's memory, page-aligned, valid until {@link MemoryProvider#free(Chunk)}. Accessing it
     * after that throws {@link IllegalStateException}; it never reaches unmapped memory.
     */
    MemorySegment segment();
}
