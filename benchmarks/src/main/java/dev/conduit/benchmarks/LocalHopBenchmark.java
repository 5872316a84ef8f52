package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.PayloadEncoder;
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
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The software cost of an active message, without the cost of moving cache lines between cores:
 * one thread owns two {@code SINGLE} workers of one {@code Conduit} connected to each other over
 * one transport, and plays both sides of a ping-pong. {@code roundTrip} (ns/op) sends a ping,
 * progresses the receiver (whose handler sends the pong), then progresses the sender (whose
 * handler counts it), again until the pong came: two messages, each through everything a message goes through between
 * processes (the endpoint's guards, the transport's send, its receive queue, the dispatch to the
 * handler), but with every line in this core's cache. Half of it is what one message costs in
 * instructions; what a two-process ping-pong costs beyond it is the hardware's transfers.
 * {@code stream} is the same for a one-way stream, {@code streamEncoded} for a stream of zero-copy
 * sends, {@code streamFanIn} for a stream from two senders whose messages interleave in the
 * receiver's queue, {@code idleProgress} a poll that finds nothing.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
@State(Scope.Thread)
public class LocalHopBenchmark {

    static final int PING = 1;
    static final int PONG = 2;
    static final int DATA = 3;
    /** The longest batch of a stream: what one poll hands over at most. */
    static final int MAX_BATCH = 64;

    @Param({"posix", "memfd"})
    public String plugin;

    @Param({"8"})
    public int size;

    private Path dir;
    private Conduit conduit;
    private Worker client;
    private Worker server;
    Endpoint toServer; // its test reads what waits in its local queue
    private Endpoint toClient;
    /** A second sender to the server, for {@link #streamFanIn}. */
    private Worker otherClient;
    private Endpoint otherToServer;
    private Arena arena;
    private MemorySegment payload;
    /**
     * The stream's receiver progresses once per this many messages: {@value #MAX_BATCH}, or fewer when that many
     * payloads would not fit in the connection's bounce ring, so that every send of a batch goes through the transport
     * rather than into the endpoint's local queue (which the hand-over would then copy again).
     */
    int batch;
    private long pongs;
    private long streamed;
    private long received;

    @Setup(Level.Trial)
    public void open() throws IOException {
        if (size < 0) throw new IllegalArgumentException("-p size must be 0 or more bytes: " + size);
        dir = BenchmarkDirectory.create();
        try {
            conduit = MessagingSession.conduitOver(plugin, dir);
            client = conduit.newWorker(ThreadMode.SINGLE);
            server = conduit.newWorker(ThreadMode.SINGLE);
            toServer = client.connect(server.address());
            toClient = server.connect(client.address());
            otherClient = conduit.newWorker(ThreadMode.SINGLE);
            otherToServer = otherClient.connect(server.address());
            arena = Arena.ofShared();
            payload = arena.allocate(size);
            server.onMessage(PING, m -> toClient.send(PONG, payload));
            client.onMessage(PONG, m -> pongs++);
            server.onMessage(DATA, m -> received++);
            // An endpoint's largest payload is its bounce ring's capacity (shm's bounce.size, whatever sets it), which the
            // payloads of a batch share until the hand-over releases them.
            // One payload fewer than the ring holds: a payload that does not fit before the ring's end skips what is left
            // there, less than one payload (a batch of exactly 64 of 64 KiB in 4 MiB left one send waiting now and then).
            batch = (int) Math.max(1, Math.min(MAX_BATCH, toServer.maxPayloadSize() / Math.max(1, size) - 1));
            // Fails here, not in the measurement, if nothing comes back. Above inline.max a payload takes the bounce ring,
            // which the receiver maps on a thread of its own at the connection's first large message: the ping's and the
            // pong's take a few progress() calls, every later one a single call, as an inline message.
            toServer.send(PING, payload);
            for (int i = 0; i < 100_000 && pongs == 0; i++) {
                server.progress();
                client.progress();
                if (i >= 1_000) java.util.concurrent.locks.LockSupport.parkNanos(10_000);
            }
            if (pongs != 1) {
                throw new IllegalStateException("no pong to one ping of " + size + " bytes over " + plugin + " in 100,000 rounds of "
                        + "progress (seconds)");
            }
        } catch (RuntimeException | Error e) {
            Trials.tearDownAfter(e, this::close);
            throw e;
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        try {
            if (conduit != null) conduit.close(); // its workers, and their endpoints, with it
            if (arena != null) arena.close();
        } finally {
            BenchmarkDirectory.delete(dir);
        }
    }

    /** A ping and its pong, both on this thread: two messages. */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long roundTrip() {
        long answered = pongs + 1;
        toServer.send(PING, payload);
        server.progress();
        client.progress();
        if (pongs != answered) awaitPong(answered);
        return pongs;
    }

    /**
     * Progresses both sides until the op's pong came: one progress() handles at most {@value #MAX_BATCH} records (fewer
     * when the transport's budget between two reads of the clock is nearly spent), so that a ping behind others, or a
     * pong not yet in, would otherwise leave the op counted with its round trip unfinished and time the next op's.
     */
    private void awaitPong(long answered) {
        for (int rounds = 0; pongs < answered; rounds++) {
            if (rounds == 1_000_000) {
                throw new IllegalStateException("the client got " + pongs + " of " + answered + " pongs to pings of " + size
                        + " bytes over " + plugin + " in a million rounds of progress() (" + toServer.pending()
                        + " pings wait in the client's local queue)");
            }
            server.progress();
            client.progress();
        }
    }

    /**
     * One message of a stream: sent, and every {@link #batch}th time the batch is handed over
     * ({@link #handOver}). What a streamed message costs in instructions, with no transfer between
     * cores.
     */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long stream() {
        toServer.send(DATA, payload);
        if (++streamed % batch == 0) handOver();
        return received;
    }

    /**
     * {@link #stream} from two senders (two workers, so two connections) taking turns, so that no
     * two messages in a row in the receiver's queue are of one connection: what a receiver pays to
     * find each message's connection when many peers send to it at once.
     */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long streamFanIn() {
        ((++streamed & 1) == 0 ? toServer : otherToServer).send(DATA, payload);
        if (streamed % batch == 0) handOver();
        return received;
    }

    /**
     * The encoders {@link #streamEncoded} takes turns with: {@code classes} of them, one, as a
     * benchmark has, or three, as an application with a few message types has (a call site that sees
     * more than two classes does not inline them). Each writes 8 bytes and returns the target's whole
     * length. {@code form} {@code view}: they implement only the call with a target view, which a
     * send above 1 KiB, written in place, makes per send; {@code ranged}: they are
     * {@code PayloadEncoder.Ranged}, written for the ranged call
     * ({@link PayloadEncoder#encode(MemorySegment, long, long)}), which needs no view.
     */
    @State(Scope.Thread)
    public static class Encoders {
        @Param({"1", "3"})
        public int classes;

        @Param({"view", "ranged"})
        public String form;

        PayloadEncoder[] turns;

        @Setup(Level.Trial)
        public void make(BenchmarkParams params) {
            // A value JMH passes through unchecked would otherwise run another case under its name (a form other than
            // "ranged" measured the view form) or fail in the measured call with an index error.
            if (!form.equals("view") && !form.equals("ranged")) {
                throw new IllegalArgumentException("-p form must be view or ranged: " + form);
            }
            if (classes < 1 || classes > 3) throw new IllegalArgumentException("-p classes must be 1, 2 or 3: " + classes);
            int size = Integer.parseInt(params.getParam("size"));
            if (size < 8) throw new IllegalArgumentException("streamEncoded writes 8 bytes: -p size must be 8 or more: " + size);
            PayloadEncoder[] kinds = form.equals("ranged")
                    ? new PayloadEncoder[] {
                            (PayloadEncoder.Ranged) (memory, offset, maxLength) -> {
                                memory.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, 1L); return maxLength; },
                            (PayloadEncoder.Ranged) (memory, offset, maxLength) -> {
                                memory.set(ValueLayout.JAVA_INT_UNALIGNED, offset, 2); return maxLength; },
                            (PayloadEncoder.Ranged) (memory, offset, maxLength) -> {
                                memory.set(ValueLayout.JAVA_BYTE, offset, (byte) 3); return maxLength; }}
                    : new PayloadEncoder[] {
                            target -> { target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 1L); return target.byteSize(); },
                            target -> { target.set(ValueLayout.JAVA_INT_UNALIGNED, 0, 2); return target.byteSize(); },
                            target -> { target.set(ValueLayout.JAVA_BYTE, 0, (byte) 3); return target.byteSize(); }};
            turns = new PayloadEncoder[MAX_BATCH];
            for (int i = 0; i < MAX_BATCH; i++) turns[i] = kinds[i % classes];
        }
    }

    /** {@link #stream} with a zero-copy send ({@code size} of at least 8 bytes), its encoders taking turns. */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long streamEncoded(Encoders encoders) {
        toServer.send(DATA, MemorySegment.NULL, size, encoders.turns[(int) (streamed % MAX_BATCH)]);
        if (++streamed % batch == 0) handOver();
        return received;
    }

    /**
     * The receiver takes the batch, releasing its payloads' room, and the senders progress as a
     * sender between its sends does. Fails when a send of the batch waits in its endpoint's local
     * queue: the benchmark would time that queue and the hand-over's second copy, not the
     * transport (at 1 MiB it did, for 60 of each 64 sends, before {@link #batch} held a batch to
     * what the bounce ring holds).
     */
    private void handOver() {
        long waiting = toServer.pending() + otherToServer.pending();
        if (waiting > 0) {
            throw new IllegalStateException(waiting + " of a batch of " + batch + " messages of " + size + " bytes over " + plugin
                    + " wait in the local queue: the batch does not fit in what the transport holds");
        }
        // One progress() hands over at most what is left of the transport's budget of records between two reads of the
        // clock (64), so that a batch may take two: the next batch's sends would otherwise find the rest of this one's room
        // in the bounce ring still taken, and wait locally (60 of 63 at 64 KiB, now and then).
        for (int rounds = 0; received < streamed; rounds++) {
            if (rounds == 1_000_000) {
                throw new IllegalStateException("the server took " + received + " of " + streamed + " messages of " + size
                        + " bytes over " + plugin + " in a million calls of progress()");
            }
            server.progress();
        }
        client.progress();
        otherClient.progress();
    }

    /** A {@code progress()} that finds nothing: what a busy-polling worker spins on between messages. */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public int idleProgress() {
        return server.progress();
    }
}
