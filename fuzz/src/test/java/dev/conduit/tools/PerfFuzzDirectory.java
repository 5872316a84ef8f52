package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** The shared directory of a conduit perf fuzz target: the Conduits its servers and clients open there, and what it holds. */
final class PerfFuzzDirectory {

    /** Rounds of 10 ms a wait for another thread takes at most: a hang guard bounded by rounds, not a timed check. */
    static final int WAIT_ROUNDS = 3_000;

    private PerfFuzzDirectory() {
    }

    /**
     * A posix Conduit in {@code shared} that keeps no imported chunk mapped once no region uses it: a file or mapping left is
     * then a leak, not a cache's.
     */
    static ConduitBuilder conduit(Path shared) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties()).sharedDirectory(shared).transports("posix")
                .set("ipc.cache.entries", "0");
    }

    /** The paths below {@code shared}, relative to it, sorted. */
    static List<String> files(Path shared) {
        try (Stream<Path> files = Files.walk(shared)) {
            return files.filter(p -> !p.equals(shared)).map(p -> shared.relativize(p).toString()).sorted().toList();
        } catch (IOException e) {
            throw new AssertionError("cannot list " + shared, e);
        }
    }

    /**
     * Asserts that {@code shared} holds {@code expected}, once the closes that remove files on other threads (a server's
     * session, the mapping thread) had their rounds to finish.
     */
    static void awaitFiles(Path shared, List<String> expected, String what) throws InterruptedException {
        for (int round = 0; round < WAIT_ROUNDS && !files(shared).equals(expected); round++) Thread.sleep(10);
        assertThat(files(shared)).as(what).isEqualTo(expected);
    }
}
