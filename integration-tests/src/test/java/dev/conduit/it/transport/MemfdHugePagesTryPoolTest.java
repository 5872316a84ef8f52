package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.it.ipc.ShmDir;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * memfd.hugepages=try on a kernel that has huge pages but none in its pool (HugePages_Total 0, the
 * default): the provider's pageSize() is the huge page size (2 MiB), and each chunk, refused its
 * huge pages at fallocate (ENOSPC), falls back to normal pages, which the provider maps aligned to
 * that page size, as a huge-page chunk would be. Mapped where mmap put them (4 KiB aligned), such
 * chunks broke Pool.allocate's alignments up to 2 MiB without a word; once RuntimePool refused a
 * chunk that is not page-aligned as the plugin's fault (2026-12-07), every allocation of such a
 * pool failed, where memfd.hugepages=try promises normal pages.
 */
class MemfdHugePagesTryPoolTest {

    @Test
    void aPoolWithHugePagesTryAllocatesFromNormalPagesWhenThePoolOfHugePagesIsEmpty(@TempDir(factory = ShmDir.class) Path shared)
            throws IOException {
        List<String> meminfo = Files.readAllLines(Path.of("/proc/meminfo"));
        assumeTrue(meminfo.stream().anyMatch(l -> l.startsWith("Hugepagesize:"))
                && meminfo.stream().anyMatch(l -> l.matches("HugePages_Free:\\s+0")), "a kernel with huge pages and none free");
        try (Conduit conduit = Setup.conduit(shared, "memfd", "memfd.hugepages=try")) {
            Pool memory = conduit.pool("memfd");
            List<Region> regions = new ArrayList<>();
            try {
                // Chunks of their own, many: the kernel places some such mappings on a 2 MiB boundary, not all of them.
                for (int i = 0; i < 16; i++) regions.add(memory.allocate(4L << 20, 2L << 20));
                assertThat(regions).allMatch(r -> r.segment().address() % (2L << 20) == 0);
            } finally {
                regions.forEach(Region::close);
            }
        }
    }
}
