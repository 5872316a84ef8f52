package dev.conduit.linux;

import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Rendering of errors and flags, independent of the kernel. */
class ErrnoExceptionTest {

    @Test
    void readsLikeStrace() {
        ErrnoException e = new ErrnoException("open", Errno.EEXIST, "/dev/shm/x",
                "\"/dev/shm/x\", " + OpenFlags.describe(OpenFlags.O_RDWR | OpenFlags.O_CREAT | OpenFlags.O_EXCL | OpenFlags.O_NOFOLLOW));
        assertThat(e).isInstanceOf(ConduitException.class);
        assertThat(e).hasMessage("open(\"/dev/shm/x\", O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW): EEXIST (File exists)");
        assertThat(e.call()).isEqualTo("open");
        assertThat(e.errno()).isEqualTo(17);
        assertThat(e.errnoName()).isEqualTo("EEXIST");
        assertThat(e.subject()).isEqualTo("/dev/shm/x");
    }

    @Test
    void unknownErrnoPrintsItsNumber() {
        assertThat(Errno.name(999)).isEqualTo("errno 999");
        assertThat(Errno.description(999)).isEmpty();
        assertThat(Errno.name(41)).as("a hole in the table").isEqualTo("errno 41");
        assertThat(new ErrnoException("ioctl", 999, "fd 3", "fd 3")).hasMessage("ioctl(fd 3): errno 999");
    }

    @Test
    void aliasesAreAcceptedOnlyForTheirNumber() {
        assertThat(new ErrnoException("flock", Errno.EAGAIN, "EWOULDBLOCK", "fd 3", "fd 3", null).errnoName())
                .isEqualTo("EWOULDBLOCK");
        assertThatThrownBy(() -> new ErrnoException("flock", Errno.EPERM, "EWOULDBLOCK", "fd 3", "fd 3", null))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void hintIsAppended() {
        assertThat(new ErrnoException("connect", Errno.ENAMETOOLONG, "/x", "fd 3, \"/x\"", "use a shorter directory"))
                .hasMessage("connect(fd 3, \"/x\"): ENAMETOOLONG (File name too long): use a shorter directory");
    }

    /**
     * A shortage of descriptors has one remedy, which shm, memfd and devdax each used to word
     * themselves (memfd told a full system table to raise ulimit -n); any other errno gets the
     * caller's own.
     */
    @Test
    void aShortageOfDescriptorsHasOneRemedyAndAnyOtherErrnoTheCallers() {
        assertThat(Errno.remedy(Errno.EMFILE, "fix the path")).isEqualTo(Errno.shortageRemedy(Errno.EMFILE))
                .startsWith("this process has no file descriptor left: ")
                .contains("ulimit -n", "RLIMIT_NOFILE", "systemd LimitNOFILE", "close descriptors it no longer needs")
                .doesNotContain("fs.file-max");
        assertThat(Errno.remedy(Errno.ENFILE, "fix the path")).isEqualTo(Errno.shortageRemedy(Errno.ENFILE))
                .startsWith("the system's open-file table is full: ").contains("fs.file-max").doesNotContain("ulimit");
        assertThat(Errno.remedy(Errno.ENOENT, "fix the path")).isEqualTo("fix the path");
        assertThatThrownBy(() -> Errno.shortageRemedy(Errno.ENOMEM))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("ENOMEM is no shortage of file descriptors");
    }

    @Test
    void flagsRenderWithCNames() {
        assertThat(OpenFlags.describe(OpenFlags.O_RDONLY)).isEqualTo("O_RDONLY");
        assertThat(OpenFlags.describe(OpenFlags.O_WRONLY | OpenFlags.O_TRUNC | 0x4000_0000)).isEqualTo("O_WRONLY|O_TRUNC|0x40000000");
        assertThat(Seals.describe(Seals.FIXED_SIZE)).isEqualTo("F_SEAL_SEAL|F_SEAL_SHRINK|F_SEAL_GROW");
        assertThat(MmapFlags.describe(MmapFlags.MAP_SHARED_VALIDATE | MmapFlags.MAP_SYNC)).isEqualTo("MAP_SHARED_VALIDATE|MAP_SYNC");
        assertThat(MmapFlags.describeProtection(MmapFlags.PROT_NONE)).isEqualTo("PROT_NONE");
        assertThat(SocketFlags.describeType(SocketFlags.SOCK_STREAM | SocketFlags.SOCK_CLOEXEC)).isEqualTo("SOCK_STREAM|SOCK_CLOEXEC");
        assertThat(LockFlags.describe(LockFlags.LOCK_EX | LockFlags.LOCK_NB)).isEqualTo("LOCK_EX|LOCK_NB");
        assertThat(PollEvents.describe(0)).isEqualTo("0");
    }
}
