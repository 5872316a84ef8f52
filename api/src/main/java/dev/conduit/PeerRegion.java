package dev.conduit;

/**
 * A peer's exported region, as a target or source of RMA on the endpoint that opened it
 * ({@link Endpoint#peerRegion(byte[])}).
 *
 * <p>Made from the peer's IPC handle ({@link Region#exportHandle()}): the handle is validated
 * field by field and, when this process can map the region (same host), mapped through the
 * runtime's IPC cache, so opening a region again is cheap. {@link #close()} releases this use of
 * the cached mapping; closing the endpoint or the worker closes the regions opened through it.
 * Operations on a closed region throw {@link IllegalStateException}, but on the regions of a failed
 * endpoint (which the {@link Worker#progress()} that reported its failure closed): those throw its
 * {@link dev.conduit.spi.PeerFailedException}, as every later call on it does. Thread-safe; it is used
 * in operations of the endpoint that opened it, under that endpoint's thread mode. Its close takes
 * no thread-mode guard: a close on another thread while an operation on the region is under way
 * may unmap it under that operation (when the IPC cache keeps no more of it), which then throws
 * {@link IllegalStateException} saying so, never reaching unmapped memory; close a region once no
 * thread uses it.
 */
public interface PeerRegion extends AutoCloseable {

    /** The region's length in bytes: RMA offsets and lengths are checked against it. */
    long size();

    /** The plugin that exported it. */
    String plugin();

    /** Releases the region. Idempotent. */
    @Override
    void close();
}
