package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * Receives the active messages a transport takes off its queue.
 *
 * <p><b>Implemented by</b> the runtime (which dispatches to the application's handler for
 * {@code id}); <b>called by</b> transports during {@link Transport#progress()}, on the progress
 * thread.
 *
 * <p>Header and payload are given as a buffer, an offset and a length, not as slices, so that
 * delivering a message allocates nothing: a transport passes the same long-lived segments (its
 * receive queue, its bounce buffers) for every message. The bytes are valid only until this call
 * returns; the runtime exposes them to the application read-only. Pass read-only segments
 * ({@code asReadOnly()}, made once): the application's {@code Message.payloadBuffer()} is then the
 * segment itself; from a writable one the runtime makes a read-only view, once per segment in a
 * row.
 *
 * <p>The application's handler runs inside the call, and may call back into the transport that is
 * delivering: a send on one of its endpoints, a connect, {@link Transport#senderAddress}
 * ({@link Transport#progress()} says which calls come, and which never do).
 */
public interface MessageSink {

    /**
     * Delivers one message.
     *
     * @param id            the active-message id the sender used
     * @param headerBuffer  the segment holding the header
     * @param headerOffset  where the header starts in it
     * @param headerLength  its length (may be 0)
     * @param payloadBuffer the segment holding the payload (may be {@code headerBuffer})
     * @param payloadOffset where the payload starts in it
     * @param payloadLength its length (may be 0)
     */
    void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                   MemorySegment payloadBuffer, long payloadOffset, long payloadLength);

    /**
     * Delivers one message and names the connection it came by, so that the application can answer
     * it ({@code Message.replyEndpoint()}): {@code sender} is the transport's key of that connection,
     * which the runtime passes back to {@link Transport#senderAddress(long)} and which
     * {@link #onSenderClosed} retires. A transport that names senders calls this method for every
     * message, with the same key for every message of one connection, never 0, and never the key of
     * another connection it still delivers from; one that cannot calls the method without it.
     *
     * <p>The default drops the key and delivers: a sink written before this method (a plugin's own
     * test sink) keeps working, without answers.
     */
    default void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                           MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
        onMessage(id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength);
    }

    /**
     * The connection {@code sender} names delivers nothing more: its sender closed it, or its
     * worker closed or died, or the transport refused it. The runtime then closes the endpoint it
     * answered that connection's messages through, if any, and forgets the key, which the
     * transport may give a new connection afterwards. Called on the progress thread, once per key
     * given to {@link #onMessage(int, MemorySegment, long, int, MemorySegment, long, long, long)},
     * by transports that name senders; also for a key no message carried (a connection that sent
     * nothing), which the runtime ignores. Not called when the transport itself closes: the
     * worker's close closes every endpoint.
     *
     * <p>Call it, as {@code onMessage}, holding no lock that {@link Transport#connect},
     * {@link Transport#senderAddress} or an endpoint's send take: inside it the runtime closes the
     * connection's reply endpoint, which hands that endpoint's queued messages to the transport,
     * while, under {@code MULTI}, a handler on another thread may be asking a sender's address or
     * connecting a reply endpoint; such a lock makes them wait for the call, or deadlocks with a
     * thread that sends on the endpoint being closed. Make
     * {@code senderAddress} give {@code null} for the key before telling its end, and, when several
     * threads deliver at once, give a retired key to a new connection only once no thread still
     * delivers a message of the old one: an answer to that message would otherwise be connected to
     * the new connection's sender. A transport that names senders but never calls this has the
     * runtime keep the reply endpoint of every connection it answered until the worker closes.
     */
    default void onSenderClosed(long sender) {
    }
}
