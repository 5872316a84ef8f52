package dev.conduit.tck;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
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

    /**
     * A limit the kernel refuses (EINVAL for a negative one) fails the create, naming the cgroup,
     * and leaves no cgroup behind: until 2026-12-07 the cgroup, made before the limit was written,
     * stayed under /sys/fs/cgroup without a limit, and the failure (the write's bare "Invalid
     * argument") named neither it nor the limit.
     */
    @Test
    void aLimitTheKernelRefusesFailsTheCreateNamingTheCgroupAndLeavesItNotBehind() {
        assumeTrue(Files.isWritable(Path.of("/sys/fs/cgroup/memory/cgroup.procs"))
                || Files.isWritable(Path.of("/sys/fs/cgroup/cgroup.subtree_control")), "making a memory cgroup needs root");
        Throwable refusal = catchThrowable(() -> MemoryCgroup.create(-2).close());
        assertThat(refusal).as("MemoryCgroup.create(-2)").isInstanceOf(IOException.class)
                .hasMessageContaining(" to -2 bytes").hasMessageContaining("Invalid argument").hasMessageEndingWith("The cgroup was removed");
        Matcher named = Pattern.compile("test cgroup (\\S+) to").matcher(refusal.getMessage());
        assertThat(named.find()).as("the refusal names the cgroup: %s", refusal.getMessage()).isTrue();
        assertThat(Path.of(named.group(1))).as("the cgroup whose limit was refused").doesNotExist();
    }
}
