package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;
import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code kill -9} of a producer: a child JVM produces (pool, regions, handles), this JVM imports,
 * then the child gets {@code SIGKILL} — no close, no shutdown hook. Its files stay in the shared
 * directory until the next provider (pool) opened on that directory finds its lease unlocked
 * (the kernel released the dead process's {@code flock}) and reclaims them: nothing of the dead
 * producer is left. Memory this JVM had mapped stays readable; an export it had not imported fails
 * cleanly.
 */
@Timeout(120) // a hang guard, not a speed check
class KilledProducerTest {

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void theNextPoolOnTheDirectoryReclaimsTheFilesOfAKilledProducer(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemotePeer producer = RemotePeer.start(shared, Launcher.direct());
             Conduit consumer = Peers.conduit(shared, plugin)) {
            producer.open();
            producer.pool(plugin);
            producer.allocate("small", plugin, 4096);
            producer.allocate("large", plugin, 1 << 20);
            producer.allocate("unseen", plugin, 1 << 20);
            producer.fill("small", 11);
            producer.fill("large", 12);
            byte[] small = producer.export("small");
            byte[] large = producer.export("large");
            byte[] unseen = producer.export("unseen");
            List<String> theirs = ShmDir.files(shared);
            // posix: lease and chunk files; memfd: lease and fd server socket
            assertThat(theirs).as("the producer's files").anyMatch(n -> n.endsWith(".lease")).hasSizeGreaterThanOrEqualTo(2);

            try (ImportedRegion a = consumer.importRegion(small); ImportedRegion b = consumer.importRegion(large)) {
                assertThat(Patterns.firstMismatch(a.segment(), 11)).isEqualTo(-1);
                assertThat(Patterns.firstMismatch(b.segment(), 12)).isEqualTo(-1);

                long jvmPid = producer.child().jvm().pid();
                int exit = producer.kill();
                assertThat(exit).as("exit code of the SIGKILLed producer (pid %d)", jvmPid).isEqualTo(128 + 9);
                assertThat(producer.child().isAlive()).isFalse();
                assertThat(ShmDir.files(shared)).as("a killed process cleans up nothing").containsExactlyElementsOf(theirs);

                assertThat(Patterns.firstMismatch(a.segment(), 11)).as("mapped memory outlives its producer").isEqualTo(-1);
                assertThat(Patterns.firstMismatch(b.segment(), 12)).as("mapped memory outlives its producer").isEqualTo(-1);

                try (Conduit next = Peers.conduit(shared, plugin); Pool pool = next.pool(plugin)) {
                    assertThat(ShmDir.files(shared)).as("after a new %s pool opened on the directory", plugin)
                            .doesNotContainAnyElementsOf(theirs);
                    pool.allocate(64).close();
                }
                assertThat(ShmDir.files(shared)).as("once the new pool closed").isEmpty();
                assertThatThrownBy(() -> consumer.importRegion(unseen))
                        .as("an export of the dead producer not imported before")
                        .isInstanceOf(ConduitException.class)
                        .hasMessageStartingWith(plugin.equals("posix") ? "export gone: " : "producer gone ");
                assertThat(Patterns.firstMismatch(b.segment(), 12)).as("still readable after the reclaim").isEqualTo(-1);
            }
        }
        assertThat(ShmDir.files(shared)).isEmpty();
    }

    /**
     * What a killed producer leaves mapped in a consumer goes too, once no region of it is open:
     * the consumer's IPC cache unmaps imports that no region used for {@code ipc.cache.idle}, and
     * with the mapping the dead producer's memory goes (posix: the pages of the chunk file the
     * reclaim removed; memfd: the memfd). Until 2026-12-04 such chunks stayed mapped, up to
     * {@code ipc.cache.bytes} (1 GiB), for the consumer's life.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aKilledProducersChunksLeaveTheConsumerOnceNoRegionUsedThemForIpcCacheIdle(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        long before = OpenResources.ofThisProcess().conduitMappings();
        try (RemotePeer producer = RemotePeer.start(shared, Launcher.direct());
             Conduit consumer = Conduit.builder().environment(java.util.Map.of()).systemProperties(new java.util.Properties())
                     .sharedDirectory(shared).transports(plugin).set("ipc.cache.idle", "100ms").build()) {
            producer.open();
            producer.pool(plugin);
            producer.allocate("large", plugin, 1 << 20);
            producer.fill("large", 12);
            try (ImportedRegion region = consumer.importRegion(producer.export("large"))) {
                assertThat(Patterns.firstMismatch(region.segment(), 12)).isEqualTo(-1);
                assertThat(OpenResources.ofThisProcess().conduitMappings()).as("mappings of the open import").isGreaterThan(before);
            }
            producer.kill();
            try (Conduit next = Peers.conduit(shared, plugin); Pool pool = next.pool(plugin)) {
                pool.allocate(64).close(); // reclaims the dead producer's files
            }

            long mapped = OpenResources.ofThisProcess().conduitMappings();
            for (int i = 0; i < 600 && mapped > before; i++) {
                Thread.sleep(100);
                mapped = OpenResources.ofThisProcess().conduitMappings();
            }
            assertThat(mapped).as("the consumer's mappings of Conduit's files once the sweep ran").isEqualTo(before);
            assertThat(consumer.ipcCacheStats().entries()).isZero();
        }
    }
}
