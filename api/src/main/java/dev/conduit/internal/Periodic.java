package dev.conduit.internal;

import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadStart;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * A daemon thread that runs a task once per interval until it is closed, or until the task says
 * that what it served is gone: the runtime's background work (the keepalive's marks, the IPC
 * cache's sweep of unused imports) is a short task on such a thread, never a busy one.
 *
 * <p>A task holds what it serves only weakly and returns {@code false} once that is gone, so that a
 * {@code Conduit} dropped without a close is not kept alive by its threads, which then end. A task
 * that throws is tried again at the next interval: one failed round must not end the background
 * work for the life of the {@code Conduit}. A JVM suspended past several intervals (a debugger, a
 * stopped container) runs the task once on waking, not once per interval missed.
 *
 * <p>The thread inherits nothing of the thread that happens to start it (a request's context must
 * not pin what it serves), which would give it the system class loader as its context loader; it
 * runs with the one its owner names instead, that of the thread that built the {@code Conduit}: a
 * plugin's code the task runs (an unmap) sees through it what it would see on the application's
 * threads ({@code ServiceLoader.load}, a logging bridge, in a fat jar or an application server).
 * Until 2026-12-07 it had the system class loader
 * (IpcCacheIdleTest#theSweepUnmapsWithTheContextClassLoaderOfTheThreadThatBuiltTheConduit).
 */
public final class Periodic implements AutoCloseable {

    /** How long a close waits for the thread to end: a task is short, so it ends at once. */
    private static final long CLOSE_WAIT_MILLIS = TimeUnit.SECONDS.toMillis(5);

    private final String name;
    private final System.Logger log;
    private final long intervalNanos;
    private final BooleanSupplier task;
    private final Thread thread;
    private volatile boolean closed;

    /**
     * Starts the thread; the task first runs one interval from now.
     *
     * @param name     the thread's name, also what a failed round's warning names
     * @param log      where a failed round is told
     * @param interval      how often the task runs
     * @param contextLoader the thread's context class loader: that of the thread that built the {@code Conduit}
     * @param task          the round; {@code false} ends the thread
     * @throws ConduitException when no thread can be started ({@link ThreadStart#failed}: the
     *                           process's or its cgroup's limit of threads)
     */
    public Periodic(String name, System.Logger log, Duration interval, ClassLoader contextLoader, BooleanSupplier task) {
        this(name, log, interval, contextLoader, task,
                run -> Thread.ofPlatform().daemon().name(name).inheritInheritableThreadLocals(false).unstarted(run));
    }

    /** As the public constructor, with {@code threads} making the thread unstarted: a test's may make one that cannot start. */
    Periodic(String name, System.Logger log, Duration interval, ClassLoader contextLoader, BooleanSupplier task,
             Function<Runnable, Thread> threads) {
        this.name = name;
        this.log = log;
        this.intervalNanos = interval.toNanos();
        this.task = task;
        Thread unstarted = threads.apply(this::run);
        unstarted.setContextClassLoader(contextLoader);
        this.thread = unstarted;
        // The JVM's bare OutOfMemoryError came out of a worker's creation (the keepalive), with no remedy.
        ThreadStart.start(unstarted, "conduit: cannot start the runtime's background thread " + name
                + ", which runs its work once per interval");
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
                if (!task.getAsBoolean()) return;
            } catch (RuntimeException | Error e) {
                // A plugin's Error (a class it misses) too: ended by it, the thread would do no round again for good.
                BestEffortLog.warnUnlessTheJvmsOwn(log, () -> name + ": a round failed; trying again next interval", e);
            }
        }
    }

    /** Stops the thread and waits for a round in progress to end. Idempotent. */
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
