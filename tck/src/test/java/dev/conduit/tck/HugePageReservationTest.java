package dev.conduit.tck;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * {@link HugePageReservation} against what the kernel has: pages a mapping reserved but has not
 * touched yet ({@code HugePages_Rsvd}) show in {@code HugePages_Free} and are no one else's to take,
 * and surplus pages ({@code HugePages_Surp}, past {@code nr_hugepages} by
 * {@code nr_overcommit_hugepages}) are in {@code HugePages_Total} but not the pool's size. As root.
 */
class HugePageReservationTest {
    private static final long HUGE_PAGE = 2L << 20;
    private static final Path NR_HUGEPAGES = Path.of("/proc/sys/vm/nr_hugepages");
    private static final Path NR_OVERCOMMIT = Path.of("/proc/sys/vm/nr_overcommit_hugepages");
    private static final int PROT_READ_WRITE = 0x1 | 0x2;
    private static final int MAP_PRIVATE_ANONYMOUS_HUGETLB = 0x02 | 0x20 | 0x40000;
    private static final MethodHandle MMAP = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("mmap").orElseThrow(),
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MUNMAP = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("munmap").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));

    /**
     * Another mapping's reserved page was counted free: {@code withFree(2)} sized the pool one page
     * short and {@code free()} said 2, so a test that trusted it met a refusal (here: the
     * {@code mmap} of two pages, {@code ENOMEM}) where it expected pages.
     */
    @Test
    void pagesAnotherMappingReservedAreNeitherCountedFreeNorLeftOutOfThePool() throws Throwable {
        try (HugePageReservation other = HugePageReservation.withFree(1)) {
            assumeThat(other.free()).as("the kernel granted a page").isEqualTo(1);
            MemorySegment reserving = map(1);
            assumeThat(reserving).as("a huge page mapped").isNotNull();
            try {
                assertThat(meminfo("HugePages_Rsvd:")).as("untouched, reserved").isGreaterThanOrEqualTo(1);
                try (HugePageReservation pool = HugePageReservation.withFree(2)) {
                    if (pool.free() < 2) return; // the kernel granted fewer: nothing to check
                    MemorySegment two = map(2);
                    assertThat(two).as("two pages free, as free() said").isNotNull();
                    unmap(two, 2);
                }
            } finally {
                unmap(reserving, 1);
            }
        }
    }

    /**
     * {@code close} wrote back {@code HugePages_Total}, which counts surplus pages: the kernel then
     * made them persistent, and the pool stayed larger than before, holding memory no one had asked
     * to keep, once the mapping that took them ended.
     */
    @Test
    void closeGivesThePoolBackItsSizeNotItsSurplusPages() throws Throwable {
        long pool = Long.parseLong(Files.readString(NR_HUGEPAGES).trim());
        String overcommit = Files.readString(NR_OVERCOMMIT).trim();
        Files.writeString(NR_OVERCOMMIT, Long.toString(Long.parseLong(overcommit) + 1));
        try {
            MemorySegment surplus = null;
            try (HugePageReservation full = HugePageReservation.withFree(0)) {
                surplus = map(1);
                assumeThat(surplus).as("a surplus huge page mapped").isNotNull();
                assumeThat(meminfo("HugePages_Surp:")).as("surplus pages").isGreaterThanOrEqualTo(1);
                String before = Files.readString(NR_HUGEPAGES).trim();
                try (HugePageReservation reservation = HugePageReservation.withFree(1)) {
                    assertThat(reservation.free()).isLessThanOrEqualTo(1);
                }
                assertThat(Files.readString(NR_HUGEPAGES).trim()).as("nr_hugepages after close")
                        .isEqualTo(before);
            } finally {
                if (surplus != null) unmap(surplus, 1);
            }
        } finally {
            Files.writeString(NR_OVERCOMMIT, overcommit);
        }
        assertThat(Long.parseLong(Files.readString(NR_HUGEPAGES).trim())).isEqualTo(pool);
    }

    /** {@code pages} huge pages mapped private and anonymous, reserved and untouched; null when the kernel refuses. */
    private static MemorySegment map(long pages) throws Throwable {
        MemorySegment address = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, pages * HUGE_PAGE, PROT_READ_WRITE,
                MAP_PRIVATE_ANONYMOUS_HUGETLB, -1, 0L);
        return address.address() == -1 ? null : address;
    }

    private static void unmap(MemorySegment address, long pages) throws Throwable {
        assertThat((int) MUNMAP.invokeExact(address, pages * HUGE_PAGE)).isZero();
    }

    private static long meminfo(String field) throws IOException {
        return Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(line -> line.startsWith(field))
                .mapToLong(line -> Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0])).findFirst().orElseThrow();
    }
}
