package dev.conduit.plugin.memfd;

import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.TestContext;

import java.nio.file.Path;

/**
 * The main class of a JVM that opens a memfd provider and allocates one chunk, started by
 * {@link MemfdCgroupLimitTest} inside a memory cgroup: {@code <shared dir> <chunk size>}. Prints
 * {@code allocated} and frees it; a refused allocation prints its message to stderr and exits with 3.
 */
public final class AllocatingProcess {

    private AllocatingProcess() {}

    public static void main(String[] args) {
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(Path.of(args[0])))) {
            provider.free(provider.allocate(Long.parseLong(args[1])));
            System.out.println("allocated");
        } catch (RuntimeException e) {
            System.err.println(e.getMessage());
            System.exit(3);
        }
    }
}
