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
    /** Null for a region with a chunk of its own. */
    private final SizeClass sizeClass;
    /**
     * The index of its slot in the chunk, read unsigned ({@link SizeClass}): 32 bits keep a region
     * at 40 bytes, all that an allocation of a freed slot allocates. 0 for a chunk of its own.
     */
    final int slot;
    final PooledChunk chunk;
    private final MemorySegment segment;
    /** The region freed before this one, while this one is on its size class's free list ({@link SizeClass}'s protocol). */
    PoolRegion next;
    @SuppressWarnings("unused") // through FREED
    private volatile int freed;

    /** A region of a size class's slot, or ({@code sizeClass} null, {@code slot} 0) of a chunk of its own. */
    PoolRegion(RuntimePool pool, SizeClass sizeClass, int slot, PooledChunk chunk, MemorySegment segment) {
        this.pool = pool;
        this.sizeClass = sizeClass;
        this.slot = slot;
        this.chunk = chunk;
        this.segment = segment;
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
        return exportHandle(() -> { });
    }

    /**
     * {@link #exportHandle()}, running {@code afterCheck} between its look at the region's state
     * and the export: tests close the region there.
     */
    byte[] exportHandle(Runnable afterCheck) {
        if ((int) FREED.getVolatile(this) != 0) throw closed();
        // The pool's close freed the chunk; an export made before would still be handed out, naming memory gone.
        pool.ensureOpenToExport();
        afterCheck.run();
        return pool.exportHandle(chunk, sizeClass == null, sizeClass == null ? 0 : sizeClass.offset(slot), segment.byteSize());
    }

    static IllegalStateException closed() {
        return new IllegalStateException("region is closed: export a region before freeing it");
    }

    @Override
    public boolean isOpen() {
        // Closing the pool frees every region in it: a view that checks this must not take such a region for live.
        return (int) FREED.getVolatile(this) == 0 && pool.isOpen();
    }

    /** Says the plugin and the length, and whether it is freed, for logs; never throws. */
    @Override
    public String toString() {
        return "Region[" + pool.plugin() + ", " + segment.byteSize() + " B" + (isOpen() ? "" : ", closed") + "]";
    }

    @Override
    public void close() {
        if (!FREED.compareAndSet(this, 0, 1)) return;
        if (sizeClass != null) {
            pool.free(sizeClass, this); // takes no provider call: a class's chunks go back only with the pool
            return;
        }
        try {
            pool.freeDedicated(chunk);
        } catch (IllegalStateException inUse) {
            // The provider refused the free while the chunk is in use, and the pool kept it: open again, the next close tries again.
            FREED.setVolatile(this, 0);
            throw inUse;
        }
    }
}
