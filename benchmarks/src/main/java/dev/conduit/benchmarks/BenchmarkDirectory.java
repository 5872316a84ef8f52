package dev.conduit.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * The fresh shared directories the benchmarks make under {@code /dev/shm}, one per trial. Each is
 * removed at the trial's tear-down, and, when a run is stopped before that (Ctrl-C, which JMH
 * passes on to its forks), by a shutdown hook: no later run would ever look into a directory of a
 * random name and reclaim what the stopped one left there.
 */
final class BenchmarkDirectory {

    private static final Set<Path> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Path dir : LIVE) {
                try {
                    deleteRecursively(dir);
                } catch (IOException | RuntimeException ignored) {
                    // the JVM is going; what cannot be removed now stays, as it would have without the hook
                }
            }
        }, "conduit-benchmark-directories"));
    }

    private BenchmarkDirectory() {
    }

    /** A new directory under {@code /dev/shm}, short-named: memfd's fd server binds a Unix socket in it (108 bytes of path). */
    static Path create() throws IOException {
        Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "cjmh");
        LIVE.add(dir);
        return dir;
    }

    /** Removes {@code dir} (if any) and everything in it. */
    static void delete(Path dir) throws IOException {
        if (dir == null) return;
        deleteRecursively(dir);
        LIVE.remove(dir);
    }

    private static void deleteRecursively(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                try {
                    Files.deleteIfExists(p);
                } catch (NoSuchFileException ignored) {
                    // removed by a runtime's own close meanwhile
                }
            }
        } catch (NoSuchFileException ignored) {
            // already gone
        }
    }
}
