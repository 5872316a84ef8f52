package dev.conduit.internal.threading;

import dev.conduit.spi.ThreadStart;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * One runtime-owned thread on which every call to a thread-confined plugin runs, when the user
 * enabled {@code thread.confine} for a {@code SERIALIZED} or {@code MULTI} worker over a plugin
 * that declares only {@code SINGLE}. A call made on that thread itself (re-entry) runs directly.
 */
public final class ThreadConfinement implements AutoCloseable {

    private final ExecutorService executor;
    private final Thread thread;

    public ThreadConfinement(String name) {
        this(name, r -> {
            // It lives as long as the worker: a request's context on the thread that opened the worker is not to pin it.
            Thread t = Thread.ofPlatform().daemon().name(name).inheritInheritableThreadLocals(false).unstarted(r);
            // Not inheriting gives it the system class loader as its context loader: the plugin's lookups through it
            // (ServiceLoader.load, logging bridges) see the opener's, as they would unconfined.
            t.setContextClassLoader(Thread.currentThread().getContextClassLoader());
            return t;
        });
    }

    /** With {@code threads} making the thread: a test's may throw what Thread.start throws at the limit of threads. */
    ThreadConfinement(String name, ThreadFactory threads) {
        Thread[] created = new Thread[1];
        this.executor = Executors.newSingleThreadExecutor(r -> created[0] = threads.newThread(r));
        try {
            getUninterruptibly(executor.submit(() -> { })); // the thread starts at once: waited for as a call is
        } catch (ExecutionException e) {
            executor.shutdownNow();
            throw new IllegalStateException("could not start confinement thread " + name, e);
        } catch (OutOfMemoryError noThread) {
            executor.shutdownNow();
            throw ThreadStart.failed("cannot start " + name + ", the thread that runs every call of a thread-confined plugin "
                    + "(thread.confine)", noThread);
        }
        this.thread = created[0];
    }

    /** The thread every call runs on: a segment confined to another thread is not accessible on it. */
    public Thread thread() {
        return thread;
    }

    /**
     * Runs {@code call} on the confined thread and returns its result; its exceptions propagate
     * unchanged. An interrupt of the calling thread does not end the wait: the call is the
     * caller's (a send, a put, a progress), made on its behalf, and must finish before the caller
     * goes on, as it would if made directly, where no plugin call is interrupted either. The
     * interrupt status is kept; a sleep in the plugin's {@code await} is ended by the worker's
     * signal, which an interrupt of the awaiting thread sends.
     */
    public <T> T call(Callable<T> call) {
        if (Thread.currentThread() == thread) {
            return callHere(call);
        }
        Future<T> f;
        try {
            f = executor.submit(call);
        } catch (RejectedExecutionException e) {
            // What the runtime reads from a transport call as "closed under the call" (a forced close), not as the plugin's fault.
            throw new IllegalStateException("the confined plugin's thread " + thread.getName() + " is closed: its worker's transport "
                    + "closed (a Conduit.close() that did not wait for this thread's call); open a new worker", e);
        }
        return resultOf(f);
    }

    /**
     * The result of a call made for the calling thread on another one, waited for whatever
     * interrupts the caller ({@link #getUninterruptibly}); its exceptions propagate unchanged.
     */
    static <T> T resultOf(Future<T> f) {
        return resultOf(f, () -> { });
    }

    /**
     * As {@link #resultOf(Future)}, calling {@code onInterrupt} at each interrupt of the calling
     * thread while it waits (one set before the call included).
     */
    static <T> T resultOf(Future<T> f, Runnable onInterrupt) {
        try {
            return getUninterruptibly(f, onInterrupt);
        } catch (ExecutionException e) {
            throw ThreadConfinement.<RuntimeException>unchanged(e.getCause());
        }
    }

    /**
     * Throws {@code thrown} as it is, a checked exception too (a Kotlin or {@code @SneakyThrows}
     * plugin's, thrown undeclared), as the call would have thrown it on the caller's own thread, where
     * the runtime names it the plugin's fault. Until 2026-12-07 a checked one was wrapped in an
     * {@code IllegalStateException}, which the runtime takes from a plugin's call for "closed under
     * the call" ({@code ThreadConfinementTest#aCallsCheckedExceptionComesBackUnchangedNotAsTheIllegalStateExceptionOfAClose}).
     */
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException unchanged(Throwable thrown) throws E {
        throw (E) thrown;
    }

    /**
     * The result of {@code f}, waited for whatever interrupts the calling thread (the call may have
     * started, and its effects are the caller's), whose interrupt status is then set again.
     */
    private static <T> T getUninterruptibly(Future<T> f) throws ExecutionException {
        return getUninterruptibly(f, () -> { });
    }

    private static <T> T getUninterruptibly(Future<T> f, Runnable onInterrupt) throws ExecutionException {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                    onInterrupt.run();
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    public void run(Runnable r) {
        call(() -> {
            r.run();
            return null;
        });
    }

    private static <T> T callHere(Callable<T> call) {
        try {
            return call.call();
        } catch (Exception e) {
            throw ThreadConfinement.<RuntimeException>unchanged(e);
        }
    }

    /**
     * Stops the thread once queued calls ran, whatever interrupts the closing thread (whose
     * interrupt status is then set again): each of those calls is a caller's, waiting for it
     * uninterruptibly. {@code ExecutorService.close()} answered an interrupt with
     * {@code shutdownNow()}, which dropped the queued calls without ending them, so that their
     * callers waited for ever, and interrupted the plugin's call under way.
     */
    @Override
    public void close() {
        executor.shutdown();
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    if (executor.awaitTermination(1, TimeUnit.DAYS)) return;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }
}
