package dev.conduit.shm;

import java.nio.file.Path;
import java.util.Map;

/**
 * The kernel's pool of huge pages of the default size, as {@code /proc/meminfo} tells it
 * ({@code Hugepagesize}, {@code HugePages_Total}, {@code HugePages_Free}, {@code HugePages_Rsvd}), and what to do when it
 * is short. Huge pages are not taken from free memory as they are touched: an administrator
 * reserves them ({@code vm.nr_hugepages}), and a hugetlb file's {@code MAP_SHARED} mapping, or
 * its {@code fallocate}, takes them from that pool or fails with an errno.
 *
 * @param pageSize the default huge page size in bytes; -1 when the kernel does not say (no hugetlb support)
 * @param total    {@code HugePages_Total}; -1 when not said
 * @param free     {@code HugePages_Free}; -1 when not said
 * @param reserved {@code HugePages_Rsvd}: pages of {@code free} that mappings made already reserved and have not touched,
 *                 no new mapping's to take; -1 when not said
 */
public record HugePages(long pageSize, long total, long free, long reserved) {

    /** Where the pool is sized, for remedies. */
    public static final Path NR_HUGEPAGES = Path.of("/proc/sys/vm/nr_hugepages");

    /** Whether a provider backs its chunks with huge pages, as UCX's {@code UCX_POSIX_HUGETLB_MODE}. */
    public enum Mode {
        /** Normal pages. */
        NO,
        /** Huge pages where the pool has them; otherwise normal pages, said once at {@code INFO}. */
        TRY,
        /** Huge pages or an error naming the errno and the remedy. */
        YES
    }

    /** The pool as {@code meminfo} says; every field -1 when it cannot be read. */
    public static HugePages read(Path meminfo) {
        Map<String, Long> fields = Meminfo.fields(meminfo);
        return new HugePages(fields.getOrDefault("Hugepagesize", -1L), fields.getOrDefault("HugePages_Total", -1L),
                fields.getOrDefault("HugePages_Free", -1L), fields.getOrDefault("HugePages_Rsvd", -1L));
    }

    /** The pages a new mapping may take: {@link #free} less {@link #reserved}; -1 when not said. */
    public long available() {
        return free < 0 ? -1 : Math.max(0, free - Math.max(0, reserved));
    }

    /** Whether the kernel has huge pages at all (a hugetlbfs and a default size). */
    public boolean supported() {
        return pageSize > 0;
    }

    /**
     * {@code "2048 kB pages: 3 free of 4 (HugePages_Free, HugePages_Total in /proc/meminfo)"}, with
     * the pages of those reserved when there are any, for messages and probes.
     */
    public String describe() {
        if (!supported()) return "none: the kernel names no Hugepagesize in " + Meminfo.PATH + " (built without CONFIG_HUGETLBFS)";
        if (reserved <= 0 || free < 0) {
            return pageSize / 1024 + " kB pages: " + free + " free of " + total + " (HugePages_Free, HugePages_Total in " + Meminfo.PATH + ")";
        }
        return pageSize / 1024 + " kB pages: " + free + " free of " + total + ", " + reserved + " of them reserved by mappings not yet "
                + "touched, so " + available() + " for a new mapping (HugePages_Free, HugePages_Rsvd, HugePages_Total in " + Meminfo.PATH + ")";
    }

    /**
     * Why {@code pagesNeeded} pages could not be had ({@code ENOSPC} or {@code ENOMEM}): the pool
     * is short, or, when it has them free and not reserved by other mappings, a hugetlb cgroup limit
     * of this process refused them.
     */
    public String shortage(long pagesNeeded) {
        String needs = "the chunk needs " + pagesNeeded + " pages of " + pageSize / 1024 + " kB, and " + describe();
        return available() >= pagesNeeded ? needs + ": the pool has them, so a hugetlb limit of this process's cgroup refused them" : needs;
    }

    /**
     * What to do when {@code pagesNeeded} more pages could not be had: reserve them, or raise the
     * cgroup's limit, or {@code otherwise} (how to do without them: a key to set).
     */
    public String remedy(long pagesNeeded, String otherwise) {
        // As the kernel's hugetlb controller names its files (mm/hugetlb_cgroup.c): a size under a megabyte (arm64's 64 KB) in KB.
        String size = pageSize >= 1L << 30 ? (pageSize >> 30) + "GB" : pageSize >= 1L << 20 ? (pageSize >> 20) + "MB"
                : (pageSize >> 10) + "KB";
        long wanted = Math.max(0, total) + pagesNeeded;
        return "reserve more huge pages as root: sysctl vm.nr_hugepages=" + wanted + " (writes " + NR_HUGEPAGES + "; the kernel may "
                + "grant fewer when memory is fragmented: read HugePages_Total back), or raise this process's cgroup's hugetlb limit "
                + "(hugetlb." + size + ".max in cgroup v2, hugetlb." + size + ".limit_in_bytes in v1); or " + otherwise;
    }
}
