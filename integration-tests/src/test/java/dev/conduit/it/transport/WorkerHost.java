package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * One worker and the thread that owns it, as an application runs one: the thread creates the
 * worker (so a {@code SINGLE} worker belongs to it), runs the tasks it is given in order, and in
 * between progresses the worker — spinning while there is traffic, sleeping in
 * {@code worker.await} when there is none. Error handlers record each endpoint failure with the
 * {@link System#nanoTime()} of the callback ({@code CLOCK_MONOTONIC}: comparable between processes
 * of one boot, across PID namespaces too), so a test can tell how long detection took.
 *
 * <p>Used in the test JVM and, through {@link TransportPeer}, in child JVMs.
 */
final class WorkerHost implements AutoCloseable {

    /** An error handler's call: which endpoint, when, with what, and the reason the transport gave. */
    record Failure(String endpoint, long nanoTime, String type, PeerFailedException.Reason reason, String message) {
    }

    /**
     * How long the thread keeps spinning on empty progress calls before it sleeps in {@code await}.
     * Measured in time, not in calls: with a count, a slow round (a cold JIT, a descheduled vCPU)
     * makes the thread fall asleep between every two messages of a ping-pong, each wake-up then
     * costs a futex round trip, and the exchange stays in that slow mode.
     */
    private static final long SPIN_NANOS = 5_000_000;
    private static final Duration NAP = Duration.ofMillis(1);
    /** How many exceptions of {@code progress()} or {@code await} are printed in full: a flood is counted, not printed. */
    private static final int PRINTED_PROGRESS_ERRORS = 3;
    static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);

    private final String name;
    private final Conduit conduit;
    private final boolean ownsConduit;
    private final Thread thread;
    private final LinkedBlockingQueue<FutureTask<?>> tasks = new LinkedBlockingQueue<>();
    private final CompletableFuture<WorkerAddress> started = new CompletableFuture<>();
    private final CompletableFuture<Void> finished = new CompletableFuture<>();
    private final Map<String, Endpoint> endpoints = new ConcurrentHashMap<>();
    private final List<Failure> failures = new CopyOnWriteArrayList<>();
    private final List<Throwable> progressErrors = new CopyOnWriteArrayList<>();
    private volatile Worker worker;
    private volatile boolean paused;
    private volatile boolean closing;

    private WorkerHost(String name, Conduit conduit, boolean ownsConduit, ThreadMode mode) {
        this.name = name;
        this.conduit = conduit;
        this.ownsConduit = ownsConduit;
        this.thread = new Thread(() -> run(mode), "worker-" + name);
        this.thread.setDaemon(true);
    }

    /** Starts a worker in {@code mode} of {@code conduit} on a new thread; closes the conduit on close if {@code ownsConduit}. */
    static WorkerHost start(String name, Conduit conduit, ThreadMode mode, boolean ownsConduit) {
        WorkerHost h = new WorkerHost(name, conduit, ownsConduit, mode);
        h.thread.start();
        try {
            h.started.get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            h.close();
            throw new IllegalStateException("worker " + name + " did not start: " + e, e);
        }
        return h;
    }

    private void run(ThreadMode mode) {
        try {
            worker = conduit.newWorker(mode);
            started.complete(worker.address());
        } catch (Throwable t) {
            started.completeExceptionally(t);
            finished.complete(null);
            return;
        }
        try {
            int idle = 0;
            long idleSince = 0;
            while (!closing) {
                FutureTask<?> task = tasks.poll();
                if (task != null) {
                    task.run();
                    idle = 0;
                    continue;
                }
                if (paused) {
                    LockSupport.parkNanos(100_000);
                    continue;
                }
                int events;
                try {
                    events = worker.progress();
                } catch (RuntimeException | Error e) {
                    progressFailed(e);
                    events = 1;
                }
                if (events > 0) {
                    idle = 0;
                } else if ((++idle & 63) == 0) {
                    Thread.yield(); // on a busy 2-core machine, let the peer's thread run rather than spin on
                    long now = System.nanoTime();
                    if (idle == 64) {
                        idleSince = now;
                    } else if (now - idleSince > SPIN_NANOS) {
                        try {
                            worker.await(NAP);
                        } catch (RuntimeException | Error e) {
                            progressFailed(e);
                        }
                    }
                }
            }
        } finally {
            FutureTask<?> left;
            while ((left = tasks.poll()) != null) left.cancel(false);
            try {
                worker.close();
            } finally {
                try {
                    if (ownsConduit) conduit.close();
                } finally {
                    if (progressErrors.size() > PRINTED_PROGRESS_ERRORS) {
                        System.err.println("worker " + name + ": " + progressErrors.size() + " exceptions from progress() or await in all");
                    }
                    finished.complete(null);
                }
            }
        }
    }

    /** Keeps the exception for {@link #progressErrors()} and prints the first few to stderr, which a child's failing test shows. */
    private void progressFailed(Throwable e) {
        progressErrors.add(e);
        int n = progressErrors.size();
        if (n <= PRINTED_PROGRESS_ERRORS) {
            System.err.println("worker " + name + ": exception " + n + " from progress() or await:");
            e.printStackTrace();
        } else if (n == PRINTED_PROGRESS_ERRORS + 1) {
            System.err.println("worker " + name + ": more exceptions from progress() or await, counted but not printed");
        }
    }

    String name() {
        return name;
    }

    Conduit conduit() {
        return conduit;
    }

    WorkerAddress address() {
        return started.join();
    }

    /** The worker; use it only from a task ({@link #call}, {@link #submit}), i.e. on this host's thread. */
    Worker worker() {
        return worker;
    }

    /** A named endpoint; use it only from a task. */
    Endpoint endpoint(String endpoint) {
        Endpoint e = endpoints.get(endpoint);
        if (e == null) throw new IllegalArgumentException("no endpoint '" + endpoint + "' on worker " + name + "; known: " + endpoints.keySet());
        return e;
    }

    /** Runs {@code task} on the worker's thread, after the tasks before it, and returns its result. */
    <T> T call(Callable<T> task) {
        if (Thread.currentThread() == thread) {
            try {
                return task.call();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        Future<T> f = submit(task);
        try {
            return f.get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            if (e.getCause() instanceof Error r) throw r;
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            f.cancel(true);
            throw new IllegalStateException("task on worker " + name + " did not finish: " + e, e);
        }
    }

    void run(Runnable task) {
        call(() -> {
            task.run();
            return null;
        });
    }

    /** Queues {@code task} for the worker's thread. A long task holds the thread: it must progress the worker itself. */
    <T> Future<T> submit(Callable<T> task) {
        if (closing) throw new IllegalStateException("worker " + name + " is closing");
        FutureTask<T> f = new FutureTask<>(task);
        tasks.add(f);
        Worker w = worker;
        if (w != null) w.signal();
        return f;
    }

    /** Connects to {@code peer} as endpoint {@code endpoint}, recording failures. */
    void connect(String endpoint, WorkerAddress peer) {
        run(() -> {
            Endpoint e = worker.connect(peer, (ep, cause) ->
                    failures.add(new Failure(endpoint, System.nanoTime(), cause.getClass().getSimpleName(), cause.reason(),
                            String.valueOf(cause.getMessage()))));
            if (endpoints.putIfAbsent(endpoint, e) != null) throw new IllegalArgumentException("endpoint '" + endpoint + "' exists");
        });
    }

    /** Stops (true) or resumes (false) progressing between tasks: a receiver that falls behind. */
    void pause(boolean pause) {
        paused = pause;
        Worker w = worker;
        if (!pause && w != null) w.signal();
    }

    /** Error handler calls so far, in order. */
    List<Failure> failures() {
        return List.copyOf(failures);
    }

    /** Exceptions {@code progress()} or {@code await} threw between tasks (e.g. from handlers). */
    List<Throwable> progressErrors() {
        return List.copyOf(progressErrors);
    }

    /** Stops the thread after the task it runs, closes the worker (and the conduit if owned). */
    @Override
    public void close() {
        closing = true;
        Worker w = worker;
        if (w != null) w.signal();
        try {
            finished.get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            throw new IllegalStateException("worker " + name + " did not close: " + e, e);
        }
    }

    @Override
    public String toString() {
        return "WorkerHost[" + name + "]";
    }
}
