package dev.conduit.plugin.posix;

import dev.conduit.spi.Chunk;

import java.lang.foreign.MemorySegment;

/**
 * A chunk of a {@link PosixMemoryProvider}: file {@code fileName} in the provider's chunk
 * directory, mapped here by {@code mapping}. The name, device and inode are what its export carries.
 *
 * @param fileName the file's name in the chunk directory, {@code conduit-posix-<owner>-<random>.chunk}
 * @param device   the file's {@code st_dev}
 * @param inode    the file's {@code st_ino}: with {@code device}, which file an importer must find under the name
 * @param mapping  this process's mapping of the whole file; closed when the chunk is freed
 */
record PosixChunk(String fileName, long device, long inode, FileMapping mapping) implements Chunk {

    @Override
    public MemorySegment segment() {
        return mapping.segment();
    }

    @Override
    public String toString() {
        return "posix chunk " + mapping.path() + " (" + mapping.segment().byteSize() + " bytes)";
    }
}
