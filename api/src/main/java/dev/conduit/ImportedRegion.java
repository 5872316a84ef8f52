package dev.conduit;

import dev.conduit.spi.ExporterState;

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
 * <p>Its exporter's death does not unmap it: over memfd and posix the mapping stays, with what
 * the exporter last wrote, until this process closes it and the cache unmaps it. A consumer that
 * must know asks {@link #exporterState()} from time to time (docs/chronicle.md, "A shared log and
 * index"), which needs no worker and works wherever the import did, a read-only mount included.
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
     * Whether the process that exported this region still holds it out, judged now (the IPC cache
     * asks the plugin's mapping of the chunk, {@link dev.conduit.spi.ChunkMapping#exporterState()}):
     * <ul>
     * <li>{@link ExporterState#ALIVE}: the exporter's process holds its lease on the pool the chunk
     *     came from (memfd, posix). It may still have freed the chunk: this mapping then keeps
     *     memory no one else will write. A new import of the handle fails ("export gone") only in a
     *     process whose IPC cache no longer holds the chunk: a hit asks the producer nothing
     *     ({@link Conduit#importRegion(byte[])}), and maps the same freed memory again.</li>
     * <li>{@link ExporterState#DEAD}: it no longer holds that lease: its process died (also by
     *     {@code kill -9}), or it closed the pool, which frees every chunk. The mapping still holds
     *     what the exporter last wrote, readable (and writable, if it was) until closed; nothing more
     *     comes. Once {@code DEAD}, never {@code ALIVE} again. devdax says so once another owner
     *     started on the device since the export, which happens only after the exporter let go of
     *     it (and from which on the range may change hands).</li>
     * <li>{@link ExporterState#UNKNOWN}: the plugin cannot tell (devdax until then, alive or not: its
     *     allocation table names no owner; a plugin without the operation), or this process may not look (an exporter of another user, trusted through
     *     {@code memfd.trusted.uids} or {@code posix.trusted.uids}, whose lease is its own
     *     {@code 0600}).</li>
     * </ul>
     * Judged through the lease in the shared directory as this process sees it, never a pid, and
     * opened for reading only. Each call costs a few system calls (open the directory and the lease,
     * {@code flock}, close) and, over memfd and posix, some 1.3 KB of heap (docs/performance.md,
     * "Allocation of the calls around a send"): for an occasional check (a reader that found
     * nothing new), not for every access.
     *
     * @throws IllegalStateException when it is closed ({@link #isOpen()} false)
     * @throws dev.conduit.spi.ConduitException when the lease cannot be looked at (naming the path, errno and remedy), or
     *                                          the plugin's look threw anything else or gave no answer (named as its fault)
     */
    ExporterState exporterState();

    /**
     * Releases it. Idempotent. {@link #segment()} still returns the mapping afterwards, and
     * accesses through it still read and write it while the IPC cache keeps it (memory the producer
     * may have handed out again): up to twice {@code ipc.cache.idle} after the last region on its
     * chunk closed (the sweep unmaps a chunk one to two intervals after its last use, or sooner when
     * {@code ipc.cache.bytes} or {@code ipc.cache.entries} evicts it), then they
     * throw {@link IllegalStateException}; check {@link #isOpen()} to refuse use after close. A closed region can be handed back to
     * {@link Conduit#importRegion(byte[], ImportedRegion)} to be reopened on the next import.
     */
    @Override
    void close();
}
