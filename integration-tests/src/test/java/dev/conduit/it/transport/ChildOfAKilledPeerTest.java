package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
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
 * A peer's lease is a lock on an open file description, which a child process would share if it
 * inherited the descriptor: the peer would then look alive, and its files stay, for as long as the
 * child lives. Every descriptor Conduit opens is close-on-exec (and the JDK closes the others in a
 * child it starts), so a process the peer started does not keep it alive (docs/runtime.md, "When
 * the process ends").
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class ChildOfAKilledPeerTest {

    private static final Duration GUARD = Duration.ofSeconds(60);

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aPeerKilledWhileAProcessItStartedLivesOnIsReportedDeadAndReclaimed(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        List<PeerFailedException> failures = new CopyOnWriteArrayList<>();
        ProcessHandle grandchild = null;
        try (Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            Set<String> ours = new HashSet<>(Setup.files(shared));
            try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
                WorkerAddress peer = child.worker("p", plugin, "SINGLE");
                Endpoint ep = worker.connect(peer, (e, cause) -> failures.add(cause));
                worker.progress();
                grandchild = ProcessHandle.of(child.spawn()).orElseThrow();
                child.kill();

                long guard = System.nanoTime() + GUARD.toNanos();
                while ((failures.isEmpty() || !new HashSet<>(Setup.files(shared)).equals(ours)) && System.nanoTime() - guard < 0) {
                    worker.await(Duration.ofMillis(10));
                    worker.progress();
                }
                assertThat(grandchild.isAlive()).as("the process the killed peer started lives on").isTrue();
                assertThat(failures).as("the endpoint's failure").singleElement()
                        .satisfies(f -> assertThat(f).hasMessageContaining("peer worker died (its lease"))
                        .satisfies(f -> assertThat(f.reason()).isEqualTo(PeerFailedException.Reason.DIED));
                assertThat(ep.isFailed()).isTrue();
                assertThat(Setup.files(shared)).as("what is left in the shared directory: the killed peer's files were reclaimed")
                        .containsExactlyInAnyOrderElementsOf(ours);
            }
        } finally {
            if (grandchild != null) grandchild.destroyForcibly();
        }
    }
}
