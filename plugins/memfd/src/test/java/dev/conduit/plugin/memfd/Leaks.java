package dev.conduit.plugin.memfd;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** What this process holds open, for leak checks: descriptors, memfd mappings, fd server threads. */
final class Leaks {
    private Leaks() {}

    /** Entries of {@code /proc/self/fd}. */
    static long openFds() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The count of open descriptors once it has stayed the same for 50 ms (at most 10 s): a
     * baseline taken right after an import may otherwise include the fd server's end of the
     * connection, which it is about to close.
     */
    static long openFdsWhenQuiet() throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        long count = openFds();
        int stable = 0;
        while (stable < 5 && System.nanoTime() - deadline < 0) {
            Thread.sleep(10);
            long now = openFds();
            stable = now == count ? stable + 1 : 0;
            count = now;
        }
        return count;
    }

    /**
     * The number of open descriptors once it has come back to {@code expected}, or after ten
     * seconds. An fd server in this process closes its end of a connection just after the
     * importer has what it needs, so a count taken right after an import may still include it.
     */
    static long openFdsSettlingAt(long expected) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        long count = openFds();
        while (count != expected && System.nanoTime() - deadline < 0) {
            Thread.sleep(10);
            count = openFds();
        }
        return count;
    }

    /** Lines of {@code /proc/self/maps} that map a memfd of this plugin. */
    static long memfdMappings() {
        try {
            return Files.readAllLines(Path.of("/proc/self/maps")).stream()
                    .filter(line -> line.contains("memfd:" + MemfdProvider.MEMFD_NAME)).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Descriptors of this process that are memfds of this plugin. */
    static long memfdDescriptors() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().startsWith("/memfd:" + MemfdProvider.MEMFD_NAME);
                } catch (IOException e) {
                    return false; // the listing's own descriptor, closed by now
                }
            }).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Live fd server threads, of any provider. */
    static List<String> serverThreads() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(name -> name.startsWith("conduit-memfd-server-")).toList();
    }

    /** The names in {@code directory}. */
    static List<String> files(Path directory) {
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
