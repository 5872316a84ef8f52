package dev.conduit.linux.internal;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFds;
import dev.conduit.linux.Libc;
import dev.conduit.linux.OpenFlags;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static dev.conduit.linux.OpenFlags.O_CREAT;
import static dev.conduit.linux.OpenFlags.O_DIRECTORY;
import static dev.conduit.linux.OpenFlags.O_EXCL;
import static dev.conduit.linux.OpenFlags.O_NOFOLLOW;
import static dev.conduit.linux.OpenFlags.O_PATH;
import static dev.conduit.linux.OpenFlags.O_RDONLY;
import static dev.conduit.linux.OpenFlags.O_RDWR;
import static dev.conduit.linux.OpenFlags.RESOLVE_BENEATH;
import static dev.conduit.linux.OpenFlags.RESOLVE_NO_SYMLINKS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The path walk {@code openBeneath} falls back to on kernels without {@code openat2}: run
 * directly, since this kernel has {@code openat2}, and held to the same errnos; and
 * {@code openBeneath} itself, with {@code openat2} answering as a kernel without it (ENOSYS)
 * or a container that forbids it (EPERM) would.
 */
class OpenBeneathFallbackTest {

    private final Libc libc = Linux.libc();

    @TempDir
    Path directory;

    private FileDescriptor shared;

    @BeforeEach
    void layOutFiles() throws IOException {
        Path root = Files.createDirectory(directory.resolve("shared"));
        Files.createFile(directory.resolve("outside"));
        Files.createDirectories(root.resolve("a/b"));
        Files.writeString(root.resolve("a/b/file"), "x");
        Files.createSymbolicLink(root.resolve("link"), root.resolve("a/b/file"));
        Files.createSymbolicLink(root.resolve("dirlink"), root.resolve("a"));
        Files.createSymbolicLink(root.resolve("a/up"), directory);
        Files.createSymbolicLink(root.resolve("escape"), directory.resolve("outside"));
        shared = libc.open(root.toString(), O_PATH | O_DIRECTORY, 0);
    }

    @AfterEach
    void closeDirectory() {
        shared.close();
    }

    @Test
    void opensPathsBeneath() {
        long before = OpenFds.count();
        try (FileDescriptor file = fallback("a/b/file", O_RDONLY, 0)) {
            assertThat(libc.fstat(file).size()).isEqualTo(1);
            assertThat(file.description()).endsWith("shared/a/b/file");
        }
        fallback("./a//b/./file", O_RDONLY, 0).close();
        fallback("a/b/new", O_RDWR | O_CREAT | O_EXCL, 0600).close();
        assertThat(Files.exists(directory.resolve("shared/a/b/new"))).isTrue();
        assertThat(OpenFds.count()).as("intermediate directories closed").isEqualTo(before);
    }

    @Test
    void refusesWhatOpenat2Refuses() {
        assertErrno("../outside", Errno.EXDEV);
        assertErrno("a/../../outside", Errno.EXDEV);
        assertErrno(directory.resolve("outside").toString(), Errno.EXDEV);
        assertErrno("link", Errno.ELOOP);
        assertErrno("dirlink/b/file", Errno.ELOOP);
        assertErrno("a/up/outside", Errno.ELOOP);
        assertErrno("a/b/file/x", Errno.ENOTDIR);
        assertErrno("a/missing/x", Errno.ENOENT);
    }

    /**
     * A trailing '/' (or '/.') asks for a directory: openat2 refuses it after a file with ENOTDIR,
     * after a symbolic link with ELOOP (even under O_PATH|O_NOFOLLOW, which would open the link
     * itself), and a create of a name that ends in '/' with EISDIR. Until 2026-12-07 the walk
     * dropped empty and '.' names, so it opened the file, and created a regular file 'a/b/new'
     * where a directory was asked for.
     */
    @Test
    void aTrailingSlashAsksForADirectoryInTheWalkAsInOpenat2() {
        int create = O_RDWR | O_CREAT | O_EXCL;
        List<Map.Entry<String, Integer>> opens = List.of(
                Map.entry("a/b/file/", O_RDONLY), Map.entry("a/b/file/.", O_RDONLY), Map.entry("a/b/file//", O_RDONLY),
                Map.entry("link/", O_RDONLY), Map.entry("link/", O_PATH), Map.entry("dirlink/", O_PATH), Map.entry("dirlink/.", O_RDONLY),
                Map.entry("a/b/", O_RDONLY), Map.entry("a/b/.", O_PATH), Map.entry("a/./", O_RDONLY), Map.entry("./", O_RDONLY),
                Map.entry("a/b/new/", create), Map.entry("a/b/file/", create), Map.entry("a/b/", create), Map.entry("link/", create),
                Map.entry("a/missing/new/", create), Map.entry("a/b/new/.", create), Map.entry("a/b/file/.", create), Map.entry("a/b/./", create));
        for (Map.Entry<String, Integer> open : opens) {
            String path = open.getKey();
            int flags = open.getValue();
            String asked = path + " with " + OpenFlags.describe(flags);
            String openat2 = outcome(() -> libc.openat2(shared, path, flags, 0600, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
            long before = OpenFds.count();
            assertThat(outcome(() -> fallback(path, flags, 0600))).as("the walk's outcome for " + asked + ", as openat2's").isEqualTo(openat2);
            assertThat(OpenFds.count()).as("no descriptor left open by " + asked).isEqualTo(before);
        }
        assertThat(directory.resolve("shared/a/b/new")).as("what neither created").doesNotExist();
    }

    /**
     * openBeneath refuses a symbolic link with ELOOP, but under O_PATH|O_NOFOLLOW opens a link at
     * the path's end itself, in openat2 and in the walk alike: what fstat of a planted link needs.
     * Until 2026-12-07 openBeneath's javadoc said ELOOP for every symbolic link.
     */
    @Test
    void aSymbolicLinkAtThePathsEndIsOpenedItselfUnderOPathAndONofollowByBoth() {
        for (String path : List.of("link", "a/up", "dirlink")) {
            String openat2 = outcome(() -> libc.openat2(shared, path, O_PATH | O_NOFOLLOW, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
            assertThat(openat2).as("openat2's outcome for " + path).isEqualTo("a symbolic link");
            assertThat(outcome(() -> fallback(path, O_PATH | O_NOFOLLOW, 0))).as("the walk's outcome for " + path).isEqualTo(openat2);
            assertThat(outcome(() -> fallback(path, O_RDONLY, 0))).as("the walk's outcome for " + path + " without O_PATH").isEqualTo("ELOOP");
        }
    }

    /** The errno name of a refused open, or the type of the file it opened ("a directory"), closing it. */
    private String outcome(Supplier<FileDescriptor> open) {
        try (FileDescriptor opened = open.get()) {
            return libc.fstat(opened).typeName();
        } catch (ErrnoException e) {
            return e.errnoName();
        }
    }

    /** What {@code openat2} answers where it cannot be used: the kernel's, and the container's. */
    enum Unavailable {
        /** A kernel before 5.6. */
        ENOSYS(Errno.ENOSYS),
        /** Docker's seccomp profile before 20.10, for every system call it does not know. */
        EPERM(Errno.EPERM);

        final int errno;

        Unavailable(int errno) {
            this.errno = errno;
        }
    }

    @ParameterizedTest(name = "openat2 answering {0}")
    @EnumSource(Unavailable.class)
    void openBeneathOpensAFileBeneathWhenOpenat2IsUnavailable(Unavailable answer) {
        RefusingOpenat2 openat2 = new RefusingOpenat2(answer.errno);
        FfmLibc withoutOpenat2 = new FfmLibc(openat2);
        long before = OpenFds.count();
        try (FileDescriptor file = withoutOpenat2.openBeneath(shared, "a/b/file", O_RDONLY, 0)) {
            assertThat(libc.fstat(file).size()).as("the file beneath, opened by the walk after " + answer).isEqualTo(1);
            assertThat(file.description()).as("the file's description").endsWith("shared/a/b/file");
        }
        withoutOpenat2.openBeneath(shared, "a/b/new", O_RDWR | O_CREAT | O_EXCL, 0600).close();
        assertThat(Files.exists(directory.resolve("shared/a/b/new"))).as("a file created beneath after " + answer).isTrue();
        assertThat(openat2.attempts).as("openat2 tried before the walk").hasPositiveValue();
        assertThat(OpenFds.count()).as("no descriptor left open").isEqualTo(before);
    }

    @ParameterizedTest(name = "openat2 answering {0}")
    @EnumSource(Unavailable.class)
    void openBeneathRefusesEscapesWithTheErrnoOfOpenat2WhenOpenat2IsUnavailable(Unavailable answer) {
        FfmLibc withoutOpenat2 = new FfmLibc(new RefusingOpenat2(answer.errno));
        List<Map.Entry<String, Integer>> escapes = List.of(
                Map.entry("../outside", Errno.EXDEV),
                Map.entry("a/../../outside", Errno.EXDEV),
                Map.entry(directory.resolve("outside").toString(), Errno.EXDEV),
                Map.entry("escape", Errno.ELOOP),
                Map.entry("a/up/outside", Errno.ELOOP));
        for (Map.Entry<String, Integer> escape : escapes) {
            String path = escape.getKey();
            int errno = escape.getValue();
            assertThatThrownBy(() -> libc.openat2(shared, path, O_RDONLY, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS))
                    .as("openat2 itself refuses " + path)
                    .isInstanceOfSatisfying(ErrnoException.class,
                            e -> assertThat(e.errnoName()).as("openat2's errno for " + path).isEqualTo(Errno.name(errno)));
            long before = OpenFds.count();
            assertThatThrownBy(() -> withoutOpenat2.openBeneath(shared, path, O_RDONLY, 0))
                    .as("openBeneath refuses " + path + " after " + answer)
                    .isInstanceOfSatisfying(ErrnoException.class,
                            e -> assertThat(e.errnoName()).as("the walk's errno for " + path + ", as openat2's").isEqualTo(Errno.name(errno)));
            assertThat(OpenFds.count()).as("no descriptor left open by " + path).isEqualTo(before);
        }
    }

    @Test
    void openBeneathRemembersEnosysButTriesOpenat2AgainAfterEperm() {
        RefusingOpenat2 missing = new RefusingOpenat2(Errno.ENOSYS);
        FfmLibc withoutOpenat2 = new FfmLibc(missing);
        withoutOpenat2.openBeneath(shared, "a/b/file", O_RDONLY, 0).close();
        withoutOpenat2.openBeneath(shared, "a/b/file", O_RDONLY, 0).close();
        assertThat(missing.attempts).as("openat2 tried once: ENOSYS means the kernel has none").hasValue(1);

        // EPERM may be a real refusal of this one open (an LSM, O_NOATIME on another's file), not a filter.
        RefusingOpenat2 forbidden = new RefusingOpenat2(Errno.EPERM);
        FfmLibc filtered = new FfmLibc(forbidden);
        filtered.openBeneath(shared, "a/b/file", O_RDONLY, 0).close();
        filtered.openBeneath(shared, "a/b/file", O_RDONLY, 0).close();
        assertThat(forbidden.attempts).as("openat2 tried at every open after EPERM").hasValue(2);
    }

    @Test
    void openBeneathThrowsAnyOtherErrnoOfOpenat2WithoutTheWalk() {
        RefusingOpenat2 openat2 = new RefusingOpenat2(Errno.EACCES);
        FfmLibc refusing = new FfmLibc(openat2);
        assertThatThrownBy(() -> refusing.openBeneath(shared, "a/b/file", O_RDONLY, 0))
                .as("openat2's EACCES, though the walk would open the file")
                .isInstanceOfSatisfying(ErrnoException.class, e -> {
                    assertThat(e.errnoName()).as("the errno").isEqualTo("EACCES");
                    assertThat(e.call()).as("the call that failed").isEqualTo("openat2");
                });
        assertThat(openat2.attempts).as("openat2 tried once").hasValue(1);
    }

    /** An {@code openat2} that fails every call with one errno, counting the calls. */
    private static final class RefusingOpenat2 implements FfmLibc.Openat2 {
        final int errno;
        final AtomicInteger attempts = new AtomicInteger();

        RefusingOpenat2(int errno) {
            this.errno = errno;
        }

        @Override
        public FileDescriptor open(FileDescriptor directory, String path, int flags, int mode, long resolve) {
            attempts.incrementAndGet();
            throw new ErrnoException("openat2", errno, path, directory + ", \"" + path + "\", (injected by the test)");
        }
    }

    private FileDescriptor fallback(String path, int flags, int mode) {
        return FfmLibc.INSTANCE.openBeneathByComponents(shared, path, flags, mode);
    }

    private void assertErrno(String path, int errno) {
        long before = OpenFds.count();
        assertThatThrownBy(() -> fallback(path, O_RDONLY, 0))
                .as(path)
                .isInstanceOfSatisfying(ErrnoException.class, e -> {
                    assertThat(e.errnoName()).as(path).isEqualTo(Errno.name(errno));
                    assertThat(path).as("the path or the component that failed").contains(e.subject());
                });
        assertThat(OpenFds.count()).as("no descriptor left open by " + path).isEqualTo(before);
    }
}
