package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link UcxStyleService}, a UCX request/response program with RMA ported to the public API, run
 * between two processes: the server does put (then flush), get, fetch-add and compare-and-swap on
 * the region a client exported and answers each request with an active message on the endpoint it
 * connected back on; the client waits for each answer in {@code await}; each side learns of the
 * other's death through the error handler of its endpoint, and the server releases what it held
 * of a dead client. No {@code @Timeout} bounds a whole test, two JVMs' start and hundreds of
 * requests: each wait is a hang guard of its own event ({@link UcxStyleService#GUARD}, the child's
 * {@link ChildJvm} replies), so a loaded machine's slower run passes and one that stops fails, naming it.
 */
class UcxStyleServiceTest {

    private static final long SIZE = 64 << 10;
    private static final Duration GUARD = UcxStyleService.GUARD;

    static Conduit conduit(Path shared, String plugin) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties()).sharedDirectory(shared).transports(plugin).build();
    }

    private static ChildJvm child(Path shared) throws IOException {
        return ChildJvm.builder(UcxStylePeer.class).sharedDirectory(shared).start();
    }

    private static WorkerAddress address(String reply) {
        return WorkerAddress.fromBytes(HexFormat.of().parseHex(ChildJvm.parseFields(reply).get("address")));
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aServerInAnotherProcessDoesRmaOnTheClientsRegionAndAnswersEveryRequest(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (ChildJvm serverProcess = child(shared);
             Conduit conduit = conduit(shared, plugin);
             UcxStyleService.Client client = new UcxStyleService.Client(conduit, plugin, address(serverProcess.call("server", plugin)), 1, SIZE)) {
            assertThat(client.hello()).as("the size of the peer region the server opened").isEqualTo(SIZE);
            MemorySegment memory = client.memory();

            // put, then flush, before the answer: the bytes are here once the answer is
            assertThat(client.put(100, 5000, 7)).isEqualTo(5000);
            for (long i = 0; i < SIZE; i++) {
                byte expected = i >= 100 && i < 5100 ? UcxStyleService.pattern(7, i - 100) : 0;
                if (memory.get(ValueLayout.JAVA_BYTE, i) != expected) throw new AssertionError("byte " + i + " after the server's put");
            }

            // get what this side wrote
            MemorySegment mine = memory.asSlice(8192, 10_000);
            for (long i = 0; i < mine.byteSize(); i++) mine.set(ValueLayout.JAVA_BYTE, i, UcxStyleService.pattern(9, i));
            assertThat(client.get(8192, 10_000)).isEqualTo(UcxStyleService.crc(mine));

            // atomics, on words in this host's order
            assertThat(client.fetchAdd(0, 5)).isZero();
            assertThat(client.fetchAdd(0, -2)).isEqualTo(5);
            assertThat(memory.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(3);
            assertThat(client.compareAndSwap(32 << 10, 0, 42)).as("witness of a successful CAS").isZero();
            assertThat(client.compareAndSwap(32 << 10, 0, 43)).as("witness of a failed CAS").isEqualTo(42);
            assertThat(memory.get(ValueLayout.JAVA_LONG, 32 << 10)).isEqualTo(42);

            // what the endpoint refuses comes back as the server's reason
            assertThatThrownBy(() -> client.put(SIZE - 10, 100, 1)).isInstanceOf(UcxStyleService.RefusedException.class)
                    .hasMessageContaining("outside the peer region of " + SIZE + " bytes");
            assertThatThrownBy(() -> client.fetchAdd(4, 1)).isInstanceOf(UcxStyleService.RefusedException.class)
                    .hasMessageContaining("multiple of 8");

            // pipelined: many requests outstanding, answered in order
            long[] ids = new long[200];
            for (int i = 0; i < ids.length; i++) ids[i] = client.send(UcxStyleService.FETCH_ADD, 40 << 10, 1, 0);
            for (int i = 0; i < ids.length; i++) assertThat(client.answer(ids[i], GUARD)).isEqualTo(i);
            assertThat(memory.get(ValueLayout.JAVA_LONG, 40 << 10)).isEqualTo(ids.length);

            assertThat(client.awaits()).as("the client waited in await").isPositive();
            assertThat(client.failure()).isNull();
            client.bye();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aClientAsleepInAwaitLearnsThatTheServerDiedAndItsOutstandingRequestFails(String plugin,
                                                                                 @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (ChildJvm serverProcess = child(shared);
             Conduit conduit = conduit(shared, plugin);
             UcxStyleService.Client client = new UcxStyleService.Client(conduit, plugin, address(serverProcess.call("server", plugin)), 1, SIZE)) {
            client.hello();
            long held = client.send(UcxStyleService.HOLD, 0, 0, 0);
            Thread killer = Thread.ofPlatform().start(serverProcess::kill);
            assertThatThrownBy(() -> client.answer(held, GUARD)).isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining("outstanding when the server failed")
                    .cause().hasMessageContaining("peer worker died");
            killer.join();
            assertThat(client.endpoint().isFailed()).isTrue();
            assertThatThrownBy(() -> client.put(0, 8, 1)).as("later sends").isInstanceOf(PeerFailedException.class);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void theServerSeesAClientInAnotherProcessDieReleasesItsRegionAndServesTheNext(String plugin,
                                                                                  @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (UcxStyleService.Server server = new UcxStyleService.Server(() -> conduit(shared, plugin))) {
            WorkerAddress address = server.start();
            try (ChildJvm clientProcess = child(shared)) {
                String hex = HexFormat.of().formatHex(address.toBytes());
                assertThat(ChildJvm.parseFields(clientProcess.call("client", plugin, hex, 7, SIZE))).containsEntry("size", Long.toString(SIZE));
                assertThat(ChildJvm.parseFields(clientProcess.call("put", 0, 4096, 3))).containsEntry("value", "4096");
                assertThat(server.sessions()).isEqualTo(1);
                assertThat(server.conduit().ipcCacheStats().entriesInUse()).as("the client's region, open on the endpoint to it").isEqualTo(1);

                clientProcess.kill();
                waitUntil(() -> server.departed().containsKey(7L), () -> "the server's error handler for client 7");
                assertThat(server.departed().get(7L)).contains("peer worker died");
                assertThat(server.sessions()).isZero();
                assertThat(server.conduit().ipcCacheStats().entriesInUse()).as("the dead client's region, released by closing its endpoint")
                        .isZero();
            }
            // The next client is served as the first was.
            try (Conduit conduit = conduit(shared, plugin);
                 UcxStyleService.Client next = new UcxStyleService.Client(conduit, plugin, address, 8, SIZE)) {
                next.hello();
                assertThat(next.put(8, 16, 5)).isEqualTo(16);
                assertThat(next.memory().get(ValueLayout.JAVA_BYTE, 8)).isEqualTo(UcxStyleService.pattern(5, 0));
                next.bye();
            }
            waitUntil(() -> server.sessions() == 0, () -> "the session of client 8 ended by its BYE");
            assertThat(server.served()).isEqualTo(2);
        }
    }

    static void waitUntil(BooleanSupplier condition, java.util.function.Supplier<String> what) throws InterruptedException {
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("not within the hang guard of " + GUARD + ": " + what.get());
            Thread.sleep(2);
        }
    }
}
