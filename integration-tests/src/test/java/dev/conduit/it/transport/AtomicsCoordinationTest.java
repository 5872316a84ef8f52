package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.WorkerAddress;
import dev.conduit.it.LoadTest;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static dev.conduit.it.transport.AtomicsCoordination.DATA;
import static dev.conduit.it.transport.AtomicsCoordination.EPOCH;
import static dev.conduit.it.transport.AtomicsCoordination.FIRST;
import static dev.conduit.it.transport.AtomicsCoordination.GUARD;
import static dev.conduit.it.transport.AtomicsCoordination.LOCK;
import static dev.conduit.it.transport.AtomicsCoordination.REGION_SIZE;
import static dev.conduit.it.transport.AtomicsCoordination.SECOND;
import static dev.conduit.it.transport.AtomicsCoordination.SEQUENCE;
import static dev.conduit.it.transport.AtomicsCoordination.SLOTS;
import static dev.conduit.it.transport.AtomicsCoordination.SLOT_COUNT;
import static dev.conduit.it.transport.AtomicsCoordination.word;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Processes coordinated through atomics on one region ({@link AtomicsCoordination}, the recipe of
 * docs/runtime.md, "Coordinating processes with atomics"): a coordinator exports it, four client
 * JVMs (one in a container) with three threads each on a {@code MULTI} worker count, lock and
 * claim slots; a lock holder is killed with {@code SIGKILL}; the coordinator is killed; a put is
 * announced by a fetch-add.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
@LoadTest
class AtomicsCoordinationTest {

    private static final int CLIENTS = 4;
    private static final int THREADS = 3;

    /**
     * No update is lost: the sequence ends at exactly what every thread of every client added plus
     * what the coordinator added at the same time with its own {@code VarHandle}, and each thread's
     * fetch-adds return rising values; the lock is held by one thread of one process at a time (no
     * holder finds the two words it guards apart, and they end at the count of entries); every slot
     * claimed is released. Misuses are refused naming the cause and the remedy.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void clientsWithThreadsLoseNoUpdateHoldTheLockOneAtATimeAndReleaseEverySlot(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        long counts = 20_000;
        long entries = 1_000;
        long claims = 5_000;
        long local = 50_000;
        List<ChildJvm> clients = new ArrayList<>();
        try (Conduit conduit = Setup.conduit(shared, plugin);
             AtomicsCoordination.Coordinator coordinator = new AtomicsCoordination.Coordinator(conduit, plugin)) {
            String address = HexFormat.of().formatHex(coordinator.address().toBytes());
            for (int i = 0; i < CLIENTS; i++) {
                ChildJvm child = ChildJvm.builder(AtomicsCoordinationPeer.class).sharedDirectory(shared)
                        .launcher(i == 0 ? Launcher.container() : Launcher.direct()).start();
                clients.add(child);
                child.call("client", plugin, address);
            }
            MemorySegment words = coordinator.words();

            List<String> counted = onEachClient(clients, c -> c.call("count", THREADS, counts), () -> {
                for (long i = 0; i < local; i++) AtomicsCoordination.addLocally(words, SEQUENCE, 1);
            });
            for (String c : counted) Setup.report("%s: %s", plugin, c);
            assertThat(counted).as("every thread's fetch-adds returned rising values").allMatch(c -> c.startsWith("rising=true "));
            assertThat(word(words, SEQUENCE)).as("the sequence after %d fetch-adds by each of %d threads of %d processes and %d "
                    + "VarHandle adds of the coordinator", counts, THREADS, CLIENTS, local).isEqualTo(CLIENTS * THREADS * counts + local);

            List<String> locked = onEachClient(clients, c -> c.call("locked", THREADS, entries), () -> { });
            assertThat(locked).as("holders that found the guarded words apart").containsOnly("torn=0");
            assertThat(word(words, FIRST)).isEqualTo(CLIENTS * THREADS * entries);
            assertThat(word(words, SECOND)).isEqualTo(CLIENTS * THREADS * entries);
            assertThat(word(words, LOCK)).as("the lock after the last holder").isZero();

            List<String> slots = onEachClient(clients, c -> c.call("slots", THREADS, claims), () -> { });
            assertThat(slots).as("claims that found every slot taken, with at most one claim per thread").containsOnly("full=0");
            for (int i = 0; i < SLOT_COUNT; i++) assertThat(word(words, SLOTS + 8L * i)).as("slot %d", i).isZero();

            try (AtomicsCoordination.Client self = new AtomicsCoordination.Client(conduit, plugin, coordinator.address())) {
                var ep = self.endpoint();
                var region = self.words();
                assertThatThrownBy(() -> ep.fetchAdd(region, 4, 1)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("offset 4").hasMessageContaining("multiple of 8");
                assertThatThrownBy(() -> ep.compareAndSwap(region, REGION_SIZE, 0, 1)).isInstanceOf(IndexOutOfBoundsException.class)
                        .hasMessageContaining("at offset " + REGION_SIZE).hasMessageContaining(REGION_SIZE + " bytes");
                assertThatThrownBy(() -> ep.fetchAdd(region, -8, 1)).isInstanceOf(IndexOutOfBoundsException.class);
                ep.close();
                assertThatThrownBy(() -> ep.fetchAdd(region, SEQUENCE, 1)).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("its endpoint was closed").hasMessageContaining("open the region again");
            }
            for (ChildJvm c : clients) assertThat(c.exit()).isZero();
        } finally {
            for (ChildJvm c : clients) c.close();
        }
    }

    /**
     * A client killed with {@code SIGKILL} while it holds the lock, between the two writes of its
     * critical section, and a slot: its endpoint at the coordinator fails, its identity region's
     * exporter is then {@code DEAD}, and the coordinator takes back the lock and the slot (a CAS from
     * that session only) and bumps the epoch; a client waiting for the lock gets it and finds the
     * guarded words apart, which it repairs.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aLockHolderKilledWithSigkillIsJudgedDeadByItsLeaseAndItsLockAndSlotAreTakenBack(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin);
             AtomicsCoordination.Coordinator coordinator = new AtomicsCoordination.Coordinator(conduit, plugin);
             ChildJvm holder = ChildJvm.builder(AtomicsCoordinationPeer.class).sharedDirectory(shared).launcher(Launcher.container()).start();
             ChildJvm waiter = ChildJvm.builder(AtomicsCoordinationPeer.class).sharedDirectory(shared).start()) {
            String address = HexFormat.of().formatHex(coordinator.address().toBytes());
            long holderSession = Long.parseLong(ChildJvm.parseFields(holder.call("client", plugin, address)).get("session"));
            waiter.call("client", plugin, address);
            waiter.call("locked", 1, 10);
            MemorySegment words = coordinator.words();
            String slot = ChildJvm.parseFields(holder.call("hold")).get("slot");
            assertThat(word(words, LOCK)).as("the lock's owner word").isEqualTo(holderSession);
            assertThat(word(words, SLOTS + 8L * Integer.parseInt(slot))).isEqualTo(holderSession);
            assertThat(word(words, FIRST)).isEqualTo(11);

            long killed = System.nanoTime();
            holder.kill();
            Setup.waitUntil(() -> word(words, LOCK) != holderSession, GUARD, () -> "the coordinator took the dead holder's lock back");
            Setup.report("%s: the lock was free %.1f ms after the holder's SIGKILL was sent", plugin, (System.nanoTime() - killed) / 1e6);
            Map<String, String> repaired = ChildJvm.parseFields(waiter.call("repair"));
            // The coordinator notes the session after freeing the lock, which the waiter may take first.
            Setup.waitUntil(() -> !coordinator.recovered().isEmpty(), GUARD, () -> "the coordinator noted what it took back");
            assertThat(repaired).as("what the next holder found").containsEntry("first", "11").containsEntry("second", "10");
            assertThat(coordinator.recovered()).as("sessions taken back, with their endpoint's failure").containsOnlyKeys(holderSession);
            assertThat(coordinator.recovered().get(holderSession)).hasMessageContaining("died")
                    .extracting(PeerFailedException::reason).isEqualTo(PeerFailedException.Reason.DIED);
            assertThat(coordinator.slotsTakenBack()).isEqualTo(1);
            assertThat(word(words, EPOCH)).as("locks taken back from dead holders").isEqualTo(1);
            assertThat(word(words, LOCK)).isZero();
            assertThat(word(words, SECOND)).isEqualTo(11);
            for (int i = 0; i < SLOT_COUNT; i++) assertThat(word(words, SLOTS + 8L * i)).as("slot %d", i).isZero();
            assertThat(waiter.exit()).isZero();
        }
    }

    /**
     * A lock holder whose worker closes while its process lives on (as a hung one would be failed
     * while it lives): its endpoint at the coordinator fails ("closed"), but its identity region's
     * exporter is still ALIVE, so it keeps the lock and its slot, which a live process may still
     * write through; once its process exits they are taken back. Taken back at the endpoint's
     * failure, the lock would be given to another while its holder can still write.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aLockHolderWhoseWorkerClosedKeepsTheLockWhileItsProcessLivesAndLosesItWhenItExits(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin);
             AtomicsCoordination.Coordinator coordinator = new AtomicsCoordination.Coordinator(conduit, plugin);
             ChildJvm holder = ChildJvm.builder(AtomicsCoordinationPeer.class).sharedDirectory(shared).start();
             ChildJvm waiter = ChildJvm.builder(AtomicsCoordinationPeer.class).sharedDirectory(shared).start()) {
            String address = HexFormat.of().formatHex(coordinator.address().toBytes());
            long holderSession = Long.parseLong(ChildJvm.parseFields(holder.call("client", plugin, address)).get("session"));
            waiter.call("client", plugin, address);
            MemorySegment words = coordinator.words();
            int slot = Integer.parseInt(ChildJvm.parseFields(holder.call("hold")).get("slot"));

            holder.call("closeWorker");
            Setup.waitUntil(() -> coordinator.suspected().containsKey(holderSession), GUARD, () -> "the holder's endpoint failed at the coordinator");
            long turn = coordinator.turns();
            Setup.waitUntil(() -> coordinator.turns() >= turn + 3, GUARD, () -> "the coordinator judged its suspect a few times");
            assertThat(coordinator.recovered()).as("sessions taken back while the holder's process lives").isEmpty();
            assertThat(word(words, LOCK)).as("the lock of a live holder whose worker closed").isEqualTo(holderSession);
            assertThat(word(words, SLOTS + 8L * slot)).isEqualTo(holderSession);

            assertThat(holder.exit()).isZero();
            Map<String, String> repaired = ChildJvm.parseFields(waiter.call("repair"));
            assertThat(repaired).containsEntry("first", "1").containsEntry("second", "0");
            Setup.waitUntil(() -> !coordinator.recovered().isEmpty(), GUARD, () -> "the coordinator noted what it took back");
            assertThat(coordinator.recovered().get(holderSession)).as("the failure that made it a suspect").hasMessageContaining("closed")
                    .extracting(PeerFailedException::reason).isEqualTo(PeerFailedException.Reason.CLOSED);
            assertThat(coordinator.slotsTakenBack()).isEqualTo(1);
            assertThat(waiter.exit()).isZero();
        }
    }

    /**
     * The coordinator killed: the clients' mapping of its region stays, with what was written last;
     * the endpoint's failure (found by the client's progress thread) makes every later RMA on the
     * region throw {@link PeerFailedException} saying the peer died, while the region itself and an
     * import of the same handle (which still reads the last words) say {@code DEAD}.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void rmaOnTheRegionOfAKilledCoordinatorThrowsPeerFailedOnceItsEndpointFailed(String plugin,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (ChildJvm child = ChildJvm.builder(AtomicsCoordinationPeer.class).sharedDirectory(shared).start();
             Conduit conduit = Setup.conduit(shared, plugin)) {
            WorkerAddress address = WorkerAddress.fromBytes(HexFormat.of().parseHex(
                    ChildJvm.parseFields(child.call("coordinator", plugin)).get("address")));
            try (AtomicsCoordination.Client client = new AtomicsCoordination.Client(conduit, plugin, address);
                 ImportedRegion imported = conduit.importRegion(client.regionHandle())) {
                var ep = client.endpoint();
                for (int i = 0; i < 5; i++) ep.fetchAdd(client.words(), SEQUENCE, 1);
                assertThat(child.call("word", SEQUENCE)).isEqualTo("value=5");
                assertThat(client.words().exporterState()).isEqualTo(ExporterState.ALIVE);

                child.kill();
                Setup.waitUntil(() -> client.coordinatorFailure() != null, GUARD, () -> "the client's endpoint to the killed coordinator failed");
                assertThat(client.coordinatorFailure()).hasMessageContaining("died");
                assertThatThrownBy(() -> ep.fetchAdd(client.words(), SEQUENCE, 1)).isInstanceOf(PeerFailedException.class)
                        .hasMessageContaining("died");
                assertThatThrownBy(() -> ep.compareAndSwap(client.words(), LOCK, 0, 1)).isInstanceOf(PeerFailedException.class);
                assertThatThrownBy(() -> ep.put(MemorySegment.ofArray(new long[1]), client.words(), DATA)).isInstanceOf(PeerFailedException.class);
                assertThatThrownBy(ep::flush).isInstanceOf(PeerFailedException.class);
                assertThat(client.words().exporterState()).as("the peer region its endpoint's failure closed").isEqualTo(ExporterState.DEAD);
                assertThat(imported.exporterState()).isEqualTo(ExporterState.DEAD);
                assertThat(imported.segment().get(ValueLayout.JAVA_LONG, SEQUENCE)).as("the dead coordinator's word, still mapped here").isEqualTo(5);
            }
        }
    }

    /**
     * A put followed by a fetch-add on the same endpoint, with no flush between: a reader that sees
     * the fetch-add's result (an acquire read of the word) sees the put's bytes. The client publishes
     * records in a ring, each announced by a fetch-add of SEQUENCE; the coordinator reads SEQUENCE
     * with acquire and the record it announces, whose first, middle and last words must hold that
     * number or a later one. Records of 16 bytes and of 1 MiB (a copy the JDK may make with other
     * instructions than a small one's).
     */
    @ParameterizedTest
    @CsvSource({"memfd, 16, 300000", "posix, 16, 300000", "memfd, 1048576, 2000", "posix, 1048576, 2000"})
    void aPutBeforeAFetchAddIsSeenByAReaderThatSeesTheFetchAddsResult(String plugin, long size, long records,
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        long ring = AtomicsCoordinationPeer.records(size);
        long[] marked = AtomicsCoordinationPeer.markedWords(size);
        try (Conduit conduit = Setup.conduit(shared, plugin);
             AtomicsCoordination.Coordinator coordinator = new AtomicsCoordination.Coordinator(conduit, plugin);
             ChildJvm publisher = ChildJvm.builder(AtomicsCoordinationPeer.class).sharedDirectory(shared).start()) {
            publisher.call("client", plugin, HexFormat.of().formatHex(coordinator.address().toBytes()));
            MemorySegment words = coordinator.words();
            CompletableFuture<String> published = CompletableFuture.supplyAsync(() -> publisher.call("publish", records, size));
            long reads = 0;
            long unseen = 0;
            long last = 0;
            while (last < records) {
                long sequence = word(words, SEQUENCE);
                if (sequence == 0) continue;
                long at = DATA + size * ((sequence - 1) % ring);
                for (long w : marked) if (words.get(ValueLayout.JAVA_LONG, at + w) < sequence) unseen++;
                reads++;
                last = sequence;
                if (published.isDone() && word(words, SEQUENCE) < records) break; // failed: the join below says why
            }
            assertThat(published.get(GUARD.toSeconds(), TimeUnit.SECONDS)).isEqualTo("published=" + records);
            Setup.report("%s: %d reads of an announced record of %d bytes", plugin, reads, size);
            assertThat(unseen).as("words of records announced by the fetch-add but not yet holding the put's bytes, of %d reads", reads)
                    .isZero();
        }
    }

    /** Runs {@code call} on each client at once, and {@code meanwhile} here; returns the answers in the clients' order. */
    private static List<String> onEachClient(List<ChildJvm> clients, Function<ChildJvm, String> call, Runnable meanwhile) throws Exception {
        List<CompletableFuture<String>> answers = new ArrayList<>();
        for (ChildJvm c : clients) answers.add(CompletableFuture.supplyAsync(() -> call.apply(c)));
        meanwhile.run();
        List<String> all = new ArrayList<>();
        for (CompletableFuture<String> a : answers) all.add(a.get(GUARD.toSeconds() * 2, TimeUnit.SECONDS));
        return all;
    }
}
