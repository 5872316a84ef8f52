package dev.conduit.spi;

/**
 * A source of coarse chunks of memory that other processes can map, like UMF's memory provider.
 * The runtime's pools carve chunks into regions; the runtime builds IPC handles around the
 * plugin's {@linkplain #export(Chunk) export payload}.
 *
 * <p><b>Implemented by</b> plugins with {@link Capability#MEMORY}; <b>called by</b> the runtime's
 * pool that opened it (each pool opens a provider of its own), one call at a time from whichever
 * thread allocates: the pool holds a lock around every call, whatever the plugin declares. A plugin
 * with {@code MEMORY} therefore declares {@link ThreadMode#SERIALIZED} or {@link ThreadMode#MULTI};
 * over one that declares only {@link ThreadMode#SINGLE} the runtime makes no pool.
 *
 * <p>Lifecycle: {@link ConduitPlugin#openMemoryProvider(PluginContext)} → {@code allocate} /
 * {@code export} / {@code free} → {@link #close()}, which frees every chunk still allocated.
 */
public interface MemoryProvider extends AutoCloseable {

    /** The granularity and alignment of chunks: sizes are multiples of it, addresses aligned to it. */
    long pageSize();

    /**
     * Allocates a chunk of {@code size} bytes (a positive multiple of {@link #pageSize()}), zeroed,
     * mapped read-write in this process.
     *
     * @throws ConduitException naming the resource (path, errno) when the memory cannot be had
     */
    Chunk allocate(long size);

    /**
     * The most bytes {@link #export} may return: what an IPC handle, and a shared-memory
     * transport's announcement of a bounce ring, carry of a plugin's export, and all a peer that
     * reads one needs to accept.
     */
    int MAX_EXPORT_LENGTH = 3072;

    /**
     * Makes {@code chunk} mappable by other processes and returns the plugin's part of the IPC
     * handle (1 to {@value #MAX_EXPORT_LENGTH} bytes: the runtime refuses an empty one), e.g. a relative file name or a socket name and a capability token.
     * The runtime calls it once per chunk and reuses the result until the chunk is freed; after a
     * {@link #free} refused for a busy chunk, which revokes the export, it calls it again at the
     * chunk's next export (until 2026-12-07 it reused the revoked result).
     * Optional ({@link Capability#IPC}).
     */
    default byte[] export(Chunk chunk) {
        throw new NotSupportedException("this memory provider cannot export chunks (capability IPC)");
    }

    /**
     * Frees {@code chunk}: unmaps it here and revokes its export, so that a later import of a handle
     * to it fails cleanly. Mappings other processes already hold stay valid until they unmap.
     *
     * @throws IllegalStateException when the chunk's memory is in use here and cannot be unmapped yet
     *         (another thread inside a native call holding it: the JDK's {@code Arena.close} refuses):
     *         the chunk stays allocated and the provider's, its export revoked all the same (the
     *         runtime exports it anew when asked), and the runtime frees it again at its
     *         region's next close. Any other exception means the chunk is no more the provider's to
     *         free (freed in part, or its memory kept, as verbs keeps memory a device may still
     *         write until a later try of its own deregisters it): the runtime does not try again
     */
    void free(Chunk chunk);

    /** Frees every chunk still allocated and releases the provider's resources. Idempotent. */
    @Override
    void close();
}
