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

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A process that used both shared-memory plugins dies with files of each in the shared directory,
 * and its peers find the death over one (docs/runtime.md, "When the process ends").
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class KilledPeerOfBothPluginsTest {

    private static final Duration GUARD = Duration.ofSeconds(60);

    /**
     * The killed peer had a worker of each plugin and a 4 MiB region in a pool of the one it was not
     * reached over; the survivor, whose Conduit has only the plugin it reached the peer by, reclaims
     * the files of both. The other plugin's (a posix pool's chunk: tmpfs held) stayed until a
     * worker or pool of that plugin next opened on the directory (a helper playing an ML-serving
     * user of the memory API).
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aPeerKilledWithFilesOfBothPluginsLeavesNothingOfEither(String over, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        String other = over.equals("memfd") ? "posix" : "memfd";
        List<PeerFailedException> failures = new CopyOnWriteArrayList<>();
        try (Conduit conduit = Setup.conduit(shared, over);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            Set<String> ours = new HashSet<>(Setup.files(shared));
            try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
                WorkerAddress peer = child.worker("reached", over, "SINGLE");
                child.worker("other", other, "SINGLE");
                child.region("other", "tensor", 4 << 20);
                assertThat(Setup.files(shared)).as("the peer's files of the plugin it is not reached over")
                        .anyMatch(name -> name.startsWith("conduit-" + other + "-"));
                worker.connect(peer, (endpoint, cause) -> failures.add(cause));
                worker.progress();
                child.kill();

                long guard = System.nanoTime() + GUARD.toNanos();
                while ((failures.isEmpty() || !new HashSet<>(Setup.files(shared)).equals(ours)) && System.nanoTime() - guard < 0) {
                    worker.await(Duration.ofMillis(10));
                    worker.progress();
                }
                assertThat(failures).as("the endpoint's failure").singleElement()
                        .satisfies(f -> assertThat(f.reason()).isEqualTo(PeerFailedException.Reason.DIED));
                assertThat(Setup.files(shared)).as("what is left in the shared directory: the killed peer's files of both plugins")
                        .containsExactlyInAnyOrderElementsOf(ours);
            }
        }
    }
}
