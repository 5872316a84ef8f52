package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Stale exports across processes: the producer (this JVM) frees a region that has a chunk of its
 * own, or closes its pool, and only then does the consumer (a child JVM) try the handle. The import
 * fails cleanly with the documented message, opens nothing and caches nothing; what the consumer
 * imported before the free stays readable there.
 */
@Timeout(120) // a hang guard, not a speed check
class StaleExportTest {

    private static final long CHUNK_OF_ITS_OWN = 1 << 20; // over a quarter of pool.chunk.size: freeing it frees its chunk

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anExportTheProducerFreedOrWhosePoolItClosedFailsToImportInAnotherProcess(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemotePeer consumer = RemotePeer.start(shared, Launcher.direct())) {
            consumer.open();
            try (Conduit producer = Peers.conduit(shared, plugin)) {
                Pool pool = producer.pool(plugin);
                Region live = pool.allocate(CHUNK_OF_ITS_OWN);
                Patterns.fill(live.segment(), 7);
                consumer.importRegion("live", live.exportHandle()); // also loads what an import needs before anything is counted
                consumer.assertPattern("live", 7);

                Region freed = pool.allocate(CHUNK_OF_ITS_OWN);
                byte[] stale = freed.exportHandle();
                freed.close();
                ChildJvm.Failure gone = failsCleanly(consumer, stale);
                assertThat(gone.type()).as("%s", gone).isEqualTo("ConduitException");
                assertThat(gone.message()).as("%s", gone).startsWith("export gone: ");

                live.close(); // its chunk is freed, but the consumer's mapping of it stays valid
                consumer.assertPattern("live", 7);

                Region orphan = pool.allocate(CHUNK_OF_ITS_OWN);
                byte[] orphaned = orphan.exportHandle();
                pool.close();
                ChildJvm.Failure closed = failsCleanly(consumer, orphaned);
                assertThat(closed.type()).as("%s", closed).isEqualTo("ConduitException");
                // posix: the file is unlinked ("export gone"); memfd: the fd server and its socket are gone with the pool
                assertThat(closed.message()).as("%s", closed).startsWith(plugin.equals("posix") ? "export gone: " : "producer gone ");
            }
            assertThat(ShmDir.files(shared)).as("left in the shared directory once the producer closed").isEmpty();
            consumer.assertPattern("live", 7);
            consumer.release("live");
            consumer.closeConduit();
            assertThat(consumer.resources().conduitMappings()).isZero();
            assertThat(consumer.exit()).isZero();
        }
    }

    /** The import fails, and the consumer holds and caches exactly what it did before. */
    private static ChildJvm.Failure failsCleanly(RemotePeer consumer, byte[] handle) {
        OpenResources before = consumer.resources();
        Map<String, Long> stats = consumer.cacheStats();
        ChildJvm.Failure f = consumer.importFailure(handle);
        System.out.println("stale import -> " + f);
        assertThat(consumer.resources()).as("what the consumer holds open, before: %s", before).isEqualTo(before);
        assertThat(consumer.cacheStats().get("entries")).as("cache entries").isEqualTo(stats.get("entries"));
        assertThat(consumer.cacheStats().get("mappedBytes")).as("mapped bytes").isEqualTo(stats.get("mappedBytes"));
        return f;
    }
}
