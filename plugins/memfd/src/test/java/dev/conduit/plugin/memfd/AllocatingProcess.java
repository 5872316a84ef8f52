package dev.conduit.plugin.memfd;

import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.TestContext;

import java.nio.file.Path;

/**
 * The main class of a JVM that opens a memfd provider and allocates one chunk, started by
 * {@link MemfdCgroupLimitTest} inside a memory or hugetlb cgroup: {@code <shared dir> <chunk size> [<memfd.hugepages>]}.
 * Writes the chunk's first byte (a page the kernel could not give would end this JVM with SIGBUS here),
 * prints {@code allocated} and frees it; a refused allocation prints its message to stderr and exits with 3.
 */
public final class AllocatingProcess {

    private AllocatingProcess() {}

    public static void main(String[] args) {
        java.util.Map<String, String> config = args.length > 2 ? java.util.Map.of("memfd.hugepages", args[2]) : java.util.Map.of();
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(Path.of(args[0]), config))) {
            dev.conduit.spi.Chunk chunk = provider.allocate(Long.parseLong(args[1]));
            chunk.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 1);
            provider.free(chunk);
            System.out.println("allocated");
        } catch (RuntimeException e) {
            System.err.println(e.getMessage());
            System.exit(3);
        }
    }
}
