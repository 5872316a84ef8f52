package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** The verdict on a peer worker whose process is killed while it closes. */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class PeerKilledWhileClosingTest {

    private static final Duration GUARD = Duration.ofSeconds(120);
    /** ReceiveQueue's closing word: 1 from the start of a worker's close, 2 once it is done but for the queue and the lease. */
    private static final long CLOSING_OFFSET = 520;

    /**
     * A worker's close may wait up to {@code heartbeat.timeout} for its peers to read its large
     * messages, and a supervisor's kill -9 after a stop timeout lands there. Its peers' endpoints
     * then fail saying it died while closing, not that it closed in order: that verdict used to
     * follow the closing word set at the close's start, so a failover took this crash for an
     * orderly restart. (posix only: the test reads the child's queue file to know when its close
     * is under way; memfd runs the same transport code.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"posix"})
    void aPeerKilledWhileItsCloseWaitsIsReportedAsDiedWhileClosing(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=5ms");
             Worker worker = conduit.newWorker(ThreadMode.SINGLE);
             RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
            Set<String> ours = new HashSet<>(Setup.files(shared));
            WorkerAddress childWorker = child.worker("w", plugin, "SINGLE", plugin + ".heartbeat.timeout=100s");
            AtomicReference<Throwable> failure = new AtomicReference<>();
            worker.connect(childWorker, (endpoint, cause) -> failure.set(cause));
            // A large message this worker does not read (it does not progress yet): the child's close waits for it.
            child.connect("w", "to-test", worker.address());
            child.stream("s", "w", "to-test", 0, Traffic.Profile.BULKY, 1, 1);
            child.join("s", GUARD);
            Path childQueue = Setup.files(shared).stream().filter(n -> !ours.contains(n) && n.endsWith(".chunk")).map(shared::resolve)
                    .filter(p -> size(p) == 4096 + (2L << 20)).findFirst().orElseThrow();

            // Taken now: the child's handle is not to be asked for while the close call below waits for its reply.
            ProcessHandle childJvm = child.child().jvm();
            Thread closer = Thread.ofPlatform().start(() -> {
                try {
                    child.closeWorker("w");
                } catch (Throwable killed) {
                    // the child dies under this call
                }
            });
            Setup.waitUntil(() -> closingWord(childQueue).orElse(0) == 1, GUARD, () -> "the child's close did not start");
            childJvm.destroyForcibly(); // SIGKILL
            childJvm.onExit().get(GUARD.toMillis(), TimeUnit.MILLISECONDS);
            closer.join(GUARD.toMillis());

            Setup.waitUntil(() -> {
                worker.progress();
                return failure.get() != null;
            }, GUARD, () -> "no failure reported");
            assertThat(failure.get()).hasMessageContaining(plugin + ": peer worker died while closing")
                    .hasMessageNotContaining("orderly");
            assertThat(((PeerFailedException) failure.get()).reason()).as("a kill during the close is no orderly close")
                    .isEqualTo(PeerFailedException.Reason.DIED);
        }
    }

    private static long size(Path p) {
        try {
            return Files.size(p);
        } catch (java.io.IOException e) {
            return -1;
        }
    }

    /** The closing word of the queue in {@code file}; empty once the file is gone. */
    private static Optional<Integer> closingWord(Path file) {
        try (FileChannel f = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            f.read(b, CLOSING_OFFSET);
            return Optional.of(b.getInt(0));
        } catch (java.io.IOException e) {
            return Optional.empty();
        }
    }
}
