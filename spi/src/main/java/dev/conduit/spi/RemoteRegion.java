package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * A peer's exported region as a transport sees it: the decoded, validated handle and, when this
 * process could map it, the mapping.
 *
 * <p><b>Implemented by</b> the runtime; <b>used by</b> transports in RMA operations.
 */
public interface RemoteRegion extends AutoCloseable {

    /** The plugin that exported the region. */
    String pluginName();

    /** The region's length in bytes. */
    long length();

    /**
     * Where the region starts in the chunk the payload describes: a plugin's export payload is per
     * chunk (see {@link MemoryProvider#export(Chunk)}), so a transport that addresses the peer's
     * memory itself (verbs: the chunk's registered address plus this offset) needs it.
     */
    long chunkOffset();

    /** A fresh reader of the exporting plugin's payload (e.g. a remote key for verbs). */
    PayloadReader payload();

    /**
     * The region mapped in this process, or {@code null} when it cannot be mapped here (another
     * host). Valid until {@link #close()}.
     */
    MemorySegment localSegment();

    /**
     * Whether an access to {@link #localSegment()} may fault: its mapping's
     * {@link ChunkMapping#mayFault()}. Since SPI 1.1; a default of true, the safe answer, so that
     * a transport's test doubles need not say.
     */
    default boolean mayFault() {
        return true;
    }

    /** Releases this process's use of the mapping (the cache keeps it until eviction). */
    @Override
    void close();
}
