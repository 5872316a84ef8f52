package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How a process that uses Conduit ends without closing it, as its peer and its shared directory
 * see it (docs/runtime.md, "When the process ends"): Conduit keeps no non-daemon thread, so a JVM
 * whose application threads are done exits with everything open; a handler's
 * {@code OutOfMemoryError} ends the thread that progresses (and with it the JVM); a shutdown hook
 * may close the Conduit on SIGTERM while another thread is in {@code progress()}/{@code await}.
 * The peer's endpoint fails saying "died", or "closed (an orderly close" for the hook, and nothing
 * of the process is left in the directory once the peer's Conduit is closed.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class ExitPathsTest {

    private static final Duration GUARD = Duration.ofSeconds(60);

    @ParameterizedTest
    @CsvSource({"posix,return,died", "memfd,return,died", "posix,oom,died", "memfd,oom,died",
            "posix,hook,closed (an orderly close", "memfd,hook,closed (an orderly close"})
    void aProcessThatEndsWithoutClosingExitsAndIsReportedAndReclaimed(String plugin, String how, String verdict,
                                                                      @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        Path stderr = Files.createTempFile("exiting-peer", ".err");
        ProcessBuilder pb = new ProcessBuilder(ChildJvm.javaCommand(ExitingPeer.class, List.of(), List.of(plugin, how)));
        pb.environment().keySet().removeIf(k -> k.startsWith("CONDUIT_"));
        pb.environment().put("CONDUIT_SHARED_DIR", shared.toString());
        pb.redirectError(stderr.toFile());
        Process child = pb.start();
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=5ms");
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String[] ready = out.readLine().split(" ");
            ImportedRegion imported = conduit.importRegion(HexFormat.of().parseHex(ready[2]));
            child.getOutputStream().write((HexFormat.of().formatHex(worker.address().toBytes()) + "\n").getBytes(StandardCharsets.UTF_8));
            child.getOutputStream().flush();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Endpoint endpoint = worker.connect(WorkerAddress.fromBytes(HexFormat.of().parseHex(ready[1])), (ep, cause) -> failure.set(cause));
            // Only now may the child end (a second later in mode return): connected before, this test sees it die.
            child.getOutputStream().write("CONNECTED\n".getBytes(StandardCharsets.UTF_8));
            child.getOutputStream().flush();
            assertThat(out.readLine()).isEqualTo("RUNNING");
            if (how.equals("oom")) {
                endpoint.send(ExitingPeer.FATAL, MemorySegment.ofArray(new byte[8]));
                Setup.waitUntil(() -> {
                    worker.progress();
                    return endpoint.pending() == 0;
                }, GUARD, () -> "the fatal message was not handed to the transport");
            }
            if (how.equals("hook")) child.destroy(); // SIGTERM
            assertThat(child.waitFor(GUARD.toMillis(), TimeUnit.MILLISECONDS))
                    .as("the child exits by itself; its stderr: %s", Files.readString(stderr)).isTrue();
            Setup.waitUntil(() -> {
                worker.progress();
                return failure.get() != null;
            }, GUARD, () -> "no failure reported");
            assertThat(failure.get()).hasMessageContaining(plugin + ": peer worker " + verdict);
            if (how.equals("oom")) assertThat(Files.readString(stderr)).contains("OutOfMemoryError");
            imported.close();
        } finally {
            child.destroyForcibly();
            Files.deleteIfExists(stderr);
        }
        assertThat(Setup.files(shared)).as("what the child left, once the peer's Conduit is closed").isEmpty();
    }
}
