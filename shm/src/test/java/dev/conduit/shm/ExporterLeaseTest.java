package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The exporter of an imported chunk judged by the lease its chunk's name points to
 * (ExporterStateTest in integration-tests judges real exporters across processes).
 */
class ExporterLeaseTest {

    private static final String KEY = "shared.dir (CONDUIT_SHARED_DIR)";

    @TempDir
    Path shared;

    private final Libc libc = Linux.libc();

    @Test
    void anExporterReadsAliveWhileItHoldsItsLeaseAndDeadForGoodOnceItClosedIt() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY)) {
            OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test");
            ExporterLease chunk = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newFileName(".chunk"), libc.geteuid());
            ExporterLease socket = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newSocketName(".sock"), libc.geteuid());
            assertThat(chunk.state()).isEqualTo(ExporterState.ALIVE);
            assertThat(socket.state()).isEqualTo(ExporterState.ALIVE);
            lease.close();
            assertThat(chunk.state()).as("its lease removed by its close").isEqualTo(ExporterState.DEAD);
            // A file made under that name since, locked, by the same user: the exporter that died does not come back.
            String leaseName = OwnerLease.leaseName("conduit-test", lease.owner());
            try (SharedDirectory again = SharedDirectory.open(libc, shared, KEY);
                 var planted = again.createExclusive(leaseName)) {
                libc.tryFlock(planted, dev.conduit.linux.LockFlags.LOCK_EX | dev.conduit.linux.LockFlags.LOCK_NB);
                assertThat(chunk.state()).as("once dead").isEqualTo(ExporterState.DEAD);
            }
        }
    }

    @Test
    void aLeaseLeftUnlockedReadsDeadAndOneOfAnotherUserThanTheChunksIsNone() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY);
             OwnerLease live = OwnerLease.acquire(libc, directory, "conduit-test")) {
            String owner = SharedDirectory.randomId();
            Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner))); // unlocked: its owner died
            assertThat(ExporterLease.of(libc, shared, KEY, "conduit-test", "conduit-test-" + owner + "-" + SharedDirectory.randomId()
                    + ".chunk", libc.geteuid()).state()).isEqualTo(ExporterState.DEAD);
            assertThat(ExporterLease.of(libc, shared, KEY, "conduit-test", live.newFileName(".chunk"), libc.geteuid() + 54321).state())
                    .as("a held lease of another user than the chunk's").isEqualTo(ExporterState.DEAD);
        }
    }

    /** A look holds no descriptor between calls; what it costs is printed, never asserted. */
    @Test
    void looksLeaveNoDescriptorOpen() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY);
             OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
            ExporterLease exporter = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newFileName(".chunk"), libc.geteuid());
            for (int i = 0; i < 1_000; i++) exporter.state(); // warm
            long descriptors = openDescriptors();
            int looks = 20_000;
            long start = System.nanoTime();
            for (int i = 0; i < looks; i++) assertThat(exporter.state()).isEqualTo(ExporterState.ALIVE);
            long nanos = System.nanoTime() - start;
            assertThat(openDescriptors()).as("descriptors open after %d looks", looks).isEqualTo(descriptors);
            System.out.printf("ExporterLease.state() of a live owner: %d ns per look (mean of %d)%n", nanos / looks, looks);
        }
    }

    private static long openDescriptors() throws java.io.IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    @Test
    void aNameThatCarriesNoOwnerNamesNoLease() {
        String id = SharedDirectory.randomId();
        assertThat(ExporterLease.of(libc, shared, KEY, "conduit-test", "conduit-other-" + id + "-" + id + ".chunk", 0)).isNull();
        assertThat(ExporterLease.of(libc, shared, KEY, "conduit-test", "conduit-test-" + id + ".chunk", 0)).isNull();
        assertThat(ExporterLease.of(libc, shared, KEY, "conduit-test", "conduit-test-nothex-" + id, 0)).isNull();
        assertThat(ExporterLease.of(libc, shared, KEY, "conduit-test", "conduit-test-", 0)).isNull();
        assertThat(ExporterLease.of(libc, shared, KEY, "conduit-test", "conduit-test-worker-" + id + "-" + id, 0))
                .as("an owner id with its word").isNotNull();
    }

    /** Another user's {@code 0600} lease (an exporter among the trusted uids) cannot be judged; a shortage is an error naming it. */
    @Test
    void aLeaseThisProcessMayNotOpenIsUnknownAndAnyOtherFailureSaysWhatAndWhy() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY);
             OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
            String chunk = lease.newFileName(".chunk");
            assertThat(ExporterLease.of(refusingLeases(Errno.EACCES), shared, KEY, "conduit-test", chunk, libc.geteuid()).state())
                    .isEqualTo(ExporterState.UNKNOWN);
            assertThatThrownBy(() -> ExporterLease.of(refusingLeases(Errno.EMFILE), shared, KEY, "conduit-test", chunk, libc.geteuid())
                    .state()).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot judge whether the exporter lives: its lease " + lease.path())
                    .hasMessageContaining("EMFILE").hasMessageContaining("ulimit");
            assertThatThrownBy(() -> ExporterLease.of(libc, shared.resolve("gone"), KEY, "conduit-test", chunk, libc.geteuid()).state())
                    .isInstanceOf(ConduitException.class).hasMessageContaining("cannot open the shared directory " + shared.resolve("gone"))
                    .hasMessageContaining("ENOENT");
        }
    }

    /**
     * A cleaner (systemd-logind's {@code RemoveIPC=yes}, a tmpfiles rule) removes the lease while its
     * exporter lives and holds its lock: {@code ChunkMapping#exporterState} promises to judge
     * "something the exporter holds for as long as it lives and the kernel drops when it dies", and
     * that once {@code DEAD} it never says {@code ALIVE} again; a consumer that takes back what a
     * {@code DEAD} exporter held (guarantees: a lock word, slots) then takes it from a live process.
     * Until 2026-12-07 every look went by name, found nothing and read {@code DEAD}, for good, while
     * the exporter lived; now the descriptor the first look found held is kept and locked again.
     */
    @Test
    void anExporterWhoseLeaseACleanerRemovedWhileItLivesIsNotJudgedDead() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY);
             OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
            ExporterLease exporter = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newFileName(".chunk"), libc.geteuid());
            assertThat(exporter.state()).isEqualTo(ExporterState.ALIVE);
            Files.delete(lease.path()); // the cleaner
            assertThat(lease.isRemoved()).as("the exporter lives, its lock held on the removed lease").isTrue();
            assertThat(exporter.state()).as("a live exporter whose lease lost its name").isEqualTo(ExporterState.ALIVE);
            lease.close();
            assertThat(exporter.state()).as("its close releases the lock on the lease it kept").isEqualTo(ExporterState.DEAD);
        }
    }

    /**
     * A chunk of an exporter mapped after a cleaner removed its lease: the exporter lives and this
     * process watches its lease already, through an earlier chunk's mapping. Until 2026-12-07 each
     * {@code ExporterLease} kept a share only once a look of its own found the lease held, so the new
     * one looked by name, found nothing and read {@code DEAD}, for good, beside the earlier one's
     * {@code ALIVE}; now a first look takes up the watch this process keeps.
     */
    @Test
    void aChunkMappedAfterACleanerRemovedTheLeaseOfAWatchedExporterReadsAlive() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY);
             OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
            ExporterLease earlier = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newFileName(".chunk"), libc.geteuid());
            assertThat(earlier.state()).isEqualTo(ExporterState.ALIVE);
            Files.delete(lease.path()); // the cleaner
            ExporterLease later = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newFileName(".chunk"), libc.geteuid());
            assertThat(later.state()).as("a live exporter's chunk mapped after its lease lost its name").isEqualTo(ExporterState.ALIVE);
            earlier.close();
            assertThat(later.state()).as("its share outlives the earlier mapping's").isEqualTo(ExporterState.ALIVE);
            lease.close();
            assertThat(later.state()).isEqualTo(ExporterState.DEAD);
            later.close();
        }
    }

    /**
     * Two threads that open the same lease at once keep one descriptor: the one added second is
     * closed, and its user shares the first.
     */
    @Test
    void aWatchAddedUnderAKeyTakenMeanwhileIsClosedAndTheFirstShared() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY);
             OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
            String name = OwnerLease.leaseName("conduit-test", lease.owner());
            LeaseWatchTable table = new LeaseWatchTable();
            LeaseWatch first = table.add("k", LeaseWatch.open(libc, directory, name));
            LeaseWatch second = LeaseWatch.open(libc, directory, name);
            assertThat(table.add("k", second)).isSameAs(first);
            assertThat(second.ownerAliveUnlessClosed()).as("closed").isNull();
            assertThat(table.size()).isEqualTo(1);
            table.release("k", first);
            assertThat(first.ownerAliveUnlessClosed()).as("one user left").isTrue();
            table.release("k", first);
            assertThat(first.ownerAliveUnlessClosed()).as("closed by the last").isNull();
            assertThat(table.size()).isZero();
        }
    }

    /**
     * The descriptor a look keeps is one per exporter, not one per mapping (an importer may cache
     * thousands of one exporter's chunks), and the last mapping's unmap gives it back.
     */
    @Test
    void theMappingsOfOneExporterShareOneKeptDescriptorOfItsLeaseWhichTheLastCloseGivesBack() throws Exception {
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, KEY);
             OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
            int before = ExporterLease.keptLeases();
            ExporterLease first = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newFileName(".chunk"), libc.geteuid());
            ExporterLease second = ExporterLease.of(libc, shared, KEY, "conduit-test", lease.newFileName(".chunk"), libc.geteuid());
            assertThat(ExporterLease.keptLeases()).as("nothing kept before a look").isEqualTo(before);
            assertThat(first.state()).isEqualTo(ExporterState.ALIVE);
            assertThat(second.state()).isEqualTo(ExporterState.ALIVE);
            assertThat(ExporterLease.keptLeases()).as("one descriptor for both").isEqualTo(before + 1);
            first.close();
            first.close(); // idempotent: the other's share stays
            assertThat(second.state()).isEqualTo(ExporterState.ALIVE);
            assertThat(ExporterLease.keptLeases()).isEqualTo(before + 1);
            second.close();
            assertThat(ExporterLease.keptLeases()).as("the last close gives it back").isEqualTo(before);
            assertThat(second.state()).as("a closed one looks by name").isEqualTo(ExporterState.ALIVE);
            assertThat(ExporterLease.keptLeases()).as("and keeps nothing once closed").isEqualTo(before);
        }
    }

    /** This process's libc, but opening a {@code .lease} fails with {@code errno}. */
    private Libc refusingLeases(int errno) {
        return (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("openBeneath") && String.valueOf(args[1]).endsWith(".lease")) {
                        throw new ErrnoException("openat2", errno, String.valueOf(args[1]), "injected by the test");
                    }
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
