package dev.conduit;

import java.lang.foreign.MemorySegment;

/**
 * One allocation from a {@link Pool}: memory other processes can map through its IPC handle.
 *
 * <p>{@link #close()} frees the region: its memory becomes reusable by the pool, so the segment
 * must not be used after it, as with {@code free}. A late access never crashes the JVM: a region
 * carved from a size class stays mapped until the pool closes (a late access reads or writes
 * memory the pool may have handed out again), and a region larger than a quarter of
 * {@code pool.chunk.size}, which has a chunk of its own, is unmapped when it closes. Access to
 * unmapped memory throws {@link IllegalStateException}.
 */
public interface Region extends AutoCloseable {

    /** The region's memory, exactly as long as asked for. */
    MemorySegment segment();

    /** Its length in bytes. */
    long size();

    /**
     * The IPC handle another process gives to {@link Conduit#importRegion(byte[])} to map this
     * region: at most 4 KiB, with no absolute path, pid or host id in it. The chunk is exported
     * once, on the first call for any region in it, and the export stays valid until the chunk is
     * freed. So it outlives this region: once the region is closed while its chunk holds others, a
     * process that imports the handle, or still maps it (an {@link ImportedRegion}, a
     * {@link PeerRegion}), reads and writes whatever the pool hands that memory out for next, with
     * no error; tell importers when a region is freed, and free it once they are done, as with
     * UCX's and UMF's IPC handles.
     *
     * @throws IllegalStateException when the region, or its pool, is closed
     * @throws dev.conduit.spi.NotSupportedException when the pool's plugin exports no handles (it
     *         does not declare {@link dev.conduit.spi.Capability#IPC}), or none here (its probe
     *         ruled {@code IPC} out: {@link PluginInfo#unsupportedHere()}); the message names the
     *         plugin and why. Such a region serves this process only
     * @throws dev.conduit.spi.ConduitException when the plugin cannot export the chunk (the message
     *         names the cause)
     */
    byte[] exportHandle();

    /**
     * Whether the region is still allocated: {@code false} once {@link #close()} returned or its
     * {@link Pool} closed. For
     * views that must refuse use after free (a {@code dev.conduit.chronicle} view checks it on every
     * access); the segment itself cannot tell.
     */
    boolean isOpen();

    /**
     * Frees the region. Idempotent once it returned. The plugin may refuse to free a region's chunk
     * of its own while its memory is in use (another thread inside a native call on it: a futex
     * wait, say): the close then throws {@link IllegalStateException}, and the region stays
     * allocated, open and counted against {@code pool.max.size}; close it again once that use
     * ended. A close overlapping another thread's returns only once the chunk is freed: when the
     * plugin refused the other's free, it tries the free itself. Any other exception from the
     * plugin's free leaves the region closed.
     */
    @Override
    void close();
}
