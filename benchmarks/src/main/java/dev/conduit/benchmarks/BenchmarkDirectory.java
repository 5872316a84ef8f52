package dev.conduit.benchmarks;

import dev.conduit.Conduit;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The fresh shared directories the benchmarks make under the configured {@code shared.dir} ({@link #root}), one per
 * trial. Each is
 * removed at the trial's tear-down, and, when a run is stopped before that (Ctrl-C, which the
 * terminal sends to the whole process group, JMH's forks included; a fork whose host alone was
 * ended exits a while later), by a shutdown hook: no later run would ever look into a directory
 * of a random name and reclaim what the stopped one left there.
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

    /**
     * Where the directories are made: {@code shared.dir} as this process's configuration resolves it
     * ({@code CONDUIT_SHARED_DIR}, {@code -Dconduit.shared.dir}, else {@code /dev/shm}). Each benchmark sets its own
     * directory through the builder, which outranks both, so without this the remedy Conduit names for a directory
     * without room ("set shared.dir ... to a larger directory") changed nothing.
     */
    static Path root() {
        try (Conduit conduit = Conduit.builder().discoverPlugins(false).build()) {
            return conduit.configuration().stream().filter(e -> e.key().equals("shared.dir") && e.value() != null)
                    .map(e -> Path.of(e.value())).findFirst()
                    .orElseThrow(() -> new IllegalStateException("the runtime's configuration has no shared.dir"));
        }
    }

    /** A new directory under {@link #root}, short-named: memfd's fd server binds a Unix socket in it (108 bytes of path). */
    static Path create() throws IOException {
        Path root = root();
        Path dir;
        try {
            dir = Files.createTempDirectory(root, "cjmh");
        } catch (IOException e) {
            // A bare "NoSuchFileException: /no/such/cjmh123" names neither shared.dir nor the remedy (CONDUIT_SHARED_DIR is
            // the remedy docs/performance.md gives for a /dev/shm without room, so a typo there ends here).
            throw new IOException("cannot make this trial's directory under shared.dir " + root + " (" + e
                    + "): shared.dir (CONDUIT_SHARED_DIR, -Dconduit.shared.dir, else /dev/shm) must name an existing directory "
                    + "this user can write", e);
        }
        LIVE.add(dir);
        return dir;
    }

    /** Removes {@code dir} (if any) and everything in it. */
    static void delete(Path dir) throws IOException {
        if (dir == null) return;
        deleteRecursively(dir);
        LIVE.remove(dir);
    }

    /**
     * Walks {@code dir} bottom-up deleting what it finds; files another process or thread removes
     * meanwhile (a runtime's own close, a dying peer's) are skipped, not an error.
     */
    private static void deleteRecursively(Path dir) throws IOException {
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                    if (e instanceof NoSuchFileException) return FileVisitResult.CONTINUE;
                    throw e;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path directory, IOException e) throws IOException {
                    if (e != null && !(e instanceof NoSuchFileException)) throw e;
                    Files.deleteIfExists(directory);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (NoSuchFileException gone) {
            // already gone
        }
    }
}
