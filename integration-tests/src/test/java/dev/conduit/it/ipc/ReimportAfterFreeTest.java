package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A handle imported again after its ALIVE exporter freed the chunk: the IPC cache of a consumer
 * that still holds the chunk answers from its mapping, the freed memory, without asking the
 * producer; a consumer whose cache never held it is told "export gone". Until 2026-12-07
 * {@code ImportedRegion.exporterState()}'s javadoc and docs/runtime.md promised the refusal to
 * every new import, which the first consumer never got.
 */
@Timeout(120) // a hang guard, not a speed check
class ReimportAfterFreeTest {

    private static final long CHUNK_OF_ITS_OWN = 1 << 20; // over a quarter of pool.chunk.size: freeing it frees its chunk

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aFreedChunkIsImportedAgainFromTheCacheThatHoldsItAndRefusedAsExportGoneByAnotherConsumer(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemotePeer holding = RemotePeer.start(shared, Launcher.direct());
             RemotePeer fresh = RemotePeer.start(shared, Launcher.direct())) {
            holding.open();
            fresh.open();
            try (Conduit producer = Peers.conduit(shared, plugin)) {
                Pool pool = producer.pool(plugin);
                Region region = pool.allocate(CHUNK_OF_ITS_OWN);
                Patterns.fill(region.segment(), 7);
                byte[] handle = region.exportHandle();
                holding.importRegion("first", handle);
                region.close();
                assertThat(holding.exporterState("first")).isEqualTo("ALIVE");

                holding.importRegion("again", handle);
                holding.assertPattern("again", 7);
                assertThat(fresh.importFailure(handle).message()).startsWith("export gone: ");
            }
        }
    }
}
