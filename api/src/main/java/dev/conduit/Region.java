package dev.conduit;

import java.lang.foreign.MemorySegment;

/**
 * One allocation from a {@link Pool}: memory other processes can map through its IPC handle.
 *
 * <p>{@link #close()} frees the region: its memory becomes reusable by the pool, so the segment
 * must not be used after it, as with {@code free}. The memory stays mapped until the pool closes,
 * so a late access cannot crash the JVM; after the pool closes it throws
 * {@link IllegalStateException}.
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
     * freed.
     */
    byte[] exportHandle();

    /**
     * Whether the region is still allocated: {@code false} once {@link #close()} was called. For
     * views that must refuse use after free (a {@code dev.conduit.chronicle} view checks it on every
     * access); the segment itself cannot tell.
     */
    boolean isOpen();

    /** Frees the region. Idempotent. */
    @Override
    void close();
}
