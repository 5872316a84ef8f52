package dev.conduit.tools;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hostile server of a {@link PerfClient} (one a user reached with {@code --connect}, or a process that replaced a server's
 * bootstrap file): a bare worker that answers each of the client's messages, and each put of put_lat, as conduit perf's server
 * does, or lies (WELCOME refused or cut short; READY refused, of another phase, cut short, or with an unopenable region handle;
 * a PONG longer or shorter than its PING; an ACK of another count or cut short; an ENDED of another phase or cut short; a
 * put_lat answer with another marker, or cut short of it; FAILED instead of an answer), stays silent, or answers and then
 * ends (its worker closes). The client runs with {@code --peers 2}: its idle worker connects after WELCOME, and its files
 * too must be gone at the end. Whatever the server does, the client's run ends in rows or a {@link ConduitException} naming
 * the cause (its error line): never another exception, an {@code Error} or a hang past its {@code --timeout}, and it leaves
 * nothing in the shared directory. A row is skipped only for the server's refusal of its phase, with the server's words:
 * every size of the plan is one the client can send, so a row skipped for any other reason is a lie the client took for a
 * limit.
 *
 * <p>The input is a script, read as {@code PerfProtocolFuzzTest}'s is (a spent one reads 0): one byte per answer, in the
 * order the client's messages (and put_lat's puts) come, says what the server does (0xFF answers and ends the server; else
 * mod 8: 0 and 4 to 6 answer as conduit perf's server, 1 to 3 lie as above, 7 sends FAILED), with the lie's bytes after it.
 * The empty script is an honest server.
 */
class PerfClientFuzzTest {

    private static final String NAME = "fuzz";
    /**
     * am_lat, am_bw, put_bw, get_lat, ipc_import and put_lat of 8 bytes (put_lat last, so that the scripts written before it
     * mean what they meant), with {@code --peers 2} (one idle worker of the client connected to the server's too) and a
     * --timeout short enough for a fuzzer: a silent server costs it.
     */
    private static final PerfPlan PLAN = new PerfPlan(List.of(PerfTest.AM_LAT, PerfTest.AM_BW, PerfTest.PUT_BW, PerfTest.GET_LAT,
            PerfTest.IPC_IMPORT, PerfTest.PUT_LAT), List.of(8L), 2L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
            Duration.ofMillis(200), 2);
    /** How long the hostile server's thread may take to end once told (a hang guard, not a measurement). */
    private static final long STOP_WAIT_MILLIS = TimeUnit.SECONDS.toMillis(30);
    private static final java.lang.invoke.VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    private static Path shared;
    private static Conduit serverConduit;
    private static Conduit clientConduit;

    @BeforeAll
    static void openConduits() throws IOException {
        shared = Files.createTempDirectory("conduit-perf-client-fuzz-");
        serverConduit = PerfFuzzDirectory.conduit(shared).build();
        clientConduit = PerfFuzzDirectory.conduit(shared).build();
    }

    @AfterAll
    static void closeConduits() {
        try {
            clientConduit.close();
            serverConduit.close();
            assertThat(PerfFuzzDirectory.files(shared)).as("files left in the shared directory").isEmpty();
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    @FuzzTest(maxExecutions = 300, maxDuration = "20s")
    void aHostileServerEndsTheRunInRowsOrAConduitExceptionNamingTheCause(byte[] input) throws Exception {
        HostileServer server = new HostileServer(input);
        try {
            try (PerfClient client = new PerfClient(clientConduit, () -> PerfFuzzDirectory.conduit(shared).build(), server.bootstrap.get(30, TimeUnit.SECONDS),
                    ThreadMode.SINGLE, PLAN, PerfProgress.off(), stop -> { })) {
                List<PerfResult> rows = client.runAll(() -> { }, tested -> { });
                // Every size of the plan is one the transport carries and the server's region holds: a row is skipped only
                // because the server refused its phase, and says the server's words. Any other reason is a lie taken for a
                // limit (a PONG longer than the PING once was), which must end the run naming it.
                for (PerfResult row : rows) {
                    if (row.isSkipped()) {
                        assertThat(server.refusals).as("why %s %d was skipped", row.test(), row.size()).contains(row.skipped());
                    }
                }
            } catch (ConduitException e) {
                assertThat(e.getMessage()).as("the client's error line").isNotBlank();
            }
        } finally {
            server.stop();
        }
        assertThat(server.threw.get()).as("the hostile server's own failure (a bug of this test)").isNull();
        PerfFuzzDirectory.awaitFiles(shared, List.of(), "the shared directory once the client and the server closed");
    }

    /** The server: a worker on a thread of its own, whose handlers answer as the script says. */
    private static final class HostileServer {
        /** The script's byte that answers honestly and then ends the server (its worker closes): before --peers' workers connect, in put_lat, anywhere. */
        private static final int QUITS = 0xFF;
        final CompletableFuture<PerfBootstrap> bootstrap = new CompletableFuture<>();
        final AtomicReference<Throwable> threw = new AtomicReference<>();
        /** The reasons of the phases this server refused: the only reasons a row of this plan may be skipped for. */
        final java.util.Queue<String> refusals = new java.util.concurrent.ConcurrentLinkedQueue<>();
        private final ByteBuffer script;
        private final Thread thread;
        private volatile boolean stop;
        /** Whether it answered as {@link #QUITS} says: its worker closes then, as a server's that ends mid-session. */
        private boolean quit;
        private Endpoint client;
        private Region exported;
        private PeerRegion clientRegion;
        private long count;
        /** The size of the open put_lat phase, whose puts this server answers with its own; 0 outside one. */
        private long putLatSize;
        /** The last byte of the server's region put_lat last answered (the client's marker). */
        private byte answeredMarker;

        HostileServer(byte[] input) {
            script = ByteBuffer.wrap(input).order(ByteOrder.LITTLE_ENDIAN);
            thread = Thread.ofPlatform().daemon().name("hostile-perf-server").start(() -> {
                try {
                    serve();
                } catch (Throwable t) {
                    threw.set(t);
                    bootstrap.completeExceptionally(t);
                }
            });
        }

        void stop() throws InterruptedException {
            stop = true;
            thread.join(STOP_WAIT_MILLIS);
            assertThat(thread.isAlive()).as("the hostile server's thread ends when told").isFalse();
        }

        private void serve() {
            try (Worker worker = serverConduit.newWorker(ThreadMode.SINGLE); Pool pool = serverConduit.pool("posix");
                 Region region = pool.allocate(1 << 20, 64)) {
                worker.onMessage(PerfProtocol.HELLO, m -> {
                    PerfProtocol.Reader r = new PerfProtocol.Reader(m, "HELLO");
                    r.u8();
                    if (client != null) return;
                    PerfProtocol.Hello hello = PerfProtocol.Hello.read(r);
                    client = worker.connect(WorkerAddress.fromBytes(hello.workerAddress()));
                    clientRegion = client.peerRegion(hello.regionHandle());
                    PerfProtocol.Writer honest = new PerfProtocol.Writer().string("").u64(ProcessHandle.current().pid()).string("hostile")
                            .string(ThreadMode.SINGLE.name()).string(worker.threadPolicy().name()).string("posix").u64(1);
                    answer(PerfProtocol.WELCOME, honest.segment(), () -> new PerfProtocol.Writer().string(word(40)).segment());
                });
                worker.onMessage(PerfProtocol.BEGIN, m -> {
                    PerfProtocol.Reader r = new PerfProtocol.Reader(m, "BEGIN");
                    int seq = r.u32();
                    PerfTest test = PerfTest.values()[r.u8()];
                    long size = r.u64();
                    count = 0;
                    byte[] handle = new byte[0];
                    if (test == PerfTest.IPC_IMPORT) {
                        closeExported();
                        exported = pool.allocate(size, 64);
                        handle = exported.exportHandle();
                    } else if (test == PerfTest.PUT_LAT) {
                        region.segment().asSlice(0, size).fill((byte) 0);
                        answeredMarker = 0;
                        putLatSize = size;
                    }
                    answer(PerfProtocol.READY, new PerfProtocol.Writer().u32(seq).u8(1).bytes(handle).segment(), () -> switch (u8() % 3) {
                        case 0 -> {
                            String why = word(40);
                            refusals.add(why);
                            yield new PerfProtocol.Writer().u32(seq).u8(0).string(why).segment();
                        }
                        case 1 -> new PerfProtocol.Writer().u32(seq + 1 + u8()).u8(1).bytes(new byte[0]).segment();
                        default -> new PerfProtocol.Writer().u32(seq).u8(1).bytes(bytes(64)).segment();
                    });
                });
                worker.onMessage(PerfProtocol.PING, m -> {
                    long size = m.payloadSize();
                    answer(PerfProtocol.PONG, MemorySegment.ofArray(m.payloadToArray()),
                            () -> MemorySegment.ofArray(new byte[(int) Math.max(0, size + (u8() % 2 == 0 ? 1 : -1))]));
                });
                worker.onMessage(PerfProtocol.DATA, m -> count++);
                worker.onMessage(PerfProtocol.LAST, m -> {
                    count++;
                    long counted = count;
                    count = 0;
                    answer(PerfProtocol.ACK, new PerfProtocol.Writer().u64(counted).segment(), () -> u8() % 2 == 0
                            ? new PerfProtocol.Writer().u64(u64()).segment() : MemorySegment.ofArray(bytes(7)));
                });
                worker.onMessage(PerfProtocol.PUT_DONE, m -> answer(PerfProtocol.ACK, new PerfProtocol.Writer().u64(1).segment(),
                        () -> u8() % 2 == 0 ? new PerfProtocol.Writer().u64(u64()).segment() : MemorySegment.ofArray(bytes(7))));
                worker.onMessage(PerfProtocol.END, m -> {
                    int seq = new PerfProtocol.Reader(m, "END").u32();
                    closeExported();
                    putLatSize = 0;
                    answer(PerfProtocol.ENDED, new PerfProtocol.Writer().u32(seq).u64(0).segment(), () -> u8() % 2 == 0
                            ? new PerfProtocol.Writer().u32(seq + 1 + u8()).u64(0).segment() : MemorySegment.ofArray(bytes(11)));
                });
                worker.onMessage(PerfProtocol.BYE, m -> { });
                worker.onMessage(PerfProtocol.PEER, m -> { });
                bootstrap.complete(new PerfBootstrap(ProcessHandle.current().pid(), "hostile", ThreadMode.SINGLE.name(), region.size(),
                        worker.address().toBytes(), Map.of("posix", region.exportHandle())));
                while (!stop && !quit) {
                    try {
                        if (putLatSize > 0) answerPut(region.segment());
                        if (worker.progress() == 0) worker.await(Duration.ofMillis(1));
                    } catch (ConduitException clientGone) {
                        // An answer to a client that ended its run and closed: what the client did is what this test judges.
                    }
                }
                if (quit) {
                    // The worker ends, its region stays until the test stops this server: the client, and --peers' idle worker
                    // connecting after WELCOME, meet a server whose worker is gone, not only a region that is.
                    worker.close();
                    while (!stop) java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                }
                if (client != null) client.close();
                closeExported();
            }
        }

        /** Sends {@code honest}, a lie, FAILED, or nothing, as the script's next byte says. */
        private void answer(int id, MemorySegment honest, java.util.function.Supplier<MemorySegment> lie) {
            act(() -> client.send(id, honest), () -> client.send(id, lie.get()));
        }

        /**
         * put_lat's server side: once the client's put changed the last byte of this server's region, puts the same bytes back
         * into the client's region (as conduit perf's server does), or, as the script says, bytes with another marker or cut
         * short of the marker (a lie), FAILED, or nothing.
         */
        private void answerPut(MemorySegment local) {
            byte marker = (byte) BYTE.getVolatile(local, putLatSize - 1); // the client's put, from another thread
            if (marker == answeredMarker) return;
            answeredMarker = marker;
            MemorySegment answer = MemorySegment.ofArray(local.asSlice(0, putLatSize).toArray(ValueLayout.JAVA_BYTE));
            act(() -> putBack(answer), () -> {
                if (u8() % 2 == 0) {
                    answer.set(ValueLayout.JAVA_BYTE, putLatSize - 1, (byte) (marker + 1 + u8() % 255));
                    putBack(answer);
                } else {
                    putBack(answer.asSlice(0, putLatSize - 1));
                }
            });
        }

        private void putBack(MemorySegment bytes) {
            client.put(bytes, clientRegion, 0);
            client.flush();
        }

        /** Does {@code honest}, {@code lie}, sends FAILED, or nothing, as the script's next byte says. */
        private void act(Runnable honest, Runnable lie) {
            int what = u8();
            if (what == QUITS) {
                honest.run();
                quit = true;
                return;
            }
            switch (what % 8) {
                case 1, 2 -> lie.run();
                case 3 -> { } // silent: the client waits up to its --timeout
                case 7 -> client.send(PerfProtocol.FAILED, new PerfProtocol.Writer().string(word(40)).segment());
                default -> honest.run();
            }
        }

        private void closeExported() {
            if (exported != null) exported.close();
            exported = null;
        }

        private int u8() {
            return script.hasRemaining() ? script.get() & 0xFF : 0;
        }

        private long u64() {
            return script.remaining() >= Long.BYTES ? script.getLong() : u8();
        }

        private byte[] bytes(int max) {
            byte[] b = new byte[Math.min(u8() % (max + 1), script.remaining())];
            script.get(b);
            return b;
        }

        /** Letters only: a FAILED or refusal reason is printed, not acted on. */
        private String word(int max) {
            StringBuilder s = new StringBuilder();
            for (byte b : bytes(max)) s.append((char) ('a' + Math.floorMod(b, 26)));
            return s.toString();
        }
    }
}
