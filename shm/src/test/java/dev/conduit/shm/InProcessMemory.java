package dev.conduit.shm;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Chunks of this JVM's memory, exported as a number that any transport's importer here maps
 * back to the same memory: what two processes mapping one file share. As with a file, a chunk
 * freed by its owner stays readable through the mappings of it still open, and goes with the last.
 */
final class InProcessMemory implements MemoryProvider, IpcImporter {
    private static final AtomicLong KEYS = new AtomicLong();
    private static final Map<Long, InProcessChunk> EXPORTED = new ConcurrentHashMap<>();

    private static final class InProcessChunk implements Chunk {
        final long key;
        final Arena arena;
        final MemorySegment segment;
        /** The owner, until it frees the chunk, and each mapping open. */
        private int users = 1;

        InProcessChunk(long key, Arena arena, MemorySegment segment) {
            this.key = key;
            this.arena = arena;
            this.segment = segment;
        }

        @Override
        public MemorySegment segment() {
            return segment;
        }

        synchronized boolean retain() {
            if (users == 0) return false;
            users++;
            return true;
        }

        synchronized void release() {
            if (--users == 0) arena.close();
        }
    }

    @Override
    public long pageSize() {
        return 4096;
    }

    @Override
    public Chunk allocate(long size) {
        Arena arena = Arena.ofShared();
        InProcessChunk chunk = new InProcessChunk(KEYS.incrementAndGet(), arena, arena.allocate(size, 4096));
        EXPORTED.put(chunk.key, chunk);
        return chunk;
    }

    @Override
    public byte[] export(Chunk chunk) {
        return new PayloadWriter().u64(((InProcessChunk) chunk).key).toByteArray();
    }

    @Override
    public void free(Chunk chunk) {
        InProcessChunk c = (InProcessChunk) chunk;
        EXPORTED.remove(c.key);
        c.release();
    }

    @Override
    public void close() {
    }

    @Override
    public ChunkMapping map(PayloadReader payload, long chunkLength) {
        long key = payload.u64("key");
        payload.end("key");
        InProcessChunk chunk = EXPORTED.get(key);
        if (chunk == null || chunk.segment.byteSize() != chunkLength || !chunk.retain()) {
            throw new ConduitException("no chunk " + key + " of " + chunkLength + " bytes");
        }
        AtomicBoolean closed = new AtomicBoolean();
        return new ChunkMapping() {
            @Override
            public MemorySegment segment() {
                return chunk.segment;
            }

            @Override
            public boolean mayFault() {
                return false;
            }

            @Override
            public void close() {
                if (closed.compareAndSet(false, true)) chunk.release();
            }
        };
    }
}
