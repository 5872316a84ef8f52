package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.process.ChildJvm;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A peer that stops responding — a live process, frozen with {@code SIGSTOP}, whose queue fills —
 * fails the sender's endpoint with {@link PeerFailedException} once {@code heartbeat.timeout}
 * passed without progress, reported once to the error handler; the sender never blocks and keeps
 * working for other peers; and once the frozen process is killed its files are reclaimed.
 */
class HungPeerTest {

    @TempDir
    Path shared;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "memfd"})
    void aFrozenReceiverFailsTheEndpointAfterTheHeartbeatTimeout(String plugin) throws Exception {
        Process child = new ProcessBuilder(ChildJvm.javaCommand(IdleReceiverPeer.class, List.of(), List.of(shared.toString(), plugin)))
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin)
                .set(plugin + ".heartbeat.timeout", "300ms").build();
             Worker sender = conduit.newWorker(ThreadMode.SINGLE);
             Worker survivor = conduit.newWorker(ThreadMode.SINGLE);
             Arena arena = Arena.ofConfined()) {
            String hex = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8)).readLine();
            assertThat(hex).as("the child's address").isNotNull();
            WorkerAddress frozen = WorkerAddress.fromBytes(HexFormat.of().parseHex(hex));
            AtomicReference<PeerFailedException> reported = new AtomicReference<>();
            int[] reports = {0};
            Endpoint toFrozen = sender.connect(frozen, (ep, failure) -> {
                reports[0]++;
                reported.set(failure);
            });
            ChildJvm.stop(child.pid()); // returns once every thread of the child has stopped, not when kill does
            if (plugin.equals("memfd")) {
                // Connecting needs the peer's fd server to answer: a frozen one is named, with the key to raise.
                assertThatThrownBy(() -> survivor.connect(frozen)).hasMessageContaining("did not answer within memfd.connect.timeout");
            }
            long[] received = {0};
            survivor.onMessage(1, m -> received[0]++);
            Endpoint toSurvivor = sender.connect(survivor.address());
            MemorySegment payload = arena.allocate(4096);
            // Fill the frozen peer's queue: sends never block, the rest waits locally.
            for (int i = 0; i < 1000; i++) toFrozen.send(1, payload);
            assertThat(toFrozen.pending()).as("messages waiting locally for the frozen peer").isPositive();

            long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!toFrozen.isFailed() && System.nanoTime() < guard) {
                sender.progress();
                Thread.sleep(1);
            }
            assertThat(toFrozen.isFailed()).as("failed within the 60 s hang guard").isTrue();
            assertThat(toFrozen.failure()).isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining("hung").hasMessageContaining("heartbeat.timeout");
            assertThat(reports[0]).isEqualTo(1);
            assertThat(reported.get()).isSameAs(toFrozen.failure());

            // The sender still works for everyone else.
            toSurvivor.send(1, payload);
            for (int i = 0; i < 10_000 && received[0] == 0; i++) {
                sender.progress();
                survivor.progress();
            }
            assertThat(received[0]).isEqualTo(1);
            toSurvivor.close();
            toFrozen.close();
        } finally {
            child.destroyForcibly();
            // Not ChildJvm.signal, which fails when kill does: the child may be gone by now. Bounded as every wait here is,
            // this class has no @Timeout; kill's output discarded, as nobody reads its pipe.
            Process resume = new ProcessBuilder("kill", "-CONT", Long.toString(child.pid()))
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            assertThat(resume.waitFor(30, TimeUnit.SECONDS)).as("hang guard: kill -CONT %d ended within 30 s", child.pid()).isTrue();
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            child.getInputStream().close();
            child.getOutputStream().close();
        }
        // The next Conduit on the directory reclaims what the killed process left.
        try (Conduit next = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
             Worker worker = next.newWorker(ThreadMode.SINGLE)) {
            assertThat(worker.threadMode()).isEqualTo(ThreadMode.SINGLE);
        }
        try (Stream<Path> files = Files.list(shared)) {
            assertThat(files.toList()).as("files left").isEmpty();
        }
    }
}
