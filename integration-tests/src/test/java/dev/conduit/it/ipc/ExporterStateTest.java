package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Worker;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ImportedRegion#exporterState()} across processes: a child JVM exports, another process
 * imports and asks whether the exporter lives, judged by the exporter's lease in the shared
 * directory. ALIVE while the exporter holds it (also once it freed the chunk), DEAD once it is
 * killed ({@code kill -9}: the lease stays, unlocked, until the next reclaim removes it; both read
 * as DEAD) or closes its pool (which removes the lease); and a consumer behind a read-only mount
 * of the directory judges it as well, the lease opened for reading only. A {@link PeerRegion} of the
 * same handle tells it as the import does.
 */
@Timeout(120) // a hang guard, not a speed check
class ExporterStateTest {

    /** How many times a test asks before it gives up on an answer: a guard against a hang, never a duration asserted. */
    private static final int LOOKS = 600;

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anImportSaysItsExporterIsAliveThenDeadOnceItIsKilledAndStillHoldsWhatItWrote(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemotePeer producer = RemotePeer.start(shared, Launcher.direct());
             Conduit consumer = Peers.conduit(shared, plugin)) {
            producer.open();
            producer.pool(plugin);
            producer.allocate("r", plugin, 1 << 20);
            producer.allocate("freed", plugin, 1 << 20);
            producer.fill("r", 5);
            try (ImportedRegion region = consumer.importRegion(producer.export("r"));
                 ImportedRegion freed = consumer.importRegion(producer.export("freed"))) {
                assertThat(region.exporterState()).isEqualTo(ExporterState.ALIVE);
                producer.free("freed");
                assertThat(freed.exporterState()).as("a chunk its live exporter freed").isEqualTo(ExporterState.ALIVE);

                producer.kill();
                assertThat(eventually(region::exporterState, ExporterState.DEAD)).as("after kill -9").isEqualTo(ExporterState.DEAD);
                assertThat(freed.exporterState()).isEqualTo(ExporterState.DEAD);
                assertThat(Patterns.firstMismatch(region.segment(), 5)).as("what the dead exporter wrote").isEqualTo(-1);

                try (Conduit next = Peers.conduit(shared, plugin); Pool pool = next.pool(plugin)) {
                    pool.allocate(64).close(); // reclaims the dead exporter's files, its lease last
                }
                assertThat(ShmDir.files(shared)).as("the dead exporter's lease, reclaimed").noneMatch(n -> n.endsWith(".lease"));
                assertThat(region.exporterState()).as("once its lease was reclaimed").isEqualTo(ExporterState.DEAD);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anExporterThatClosesItsPoolReadsAsDeadWhileItsProcessLives(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemotePeer producer = RemotePeer.start(shared, Launcher.direct());
             Conduit consumer = Peers.conduit(shared, plugin)) {
            producer.open();
            producer.pool(plugin);
            producer.allocate("r", plugin, 4096);
            try (ImportedRegion region = consumer.importRegion(producer.export("r"))) {
                assertThat(region.exporterState()).isEqualTo(ExporterState.ALIVE);
                producer.closePool(plugin);
                assertThat(region.exporterState()).as("its pool closed, its lease removed").isEqualTo(ExporterState.DEAD);
                producer.pool(plugin);
                assertThat(region.exporterState()).as("a new pool of the same process is another owner").isEqualTo(ExporterState.DEAD);
            }
            assertThat(producer.exit()).isZero();
        }
    }

    /**
     * A consumer that sees the shared directory only through a read-only bind mount (a container's
     * {@code -v DIR:DIR:ro}), where no worker of its can open and so no endpoint could tell it of
     * the exporter's death: it judges the exporter's lease through a read-only descriptor (memfd's
     * imports there only connect to the exporter's socket; posix's map the chunk file read-only).
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aConsumerBehindAReadOnlyMountLearnsThatAKilledExporterIsDead(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemotePeer producer = RemotePeer.start(shared, Launcher.direct());
             RemotePeer consumer = RemotePeer.start(shared, Launcher.readOnlyContainer())) {
            producer.open();
            producer.pool(plugin);
            producer.allocate("r", plugin, 1 << 20);
            producer.fill("r", 9);
            consumer.open();
            consumer.importRegion("r", producer.export("r"));
            assertThat(consumer.exporterState("r")).isEqualTo("ALIVE");
            producer.kill();
            assertThat(eventually(() -> consumer.exporterState("r"), "DEAD")).as("in the read-only container, after kill -9")
                    .isEqualTo("DEAD");
            consumer.assertPattern("r", 9);
            consumer.release("r");
            consumer.closeConduit();
            assertThat(consumer.exit()).as("the consumer's exit code").isZero();
        }
    }

    /**
     * {@link PeerRegion#exporterState()}: a peer region opened on an endpoint of this JVM (between two
     * of its workers) from a child's handle is mapped through the IPC cache, so it tells the child's
     * life as an import does: ALIVE, then DEAD once the child is killed with SIGKILL, and RMA still
     * reads what the child wrote. Closing it and the Conduit leaves no descriptor or mapping behind.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aPeerRegionSaysItsExporterIsAliveThenDeadOnceItIsKilledAndStillReadsWhatItWrote(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        OpenResources before = OpenResources.ofThisProcess();
        try (RemotePeer producer = RemotePeer.start(shared, Launcher.direct())) {
            producer.open();
            producer.pool(plugin);
            producer.allocate("r", plugin, 1 << 20);
            producer.fill("r", 7);
            try (Conduit conduit = Peers.conduit(shared, plugin);
                 Worker worker = conduit.newWorker(ThreadMode.SINGLE);
                 Worker peer = conduit.newWorker(ThreadMode.SINGLE)) {
                Endpoint endpoint = worker.connect(peer.address());
                PeerRegion region = endpoint.peerRegion(producer.export("r"));
                assertThat(region.exporterState()).isEqualTo(ExporterState.ALIVE);

                producer.kill();
                assertThat(eventually(region::exporterState, ExporterState.DEAD)).as("after kill -9").isEqualTo(ExporterState.DEAD);
                MemorySegment read = Arena.ofAuto().allocate(1 << 20);
                endpoint.get(region, 0, read);
                assertThat(Patterns.firstMismatch(read, 7)).as("what the dead exporter wrote, read by RMA").isEqualTo(-1);
                region.close();
                assertThat(conduit.ipcCacheStats().entriesInUse()).as("the region's use, released").isZero();
            }
        }
        OpenResources after = OpenResources.ofThisProcess();
        assertThat(after.conduitFds()).as("Conduit's descriptors here: %s, before %s", after, before).isEqualTo(before.conduitFds());
        assertThat(after.conduitMappings()).as("Conduit's mappings here: %s, before %s", after, before).isEqualTo(before.conduitMappings());
    }

    /** Asks until the answer is {@code wanted} or {@link #LOOKS} looks went by; the last answer. */
    private static <T> T eventually(Supplier<T> look, T wanted) throws InterruptedException {
        T answer = look.get();
        for (int i = 0; i < LOOKS && !answer.equals(wanted); i++) {
            Thread.sleep(50);
            answer = look.get();
        }
        return answer;
    }
}
