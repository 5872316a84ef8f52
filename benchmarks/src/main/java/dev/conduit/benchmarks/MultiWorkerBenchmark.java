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
import java.util.concurrent.TimeUnit;
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
            toEcho = shared.connect(echoAddress.join());
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
            roundTrip(); // fails here, not in the measurement, if nothing comes back
        } catch (RuntimeException | Error e) {
            try {
                close();
            } catch (IOException | RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException, InterruptedException {
        stop = true;
        try {
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
        StringBuilder where = new StringBuilder();
        for (StackTraceElement frame : thread.getStackTrace()) where.append("\n    at ").append(frame);
        throw new IllegalStateException("the " + thread.getName() + " thread did not end within " + THREAD_END.toSeconds()
                + " s of the trial's end over " + plugin + " (mode " + mode + "), " + thread.getState() + ":" + where, threadFailure);
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
