package dev.conduit.linux;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.conduit.linux.MemfdFlags.MFD_ALLOW_SEALING;
import static dev.conduit.linux.ProcessMaps.mappingAt;
import static dev.conduit.linux.MmapFlags.MAP_SHARED;
import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/** memfd, seals and mmap: the memfd provider's chunk lifecycle. */
class MemoryTest {
    private static final long SIZE = 64 * 1024;

    private final Libc libc = Linux.libc();

    @Test
    void sealedMemfdKeepsItsSize() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-test", MFD_ALLOW_SEALING)) {
            libc.ftruncate(memfd, SIZE);
            assertThat(libc.fstat(memfd).size()).isEqualTo(SIZE);
            assertThat(libc.fstat(memfd).isRegularFile()).isTrue();
            assertThat(libc.seals(memfd)).isZero();

            libc.addSeals(memfd, Seals.FIXED_SIZE);

            assertThat(libc.seals(memfd)).isEqualTo(Seals.F_SEAL_SHRINK | Seals.F_SEAL_GROW | Seals.F_SEAL_SEAL);
            assertThatThrownBy(() -> libc.ftruncate(memfd, SIZE / 2))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> {
                        assertThat(e.errno()).isEqualTo(Errno.EPERM);
                        assertThat(e.call()).isEqualTo("ftruncate");
                        assertThat(e.getMessage()).contains("memfd:conduit-test").contains("EPERM (Operation not permitted)");
                    });
            assertThatThrownBy(() -> libc.ftruncate(memfd, SIZE * 2))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EPERM));
            assertThatThrownBy(() -> libc.addSeals(memfd, Seals.F_SEAL_WRITE))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errnoName()).isEqualTo("EPERM"));
            assertThat(libc.fstat(memfd).size()).isEqualTo(SIZE);
        }
    }

    /** fallocate within a sealed memfd's size works; past its grow seal it fails with EPERM, at a negative offset with EINVAL, each named. */
    @Test
    void fallocateTakesTheFilesPagesNowAndNamesWhatItRefuses() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-fallocate", MFD_ALLOW_SEALING)) {
            libc.ftruncate(memfd, SIZE);
            libc.addSeals(memfd, Seals.FIXED_SIZE);
            libc.fallocate(memfd, 0, SIZE);
            assertThat(libc.fstat(memfd).size()).isEqualTo(SIZE);
            assertThatThrownBy(() -> libc.fallocate(memfd, 0, SIZE * 2)).as("past a grow seal")
                    .isInstanceOfSatisfying(ErrnoException.class, e -> {
                        assertThat(e.errno()).isEqualTo(Errno.EPERM);
                        assertThat(e.call()).isEqualTo("fallocate");
                        assertThat(e.getMessage()).contains("memfd:conduit-fallocate").contains(", 0, 0, " + SIZE * 2);
                    });
            assertThatThrownBy(() -> libc.fallocate(memfd, -1, SIZE))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EINVAL));
        }
    }

    /** What tells a memfd of huge pages, whose punched holes may fault, from one of normal pages, whose holes read zeros. */
    @Test
    void aMemfdOfHugePagesIsOnHugetlbfsAndOneOfNormalPagesIsNot() {
        long tmpfsMagic = 0x01021994L;
        try (FileDescriptor memfd = libc.memfdCreate("conduit-normal-pages", MFD_ALLOW_SEALING);
             FileDescriptor hugePages = libc.memfdCreate("conduit-huge-pages", MFD_ALLOW_SEALING | MemfdFlags.MFD_HUGETLB)) {
            assertThat(libc.fileSystemType(memfd)).isEqualTo(tmpfsMagic);
            assertThat(libc.fileSystemType(hugePages)).isEqualTo(Libc.HUGETLBFS_MAGIC);
        }
    }

    /**
     * The kernel takes a memfd name of at most 249 bytes ({@code MFD_NAME_MAX_LEN}) and answers a
     * longer one with a bare {@code EINVAL}: until 2026-12-07 that was all the error said.
     */
    @Test
    void aMemfdNameLongerThanTheKernelTakesIsRefusedNamingItsLengthAndTheLimit() {
        String longest = "m".repeat(249);
        try (FileDescriptor memfd = libc.memfdCreate(longest, 0)) {
            assertThat(memfd.description()).isEqualTo("memfd:" + longest);
        }
        assertThatThrownBy(() -> libc.memfdCreate(longest + "\u00e9", 0))
                .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EINVAL))
                .hasMessageContaining("the name is 251 bytes of UTF-8")
                .hasMessageContaining("at most 249");
    }

    @Test
    void memfdWithoutAllowSealingIsBornSealed() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-unsealable", 0)) {
            assertThat(libc.seals(memfd)).isEqualTo(Seals.F_SEAL_SEAL);
        }
    }

    @Test
    void twoMappingsOfOneFileShareTheirBytes() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-shared", MFD_ALLOW_SEALING);
             Arena first = Arena.ofConfined();
             Arena second = Arena.ofConfined()) {
            libc.ftruncate(memfd, SIZE);
            MemorySegment a = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, first);
            MemorySegment b = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, second);

            assertThat(a.address()).isNotEqualTo(b.address());
            assertThat(a.byteSize()).isEqualTo(SIZE);
            a.set(JAVA_LONG, 8, 0x1234_5678_9abc_def0L);
            b.set(JAVA_LONG, SIZE - 8, 42);
            assertThat(b.get(JAVA_LONG, 8)).isEqualTo(0x1234_5678_9abc_def0L);
            assertThat(a.get(JAVA_LONG, SIZE - 8)).isEqualTo(42);
        }
    }

    /** A file mapped at an address aligned beyond the kernel's page; the address space reserved around it is given back. */
    @Test
    void mmapAlignedPlacesTheMappingOnTheAlignmentAndKeepsNoReservation() throws IOException {
        long alignment = 2L << 20;
        try (FileDescriptor memfd = libc.memfdCreate("conduit-aligned", MFD_ALLOW_SEALING)) {
            libc.ftruncate(memfd, 4 * SIZE);
            List<Arena> arenas = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                Arena arena = Arena.ofConfined();
                arenas.add(arena);
                libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena); // so that placements vary
                MemorySegment aligned = libc.mmapAligned(memfd, SIZE, 2 * SIZE, alignment, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
                assertThat(aligned.address() % alignment).as("address of an aligned mapping").isZero();
                assertThat(aligned.byteSize()).isEqualTo(2 * SIZE);
                assertThat(leftoverReservation(aligned.address(), aligned.address() + aligned.byteSize(), alignment))
                        .as("inaccessible reservation left next to the aligned mapping").isEmpty();
                aligned.set(JAVA_LONG, 0, 77 + i);
                MemorySegment whole = libc.mmap(memfd, 0, 4 * SIZE, PROT_READ, MAP_SHARED, arena);
                assertThat(whole.get(JAVA_LONG, SIZE)).as("the aligned mapping maps the file at its offset").isEqualTo(77 + i);
            }
            arenas.forEach(Arena::close);
        }
        assertThatThrownBy(() -> libc.mmapAligned(null, 0, SIZE, 3 * 4096, PROT_READ, MAP_SHARED, Arena.global()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a power of two");
    }

    /** The tail of the reservation used to be given back from the unaligned end, which munmap refuses (EINVAL), and stayed. */
    @Test
    void anAlignedMappingWhoseLengthIsNotWholePagesKeepsNoReservation() throws IOException {
        long alignment = 2L << 20;
        long page = PageSize.get();
        try (FileDescriptor memfd = libc.memfdCreate("conduit-aligned-odd", MFD_ALLOW_SEALING);
             Arena arena = Arena.ofConfined()) {
            libc.ftruncate(memfd, 4 * SIZE);
            MemorySegment aligned = libc.mmapAligned(memfd, 0, SIZE + 100, alignment, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
            long pagesEnd = aligned.address() + (SIZE + 100 + page - 1) / page * page;
            assertThat(leftoverReservation(aligned.address(), pagesEnd, alignment))
                    .as("inaccessible reservation left next to the aligned mapping").isEmpty();
        }
    }

    /** The address space reserved to align a mapping is given back when the mapping into it fails: kept, it would be lost to the process for good. */
    @Test
    void anAlignedMappingThatFailsGivesBackTheAddressSpaceItReserved() throws IOException {
        long alignment = 2L << 20;
        try (FileDescriptor memfd = libc.memfdCreate("conduit-aligned-fails", MFD_ALLOW_SEALING);
             Arena arena = Arena.ofConfined()) {
            libc.ftruncate(memfd, 4 * SIZE);
            // An offset within a page: the reservation is made, then the MAP_FIXED mapping into it fails (EINVAL).
            Throwable thrown = catchThrowable(() -> libc.mmapAligned(memfd, 1, SIZE, alignment, PROT_READ | PROT_WRITE, MAP_SHARED, arena));
            assertThat(thrown).isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EINVAL));
            Matcher failedAt = Pattern.compile("^mmap\\(0x(\\p{XDigit}+), ").matcher(thrown.getMessage());
            assertThat(failedAt.find()).as("the address of the failed mapping in: %s", thrown.getMessage()).isTrue();
            String mapped = mappingAt(Long.parseUnsignedLong(failedAt.group(1), 16));
            // Something mapped there since would do; the inaccessible reservation would not.
            assertThat(mapped == null ? "" : mapped).as("what is mapped where the aligned mapping failed").doesNotContain(" ---p ");
        }
    }

    /**
     * Inaccessible ({@code ---p}) mappings of /proc/self/maps that a reservation left behind would be:
     * one starting where the mapping ends (the tail is never empty), or one smaller than the
     * alignment ending where it starts.
     */
    private static List<String> leftoverReservation(long start, long end, long alignment) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(l -> {
            if (!l.contains(" ---p ")) return false;
            long from = Long.parseUnsignedLong(l.substring(0, l.indexOf('-')), 16);
            long to = Long.parseUnsignedLong(l.substring(l.indexOf('-') + 1, l.indexOf(' ')), 16);
            return from == end || (to == start && to - from < alignment);
        }).toList();
    }

    @Test
    void closingTheArenaUnmapsAndLaterAccessThrows() throws IOException {
        MemorySegment mapping;
        try (FileDescriptor memfd = libc.memfdCreate("conduit-unmap", MFD_ALLOW_SEALING)) {
            libc.ftruncate(memfd, SIZE);
            Arena arena = Arena.ofShared();
            mapping = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
            mapping.set(JAVA_LONG, 0, 7);
            assertThat(mappingAt(mapping.address())).as("mapping before close").contains("memfd:conduit-unmap");

            arena.close();
        }
        // By name, not by address: the address range stays a while, mapping a placeholder (ClosedMappingsTest).
        assertThat(Files.readString(Path.of("/proc/self/maps"))).doesNotContain("memfd:conduit-unmap");
        MemorySegment closed = mapping;
        assertThatThrownBy(() -> closed.get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * A mapping into an arena closed meanwhile has no owner to release it: mmap and mmapAligned undo
     * it before the arena's IllegalStateException leaves. Without that undo the file stays mapped for
     * the life of the process, and no test noticed.
     */
    @Test
    void aMappingIntoAClosedArenaIsUndoneBeforeTheArenasErrorLeaves() throws IOException {
        Arena closed = Arena.ofShared();
        closed.close();
        try (FileDescriptor memfd = libc.memfdCreate("conduit-into-closed", MFD_ALLOW_SEALING)) {
            libc.ftruncate(memfd, SIZE);
            assertThatThrownBy(() -> libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, closed))
                    .as("mmap into a closed arena").isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> libc.mmapAligned(memfd, 0, SIZE, 2L << 20, PROT_READ | PROT_WRITE, MAP_SHARED, closed))
                    .as("mmapAligned into a closed arena").isInstanceOf(IllegalStateException.class);
        }
        assertThat(Files.readString(Path.of("/proc/self/maps"))).as("what the refused mappings left").doesNotContain("memfd:conduit-into-closed");
    }

    /**
     * An aligned mapping reserves its length plus its alignment first. Until 2026-12-07 a length
     * whose sum with the alignment overflowed a long threw an ArithmeticException, where the
     * javadoc names IllegalArgumentException.
     */
    @Test
    void anAlignedMappingWhoseReservationOverflowsALongIsRefusedNamingLengthAndAlignment() {
        long alignment = 2L << 20;
        long length = Long.MAX_VALUE - alignment + 1;
        try (FileDescriptor memfd = libc.memfdCreate("conduit-aligned-overflow", MFD_ALLOW_SEALING);
             Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> libc.mmapAligned(memfd, 0, length, alignment, PROT_READ | PROT_WRITE, MAP_SHARED, arena))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("mmap of " + length + " bytes of " + memfd + " aligned to " + alignment)
                    .hasMessageContaining("map less");
        }
    }

    /**
     * A hugetlb file is mapped in whole huge pages whatever length is asked for (mmap rounds it up),
     * and the kernel splits no huge page. Until 2026-12-07 a mapping shorter than its huge page was
     * made: at the close the placeholder (mmap MAP_FIXED) and the munmap after it, both of the length
     * asked for, failed with EINVAL, so the mapping, its huge page and its file stayed for the life of
     * the process, with only an ERROR line. MAP_NORESERVE: no huge page is needed.
     */
    @Test
    void aHugetlbMappingThatEndsInsideAHugePageIsRefusedBeforeAnythingIsMapped() throws IOException {
        long hugePage = hugePageSize();
        int flags = MAP_SHARED | MmapFlags.MAP_NORESERVE;
        try (FileDescriptor memfd = libc.memfdCreate("conduit-huge-part", MemfdFlags.MFD_HUGETLB);
             Arena arena = Arena.ofShared()) {
            libc.ftruncate(memfd, 2 * hugePage);
            for (long length : new long[] {PageSize.get(), hugePage + PageSize.get()}) {
                assertThatThrownBy(() -> libc.mmap(memfd, 0, length, PROT_READ | PROT_WRITE, flags, arena)).as("mmap of %d bytes", length)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("mmap of " + length + " bytes of " + memfd)
                        .hasMessageContaining("hugetlbfs").hasMessageContaining("map a multiple of " + hugePage + " bytes");
                assertThatThrownBy(() -> libc.mmapAligned(memfd, 0, length, 2 * hugePage, PROT_READ | PROT_WRITE, flags, arena))
                        .as("mmapAligned of %d bytes", length)
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("map a multiple of " + hugePage + " bytes");
            }
            assertThat(Files.readString(Path.of("/proc/self/maps"))).as("what the refusals left mapped").doesNotContain("memfd:conduit-huge-part");
        }
    }

    /** The refusal above spares whole huge pages: such a mapping is made, and its close unmaps it. */
    @Test
    void aHugetlbMappingOfWholeHugePagesIsMadeAndReleasedByTheClose() throws IOException {
        long hugePage = hugePageSize();
        try (FileDescriptor memfd = libc.memfdCreate("conduit-huge-whole", MemfdFlags.MFD_HUGETLB)) {
            libc.ftruncate(memfd, hugePage);
            Arena arena = Arena.ofShared();
            MemorySegment mapping = libc.mmap(memfd, 0, hugePage, PROT_READ | PROT_WRITE, MAP_SHARED | MmapFlags.MAP_NORESERVE, arena);
            assertThat(mapping.byteSize()).isEqualTo(hugePage);
            assertThat(mappingAt(mapping.address())).as("mapping before close").contains("memfd:conduit-huge-whole");

            arena.close();
        }
        assertThat(Files.readString(Path.of("/proc/self/maps"))).as("what the close left mapped").doesNotContain("memfd:conduit-huge-whole");
    }

    private static long hugePageSize() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("Hugepagesize:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
        throw new AssertionError("/proc/meminfo names no Hugepagesize");
    }

    @Test
    void mappingIsBoundsChecked() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-bounds", MFD_ALLOW_SEALING);
             Arena arena = Arena.ofConfined()) {
            libc.ftruncate(memfd, SIZE);
            MemorySegment mapping = libc.mmap(memfd, 0, SIZE, PROT_READ, MAP_SHARED, arena);
            assertThatThrownBy(() -> mapping.get(JAVA_LONG, SIZE)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    /** The caller's mistake, refused before the kernel (an IllegalArgumentException, not its errno), naming the length and the offset. */
    @Test
    void aMappingOfNoBytesOrAtANegativeOffsetIsRefusedNamingBoth() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-nothing", MFD_ALLOW_SEALING);
             Arena arena = Arena.ofConfined()) {
            libc.ftruncate(memfd, SIZE);
            assertThatThrownBy(() -> libc.mmap(memfd, 0, 0, PROT_READ, MAP_SHARED, arena))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("mmap of 0 bytes at offset 0 of fd ");
            assertThatThrownBy(() -> libc.mmap(memfd, -SIZE, SIZE, PROT_READ, MAP_SHARED, arena))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("mmap of " + SIZE + " bytes at offset " + -SIZE + " of fd ");
        }
    }

    @Test
    void failedMmapNamesTheCall() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-badoffset", MFD_ALLOW_SEALING);
             Arena arena = Arena.ofConfined()) {
            libc.ftruncate(memfd, SIZE);
            assertThatThrownBy(() -> libc.mmap(memfd, 1, SIZE, PROT_READ, MAP_SHARED, arena))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> {
                        assertThat(e.errno()).isEqualTo(Errno.EINVAL);
                        assertThat(e.getMessage()).startsWith("mmap(NULL, 65536, PROT_READ, MAP_SHARED, fd ");
                    });
        }
    }
}
