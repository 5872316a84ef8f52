package dev.conduit.linux;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * This process's memory mappings against the kernel's limit on them, {@code vm.max_map_count}
 * (65530 by default), which an {@code mmap} failing with {@code ENOMEM} may have met: every
 * mapping counts, the JVM's own (heap, thread stacks, libraries) included, so a process at the
 * limit fails every {@code mmap}, not only Conduit's. The other cause of that {@code ENOMEM} is
 * the address-space limit ({@code ulimit -v}); the count tells which.
 *
 * <p>Read only when such a failure is reported: counting {@code /proc/self/maps} reads each of
 * its lines (a few MB at the limit), into a small buffer on the Java heap, which needs no mapping.
 */
public final class MappingCount {

    /**
     * For an import's {@code ENOMEM}: how an importing process keeps fewer chunks mapped. Its IPC
     * cache keeps up to {@code ipc.cache.entries} chunks and {@code ipc.cache.bytes} of them mapped
     * for no open region; larger chunks are fewer mappings for the same bytes.
     */
    public static final String FEWER_IMPORTED_MAPPINGS = "close imported regions, lower ipc.cache.entries "
            + "(CONDUIT_IPC_CACHE_ENTRIES) or ipc.cache.bytes (CONDUIT_IPC_CACHE_BYTES), or raise pool.chunk.size in the "
            + "exporting processes (fewer, larger chunks)";

    /** Within this many of the limit the count is what ran out: one mmap may take more than one (it can split a neighbour). */
    static final long NEAR_THE_LIMIT = 16;

    private static final Path MAPS = Path.of("/proc/self/maps");
    private static final Path LIMIT = Path.of("/proc/sys/vm/max_map_count");

    private MappingCount() {
    }

    /**
     * What this process's mapping count says of an {@code ENOMEM} from {@code mmap}, for its
     * message: at the limit, that the mappings ran out and how to raise it; under it, that the
     * address space is the likelier cause. {@code null} where {@code /proc} cannot be read.
     */
    public static String explainEnomem() {
        return explainEnomem(MAPS, LIMIT);
    }

    static String explainEnomem(Path maps, Path limitFile) {
        long limit;
        long count;
        try {
            // Its lines, by a buffered read: an integer sysctl read from past its start gives nothing, so Files.readString (one
            // byte, then the rest) read "6" of "65530".
            limit = Long.parseLong(Files.readAllLines(limitFile).getFirst().trim());
            count = lines(maps);
        } catch (IOException | RuntimeException | OutOfMemoryError unreadable) { // reported only in a failure's message: it must not replace it
            return null;
        }
        String counted = "this process has " + count + " memory mappings (/proc/self/maps) and vm.max_map_count is " + limit;
        if (count + NEAR_THE_LIMIT >= limit) {
            return counted + ": the mappings ran out (every one counts, the JVM's too); keep fewer mapped, or raise the limit "
                    + "(sysctl -w vm.max_map_count=" + Math.multiplyExact(limit, 2) + ")";
        }
        return counted + ", so the address space ran out rather (ulimit -v, RLIMIT_AS), or the kernel's memory";
    }

    private static long lines(Path file) throws IOException {
        long lines = 0;
        byte[] buffer = new byte[8192];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buffer)) > 0; ) {
                for (int i = 0; i < n; i++) if (buffer[i] == '\n') lines++;
            }
        }
        return lines;
    }
}
