package dev.conduit.tck;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class MemoryCgroupTest {
    private static final long MIB = 1 << 20;

    /**
     * The cgroup allows no swap where the kernel accounts it: a cgroup whose swap is not limited
     * may take the machine's free swap besides its limit (shm.CgroupMemory counts it so), and the
     * plugins' tests of a refusal for a 256 MiB cgroup (512 MiB refused) then failed on any
     * machine with more than 256 MiB of swap free.
     */
    @Test
    void theCgroupAllowsNoSwap() throws IOException {
        assumeTrue(Files.isWritable(Path.of("/sys/fs/cgroup/memory/cgroup.procs"))
                || Files.isWritable(Path.of("/sys/fs/cgroup/cgroup.subtree_control")), "making a memory cgroup needs root");
        try (MemoryCgroup cgroup = MemoryCgroup.create(256 * MIB)) {
            Path directory = cgroup.limitFile().getParent();
            Path v1 = directory.resolve("memory.memsw.limit_in_bytes");
            Path v2 = directory.resolve("memory.swap.max");
            assumeTrue(Files.exists(v1) || Files.exists(v2), "this kernel does not account swap per cgroup");
            if (Files.exists(v1)) assertThat(Files.readString(v1).strip()).isEqualTo(Long.toString(256 * MIB));
            if (Files.exists(v2)) assertThat(Files.readString(v2).strip()).isEqualTo("0");
        }
    }
}
