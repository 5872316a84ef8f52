package dev.conduit;

import dev.conduit.spi.ExporterState;

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
 * {@link dev.conduit.spi.PeerFailedException}, as every later call on it does, while
 * {@link #exporterState()} still answers; and on the regions of a {@link Message#replyEndpoint()}
 * whose connection ended (the worker closed it): those throw the end as a
 * {@code PeerFailedException}, as its send does. Thread-safe; it is used
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

    /**
     * Whether the process that exported this region still holds it out, judged now: the same
     * three answers as {@link ImportedRegion#exporterState()}, never a pid.
     * <ul>
     * <li>A region mapped here (memfd, posix: same host) asks the plugin's mapping of the chunk in
     *     the IPC cache ({@link dev.conduit.spi.ChunkMapping#exporterState()}), exactly as an
     *     import of the same handle does: {@code ALIVE} while the exporter holds its pool's lease,
     *     {@code DEAD} once it does not (killed, or its pool closed), {@code UNKNOWN} where the
     *     plugin cannot tell (devdax until another owner started) or may not look.</li>
     * <li>A region not mapped here (verbs: another host) is judged by its endpoint, whose peer
     *     holds the memory RMA reaches: {@code DEAD} once the endpoint failed with
     *     {@link dev.conduit.spi.PeerFailedException.Reason#DIED}, {@code UNKNOWN} otherwise (a
     *     live connection proves no more than that, and a failure of another reason, verbs' own
     *     {@code UNKNOWN} among them, is also a closed worker whose process lives on).</li>
     * </ul>
     * Once {@code DEAD}, never {@code ALIVE} again. It still answers on a region its endpoint's
     * failure closed, where every RMA operation throws the failure: that is when it is asked (an
     * error handler made the peer a suspect; its holdings are taken back once this says
     * {@code DEAD}). Costs a few system calls when mapped here, and some 1.3 KB of heap, as an import's:
     * for an occasional check. Needs no thread-mode guard.
     *
     * @throws IllegalStateException when the application closed it, or its endpoint (or worker)
     *         was closed without a failure
     * @throws dev.conduit.spi.ConduitException when the plugin could look and the look failed
     *         (naming the path, errno and remedy), or its look threw anything else or gave no answer
     *         (named as its fault)
     */
    ExporterState exporterState();

    /** Releases the region. Idempotent. */
    @Override
    void close();
}
