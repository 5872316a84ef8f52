package dev.conduit.tools;

import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The spawned server's private directory, and how the spawning client ends its process (a shell standing in for the server). */
class PerfPeerTest {

    /**
     * A run's directory is private to it, its parent is not: on a parent other kernels may see too (9p here, its
     * {@code fstatfs} faked), the directory of a run of this user under another kernel holds leases that look free here,
     * so no run removes it, and says so with the file system and what to do. Until 2026-12-08 a run removed it, its run's
     * lease and its workers' queues with it, as it removes one a killed run left; where the leases tell, it still does.
     */
    @Test
    void noRunRemovesTheDirectoryOfAnotherRunUnderAParentOtherKernelsMaySee(@TempDir Path parent) throws Exception {
        Path other = Files.createDirectory(parent.resolve("conduit-perf-0000dead"));
        Path lease = Files.createFile(other.resolve("conduit-perf-0123456789abcdef0123456789abcdef.lease"));

        String said = PerfPeer.removeDirectoriesOfGoneRuns(FileSystemType.answering(Libc.V9FS_MAGIC), parent);

        assertThat(lease).as("the other run's lease, which looks free here").exists();
        assertThat(said).startsWith("conduit perf: removed none of the 1 directory that other runs made in " + parent
                        + " (conduit-perf-0000dead): the shared directory " + parent + " is on 9p, which other kernels may see too")
                .endsWith("; remove by hand those whose runs are gone");

        assertThat(PerfPeer.removeDirectoriesOfGoneRuns(Linux.libc(), parent)).as("where the leases tell")
                .startsWith("conduit perf: removed the directory that earlier runs killed before they ended left in " + parent);
        assertThat(other).doesNotExist();
    }

    /**
     * After the client's own failure, the server is given a bounded time to read the client's BYE and exit
     * before its standard input is closed: closed at once, it could end before the BYE was read, and the
     * server then said "standard input ended" instead of the client's reason. The stand-in reads its
     * "BYE" half a second in (well within the wait) and says whether its input had ended by then.
     */
    @Test
    void aServerIsGivenTimeToReadTheByeOfAClientThatFailedBeforeItsInputIsClosed() throws Exception {
        String output = outputOfAStandInStoppedBy(
                "echo started; sleep 0.5; read -r -t 0.1 line; if [ $? -eq 1 ]; then echo 'standard input ended'; else echo 'read the BYE'; fi",
                PerfPeer::stopAfterFailure);

        assertThat(output).isEqualTo("started\nread the BYE");
    }

    /**
     * A server that no session with the client began (the client was stopped while it connected) gets no BYE to exit
     * after: its standard input is closed at once. It was given the 2 s of a server that reads a BYE, for nothing, and a
     * stopped run's JVM waited for them. The stand-in says whether its input had ended within its first second.
     */
    @Test
    void aServerWithoutASessionHasItsInputClosedAtOnce() throws Exception {
        String output = outputOfAStandInStoppedBy(
                "read -r -t 1 line; if [ $? -eq 1 ]; then echo 'standard input ended'; else echo 'still waiting for input'; fi",
                PerfPeer::stopWithoutSession);

        assertThat(output).isEqualTo("standard input ended");
    }

    /**
     * A spawned server whose standard input ends removes its private directory as it exits (the client that started it
     * may be gone), which is how a run stops a server that did not exit by itself: after a failure before the session (a
     * server not up within --timeout), or one that did not read the BYE. The run's own lease on that directory was closed
     * after that, in a directory no longer there: every such failure logged a WARNING that the directory "was removed
     * while this process uses it: make it again and restart this process, or set --shared-dir to another directory",
     * under the run's own error. The stand-in removes the directory when its input ends, as the server does.
     */
    @Test
    void aServerThatRemovesItsDirectoryWhenItsInputEndsLeavesTheRunNothingToWarnOf() throws Exception {
        Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "cperf-peer");
        PerfPeer.RunLease lease = PerfPeer.RunLease.acquire(dir);
        Process server = new ProcessBuilder("bash", "-c", "cat >/dev/null; rm -rf -- \"$0\"", dir.toString())
                .redirectErrorStream(true).start();
        PerfPeer peer = new PerfPeer(dir, lease, server, new Thread(() -> { }));
        // The module reads no java.logging (the runtime logs through System.Logger): read here, and no class of this test
        // extends one of it, which JUnit's discovery would load before.
        PerfPeerTest.class.getModule().addReads(ModuleLayer.boot().findModule("java.logging").orElseThrow());
        java.io.ByteArrayOutputStream logged = new java.io.ByteArrayOutputStream();
        java.util.logging.Logger shmLog = java.util.logging.Logger.getLogger("dev.conduit.shm");
        java.util.logging.StreamHandler handler = new java.util.logging.StreamHandler(logged, new java.util.logging.SimpleFormatter());
        shmLog.addHandler(handler);
        try {
            int exit = HangGuard.await("the stop of a stand-in server", peer::stopWithoutSession);

            assertThat(exit).as(peer.output()).isZero();
            assertThat(dir).doesNotExist();
            handler.flush();
            assertThat(logged.toString()).as("what the run's lease logged as it closed").isEmpty();
        } finally {
            shmLog.removeHandler(handler);
            server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            PerfPeer.deleteTree(dir);
        }
    }

    /**
     * What a stand-in server, bash running {@code script}, printed once {@code stop} ended it; asserts that it exited with
     * 0 and that its directory went with it.
     */
    private static String outputOfAStandInStoppedBy(String script, ToIntFunction<PerfPeer> stop) throws Exception {
        Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "cperf-peer");
        Process server = new ProcessBuilder("bash", "-c", script).redirectErrorStream(true).start();
        PerfPeer peer = new PerfPeer(dir, server, new Thread(() -> { }));
        try {
            int exit = HangGuard.await("the stop of a stand-in server", () -> stop.applyAsInt(peer)); // no bound on the whole test

            assertThat(exit).as(peer.output()).isZero();
            assertThat(dir).as("removed with its server").doesNotExist();
            return peer.output();
        } finally {
            server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            PerfPeer.deleteTree(dir);
        }
    }

    /**
     * The shutdown hook of a spawned server waits for the run to stop the server before it kills it: on a signal the
     * client stops at its next look and says why; killed at once, the server's death raced that stop, and the client's
     * document said "the perf server failed during am_lat 64k: ... peer worker died" instead of "stopped by a signal"
     * (PerfRunTest#aSpawnedRunStoppedByASignalStillWritesItsDocument, in a CI run). A hook that has run for 300 ms has
     * not touched the stand-in server; once the stop is told, it kills it and removes its directory; one whose stop never
     * comes kills it after its wait.
     */
    @Test
    void theShutdownHookKillsTheServerOnlyOnceTheRunStoppedItOrItsWaitEnded() throws Exception {
        Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "cperf-hook");
        Process server = new ProcessBuilder("sleep", "60").start();
        Process unstopped = new ProcessBuilder("sleep", "60").start();
        try {
            java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);
            Thread hook = PerfPeer.cleanupHook(server, dir, stopped, TimeUnit.SECONDS.toNanos(60));
            hook.start();
            hook.join(300);

            assertThat(server.isAlive()).as("the server while the run stops it").isTrue();
            assertThat(dir).exists();
            stopped.countDown();
            hook.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(hook.isAlive()).isFalse();
            assertThat(server.waitFor(10, TimeUnit.SECONDS)).as("killed once the stop was told").isTrue();
            assertThat(dir).doesNotExist();

            Thread late = PerfPeer.cleanupHook(unstopped, Files.createTempDirectory(Path.of("/dev/shm"), "cperf-hook"),
                    new java.util.concurrent.CountDownLatch(1), TimeUnit.MILLISECONDS.toNanos(100));
            late.start();
            late.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(unstopped.waitFor(10, TimeUnit.SECONDS)).as("killed after the wait, the stop never told").isTrue();
        } finally {
            server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            unstopped.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            PerfPeer.deleteTree(dir);
        }
    }

    /**
     * A shared directory that exists on a file system that makes no directories (procfs answers a mkdir with ENOENT) is
     * named as such; the error said "the shared directory /proc does not exist".
     */
    @Test
    void aSharedDirectoryOnAFileSystemThatMakesNoDirectoriesIsNamedAsSuchNotAsMissing() {
        assertThatThrownBy(() -> PerfPeer.privateDirectory(Path.of("/proc"), PerfPeer.ParentSource.OPTION, () -> 42))
                .hasMessage("cannot make a private directory for the perf server in the shared directory /proc (--shared-dir): ENOENT, "
                        + "though the directory exists: its file system makes no new directories (procfs, for one): choose a "
                        + "directory of a file system that holds files, such as a tmpfs (/dev/shm), with --shared-dir");
    }

    /**
     * When every name tried for the spawned server's private directory is taken (here a name source that repeats one
     * name, taken already), the error says where, what, and what to do. It said "cannot make a private directory under D:
     * java.nio.file.FileAlreadyExistsException: D/conduit-perf-0000002a", the JDK's exception and no remedy.
     */
    @Test
    void aPrivateDirectoryWhoseNamesAreAllTakenSaysSoWithWhatToDo() throws Exception {
        Path parent = Files.createTempDirectory(Path.of("/dev/shm"), "cperf-taken");
        try {
            Path taken = Files.createDirectory(parent.resolve("conduit-perf-0000002a"));

            assertThatThrownBy(() -> PerfPeer.privateDirectory(parent, PerfPeer.ParentSource.OPTION, () -> 42))
                    .hasMessage("cannot make a private directory for the perf server in the shared directory " + parent + " (--shared-dir): "
                            + "EEXIST, each of 12 random names was taken, the last " + taken + ": remove the conduit-perf-* directories "
                            + "there that no running conduit perf uses, or choose another with --shared-dir");
            try (var left = Files.list(parent)) {
                assertThat(left.toList()).as("nothing made").isEqualTo(List.of(taken));
            }
        } finally {
            PerfPeer.deleteTree(parent);
        }
    }

    /**
     * deleteTree removes a run's directory through descriptors: a directory in it that another process swaps for a
     * symbolic link to a directory outside while the removal walks it leads the removal nowhere. By path
     * (Files.walkFileTree), the files of the directory the link led to were removed: for a root run, any directory's
     * (found by helper h35). Racy by nature: a thread swaps the directory and the link as fast as it can while trees are
     * removed, and no file outside may go.
     */
    @Test
    void aDirectorySwappedForALinkWhileARunsTreeIsRemovedLeadsTheRemovalNowhere(@org.junit.jupiter.api.io.TempDir Path shared,
                                                                                @org.junit.jupiter.api.io.TempDir Path outside)
            throws Exception {
        int files = 64;
        for (int i = 0; i < files; i++) Files.createFile(outside.resolve("outside-" + i));
        for (int round = 0; round < 200; round++) {
            Path run = Files.createDirectory(shared.resolve("conduit-perf-" + String.format("%08x", round)));
            Path sub = Files.createDirectory(run.resolve("sub"));
            for (int i = 0; i < files; i++) Files.createFile(sub.resolve("outside-" + i));
            // The other process's link and its place for the directory, outside the run's directory: the removal meets neither.
            Path link = Files.createSymbolicLink(shared.resolve("link-" + round), outside);
            Path aside = shared.resolve("aside-" + round);
            java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
            java.util.concurrent.CountDownLatch swapping = new java.util.concurrent.CountDownLatch(1);
            Thread swapper = Thread.ofPlatform().start(() -> {
                swapping.countDown();
                while (!done.get()) {
                    try {
                        Files.move(sub, aside, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                        Files.move(link, sub, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                        Files.move(sub, link, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                        Files.move(aside, sub, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                    } catch (java.io.IOException removedMeanwhile) {
                        if (!Files.exists(run, java.nio.file.LinkOption.NOFOLLOW_LINKS)) return;
                    }
                }
            });
            swapping.await();
            try {
                PerfPeer.deleteTree(run);
            } finally {
                done.set(true);
                swapper.join(TimeUnit.SECONDS.toMillis(30));
            }
            try (var left = Files.list(outside)) {
                assertThat(left.count()).as("files left outside the run's directory after round " + round).isEqualTo(files);
            }
            for (Path left : List.of(run, aside, link)) PerfPeer.deleteTree(left); // what the swaps kept from the removal, if anything
        }
    }
}
