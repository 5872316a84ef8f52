package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ThreadMode;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@code MULTI} worker shared by threads, as an application shares one: over memfd or posix,
 * which declare only {@code SERIALIZED}, the runtime's lock serializes its calls
 * ({@link ThreadPolicy#RUNTIME_LOCK}). A thread of the worker's own ({@code receiver}) progresses
 * it, busy-polling ({@code mode=busy}) or sleeping in {@code await} between polls
 * ({@code mode=await}); the benchmark thread sends a ping on the worker's endpoint to an echoing
 * {@code SINGLE} worker in another thread and waits until the receiver thread has delivered the
 * pong. {@code roundTrip} (µs/op) is that round trip: the benchmark thread's send waits for the
 * lock the receiver thread holds, so it measures how soon the lock changes hands (a holder inside
 * a short {@code progress()}, or asleep in the transport under the lock), plus the echo thread's
 * wakeup from its own {@code await}.
 *
 * <p>Three threads on this project's two cores: the figures include the scheduler's share, and
 * compare builds on one machine, not with a ping-pong between two processes.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
@State(Scope.Benchmark)
public class MultiWorkerBenchmark {

    static final int PING = 1;
    static final int PONG = 2;
    /** How long the tear-down waits for a thread of the trial to end: a hang guard, 100 times the longest it sleeps between stop checks. */
    static final Duration THREAD_END = Duration.ofSeconds(10);
    /**
     * How long a round trip may go without a pong before the watchdog ends the fork: a hang guard, twice the round trip's
     * own 10 s check, which fails the trial more gently wherever it can (once the send has returned).
     */
    static final Duration STUCK = Duration.ofSeconds(20);

    @Param({"posix"})
    public String plugin;

    @Param({"await", "busy"})
    public String mode;

    private Path dir;
    private Conduit conduit;
    private Worker shared;
    private Endpoint toEcho;
    private Arena arena;
    private MemorySegment payload;
    private final AtomicLong pongs = new AtomicLong();
    private volatile boolean stop;
    private Thread receiver;
    private Thread echo;
    private Thread watchdog;
    /** What ended the echo or receiver thread early: named when no pong comes, not lost on stderr. */
    private volatile Throwable threadFailure;

    @Setup(Level.Trial)
    public void open(BenchmarkParams params) throws IOException, InterruptedException {
        // The state, and so the pong count, is the benchmark's: with a second benchmark thread a pong would end whichever
        // round trip waits for that count, its own or the other's, and each would be timed shorter than it is.
        if (params.getThreads() != 1) {
            throw new IllegalStateException("MultiWorkerBenchmark times one benchmark thread's round trips over the shared worker; "
                    + "run it with one (no -t), not " + params.getThreads());
        }
        // Any other value would run the busy case under its name.
        if (!mode.equals("await") && !mode.equals("busy")) throw new IllegalArgumentException("-p mode must be await or busy: " + mode);
        dir = BenchmarkDirectory.create();
        try {
            conduit = MessagingSession.conduitOver(plugin, dir);
            shared = conduit.newWorker(ThreadMode.MULTI);
            if (shared.threadPolicy() != ThreadPolicy.RUNTIME_LOCK) {
                throw new IllegalStateException(plugin + " gives a MULTI worker " + shared.threadPolicy() + ", not the runtime lock this measures");
            }
            arena = Arena.ofShared();
            payload = arena.allocate(8);
            shared.onMessage(PONG, m -> pongs.incrementAndGet());
            CompletableFuture<WorkerAddress> echoAddress = new CompletableFuture<>();
            WorkerAddress sharedAddress = shared.address();
            echo = Thread.ofPlatform().name("echo").daemon().start(() -> {
                try (Worker w = conduit.newWorker(ThreadMode.SINGLE)) {
                    Endpoint back = w.connect(sharedAddress);
                    w.onMessage(PING, m -> back.send(PONG, payload));
                    echoAddress.complete(w.address());
                    while (!stop) {
                        if (w.progress() == 0) w.await(Duration.ofMillis(100));
                    }
                } catch (RuntimeException | Error e) {
                    threadFailure = new IllegalStateException("the echo thread failed: " + e, e);
                    echoAddress.completeExceptionally(e);
                }
            });
            toEcho = shared.connect(awaitEchoAddress(echoAddress));
            boolean sleeps = mode.equals("await");
            receiver = Thread.ofPlatform().name("receiver").daemon().start(() -> {
                try {
                    while (!stop) {
                        if (shared.progress() == 0 && sleeps) shared.await(Duration.ofMillis(100));
                    }
                } catch (RuntimeException | Error e) {
                    threadFailure = new IllegalStateException("the receiver thread failed: " + e, e);
                }
            });
            Thread benchmark = Thread.currentThread(); // JMH's worker thread: it runs the trial's set-up and every round trip
            watchdog = Thread.ofPlatform().name("watchdog").daemon().start(() -> watch(benchmark));
            roundTrip(); // fails here, not in the measurement, if nothing comes back
        } catch (RuntimeException | Error e) {
            Trials.tearDownAfter(e, this::close);
            throw e;
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException, InterruptedException {
        stop = true;
        try {
            if (watchdog != null) watchdog.interrupt();
            if (shared != null) shared.signal();
        } finally {
            try {
                awaitEnd(receiver);
                awaitEnd(echo);
                if (conduit != null) conduit.close();
                if (arena != null) arena.close();
            } finally {
                BenchmarkDirectory.delete(dir);
            }
        }
    }

    /**
     * Waits for {@code thread} (if any) to end, which it does within its 100 ms await once stop is set, signalled or not;
     * one stuck in a call that never returns fails the trial, naming it and where it is, instead of hanging the run. The
     * Conduit and the memory it may be using are left to the fork's exit (the threads are daemons).
     */
    private void awaitEnd(Thread thread) throws InterruptedException {
        if (thread == null || thread.join(THREAD_END)) return;
        throw new IllegalStateException("the " + thread.getName() + " thread did not end within " + THREAD_END.toSeconds()
                + " s of the trial's end over " + plugin + " (mode " + mode + "), " + where(thread), threadFailure);
    }

    /** The echo thread's worker address, once it has one: within {@link #THREAD_END}, or the set-up fails naming where that thread is. */
    private WorkerAddress awaitEchoAddress(CompletableFuture<WorkerAddress> address) throws InterruptedException {
        try {
            return address.get(THREAD_END.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the echo thread failed before it had an address: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("the echo thread had no worker address within " + THREAD_END.toSeconds() + " s over "
                    + plugin + " (mode " + mode + "), " + where(echo));
        }
    }

    /**
     * Ends the fork, naming where each thread is, once a round trip has gone {@link #STUCK} without a pong. Its send waits
     * for the shared worker's runtime lock, which the receiver thread holds inside {@code progress()} and while asleep in
     * {@code await()}; that wait ignores interrupts, so a receiver stuck there held the run for good: the round trip's own
     * check runs only once the send returns, and JMH's iteration timeout only interrupts, again and again. Ending the fork
     * is the one way out; its host reports the failure with this output. It looks once a second at the pong count, which
     * the round trips keep anyway: the measured path does nothing for it.
     */
    private void watch(Thread benchmark) {
        long seen = pongs.get();
        long since = System.nanoTime();
        try {
            while (!stop) {
                Thread.sleep(1000);
                long now = pongs.get();
                if (now != seen) {
                    seen = now;
                    since = System.nanoTime();
                } else if (System.nanoTime() - since > STUCK.toNanos() && !stop && inRoundTrip(benchmark)) {
                    endFork(benchmark);
                }
            }
        } catch (InterruptedException e) {
            // the trial's tear-down: nothing left to watch
        }
    }

    /** Whether {@code thread} is inside {@link #roundTrip}: between iterations no pong is due. */
    private static boolean inRoundTrip(Thread thread) {
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getMethodName().equals("roundTrip") && frame.getClassName().equals(MultiWorkerBenchmark.class.getName())) return true;
        }
        return false;
    }

    /**
     * Says why on the fork's stderr, which JMH's host shows, removes the trial's directory (halting runs no shutdown hook)
     * and halts: {@code System.exit} would run the hooks, and one that waits for a lock the stuck thread holds would hang
     * the exit instead.
     */
    private void endFork(Thread benchmark) {
        System.err.println("MultiWorkerBenchmark over " + plugin + " (mode " + mode + "): no pong for " + STUCK.toSeconds() + " s, "
                + "and the round trip cannot end: its send waits for the shared worker's runtime lock, which the receiver thread "
                + "holds while inside progress() or asleep in await(), and that wait ignores interrupts. Ending this fork (exit "
                + "status 3) rather than hang the run. The benchmark thread ('" + benchmark.getName() + "'), " + where(benchmark)
                + "\nThe receiver thread, " + where(receiver) + "\nThe echo thread, " + where(echo)
                + (threadFailure == null ? "" : "\nEarlier: " + threadFailure));
        System.err.flush();
        try {
            BenchmarkDirectory.delete(dir);
        } catch (IOException | RuntimeException e) {
            System.err.println("could not remove the trial's directory " + dir + ": " + e);
            System.err.flush();
        }
        Runtime.getRuntime().halt(3);
    }

    /** {@code thread}'s state and stack, for a message about where it stopped. */
    private static String where(Thread thread) {
        StringBuilder where = new StringBuilder().append(thread.getState()).append(':');
        for (StackTraceElement frame : thread.getStackTrace()) where.append("\n    at ").append(frame);
        return where.toString();
    }

    /** A ping sent on the shared worker from this thread, and its pong delivered by the receiver thread. */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    public long roundTrip() {
        long target = pongs.get() + 1;
        toEcho.send(PING, payload);
        long deadline = 0;
        for (int i = 1; pongs.get() < target; i++) {
            Thread.onSpinWait();
            if ((i & 0xFFFF) == 0) {
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + TimeUnit.SECONDS.toNanos(10);
                } else if (now - deadline > 0) {
                    throw new IllegalStateException("no pong within 10 s over " + plugin + " (mode " + mode + ")"
                            + (threadFailure == null ? "" : ": " + threadFailure.getMessage()), threadFailure);
                }
            }
        }
        return target;
    }
}
