package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A connect to the address of a worker whose process was killed. */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class ConnectToDeadPeerTest {

    /**
     * The connect fails naming the dead lease, and, having proven the peer dead, reclaims its files
     * (queue, leases, socket) there and then. They used to stay until the next worker or pool was
     * opened on the directory; this test's worker exists before the kill, and its liveness check
     * is an hour apart, so nothing else reclaims them.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aConnectThatFindsThePeerDeadReclaimsItsFiles(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h");
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            Set<String> ours = new HashSet<>(Setup.files(shared));
            WorkerAddress dead;
            try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
                dead = child.worker("w", plugin, "SINGLE");
                assertThat(Setup.files(shared)).as("the child worker's files").hasSizeGreaterThan(ours.size());
                child.kill();
            }

            assertThatThrownBy(() -> worker.connect(dead)).hasMessageContaining("the peer is dead (its lease");

            assertThat(Setup.files(shared)).as("what is left in the shared directory").containsExactlyInAnyOrderElementsOf(ours);
        }
    }
}
