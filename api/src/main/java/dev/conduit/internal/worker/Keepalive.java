package dev.conduit.internal.worker;

import dev.conduit.internal.Periodic;
import dev.conduit.internal.Resources;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.function.BooleanSupplier;

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

    private final Periodic thread;

    /**
     * Starts the keepalive.
     *
     * @param interval      how often the workers are marked
     * @param opened        what the {@code Conduit} opened, its workers among it
     * @param contextLoader the context class loader of the thread that built the {@code Conduit} ({@link Periodic})
     */
    public Keepalive(Duration interval, Resources opened, ClassLoader contextLoader) {
        this.thread = new Periodic("conduit-keepalive", System.getLogger("dev.conduit.worker"), interval, contextLoader,
                markWorkers(new WeakReference<>(opened)));
    }

    /** Marks every open worker; false once what the Conduit opened is gone. No reference to it outlives a round. */
    private static BooleanSupplier markWorkers(WeakReference<Resources> opened) {
        return () -> {
            Resources r = opened.get();
            if (r == null) return false;
            r.forEachOpen(RuntimeWorker.class, RuntimeWorker::keepaliveDue);
            return true;
        };
    }

    /** Stops the thread and waits for it to end. Idempotent. */
    @Override
    public void close() {
        thread.close();
    }
}
