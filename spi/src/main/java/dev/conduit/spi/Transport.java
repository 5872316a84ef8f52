package dev.conduit.spi;

/**
 * One plugin's transport for one worker, as a UCT interface is for a UCP worker: a receive queue,
 * the address peers reach it by, the endpoints it connected, and the progress engine that drives
 * them.
 *
 * <p><b>Implemented by</b> plugins with {@link Capability#AM}; <b>called by</b> the runtime's
 * worker, under the worker's thread-mode policy, so a transport sees concurrent calls only if it
 * declared {@link ThreadMode#MULTI}.
 */
public interface Transport extends AutoCloseable {

    /** The longest {@link #address()} a transport may give: what a worker address and a sender's announcement carry. */
    int MAX_ADDRESS_LENGTH = 1024;

    /**
     * What a peer needs to reach this transport (at most {@link #MAX_ADDRESS_LENGTH} bytes), carried
     * in the worker address. Paths in it are relative to the shared directory.
     */
    byte[] address();

    /**
     * Connects to the peer whose entry for this plugin in its worker address is {@code peerAddress}.
     * Reachability is proven, not assumed: the transport opens what the peer published and completes
     * its handshake, or throws naming what it could not open or verify (the runtime then tries the
     * next transport the peer offers). Either happens in bounded time, also for the address of a
     * transport that has since closed: a peer that is gone is an exception, not an endpoint that
     * fails at its first send.
     *
     * @throws InvalidHandleException when the address is malformed
     * @throws PeerFailedException    when the peer is known to be gone (its transport closed, its
     *                                process died): the runtime reports it as such, for instance to
     *                                a handler answering a sender that died ({@code Message.replyEndpoint()})
     * @throws ConduitException       when the peer cannot be reached from this process
     */
    TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events);

    /**
     * Makes progress: delivers received messages to the {@link MessageSink}, completes outstanding
     * operations, detects dead peers. Never blocks.
     *
     * <p>It is re-entered: the application's handlers run inside {@code MessageSink.onMessage}, on
     * this thread, and an answering handler calls {@link #connect}, {@link #senderAddress} and its
     * endpoints' {@code trySend}, {@code trySendEncoded} and RMA operations before {@code onMessage}
     * returns. So deliver from state those calls leave consistent: no iterator they invalidate, no
     * lock of the plugin's held across the sink that they take (unless it is re-entrant). The
     * runtime never calls this transport's {@code progress}, {@code await} or {@code close} from
     * inside it, and closes an endpoint a handler closed only once this call has returned.
     *
     * @return the number of events handled (0 when there was nothing to do), never negative: the
     *         runtime fails the round of a negative answer with a {@link ConduitException} naming the
     *         plugin, as it fails one whose progress throws, since the count is how the application's
     *         progress loop and {@code await} tell that there was work
     */
    int progress();

    /**
     * Sleeps until work may have arrived or {@code timeoutNanos} passed; busy polling stays the
     * default, this is for when latency may be traded for an idle core ({@link Capability#WAKEUP}).
     * A transport may return before {@code timeoutNanos} with nothing to do, for instance to check
     * its peers' liveness: callers loop ({@code progress()}, then {@code await} with the time left)
     * until their own deadline, as the runtime's {@code Worker.await} does. A timeout of 0 or less
     * has passed: the transport looks for work (a kept signal included) and returns without sleeping.
     *
     * @return {@code true} if woken by work or {@link #signal()}; {@code false} when the timeout
     *         passed or the transport returned early with nothing to do
     */
    default boolean await(long timeoutNanos) {
        throw new NotSupportedException("this transport cannot sleep until work arrives (capability WAKEUP)");
    }

    /**
     * Wakes a thread sleeping in {@link #await(long)}; callable from any thread. A signal while no
     * thread sleeps is kept: the next {@code await} returns {@code true} at once (signals that
     * come together may make one return). The runtime's {@code Worker.await} promises exactly
     * that to applications, and relies on the transport it sleeps in for it.
     */
    default void signal() {
        throw new NotSupportedException("this transport cannot sleep until work arrives (capability WAKEUP)");
    }

    /**
     * The address of the worker that sent the messages of connection {@code sender} (a key this
     * transport gave {@link MessageSink#onMessage(int, java.lang.foreign.MemorySegment, long, int,
     * java.lang.foreign.MemorySegment, long, long, long)}): bytes that sender's transport of this
     * plugin returned from {@link #address()}, as the sender announced them when it connected, which
     * {@link #connect} accepts. The runtime connects to it when the application answers a message
     * ({@code Message.replyEndpoint()}), as UCX's {@code reply_ep} does. Called on the progress
     * thread, from a message handler.
     *
     * <p>Optional: the default says "not supported", as a transport whose connections do not
     * carry the sender's address should.
     *
     * @return the address, or {@code null} when the connection is no longer delivered from (its
     *         {@link MessageSink#onSenderClosed} came, or comes at this progress step)
     * @throws NotSupportedException when this transport cannot name a sender's address, or this
     *                               sender did not announce it
     */
    default byte[] senderAddress(long sender) {
        throw new NotSupportedException("this transport does not carry the address of a message's sender, so a message it delivers "
                + "cannot be answered through Message.replyEndpoint(): have the request carry worker.address().toBytes() and connect to it");
    }

    /**
     * Keeps the payload of the message this transport is delivering on the calling thread (the
     * {@link MessageSink#onMessage} call under way) where it lies, past that call, until the action
     * returned runs: what the application's {@code Message.keepPayload()} asks, as UCX's
     * {@code ucp_am_data_release} releases a payload whose handler returned {@code UCS_INPROGRESS}.
     * Called by the runtime from inside {@code onMessage} only, on the delivering thread, at most
     * once per message.
     *
     * <p>Until the action runs, the payload's bytes (the range {@code onMessage} gave) stay as
     * delivered and mapped: not reused for later messages, and not unmapped when the connection
     * they came by ends. Later messages are delivered meanwhile, in order, as usual; a transport
     * whose senders then run out of room says so to them as backpressure, never by dropping. The
     * action may run on any thread, once (the runtime never runs it twice), also concurrently
     * with {@link #progress()}: it only marks the payload released, and the transport gives its
     * room back from its own progress. The runtime runs every action of a worker's kept payloads
     * before it closes the worker's transports; an action that runs after {@link #close()} does
     * nothing. A transport may unmap kept payloads as it closes: the application's views of them
     * then throw {@link IllegalStateException} (memory of an {@link java.lang.foreign.Arena#ofShared()
     * shared arena}, never a JVM crash).
     *
     * <p>Optional: the default returns {@code null}, "cannot keep this one", and the runtime then
     * copies the payload into memory of its own, which the application keeps instead. Return
     * {@code null} too for a payload this transport cannot keep in place (the shared-memory
     * transports do for one inline in their receive queue, whose records are released in order).
     * Since SPI 1.1.
     *
     * @return the action that releases the payload, or {@code null} when the runtime is to copy it
     */
    default Runnable keepDelivered() {
        return null;
    }

    /** Closes every endpoint, withdraws what the transport published, releases its resources. Idempotent. */
    @Override
    void close();
}
