package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
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

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * What a growing backlog costs the sending thread: one {@code SINGLE} worker sends to another of
 * the same {@code Conduit} that does not progress, so once the transport has no room (the peer's
 * receive queue, the connection's bounce ring) every send copies its message, of 1 byte to
 * {@code maxSize}, into the endpoint's local queue. {@code send} is sampled one call at a time
 * ({@code SampleTime}): its tail is the queue's growth and the collector's pauses over the backlog,
 * which is live data. Once the backlog reaches {@code backlog} bytes the receiver drains it, outside
 * the measurement, and it grows again.
 */
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 5, time = 5)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
@State(Scope.Thread)
public class BacklogBenchmark {

    static final int DATA = 1;

    @Param({"memfd"})
    public String plugin;

    @Param({"65536"})
    public int maxSize;

    @Param({"268435456"})
    public long backlog;

    private Path dir;
    private Conduit conduit;
    private Worker sender;
    private Worker receiver;
    private Endpoint toReceiver;
    private Arena arena;
    private MemorySegment payload;
    private final SplittableRandom random = new SplittableRandom(1);

    @Setup(Level.Trial)
    public void open() throws IOException {
        if (maxSize < 1) throw new IllegalArgumentException("-p maxSize must be 1 or more bytes: " + maxSize);
        if (backlog < 1) throw new IllegalArgumentException("-p backlog must be 1 or more bytes: " + backlog);
        dir = BenchmarkDirectory.create();
        try {
            conduit = MessagingSession.conduitOver(plugin, dir);
            sender = conduit.newWorker(ThreadMode.SINGLE);
            receiver = conduit.newWorker(ThreadMode.SINGLE);
            receiver.onMessage(DATA, m -> { });
            toReceiver = sender.connect(receiver.address());
            arena = Arena.ofShared();
            payload = arena.allocate(maxSize);
        } catch (RuntimeException | Error e) {
            Trials.tearDownAfter(e, this::close);
            throw e;
        }
    }

    /** Drains a full backlog before the next send: not measured. */
    @Setup(Level.Invocation)
    public void drainAtTheBound() {
        if (toReceiver.pendingBytes() < backlog) return;
        while (toReceiver.pending() > 0) {
            receiver.progress();
            sender.progress();
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        try {
            if (conduit != null) conduit.close();
            if (arena != null) arena.close();
        } finally {
            BenchmarkDirectory.delete(dir);
        }
    }

    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    public void send() {
        toReceiver.send(DATA, MemorySegment.NULL, payload.asSlice(0, 1 + random.nextInt(maxSize)));
    }
}
