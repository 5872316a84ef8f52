package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Every file Conduit creates in the shared directory goes through {@link SharedDirectory#createExclusive}:
 * a name a hostile peer planted first — a file, a symlink to a file elsewhere, a dangling symlink —
 * is refused, and what the link points to is neither created nor touched; what is created is 0600.
 */
class SharedDirectoryTest {

    @TempDir
    Path shared;

    @TempDir
    Path elsewhere;

    @Test
    void refusesPreCreatedFilesAndPlantedSymlinksAndCreates0600() throws IOException {
        Path victim = Files.writeString(elsewhere.resolve("victim"), "keep");
        Files.writeString(shared.resolve("pre-created"), "planted");
        Files.createSymbolicLink(shared.resolve("link-to-file"), victim);
        Files.createSymbolicLink(shared.resolve("dangling-link"), elsewhere.resolve("would-be-created"));

        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            for (String planted : new String[] {"pre-created", "link-to-file", "dangling-link"}) {
                assertThatThrownBy(() -> directory.createExclusive(planted)).as(planted)
                        .isInstanceOf(ErrnoException.class).hasMessageContaining("EEXIST");
            }
            try (FileDescriptor fd = directory.createExclusive("fresh")) {
                assertThat(fd).isNotNull();
            }
            assertThat(Files.getPosixFilePermissions(shared.resolve("fresh"), LinkOption.NOFOLLOW_LINKS))
                    .isEqualTo(PosixFilePermissions.fromString("rw-------"));
            assertThatThrownBy(() -> directory.createExclusive("../escape")).isInstanceOf(ErrnoException.class);
        }
        assertThat(Files.readString(victim)).isEqualTo("keep");
        assertThat(elsewhere.resolve("would-be-created")).doesNotExist();
        assertThat(shared.getParent().resolve("escape")).doesNotExist();
        assertThat(Files.readString(shared.resolve("pre-created"))).isEqualTo("planted");
    }

    /**
     * What is created is 0600 also under a umask that takes more than group and others' bits (0277
     * left 0400): a posix chunk or queue its own user's peers then could not open read-write
     * (EACCES), and the importer's remedy said its mode "changed since".
     */
    @Test
    void whatIsCreatedIs0600WhateverTheUmask() throws IOException {
        Libc real = Linux.libc();
        // The kernel takes the umask's bits from open's mode; a umask of 0277, played here, since this test's module may not
        // call umask(2) itself (no native access) and the process's umask is every thread's.
        Libc underUmask0277 = (Libc) Proxy.newProxyInstance(
                Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("openBeneath")) args[3] = (Integer) args[3] & ~0277;
                    try {
                        return method.invoke(real, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(underUmask0277, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            directory.createExclusive("under-umask-0277").close();
        }
        assertThat(Files.getPosixFilePermissions(shared.resolve("under-umask-0277"), LinkOption.NOFOLLOW_LINKS))
                .isEqualTo(PosixFilePermissions.fromString("rw-------"));
    }

    /**
     * A shared.dir that names a file (or passes through one) fails with ENOTDIR, whose remedy is a
     * directory in its place; it said "create it, make it readable and writable for this user",
     * which a file there prevents.
     */
    @Test
    void aPathThatIsAFileIsSaidToBeNoDirectory() throws Exception {
        Path file = Files.writeString(elsewhere.resolve("a-file"), "not a directory");
        for (Path path : List.of(file, file.resolve("below"))) {
            assertThatThrownBy(() -> SharedDirectory.open(Linux.libc(), path, "shared.dir (CONDUIT_SHARED_DIR)"))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("cannot open the shared directory " + path + ": ENOTDIR")
                    .hasMessageContaining("is a file, not a directory: set shared.dir (CONDUIT_SHARED_DIR) to a directory")
                    .hasMessageNotContaining("create it, make it readable");
        }
    }

    /**
     * ENAMETOOLONG from the open of the directory itself is a path past PATH_MAX, whose remedy is a
     * shorter way to the directory, or one name on it past NAME_MAX (255 bytes) in a path well
     * within PATH_MAX, which no directory can have. The second was refused as the first: "the path
     * is longer than the kernel takes (PATH_MAX: 4,095 bytes): reach the same directory through a
     * shorter path", of a path of 300-odd bytes.
     */
    @Test
    void aNameLongerThanNameMaxIsToldFromAPathLongerThanPathMax() {
        Path longName = elsewhere.resolve("n".repeat(300));
        assertThatThrownBy(() -> SharedDirectory.open(Linux.libc(), longName, "shared.dir (CONDUIT_SHARED_DIR)"))
                .isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("cannot open the shared directory " + longName + ": ENAMETOOLONG")
                .hasMessageContaining("a name on the path (or in a symbolic link it passes through) is longer than the kernel takes "
                        + "(NAME_MAX: 255 bytes), so no directory is there: check the path; create it")
                .hasMessageNotContaining("PATH_MAX");

        Path longPath = elsewhere.resolve(String.join("/", java.util.Collections.nCopies(20, "p".repeat(250))));
        assertThatThrownBy(() -> SharedDirectory.open(Linux.libc(), longPath, "shared.dir (CONDUIT_SHARED_DIR)"))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining(SharedDirectory.TOO_LONG_A_PATH);
    }

    /**
     * Listing a directory (a reclaim of dead owners' files does, at every pool and worker open)
     * failed with the JDK's bare exception: "cannot list the shared directory D:
     * java.nio.file.FileSystemException: D: Too many open files" (conduit perf at
     * prlimit --nofile=34), "java.nio.file.NoSuchFileException: D" for one removed while in use.
     * It now names the errno, which the kernel gives when the directory is opened again, and the remedy.
     */
    @Test
    void aDirectoryThatCannotBeListedFailsWithTheErrnoAndItsRemedy() throws IOException {
        Path removed = Files.createDirectory(elsewhere.resolve("removed"));
        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), removed, "shared.dir (CONDUIT_SHARED_DIR)")) {
            Files.delete(removed);
            assertThatThrownBy(() -> directory.list("conduit-")).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("cannot list the shared directory " + removed + ": ENOENT")
                    .hasMessageContaining("the directory " + removed + " was removed while this process uses it")
                    .hasMessageNotContaining("java.nio.file");
        }
    }

    /**
     * A listing's errno comes from the kernel (getdents64, or the openat that gives the listing its
     * own descriptor), whatever the process's locale: under LANG=de_DE.UTF-8 the JDK's listing
     * said only "D: Zu viele offene Dateien". Each errno gets its remedy (here injected).
     */
    @Test
    void aListingThatFailsNamesTheKernelsErrnoAndItsRemedy() throws IOException {
        AtomicReference<Integer> injected = new AtomicReference<>();
        Libc real = Linux.libc();
        Libc libc = (Libc) Proxy.newProxyInstance(
                Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("listDirectory") && injected.get() != null) {
                        throw new ErrnoException("openat", injected.get(), args[0].toString(), "injected by the test");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            injected.set(Errno.EMFILE);
            assertThatThrownBy(() -> directory.list("conduit-")).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("cannot list the shared directory " + shared + ": EMFILE")
                    .hasMessageContaining("raise its open-file limit (ulimit -n");
            injected.set(Errno.EACCES);
            assertThatThrownBy(() -> directory.list("conduit-")).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("cannot list the shared directory " + shared + ": EACCES")
                    .hasMessageContaining("make " + shared + " readable for this user")
                    .hasMessageContaining("shared.dir (CONDUIT_SHARED_DIR)");
            injected.set(null);
            Files.createFile(shared.resolve("conduit-b"));
            Files.createFile(shared.resolve("conduit-a"));
            Files.createFile(shared.resolve("other"));
            assertThat(directory.list("conduit-")).containsExactly("conduit-a", "conduit-b");
        }
    }

    /**
     * A lease (the first file a worker or pool creates) in a directory removed while this process
     * uses it fails naming the path, the errno and that cause; the same errno-by-errno remedy goes
     * for a full file system, which used to be told to make the directory writable, and for a lease,
     * which used to fail with the bare errno.
     */
    @Test
    void aFileThatCannotBeCreatedFailsWithTheRemedyOfItsErrno() throws IOException {
        Path removed = Files.createDirectory(elsewhere.resolve("removed"));
        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), removed, "shared.dir (CONDUIT_SHARED_DIR)")) {
            Files.delete(removed);
            assertThatThrownBy(() -> OwnerLease.acquire(Linux.libc(), directory, "conduit-test")).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot create lease " + removed).hasMessageContaining("ENOENT")
                    .hasMessageContaining("the directory " + removed + " was removed while this process uses it");

            assertThat(directory.creationRemedy(new ErrnoException("openat2", Errno.ENOSPC, "x", "y")))
                    .contains("has no room left, of bytes or of inodes (df -h, df -i)").contains("shared.dir (CONDUIT_SHARED_DIR)")
                    .doesNotContain("writable");
            assertThat(directory.creationRemedy(new ErrnoException("openat2", Errno.EACCES, "x", "y")))
                    .contains("make " + removed + " writable for this user, or set shared.dir (CONDUIT_SHARED_DIR)");
            assertThat(directory.creationRemedy(new ErrnoException("openat2", Errno.EMFILE, "x", "y"))).contains("raise its open-file limit");
        }
    }

    /**
     * A shared directory on a file system that makes no files (procfs answers a create with
     * ENOENT) is named as such; the lease's failure said the directory "was removed while this
     * process uses it", which sends the user to make again a directory that is there.
     */
    @Test
    void aDirectoryOnAFileSystemThatMakesNoFilesIsNamedAsSuchNotAsRemoved() {
        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), Path.of("/proc"), "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThatThrownBy(() -> OwnerLease.acquire(Linux.libc(), directory, "conduit-test")).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot create lease /proc/").hasMessageContaining("ENOENT")
                    .hasMessageContaining("/proc is on a file system that makes no files of ours (procfs, for one): set "
                            + "shared.dir (CONDUIT_SHARED_DIR) to a directory on one that does, such as a tmpfs (/dev/shm)")
                    .hasMessageNotContaining("removed");
        }
    }

    /**
     * A create refused with EACCES in a directory that access(2) says this process may write:
     * sysfs refuses root that way. "Make it writable" was the remedy, which it already is.
     */
    @Test
    void aCreateRefusedInADirectoryThisProcessMayWriteNamesWhatElseRefuses() {
        assumeThat(Linux.libc().geteuid()).as("root may write /sys by its mode bits and capabilities; CI runs as root").isZero();
        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), Path.of("/sys"), "shared.dir (CONDUIT_SHARED_DIR)")) {
            assertThatThrownBy(() -> OwnerLease.acquire(Linux.libc(), directory, "conduit-test")).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot create lease /sys/").hasMessageContaining("EACCES")
                    .hasMessageContaining(SharedDirectory.REFUSED_DESPITE_MODE)
                    .hasMessageContaining("or /sys is on a file system that makes no files of ours (sysfs, for one): set "
                            + "shared.dir (CONDUIT_SHARED_DIR) to a directory on one that does, such as a tmpfs (/dev/shm)")
                    .hasMessageNotContaining("writable for this user");
        }
    }
}
