package dev.conduit.plugin.memfd;

import dev.conduit.linux.Linux;
import dev.conduit.tck.MemoryCgroup;
import dev.conduit.tck.HugePageReservation;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A container's memory limit, which {@code /proc/meminfo} does not show: a memfd chunk larger than
 * what this process's memory cgroup lets it take is refused, naming the limit's file and the
 * remedy. It used to be allocated, and writing it brought the cgroup's OOM killer onto a process of
 * the container (lead of an earlier session: a cgroup's {@code memory.max} was not counted).
 */
class MemfdCgroupLimitTest {
    private static final long MIB = 1 << 20;
    /** The cgroup v2 hierarchy, the only one on a host without v1 (where a v1 hugetlb mount fails, the controller being v2's). */
    private static final Path UNIFIED = Path.of("/sys/fs/cgroup").resolve(Files.exists(Path.of("/sys/fs/cgroup/unified/cgroup.controllers")) ? "unified" : "");

    @TempDir
    Path dir;

    /**
     * For real: a JVM in a memory cgroup of 256 MiB (made here, v1 or v2, whichever this kernel's
     * memory controller is on) is refused a chunk of 512 MiB, which the machine's memory would hold,
     * naming the cgroup's file and the remedy; one of 16 MiB is allocated.
     */
    @Test
    @Timeout(180) // a hang guard, not a speed check
    void aChunkLargerThanTheProcesssMemoryCgroupLetsItTakeIsRefusedNamingTheLimit() throws Exception {
        assumeTrue(Linux.libc().geteuid() == 0, "making a memory cgroup needs root");
        try (MemoryCgroup cgroup = MemoryCgroup.create(256 * MIB)) {
            Result refused = allocateIn(cgroup, 512 * MIB);
            assertThat(refused.exitCode()).as("exit code (3: refused); stdout %s, stderr %s", refused.stdout(), refused.stderr()).isEqualTo(3);
            assertThat(refused.stderr()).startsWith("cannot allocate a memfd chunk of " + 512 * MIB + " bytes: this process's memory "
                    + "cgroup lets it take only ").contains("a limit of " + 256 * MIB + " bytes in " + cgroup.limitFile())
                    .contains("OOM killer").contains("docker run --memory").contains("pool.chunk.size");
            Result allocated = allocateIn(cgroup, 16 * MIB);
            assertThat(allocated.stdout()).as("stderr %s", allocated.stderr()).isEqualTo("allocated");
        }
    }

    /**
     * A JVM in a hugetlb cgroup that may take no huge page (v2's {@code hugetlb.2MB.max} 0 where the
     * unified hierarchy has the controller, else v1's {@code hugetlb.2MB.limit_in_bytes} 0, the
     * controller mounted here for the test; the machine's pool has pages free) is refused a
     * chunk with {@code memfd.hugepages=yes}, naming ENOSPC and the cgroup's file. Such a limit is
     * charged when a page is first touched, and a touch past it gets SIGBUS: without the provider's
     * fallocate the mmap succeeded and the JVM's first write failed with the JDK's InternalError "a
     * fault occurred in an unsafe memory access operation" (exit 1).
     */
    @Test
    @Timeout(180) // a hang guard, not a speed check
    void aChunkOfHugePagesPastTheCgroupsHugetlbLimitIsRefusedNotASigbus() throws Exception {
        boolean v2 = Files.readString(UNIFIED.resolve("cgroup.controllers")).contains("hugetlb");
        Path controller = v2 ? UNIFIED : Files.createDirectory(dir.resolve("hugetlb"));
        if (v2) Files.writeString(UNIFIED.resolve("cgroup.subtree_control"), "+hugetlb");
        else run("mount", "-t", "cgroup", "-o", "hugetlb", "none", controller.toString()); // a v1 hierarchy of its own
        String limitFile = v2 ? "hugetlb.2MB.max" : "hugetlb.2MB.limit_in_bytes";
        try (HugePageReservation pool = HugePageReservation.withFree(2)) {
            Path cgroup = Files.createDirectory(controller.resolve("conduit-test-" + java.util.UUID.randomUUID()));
            try {
                Files.writeString(cgroup.resolve(limitFile), "0");
                List<String> wrapper = List.of("sh", "-c", "echo $$ > \"$1\"/cgroup.procs || exit 8; shift; exec \"$@\"", "in-cgroup",
                        cgroup.toString());
                Result refused = allocateIn(wrapper, 2 * MIB, "yes");
                assertThat(refused.exitCode()).as("exit code (3: refused; 1 with an InternalError: the SIGBUS); stdout %s, stderr %s", refused.stdout(),
                        refused.stderr()).isEqualTo(3);
                assertThat(refused.stderr()).startsWith("cannot allocate a memfd chunk of " + 2 * MIB + " bytes in huge pages "
                        + "(memfd.hugepages=yes): fallocate(").contains("ENOSPC").contains("the pool has them, so a hugetlb limit of this process's cgroup refused them")
                        .contains(limitFile);
                assertThat(pool.free()).as("every page given back").isEqualTo(2);
            } finally {
                Files.delete(cgroup);
            }
        } finally {
            if (!v2) run("umount", controller.toString());
        }
    }

    private static void run(String... command) throws Exception {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor()).as("%s: %s", String.join(" ", command), output).isZero();
    }

    private record Result(int exitCode, String stdout, String stderr) {}

    /** Runs {@link AllocatingProcess} in {@code cgroup}. */
    private Result allocateIn(MemoryCgroup cgroup, long size) throws Exception {
        return allocateIn(cgroup.wrapper(), size);
    }

    /** Runs {@link AllocatingProcess} through {@code wrapper}, a command that runs the rest of its arguments, with {@code config}. */
    private Result allocateIn(List<String> wrapper, long size, String... hugePages) throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path testClasses = Path.of(AllocatingProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> command = new ArrayList<>(wrapper);
        command.addAll(List.of(java.toString(), "-Xmx64m",
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.memfd=" + testClasses,
                "-cp", TestContext.location().toString(), "--add-reads", "dev.conduit.plugin.memfd=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.memfd/" + AllocatingProcess.class.getName(), dir.toString(), Long.toString(size)));
        command.addAll(List.of(hugePages));
        Path errors = Files.createTempFile(dir, "stderr", ".txt");
        Process process = new ProcessBuilder(command).redirectError(errors.toFile()).start();
        process.getOutputStream().close();
        String stdout = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(process.waitFor(120, TimeUnit.SECONDS)).as("the allocating JVM ended").isTrue();
        return new Result(process.exitValue(), stdout, Files.readString(errors).strip());
    }
}
