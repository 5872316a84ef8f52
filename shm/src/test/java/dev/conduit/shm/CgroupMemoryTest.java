package dev.conduit.shm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What this process's memory cgroup lets it take, read from cgroup file systems laid out as the
 * kernel does (v1 and v2); the plugins' tests run a JVM in a real cgroup (memfd
 * {@code MemfdCgroupLimitTest}, posix {@code CrossProcessTest}).
 */
class CgroupMemoryTest {
    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    private Path write(String relative, String content) throws IOException {
        Path file = dir.resolve(relative);
        Files.createDirectories(file.getParent());
        return Files.writeString(file, content);
    }

    /** v2: the least headroom of the cgroup and its ancestors, the inactive file cache not held against it, swap within swap.max. */
    @Test
    void aV2CgroupsHeadroomIsItsLeastLimitLessWhatItUsesPlusTheSwapItAllows() throws IOException {
        Path proc = write("proc-self-cgroup", "0::/kubepods/pod1/app\n");
        write("mnt/memory.max", "max\n"); // the root has none
        write("mnt/kubepods/memory.max", String.valueOf(1024 * MIB));
        write("mnt/kubepods/memory.current", String.valueOf(900 * MIB));
        write("mnt/kubepods/memory.stat", "anon 1\ninactive_file " + 100 * MIB + "\nactive_file 5\n");
        write("mnt/kubepods/pod1/memory.max", "max");
        write("mnt/kubepods/pod1/app/memory.max", String.valueOf(512 * MIB));
        write("mnt/kubepods/pod1/app/memory.current", String.valueOf(300 * MIB));
        write("mnt/kubepods/pod1/app/memory.stat", "inactive_file " + 100 * MIB + "\n");
        write("mnt/kubepods/pod1/app/memory.swap.max", String.valueOf(64 * MIB));
        write("mnt/kubepods/pod1/app/memory.swap.current", String.valueOf(16 * MIB));

        CgroupMemory.Headroom headroom = CgroupMemory.of(proc, dir.resolve("mnt"), () -> 1024 * MIB);
        // app: 512 - (300 - 100) = 312; kubepods: 1024 - (900 - 100) = 224, the least; swap: 64 - 16 = 48
        assertThat(headroom).isEqualTo(new CgroupMemory.Headroom(272 * MIB, dir.resolve("mnt/kubepods/memory.max"), 1024 * MIB, 800 * MIB));
        assertThat(CgroupMemory.of(proc, dir.resolve("mnt"), () -> 10 * MIB).bytes()).as("no more swap than the machine has free")
                .isEqualTo(234 * MIB);
    }

    /**
     * v1: as v2, the least headroom of the cgroup and its ancestors, each level's usage counting its
     * descendants: reading {@code hierarchical_memory_limit} with the cgroup's own usage missed what
     * its siblings use under an ancestor's limit (found by helper h9).
     */
    @Test
    void aV1CgroupsHeadroomIsTheLeastOfItsAndItsAncestorsLimitsLessWhatEachUsesPlusTheSwapTheyAllow() throws IOException {
        Path proc = write("proc-self-cgroup", "9:pids:/x\n4:memory:/docker/abc\n0::/\n");
        v1Level("mnt/memory", V1_UNLIMITED, 5000 * MIB, 0, V1_UNLIMITED, 5000 * MIB); // the root: no limit
        v1Level("mnt/memory/docker", 1024 * MIB, 900 * MIB, 100 * MIB, V1_UNLIMITED, 900 * MIB); // siblings of abc use most of it
        v1Level("mnt/memory/docker/abc", 512 * MIB, 70 * MIB, 6 * MIB, 576 * MIB, 72 * MIB);

        CgroupMemory.Headroom headroom = CgroupMemory.of(proc, dir.resolve("mnt"), () -> 1024 * MIB);
        // abc: 512 - (70 - 6) = 448; docker: 1024 - (900 - 100) = 224, the least; swap allowed by abc: 576 - (72 - 6) - 448 = 62
        assertThat(headroom).isEqualTo(new CgroupMemory.Headroom(286 * MIB, dir.resolve("mnt/memory/docker/memory.limit_in_bytes"),
                1024 * MIB, 800 * MIB));
    }

    private static final long V1_UNLIMITED = 9223372036854771712L;

    private void v1Level(String directory, long limit, long usage, long inactiveFile, long memoryAndSwapLimit, long memoryAndSwapUsage)
            throws IOException {
        write(directory + "/memory.limit_in_bytes", limit + "\n");
        write(directory + "/memory.usage_in_bytes", usage + "\n");
        write(directory + "/memory.stat", "cache 1\ntotal_inactive_file " + inactiveFile + "\n");
        write(directory + "/memory.memsw.limit_in_bytes", memoryAndSwapLimit + "\n");
        write(directory + "/memory.memsw.usage_in_bytes", memoryAndSwapUsage + "\n");
    }

    /**
     * v1's memory-and-swap usage counts the inactive file cache as its memory usage does, and
     * dropping that cache frees both: it is held against neither. It was held against the swap, so
     * a container of 1 GiB (2 GiB with swap, docker's default) that had read 800 MiB of files was
     * said to have 1148 MiB where it has 1948, and a chunk of 1.5 GiB that swap would hold was refused.
     */
    @Test
    void aV1CgroupsInactiveFileCacheHidesNoneOfTheSwapItAllows() throws IOException {
        Path proc = write("proc-self-cgroup", "4:memory:/docker/abc\n");
        v1Level("mnt/memory/docker/abc", 1024 * MIB, 900 * MIB, 800 * MIB, 2048 * MIB, 900 * MIB); // nothing swapped out

        // memory: 1024 - (900 - 800) = 924; memory and swap: 2048 - (900 - 800) = 1948
        assertThat(CgroupMemory.of(proc, dir.resolve("mnt"), () -> 4096 * MIB).bytes()).isEqualTo(1948 * MIB);
    }

    /** A container without a cgroup namespace sees the host's path in /proc/self/cgroup, and its own cgroup mounted as the root. */
    @Test
    void aCgroupPathNotUnderTheMountIsReadAtTheMount() throws IOException {
        Path proc = write("proc-self-cgroup", "0::/system.slice/docker-abc.scope\n");
        write("mnt/memory.max", String.valueOf(128 * MIB));
        write("mnt/memory.current", String.valueOf(28 * MIB));
        assertThat(CgroupMemory.of(proc, dir.resolve("mnt"), () -> 0).bytes()).isEqualTo(100 * MIB);
    }

    /** Nothing to go by reads as no limit: the check guards against an OOM kill and must not refuse memory on a guess. */
    @Test
    void noLimitOrNothingReadableIsNoHeadroomToCheck() throws IOException {
        assertThat(CgroupMemory.of(dir.resolve("absent"), dir, () -> 0)).as("no /proc/self/cgroup").isNull();
        Path limited = write("limited", "0::/b\n");
        write("mnt3/b/memory.max", "4096\n");
        write("mnt3/b/memory.current", "0\n");
        assertThat(CgroupMemory.of(limited, dir.resolve("mnt3"), () -> -1).bytes()).as("meminfo without SwapFree: no swap").isEqualTo(4096);
        Path v2 = write("v2", "0::/a\n");
        write("mnt2/a/memory.max", "max\n");
        assertThat(CgroupMemory.of(v2, dir.resolve("mnt2"), () -> 0)).as("max all the way up").isNull();
        Path v1 = write("v1", "4:memory:/\n");
        v1Level("mnt1/memory", V1_UNLIMITED, 1, 0, V1_UNLIMITED, 1);
        assertThat(CgroupMemory.of(v1, dir.resolve("mnt1"), () -> 0)).as("v1's no limit").isNull();
        write("mnt2/a/memory.max", "a lot\n");
        assertThat(CgroupMemory.of(v2, dir.resolve("mnt2"), () -> 0)).as("not as the kernel writes it").isNull();
        assertThat(CgroupMemory.of(Path.of("/proc/self/cgroup"), Path.of("/sys/fs/cgroup"), () -> 0)).as("this machine's, read without failing")
                .satisfiesAnyOf(h -> assertThat(h).isNull(), h -> assertThat(h.bytes()).isNotNegative());
    }
}
