package dev.conduit.linux.internal;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFds;
import dev.conduit.linux.Libc;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.conduit.linux.OpenFlags.O_CREAT;
import static dev.conduit.linux.OpenFlags.O_DIRECTORY;
import static dev.conduit.linux.OpenFlags.O_EXCL;
import static dev.conduit.linux.OpenFlags.O_PATH;
import static dev.conduit.linux.OpenFlags.O_RDONLY;
import static dev.conduit.linux.OpenFlags.O_RDWR;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The path walk {@code openBeneath} falls back to on kernels without {@code openat2}: run
 * directly, since this kernel has {@code openat2}, and held to the same errnos.
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
