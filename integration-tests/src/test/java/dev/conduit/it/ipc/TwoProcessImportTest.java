package dev.conduit.it.ipc;

import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.RemotePeer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two real JVMs: this one produces (pool, regions of several sizes, handles), a child that has no
 * pool and no provider consumes ({@code Conduit.open()} configured by its {@code CONDUIT_SHARED_DIR},
 * {@code importRegion} of the handle passed as hex), and both see each other's bytes. Afterwards
 * nothing stays open or mapped in the consumer, and nothing stays in the shared directory.
 */
@Timeout(120) // a hang guard, not a speed check
class TwoProcessImportTest {

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aConsumerJvmWithoutAPoolMapsTheProducersRegionsAndLeavesNothingBehind(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemotePeer consumer = RemotePeer.start(shared, Launcher.direct())) {
            assertThat(consumer.child().hello()).as("the child loads Conduit as this JVM does")
                    .containsEntry("loading", Peers.loading())
                    .containsEntry("shared", shared.toString());
            Peers.roundTrip(plugin, shared, consumer);
        }
    }
}
