package dev.conduit;

/**
 * An allocator of shareable memory over one plugin's memory provider: size classes carved out of
 * provider chunks (64 B up to a quarter of {@code pool.chunk.size}), larger allocations in chunks
 * of their own. Made by {@link Conduit#pool(String)}. Thread-safe.
 *
 * <p>Closing the pool frees every chunk: regions still open become unusable (their segments and
 * {@link Region#exportHandle()} throw {@link IllegalStateException}, {@link Region#isOpen()} is
 * {@code false}), never dangling.
 */
public interface Pool extends AutoCloseable {

    /** The plugin whose provider this pool allocates from. */
    String plugin();

    /** The provider's page size: the largest alignment {@link #allocate(long, long)} honours. */
    long pageSize();

    /**
     * Allocates {@code size} bytes, aligned to at least 8 bytes; the memory is not zeroed when
     * reused. Throws as {@link #allocate(long, long)} does.
     */
    Region allocate(long size);

    /**
     * Allocates {@code size} bytes aligned to {@code alignment}, a power of two no larger than
     * {@link #pageSize()}.
     *
     * @throws IllegalArgumentException for a non-positive size, a size that cannot be rounded up to
     *         the page size, or an alignment that is not a power of two or exceeds the page size
     * @throws dev.conduit.spi.ConduitException when the provider cannot supply memory (the message
     *         names the resource and errno)
     * @throws IllegalStateException when the pool is closed (by its {@link #close()} or its
     *         {@code Conduit}'s)
     */
    Region allocate(long size, long alignment);

    /**
     * Frees every chunk and closes the provider. Idempotent once it succeeded. If the provider
     * refuses to close (memory of it still in use, e.g. another thread inside a native call on a
     * region), the failure is thrown, the pool allocates nothing more, and the next {@code close},
     * or its {@code Conduit}'s, tries the provider's close again.
     */
    @Override
    void close();
}
