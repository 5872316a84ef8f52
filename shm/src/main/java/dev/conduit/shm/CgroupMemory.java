package dev.conduit.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What the memory cgroup of this process lets it take now: a container's memory limit, which the
 * kernel enforces as it does the machine's memory, by its OOM killer, and which {@code /proc/meminfo}
 * does not show (it shows the host's). Shared memory (a memfd, a file on tmpfs) is charged to the
 * cgroup of the process that first touches its pages, so a chunk past the limit ends a process of
 * the container instead of failing its allocation.
 *
 * <p>Read from the cgroup file systems, as the kernel documents them
 * ({@code Documentation/admin-guide/cgroup-v2.rst}, {@code cgroup-v1/memory.rst}):
 *
 * <pre>
 * version  cgroup of this process              limit (least of it and its ancestors)         in use
 * -------  ----------------------------------  --------------------------------------------  ------------------------------------------
 * v2       "0::PATH" in /proc/self/cgroup,     memory.max of PATH and each parent up to the    memory.current less inactive_file of
 *          under the mount (/sys/fs/cgroup)    mount ("max": none); swap: memory.swap.max      memory.stat, at the same level; swap:
 *                                                                                              memory.swap.current
 * v1       "N:...memory...:PATH", under        memory.limit_in_bytes of PATH and each parent   memory.usage_in_bytes less total_inactive_file
 *          MOUNT/memory                        up to the mount; swap: memory.memsw.limit_in_   of memory.stat, at the same level; swap:
 *                                              bytes (memory and swap) past the memory's       memory.memsw.usage_in_bytes
 * </pre>
 *
 * What is in use counts as Kubernetes' working set does: the inactive file cache goes first under
 * pressure, so it is not held against the limit. A {@code PATH} that is not under the mount (a
 * container without a cgroup namespace sees the host's path, and its own cgroup mounted as the
 * root) is read at the mount itself. Anything unreadable or not as the kernel writes it reads as no
 * limit: this check guards against an OOM kill, and must not refuse memory on a guess.
 */
public final class CgroupMemory {

    /** v1 writes "no limit" as the largest multiple of the page size below 2^63. */
    private static final long V1_UNLIMITED = Long.MAX_VALUE / 2;

    /**
     * What the cgroup lets this process take now, and which file says so.
     *
     * @param bytes     memory left under the limit, plus the swap the cgroup still allows (at most {@code swapFree})
     * @param limitFile the file of the binding limit, for messages
     * @param limit     that limit, in bytes
     * @param inUse     what counts against it now
     */
    public record Headroom(long bytes, Path limitFile, long limit, long inUse) {
    }

    /** Which cgroups this process is in, and where they are mounted: {@link #check}. */
    private static final Path PROC_SELF_CGROUP = Path.of("/proc/self/cgroup");
    private static final Path MOUNT = Path.of("/sys/fs/cgroup");

    private CgroupMemory() {
    }

    /**
     * Refuses {@code size} bytes of shared memory (a chunk {@code what} names) when this process's
     * memory cgroup lets it take less now.
     *
     * @param what   what the bytes are for, for the message: {@code "a memfd chunk"}
     * @param remedy what to allocate less of, for the message: the keys that size what Conduit allocates
     */
    public static void check(long size, String what, String remedy) {
        check(size, what, remedy, () -> Meminfo.read(Meminfo.PATH).swapFree());
    }

    /** {@link #check(long, String, String)} with the machine's free swap from a {@link Meminfo} the caller read already. */
    public static void check(long size, String what, String remedy, LongSupplier swapFree) {
        Headroom cgroup = of(PROC_SELF_CGROUP, MOUNT, swapFree);
        if (cgroup != null && size > cgroup.bytes()) {
            throw new dev.conduit.spi.ConduitException("cannot allocate " + what + " of " + size + " bytes: this process's memory cgroup "
                    + "lets it take only " + cgroup.bytes() + " bytes more (a limit of " + cgroup.limit() + " bytes in "
                    + cgroup.limitFile() + ", " + cgroup.inUse() + " in use not counting inactive file cache, and the swap it allows). "
                    + "Shared memory is charged to the cgroup of the process that first writes its pages, and past the cgroup's limit "
                    + "the kernel's OOM killer ends a process of it rather than fail the write: raise the limit (a container's memory "
                    + "limit: docker run --memory, Kubernetes resources.limits.memory), or allocate less (" + remedy + ")");
        }
    }

    /**
     * The headroom of this process's memory cgroup, or null when no limit applies or none can be read.
     *
     * @param procSelfCgroup {@code /proc/self/cgroup}
     * @param mount          where the cgroup file systems are mounted, {@code /sys/fs/cgroup}
     * @param swapFree       the machine's free swap ({@code SwapFree}), the most a cgroup's swap allowance can give; asked
     *                       only when a limit applies
     */
    public static Headroom of(Path procSelfCgroup, Path mount, LongSupplier swapFree) {
        List<String> lines;
        try {
            lines = Files.readAllLines(procSelfCgroup);
        } catch (IOException e) {
            return null;
        }
        try {
            for (String line : lines) { // v1's memory controller, where it is mounted, counts: v2 then has no memory controller
                String[] fields = line.split(":", 3);
                if (fields.length == 3 && !fields[0].equals("0") && List.of(fields[1].split(",")).contains("memory")) {
                    Path base = mount.resolve("memory");
                    return v1(base, cgroupDirectory(base, fields[2]), swapFree);
                }
            }
            for (String line : lines) {
                if (line.startsWith("0::")) return v2(mount, cgroupDirectory(mount, line.substring(3)), swapFree);
            }
        } catch (IOException | NumberFormatException e) {
            return null;
        }
        return null;
    }

    /** {@code path} under {@code base}, or {@code base} itself when the cgroup is not there (no cgroup namespace). */
    private static Path cgroupDirectory(Path base, String path) {
        Path directory = base.resolve(path.startsWith("/") ? path.substring(1) : path).normalize();
        return directory.startsWith(base) && Files.isDirectory(directory) ? directory : base;
    }

    /**
     * v1: the least headroom of the cgroup and its ancestors under the mount, each level's
     * {@code memory.limit_in_bytes} less its {@code memory.usage_in_bytes} (which counts its
     * descendants) less the {@code total_inactive_file} of its {@code memory.stat}; the swap a level
     * allows is its memory-and-swap headroom ({@code memory.memsw.*}, the inactive cache off its
     * usage too, as dropping the cache frees both) past its memory headroom. Reading
     * {@code hierarchical_memory_limit} alone missed what siblings under an ancestor's limit use.
     */
    private static Headroom v1(Path base, Path cgroup, LongSupplier swapFree) throws IOException {
        Headroom least = null;
        long swap = Long.MAX_VALUE;
        for (Path level = cgroup; level != null && level.startsWith(base); level = level.getParent()) {
            Path limitFile = level.resolve("memory.limit_in_bytes");
            if (!Files.isReadable(limitFile)) continue;
            long limit = number(limitFile);
            if (limit < 0 || limit >= V1_UNLIMITED) continue;
            long inactive = Math.max(0, statValue(level.resolve("memory.stat"), "total_inactive_file"));
            long inUse = Math.max(0, number(level.resolve("memory.usage_in_bytes")) - inactive);
            long memory = Math.max(0, limit - inUse);
            if (least == null || memory < least.bytes()) least = new Headroom(memory, limitFile, limit, inUse);
            Path memswLimit = level.resolve("memory.memsw.limit_in_bytes");
            Path memswUsage = level.resolve("memory.memsw.usage_in_bytes");
            if (Files.isReadable(memswLimit) && Files.isReadable(memswUsage)) {
                long memoryAndSwap = number(memswLimit);
                if (memoryAndSwap >= 0 && memoryAndSwap < V1_UNLIMITED) {
                    swap = Math.min(swap, Math.max(0, memoryAndSwap - Math.max(0, number(memswUsage) - inactive) - memory));
                }
            }
        }
        return withSwap(least, swap, swapFree);
    }

    /** v2: the least headroom of the cgroup and its ancestors under the mount, and the least swap they allow. */
    private static Headroom v2(Path mount, Path cgroup, LongSupplier swapFree) throws IOException {
        Headroom least = null;
        long swap = Long.MAX_VALUE;
        for (Path level = cgroup; level != null && level.startsWith(mount); level = level.getParent()) {
            Path max = level.resolve("memory.max");
            if (Files.isReadable(max)) {
                long limit = number(max);
                if (limit >= 0) {
                    long inactive = Math.max(0, statValue(level.resolve("memory.stat"), "inactive_file"));
                    long inUse = Math.max(0, number(level.resolve("memory.current")) - inactive);
                    long memory = Math.max(0, limit - inUse);
                    if (least == null || memory < least.bytes()) least = new Headroom(memory, max, limit, inUse);
                }
            }
            Path swapMax = level.resolve("memory.swap.max");
            if (Files.isReadable(swapMax)) {
                long limit = number(swapMax);
                if (limit >= 0) swap = Math.min(swap, Math.max(0, limit - number(level.resolve("memory.swap.current"))));
            }
        }
        return withSwap(least, swap, swapFree);
    }

    /** {@code least}, with the swap the levels allow added, at most the machine's free swap (read only when a limit was found). */
    private static Headroom withSwap(Headroom least, long swapAllowed, LongSupplier swapFree) {
        if (least == null) return null;
        return new Headroom(least.bytes() + Math.min(swapAllowed, Math.max(0, swapFree.getAsLong())), least.limitFile(), least.limit(),
                least.inUse());
    }

    /** The number a cgroup file holds; -1 for {@code max}, v2's "no limit". */
    private static long number(Path file) throws IOException {
        String value = Files.readString(file).trim();
        return value.equals("max") ? -1 : Long.parseLong(value);
    }

    /** The value of {@code key} in a {@code memory.stat} ("key value" lines); -1 when it is not there. */
    private static long statValue(Path stat, String key) throws IOException {
        if (!Files.isReadable(stat)) return -1;
        for (String line : Files.readAllLines(stat)) {
            int space = line.indexOf(' ');
            if (space > 0 && line.regionMatches(0, key, 0, space) && space == key.length()) {
                return Long.parseLong(line.substring(space + 1).trim());
            }
        }
        return -1;
    }
}
