package dev.conduit.linux;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.conduit.linux.MmapFlags.MAP_SHARED;
import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * An {@code mmap} failing with {@code ENOMEM} says whether the process's mappings ran out against
 * {@code vm.max_map_count} or its address space did: the message named only the errno, and every
 * caller guessed both.
 */
class MappingCountTest {

    private final Libc libc = Linux.libc();

    /**
     * A real ENOMEM, provoked without exhausting anything: a mapping longer than the address space
     * (2^50 bytes; user space is 2^47, or 2^56 with five-level page tables) is refused as it is
     * placed. The process's mappings are far under the limit, so the message points at the
     * address space.
     */
    @Test
    void anMmapEnomemCountsTheProcesssMappingsAgainstTheLimit() throws IOException {
        long limit = Long.parseLong(Files.readAllLines(Path.of("/proc/sys/vm/max_map_count")).getFirst().trim());
        try (FileDescriptor memfd = libc.memfdCreate("conduit-enomem", 0); Arena arena = Arena.ofConfined()) {
            for (long alignment : new long[] {PageSize.get(), 2L << 20}) { // mmap, and mmapAligned's reservation
                assertThatThrownBy(() -> libc.mmapAligned(memfd, 0, 1L << 50, alignment, PROT_READ | PROT_WRITE, MAP_SHARED, arena))
                        .isInstanceOfSatisfying(ErrnoException.class, e -> {
                            assertThat(e.errno()).isEqualTo(Errno.ENOMEM);
                            assertThat(e.getMessage()).contains("ENOMEM (Cannot allocate memory): this process has ")
                                    .containsPattern("has \\d+ memory mappings \\(/proc/self/maps\\) and vm\\.max_map_count is " + limit)
                                    .contains("so the address space ran out rather (ulimit -v, RLIMIT_AS)");
                        });
            }
            assertThat(libc.fstat(memfd).size()).as("the descriptor is still usable").isZero();
        }
    }

    @Test
    void anotherErrnoOfMmapCountsNothing() {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-einval", 0); Arena arena = Arena.ofConfined()) {
            libc.ftruncate(memfd, 2 * PageSize.get());
            assertThatThrownBy(() -> libc.mmap(memfd, 1, PageSize.get(), PROT_READ, MAP_SHARED, arena)) // an unaligned offset
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.getMessage())
                            .contains("EINVAL").doesNotContain("vm.max_map_count"));
        }
    }

    @Test
    void atTheLimitTheMappingsRanOutAndTheMessageSaysHowToRaiseIt(@TempDir Path dir) throws IOException {
        Path limit = Files.writeString(dir.resolve("max_map_count"), "100\n");
        Path atTheLimit = Files.writeString(dir.resolve("maps"), "7f00-7f01 r--p 0 00:00 0\n".repeat(90));
        assertThat(MappingCount.explainEnomem(atTheLimit, limit)).isEqualTo("this process has 90 memory mappings (/proc/self/maps) "
                + "and vm.max_map_count is 100: the mappings ran out (every one counts, the JVM's too); keep fewer mapped, or raise "
                + "the limit (sysctl -w vm.max_map_count=200)");
        Path under = Files.writeString(dir.resolve("few"), "7f00-7f01 r--p 0 00:00 0\n".repeat(20));
        assertThat(MappingCount.explainEnomem(under, limit)).endsWith("vm.max_map_count is 100, so the address space ran out rather "
                + "(ulimit -v, RLIMIT_AS), or the kernel's memory");
    }

    /** A /proc that cannot be read (not mounted, another format) adds nothing: the failure's own message stays. */
    @Test
    void anUnreadableProcAddsNothing(@TempDir Path dir) throws IOException {
        Path maps = Files.writeString(dir.resolve("maps"), "line\n");
        assertThat(MappingCount.explainEnomem(maps, dir.resolve("missing"))).isNull();
        assertThat(MappingCount.explainEnomem(maps, Files.writeString(dir.resolve("garbled"), "many"))).isNull();
        assertThat(MappingCount.explainEnomem(dir.resolve("missing"), Files.writeString(dir.resolve("limit"), "65530"))).isNull();
    }
}
