package dev.conduit.internal.worker;

import dev.conduit.internal.Resources;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The runtime's keepalive, as UCP's over UCT's {@code ep_check}: once per {@code keepalive.interval}
 * it marks every open worker so that the worker's next progress round asks each endpoint's
 * transport whether the peer still lives ({@link RuntimeWorker#keepaliveDue},
 * {@code TransportEndpoint.checkPeer}). One daemon thread per {@code Conduit}, started with its
 * first worker and stopped by its close. It only sets a flag in the worker's state word, which
 * progress reads anyway: a worker pays nothing between rounds, and the transports are called on
 * the worker's own progress thread, as its thread mode requires, never on this one. It holds
 * what the {@code Conduit} opened only weakly, and ends once that is gone: a {@code Conduit}
 * dropped without a close is not kept alive by it.
 */
public final class Keepalive implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("dev.conduit.worker");
    /** How long a close waits for the thread to end: it only sleeps and sets flags, so it ends at once. */
    private static final long CLOSE_WAIT_MILLIS = TimeUnit.SECONDS.toMillis(5);

    private final long intervalNanos;
    private final WeakReference<Resources> opened;
    private final Thread thread;
    private volatile boolean closed;

    /**
     * Starts the keepalive.
     *
     * @param interval how often the workers are marked
     * @param opened   what the {@code Conduit} opened, its workers among it
     */
    public Keepalive(Duration interval, Resources opened) {
        this.intervalNanos = interval.toNanos();
        this.opened = new WeakReference<>(opened);
        this.thread = Thread.ofPlatform().daemon().name("conduit-keepalive").start(this::run);
    }

    private void run() {
        long next = System.nanoTime() + intervalNanos;
        while (!closed) {
            long wait = next - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(this, wait);
                continue; // woken early (a close, a spurious wake-up): look again
            }
            next += intervalNanos;
            if (next - System.nanoTime() < 0) next = System.nanoTime() + intervalNanos; // fell behind (a suspended JVM): no burst
            try {
                if (!markWorkers()) return; // the Conduit was dropped unclosed, and collected
            } catch (RuntimeException e) {
                // Marking sets a bit; nothing of it should throw. Were it to, the next interval tries again rather than end the keepalive.
                LOG.log(System.Logger.Level.WARNING, "conduit keepalive: marking the workers failed; trying again next interval", e);
            }
        }
    }

    /** Marks every open worker; false once what the Conduit opened is gone. No reference to it outlives the call. */
    private boolean markWorkers() {
        Resources r = opened.get();
        if (r == null) return false;
        r.forEachOpen(RuntimeWorker.class, RuntimeWorker::keepaliveDue);
        return true;
    }

    /** Stops the thread and waits for it to end. Idempotent. */
    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        if (Thread.currentThread() == thread) return;
        try {
            thread.join(CLOSE_WAIT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the thread ends by itself: it sees the flag at its next look
        }
    }
}
