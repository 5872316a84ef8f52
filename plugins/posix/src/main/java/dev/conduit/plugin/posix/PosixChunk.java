package dev.conduit.plugin.posix;

import dev.conduit.spi.Chunk;

import java.lang.foreign.MemorySegment;

/**
 * A chunk of a {@link PosixMemoryProvider}: file {@code fileName} in the provider's chunk
 * directory, mapped here by {@code mapping}. The name is what its export carries.
 *
 * @param fileName the file's name in the chunk directory, {@code conduit-posix-<owner>-<random>.chunk}
 * @param mapping  this process's mapping of the whole file; closed when the chunk is freed
 */
record PosixChunk(String fileName, FileMapping mapping) implements Chunk {

    @Override
    public MemorySegment segment() {
        return mapping.segment();
    }

    @Override
    public String toString() {
        return "posix chunk " + mapping.path() + " (" + mapping.segment().byteSize() + " bytes)";
    }
}
