package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;

/**
 * The second JVM of {@link MessagingBenchmark}:
 * {@code MessagingPeer SHARED_DIR PLUGIN SIZE ACK_EVERY PARENT_PID}.
 *
 * <p>Opens a Conduit on {@code SHARED_DIR} with the one transport {@code PLUGIN} and a {@code SINGLE}
 * worker owned by its main thread, reads the benchmark's address from {@code SHARED_DIR/bench.addr},
 * connects, then publishes its own address as {@code SHARED_DIR/peer.addr} (written to a temporary
 * file and renamed into place, so the reader never sees half of it) and spins on
 * {@code progress()}:
 * <ul>
 *   <li>id 1 (ping): copies the payload into a pre-allocated {@code SIZE}-byte segment and sends it
 *       back as id 2 (pong);</li>
 *   <li>id 3 (stream): copies the payload into another pre-allocated {@code SIZE}-byte segment
 *       (the receiver reads what it gets, as {@code conduit perf}'s am_bw does) and counts it;
 *       every {@code ACK_EVERY}-th, sends id 4 with the count so far as an 8-byte little-endian
 *       long.</li>
 * </ul>
 * Exits when {@code SHARED_DIR/stop} appears or the process {@code PARENT_PID} is gone (checked every
 * 100 ms, the clock read once per 1,024 polls), so a benchmark JVM that dies never leaves a peer
 * spinning on a core.
 */
public final class MessagingPeer {

    static final String BENCH_ADDRESS = "bench.addr";
    static final String PEER_ADDRESS = "peer.addr";
    static final String STOP = "stop";
    static final int PING = 1, PONG = 2, STREAM = 3, ACK = 4;
    static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /**
     * The echo loop reads the clock once per this many polls (+1). A read per poll costs more than
     * the idle poll itself, and every echo would wait for the read under way when its message came:
     * the benchmark would time the peer's clock along with the transport.
     */
    private static final long CLOCK_EVERY = 1023;

    private MessagingPeer() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: MessagingPeer SHARED_DIR PLUGIN SIZE ACK_EVERY PARENT_PID");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        String plugin = args[1];
        int size = Integer.parseInt(args[2]);
        long ackEvery = Long.parseLong(args[3]);
        ProcessHandle parent = ProcessHandle.of(Long.parseLong(args[4])).orElse(null);

        try (Conduit conduit = Conduit.builder().transports(plugin).sharedDirectory(dir).build();
             Worker worker = conduit.newWorker(ThreadMode.SINGLE);
             Arena arena = Arena.ofConfined()) {
            WorkerAddress bench = WorkerAddress.fromBytes(Files.readAllBytes(dir.resolve(BENCH_ADDRESS)));
            // The benchmark's close fails this endpoint (an orderly close): the peer's cue to end, not a WARNING in the
            // middle of JMH's result line, which a connect without an error handler would log.
            boolean[] benchClosed = {false};
            Endpoint ep = worker.connect(bench, (endpoint, cause) -> benchClosed[0] = true);
            MemorySegment echo = arena.allocate(Math.max(size, 1)).asSlice(0, size);
            MemorySegment ack = arena.allocate(8);
            long[] received = {0};
            worker.onMessage(PING, m -> {
                m.copyPayload(0, echo, 0, m.payloadSize());
                ep.send(PONG, echo);
            });
            MemorySegment streamed = arena.allocate(Math.max(size, 1)).asSlice(0, size);
            worker.onMessage(STREAM, m -> {
                m.copyPayload(0, streamed, 0, m.payloadSize()); // the receiver reads what it gets, as conduit perf's am_bw does
                long n = ++received[0];
                if (n % ackEvery == 0) {
                    ack.set(LONG_LE, 0, n);
                    ep.send(ACK, ack);
                }
            });
            publish(dir, PEER_ADDRESS, worker.address().toBytes());

            Path stop = dir.resolve(STOP);
            long nextCheck = System.nanoTime();
            for (long polls = 0; ; polls++) {
                if (worker.progress() == 0) Thread.onSpinWait();
                if ((polls & CLOCK_EVERY) == 0) {
                    long now = System.nanoTime();
                    if (now - nextCheck >= 0) {
                        nextCheck = now + TimeUnit.MILLISECONDS.toNanos(100);
                        if (benchClosed[0] || Files.exists(stop) || (parent != null && !parent.isAlive())) break;
                    }
                }
            }
            for (int i = 0; i < 1000 && !benchClosed[0] && ep.pending() > 0; i++) worker.progress();
            ep.close();
        }
    }

    /**
     * Publishes {@code worker}'s address in {@code dir} and starts a peer JVM like this one ({@link PeerJvm}) for
     * {@code plugin}, echoing up to {@code size} bytes.
     */
    static Process start(Path dir, String plugin, int size, long ackEvery, Worker worker) throws IOException {
        publish(dir, BENCH_ADDRESS, worker.address().toBytes());
        return new ProcessBuilder(PeerJvm.command(MessagingPeer.class, dir.toString(), plugin, Integer.toString(size),
                Long.toString(ackEvery), Long.toString(ProcessHandle.current().pid())))
                .inheritIO().start();
    }

    /**
     * Waits for the peer's address (it publishes it once it has connected to {@code worker}:
     * progresses meanwhile, in case its handshake needs this side) and connects to it. A peer that fails afterwards (dies, is
     * killed, or, frozen, leaves a send waiting for room in its queue or bounce ring past the transport's heartbeat
     * timeout) fails the {@code progress()} that learns of it with
     * {@link #peerFailed}: a benchmark waits for its echo or acknowledgement in a loop of {@code progress()}, which would
     * otherwise spin for good, since JMH's iteration timeout only interrupts the thread and that loop never looks.
     */
    static Endpoint connect(Path dir, Process peer, Worker worker) throws IOException, InterruptedException {
        Path peerAddress = dir.resolve(PEER_ADDRESS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.exists(peerAddress)) {
            if (!peer.isAlive()) {
                throw new IllegalStateException("the peer JVM (" + MessagingPeer.class.getSimpleName() + ", pid " + peer.pid()
                        + ", " + PeerJvm.howItEnded(peer) + ") ended before it published its address; its output, above, says why");
            }
            if (System.nanoTime() - deadline > 0) throw new IllegalStateException("no peer address after 60 s in " + dir);
            worker.progress();
            Thread.sleep(1);
        }
        return worker.connect(WorkerAddress.fromBytes(Files.readAllBytes(peerAddress)), (endpoint, cause) -> {
            throw peerFailed(peer, cause);
        });
    }

    /** Why the trial cannot go on: {@code peer} failed, as {@code cause} says, and how its process ended if it has. */
    static IllegalStateException peerFailed(Process peer, PeerFailedException cause) {
        return new IllegalStateException("the peer JVM (" + MessagingPeer.class.getSimpleName() + ", pid " + peer.pid() + ", "
                + PeerJvm.howItEnded(peer) + ") failed during the trial, so no echo or acknowledgement will come: " + cause.getMessage()
                + ". Its output, above, says why if it failed by itself", cause);
    }

    /** Stops {@code peer} (if any) and removes {@code dir} (if any). */
    static void stop(Path dir, Process peer) throws IOException, InterruptedException {
        try {
            if (peer != null) {
                Files.write(dir.resolve(STOP), new byte[0]);
                if (!peer.waitFor(5, TimeUnit.SECONDS)) {
                    peer.destroyForcibly();
                    peer.waitFor(5, TimeUnit.SECONDS);
                }
            }
        } finally {
            BenchmarkDirectory.delete(dir);
        }
    }

    /** Writes {@code bytes} to {@code dir/name} atomically: a temporary file renamed into place. */
    static void publish(Path dir, String name, byte[] bytes) throws IOException {
        Path tmp = dir.resolve(name + ".tmp");
        Files.write(tmp, bytes);
        Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    }
}
