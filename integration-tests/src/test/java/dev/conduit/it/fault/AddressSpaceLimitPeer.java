package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.ConduitException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A Conduit process whose import fails with {@code ENOMEM}: run by {@link ResourceExhaustionTest}.
 * It exports a 1 GiB memfd chunk (sparse: no memory is taken), then lowers its own soft
 * address-space limit ({@code RLIMIT_AS}, through {@code prlimit --pid}) to what it uses plus
 * 256 MiB, so that importing the chunk in a second Conduit fails in the kernel's {@code mmap}
 * while the JVM keeps room for itself. Prints {@code key: value} lines. Argument: the shared
 * directory.
 */
public final class AddressSpaceLimitPeer {

    private static final long CHUNK = 1L << 30;

    private AddressSpaceLimitPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        try (Conduit producer = open(shared); Conduit importer = open(shared)) {
            byte[] handle = producer.pool("memfd").allocate(CHUNK).exportHandle();
            importer.importRegion(producer.pool("memfd").allocate(64 << 10).exportHandle()).close(); // loads the import's classes
            limitAddressSpace(-1); // and prlimit's: what the first start of a process opens is not the import's
            OpenResources before = OpenResources.ofThisProcess();
            Map<Integer, String> descriptorsBefore = OpenResources.descriptorsOfThisProcess();
            long entries = importer.ipcCacheStats().entries();

            limitAddressSpace(virtualSize() + (256L << 20));
            try {
                ImportedRegion unexpected = importer.importRegion(handle);
                unexpected.close();
                System.out.println("import: UNEXPECTED success under the limit");
            } catch (ConduitException e) {
                System.out.println("import: " + e.getClass().getSimpleName() + ": " + e.getMessage().replace('\n', ' '));
            } finally {
                limitAddressSpace(-1);
            }
            // A descriptor another thread holds for a moment (the JVM's, or the producer's fd server's connection of
            // the import just before, closed after its reply) is no leak: looked at again until it is gone, for up to 2 s.
            List<String> leaked = OpenResources.openedSince(descriptorsBefore);
            for (int i = 0; i < 200 && !leaked.isEmpty(); i++) {
                Thread.sleep(10);
                leaked = OpenResources.openedSince(descriptorsBefore);
            }
            OpenResources after = OpenResources.ofThisProcess();
            System.out.println("descriptors-leaked: " + leaked.size() + " " + leaked);
            System.out.println("mappings-leaked: " + (after.conduitMappings() - before.conduitMappings()));
            System.out.println("entries-cached: " + (importer.ipcCacheStats().entries() - entries));
            try (ImportedRegion imported = importer.importRegion(handle)) {
                System.out.println("import-after: ok " + imported.segment().byteSize());
            }
        }
    }

    private static Conduit open(Path shared) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties()).sharedDirectory(shared)
                .transports("memfd").set("pool.chunk.size", "1g").build();
    }

    /** This process's address space in bytes ({@code VmSize}). */
    private static long virtualSize() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmSize:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) << 10;
        }
        throw new IllegalStateException("no VmSize in /proc/self/status");
    }

    /** Sets this process's soft RLIMIT_AS to {@code bytes}, or back to unlimited for -1 (the hard limit is left alone). */
    private static void limitAddressSpace(long bytes) throws IOException, InterruptedException {
        String soft = bytes < 0 ? "unlimited" : Long.toString(bytes);
        Process prlimit = new ProcessBuilder(List.of("prlimit", "--pid", Long.toString(ProcessHandle.current().pid()), "--as=" + soft + ":"))
                .redirectErrorStream(true).start();
        prlimit.getOutputStream().close(); // its pipes closed, so that the count of descriptors after has none of them
        String output;
        try (InputStream in = prlimit.getInputStream()) {
            output = new String(in.readAllBytes());
        }
        if (prlimit.waitFor() != 0) throw new IllegalStateException("prlimit --as=" + soft + ": failed: " + output);
    }
}
