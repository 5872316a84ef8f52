package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A memfd pool with {@code memfd.hugepages=yes}, through the runtime: {@code Pool.pageSize()} is the
 * huge page size, a small region comes out of a chunk of huge pages, a large one is rounded up to
 * it. The test sizes the kernel's pool itself (root, as CI) and gives it back; where the kernel
 * grants fewer pages, it checks the refusal instead.
 */
class HugePagePoolTest {
    private static final Path NR_HUGEPAGES = Path.of("/proc/sys/vm/nr_hugepages");
    private static final long HUGE_PAGE = 2L << 20;

    @TempDir
    Path shared;

    @Test
    void aPoolOfHugePagesHasTheirPageSizeAndRoundsToThem() throws IOException {
        String previous = Files.readString(NR_HUGEPAGES).trim();
        Files.writeString(NR_HUGEPAGES, Long.toString(Long.parseLong(previous) + 3));
        try (Conduit conduit = Conduit.builder().environment(Map.of()).sharedDirectory(shared)
                .set("memfd.hugepages", "yes").set("pool.chunk.size", "1m").build();
             Pool pool = conduit.pool("memfd")) {
            assertThat(pool.pageSize()).isEqualTo(HUGE_PAGE);
            if (freeHugePages() < 3) {
                assertThatThrownBy(() -> pool.allocate(64)).hasMessageContaining("memfd.hugepages=yes").hasMessageContaining("ENOSPC");
                return;
            }
            Region small = pool.allocate(64);
            small.segment().set(ValueLayout.JAVA_LONG, 0, 7);
            assertThat(freeHugePages()).as("a chunk of pool.chunk.size 1m rounded up to one huge page").isEqualTo(2);
            Region large = pool.allocate(HUGE_PAGE + 1);
            large.segment().set(ValueLayout.JAVA_BYTE, HUGE_PAGE, (byte) 8);
            assertThat(freeHugePages()).as("a region of one page and a byte takes two").isZero();
            large.close();
            small.close();
        } finally {
            Files.writeString(NR_HUGEPAGES, previous);
        }
    }

    private static long freeHugePages() throws IOException {
        return Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(line -> line.startsWith("HugePages_Free:"))
                .mapToLong(line -> Long.parseLong(line.split("\\s+")[1])).findFirst().orElseThrow();
    }
}
