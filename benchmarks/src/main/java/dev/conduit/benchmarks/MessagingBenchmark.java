package dev.conduit.benchmarks;

import dev.conduit.Endpoint;
import dev.conduit.Worker;
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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

/**
 * Active messages between two processes: this JVM and a peer JVM ({@link MessagingPeer}) that
 * {@link #open()} starts for every trial ({@link MessagingSession}), over one transport ({@code memfd} or {@code posix}).
 *
 * <ul>
 *   <li>{@code pingPong} ({@code AverageTime}, ns/op): send id 1 with {@code size} bytes, progress
 *       until the peer's echo (id 2, same size) has arrived, with a spin-wait hint after each
 *       {@code progress()} that found nothing, on both sides (since 2026-12-05, as
 *       {@code Worker.progress()}'s javadoc recommends and {@code conduit perf} polls). One op = one round trip; one-way
 *       latency is half of it. Both sides read what they receive, as {@code conduit perf}'s am_lat
 *       does: the peer copies the ping's payload out, and this side the echo's (until 2026-12-03
 *       this side only counted the echo, so that from 4 KiB a round trip left out the echo's
 *       payload brought to this core).</li>
 *   <li>{@code stream} ({@code Throughput}, ops/s = messages/s): send one id-3 message of
 *       {@code size} bytes and progress once. The peer copies each payload out, as {@code conduit
 *       perf}'s am_bw receiver does (until 2026-12-03 it only counted the message), and acknowledges
 *       every {@value #ACK_EVERY}-th
 *       message (id 4 carrying its count); the sender never has more than {@value #WINDOW}
 *       messages unacknowledged: when it has, it progresses until an acknowledgement arrives.</li>
 * </ul>
 *
 * <p>Both JVMs use a {@code SINGLE} worker owned by the thread that spins on it (here the JMH
 * benchmark thread: {@link Setup} of a {@code Scope.Thread} state runs on it). The measured path
 * allocates nothing: payloads are segments allocated in setup, the handlers read the message
 * through its accessors only. The shared directory is a fresh directory under {@code shared.dir} ({@link BenchmarkDirectory}),
 * where the two workers' addresses are exchanged as files ({@code bench.addr}, {@code peer.addr})
 * and which {@link #close()} removes after stopping the peer. On a 2-core machine the peer
 * spinning on one core and the benchmark thread on the other leave nothing for JMH, the JITs and
 * GCs, which preempt one of them: expect noise.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
@State(Scope.Thread)
public class MessagingBenchmark {

    /** The peer acknowledges every ACK_EVERY-th stream message. */
    static final long ACK_EVERY = 16;
    /** At most WINDOW stream messages are sent and not yet acknowledged. */
    static final long WINDOW = 64;

    @Param({"memfd", "posix"})
    public String plugin;

    @Param({"8", "4096", "65536"})
    public int size;

    private MessagingSession session;
    private Worker worker;
    private Endpoint endpoint;
    private MemorySegment payload;

    private long pongs;
    /** Where each echo's payload is copied: this side reads what it receives. */
    private MemorySegment echoed;
    private long sent;
    private long acked;

    @Setup(Level.Trial)
    public void open() throws IOException, InterruptedException {
        session = MessagingSession.open(plugin, size, ACK_EVERY, w -> {
            w.onMessage(MessagingPeer.PONG, m -> {
                m.copyPayload(0, echoed, 0, m.payloadSize());
                pongs++;
            });
            w.onMessage(MessagingPeer.ACK, m -> acked = m.payloadLong(0));
        });
        worker = session.worker();
        endpoint = session.endpoint();
        try {
            payload = session.arena().allocate(size);
            echoed = session.arena().allocate(size);
            for (long i = 0; i < size; i++) payload.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            pingPong(); // fails here, not in the measurement, if nothing comes back
        } catch (RuntimeException | Error e) {
            Trials.tearDownAfter(e, session::close);
            throw e;
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException, InterruptedException {
        session.close();
    }

    /** One round trip: ping with {@code size} bytes, progress until the echo has arrived. */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long pingPong() {
        long target = pongs + 1;
        endpoint.send(MessagingPeer.PING, payload);
        while (pongs < target) {
            if (worker.progress() == 0) Thread.onSpinWait();
        }
        return pongs;
    }

    /** One streamed message of {@code size} bytes, at most {@link #WINDOW} unacknowledged. */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    public long stream() {
        while (sent - acked >= WINDOW) worker.progress();
        endpoint.send(MessagingPeer.STREAM, payload);
        sent++;
        worker.progress();
        return sent;
    }
}
