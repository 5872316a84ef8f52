package dev.conduit.tck;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

/**
 * A memory cgroup made for a test, with a limit, for a child process to run in: a container's
 * memory limit without a container. v1 or v2, whichever this kernel's memory controller is on;
 * needs root. It allows no swap, where the kernel accounts swap per cgroup: what a process in it
 * may take is then the limit less what it uses on every machine, also one with free swap (which
 * a cgroup whose swap is not limited may take besides). Removed at {@link #close}, once its
 * processes have ended.
 */
public final class MemoryCgroup implements AutoCloseable {

    private static final Path V1 = Path.of("/sys/fs/cgroup/memory");
    private static final Path V2 = Path.of("/sys/fs/cgroup");

    private final Path directory;
    private final Path limitFile;

    private MemoryCgroup(Path directory, Path limitFile) {
        this.directory = directory;
        this.limitFile = limitFile;
    }

    /**
     * Makes a cgroup of {@code limit} bytes.
     *
     * @throws AssertionError naming what is missing when no memory controller can be used here
     * @throws IOException     naming the cgroup and the limit when the kernel refuses it (a negative one); the cgroup is
     *                         removed (until 2026-12-07 it stayed, without a limit)
     */
    public static MemoryCgroup create(long limit) throws IOException {
        boolean v1 = Files.isWritable(V1.resolve("cgroup.procs")) && Files.exists(V1.resolve("memory.limit_in_bytes"));
        boolean v2 = !v1 && Files.isWritable(V2.resolve("cgroup.subtree_control"))
                && Files.readString(V2.resolve("cgroup.subtree_control")).contains("memory");
        if (!v1 && !v2) {
            throw new AssertionError("no memory cgroup controller this process can use: neither v1 at " + V1 + " nor v2 with memory in "
                    + V2.resolve("cgroup.subtree_control") + " (run as root)");
        }
        Path directory = Files.createDirectory((v1 ? V1 : V2).resolve("conduit-test-" + UUID.randomUUID()));
        Path limitFile = directory.resolve(v1 ? "memory.limit_in_bytes" : "memory.max");
        try {
            Files.writeString(limitFile, Long.toString(limit));
            // No swap: v1's memory-and-swap limit equal to the memory's (written after it, which it may not be below), v2's swap
            // limit 0. Absent where the kernel does not account swap (swapaccount=0), and then no cgroup limits it.
            Path swapLimit = directory.resolve(v1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max");
            if (Files.exists(swapLimit)) Files.writeString(swapLimit, v1 ? Long.toString(limit) : "0");
        } catch (IOException e) {
            // The cgroup is made first, and would stay under the cgroup file system, limitless, for good.
            IOException refused = new IOException("cannot limit the test cgroup " + directory + " to " + limit + " bytes: writing "
                    + limitFile.getFileName() + " or its swap limit failed (" + e.getMessage() + "); the kernel takes a limit of 0 "
                    + "bytes or more. The cgroup was removed", e);
            try {
                Files.delete(directory);
            } catch (IOException | RuntimeException notRemoved) {
                refused.addSuppressed(notRemoved);
            }
            throw refused;
        }
        return new MemoryCgroup(directory, limitFile);
    }

    /** The file that says the limit, as {@code CgroupMemory} names it in its refusals. */
    public Path limitFile() {
        return limitFile;
    }

    /** A command prefix that runs the rest of the command in this cgroup: a shell that moves itself in, then becomes the command. */
    public List<String> wrapper() {
        return List.of("sh", "-c", "echo $$ > \"$1\"/cgroup.procs || exit 8; shift; exec \"$@\"", "in-cgroup", directory.toString());
    }

    @Override
    public void close() throws IOException {
        Files.delete(directory);
    }
}
