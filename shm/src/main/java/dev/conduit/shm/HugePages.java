package dev.conduit.shm;

import java.nio.file.Path;
import java.util.Map;

/**
 * The kernel's pool of huge pages of the default size, as {@code /proc/meminfo} tells it
 * ({@code Hugepagesize}, {@code HugePages_Total}, {@code HugePages_Free}), and what to do when it
 * is short. Huge pages are not taken from free memory as they are touched: an administrator
 * reserves them ({@code vm.nr_hugepages}), and a hugetlb file's {@code MAP_SHARED} mapping, or
 * its {@code fallocate}, takes them from that pool or fails with an errno.
 *
 * @param pageSize the default huge page size in bytes; -1 when the kernel does not say (no hugetlb support)
 * @param total    {@code HugePages_Total}; -1 when not said
 * @param free     {@code HugePages_Free}; -1 when not said
 */
public record HugePages(long pageSize, long total, long free) {

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
                fields.getOrDefault("HugePages_Free", -1L));
    }

    /** Whether the kernel has huge pages at all (a hugetlbfs and a default size). */
    public boolean supported() {
        return pageSize > 0;
    }

    /** {@code "2048 kB pages: 3 free of 4 (HugePages_Free, HugePages_Total in /proc/meminfo)"}, for messages and probes. */
    public String describe() {
        if (!supported()) return "none: the kernel names no Hugepagesize in " + Meminfo.PATH + " (built without CONFIG_HUGETLBFS)";
        return pageSize / 1024 + " kB pages: " + free + " free of " + total + " (HugePages_Free, HugePages_Total in " + Meminfo.PATH + ")";
    }

    /**
     * Why {@code pagesNeeded} pages could not be had ({@code ENOSPC} or {@code ENOMEM}): the pool
     * is short, or, when it has them free, a hugetlb cgroup limit of this process refused them.
     */
    public String shortage(long pagesNeeded) {
        String needs = "the chunk needs " + pagesNeeded + " pages of " + pageSize / 1024 + " kB, and " + describe();
        return free >= pagesNeeded ? needs + ": the pool has them, so a hugetlb limit of this process's cgroup refused them" : needs;
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
