package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A {@link PerfClient} against a server that breaks the protocol: a bare worker, on a thread of its own, that welcomes the
 * client and readies its phase as conduit perf's server does, then answers with one message its protocol does not lay out so.
 */
class PerfClientTest {

    /**
     * A PONG larger than the run's largest size, an ACK or an ENDED cut short (a server of another version, or none of conduit
     * perf's, behind {@code --connect}) ends the run with an error naming the malformed message. They were an
     * IndexOutOfBoundsException out of the client's handler (found by review while writing PerfProtocolFuzzTest).
     */
    @ParameterizedTest
    @ValueSource(ints = {PerfProtocol.PONG, PerfProtocol.ACK, PerfProtocol.ENDED})
    void aMalformedAnswerOfTheServerEndsTheRunNamingIt(int malformed) throws Exception {
        PerfTest test = malformed == PerfProtocol.ACK ? PerfTest.AM_BW : PerfTest.AM_LAT;
        PerfPlan plan = new PerfPlan(List.of(test), List.of(8L), 4L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
                Duration.ofSeconds(30), 1);
        againstAServer("a client of a server that breaks the protocol", malformed, (server, clientConduit, b) -> {
            String name = switch (malformed) {
                case PerfProtocol.PONG -> "PONG";
                case PerfProtocol.ACK -> "ACK";
                default -> "ENDED";
            };

            assertThatThrownBy(() -> {
                try (PerfClient client = new PerfClient(clientConduit, () -> clientConduit, b, ThreadMode.SINGLE, plan,
                        PerfProgress.off(), stop -> { })) {
                    client.runAll(() -> { }, rows -> { });
                }
            }).isInstanceOf(ConduitException.class).hasMessageContaining("malformed " + name + " message from the perf peer");
        });
    }

    /**
     * An ACK that contradicts the stream it answers (am_bw: fewer messages counted than were sent; put_bw: the puts' end
     * value not found in the server's region) ends the run naming the phase and what the server found: a stream that did
     * not arrive whole is not measured as if it had.
     */
    @ParameterizedTest
    @EnumSource(value = PerfTest.class, names = {"AM_BW", "PUT_BW"})
    void anAckThatContradictsTheStreamEndsTheRunSayingWhatTheServerFound(PerfTest test) throws Exception {
        PerfPlan plan = new PerfPlan(List.of(test), List.of(8L), 4L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
                Duration.ofSeconds(30), 1);
        againstAServer("a client of a server whose ACK contradicts its stream", PerfProtocol.PING, (server, clientConduit, b) -> {
            assertThatThrownBy(() -> {
                try (PerfClient client = new PerfClient(clientConduit, () -> clientConduit, b, ThreadMode.SINGLE, plan,
                        PerfProgress.off(), stop -> { })) {
                    client.runAll(() -> { }, rows -> { });
                }
            }).isInstanceOf(ConduitException.class).hasMessage(test == PerfTest.AM_BW
                    ? "am_bw 8: the server counted 0 messages, 4 were sent"
                    : "put_bw 8: the server did not find the end value of the phase's puts in its region");
        });
    }

    /**
     * A server whose worker is gone when {@code --peers}' idle workers connect (it ended after WELCOME) is said to be, by
     * the peer and the option: it was the runtime's "cannot connect to WorkerAddress[...]: ... the peer is gone" alone
     * (found by PerfClientFuzzTest).
     */
    @Test
    void aServerGoneWhenThePeersConnectIsSaidByThePeerAndTheOption() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L), 2L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
                Duration.ofSeconds(30), 3);
        againstAServer("a client whose --peers meet a server that is gone", PerfProtocol.PING, (server, clientConduit, b) -> {
            // The server's worker closes as the client makes its first idle worker, after WELCOME: not before it read WELCOME,
            // nor after one idle worker connected.
            Conduit quittingAtTheFirstIdleWorker = new DelegatingConduit(clientConduit) {
                private int workers;

                @Override
                public Worker newWorker(ThreadMode mode) {
                    if (++workers == 2) {
                        server.quit().complete(null);
                        server.quitDone().join();
                    }
                    return super.newWorker(mode);
                }
            };

            assertThatThrownBy(() -> new PerfClient(quittingAtTheFirstIdleWorker, () -> clientConduit, b, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { })).isExactlyInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("idle peer 1 of --peers 3 could not reach the perf server, which had welcomed this client: "
                            + "cannot connect to WorkerAddress[");
        });
    }

    /**
     * A bootstrap whose worker address or region handle does not decode (a file another program wrote, a TCP answer damaged
     * on its way) is said to be the bootstrap's fault, naming the field, and a region that is gone is said to be the perf
     * server's. The address was taken for a server that cannot be reached (for a bootstrap file, "the server that published
     * it may be gone"), and the handle said "invalid Conduit IPC handle: ..." or "export gone: ..." and not whose (found by
     * PerfClientTcpBootstrapFuzzTest and PerfClientFuzzTest).
     */
    @Test
    void aBootstrapWhoseAddressOrRegionHandleDoesNotDecodeOrWhoseRegionIsGoneIsSaidToBe() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L), 2L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
                Duration.ofSeconds(30), 1);
        againstAServer("a client of a bootstrap that does not decode", PerfProtocol.PING, (server, clientConduit, b) -> {
            PerfBootstrap badAddress = new PerfBootstrap(b.pid(), b.host(), b.threadMode(), b.regionSize(), new byte[3], b.regions());
            PerfBootstrap badHandle = new PerfBootstrap(b.pid(), b.host(), b.threadMode(), b.regionSize(), b.address(),
                    Map.of("posix", new byte[3]));
            byte[] freed;
            try (Pool pool = server.conduit().pool("posix"); Region region = pool.allocate(4096)) {
                freed = region.exportHandle();
            }
            PerfBootstrap goneRegion = new PerfBootstrap(b.pid(), b.host(), b.threadMode(), b.regionSize(), b.address(), Map.of("posix", freed));
            String wrong = " (another version of conduit perf wrote the bootstrap, or it was damaged)";

            assertThatThrownBy(() -> new PerfClient(clientConduit, () -> clientConduit, badAddress, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { }))
                    .isExactlyInstanceOf(ConduitException.class).hasMessage("the perf server's bootstrap gives a "
                    + "worker address that does not decode: invalid Conduit worker address: field 'total.length': 3 bytes given; a "
                    + "Conduit worker address has 34 to 4096" + wrong);
            assertThatThrownBy(() -> new PerfClient(clientConduit, () -> clientConduit, badHandle, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { }))
                    .isExactlyInstanceOf(ConduitException.class).hasMessage("the perf server's bootstrap gives a "
                    + "region handle for 'posix' that does not decode: invalid Conduit IPC handle: field 'total.length': 3 bytes given; "
                    + "a Conduit IPC handle has 65 to 4096" + wrong);
            assertThatThrownBy(() -> new PerfClient(clientConduit, () -> clientConduit, goneRegion, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { }))
                    .isExactlyInstanceOf(ConduitException.class).hasMessageStartingWith("the perf server's region "
                    + "through 'posix', which its bootstrap gives, cannot be opened: export gone: ");
        });
    }

    /**
     * A bootstrap that offers no region through the transport the client reached the server's worker by (a server of other
     * transports than the client's) is refused before HELLO, naming that transport, the ones the server offers, and -t.
     */
    @Test
    void aBootstrapWithoutARegionThroughTheTransportOfTheConnectionIsRefusedNamingWhatItOffers() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L), 2L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
                Duration.ofSeconds(30), 1);
        againstAServer("a client of a bootstrap of other transports", PerfProtocol.PING, (server, clientConduit, b) -> {
            PerfBootstrap otherTransport = new PerfBootstrap(b.pid(), b.host(), b.threadMode(), b.regionSize(), b.address(),
                    Map.of("memfd", b.regions().get("posix")));

            assertThatThrownBy(() -> new PerfClient(clientConduit, () -> clientConduit, otherTransport, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { }))
                    .isExactlyInstanceOf(ConduitException.class).hasMessage("the perf server exported no region through plugin "
                    + "'posix' (it offers [memfd]); select the same transports on both sides (-t)");
        });
    }

    /** The server of a test ({@link #serve}) on a thread of its own: its Conduit, and the word that closes its worker. */
    private record Server(Conduit conduit, CompletableFuture<Void> quit, CompletableFuture<Void> quitDone) {
    }

    @FunctionalInterface
    private interface ClientSide {
        void run(Server server, Conduit clientConduit, PerfBootstrap bootstrap) throws Exception;
    }

    /**
     * Runs {@code client} against {@link #serve}'s server of {@code malformed}, each with a Conduit of its own in a fresh
     * shared directory, under a hang guard; then stops the server, which must not have failed.
     */
    private static void againstAServer(String what, int malformed, ClientSide client) throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "conduit-perf-client");
        try {
            HangGuard.await(what, () -> {
                try (Conduit serverConduit = conduit(shared); Conduit clientConduit = conduit(shared)) {
                    Server server = new Server(serverConduit, new CompletableFuture<>(), new CompletableFuture<>());
                    CompletableFuture<PerfBootstrap> bootstrap = new CompletableFuture<>();
                    AtomicReference<Throwable> serverThrew = new AtomicReference<>();
                    CompletableFuture<Void> stop = new CompletableFuture<>();
                    Thread serving = Thread.ofPlatform().daemon().name("perf-server").start(() -> {
                        try {
                            serve(serverConduit, malformed, bootstrap, stop, server.quit(), server.quitDone());
                        } catch (Throwable t) {
                            serverThrew.set(t);
                            bootstrap.completeExceptionally(t);
                        }
                    });
                    try {
                        client.run(server, clientConduit, bootstrap.get(30, TimeUnit.SECONDS));
                    } finally {
                        stop.complete(null);
                        serving.join(TimeUnit.SECONDS.toMillis(30));
                    }
                    assertThat(serverThrew.get()).isNull();
                }
                return null;
            });
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    /**
     * The server's side: WELCOME and READY as conduit perf's server sends them, then {@code malformed} where its answer goes
     * (a PONG a byte longer than its PING, in a run of 8 bytes at most; an ACK of 4 bytes; an ENDED of 4), until {@code stop};
     * its worker closes once {@code quit} is done, and then {@code quitDone} is. Its well-formed ACKs contradict the client: an
     * am_bw stream's counts no message, a put_bw stream's found no end value.
     */
    private static void serve(Conduit conduit, int malformed, CompletableFuture<PerfBootstrap> bootstrap, CompletableFuture<Void> stop,
                              CompletableFuture<Void> quit, CompletableFuture<Void> quitDone) {
        try (Worker worker = conduit.newWorker(ThreadMode.SINGLE); Pool pool = conduit.pool("posix"); Region region = pool.allocate(1 << 20, 64)) {
            AtomicReference<Endpoint> client = new AtomicReference<>();
            worker.onMessage(PerfProtocol.HELLO, m -> {
                PerfProtocol.Reader r = new PerfProtocol.Reader(m, "HELLO");
                r.u8();
                PerfProtocol.Hello hello = PerfProtocol.Hello.read(r);
                Endpoint ep = worker.connect(WorkerAddress.fromBytes(hello.workerAddress()));
                client.set(ep);
                ep.send(PerfProtocol.WELCOME, new PerfProtocol.Writer().string("").u64(ProcessHandle.current().pid()).string("host")
                        .string(ThreadMode.SINGLE.name()).string(worker.threadPolicy().name()).string("posix").u64(1).segment());
            });
            worker.onMessage(PerfProtocol.BEGIN, m -> client.get().send(PerfProtocol.READY,
                    new PerfProtocol.Writer().u32(new PerfProtocol.Reader(m, "BEGIN").u32()).u8(1).bytes(new byte[0]).segment()));
            worker.onMessage(PerfProtocol.PING, m -> client.get().send(PerfProtocol.PONG, MemorySegment.ofArray(malformed == PerfProtocol.PONG
                    ? new byte[(int) m.payloadSize() + 1] : m.payloadToArray())));
            worker.onMessage(PerfProtocol.LAST, m -> client.get().send(PerfProtocol.ACK, MemorySegment.ofArray(new byte[malformed == PerfProtocol.ACK
                    ? 4 : Long.BYTES])));
            worker.onMessage(PerfProtocol.PUT_DONE, m -> client.get().send(PerfProtocol.ACK, MemorySegment.ofArray(new byte[Long.BYTES])));
            worker.onMessage(PerfProtocol.END, m -> client.get().send(PerfProtocol.ENDED, malformed == PerfProtocol.ENDED
                    ? new PerfProtocol.Writer().u32(new PerfProtocol.Reader(m, "END").u32()).segment()
                    : new PerfProtocol.Writer().u32(new PerfProtocol.Reader(m, "END").u32()).u64(0).segment()));
            worker.onMessage(PerfProtocol.BYE, m -> { });
            bootstrap.complete(new PerfBootstrap(ProcessHandle.current().pid(), "host", ThreadMode.SINGLE.name(), region.size(),
                    worker.address().toBytes(), Map.of("posix", region.exportHandle())));
            while (!stop.isDone()) {
                if (worker.progress() == 0) worker.await(Duration.ofMillis(10));
                if (quit.isDone() && !quitDone.isDone()) {
                    worker.close(); // its region stays: the client's --peers meet a worker that is gone
                    quitDone.complete(null);
                    stop.join(); // a closed worker takes no more progress
                }
            }
            Endpoint ep = client.get();
            if (ep != null) ep.close();
        }
    }

    /** A Conduit that does what {@code delegate} does: a test overrides what it watches. */
    private static class DelegatingConduit implements Conduit {
        private final Conduit delegate;

        DelegatingConduit(Conduit delegate) {
            this.delegate = delegate;
        }

        @Override
        public List<dev.conduit.PluginInfo> plugins() {
            return delegate.plugins();
        }

        @Override
        public List<String> selectedPlugins() {
            return delegate.selectedPlugins();
        }

        @Override
        public List<dev.conduit.ConfigEntry> configuration() {
            return delegate.configuration();
        }

        @Override
        public Worker newWorker(ThreadMode mode) {
            return delegate.newWorker(mode);
        }

        @Override
        public dev.conduit.ThreadPolicy threadPolicy(ThreadMode mode) {
            return delegate.threadPolicy(mode);
        }

        @Override
        public Pool pool(String plugin) {
            return delegate.pool(plugin);
        }

        @Override
        public Pool pool() {
            return delegate.pool();
        }

        @Override
        public dev.conduit.ImportedRegion importRegion(byte[] handle) {
            return delegate.importRegion(handle);
        }

        @Override
        public dev.conduit.ImportedRegion importRegion(byte[] handle, dev.conduit.ImportedRegion reuse) {
            return delegate.importRegion(handle, reuse);
        }

        @Override
        public dev.conduit.IpcCacheStats ipcCacheStats() {
            return delegate.ipcCacheStats();
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    private static Conduit conduit(Path shared) {
        return CommandRunner.discovering().builder().transports("posix").sharedDirectory(shared).build();
    }
}
