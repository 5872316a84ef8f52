package dev.conduit;

import java.lang.foreign.MemorySegment;

/**
 * Another process's region, mapped here through the IPC cache ({@link Conduit#importRegion(byte[])}).
 *
 * <p>Reads and writes are shared with the producer. A region a plugin could map only for reading
 * here (posix through a read-only mount: a container's {@code -v DIR:DIR:ro}) has a read-only
 * {@link #segment()} ({@link MemorySegment#isReadOnly()}), through which a write throws
 * {@link IllegalArgumentException}. {@link #close()} releases this use of the
 * cached mapping; the cache unmaps it later, only when no open region uses it. After the owning
 * {@code Conduit} closes, {@link #segment()} access throws {@link IllegalStateException}.
 *
 * <p>It says nothing of its exporter's life: over memfd and posix, once the exporter dies (also by
 * {@code kill -9}) the mapping stays, with what the exporter last wrote, until this process
 * closes it and the cache unmaps it. A consumer that must know connects an endpoint to a worker
 * of the exporter's process, which fails ("peer worker died") at its worker's next liveness
 * check (docs/chronicle.md, "A shared log and index").
 */
public interface ImportedRegion extends AutoCloseable {

    /** The region's memory, exactly as long as the handle says. */
    MemorySegment segment();

    /** Its length in bytes. */
    long size();

    /** The plugin that exported it. */
    String plugin();

    /**
     * Whether this use is still open: {@code false} once {@link #close()} was called or the owning
     * {@code Conduit} closed. For views that must refuse use after close.
     */
    boolean isOpen();

    /**
     * Releases it. Idempotent. A closed region can be handed back to
     * {@link Conduit#importRegion(byte[], ImportedRegion)} to be reopened on the next import.
     */
    @Override
    void close();
}
