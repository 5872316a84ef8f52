package dev.conduit.internal.worker;

import dev.conduit.Message;
import dev.conduit.MessageHandler;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.RepeatedWarning;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A worker's {@link MessageSink}: looks the handler up by id, points the {@link Message} flyweight
 * at the message, calls the handler, invalidates the flyweight. Allocates nothing per message.
 *
 * <p>Handlers live in a two-level table: 256 pages of 256 entries, a page made when the first id in
 * it gets a handler, so a worker that uses a few ids costs a few KiB, not 65536 references. Writes
 * are release stores, lookups acquire loads, so a handler set on one thread is seen by a
 * progressing thread in every mode.
 *
 * <p>A handler's exception is caught here, so the transport finishes its progress step undisturbed
 * (the message is consumed: neither lost nor redelivered), and kept in the {@link Delivery} for
 * the worker to rethrow after the transport returns.
 */
final class MessageDispatch implements MessageSink {

    private static final System.Logger LOG = System.getLogger("dev.conduit.worker");
    private static final VarHandle PAGES = MethodHandles.arrayElementVarHandle(MessageHandler[][].class);
    private static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(MessageHandler[].class);
    /** Exceptions kept as suppressed in one that progress throws, at most. */
    private static final int MAX_SUPPRESSED = 16;

    /** The {@link #warned} bit of every id outside 0..65535. */
    private static final int OUT_OF_RANGE = 1 << 16;

    private final MessageHandler[][] pages = new MessageHandler[256][];
    private final MessageAccess access = MessageAccess.get();
    /** The one delivery context when calls are exclusive (any guard but pass-through), else {@code null}. */
    private final Delivery shared;
    private final ThreadLocal<Delivery> perThread;
    /**
     * The threads running a handler or {@code PayloadEncoder} of this worker now, when several may
     * ({@link #shared} is {@code null}), else {@code null}: a close that one of them asked for
     * ({@code Conduit.close()}) waits until none is.
     */
    private final AtomicInteger threadsCalledBack;
    private final AtomicLong unhandled = new AtomicLong();
    private final BitSet warned = new BitSet();
    /** What {@link #suppress} could not attach: logged, so that a handler's exception is never lost without a word. */
    private final RepeatedWarning notSuppressed = new RepeatedWarning(LOG, Duration.ofMinutes(1));

    /**
     * @param concurrent whether several threads may deliver at once (a {@code MULTI} worker whose
     *                   plugins all declare {@code MULTI}): each thread then gets its own flyweight
     */
    MessageDispatch(boolean concurrent) {
        if (concurrent) {
            shared = null;
            AtomicInteger calledBack = threadsCalledBack = new AtomicInteger();
            perThread = ThreadLocal.withInitial(() -> new Delivery(access.create(), notSuppressed, calledBack));
        } else {
            shared = new Delivery(access.create(), notSuppressed, null);
            threadsCalledBack = null;
            perThread = null;
        }
    }

    /** The delivery context of the calling thread. */
    Delivery delivery() {
        return shared != null ? shared : perThread.get();
    }

    /** Whether the calling thread is running a handler of this worker right now, for every kind of worker. */
    boolean handlingOnCurrentThread() {
        Delivery d = delivery();
        return d.depth > 0 && (shared == null || d.thread == Thread.currentThread());
    }

    /**
     * Whether any thread is running a handler or {@code PayloadEncoder} of this worker right now: a
     * {@code PASS_THROUGH} worker's threads each have a delivery context of their own, so that the
     * calling thread's says nothing of the others'.
     */
    boolean calledBackOnAnyThread() {
        return shared != null ? shared.depth > 0 : threadsCalledBack.get() > 0;
    }

    /** Whether {@code thread} is running a handler of this worker right now (only meaningful for exclusive workers). */
    boolean handling(Thread thread) {
        Delivery d = shared;
        return d != null && d.depth > 0 && d.thread == thread;
    }

    void setHandler(int id, MessageHandler handler) {
        synchronized (pages) {
            int p = id >>> 8;
            MessageHandler[] page = pages[p];
            if (page == null) {
                if (handler == null) return;
                page = new MessageHandler[256];
                PAGES.setRelease(pages, p, page);
            }
            SLOTS.setRelease(page, id & 0xFF, handler);
        }
    }

    MessageHandler handler(int id) {
        if ((id >>> 16) != 0) return null;
        MessageHandler[] page = (MessageHandler[]) PAGES.getAcquire(pages, id >>> 8);
        return page == null ? null : (MessageHandler) SLOTS.getAcquire(page, id & 0xFF);
    }

    /** Delivers a message that came through no transport's sink: it cannot be answered ({@code Message.replyEndpoint()}). */
    @Override
    public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                          MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        deliver(null, 0, id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength);
    }

    /**
     * Delivers a message that came through {@code from}, the sink of one transport, by the
     * connection {@code sender} names (0 when the transport does not name it).
     */
    void deliver(TransportSink from, long sender, int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                 MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        MessageHandler handler = handler(id);
        if (handler == null) {
            unhandled(id, from);
            return;
        }
        Delivery d = delivery();
        // A delivery nested in a handler (a plugin delivering from a call the handler made) gets a
        // flyweight of its own, so the outer handler's message stays valid.
        Message m = d.depth == 0 ? d.message : access.create();
        access.fill(m, id, headerBuffer == null ? MemorySegment.NULL : headerBuffer, headerOffset, headerLength,
                payloadBuffer == null ? MemorySegment.NULL : payloadBuffer, payloadOffset, payloadLength, from, sender);
        Thread previous = d.thread;
        d.thread = Thread.currentThread();
        d.callBackBegins();
        try {
            handler.onMessage(m);
        } catch (Throwable t) {
            d.fail(t);
        } finally {
            d.callBackEnds();
            d.thread = previous;
            access.invalidate(m);
        }
    }

    private void unhandled(int id, TransportSink from) {
        unhandled.incrementAndGet();
        // Ids come from peers: one outside 0..65535 (no handler can have it) is remembered under one bit, so that a
        // peer cannot make this set grow past the 8 KiB that 65536 ids take.
        int key = (id >>> 16) == 0 ? id : OUT_OF_RANGE;
        boolean first;
        synchronized (warned) {
            first = !warned.get(key);
            if (first) warned.set(key);
        }
        if (first) {
            // An id out of range is no application's slip: Endpoint.send refuses one, so only a transport delivers it.
            LOG.log(System.Logger.Level.WARNING, "active message id " + id + " arrived"
                    + (from != null ? " over transport '" + from.transportName() + "'" : "") + " but no handler is registered for it"
                    + (key == OUT_OF_RANGE ? " (ids are 0..65535)" : "") + "; it was dropped and counted as unhandled (further ones "
                    + (key == OUT_OF_RANGE ? "outside that range" : "with this id") + " are counted silently, in "
                    + "Worker.unhandledMessages()). " + (key == OUT_OF_RANGE
                    ? "Endpoint.send refuses such an id, so the transport that delivered it is at fault: report it to its plugin's author"
                    : "Register a handler with Worker.onMessage(" + id + ", handler) on this worker before its peers send that id"));
        }
    }

    long unhandled() {
        return unhandled.get();
    }

    /**
     * Adds {@code t} to {@code into}'s suppressed exceptions while it holds fewer than
     * {@value #MAX_SUPPRESSED}. The bound is on the object, not on one call: a handler or plugin
     * that throws one preallocated exception every time (as allocation-free code does) would
     * otherwise have it grow by each call's other failures for as long as the worker runs. What
     * finds no room is logged instead, at most once a minute per worker.
     */
    void suppress(Throwable into, Throwable t) {
        suppress(into, t, notSuppressed);
    }

    private static void suppress(Throwable into, Throwable t, RepeatedWarning notSuppressed) {
        if (t == into) return;
        // Locked on the exception, as Throwable's own methods are: threads of a MULTI worker may throw the same object.
        synchronized (into) {
            if (into.getSuppressed().length < MAX_SUPPRESSED) {
                into.addSuppressed(t);
                return;
            }
        }
        notSuppressed.log(() -> "an exception of a progress call could not be added to the one the call throws, " + into
                + ", which holds " + MAX_SUPPRESSED + " suppressed exceptions already (one object thrown again and again, such as a "
                + "preallocated exception): it is logged here instead", t);
    }

    /**
     * What one thread's delivery needs: its flyweight, whether a handler runs (and on which
     * thread: a confined transport runs it on its own thread), whether a transport's progress is on
     * the stack, and the handler exceptions to rethrow.
     */
    static final class Delivery {
        final Message message;
        /**
         * Handlers (message or error) and {@code PayloadEncoder}s of sends on this worker's endpoints
         * running now: what their code calls on the worker is a call-back, one count that the
         * progress path tests at no more cost than it did for handlers alone. (Which of the two runs
         * innermost, an endpoint's encoding thread says.) Counted by {@link #callBackBegins} and
         * {@link #callBackEnds}.
         */
        int depth;
        /** Transport progress or await calls on the stack. */
        int inTransport;
        /** Failures of endpoints this thread reported (their error handlers called): an await that reports one returns. */
        int failuresReported;
        Thread thread;
        private Throwable failure;
        /**
         * The last answer this thread gave ({@link TransportSink#replyEndpoint}): the index of its
         * transport in this worker (one delivery context serves one worker), its sender and its
         * endpoint. The endpoint is held weakly: a {@code MULTI} worker's contexts live in a
         * thread-local, whose value must not reach back to the worker (an endpoint does), or the
         * thread-local's weak key never clears and each thread that answered would keep the closed
         * worker, with its transports and endpoints, for the rest of its life. While the endpoint
         * is open its transport's sink holds it, so the reference is not cleared under a thread
         * that answers through it.
         */
        private int replyTransport = -1;
        private long replySender;
        private WeakReference<RuntimeEndpoint> replyEndpoint;

        private final RepeatedWarning notSuppressed;
        /** The worker's count of threads in call-backs when it has a context per thread ({@link #threadsCalledBack}), else null. */
        private final AtomicInteger threadsCalledBack;

        Delivery(Message message, RepeatedWarning notSuppressed, AtomicInteger threadsCalledBack) {
            this.notSuppressed = notSuppressed;
            this.message = message;
            this.threadsCalledBack = threadsCalledBack;
        }

        /** A handler or {@code PayloadEncoder} begins on this thread; this thread is counted among the worker's in call-backs. */
        void callBackBegins() {
            if (depth++ == 0 && threadsCalledBack != null) threadsCalledBack.getAndIncrement();
        }

        /** The innermost handler or {@code PayloadEncoder} of this thread returned. */
        void callBackEnds() {
            if (--depth == 0 && threadsCalledBack != null) threadsCalledBack.getAndDecrement();
        }

        /** The endpoint this thread last answered {@code sender} of transport {@code transport} through, if it is still open; else null. */
        RuntimeEndpoint reply(int transport, long sender) {
            if (replyTransport != transport || replySender != sender) return null;
            RuntimeEndpoint ep = replyEndpoint.get();
            return ep != null && !ep.isClosed() ? ep : null;
        }

        void rememberReply(int transport, long sender, RuntimeEndpoint ep) {
            replyTransport = transport;
            replySender = sender;
            replyEndpoint = ep.weakly();
        }

        void fail(Throwable t) {
            if (failure == null) failure = t;
            else suppress(failure, t, notSuppressed);
        }

        boolean failed() {
            return failure != null;
        }

        /** Adds the kept handler exception, if any, to {@code e} (which the worker throws instead) and forgets it. */
        void attachTo(Throwable e) {
            Throwable t = failure;
            failure = null;
            if (t != null) suppress(e, t, notSuppressed);
        }

        /** Throws the kept handler exception, if any, and forgets it. */
        void rethrow() {
            Throwable t = failure;
            if (t == null) return;
            failure = null;
            if (t instanceof RuntimeException r) throw r;
            if (t instanceof Error e) throw e;
            throw new ConduitException("a message handler threw " + t, t);
        }
    }
}
