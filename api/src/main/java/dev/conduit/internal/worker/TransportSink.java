package dev.conduit.internal.worker;

import dev.conduit.Endpoint;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.LongMap;

import java.lang.foreign.MemorySegment;

/**
 * What one transport of a worker delivers to: its messages go to the worker's
 * {@link MessageDispatch}, each naming this sink and the connection it came by, so that a handler
 * can answer it ({@code Message.replyEndpoint()}); and the endpoints it was answered through are
 * kept here, one per sender's connection, until the transport says that connection delivers
 * nothing more ({@link #onSenderClosed}).
 *
 * <p>A reply endpoint is an ordinary endpoint of the worker, connected through this transport to
 * the address the sender announced ({@code Transport.senderAddress}): the worker's close closes
 * it with the others, and an application may close it too (the next answer then connects anew).
 * It has no error handler: the sender's failure shows on its next use ({@code PeerFailedException})
 * and, as the transport then forgets the connection, closes it.
 *
 * <p>The endpoints are looked up under this object's monitor (the threads of a {@code MULTI} worker
 * may deliver at once), but for an answer to the sender the same thread answered last, which the
 * thread's delivery context keeps ({@link MessageDispatch.Delivery}): a server that answers each
 * request of one client takes no lock and allocates nothing per answer. (Public for
 * {@code Message}, in another package; this package is not exported.)
 */
public final class TransportSink implements MessageSink {

    private final MessageDispatch dispatch;
    private final String transportName;
    private RuntimeWorker worker;
    private int transportIndex = -1;
    /** Reply endpoints by the sender key of the connection they answer; under this object's monitor. */
    private final LongMap<RuntimeEndpoint> replies = new LongMap<>();

    TransportSink(MessageDispatch dispatch, String transportName) {
        this.dispatch = dispatch;
        this.transportName = transportName;
    }

    /** Binds this sink to its worker once the worker exists, which is after its transports were opened with it. */
    void bind(RuntimeWorker worker, int transportIndex) {
        this.worker = worker;
        this.transportIndex = transportIndex;
    }

    @Override
    public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                          MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        dispatch.deliver(this, 0, id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength);
    }

    @Override
    public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                          MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
        dispatch.deliver(this, sender, id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength);
    }

    @Override
    public void onSenderClosed(long sender) {
        RuntimeEndpoint ep;
        synchronized (this) {
            ep = sender == 0 ? null : replies.remove(sender);
        }
        if (ep == null) return;
        try {
            // Not close(): this runs inside the transport's progress, on the thread that holds the worker for it (or on a
            // confined transport's thread acting for that one), which the guard's entry would refuse. The transport's
            // endpoint is closed after this progress step (RuntimeWorker#closeTransportEndpoint).
            ep.closeAsEnded(new PeerFailedException("the connection of the sender this endpoint answered (connection "
                    + Long.toHexString(sender) + " over '" + transportName + "') has ended: the sender closed it, or its worker closed or "
                    + "died, so this reply endpoint was closed with it; answer the sender's next message, should one come, through "
                    + "its replyEndpoint()"));
        } catch (RuntimeException | Error e) {
            dispatch.delivery().fail(e);
        }
    }

    /**
     * The endpoint to answer the sender of connection {@code sender} through: the one kept for it,
     * else a new one connected to the address the sender announced.
     *
     * @throws NotSupportedException when the transport does not name senders or their addresses
     * @throws PeerFailedException   when the connection delivers nothing more (its sender closed it or is gone), or
     *                               connecting found the sender gone before the transport ended its connection
     */
    public Endpoint replyEndpoint(long sender) {
        if (sender == 0 || worker == null) {
            throw new NotSupportedException("transport '" + transportName + "' does not name the sender of the messages it delivers, "
                    + "so this message cannot be answered through replyEndpoint(): have the request carry worker.address().toBytes() "
                    + "and connect to it");
        }
        MessageDispatch.Delivery d = dispatch.delivery();
        RuntimeEndpoint cached = d.reply(transportIndex, sender);
        if (cached != null) return cached;
        RuntimeEndpoint ep;
        synchronized (this) {
            ep = replies.get(sender);
            // One the application closed: answer through a new one, as the javadoc of Message#replyEndpoint promises.
            if (ep != null && ep.isClosed()) {
                replies.remove(sender);
                ep = null;
            }
            if (ep == null) {
                ep = worker.connectToSender(transportIndex, sender);
                replies.put(sender, ep);
            }
        }
        d.rememberReply(transportIndex, sender, ep);
        return ep;
    }

    /** How many reply endpoints are kept, closed ones not yet noticed included; for tests. */
    synchronized int replyCount() {
        return replies.size();
    }

    String transportName() {
        return transportName;
    }
}
