package dev.conduit.shm;

import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.BestEffortLog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Owners come and go while others reclaim the files of dead ones: as when several workers open at
 * once on one shared directory, each reclaiming before it acquires its own lease.
 */
class OwnerLeaseTest {

    @TempDir
    Path shared;

    @Test
    void acquiringNeverFailsWhileOthersReclaimAndEveryLeaseStaysLive() throws Exception {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            AtomicBoolean done = new AtomicBoolean();
            ExecutorService threads = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> reclaimers = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    reclaimers.add(threads.submit(() -> {
                        while (!done.get()) OwnerLease.reclaimDead(libc, directory, "conduit-test");
                    }));
                }
                List<Future<Integer>> owners = new ArrayList<>();
                for (int o = 0; o < 2; o++) {
                    owners.add(threads.submit(() -> {
                        int live = 0;
                        for (int i = 0; i < 2_000; i++) {
                            try (OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
                                if (OwnerLease.isAlive(libc, directory, OwnerLease.leaseName("conduit-test", lease.owner()))) live++;
                            }
                        }
                        return live;
                    }));
                }
                for (Future<Integer> owner : owners) assertThat(owner.get()).isEqualTo(2_000);
                done.set(true);
                for (Future<?> reclaimer : reclaimers) reclaimer.get();
            } finally {
                done.set(true);
                threads.shutdownNow();
            }
        }
        assertThat(shared).isEmptyDirectory();
    }

    /**
     * A probe file lives for microseconds; one a process killed between creating and removing it
     * left behind (seen in a soak of killed peers) is reclaimed once it is older than a minute,
     * while a fresh one, another process's probe under way, stays; and so does an old file whose
     * name only starts like a probe's (it was removed: any "{@code <prefix>-probe-}" name was).
     */
    @Test
    void aProbeFileLeftByAKilledProcessIsReclaimedOnceItIsOlderThanAMinute() throws Exception {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            String left = OwnerLease.newProbeName("conduit-test");
            String underWay = OwnerLease.newProbeName("conduit-test");
            Path leftPath = java.nio.file.Files.createFile(shared.resolve(left));
            java.nio.file.Files.createFile(shared.resolve(underWay));
            java.nio.file.Files.setLastModifiedTime(leftPath,
                    java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 120_000));
            // Another program's files that only start like a probe's: old, but not of the form newProbeName makes.
            List<Path> foreign = new ArrayList<>();
            for (String name : List.of("conduit-test-probe-results.csv", "conduit-test-probe-", left + ".bak", left.substring(0, left.length() - 1))) {
                Path file = java.nio.file.Files.createFile(shared.resolve(name));
                java.nio.file.Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 120_000));
                foreign.add(file);
            }
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test")).containsExactly(left);
            assertThat(shared.resolve(left)).doesNotExist();
            assertThat(shared.resolve(underWay)).exists();
            assertThat(foreign).as("files not named as a probe is").allMatch(java.nio.file.Files::exists);
        }
    }

    /**
     * A reclaim that tells a listener what it removes ({@code conduit reclaim}, which prints it) logs
     * nothing of it itself; one without logs its INFO. {@code conduit reclaim} printed every file
     * twice: its report, then the reclaim's INFO on standard error.
     */
    @Test
    void aReclaimThatTellsAListenerLogsNothingOfItItself() throws Exception {
        Libc libc = Linux.libc();
        List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = keepingShmLog(logged);
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            String owner = "0123456789abcdef0123456789abcdef";
            java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner)));
            java.nio.file.Files.writeString(shared.resolve("conduit-test-" + owner + "-1.chunk"), "data");
            List<String> told = new ArrayList<>();
            OwnerLease.reclaimDead(libc, directory, "conduit-test", telling(told));
            assertThat(told).containsExactly("conduit-test-" + owner + "-1.chunk 4", OwnerLease.leaseName("conduit-test", owner) + " 0");
            assertThat(logged).isEmpty();

            java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner)));
            OwnerLease.reclaimDead(libc, directory, "conduit-test");
            assertThat(logged).singleElement().asString().startsWith("INFO reclaimed 1 file of dead owners in");
        } finally {
            SHM_LOG.removeHandler(handler);
        }
    }

    /**
     * A dry run ({@link OwnerLease#wouldReclaimDead}) tells, file by file and in the same order, what the reclaim run
     * after it removes: a dead owner's files then its lease, a pending lease nobody holds, a probe file older than a
     * minute; and removes nothing, logs nothing, tells nothing of a live owner's files or of a fresh probe, and holds no
     * lock once done (the reclaim after it locks the dead owner's lease).
     */
    @Test
    void aDryRunTellsWhatTheReclaimAfterItRemovesAndRemovesNothing() throws Exception {
        Libc libc = Linux.libc();
        List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = keepingShmLog(logged);
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)");
             OwnerLease live = OwnerLease.acquire(libc, directory, "conduit-test")) {
            java.nio.file.Files.writeString(shared.resolve(live.newFileName(".chunk")), "live");
            String dead = SharedDirectory.randomId();
            java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", dead)));
            java.nio.file.Files.writeString(shared.resolve("conduit-test-" + dead + "-1.chunk"), "data");
            java.nio.file.Files.createFile(shared.resolve("conduit-test-" + SharedDirectory.randomId() + ".lease-pending"));
            java.nio.file.Path stale = java.nio.file.Files.createFile(shared.resolve(OwnerLease.newProbeName("conduit-test")));
            java.nio.file.Files.setLastModifiedTime(stale, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 120_000));
            java.nio.file.Files.createFile(shared.resolve(OwnerLease.newProbeName("conduit-test")));
            List<String> before = java.util.Arrays.stream(shared.toFile().list()).sorted().toList();

            List<String> wouldTell = new ArrayList<>();
            List<String> wouldRemove = OwnerLease.wouldReclaimDead(libc, directory, "conduit-test", telling(wouldTell));

            assertThat(java.util.Arrays.stream(shared.toFile().list()).sorted().toList()).as("nothing removed").isEqualTo(before);
            assertThat(wouldTell).hasSize(4).noneMatch(told -> told.contains(live.owner()));
            assertThat(wouldRemove).containsExactly(stale.getFileName().toString(), "conduit-test-" + dead + "-1.chunk",
                    OwnerLease.leaseName("conduit-test", dead));
            assertThat(logged).isEmpty();
            List<String> told = new ArrayList<>();
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test", telling(told))).isEqualTo(wouldRemove);
            assertThat(told).isEqualTo(wouldTell);
            assertThat(OwnerLease.isAlive(libc, directory, OwnerLease.leaseName("conduit-test", live.owner()))).isTrue();
        } finally {
            SHM_LOG.removeHandler(handler);
        }
    }

    private static final java.util.logging.Logger SHM_LOG = java.util.logging.Logger.getLogger("dev.conduit.shm");

    /** Keeps what logger dev.conduit.shm logs from now on in {@code logged}, as "LEVEL message"; remove the handler after. */
    private static java.util.logging.Handler keepingShmLog(List<String> logged) {
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override public void publish(java.util.logging.LogRecord record) { logged.add(record.getLevel() + " " + record.getMessage()); }
            @Override public void flush() { }
            @Override public void close() { }
        };
        SHM_LOG.addHandler(handler);
        return handler;
    }

    /** A listener that keeps each file it is told of as "name bytes", or "not name" for one not removed. */
    private static OwnerLease.ReclaimListener telling(List<String> told) {
        return new OwnerLease.ReclaimListener() {
            @Override public void removed(String o, String name, long bytes) { told.add(name + " " + bytes); }
            @Override public void notRemoved(String o, String name, dev.conduit.linux.ErrnoException e) { told.add("not " + name); }
        };
    }

    /**
     * A dead owner's lease that another reclaim (or its owner's close) removes, with its files,
     * between this reclaim's open of it and its lock is left alone: it was locked and removed
     * again, and reported as this reclaim's removal of a dead owner's lease ({@code conduit reclaim}
     * listed a file it had not removed). Found in review.
     */
    @Test
    void aLeaseRemovedBetweenItsOpenAndItsLockIsLeftAlone() throws Exception {
        Libc real = Linux.libc();
        String owner = "0123456789abcdef0123456789abcdef";
        String lease = OwnerLease.leaseName("conduit-test", owner);
        String chunk = "conduit-test-" + owner + "-1.chunk";
        Libc racing = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("tryFlock")) {
                        // Another reclaim, between this one's open and its lock.
                        java.nio.file.Files.deleteIfExists(shared.resolve(chunk));
                        java.nio.file.Files.deleteIfExists(shared.resolve(lease));
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(racing, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            java.nio.file.Files.createFile(shared.resolve(lease));
            java.nio.file.Files.createFile(shared.resolve(chunk));
            List<String> told = new ArrayList<>();
            List<String> removed = OwnerLease.reclaimDead(racing, directory, "conduit-test", new OwnerLease.ReclaimListener() {
                @Override public void removed(String o, String name, long bytes) { told.add("removed " + name); }
                @Override public void notRemoved(String o, String name, dev.conduit.linux.ErrnoException e) {
                    told.add("not removed " + name + ": " + e.errnoName());
                }
            });
            assertThat(told).isEmpty();
            assertThat(removed).isEmpty();
            assertThat(java.nio.file.Files.list(shared)).isEmpty();
        }
    }

    @Test
    void aDecoyLeaseWhoseNameIsNoOwnerIdMakesNoLiveOwnersFilesLookDead() throws Exception {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)");
             OwnerLease live = OwnerLease.acquire(libc, directory, "conduit-test-worker")) {
            // Unlocked, so it reads as dead; its "owner" would be "worker", and every worker's lease starts with that.
            java.nio.file.Files.createFile(shared.resolve("conduit-test-worker.lease"));
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test")).isEmpty();
            assertThat(shared.resolve(OwnerLease.leaseName("conduit-test-worker", live.owner()))).exists();
            assertThat(OwnerLease.isAlive(libc, directory, OwnerLease.leaseName("conduit-test-worker", live.owner()))).isTrue();
            // The probe's counts judge owners as the reclaim does: the decoy was counted a dead owner.
            java.util.Map<String, String> details = new java.util.HashMap<>();
            OwnerLease.countOwners(libc, directory, "conduit-test", details);
            assertThat(details).containsEntry("live owners", "1").containsEntry("dead owners", "0");
        }
    }

    /**
     * A connection id is never 0, which a receiver reads as "no connection", also for an owner whose
     * id starts with 32 zero bits as its count comes round; and never an id the caller names
     * unusable (ShmTransport: one still taken).
     */
    @Test
    void connectionIdsSkip0AndEveryIdTheCallerNamesUnusable() {
        java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger(-1);
        assertThat(OwnerLease.nextConnectionId(0, count, id -> false)).isEqualTo(0xFFFF_FFFFL);
        assertThat(OwnerLease.nextConnectionId(0, count, id -> id == 1)).as("0, then 1, skipped").isEqualTo(2);
        long owner = 0xabcdef01L << 32;
        count.set(-1);
        assertThat(OwnerLease.nextConnectionId(owner, count, id -> id == (owner | 0xFFFF_FFFFL) || id == owner))
                .as("the count comes round past both").isEqualTo(owner | 1);
    }

    @Test
    void ownerIdsAreThoseAcquireMakes() {
        String id = "0123456789abcdef0123456789abcdef";
        assertThat(OwnerLease.isOwnerId(id)).isTrue();
        assertThat(OwnerLease.isOwnerId("worker-" + id)).isTrue();
        assertThat(OwnerLease.isOwnerId("worker")).isFalse();
        assertThat(OwnerLease.isOwnerId("worker-" + id.substring(1))).isFalse();
        assertThat(OwnerLease.isOwnerId(id.toUpperCase())).isFalse();
        assertThat(OwnerLease.isOwnerId("a-b-" + id)).isFalse();
        assertThat(OwnerLease.isOwnerId("-" + id)).isFalse();
    }

    @Test
    @org.junit.jupiter.api.Timeout(value = 60, threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD) // a guard against the hang this prevents (a blocked open), not a duration asserted
    void aFifoWithALeasesNameIsRefusedWithoutBlocking() throws Exception {
        Libc libc = Linux.libc();
        outputOfSuccessfulRun(List.of("mkfifo", shared.resolve("conduit-test-0123456789abcdef0123456789abcdef.lease").toString()));
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            String fifo = "conduit-test-0123456789abcdef0123456789abcdef.lease";
            assertThatThrownBy(() -> directory.openLease(fifo)).isInstanceOf(dev.conduit.linux.ErrnoException.class)
                    .hasMessageContaining("EINVAL").hasMessageContaining("regular file");
            assertThat(OwnerLease.isAlive(libc, directory, fifo)).as("no lease, so no live owner").isFalse();
            assertThatThrownBy(() -> LeaseWatch.open(libc, directory, fifo)).hasMessageContaining("EINVAL");
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test")).as("skipped, not waited on").isEmpty();
        }
    }

    /**
     * A device node under a lease's name (a container's root makes one in a bind-mounted directory with Docker's default
     * CAP_MKNOD) is refused as no regular file before it is opened, by every look at leases, a root reclaim's too: its
     * driver is never asked. Device 240:77 has no driver, so an open of it fails with ENXIO, which is what openLease
     * said, and every liveness look, watch and reclaim opened it: a node with a watchdog's numbers would have armed the
     * host's watchdog (found by helper h35).
     */
    @Test
    void aDeviceNodeWithALeasesNameIsRefusedBeforeItIsOpened() throws Exception {
        Libc libc = Linux.libc();
        String device = "conduit-test-0123456789abcdef0123456789abcdef.lease";
        Ran mknod = runToEnd(List.of("mknod", shared.resolve(device).toString(), "c", "240", "77"));
        org.assertj.core.api.Assumptions.assumeThat(mknod.exitCode()).as("mknod (CAP_MKNOD): " + mknod.output()).isZero();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThatThrownBy(() -> directory.openLease(device)).isInstanceOfSatisfying(dev.conduit.linux.ErrnoException.class,
                            e -> assertThat(e.errnoName()).as("refused before the device's open, which says ENXIO").isEqualTo("EINVAL"))
                    .hasMessageContaining("regular file");
            assertThat(OwnerLease.isAlive(libc, directory, device)).as("no lease, so no live owner").isFalse();
            assertThatThrownBy(() -> LeaseWatch.open(libc, directory, device)).hasMessageContaining("EINVAL");
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test")).as("not judged").isEmpty();
            assertThat(shared.resolve(device)).as("no lease: not removed either").exists();
        }
    }

    @Test
    void aPendingLeaseWithALiveOwnersIdTakesNoneOfItsFiles() throws Exception {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)");
             OwnerLease live = OwnerLease.acquire(libc, directory, "conduit-test")) {
            java.nio.file.Path data = java.nio.file.Files.createFile(shared.resolve("conduit-test-" + live.owner() + "-data"));
            java.nio.file.Path decoy = java.nio.file.Files.createFile(shared.resolve("conduit-test-" + live.owner() + ".lease-pending"));
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test")).isEmpty();
            assertThat(data).as("the live owner's file").exists();
            assertThat(decoy).as("a pending lease owns nothing: only it goes").doesNotExist();
        }
    }

    @Test
    @org.junit.jupiter.api.Timeout(value = 60, threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD) // a hang guard
    void somethingThatIsNoLeaseMakesNoOwnerAliveAndThrowsNothing() throws Exception {
        Libc libc = Linux.libc();
        String id = "0123456789abcdef0123456789abcdef";
        outputOfSuccessfulRun(List.of("mkfifo", shared.resolve("conduit-test-worker-" + id + ".lease").toString()));
        java.nio.file.Files.createDirectory(shared.resolve("conduit-test-worker-f" + id.substring(1) + ".lease"));
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThat(OwnerLease.anyOwnerAlive(libc, directory, "conduit-test-worker", 0x01234567_00000001L, libc.geteuid())).isFalse();
            assertThat(OwnerLease.anyOwnerAlive(libc, directory, "conduit-test-worker", 0xf1234567_00000001L, libc.geteuid())).isFalse();
            assertThatThrownBy(() -> directory.openLease("conduit-test-worker-" + id + ".lease"))
                    .isInstanceOfSatisfying(dev.conduit.linux.ErrnoException.class, e -> assertThat(OwnerLease.isNoLease(e)).isTrue());
        }
    }
    /**
     * A directory where many owners died (a crash loop, a host that rebooted with no Conduit on the
     * directory since) is reclaimed in a few listings of it, not one per dead owner: every listing
     * reads the whole directory, so a listing per owner made a reclaim, which a worker runs inside
     * {@code progress()} at the check after a peer's death, quadratic in the directory's size. A
     * file a dead owner made after the reclaim's first listing (the owner lived then) still goes
     * with it, and its lease only after it, so that nothing is left without a lease to reclaim it by.
     */
    @Test
    void manyDeadOwnersAreReclaimedInAFewListingsOfTheDirectoryAndNoneOfTheirFilesIsLeft() throws Exception {
        Libc real = Linux.libc();
        java.util.concurrent.atomic.AtomicInteger listings = new java.util.concurrent.atomic.AtomicInteger();
        int deadOwners = 300;
        List<String> owners = new ArrayList<>();
        for (int i = 0; i < deadOwners; i++) {
            String owner = SharedDirectory.randomId();
            owners.add(owner);
            java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner))); // unlocked: its owner is dead
            java.nio.file.Files.createFile(shared.resolve("conduit-test-" + owner + "-" + SharedDirectory.randomId() + ".chunk"));
        }
        String madeLate = "conduit-test-" + owners.get(deadOwners - 1) + "-" + SharedDirectory.randomId() + ".chunk";
        Libc counting = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("listDirectory") && listings.incrementAndGet() == 1) {
                        // As if the last owner, alive at the first listing, made one more file and died just after it.
                        java.nio.file.Files.createFile(shared.resolve(madeLate));
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(counting, shared, "shared.dir (CONDUIT_SHARED_DIR)");
             OwnerLease live = OwnerLease.acquire(real, directory, "conduit-test")) {
            java.nio.file.Path liveFile = java.nio.file.Files.createFile(shared.resolve(live.newFileName(".chunk")));
            List<String> removed = OwnerLease.reclaimDead(counting, directory, "conduit-test");
            assertThat(removed).hasSize(2 * deadOwners + 1).contains(madeLate);
            assertThat(listings.get()).as("listings of the directory for " + deadOwners + " dead owners").isLessThanOrEqualTo(1 + 1 + deadOwners / 64);
            try (var left = java.nio.file.Files.list(shared)) {
                assertThat(left.map(f -> f.getFileName().toString()).toList())
                        .containsExactlyInAnyOrder(OwnerLease.leaseName("conduit-test", live.owner()), liveFile.getFileName().toString());
            }
        }
    }

    /**
     * A close that cannot remove one of its owner's files (here {@code unlinkat} fails with
     * {@code EACCES} for it, as when the directory's permissions changed while in use) keeps the
     * lease, unlocked: the owner reads as dead, and a reclaim by another owner, in this process or
     * any other, removes the file and then the lease. The close used to remove the lease anyway,
     * and the file, which no lease named any more, stayed for good: no reclaim ever looked at it.
     */
    @Test
    void aCloseThatCannotRemoveAFileOfItsOwnerKeepsTheLeaseUnlockedForTheNextReclaim() throws Exception {
        Libc real = Linux.libc();
        AtomicBoolean refusing = new AtomicBoolean(true);
        Libc refusingData = unlinkFailing(name -> refusing.get() && name.endsWith(".data"), dev.conduit.linux.Errno.EACCES);
        try (SharedDirectory directory = SharedDirectory.open(refusingData, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease lease = OwnerLease.acquire(refusingData, directory, "conduit-test");
            String leaseName = OwnerLease.leaseName("conduit-test", lease.owner());
            java.nio.file.Path data = java.nio.file.Files.createFile(shared.resolve(lease.newFileName(".data")));
            lease.close();
            lease.close(); // idempotent
            assertThat(data).as("the file it could not remove").exists();
            assertThat(shared.resolve(leaseName)).as("kept, for a reclaim to find the file by").exists();
            assertThat(OwnerLease.isAlive(real, directory, leaseName)).as("unlocked: its owner reads as dead").isFalse();

            refusing.set(false);
            assertThat(OwnerLease.reclaimDead(real, directory, "conduit-test"))
                    .containsExactlyInAnyOrder(data.getFileName().toString(), leaseName);
        }
        assertThat(shared).isEmptyDirectory();
    }

    /**
     * A normal close leaves nothing of its owner; and a file of the owner that the owner itself did
     * not remove (one it lost track of: a chunk whose free failed to remove it) is removed by the
     * close, where it used to stay after the lease, named by none.
     */
    @Test
    void aCloseLeavesNothingOfItsOwnerAlsoAFileTheOwnerDidNotRemove() throws Exception {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease other = OwnerLease.acquire(libc, directory, "conduit-test");
            java.nio.file.Path othersFile = java.nio.file.Files.createFile(shared.resolve(other.newFileName(".data")));
            OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test");
            String removedByItsOwner = lease.newFileName(".data");
            java.nio.file.Files.createFile(shared.resolve(removedByItsOwner));
            java.nio.file.Files.createFile(shared.resolve(lease.newFileName(".forgotten")));
            directory.remove(removedByItsOwner);
            lease.close();
            try (var left = java.nio.file.Files.list(shared)) {
                assertThat(left.map(f -> f.getFileName().toString()).toList()).as("another owner's lease and file stay")
                        .containsExactlyInAnyOrder(OwnerLease.leaseName("conduit-test", other.owner()), othersFile.getFileName().toString());
            }
            java.nio.file.Files.delete(othersFile);
            other.close();
        }
        assertThat(shared).isEmptyDirectory();
    }

    /**
     * A file under an owner's prefix that another user owns is none of the owner's (it creates
     * every file as itself; anyone may create one by that name in a sticky {@code /dev/shm}): the
     * close neither removes it nor keeps its lease for it.
     */
    @Test
    void anotherUsersFileUnderAnOwnersPrefixIsNeitherRemovedNorWaitedForByItsClose() throws Exception {
        Libc libc = Linux.libc();
        org.junit.jupiter.api.Assumptions.assumeTrue(libc.geteuid() == 0, "changing a file's owner takes root");
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test");
            java.nio.file.Path planted = java.nio.file.Files.createFile(shared.resolve(lease.newFileName(".planted")));
            java.nio.file.Files.setAttribute(planted, "unix:uid", 54321);
            lease.close();
            assertThat(planted).exists();
            assertThat(shared.resolve(OwnerLease.leaseName("conduit-test", lease.owner()))).doesNotExist();
        }
    }

    /** A dead owner's lease (unlocked), its chunk, and a file another user planted under its prefix: names in {@link #shared}. */
    private record DeadOwner(String lease, String chunk, String planted) {}

    /** Makes a {@link DeadOwner} whose planted file belongs to {@code uid}; skips the test unless it runs as root. */
    private DeadOwner deadOwnerWithAFilePlantedBy(int uid) throws java.io.IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(Linux.libc().geteuid() == 0, "changing a file's owner takes root");
        String owner = SharedDirectory.randomId();
        String lease = OwnerLease.leaseName("conduit-test", owner);
        java.nio.file.Files.createFile(shared.resolve(lease)); // unlocked: its owner is dead
        String chunk = "conduit-test-" + owner + "-" + SharedDirectory.randomId() + ".chunk";
        java.nio.file.Files.createFile(shared.resolve(chunk));
        String planted = "conduit-test-" + owner + "-planted";
        java.nio.file.Files.setAttribute(java.nio.file.Files.createFile(shared.resolve(planted)), "unix:uid", uid);
        return new DeadOwner(lease, chunk, planted);
    }

    /**
     * A file another user planted under a dead owner's prefix (anyone may, in a sticky directory
     * such as /dev/shm, where only its maker or root may remove it) is not the owner's: the
     * reclaim that cannot remove it removes the rest and the lease all the same. It kept the lease,
     * and warned, at every reclaim for good.
     */
    @Test
    void aFileAnotherUserPlantedUnderADeadOwnersNameKeepsNoLease() throws Exception {
        DeadOwner dead = deadOwnerWithAFilePlantedBy(54321);
        // Root may remove it from a sticky directory; the user who reclaims, as a rule, may not.
        Libc notItsMaker = unlinkFailing(dead.planted()::equals, dev.conduit.linux.Errno.EPERM);
        try (SharedDirectory directory = SharedDirectory.open(notItsMaker, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThat(OwnerLease.reclaimDead(notItsMaker, directory, "conduit-test")).containsExactlyInAnyOrder(dead.chunk(), dead.lease());
        }
        assertThat(shared.toFile().list()).containsExactly(dead.planted());
    }

    /**
     * The lease itself planted by another user, unlocked and left readable ({@code createFile}'s
     * 0644; an owner's own lease is 0600, which this user's reclaim cannot even open, and so leaves
     * alone): the reclaim of a user who is not its maker, and not root, leaves it unjudged, as it
     * leaves another user's lease it cannot open, and its pending lease too. Until 2026-12-07 it
     * took them for a dead owner's, and their removal, refused in a sticky directory
     * ({@code EPERM}), was a "cannot remove ... of a dead owner" WARNING at every reclaim, every
     * provider's and worker's open of every user there, and a {@code conduit reclaim} that exited
     * with 1, for good: what {@code removeFilesOf} no longer lets a planted file of a dead owner do
     * (the test above).
     */
    @Test
    void anotherUsersLeaseThatOpensIsLeftUnjudgedByTheReclaimOfAUserWhoIsNotRoot() throws Exception {
        Libc libc = Linux.libc();
        org.junit.jupiter.api.Assumptions.assumeTrue(libc.geteuid() == 0, "changing a file's owner takes root");
        String leaseName = OwnerLease.leaseName("conduit-test", SharedDirectory.randomId());
        String pendingName = OwnerLease.leaseName("conduit-test", SharedDirectory.randomId()) + "-pending";
        for (String planted : List.of(leaseName, pendingName)) {
            java.nio.file.Files.setAttribute(java.nio.file.Files.createFile(shared.resolve(planted)), "unix:uid", 54321); // unlocked
        }
        // Another user than the planter, not root: only the planter may remove them from a sticky directory.
        Libc notItsMaker = asUser(4321, unlinkFailing(name -> name.equals(leaseName) || name.equals(pendingName),
                dev.conduit.linux.Errno.EPERM));
        List<String> judged = new ArrayList<>();
        try (SharedDirectory directory = SharedDirectory.open(notItsMaker, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThat(OwnerLease.survey(notItsMaker, directory, "conduit-test").owners())
                    .filteredOn(owner -> owner.lease().equals(leaseName)).singleElement()
                    .satisfies(owner -> assertThat(owner.state()).as(owner.why()).isEqualTo(OwnerLease.State.UNJUDGED));
            OwnerLease.reclaimDead(notItsMaker, directory, "conduit-test", new OwnerLease.ReclaimListener() {
                @Override public void removed(String o, String name, long bytes) { judged.add("removed " + name); }
                @Override public void notRemoved(String o, String name, dev.conduit.linux.ErrnoException e) { judged.add("not removed " + name); }
            });
        }
        assertThat(judged).as("another user's leases, no dead owner's of this user's reclaim").isEmpty();
        assertThat(shared.toFile().list()).containsExactlyInAnyOrder(leaseName, pendingName);
    }

    /**
     * Root removes any file from a sticky directory, so its reclaim judges each file of a dead owner
     * by its owner before it removes it: one of another user than the lease's is left, and its dry
     * run does not list it, while the owner's files and lease go. It was removed, since only a
     * removal that failed was judged.
     */
    @Test
    void aReclaimByRootLeavesAnotherUsersFileUnderADeadOwnersPrefix() throws Exception {
        DeadOwner dead = deadOwnerWithAFilePlantedBy(54321);
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease.ReclaimListener ignored = new OwnerLease.ReclaimListener() {
                @Override public void removed(String o, String name, long bytes) { }
                @Override public void notRemoved(String o, String name, dev.conduit.linux.ErrnoException e) { }
            };
            assertThat(OwnerLease.wouldReclaimDead(libc, directory, "conduit-test", ignored)).containsExactlyInAnyOrder(dead.chunk(), dead.lease());
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test")).containsExactlyInAnyOrder(dead.chunk(), dead.lease());
        }
        assertThat(shared.toFile().list()).containsExactly(dead.planted());
    }

    /**
     * A reclaim that runs as the overflow uid of its user namespace (a container run as nobody;
     * here root mapped to 65534) sees its own user's files and those of every user the namespace
     * does not map as that one uid: a file another user (host uid 4321) planted under a dead owner's
     * prefix, in a sticky directory whose owner is neither, shows as the lease's owner too. It is
     * left, neither removed nor waited for, as only files this reclaim proves its own user's are
     * the owner's, and the chunk and the lease go. It was taken for the owner's by its uid alone:
     * its unlink failed (EPERM), so the lease stayed, and every reclaim there logged a WARNING.
     */
    @Test
    void aReclaimRunningAsTheOverflowUidLeavesAnUnmappedUsersFileUnderADeadOwnersPrefix() throws Exception {
        DeadOwner dead = deadOwnerWithAFilePlantedBy(4321);
        java.nio.file.Files.setAttribute(shared, "unix:uid", 4322);
        java.nio.file.Files.setAttribute(shared, "unix:mode", 01777);
        try {
            Path testClasses = Path.of(ReclaimingChild.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            List<String> command = List.of("unshare", "--user", "--map-user=65534", "--map-group=65534", "--",
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                    "--module-path", System.getProperty("jdk.module.path"), "--patch-module", "dev.conduit.shm=" + testClasses,
                    "-m", "dev.conduit.shm/" + ReclaimingChild.class.getName(), shared.toString(), "conduit-test");
            String output = outputOfSuccessfulRun(command);
            assertThat(output.lines().filter(l -> l.startsWith("conduit-test-"))).as(output).containsExactlyInAnyOrder(dead.chunk(), dead.lease());
            assertThat(output).doesNotContain("WARNING");
            assertThat(shared.toFile().list()).containsExactly(dead.planted());
        } finally {
            java.nio.file.Files.setAttribute(shared, "unix:uid", 0);
        }
    }

    /**
     * Runs {@code command} with no stdin to its end and returns its output, stdout and stderr interleaved; fails the test,
     * with that output, unless it exits 0. The output goes to a file, not a pipe: a hung child cannot hang a read of it
     * past the hang guard, after which the child is killed (integration-tests' ChildJvm.runToEnd, which this module
     * cannot use).
     */
    private static String outputOfSuccessfulRun(List<String> command) throws Exception {
        Ran ran = runToEnd(command);
        assertThat(ran.exitCode()).as(String.join(" ", command) + ": " + ran.output()).isZero();
        return ran.output();
    }

    /** What a child run to its end printed, stdout and stderr interleaved, and its exit code. */
    private record Ran(int exitCode, String output) {
    }

    /**
     * Runs {@code command} with no stdin to its end, as {@link #outputOfSuccessfulRun} does, whatever its exit code: fails
     * the test, with the output so far, only when it has not ended within the hang guard, after which it is killed.
     */
    private static Ran runToEnd(List<String> command) throws Exception {
        java.time.Duration guard = java.time.Duration.ofSeconds(60);
        Path file = java.nio.file.Files.createTempFile("conduit-child-", ".out");
        try {
            Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(file.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            boolean ended;
            try {
                ended = child.waitFor(guard.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            } finally {
                child.destroyForcibly(); // nothing if it has ended
            }
            // Leniently: a malformed byte (a crash report's, a truncated line's) is replaced, not thrown on.
            String output = new String(java.nio.file.Files.readAllBytes(file), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(ended).as(String.join(" ", command) + " ended within " + guard + " (a hang guard); its output so far:\n" + output)
                    .isTrue();
            return new Ran(child.exitValue(), output);
        } finally {
            java.nio.file.Files.deleteIfExists(file);
        }
    }

    /**
     * A dead owner's file that a reclaim cannot remove keeps its lease, and a lease that cannot be
     * removed stays itself: the next reclaim tries again. The WARNING said only "cannot remove
     * &lt;path&gt; of a dead owner: unlinkat(...): EACCES": neither what to do (the directory's
     * permissions, a sticky directory, a bind mount over the file) nor that the lease stays, and
     * without the failure in the record.
     */
    @Test
    void aDeadOwnersFileOrLeaseThatCannotBeRemovedIsAWarningNamingTheRemedyAndWhatStays() throws Exception {
        String owner = SharedDirectory.randomId();
        String leaseName = OwnerLease.leaseName("conduit-test", owner);
        java.nio.file.Files.createFile(shared.resolve(leaseName)); // unlocked: its owner is dead
        String chunk = "conduit-test-" + owner + "-" + SharedDirectory.randomId() + ".chunk";
        java.nio.file.Files.createFile(shared.resolve(chunk));
        List<java.util.logging.LogRecord> records = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override public void publish(java.util.logging.LogRecord record) { records.add(record); }
            @Override public void flush() { }
            @Override public void close() { }
        };
        SHM_LOG.addHandler(handler);
        try {
            Libc refusingTheChunk = unlinkFailing(chunk::equals, dev.conduit.linux.Errno.EACCES);
            try (SharedDirectory directory = SharedDirectory.open(refusingTheChunk, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
                assertThat(OwnerLease.reclaimDead(refusingTheChunk, directory, "conduit-test")).isEmpty();
            }
            Libc refusingTheLease = unlinkFailing(leaseName::equals, dev.conduit.linux.Errno.EBUSY);
            try (SharedDirectory directory = SharedDirectory.open(refusingTheLease, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
                assertThat(OwnerLease.reclaimDead(refusingTheLease, directory, "conduit-test")).containsExactly(chunk);
            }
        } finally {
            SHM_LOG.removeHandler(handler);
        }
        List<java.util.logging.LogRecord> warnings = records.stream().filter(r -> r.getLevel() == java.util.logging.Level.WARNING).toList();
        assertThat(warnings).as("WARNINGs").hasSize(2);
        assertThat(warnings.get(0).getMessage()).startsWith("cannot remove " + shared.resolve(chunk) + " of a dead owner: ")
                .contains("EACCES")
                .contains("make " + shared + " writable for this user, or run conduit reclaim as the user that owns the file, or as root "
                        + "(in a sticky directory such as /dev/shm only a file's owner may remove it)")
                .endsWith("; its lease " + shared.resolve(leaseName) + " stays, so that the next reclaim tries again");
        assertThat(warnings.get(1).getMessage()).startsWith("cannot remove " + shared.resolve(leaseName) + " of a dead owner: ")
                .contains("EBUSY")
                .contains("the file is a mount point (a bind mount of it, such as a container's volume): unmount it (umount)")
                .endsWith("; the next reclaim tries again");
        assertThat(warnings).as("each record carries its failure").allSatisfy(r -> assertThat(r.getThrown())
                .isInstanceOf(dev.conduit.linux.ErrnoException.class));
        assertThat(shared.toFile().list()).as("the lease stays").containsExactly(leaseName);
    }

    /**
     * A dead owner's file named by someone else with a newline and an escape sequence, which the
     * reclaim cannot remove (a directory: {@code unlink(2)} refuses it, root too): its WARNING shows
     * the name, and the errno's message that quotes it ({@code unlinkat(fd N (...), "<name>", 0)}),
     * escaped. Until 2026-12-07 both went into the log raw: the newline forged a line of it, the
     * escape sequence reached the terminal of whoever read it.
     */
    @Test
    void aForgedNameTheReclaimCannotRemoveForgesNoLineOfItsWarning() throws Exception {
        String owner = SharedDirectory.randomId();
        java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner))); // unlocked: its owner is dead
        java.nio.file.Files.createDirectory(shared.resolve("conduit-test-" + owner + "-x\n    forged line\u001b[2J"));
        List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = keepingShmLog(logged);
        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThat(OwnerLease.reclaimDead(Linux.libc(), directory, "conduit-test")).isEmpty();
        } finally {
            SHM_LOG.removeHandler(handler);
        }
        assertThat(logged).singleElement().satisfies(warning -> assertThat(warning).startsWith("WARNING cannot remove ")
                .contains("-x\\u000a    forged line\\u001b[2J of a dead owner: ", "-x\\u000a    forged line\\u001b[2J\", 0)")
                .doesNotContain("\n", "\u001b"));
    }

    /**
     * A file under a dead owner's name whose name is not UTF-8 (no Conduit process makes one) is
     * not reported removed: the listing decoded it with a replacement character, the unlink of that
     * name found nothing, and the reclaim said it had removed the file that stayed (a helper playing
     * a security reviewer planted {@code conduit-posix-<owner>-chunk\xff}).
     */
    @Test
    void aFileWhoseNameIsNotUtf8IsNeitherRemovedNorReportedRemoved() throws Exception {
        String owner = SharedDirectory.randomId();
        String leaseName = OwnerLease.leaseName("conduit-test", owner);
        java.nio.file.Files.createFile(shared.resolve(leaseName)); // unlocked: its owner is dead
        String prefix = "conduit-test-" + owner + "-chunk";
        outputOfSuccessfulRun(List.of("sh", "-c", "touch \"$0/$1$(printf '\\377')\"", shared.toString(), prefix)); // a name ending in byte 0xff
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThat(OwnerLease.reclaimDead(libc, directory, "conduit-test")).containsExactly(leaseName);
        }
        assertThat(shared.toFile().list()).as("the file whose name is not UTF-8 stays, and was not reported removed").hasSize(1)
                .allSatisfy(name -> assertThat(name).startsWith(prefix));
    }

    /**
     * A close that cannot list the directory cannot tell that its owner's files are gone: it keeps
     * the lease, unlocked, for the next reclaim (which lists it) to remove with whatever is left.
     */
    @Test
    void aCloseThatCannotListTheDirectoryKeepsTheLeaseUnlockedForTheNextReclaim() throws Exception {
        Libc real = Linux.libc();
        AtomicBoolean refusing = new AtomicBoolean();
        Libc refusingLists = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("listDirectory") && refusing.get()) {
                        throw new dev.conduit.linux.ErrnoException("getdents64", dev.conduit.linux.Errno.EACCES, "fake", "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(refusingLists, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease lease = OwnerLease.acquire(refusingLists, directory, "conduit-test");
            java.nio.file.Path data = java.nio.file.Files.createFile(shared.resolve(lease.newFileName(".data")));
            refusing.set(true);
            lease.close();
            String leaseName = OwnerLease.leaseName("conduit-test", lease.owner());
            assertThat(OwnerLease.isAlive(real, directory, leaseName)).isFalse();
            refusing.set(false);
            assertThat(OwnerLease.reclaimDead(real, directory, "conduit-test")).containsExactlyInAnyOrder(data.getFileName().toString(), leaseName);
        }
        assertThat(shared).isEmptyDirectory();
    }

    /**
     * Out of descriptors, JUL's first record fails to format (it loads the time zones from
     * tzdb.dat: ExceptionInInitializerError, then NoClassDefFoundError). A posix worker opened under
     * ulimit -n 30 failed with "NoClassDefFoundError: Could not initialize class
     * sun.util.calendar.ZoneInfoFile" out of this WARNING of its reclaim and then of its lease's
     * close, in place of what it hit (found by a helper playing an SRE). Both warnings are
     * housekeeping: a logger that throws now costs neither the reclaim nor the close anything.
     */
    @Test
    void aLoggerThatFailsCostsNeitherTheReclaimNorTheCloseAnything() throws Exception {
        java.util.concurrent.atomic.AtomicInteger records = new java.util.concurrent.atomic.AtomicInteger();
        System.Logger throwing = new System.Logger() {
            @Override public String getName() { return "throwing"; }
            @Override public boolean isLoggable(Level level) { return true; }
            @Override public void log(Level level, java.util.ResourceBundle bundle, String msg, Throwable thrown) {
                // what JUL throws out of descriptors: ZoneInfoFile's initializer's own Error first, NoClassDefFoundError after
                if (records.getAndIncrement() == 0) {
                    throw new Error(new java.io.FileNotFoundException("/usr/lib/jvm/jdk/lib/tzdb.dat (Too many open files)"));
                }
                throw new NoClassDefFoundError("Could not initialize class sun.util.calendar.ZoneInfoFile");
            }
            @Override public void log(Level level, java.util.ResourceBundle bundle, String format, Object... params) {
                log(level, bundle, format, (Throwable) null);
            }
        };
        Libc real = Linux.libc();
        AtomicBoolean refusing = new AtomicBoolean();
        Libc refusingLists = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("listDirectory") && refusing.get()) {
                        throw new dev.conduit.linux.ErrnoException("getdents64", dev.conduit.linux.Errno.EMFILE, "fake", "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(refusingLists, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease lease = OwnerLease.acquire(refusingLists, directory, "conduit-test", throwing);
            refusing.set(true);
            OwnerLease.reclaimDeadOrWarn(refusingLists, directory, "conduit-test", throwing);
            lease.close();
            assertThat(records.get()).as("both warnings tried").isEqualTo(2);
            assertThat(OwnerLease.isAlive(real, directory, OwnerLease.leaseName("conduit-test", lease.owner())))
                    .as("the lease kept, unlocked, for the next reclaim").isFalse();
            refusing.set(false);
            OwnerLease.reclaimDead(real, directory, "conduit-test");
        }
        assertThat(shared).isEmptyDirectory();
    }

    /**
     * A lease of this user that cannot be judged (its fstat fails with EIO) and no lease held: the
     * owner is neither alive nor dead, and the question throws, naming the errno, as
     * {@link OwnerLease#anyOwnerAlive} says; answering "dead" would let a receiver skip a record a
     * live sender is still writing.
     */
    @Test
    void anOwnerWhoseOnlyLeaseCannotBeJudgedIsNeitherAliveNorDead() throws Exception {
        Libc real = Linux.libc();
        Libc failingFstat = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("fstat")) {
                        throw new dev.conduit.linux.ErrnoException("fstat", dev.conduit.linux.Errno.EIO, "lease", "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        java.nio.file.Files.createFile(shared.resolve("conduit-test-worker-0123456789abcdef0123456789abcdef.lease"));
        try (SharedDirectory directory = SharedDirectory.open(real, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThatThrownBy(() -> OwnerLease.anyOwnerAlive(failingFstat, directory, "conduit-test-worker", 0x01234567_00000001L, real.geteuid()))
                    .isInstanceOf(dev.conduit.linux.ErrnoException.class).hasMessageContaining("EIO");
        } finally {
            java.nio.file.Files.delete(shared.resolve("conduit-test-worker-0123456789abcdef0123456789abcdef.lease"));
        }
    }

    /**
     * Out of descriptors, the JDK's logging throws an {@link Error} at its first record (its time-zone
     * data does not load, see {@link #aLoggerThatFailsCostsNeitherTheReclaimNorTheCloseAnything}). A
     * reclaim that removed a dead owner's files says so at INFO, and that record's failure must cost
     * the provider's open nothing either, as {@link OwnerLease#reclaimDeadOrWarn} promises of its
     * housekeeping. Until 2026-12-07 it logged straight through this class's logger, not through
     * {@link BestEffortLog}, and the {@code Error} came out of {@code reclaimDeadOrWarn} (which
     * catches {@code ConduitException}) and of a worker's reclaim (which catches
     * {@code RuntimeException}).
     */
    @Test
    void aReclaimThatRemovedFilesThrowsNothingWhenItsInfoRecordCannotBeLogged() throws Exception {
        Libc libc = Linux.libc();
        String owner = "0123456789abcdef0123456789abcdef";
        java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner)));
        java.nio.file.Files.createFile(shared.resolve("conduit-test-" + owner + "-1.chunk"));
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("dev.conduit.shm");
        java.util.logging.Handler throwing = new java.util.logging.Handler() {
            @Override public void publish(java.util.logging.LogRecord record) {
                throw new Error(new java.io.FileNotFoundException("/usr/lib/jvm/jdk/lib/tzdb.dat (Too many open files)"));
            }
            @Override public void flush() { }
            @Override public void close() { }
        };
        boolean parents = jul.getUseParentHandlers();
        jul.addHandler(throwing);
        jul.setUseParentHandlers(false);
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease.reclaimDeadOrWarn(libc, directory, "conduit-test", System.getLogger("test"));
        } finally {
            jul.removeHandler(throwing);
            jul.setUseParentHandlers(parents);
        }
        assertThat(shared).isEmptyDirectory();
    }

    /**
     * The same Error out of the owner's logger at {@link OwnerLease#warnOnceIfRemoved}, which
     * promises that "a failure to log costs the caller nothing: it may be inside a message's
     * handler". Until 2026-12-07 it caught {@code RuntimeException | LinkageError} only, and the
     * first record's failure, a plain {@link Error}, came out of it.
     */
    @Test
    void aWarningOfARemovedLeaseThatCannotBeLoggedCostsItsCallerNothing() throws Exception {
        Libc libc = Linux.libc();
        System.Logger throwing = new System.Logger() {
            @Override public String getName() { return "throwing"; }
            @Override public boolean isLoggable(Level level) { return true; }
            @Override public void log(Level level, java.util.ResourceBundle bundle, String msg, Throwable thrown) {
                throw new Error(new java.io.FileNotFoundException("/usr/lib/jvm/jdk/lib/tzdb.dat (Too many open files)"));
            }
            @Override public void log(Level level, java.util.ResourceBundle bundle, String format, Object... params) {
                log(level, bundle, format, (Throwable) null);
            }
        };
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)");
             OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test", throwing)) {
            java.nio.file.Files.delete(lease.path()); // a cleaner (systemd-logind RemoveIPC=yes)
            lease.warnOnceIfRemoved("test: this worker", "No new peer can find it");
            assertThat(lease.isRemoved()).isTrue();
        }
    }

    /**
     * A shared directory on a file system that grants no locks ({@code flock}: {@code ENOLCK}, an
     * NFS mount whose lock manager does not answer, or one mounted without lock support): no lease
     * can be held there, so no owner there can be judged, and the only remedy is another directory.
     * Until 2026-12-07 the error said "see the cause", which names no remedy, and "cannot create
     * lease" of a lease that was created and could not be locked.
     */
    @Test
    void aDirectoryWhoseFileSystemGrantsNoLocksIsAnErrorNamingTheRemedy() throws Exception {
        Libc noLocks = flockFailing(dev.conduit.linux.Errno.ENOLCK);
        try (SharedDirectory directory = SharedDirectory.open(noLocks, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThatThrownBy(() -> OwnerLease.acquire(noLocks, directory, "conduit-test"))
                    .isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageContaining("ENOLCK")
                    .hasMessageNotContaining("see the cause")
                    .hasMessageContaining("cannot lock lease " + shared)
                    .hasMessageContaining("/dev/shm")
                    .hasMessageContaining("shared.dir (CONDUIT_SHARED_DIR)");
        }
        assertThat(shared).as("no pending lease left").isEmptyDirectory();
    }

    /**
     * A shared {@code /dev/shm} where other users run Conduit too: their {@code 0600} leases do not
     * open for this user ({@code EACCES}; here the open of each fails so), and their names lie among
     * this user's dead owners' leases in the sorted listing. The reclaim's javadoc promises one
     * listing, and one more per batch of 64 dead owners. Until 2026-12-07 every lease that failed
     * to open while a dead owner was locked was taken for a shortage of descriptors, and the batch
     * flushed (a listing of the whole directory) before it was tried again: a listing per other
     * user's lease (108 for 200 dead owners), quadratic in the directory's size again.
     */
    @Test
    void otherUsersLeasesAmongDeadOwnersCostTheReclaimNoListingEach() throws Exception {
        Libc real = Linux.libc();
        java.util.concurrent.atomic.AtomicInteger listings = new java.util.concurrent.atomic.AtomicInteger();
        java.util.Set<String> otherUsers = new java.util.HashSet<>();
        int deadOwners = 200;
        for (int i = 0; i < deadOwners; i++) {
            String owner = SharedDirectory.randomId();
            java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner))); // unlocked: its owner is dead
            java.nio.file.Files.createFile(shared.resolve("conduit-test-" + owner + "-" + SharedDirectory.randomId() + ".chunk"));
            String other = OwnerLease.leaseName("conduit-test", SharedDirectory.randomId());
            java.nio.file.Files.createFile(shared.resolve(other));
            otherUsers.add(other);
        }
        Libc counting = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("listDirectory")) listings.incrementAndGet();
                    if (method.getName().equals("openBeneath") && otherUsers.contains((String) args[1])) {
                        throw new dev.conduit.linux.ErrnoException("openat2", dev.conduit.linux.Errno.EACCES, (String) args[1],
                                "another user's 0600 lease");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(counting, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            List<String> removed = OwnerLease.reclaimDead(counting, directory, "conduit-test");
            assertThat(removed).hasSize(2 * deadOwners);
            assertThat(listings.get()).as("listings of the directory for " + deadOwners + " dead owners among as many other users' leases")
                    .isLessThanOrEqualTo(1 + 1 + deadOwners / 64);
        }
    }

    /**
     * The other side of {@link #otherUsersLeasesAmongDeadOwnersCostTheReclaimNoListingEach}: a lease
     * that fails to open for want of descriptors ({@code EMFILE}) while the reclaim holds dead
     * owners' leases locked may fail for those very descriptors, so the reclaim removes their files,
     * releases them, and opens it again: its owner's files go in the same reclaim.
     */
    @Test
    void aLeaseThatFailsToOpenForWantOfDescriptorsWhileDeadOwnersAreLockedIsOpenedAgainOnceTheyAreReleased() throws Exception {
        Libc real = Linux.libc();
        String first = "0123456789abcdef0123456789abcdef";
        String second = "fedcba9876543210fedcba9876543210";
        for (String owner : List.of(first, second)) {
            java.nio.file.Files.createFile(shared.resolve(OwnerLease.leaseName("conduit-test", owner))); // unlocked: its owner is dead
            java.nio.file.Files.createFile(shared.resolve("conduit-test-" + owner + "-1.chunk"));
        }
        java.util.concurrent.atomic.AtomicBoolean shortage = new java.util.concurrent.atomic.AtomicBoolean(true);
        Libc shortOnce = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("openBeneath") && args[1].equals(OwnerLease.leaseName("conduit-test", second))
                            && shortage.getAndSet(false)) {
                        throw new dev.conduit.linux.ErrnoException("openat2", dev.conduit.linux.Errno.EMFILE, (String) args[1],
                                "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(shortOnce, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThat(OwnerLease.reclaimDead(shortOnce, directory, "conduit-test")).hasSize(4);
        }
        assertThat(shortage).as("the second lease's open failed once").isFalse();
        assertThat(shared).isEmptyDirectory();
    }

    /**
     * {@link OwnerLease#anyOwnerAlive} and {@link OwnerLease#heldLeaseOf} promise an
     * {@code ErrnoException} "when no lease is held and one could not be judged (a shortage ...)",
     * and the receiver's judgment of a taken record at its queue's head catches just that
     * ({@code ShmTransport#unblockHeadRecord}: "no telling now; the next liveness check looks again,
     * and this one still finishes closes"). Out of descriptors, the listing the question starts
     * with fails first; until 2026-12-07 that threw the plain {@code ConduitException} of
     * {@link SharedDirectory#list}, which that catch let through: the liveness check threw out of
     * {@code progress()}, skipping its closes and reclaim, at every check while the shortage lasted.
     */
    @Test
    void aQuestionAboutAnOwnerTagThatCannotListTheDirectoryThrowsTheErrnoExceptionItPromises() throws Exception {
        Libc real = Linux.libc();
        Libc noDescriptors = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("listDirectory")) {
                        throw new dev.conduit.linux.ErrnoException("openat", dev.conduit.linux.Errno.EMFILE, ".", "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(noDescriptors, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThatThrownBy(() -> OwnerLease.anyOwnerAlive(noDescriptors, directory, "conduit-test-worker", 0x01234567_00000001L,
                    real.geteuid())).isInstanceOf(dev.conduit.linux.ErrnoException.class).hasMessageContaining("EMFILE");
            assertThatThrownBy(() -> OwnerLease.heldLeaseOf(noDescriptors, directory, "conduit-test-worker", 0x01234567_00000001L,
                    real.geteuid())).isInstanceOf(dev.conduit.linux.ErrnoException.class);
        }
    }

    /** The real libc, except that {@code unlinkat} of a name {@code fails} accepts fails with {@code errno}. */
    private static Libc unlinkFailing(java.util.function.Predicate<String> fails, int errno) {
        Libc real = Linux.libc();
        return (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("unlinkat") && fails.test((String) args[1])) {
                        throw new dev.conduit.linux.ErrnoException("unlinkat", errno, (String) args[1], "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    /** {@code libc}, except that its effective uid ({@code geteuid}) is {@code uid}: a test run by root plays another user. */
    private static Libc asUser(int uid, Libc libc) {
        return (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("geteuid")) return uid;
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    /** The real libc, except that every {@code flock} fails with {@code errno}. */
    private static Libc flockFailing(int errno) {
        Libc real = Linux.libc();
        return (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("tryFlock")) {
                        throw new dev.conduit.linux.ErrnoException("flock", errno, args[0].toString(), "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
