package dev.conduit.shm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The kernel's huge page pool as meminfo writes it, and the remedy for a short one. */
class HugePagesTest {
    @TempDir
    Path dir;

    @Test
    void readsThePoolAsMeminfoWritesIt() throws IOException {
        Path meminfo = Files.writeString(dir.resolve("meminfo"), """
                MemTotal:       16384000 kB
                HugePages_Total:       4
                HugePages_Free:        3
                HugePages_Rsvd:        0
                Hugepagesize:       2048 kB
                """);
        HugePages pool = HugePages.read(meminfo);
        assertThat(pool).isEqualTo(new HugePages(2L << 20, 4, 3, 0));
        assertThat(pool.supported()).isTrue();
        assertThat(pool.describe()).isEqualTo("2048 kB pages: 3 free of 4 (HugePages_Free, HugePages_Total in /proc/meminfo)");
        assertThat(pool.remedy(2, "set x.hugepages=no")).isEqualTo("reserve more huge pages as root: sysctl vm.nr_hugepages=6 "
                + "(writes /proc/sys/vm/nr_hugepages; the kernel may grant fewer when memory is fragmented: read HugePages_Total "
                + "back), or raise this process's cgroup's hugetlb limit (hugetlb.2MB.max in cgroup v2, hugetlb.2MB.limit_in_bytes "
                + "in v1); or set x.hugepages=no");
        assertThat(pool.shortage(4)).isEqualTo("the chunk needs 4 pages of 2048 kB, and 2048 kB pages: 3 free of 4 (HugePages_Free, "
                + "HugePages_Total in /proc/meminfo)");
        assertThat(pool.shortage(3)).endsWith("3 free of 4 (HugePages_Free, HugePages_Total in /proc/meminfo): the pool has them, "
                + "so a hugetlb limit of this process's cgroup refused them");
        assertThat(new HugePages(1L << 30, 0, 0, 0).remedy(1, "no")).contains("vm.nr_hugepages=1 ").contains("hugetlb.1GB.max");
    }

    /**
     * Pages that mappings made already reserved and have not touched ({@code HugePages_Rsvd}) show in
     * {@code HugePages_Free} but are no other mapping's to take: a chunk refused for them was blamed
     * on a hugetlb limit of the process's cgroup, "the pool has them", sending its user to a cgroup
     * file that was not the cause.
     */
    @Test
    void pagesReservedByOtherMappingsAreNotCountedAsThePoolHavingThem() throws IOException {
        Path meminfo = Files.writeString(dir.resolve("meminfo"), """
                HugePages_Total:       4
                HugePages_Free:        3
                HugePages_Rsvd:        2
                Hugepagesize:       2048 kB
                """);
        HugePages pool = HugePages.read(meminfo);
        assertThat(pool.available()).isEqualTo(1);
        assertThat(pool.describe()).isEqualTo("2048 kB pages: 3 free of 4, 2 of them reserved by mappings not yet touched, so 1 "
                + "for a new mapping (HugePages_Free, HugePages_Rsvd, HugePages_Total in /proc/meminfo)");
        assertThat(pool.shortage(2)).doesNotContain("cgroup");
        assertThat(pool.shortage(1)).endsWith("the pool has them, so a hugetlb limit of this process's cgroup refused them");
    }

    @Test
    void theCgroupFilesOfAHugePageSizeUnderAMegabyteAreNamedInKilobytesAsTheKernelNamesThem() {
        // arm64 with default_hugepagesz=64K: the kernel's hugetlb controller names its files hugetlb.64KB.*, not 0MB.
        assertThat(new HugePages(64L << 10, 0, 0, 0).remedy(1, "no")).contains("hugetlb.64KB.max in cgroup v2")
                .contains("hugetlb.64KB.limit_in_bytes in v1");
        assertThat(new HugePages(32L << 20, 0, 0, 0).remedy(1, "no")).contains("hugetlb.32MB.max");
        assertThat(new HugePages(16L << 30, 0, 0, 0).remedy(1, "no")).contains("hugetlb.16GB.max");
    }

    @Test
    void aKernelWithoutHugePagesOrAnUnreadableFileSaysSo() throws IOException {
        HugePages without = HugePages.read(Files.writeString(dir.resolve("meminfo"), "MemTotal:       16384000 kB\n"));
        assertThat(without.supported()).isFalse();
        assertThat(without.describe()).startsWith("none: the kernel names no Hugepagesize in /proc/meminfo");
        assertThat(HugePages.read(dir.resolve("missing"))).isEqualTo(new HugePages(-1, -1, -1, -1));
        assertThat(HugePages.read(Files.writeString(dir.resolve("garbled"), "HugePages_Free: many\n"))).isEqualTo(new HugePages(-1, -1, -1, -1));
    }
}
