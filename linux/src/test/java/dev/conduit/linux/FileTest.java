package dev.conduit.linux;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.conduit.linux.LockFlags.LOCK_EX;
import static dev.conduit.linux.LockFlags.LOCK_NB;
import static dev.conduit.linux.LockFlags.LOCK_SH;
import static dev.conduit.linux.LockFlags.LOCK_UN;
import static dev.conduit.linux.OpenFlags.O_CREAT;
import static dev.conduit.linux.OpenFlags.O_DIRECTORY;
import static dev.conduit.linux.OpenFlags.O_EXCL;
import static dev.conduit.linux.OpenFlags.O_NOFOLLOW;
import static dev.conduit.linux.OpenFlags.O_PATH;
import static dev.conduit.linux.OpenFlags.O_RDONLY;
import static dev.conduit.linux.OpenFlags.O_RDWR;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Files: errno mapping of opens, openat2 confinement, flock, fstat and the *at calls. */
class FileTest {

    private final Libc libc = Linux.libc();

    @TempDir
    Path directory;

    @Test
    void openingAMissingFileNamesThePath() {
        String path = directory.resolve("missing").toString();
        assertThatThrownBy(() -> libc.open(path, O_RDONLY, 0))
                .isInstanceOfSatisfying(ErrnoException.class, e -> {
                    assertThat(e.errno()).isEqualTo(Errno.ENOENT);
                    assertThat(e.errnoName()).isEqualTo("ENOENT");
                    assertThat(e.call()).isEqualTo("open");
                    assertThat(e.subject()).isEqualTo(path);
                    assertThat(e.getMessage())
                            .isEqualTo("open(\"" + path + "\", O_RDONLY|O_CLOEXEC): ENOENT (No such file or directory)");
                });
    }

    @Test
    void exclusiveCreateOfAnExistingFileFails() throws IOException {
        String path = Files.createFile(directory.resolve("existing")).toString();
        assertThatThrownBy(() -> libc.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600))
                .isInstanceOfSatisfying(ErrnoException.class, e -> {
                    assertThat(e.errno()).isEqualTo(Errno.EEXIST);
                    assertThat(e.getMessage()).isEqualTo("open(\"" + path
                            + "\", O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600): EEXIST (File exists)");
                });
    }

    @Test
    void noFollowRefusesASymlink() throws IOException {
        Path target = Files.createFile(directory.resolve("target"));
        String link = Files.createSymbolicLink(directory.resolve("link"), target).toString();
        assertThatThrownBy(() -> libc.open(link, O_RDONLY | O_NOFOLLOW, 0))
                .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ELOOP));
        libc.open(link, O_RDONLY, 0).close();
    }

    /** What a reclaim judges a file left by a killed process by: its age, from {@code st_mtim}, to the millisecond. */
    @Test
    void fstatSaysWhenTheFilesContentsLastChanged() throws IOException {
        Path file = Files.createFile(directory.resolve("aged"));
        long then = System.currentTimeMillis() - 90_000;
        Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(then));
        try (FileDescriptor fd = libc.open(file.toString(), O_RDONLY, 0)) {
            assertThat(libc.fstat(fd).modifiedMillis()).isEqualTo(then);
        }
    }

    /**
     * What a shared directory's identity is made of, with its device and inode: when it was made,
     * to the nanosecond, where the file system records it; else "not recorded", never another time.
     * The JDK's {@code creationTime()} answers from the same {@code statx} field, and falls back to
     * the modification time where it finds none, which this test sets far in the past to tell them apart.
     */
    @Test
    void birthTimeIsWhenTheFileWasMadeOrNotRecorded() throws IOException {
        for (Path parent : java.util.List.of(directory, Path.of("/dev/shm"))) {
            long before = java.time.Instant.now().getEpochSecond() * 1_000_000_000L;
            Path made = Files.createTempDirectory(parent, "birth");
            try {
                long after = (java.time.Instant.now().getEpochSecond() + 1) * 1_000_000_000L;
                Files.setLastModifiedTime(made, java.nio.file.attribute.FileTime.fromMillis(1_000_000));
                java.nio.file.attribute.FileTime jdk = Files.readAttributes(made, java.nio.file.attribute.BasicFileAttributes.class).creationTime();
                try (FileDescriptor fd = libc.open(made.toString(), O_RDONLY | OpenFlags.O_DIRECTORY, 0)) {
                    long birth = libc.birthTimeNanos(fd);
                    if (birth == Libc.NO_BIRTH_TIME) {
                        assertThat(jdk.toMillis()).as("the JDK's creation time where " + parent + " records none").isEqualTo(1_000_000);
                    } else {
                        assertThat(birth).as(parent + ": made between the two clock readings").isBetween(before, after);
                        assertThat(jdk.to(java.util.concurrent.TimeUnit.NANOSECONDS)).as("the JDK's creation time").isEqualTo(birth);
                    }
                }
            } finally {
                Files.delete(made);
            }
        }
    }

    /** How an owner finds that a cleaner removed its lease from the shared directory while it holds it open. */
    @Test
    void fstatCountsTheFilesNamesDownToNoneOnceRemovedWhileOpen() throws IOException {
        Path file = Files.createFile(directory.resolve("named"));
        try (FileDescriptor fd = libc.open(file.toString(), O_RDONLY, 0)) {
            assertThat(libc.fstat(fd).links()).isEqualTo(1);
            Files.createLink(directory.resolve("second name"), file);
            assertThat(libc.fstat(fd).links()).isEqualTo(2);
            Files.delete(file);
            Files.delete(directory.resolve("second name"));
            assertThat(libc.fstat(fd).links()).isZero();
        }
    }

    @Test
    void createdFileHasTheRequestedModeAndOwner() {
        try (FileDescriptor file = libc.open(directory.resolve("created").toString(), O_RDWR | O_CREAT | O_EXCL, 0600)) {
            FileStatus status = libc.fstat(file);
            assertThat(status.isRegularFile()).isTrue();
            assertThat(status.permissions()).isEqualTo(0600);
            assertThat(status.uid()).isEqualTo(libc.geteuid());
            assertThat(status.size()).isZero();
            libc.fchmod(file, 0640);
            assertThat(libc.fstat(file).permissions()).isEqualTo(0640);
            assertThat(file.description()).isEqualTo(directory.resolve("created").toString());
        }
    }

    /**
     * {@code O_TMPFILE} applies the mode as {@code O_CREAT} does ({@code open(2)}): an unnamed file
     * made through {@code openat2} has the mode asked for. Until 2026-12-08 openat2 passed the
     * mode only with {@code O_CREAT}, and such a file had mode 0000.
     */
    @Test
    void anUnnamedFileMadeThroughOpenat2HasTheRequestedMode() {
        try (FileDescriptor dir = libc.open(directory.toString(), O_PATH | O_DIRECTORY, 0);
             FileDescriptor file = libc.openat2(dir, ".", OpenFlags.O_TMPFILE | O_RDWR, 0600, OpenFlags.RESOLVE_BENEATH)) {
            FileStatus status = libc.fstat(file);
            assertThat(status.isRegularFile()).isTrue();
            assertThat(status.permissions()).isEqualTo(0600);
            assertThat(status.links()).as("unnamed").isZero();
        }
        assertThat(OpenFlags.describe(OpenFlags.O_TMPFILE | O_RDWR)).isEqualTo("O_RDWR|O_TMPFILE");
    }

    /**
     * What a user namespace's ambiguous overflow uid leaves to prove ownership with (PosixImporter):
     * {@code O_NOATIME}, which only the owner may set, here on a descriptor open for reading only,
     * changing nothing of the file. Another user's refusal ({@code EPERM}) needs a user without
     * {@code CAP_FOWNER}: {@code CrossProcessTest} (posix) has it, in a real user namespace.
     */
    @Test
    void theOwnerMaySetNoAtimeOnItsFileWithoutChangingIt() throws IOException {
        Path owned = directory.resolve("owned");
        try (FileDescriptor file = libc.open(owned.toString(), O_RDWR | O_CREAT | O_EXCL, 0600)) {
            assertThat(libc.fileStatusFlags(file) & OpenFlags.O_NOATIME).isZero();
        }
        Object changed = Files.getAttribute(owned, "unix:ctime");
        try (FileDescriptor file = libc.open(owned.toString(), OpenFlags.O_RDONLY, 0)) {
            libc.setFileStatusFlags(file, libc.fileStatusFlags(file) | OpenFlags.O_NOATIME);
            assertThat(libc.fileStatusFlags(file) & OpenFlags.O_NOATIME).isEqualTo(OpenFlags.O_NOATIME);
        }
        assertThat(Files.getAttribute(owned, "unix:ctime")).as("the file unchanged").isEqualTo(changed);
        assertThat(OpenFlags.describe(OpenFlags.O_NOATIME)).contains("O_NOATIME");
    }

    /**
     * The proof for a file that opens for no I/O (a socket, memfd's importer): its owner may set
     * the owner of what an {@code O_PATH} descriptor names to itself. Another user's refusal
     * ({@code EPERM}) needs a user without {@code CAP_CHOWN}: {@code OtherUserImportTest} (memfd)
     * has it, in a real user namespace.
     */
    @Test
    void theOwnerMaySetTheOwnerOfWhatAnOPathDescriptorNamesToItself() throws IOException {
        Path owned = Files.createFile(directory.resolve("named"));
        try (FileDescriptor named = libc.open(owned.toString(), O_PATH, 0)) {
            libc.fchownat(named, "", libc.geteuid(), -1, OpenFlags.AT_EMPTY_PATH);
            assertThat(libc.fstat(named).uid()).isEqualTo(libc.geteuid());
            assertThatThrownBy(() -> libc.fchownat(named, "", libc.geteuid(), -1, 0)).as("an empty path without AT_EMPTY_PATH")
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errnoName()).isEqualTo("ENOENT"));
        }
    }

    @Test
    void openBeneathRefusesEscapesAndSymlinks() throws IOException {
        Files.createDirectory(directory.resolve("shared"));
        Files.createFile(directory.resolve("outside"));
        Files.createFile(directory.resolve("shared/inside"));
        Files.createDirectory(directory.resolve("shared/sub"));
        Files.createFile(directory.resolve("shared/sub/deep"));
        Files.createSymbolicLink(directory.resolve("shared/link"), directory.resolve("shared/inside"));
        Files.createSymbolicLink(directory.resolve("shared/dirlink"), directory.resolve("shared/sub"));
        Files.createSymbolicLink(directory.resolve("shared/relative"), Path.of("inside"));

        try (FileDescriptor shared = libc.open(directory.resolve("shared").toString(), O_PATH | O_DIRECTORY, 0)) {
            libc.openBeneath(shared, "inside", O_RDONLY, 0).close();
            try (FileDescriptor deep = libc.openBeneath(shared, "sub/deep", O_RDONLY, 0)) {
                assertThat(deep.description()).endsWith("shared/sub/deep");
            }
            assertErrno(() -> libc.openBeneath(shared, "../outside", O_RDONLY, 0), Errno.EXDEV, "openat2");
            assertErrno(() -> libc.openBeneath(shared, directory.resolve("outside").toString(), O_RDONLY, 0), Errno.EXDEV, "openat2");
            assertErrno(() -> libc.openBeneath(shared, "link", O_RDONLY, 0), Errno.ELOOP, "openat2");
            assertErrno(() -> libc.openBeneath(shared, "dirlink/deep", O_RDONLY, 0), Errno.ELOOP, "openat2");
            assertErrno(() -> libc.openBeneath(shared, "relative", O_RDONLY, 0), Errno.ELOOP, "openat2");
            // openat2 itself, with only one of the restrictions: a link that stays beneath is fine,
            // one with an absolute target is not.
            assertErrno(() -> libc.openat2(shared, "../outside", O_RDONLY, 0, OpenFlags.RESOLVE_BENEATH), Errno.EXDEV, "openat2");
            libc.openat2(shared, "relative", O_RDONLY, 0, OpenFlags.RESOLVE_BENEATH).close();
            assertErrno(() -> libc.openat2(shared, "link", O_RDONLY, 0, OpenFlags.RESOLVE_BENEATH), Errno.EXDEV, "openat2");
        }
    }

    /**
     * openat2 answers a scoped lookup's '..' with EAGAIN when a rename anywhere on the system ran
     * meanwhile (it cannot tell whether the '..' left the directory); openBeneath used to throw it,
     * for about one open in 200 beside a thread that renames.
     */
    @Test
    void aDotDotThatStaysBeneathOpensWhileRenamesRun() throws Exception {
        Files.createDirectory(directory.resolve("shared"));
        Files.createDirectory(directory.resolve("shared/sub"));
        Files.createFile(directory.resolve("shared/file"));
        Files.createFile(directory.resolve("renamed"));
        AtomicBoolean stop = new AtomicBoolean();
        Thread renamer = Thread.ofPlatform().start(() -> {
            try {
                while (!stop.get()) {
                    Files.move(directory.resolve("renamed"), directory.resolve("renamed-again"), StandardCopyOption.ATOMIC_MOVE);
                    Files.move(directory.resolve("renamed-again"), directory.resolve("renamed"), StandardCopyOption.ATOMIC_MOVE);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        try (FileDescriptor shared = libc.open(directory.resolve("shared").toString(), O_PATH | O_DIRECTORY, 0)) {
            try {
                libc.openat2(shared, "file", O_RDONLY, 0, OpenFlags.RESOLVE_BENEATH).close();
            } catch (ErrnoException e) {
                assumeTrue(false, "no openat2 here (" + e.errnoName() + "): the walk that replaces it refuses '..'");
            }
            for (int i = 0; i < 50_000; i++) {
                libc.openBeneath(shared, "sub/../file", O_RDONLY, 0).close();
            }
        } finally {
            stop.set(true);
            renamer.join();
        }
    }

    @Test
    void openat2MessageShowsTheResolveFlags() throws IOException {
        Files.createDirectory(directory.resolve("shared"));
        try (FileDescriptor shared = libc.open(directory.resolve("shared").toString(), O_PATH | O_DIRECTORY, 0)) {
            assertThatThrownBy(() -> libc.openBeneath(shared, "../x", O_RDWR | O_CREAT | O_EXCL, 0600))
                    .hasMessage("openat2(" + shared + ", \"../x\", {O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0600, "
                            + "RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH}): EXDEV (Invalid cross-device link)");
        }
    }

    @Test
    void directoriesAreMadeAndRemovedRelativeToADescriptor() throws IOException {
        try (FileDescriptor dir = libc.open(directory.toString(), O_PATH | O_DIRECTORY, 0)) {
            libc.mkdirat(dir, "made", 0700);
            assertThat(Files.isDirectory(directory.resolve("made"))).isTrue();
            assertErrno(() -> libc.mkdirat(dir, "made", 0700), Errno.EEXIST, "mkdirat");
            libc.openat(dir, "made/file", O_RDWR | O_CREAT | O_EXCL, 0600).close();
            assertErrno(() -> libc.unlinkat(dir, "made", OpenFlags.AT_REMOVEDIR), Errno.ENOTEMPTY, "unlinkat");
            libc.unlinkat(dir, "made/file", 0);
            libc.unlinkat(dir, "made", OpenFlags.AT_REMOVEDIR);
            assertThat(Files.exists(directory.resolve("made"))).isFalse();
        }
    }

    /**
     * getdents64 fills its buffer with as many entries as fit: 3,000 names of 60 bytes take about
     * six buffers, so the listing must go on until the kernel returns 0, and step by each entry's
     * own length. Names are UTF-8, as paths are encoded.
     */
    @Test
    void aDirectoryIsListedWholeThroughItsDescriptorWithoutDotAndDotDot() throws IOException {
        Set<String> made = new HashSet<>();
        for (int i = 0; i < 3_000; i++) {
            made.add("conduit-" + "x".repeat(48) + String.format("%04d", i));
        }
        made.add("naïve-straße-名前");
        for (String name : made) Files.createFile(directory.resolve(name));
        try (FileDescriptor dir = libc.open(directory.toString(), O_PATH | O_DIRECTORY, 0)) {
            List<String> listed = libc.listDirectory(dir);
            assertThat(listed).hasSize(made.size()).doesNotHaveDuplicates();
            assertThat(new HashSet<>(listed)).isEqualTo(made);
            assertThat(libc.listDirectory(dir)).as("the descriptor given is not moved: a second listing sees everything again")
                    .hasSize(made.size());
        }
    }

    /**
     * The listing is of the directory the descriptor holds, not of what its path names now: one
     * removed while held fails (the kernel's ENOENT for a dead directory), and the directory made
     * at its path since is not listed in its place.
     */
    @Test
    void theDirectoryListedIsTheOneHeldEvenWhenItsPathNamesAnotherNow() throws IOException {
        Path held = Files.createDirectory(directory.resolve("held"));
        try (FileDescriptor dir = libc.open(held.toString(), O_RDONLY | O_DIRECTORY, 0)) {
            Files.delete(held);
            Files.createDirectory(held);
            Files.createFile(held.resolve("in-the-new-one"));
            assertErrno(() -> libc.listDirectory(dir), Errno.ENOENT, "getdents64");
        }
    }

    /**
     * A directory's descriptor measures the file system files created through it land on: a tmpfs
     * mounted over its path afterwards (as root, which CI is) is measured through a descriptor of
     * the mount, not through the one held from before, which a measurement by path could not tell.
     */
    @Test
    void fileSystemSpaceMeasuresTheFileSystemOfTheDescriptorNotOfWhatItsPathNamesNow() throws Exception {
        Path held = Files.createDirectory(directory.resolve("held"));
        try (FileDescriptor before = libc.open(held.toString(), O_PATH | O_DIRECTORY, 0)) {
            FileSystemSpace underneath = libc.fileSystemSpace(before);
            assertThat(underneath.totalBytes()).isEqualTo(Files.getFileStore(held).getTotalSpace());
            assertThat(underneath.blockSize()).isEqualTo(Files.getFileStore(held).getBlockSize());
            run("mount", "-t", "tmpfs", "-o", "size=1m", "none", held.toString());
            try (FileDescriptor mounted = libc.open(held.toString(), O_PATH | O_DIRECTORY, 0)) {
                FileSystemSpace small = libc.fileSystemSpace(mounted);
                assertThat(small).isEqualTo(new FileSystemSpace(Libc.TMPFS_MAGIC, PageSize.get(), 1 << 20, 1 << 20));
                assertThat(libc.fileSystemSpace(before).totalBytes()).isEqualTo(underneath.totalBytes());
            } finally {
                run("umount", held.toString());
            }
        }
        try (FileDescriptor memfd = libc.memfdCreate("conduit-space", 0)) {
            assertThat(libc.fileSystemSpace(memfd).type()).isEqualTo(Libc.TMPFS_MAGIC);
        }
    }

    /** Runs {@code command} (mount(8), umount(8)), which must succeed. */
    private static void run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertThat(process.waitFor()).as("%s: %s", String.join(" ", command), output).isZero();
    }

    @Test
    void listingADescriptorThatIsNoDirectoryFailsWithEnotdir() throws IOException {
        Path file = Files.createFile(directory.resolve("file"));
        try (FileDescriptor fd = libc.open(file.toString(), O_RDONLY, 0)) {
            assertErrno(() -> libc.listDirectory(fd), Errno.ENOTDIR, "openat");
        }
    }

    @Test
    void aFileIsRenamedRelativeToADescriptorReplacingTheTarget() throws IOException {
        try (FileDescriptor dir = libc.open(directory.toString(), O_PATH | O_DIRECTORY, 0)) {
            Files.writeString(directory.resolve("temporary"), "new");
            Files.writeString(directory.resolve("final"), "old");
            libc.renameat(dir, "temporary", "final");
            assertThat(Files.readString(directory.resolve("final"))).isEqualTo("new");
            assertThat(Files.exists(directory.resolve("temporary"))).isFalse();
            assertErrno(() -> libc.renameat(dir, "temporary", "final"), Errno.ENOENT, "renameat");
        }
    }

    @Test
    void exclusiveLockOfASecondOpenFailsWithEwouldblockUntilReleased() {
        String path = directory.resolve("lease").toString();
        FileDescriptor first = libc.open(path, O_RDWR | O_CREAT, 0600);
        try (FileDescriptor second = libc.open(path, O_RDWR, 0)) {
            libc.flock(first, LOCK_EX | LOCK_NB);
            assertThatThrownBy(() -> libc.flock(second, LOCK_EX | LOCK_NB))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> {
                        assertThat(e.errno()).isEqualTo(Errno.EWOULDBLOCK);
                        assertThat(e.errnoName()).isEqualTo("EWOULDBLOCK");
                        assertThat(e.getMessage()).isEqualTo("flock(" + second + ", LOCK_EX|LOCK_NB): EWOULDBLOCK "
                                + "(Resource temporarily unavailable): another open of this file holds a conflicting lock");
                    });
            assertThat(libc.tryFlock(second, LOCK_SH)).isFalse();

            first.close(); // the kernel drops the lock with the last descriptor of its open

            assertThat(libc.tryFlock(second, LOCK_EX)).isTrue();
            libc.flock(second, LOCK_UN);
        } finally {
            first.close();
        }
    }

    @Test
    void characterDeviceNumbersSplitLikeGlibc() {
        try (FileDescriptor nullDevice = libc.open("/dev/null", O_RDONLY, 0)) {
            FileStatus status = libc.fstat(nullDevice);
            assertThat(status.isCharacterDevice()).isTrue();
            assertThat(status.rdevMajor()).isEqualTo(1);
            assertThat(status.rdevMinor()).isEqualTo(3);
        }
        long dev = FileStatus.makedev(259, 70_000);
        assertThat(FileStatus.major(dev)).isEqualTo(259);
        assertThat(FileStatus.minor(dev)).isEqualTo(70_000);
    }

    @Test
    void descriptorIsClosedOnceAndUnusableAfterwards() {
        FileDescriptor fd = libc.open("/dev/null", O_RDONLY, 0);
        int number = fd.fd();
        fd.close();
        fd.close();
        assertThat(fd.isOpen()).isFalse();
        assertThat(fd).hasToString("fd " + number + " (/dev/null) closed");
        assertThatThrownBy(fd::fd).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> libc.fstat(fd)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * A close that the kernel refuses names the descriptor as it was open. Until 2026-12-07 the
     * name was taken after the descriptor was marked closed: "close(fd 7 (x) closed): EBADF".
     */
    @Test
    void aFailedCloseNamesTheDescriptorAsItWasOpen() {
        FileDescriptor neverOpened = FileDescriptor.adopt(Integer.MAX_VALUE, "never opened"); // past any descriptor limit: EBADF
        assertThatThrownBy(neverOpened::close)
                .isInstanceOfSatisfying(ErrnoException.class, e -> {
                    assertThat(e.errnoName()).isEqualTo("EBADF");
                    assertThat(e.subject()).isEqualTo("fd " + Integer.MAX_VALUE + " (never opened)");
                    assertThat(e.getMessage()).startsWith("close(fd " + Integer.MAX_VALUE + " (never opened)): EBADF").doesNotContain("closed");
                });
        assertThat(neverOpened.isOpen()).as("closed anyway, as the javadoc says").isFalse();
    }

    static void assertErrno(Runnable call, int errno, String syscall) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(ErrnoException.class, e -> {
            assertThat(e.errnoName()).isEqualTo(Errno.name(errno));
            assertThat(e.call()).isEqualTo(syscall);
        });
    }
}
