package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.it.LoadTest;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Peers killed with {@code SIGKILL} at random moments of connect, send (inline and through the
 * bounce ring), RMA and import ({@link BusyPeer}): this process keeps receiving and serving its
 * exports, a survivor in it is unaffected, what it held of each dead peer (lease watch, bounce
 * ring mapping) is let go, and the dead peers' files are reclaimed. The seed of the random delays
 * is in the failure message.
 */
@LoadTest
class RandomKillTest {

    private static final int KILLS = 4;

    /** What Conduit's descriptors point to, for failure messages. */
    private static List<String> conduitDescriptors() throws java.io.IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.map(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString();
                } catch (java.io.IOException e) {
                    return "";
                }
            }).filter(t -> t.contains("conduit-")).sorted().toList();
        }
    }

    @TempDir
    Path shared;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "memfd"})
    void peersKilledAnywhereLeaveTheSurvivorsWorkingAndNothingBehind(String plugin) throws Exception {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
             Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
             Worker survivor = conduit.newWorker(ThreadMode.SINGLE);
             Arena arena = Arena.ofConfined()) {
            long[] received = {0};
            receiver.onMessage(1, m -> received[0]++);
            Region region = conduit.pool(plugin).allocate(64 << 10);
            Endpoint fromSurvivor = survivor.connect(receiver.address());
            MemorySegment payload = arena.allocate(64);
            String address = HexFormat.of().formatHex(receiver.address().toBytes());
            String handle = HexFormat.of().formatHex(region.exportHandle());
            // The survivor's first message makes the receiver watch its lease: part of the baseline.
            fromSurvivor.send(1, payload);
            for (int i = 0; i < 100_000 && received[0] == 0; i++) {
                survivor.progress();
                receiver.progress();
            }
            assertThat(received[0]).isEqualTo(1);
            OpenResources baseline = OpenResources.ofThisProcess();
            List<String> namesBefore = conduitDescriptors();

            for (int kill = 0; kill < KILLS; kill++) {
                Process peer = new ProcessBuilder(ChildJvm.javaCommand(BusyPeer.class, List.of(), List.of(shared.toString(), plugin, address, handle)))
                        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
                try (BufferedReader out = new BufferedReader(new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8))) {
                    long before = received[0];
                    Thread reader = Thread.ofVirtual().start(() -> {
                        try {
                            out.readLine();
                        } catch (java.io.IOException ignored) {
                            // the peer died first
                        }
                    });
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (reader.isAlive() && System.nanoTime() < until) receiver.progress();
                    assertThat(reader.isAlive()).as("peer %d never completed a round (seed %d)", kill, seed).isFalse();
                    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(random.nextInt(300));
                    while (System.nanoTime() < deadline) receiver.progress();
                    peer.destroyForcibly(); // SIGKILL, wherever it is
                    assertThat(peer.waitFor(30, TimeUnit.SECONDS)).isTrue();
                    assertThat(received[0]).as("messages from peer %d (seed %d)", kill, seed).isGreaterThan(before);
                } finally {
                    peer.getOutputStream().close();
                }
                // The survivor's messages still arrive.
                long survivorBefore = received[0];
                fromSurvivor.send(1, payload);
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (received[0] == survivorBefore && System.nanoTime() < until) {
                    survivor.progress();
                    receiver.progress();
                }
                assertThat(received[0]).as("survivor after kill %d (seed %d)", kill, seed).isGreaterThan(survivorBefore);
            }
            // What this process held of the dead peers goes once their deaths are noticed.
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            OpenResources now = OpenResources.ofThisProcess();
            while ((now.conduitFds() != baseline.conduitFds() || now.conduitMappings() != baseline.conduitMappings())
                    && System.nanoTime() < until) {
                receiver.progress();
                survivor.progress();
                Thread.sleep(1);
                now = OpenResources.ofThisProcess();
            }
            assertThat(now.conduitFds()).as("Conduit descriptors (seed %d): %s vs %s; now %s, before %s", seed, now.format(), baseline.format(),
                            conduitDescriptors(), namesBefore)
                    .isEqualTo(baseline.conduitFds());
            assertThat(now.conduitMappings()).as("Conduit mappings (seed %d): %s vs %s", seed, now.format(), baseline.format())
                    .isEqualTo(baseline.conduitMappings());
            assertThat(region.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 64)).as("RMA fetch-adds arrived").isPositive();
            fromSurvivor.close();
            region.close();
        }
        // The next Conduit on the directory reclaims what the killed peers left.
        try (Conduit next = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
             Worker worker = next.newWorker(ThreadMode.SINGLE)) {
            assertThat(worker.address()).isNotNull();
        }
        try (Stream<Path> files = Files.list(shared)) {
            assertThat(files.toList()).as("files left (seed %d)", seed).isEmpty();
        }
    }
}
