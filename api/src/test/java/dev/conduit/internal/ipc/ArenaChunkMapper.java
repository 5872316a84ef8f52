package dev.conduit.internal.ipc;

import dev.conduit.spi.ChunkMapping;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/** An importer for tests of the cache alone: each chunk mapped is memory of an arena of its own, counted as it is mapped and unmapped. */
final class ArenaChunkMapper implements Function<IpcHandle, ChunkMapping> {

    final AtomicInteger maps = new AtomicInteger();
    final AtomicInteger unmaps = new AtomicInteger();

    @Override
    public ChunkMapping apply(IpcHandle handle) {
        maps.incrementAndGet();
        Arena arena = Arena.ofShared();
        MemorySegment segment = arena.allocate(handle.chunkLength(), 4096);
        return new ChunkMapping() {
            @Override
            public MemorySegment segment() {
                return segment;
            }

            @Override
            public void close() {
                unmaps.incrementAndGet();
                arena.close();
            }
        };
    }
}
