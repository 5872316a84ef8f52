package dev.conduit.plugin.memfd;

import dev.conduit.linux.FileDescriptor;
import dev.conduit.spi.Chunk;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One chunk of a {@link MemfdProvider}: a sealed memfd, kept open so the fd server can pass it
 * on, and its mapping in this process, owned by an arena of its own so that freeing one chunk
 * unmaps exactly that chunk.
 */
final class MemfdChunk implements Chunk {

    /** The provider that allocated it: only its chunks are freed without a word once it closed. */
    private final MemfdProvider provider;
    private final FileDescriptor memfd;
    private final Arena arena;
    private final MemorySegment segment;
    /** The export payload once exported; guarded by the provider. */
    private byte[] payload;

    MemfdChunk(MemfdProvider provider, FileDescriptor memfd, Arena arena, MemorySegment segment) {
        this.provider = provider;
        this.memfd = memfd;
        this.arena = arena;
        this.segment = segment;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    MemfdProvider provider() {
        return provider;
    }

    FileDescriptor memfd() {
        return memfd;
    }

    Arena arena() {
        return arena;
    }

    long length() {
        return segment.byteSize();
    }

    byte[] payload() {
        return payload;
    }

    void payload(byte[] payload) {
        this.payload = payload;
    }

    @Override
    public String toString() {
        return "memfd chunk of " + segment.byteSize() + " bytes (" + memfd + ")";
    }
}
