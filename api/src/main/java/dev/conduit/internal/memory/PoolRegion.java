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
        byte[] handle = pool.exportHandle(chunk, sizeClass == null, sizeClass == null ? 0 : sizeClass.offset(slot), segment.byteSize());
        // A close that overtook the export freed a size class's slot (the next allocation of its size takes it) or the pool's
        // chunks, which the chunk's export made before does not show: a handle made before that close is still one of live
        // memory; one made after is not handed out. (A chunk of its own is judged under the pool's lock: RuntimePool#exportHandle.)
        if ((int) FREED.getVolatile(this) != 0) throw closed();
        pool.ensureOpenToExport();
        return handle;
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

    /**
     * A region of a chunk of its own is marked closed only once its chunk is no longer the pool's,
     * which {@link RuntimePool#freeDedicated} decides under the pool's lock: a close overlapping
     * another waits there for it, and tries the free itself when the provider refused the other's. Until 2026-12-07 the first close marked the region closed before the free and
     * open again at the refusal, and a second close meanwhile returned as if the chunk were freed.
     */
    @Override
    public void close() {
        if (sizeClass != null) {
            if (FREED.compareAndSet(this, 0, 1)) pool.free(sizeClass, this); // no provider call: a class's chunks go back with the pool
            return;
        }
        if ((int) FREED.getVolatile(this) != 0) return;
        try {
            pool.freeDedicated(chunk);
        } catch (IllegalStateException inUse) {
            throw inUse; // refused while the chunk is in use, and the pool kept it: open, the next close tries again
        } catch (RuntimeException | Error e) {
            FREED.setVolatile(this, 1); // the chunk is no longer the provider's to free (RuntimePool#freeDedicated)
            throw e;
        }
        FREED.setVolatile(this, 1);
    }
}
