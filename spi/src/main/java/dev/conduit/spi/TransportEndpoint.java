package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * A connection from one transport to a peer's transport.
 *
 * <p><b>Implemented by</b> transport plugins; <b>called by</b> the runtime's endpoint, under the
 * worker's thread-mode policy. The runtime owns backpressure: when {@link #trySend} returns
 * {@code false} it keeps a copy of the message and retries in order during progress, so a
 * transport never queues, blocks or drops.
 */
public interface TransportEndpoint extends AutoCloseable {

    /**
     * Sends active message {@code id} if resources allow it now. On {@code true} the message is
     * committed (it will be delivered exactly once, in order, while both peers live) and the caller
     * may reuse both segments.
     *
     * @return {@code false} when the peer's queue or the transport's buffers are full; buffers
     *         the transport frees in its own {@link Transport#progress()} (send completions, a bounce
     *         ring the peer released) are freed when the sender's worker progresses, which the
     *         runtime does between retries
     * @throws PeerFailedException when the peer is known to be dead
     */
    boolean trySend(int id, MemorySegment header, MemorySegment payload);

    /**
     * {@link #trySend(int, MemorySegment, MemorySegment)} of a header and a payload given as ranges
     * of segments: same contract, same result. The runtime hands the messages of its local queue
     * (backpressure) to the transport this way, as ranges of its own buffer, in the form in which a
     * {@link MessageSink} receives them. The ranges are within bounds, and their lengths within this
     * endpoint's limits.
     *
     * <p>Optional: the default makes a view of each range (two small objects, none for an empty
     * range) and calls {@link #trySend(int, MemorySegment, MemorySegment)}. A transport overrides it
     * so that sending from a backlog allocates nothing.
     *
     * @param id            the active-message id
     * @param headerBuffer  the segment holding the header
     * @param headerOffset  where the header starts in it
     * @param headerLength  its length (may be 0)
     * @param payloadBuffer the segment holding the payload (may be {@code headerBuffer})
     * @param payloadOffset where the payload starts in it
     * @param payloadLength its length (may be 0)
     * @return as {@link #trySend(int, MemorySegment, MemorySegment)}
     * @throws PeerFailedException when the peer is known to be dead
     */
    default boolean trySend(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                            MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        return trySend(id, range(headerBuffer, headerOffset, headerLength), range(payloadBuffer, payloadOffset, payloadLength));
    }

    private static MemorySegment range(MemorySegment segment, long offset, long length) {
        return length == 0 ? MemorySegment.NULL : segment.asSlice(offset, length);
    }

    /**
     * Optional (zero-copy send): claims room for a header and up to {@code maxLength} payload bytes
     * where the message travels (the peer's receive queue, a bounce buffer), lets {@code encoder}
     * write the payload there, and commits what it wrote, with the same guarantees as
     * {@link #trySend}. The runtime has checked the id and both sizes against this endpoint's limits,
     * and calls it only for a {@code maxLength} above 1 KiB: a smaller payload it encodes into a
     * buffer of its own and sends with {@link #trySend(int, MemorySegment, long, int, MemorySegment, long, long)}.
     *
     * <p>A transport may let the encoder write before it claims the message's place in the
     * peer's queue (the shared-memory transports do, beyond their {@code inline.max}, so that a
     * slow encoder holds up no other sender): once the encoder has returned, the message is taken,
     * and a transport that then finds no room keeps it and sends it before anything this endpoint
     * sends later; it never answers -1 after calling the encoder.
     *
     * <p>If the encoder throws or returns a length outside {@code 0..maxLength}
     * ({@link PayloadEncoder#checkWritten}), the transport abandons the claim so that the peer
     * never delivers it, and the exception propagates. A transport without this operation keeps the
     * default, which throws {@link NotSupportedException} without calling the encoder; the runtime
     * then encodes into a buffer of its own and calls {@link #trySend}: one copy more, same semantics.
     *
     * @return the payload length sent, as the encoder returned it, or {@code -1} when there is no
     *         room now (the encoder was not called; the runtime has it encode into a buffer of the
     *         endpoint, and sends from there or queues the message locally). The runtime checks
     *         this against its call of the encoder: any other answer fails the send with a
     *         {@link ConduitException} naming the plugin, and the encoder is not called again
     * @throws PeerFailedException   when the peer is known to be dead
     * @throws NotSupportedException by default
     */
    default long trySendEncoded(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        throw new NotSupportedException("this transport has no zero-copy send (trySendEncoded)");
    }

    /**
     * The largest header this endpoint carries, in bytes. The runtime refuses a larger one, before
     * calling {@link #trySend}, with an {@code IllegalArgumentException} naming the limit and the
     * plugin.
     */
    default int maxHeaderSize() {
        return 1024;
    }

    /**
     * The largest payload this endpoint carries, in bytes. The runtime refuses a larger one, before
     * calling {@link #trySend}, with an {@code IllegalArgumentException} naming the limit, the
     * plugin and what raises the limit, as {@link #maxPayloadSizeRemedy()} says (without it the
     * runtime points to docs/plugins.md, which gives each plugin's limits and keys: document yours
     * there, or in your plugin's own documentation).
     */
    long maxPayloadSize();

    /**
     * What raises {@link #maxPayloadSize()}, for the runtime's refusal of a larger payload, which
     * adds it after "or raise the limit: ": the key as {@link ConfigKey#nameAndVariable()} names it,
     * of which process, and up to what (memfd: {@code "memfd.bounce.size (CONDUIT_MEMFD_BOUNCE_SIZE)
     * of this process, the sender, sets it; at most 1g"}). Called only for such a refusal. Null, the
     * default, when no key raises the limit or the plugin does not say; the runtime then points to
     * docs/plugins.md. Since SPI 1.1.
     */
    default String maxPayloadSizeRemedy() {
        return null;
    }

    /**
     * Copies {@code source} to {@code target} at {@code offset} ({@link Capability#RMA}). When it
     * returns, the transport has taken {@code source}'s bytes: the caller may overwrite or free it
     * at once, while the copy completes at the target by {@link #flush()} (a transport that reads
     * the source later, zero-copy, must have done so before returning; the TCK checks it). A
     * {@code source} that overlaps the target at the same addresses of this process (the peer is
     * this process) is copied as if through a temporary buffer, as {@code MemorySegment.copy}
     * copies, however the transport cuts the copy up (the TCK checks it).
     */
    default void put(MemorySegment source, RemoteRegion target, long offset) {
        throw new NotSupportedException("this transport has no RMA (capability RMA)");
    }

    /**
     * Copies {@code destination.byteSize()} bytes from {@code source} at {@code offset} ({@link Capability#RMA}); an
     * overlapping {@code destination} as {@link #put} copies an overlapping source.
     */
    default void get(RemoteRegion source, long offset, MemorySegment destination) {
        throw new NotSupportedException("this transport has no RMA (capability RMA)");
    }

    /** Atomically adds {@code delta} to the 8-byte word at {@code offset}; returns the old value ({@link Capability#ATOMICS}). */
    default long fetchAdd(RemoteRegion target, long offset, long delta) {
        throw new NotSupportedException("this transport has no atomics (capability ATOMICS)");
    }

    /** Atomically replaces the 8-byte word at {@code offset} if it equals {@code expected}; returns the old value ({@link Capability#ATOMICS}). */
    default long compareAndSwap(RemoteRegion target, long offset, long expected, long desired) {
        throw new NotSupportedException("this transport has no atomics (capability ATOMICS)");
    }

    /**
     * Returns when every RMA operation issued before it is complete at the target. It waits, polling
     * what tells this endpoint's operations complete (verbs: its send queue's completions), but
     * delivers nothing to the {@link MessageSink}, whose messages come only inside
     * {@link Transport#progress()}. It runs inside the worker's thread-mode guard, so in a
     * {@code MULTI} worker over a plugin that does not declare {@code MULTI} every other thread of
     * the worker waits for it.
     *
     * @throws PeerFailedException when the peer is found dead before the operations complete; the
     *                             runtime fails the endpoint, as on any report
     */
    default void flush() {
    }

    /**
     * Optional (keepalive probe, as UCT's {@code ep_check}): looks, now, whether the peer still
     * lives, and reports a peer found dead, hung or unreachable by throwing
     * {@link PeerFailedException} (or through {@link EndpointEvents#peerFailed}, then returning normally: one
     * report, not both, which the TCK checks); a peer that
     * lives, or whose state this look cannot tell, returns normally. The runtime calls it for every
     * open endpoint that has not failed, at the worker's first {@code progress()} after each
     * {@code keepalive.interval} (or an {@code await} that progresses the transports between its
     * sleeps), on that thread, not inside its {@link Transport#progress()} and without the lock the
     * runtime keeps for this endpoint, but inside the worker's thread-mode guard, as every call: a
     * plugin that declares {@code SERIALIZED} and not {@code MULTI} is never probed while another
     * thread is in its {@code progress()} (a {@code MULTI} worker over it holds the runtime's lock
     * for the probe); only in a {@code MULTI} worker over a plugin that declares {@code MULTI} may
     * other threads be in {@code progress()} or sending meanwhile. So a transport need not keep a
     * timer of its own to notice a dead peer it has nothing to send to or
     * receive from: the runtime fails the endpoint, as on every other report. It must not block: a
     * look that takes a round trip to the peer sends its probe here and reports the answer, or its
     * absence, from a later {@code checkPeer} or {@code progress()}.
     *
     * <p>A transport that detects a peer's death by itself, at least as often, may keep the
     * default, which throws {@link NotSupportedException}; the runtime then never calls it again
     * on this endpoint. The TCK checks that a transport offering it reports a peer that died, and
     * not one that lives. Since SPI 1.1.
     *
     * @throws PeerFailedException   when the peer is found dead, hung or unreachable
     * @throws NotSupportedException by default
     */
    default void checkPeer() {
        throw new NotSupportedException("this transport has no keepalive probe (checkPeer)");
    }

    /**
     * Closes the connection; the peer sees end of stream, not a failure. Idempotent. A message a
     * send accepted before close is still delivered while both workers live. A transport should
     * not block here on the peer for that: it may keep what the peer has yet to read (a payload in
     * a buffer of this side) and release it as it progresses or when it closes, as the
     * shared-memory transport does; a transport that must wait bounds the wait (verbs: its
     * wire-up timeout).
     */
    @Override
    void close();
}
