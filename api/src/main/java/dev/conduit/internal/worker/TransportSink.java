package dev.conduit.internal.worker;

import dev.conduit.Endpoint;
import dev.conduit.spi.ConduitException;
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
 * and, as the transport then forgets the connection, closes it (once the worker's progress has
 * handed over the answers still in its local queue: {@code RuntimeEndpoint.closeAsEnded}).
 *
 * <p>The endpoints are looked up under this object's monitor (the threads of a {@code MULTI} worker
 * may deliver at once), but for an answer to the sender the same thread answered last, which the
 * thread's delivery context keeps ({@link MessageDispatch.Delivery}): a server that answers each
 * request of one client takes no lock and allocates nothing per answer. A reply endpoint is
 * connected outside the monitor, so that a slow connect holds up only the answers to its own
 * sender: threads that connect to one sender at once keep the endpoint whose connect completed
 * first and close the others (or, when their own connect fails, answer through the kept one), and
 * a connection whose end is told meanwhile gets none ({@link Connecting}). (Public for
 * {@code Message}, in another package; this package is not exported.)
 */
public final class TransportSink implements MessageSink {

    private static final System.Logger LOG = System.getLogger("dev.conduit.worker");

    private final MessageDispatch dispatch;
    private final String transportName;
    private RuntimeWorker worker;
    private int transportIndex = -1;
    /** Reply endpoints by the sender key of the connection they answer; under this object's monitor. */
    private final LongMap<RuntimeEndpoint> replies = new LongMap<>();
    /** The connects under way to a sender, by its key; under this object's monitor. */
    private final LongMap<Connecting> connecting = new LongMap<>();
    /** The last failed connect to a sender, by its key, while answers to it fail at once; under this object's monitor. */
    private final LongMap<FailedReply> failedReplies = new LongMap<>();

    /**
     * A connect to a sender that failed, and until when answers to that sender fail at once with
     * its failure: for as long as the connect took. A stopped sender with many requests queued
     * (SIGSTOP, a debugger) had each of its answers wait out the transport's connect timeout
     * (memfd: 2 s) inside one progress() call, while every other sender waited too: ten requests,
     * twenty seconds. Now that progress() waits once per such span, and a sender that resumes is
     * answered again once it has passed.
     */
    private record FailedReply(RuntimeException failure, long tookNanos, long failedAt) {
        boolean stands(long now) {
            return now - (failedAt + tookNanos) < 0;
        }
    }

    /**
     * The threads connecting a reply endpoint to one sender now, and whether that sender's end was
     * told meanwhile, which makes what they connect useless: the address was the ended
     * connection's, and its key may already be a new connection's. Under the sink's monitor.
     */
    private static final class Connecting {
        int threads;
        boolean ended;
    }

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
        if (sender == 0) return;
        RuntimeEndpoint ep;
        synchronized (this) {
            ep = replies.remove(sender);
            failedReplies.remove(sender);
            Connecting underWay = connecting.remove(sender);
            if (underWay != null) underWay.ended = true;
        }
        if (ep == null) return;
        try {
            // Not close(): this runs inside the transport's progress, on the thread that holds the worker for it (or on a
            // confined transport's thread acting for that one), which the guard's entry would refuse. The transport's
            // endpoint is closed after this progress step (RuntimeWorker#closeTransportEndpoint).
            ep.closeAsEnded(ended(sender));
        } catch (RuntimeException | Error e) {
            dispatch.delivery().fail(e);
        }
    }

    private PeerFailedException ended(long sender) {
        return new PeerFailedException("the connection of the sender this endpoint answered (connection "
                + Long.toHexString(sender) + " over '" + transportName + "') has ended: the sender closed it, or its worker closed or "
                + "died, so this reply endpoint was closed with it; answer the sender's next message, should one come, through "
                + "its replyEndpoint()");
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
        Connecting attempt = null;
        synchronized (this) {
            ep = openReply(sender);
            if (ep == null) {
                FailedReply failed = failedReplies.get(sender);
                if (failed != null) {
                    long now = System.nanoTime();
                    if (failed.stands(now)) throw stillFailing(failed, now);
                    failedReplies.remove(sender);
                }
                attempt = connecting.get(sender);
                if (attempt == null) {
                    attempt = new Connecting();
                    connecting.put(sender, attempt);
                }
                attempt.threads++;
            }
        }
        if (ep == null) ep = connect(sender, attempt);
        d.rememberReply(transportIndex, sender, ep);
        return ep;
    }

    /** The endpoint kept for {@code sender}, or null; one the application closed is forgotten (the next answer connects anew). */
    private RuntimeEndpoint openReply(long sender) {
        RuntimeEndpoint ep = replies.get(sender);
        if (ep != null && ep.isClosed()) {
            replies.remove(sender);
            return null;
        }
        return ep;
    }

    /**
     * Connects a reply endpoint to {@code sender} outside the monitor and keeps it, unless another
     * thread's connect completed first (that one is kept, this one closed; also when this one
     * failed) or the sender's end was told meanwhile (this one is closed as ended, and the answer
     * fails as it would have after the end).
     */
    private RuntimeEndpoint connect(long sender, Connecting attempt) {
        RuntimeEndpoint fresh;
        long started = System.nanoTime();
        try {
            fresh = worker.connectToSender(transportIndex, sender);
        } catch (Throwable e) { // also a checked one a plugin threw through connect: the attempt must be left (precise rethrow)
            RuntimeEndpoint kept;
            synchronized (this) {
                leave(sender, attempt);
                kept = attempt.ended ? null : openReply(sender);
                if (kept == null && !attempt.ended && e instanceof RuntimeException failure && !(e instanceof NotSupportedException)) {
                    long now = System.nanoTime();
                    failedReplies.put(sender, new FailedReply(failure, now - started, now));
                }
            }
            if (kept == null) throw e;
            // Another thread's connect to this sender, made at the same time, was kept: the answer goes through it.
            LOG.log(System.Logger.Level.DEBUG, () -> "a second connect to the sender of connection " + Long.toHexString(sender)
                    + " over '" + transportName + "', made at the same time as the one kept, failed: " + e);
            return kept;
        }
        RuntimeEndpoint kept;
        synchronized (this) {
            leave(sender, attempt);
            kept = attempt.ended ? null : openReply(sender);
            if (kept == null && !attempt.ended) {
                replies.put(sender, fresh);
                failedReplies.remove(sender);
                return fresh;
            }
        }
        if (kept == null) {
            PeerFailedException why = ended(sender);
            PeerFailedException refusal = new PeerFailedException("cannot answer the sender of connection " + Long.toHexString(sender)
                    + " over '" + transportName + "': that connection ended while its reply endpoint was connected (its sender closed "
                    + "it, or its worker closed or died), so there is nobody to answer", why);
            try {
                fresh.closeAsEnded(why);
            } catch (RuntimeException | Error e) {
                refusal.addSuppressed(e);
            }
            throw refusal;
        }
        try {
            fresh.close(true);
        } catch (RuntimeException | Error e) {
            // The answer goes through the kept endpoint; the plugin's failure to close the other is the progress call's to report.
            dispatch.delivery().fail(e);
        }
        return kept;
    }

    /**
     * What an answer throws while the failure of its sender's last connect stands: that failure's
     * words and kind (a peer failure stays one), saying when it failed and for how long no connect is tried.
     */
    private static RuntimeException stillFailing(FailedReply failed, long now) {
        // The failure names the sender and the transport already ("cannot answer the sender of connection ... over ...").
        String message = failed.failure().getMessage() + " (said again without a new connect: the one that failed so "
                + (now - failed.failedAt()) / 1_000_000 + " ms ago took " + failed.tookNanos() / 1_000_000 + " ms, and answers to "
                + "this sender fail at once for as long as a failed connect to it took, so that a stopped sender's queued requests "
                + "do not each hold up progress(); a later answer connects again)";
        return failed.failure() instanceof PeerFailedException peer
                ? new PeerFailedException(peer.reason(), message, peer)
                : new ConduitException(message, failed.failure());
    }

    private void leave(long sender, Connecting attempt) {
        if (--attempt.threads == 0 && connecting.get(sender) == attempt) connecting.remove(sender);
    }

    /**
     * The action that releases the payload this sink's transport is delivering on this thread,
     * kept in place ({@code Message.keepPayload()}), or null when the transport cannot keep it and
     * the caller copies it.
     */
    public Runnable keepDelivered() {
        return worker == null ? null : worker.keepDelivered(transportIndex);
    }

    /**
     * Has the worker hold a kept payload until it is closed ({@link #forgetKept}), and close it
     * with itself.
     *
     * @throws IllegalStateException when the worker is closed (the payload is closed then)
     */
    public void keepUntilClosed(AutoCloseable kept) {
        if (worker != null) worker.keepUntilClosed(kept);
    }

    /** The worker holds {@code kept} no more: it was closed. */
    public void forgetKept(AutoCloseable kept) {
        if (worker != null) worker.forgetKept(kept);
    }

    /** How many reply endpoints are kept, closed ones not yet noticed included; for tests. */
    synchronized int replyCount() {
        return replies.size();
    }

    /** The name of the transport it is the sink of. */
    public String transportName() {
        return transportName;
    }
}
