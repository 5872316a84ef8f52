package dev.conduit.internal.memory;

import dev.conduit.Region;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** A region of a pool: a slot of a size class, or a chunk of its own ({@code sizeClass == null}). */
final class PoolRegion implements Region {

    private static final VarHandle FREED;

    static {
        try {
            FREED = MethodHandles.lookup().findVarHandle(PoolRegion.class, "freed", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RuntimePool pool;
    private final SizeClass sizeClass;
    private final long slot;
    private final PooledChunk chunk;
    private final long offset;
    private final MemorySegment segment;
    @SuppressWarnings("unused") // through FREED
    private volatile int freed;

    PoolRegion(RuntimePool pool, SizeClass sizeClass, long slot, PooledChunk chunk, long offset, long size) {
        this.pool = pool;
        this.sizeClass = sizeClass;
        this.slot = slot;
        this.chunk = chunk;
        this.offset = offset;
        this.segment = chunk.segment.asSlice(offset, size);
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long size() {
        return segment.byteSize();
    }

    @Override
    public byte[] exportHandle() {
        if ((int) FREED.getVolatile(this) != 0) {
            throw new IllegalStateException("region is closed: export a region before freeing it");
        }
        // The pool's close freed the chunk; an export made before would still be handed out, naming memory gone.
        pool.ensureOpen();
        return pool.exportHandle(chunk, offset, segment.byteSize());
    }

    @Override
    public boolean isOpen() {
        // Closing the pool frees every region in it: a view that checks this must not take such a region for live.
        return (int) FREED.getVolatile(this) == 0 && pool.isOpen();
    }

    @Override
    public void close() {
        if (!FREED.compareAndSet(this, 0, 1)) return;
        if (sizeClass != null) {
            pool.free(sizeClass, slot);
        } else {
            pool.freeDedicated(chunk);
        }
    }
}
