package dev.conduit;

import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PeerFailedException;

import java.lang.foreign.MemorySegment;

/**
 * A connection from a {@link Worker} to a peer worker, over one transport
 * ({@link Worker#connect(WorkerAddress)}): active messages to the peer's handlers, and RMA on the
 * peer's exported regions.
 *
 * <p><b>Active messages</b> sent on one endpoint are delivered to the peer's handler for their id
 * <b>in the order sent, exactly once</b>, while both workers live and the peer keeps the
 * connection (see Failure), whatever the transport. The runtime guarantees it for every plugin:
 * <ul>
 * <li>{@link #send} never blocks and never drops. When the transport cannot take a message now
 *     (the peer's queue is full), the runtime copies it into this endpoint's local queue and
 *     returns; {@link Worker#progress()} retries queued messages in order before anything else.
 *     While messages are queued, new ones go behind them. {@link #pending()} says how many wait,
 *     {@link #pendingBytes()} how many bytes.</li>
 * <li>The caller's segments may be reused as soon as {@code send} returns.</li>
 * <li>Sizes are checked first: a header or payload larger than the transport carries is refused
 *     with {@link IllegalArgumentException} naming the limit and the plugin; nothing is sent.</li>
 * </ul>
 *
 * <p><b>Failure</b>: when the transport reports that the peer died, hung, broke or refused the connection,
 * the endpoint fails once: messages still queued locally are discarded (their number is in the
 * exception's message, nothing disappears silently), the {@link EndpointErrorHandler} is called
 * on the progress thread, and every later operation throws {@link PeerFailedException} (whose cause
 * is {@link #failure()}). Messages the transport had already accepted are the peer's; if the peer
 * died they are lost with it. Over memfd and posix the failure's message counts those of them the
 * peer never read, always the last ones sent (for a peer judged hung, which lives: those still
 * unread in its queue, delivered if it resumes, counting those the progress() call it stalled in had
 * taken already; when the connection's first large message is among them, the peer has not mapped
 * its bounce ring yet, which the endpoint's release frees, so that message and every later one may
 * be dropped, and the failure says so),
 * so that a failover knows how many to send again
 * (docs/runtime.md, "Failure"). A peer may also refuse the connection (over memfd and posix: it keeps
 * {@code <plugin>.inbound.max} connections already, cannot map the connection's bounce ring, or
 * found a record of it that breaks the protocol; the failure says which, or that it does not keep
 * the connection): it then delivered the messages up to the first it dropped, and none after it.
 * Over memfd and posix an endpoint whose peer worker is gone (it closed or died) gives back what
 * only that peer could use (its bounce ring, its mapping of the peer's queue) as it fails (or, when
 * it failed earlier for another reason, at the first liveness check that finds the peer gone).
 * The {@link Worker#progress()} call that reports a failure (calls the error handler, or logs its
 * WARNING) then gives back the rest, whatever the transport: its peer regions, its transport
 * connection and its place in the worker, so that an endpoint dropped unclosed leaks nothing; it
 * keeps throwing its failure, and closing it is still allowed.
 *
 * <p><b>How soon</b>: over the shared-memory transports (memfd, posix) a peer that dies, also by
 * {@code kill -9}, is noticed by its lease, which the worker checks every
 * {@code <plugin>.liveness.interval} (20 ms by default) while it progresses or awaits: its
 * endpoints fail within about that long of the next {@link Worker#progress()} or
 * {@link Worker#await}, well inside 100 ms by default, and the files it left in the shared
 * directory are reclaimed. A peer that lives but stops progressing while this side waits on it
 * (a full queue) fails the endpoint after {@code <plugin>.heartbeat.timeout} (10 s). Other
 * transports document their own detection (docs/plugins.md). Besides, the runtime asks every
 * endpoint's transport whether its peer lives once per {@code keepalive.interval} (1 s by
 * default), in the worker's next {@link Worker#progress()}, and fails the endpoint of one found
 * dead the same way: for a transport that looks only when asked, that bounds how soon
 * (docs/runtime.md, "Failure").
 *
 * <p><b>Threads</b>: every method but {@link #transport()}, {@link #maxHeaderSize()} and
 * {@link #maxPayloadSize()} (which only read what the endpoint was made with) goes through the worker's thread-mode
 * guard ({@link Worker#threadPolicy()}), exactly as the worker's own methods do: in
 * {@code SINGLE} another thread gets {@link WrongThreadException}, in {@code SERIALIZED} an
 * overlapping call gets {@link dev.conduit.spi.ConcurrentUseException}, in {@code MULTI} calls
 * are serialized when a transport needs it. Sends from several threads on one endpoint are each
 * delivered in the order their thread sent them.
 *
 * <p>Closing an endpoint closes its {@link PeerRegion}s and its transport connection; the peer
 * sees the end of the connection, not a failure. Deliver queued messages first (progress the
 * worker until {@link #pending()} is 0): close tries once to hand them to the transport, and
 * discards and logs (logger {@code dev.conduit.worker}) what it still cannot. Messages the
 * transport accepted still arrive while both workers live: close does not wait for the peer to
 * read them, and the transport keeps what they need until the peer has (see each plugin's notes).
 */
public interface Endpoint extends AutoCloseable {

    /** The plugin whose transport carries this endpoint. */
    String transport();

    /**
     * The largest header a send on this endpoint takes, in bytes: its transport's limit (1 KiB over
     * the shared-memory transports and verbs; docs/plugins.md). A larger one is refused with
     * {@link IllegalArgumentException}.
     */
    int maxHeaderSize();

    /**
     * The largest payload a send on this endpoint takes, in bytes: its transport's limit, which
     * the plugin's configuration may set (over the shared-memory transports
     * {@code <plugin>.bounce.size}, 4 MiB by default; docs/plugins.md). A larger one is refused with
     * {@link IllegalArgumentException}.
     */
    long maxPayloadSize();

    /**
     * Sends active message {@code id} with a header and a payload (either may be empty). Returns at
     * once: sent, or queued locally behind earlier messages.
     *
     * @param id 0..65535
     * @throws IllegalArgumentException   for an id outside 0..65535, or a header or payload larger
     *                                    than the transport's limit ({@link #maxHeaderSize()},
     *                                    {@link #maxPayloadSize()}; the message names both)
     * @throws PeerFailedException        when the endpoint has failed
     * @throws dev.conduit.spi.ConduitException when the transport cannot carry the message for a cause of
     *                                    its own that is not the peer's, named with its remedy (no
     *                                    room in the shared directory for a large message's bounce
     *                                    ring, say), or when the local queue cannot grow to take it (it
     *                                    is on the Java heap, a message in it at most 2 GiB: a peer that reads slower than
     *                                    this endpoint sends; docs/runtime.md, "Sending"); nothing is sent
     *                                    or queued then, and the endpoint stays usable
     * @throws IllegalStateException      when the endpoint or its worker is closed, the header's or the
     *                                    payload's arena is closed (the message names which), or when
     *                                    called from inside a {@link PayloadEncoder} of a send on this endpoint
     */
    void send(int id, MemorySegment header, MemorySegment payload);

    /** Sends active message {@code id} with an empty header; see {@link #send(int, MemorySegment, MemorySegment)}. */
    void send(int id, MemorySegment payload);

    /**
     * Sends active message {@code id} with a header and a payload that {@code encoder} writes: for
     * a {@code maxLength} above 1 KiB, straight into the memory that carries it (zero-copy) on a
     * transport that supports it (the shared-memory transports do), the space claimed in the peer's
     * receive queue or in this endpoint's bounce buffer. Same guarantees as
     * {@link #send(int, MemorySegment, MemorySegment)}: never blocks, never drops, in order,
     * exactly once.
     *
     * <p>Up to 1 KiB, and on a transport without zero-copy send, the encoder writes into a buffer
     * of this endpoint, and the message is sent from there; up to 1 KiB that allocates nothing,
     * whatever the encoder, over a transport that takes ranges (the shared-memory and verbs ones).
     * Above 1 KiB, in a shared-memory peer's queue (up to its {@code inline.max}) the encoder gets a
     * view bounded to the record, made for this send (about 40 bytes, which the JIT removes only
     * where it inlines the encoder); in the bounce ring beyond, and in this endpoint's buffer, it is
     * called through {@link PayloadEncoder#encode(MemorySegment, long, long)}, which an encoder can
     * override to make no view (docs/decisions.md). When the transport has no room now, or messages
     * already wait locally, the payload is encoded into this endpoint's buffer and sent from
     * there, or queued locally and copied once more when the transport takes it.
     *
     * <p>The encoder must not send on this endpoint: such a send, plain or encoded, throws
     * {@link IllegalStateException}.
     *
     * <p>An encoder that writes into a shared-memory peer's queue (above 1 KiB, up to its
     * {@code inline.max}) runs while its record there is claimed and not yet committed: the peer
     * delivers no message claimed after it, whoever sent it, until the encoder returns, so such an
     * encoder must be quick. A larger payload is encoded into the bounce buffer before its record
     * is claimed, and holds up nobody else's messages however long the encoder takes.
     *
     * <p>The encoder is called exactly once, on this thread, before {@code send} returns (see
     * {@link PayloadEncoder} for what it may do). If it throws, nothing is sent (a claimed space is
     * abandoned and the peer skips it), the exception propagates as it is, and this endpoint stays
     * as it was: a {@link PeerFailedException} the encoder threw from a send on another endpoint
     * failed that endpoint, not this one.
     *
     * @param id        0..65535
     * @param maxLength the most bytes the encoder may write: the target's length
     * @return the payload's length, as the encoder returned it
     * @throws IllegalArgumentException for an id outside 0..65535, a negative {@code maxLength}, or
     *                                  a header or {@code maxLength} larger than the transport's limit
     * @throws IllegalStateException    when the encoder returns a length outside {@code 0..maxLength},
     *                                  the endpoint or its worker is closed, the header's arena is
     *                                  closed, or this is called from inside an encoder of a send on
     *                                  this endpoint
     * @throws PeerFailedException      when the endpoint has failed, or as the encoder threw it (from
     *                                  a send on another endpoint, which failed; this one did not)
     * @throws dev.conduit.spi.ConduitException when the payload must be encoded into this endpoint's
     *                                  buffer (above) and native memory has no room for {@code maxLength}
     *                                  bytes (the encoder is not called),
     *                                  or it must wait in the local queue and the heap has no room for it
     *                                  there, or as {@link #send(int, MemorySegment, MemorySegment)}; the
     *                                  endpoint stays usable
     */
    long send(int id, MemorySegment header, long maxLength, PayloadEncoder encoder);

    /** How many messages are queued locally, waiting for the transport to take them (0 once failed). */
    long pending();

    /**
     * How many bytes of header and payload the messages of {@link #pending()} hold (0 once failed):
     * what the backlog takes of the Java heap, besides the local queue's spare room. A sender of
     * large payloads bounds its backlog by this, where a count of messages says little.
     */
    long pendingBytes();

    /**
     * Opens a peer's exported region for RMA on this endpoint, from its IPC handle
     * ({@link Region#exportHandle()}), through the runtime's IPC cache.
     *
     * @throws dev.conduit.spi.InvalidHandleException naming the field, for bytes that are not a valid handle
     * @throws dev.conduit.spi.ConduitException       when the region cannot be opened here
     * @throws IllegalStateException                  when this endpoint or its worker is closed
     * @throws PeerFailedException                    when the endpoint has failed
     */
    PeerRegion peerRegion(byte[] handle);

    /**
     * Copies all of {@code source} into {@code target} at {@code offset}. Complete at the target
     * once {@link #flush()} returns (at once on shared-memory transports); {@code source} may be
     * reused, or freed, as soon as this returns: the transport has taken its bytes (as a send's
     * payload). A {@code source} that
     * overlaps the target at the same addresses of this process (a segment of the same mapping: an
     * {@link ImportedRegion} of the same handle, which the IPC cache maps once; over verbs, the
     * region this process exported) is copied as if through a temporary buffer, as
     * {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)} copies. Two mappings
     * of the same memory at different addresses (over memfd or posix, an exporter's own
     * {@link Region} and its import) hide the overlap: what such a copy leaves is undefined.
     *
     * @throws IndexOutOfBoundsException when {@code [offset, offset + source.byteSize())} is not inside {@code target}
     * @throws IllegalArgumentException  when {@code target} was opened on another endpoint, or is mapped read-only in this
     *                                   process (posix through a read-only mount)
     * @throws NotSupportedException     when the transport has no RMA (capability RMA)
     * @throws IllegalStateException     when the region, this endpoint or its worker is closed (closing an endpoint closes
     *                                   the peer regions opened on it), or {@code source}'s arena is (the message says so)
     * @throws PeerFailedException       when the endpoint has failed
     * @throws dev.conduit.spi.ConduitException when the region's memory faulted under the access (a posix chunk file that
     *                                   another process truncated), naming the cause; only this operation fails
     */
    void put(MemorySegment source, PeerRegion target, long offset);

    /**
     * Copies {@code destination.byteSize()} bytes of {@code source} at {@code offset} into {@code destination}.
     * Complete when it returns: {@code destination} holds the bytes, with no {@link #flush()} (the TCK checks it of every
     * transport). A {@code destination} that overlaps the source is copied into as {@link #put} copies: as if through a
     * temporary buffer at the same addresses, undefined through two mappings of the same memory.
     *
     * @throws IndexOutOfBoundsException when the range is not inside {@code source}
     * @throws IllegalArgumentException  when {@code source} was opened on another endpoint, or {@code destination} is
     *                                   read-only
     * @throws NotSupportedException     when the transport has no RMA (capability RMA)
     * @throws IllegalStateException     when the region, this endpoint or its worker is closed (closing an endpoint closes
     *                                   the peer regions opened on it), or {@code destination}'s arena is (the message
     *                                   says so)
     * @throws PeerFailedException       when the endpoint has failed
     * @throws dev.conduit.spi.ConduitException when the region's memory faulted under the access (a posix chunk file that
     *                                   another process truncated), naming the cause; only this operation fails
     */
    void get(PeerRegion source, long offset, MemorySegment destination);

    /**
     * Atomically adds {@code delta} to the 8-byte word at {@code offset} of {@code target} (native
     * byte order of the target's host); returns the previous value.
     *
     * @throws IllegalArgumentException  when {@code offset} is not a multiple of 8, or {@code target} was opened on another
     *                                   endpoint or is mapped read-only in this process (posix through a read-only mount),
     *                                   or its handle places it off an 8-byte boundary of its chunk (no pool does)
     * @throws IndexOutOfBoundsException when the word is not inside {@code target}
     * @throws NotSupportedException     when the transport has no atomics (capability ATOMICS)
     * @throws IllegalStateException     when the region, this endpoint or its worker is closed (closing an endpoint closes
     *                                   the peer regions opened on it)
     * @throws PeerFailedException       when the endpoint has failed
     * @throws dev.conduit.spi.ConduitException when the region's memory faulted under the access (a posix chunk file that
     *                                   another process truncated), naming the cause; only this operation fails
     */
    long fetchAdd(PeerRegion target, long offset, long delta);

    /**
     * Atomically replaces the 8-byte word at {@code offset} of {@code target} with {@code desired}
     * if it equals {@code expected}; returns the previous value (equal to {@code expected} on success).
     *
     * @throws IllegalArgumentException  when {@code offset} is not a multiple of 8, or {@code target} was opened on another
     *                                   endpoint or is mapped read-only in this process (posix through a read-only mount),
     *                                   or its handle places it off an 8-byte boundary of its chunk (no pool does)
     * @throws IndexOutOfBoundsException when the word is not inside {@code target}
     * @throws NotSupportedException     when the transport has no atomics (capability ATOMICS)
     * @throws IllegalStateException     when the region, this endpoint or its worker is closed (closing an endpoint closes
     *                                   the peer regions opened on it)
     * @throws PeerFailedException       when the endpoint has failed
     * @throws dev.conduit.spi.ConduitException when the region's memory faulted under the access (a posix chunk file that
     *                                   another process truncated), naming the cause; only this operation fails
     */
    long compareAndSwap(PeerRegion target, long offset, long expected, long desired);

    /**
     * Returns when every RMA operation issued on this endpoint before it is complete at the target.
     * It is also the only fence, as {@code ucp_worker_fence} is in UCX: an operation issued after it
     * returns is ordered after those before it, on every transport, so put, flush, then announce
     * (an atomic, a message). Over memfd and posix each operation is complete when it returns and a
     * thread's operations are ordered as it issued them (a put's plain stores before a later atomic,
     * a {@code VarHandle} volatile access): a process that sees an atomic's result with an acquire read
     * sees the puts before it without a flush; two {@link #get}s are plain loads, not ordered with
     * each other, and a flush between them (there {@link java.lang.invoke.VarHandle#fullFence()})
     * orders them (docs/runtime.md, "Coordinating processes with atomics").
     *
     * @throws IllegalStateException when this endpoint or its worker is closed
     * @throws PeerFailedException   when the endpoint has failed
     */
    void flush();

    /** Whether the peer failed (see {@link #failure()}). */
    boolean isFailed();

    /** Why the endpoint failed, or {@code null} while it has not. */
    PeerFailedException failure();

    /**
     * Closes the peer regions opened through this endpoint and the connection. Idempotent.
     *
     * @throws IllegalStateException when called from a {@link PayloadEncoder} of a send on this
     *         endpoint (its message is under way in the peer's memory); it closes nothing
     */
    @Override
    void close();
}
