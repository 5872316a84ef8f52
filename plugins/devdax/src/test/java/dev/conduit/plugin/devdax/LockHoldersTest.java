package dev.conduit.plugin.devdax;

import dev.conduit.linux.FileStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** Naming the holder of a device's lock from {@code /proc/locks}, against fixture listings. */
class LockHoldersTest {

    private static final long DEV = FileStatus.makedev(0, 0x1a);
    private static final long INODE = 1234567;

    private static final String LOCKS = """
            1: POSIX  ADVISORY  WRITE 555 00:1a:1234567 0 EOF
            2: FLOCK  ADVISORY  WRITE 600 fd:01:1234567 0 EOF
            3: FLOCK  ADVISORY  WRITE 4711 00:1a:1234567 0 EOF
            3: -> FLOCK  ADVISORY  WRITE 4712 00:1a:1234567 0 EOF
            4: OFDLCK ADVISORY  READ  -1 00:1a:99 0 EOF
            """;

    @Test
    void findsTheFlockOnTheSameFileOfTheSameFileSystem() {
        assertThat(LockHolders.holderPid(LOCKS, DEV, INODE)).isEqualTo(4711);
        assertThat(LockHolders.holderPid(LOCKS, DEV, 99)).as("not a flock").isEqualTo(-1);
        assertThat(LockHolders.holderPid(LOCKS, FileStatus.makedev(0xfd, 1), INODE)).isEqualTo(600);
        assertThat(LockHolders.holderPid(LOCKS, FileStatus.makedev(0x103, 0x100001), INODE)).isEqualTo(-1);
        assertThat(LockHolders.holderPid("", DEV, INODE)).isEqualTo(-1);
        assertThat(LockHolders.holderPid("7: FLOCK  ADVISORY  WRITE 0 00:1a:1234567 0 EOF\n", DEV, INODE))
                .as("a holder in a PID namespace this /proc does not see").isZero();
        assertThat(LockHolders.holderPid("9: FLOCK  ADVISORY  WRITE 42 103:100001:1234567 0 EOF\n",
                FileStatus.makedev(0x103, 0x100001), INODE)).as("wide device numbers").isEqualTo(42);
    }

    @Test
    void describesTheHolderForTheRefusal(@TempDir Path dir) throws Exception {
        FileStatus status = new FileStatus(0, FileStatus.S_IFREG, 0, 0, DEV, 0, INODE, 0);
        Path locks = java.nio.file.Files.writeString(dir.resolve("locks"), LOCKS);
        assertThat(LockHolders.describeHolder(locks, status, 1)).isEqualTo("held by pid 4711");
        assertThat(LockHolders.describeHolder(locks, status, 4711)).isEqualTo("held by pid 4711 (this process)");
        Path invisible = java.nio.file.Files.writeString(dir.resolve("invisible"), "1: FLOCK  ADVISORY  WRITE 0 00:1a:1234567 0 EOF\n");
        assertThat(LockHolders.describeHolder(invisible, status, 1))
                .isEqualTo("held by another process (not visible here, e.g. another PID namespace)");
        assertThat(LockHolders.describeHolder(dir.resolve("missing"), status, 1))
                .startsWith("held by another process (" + dir.resolve("missing") + " is not readable here");
    }
}
