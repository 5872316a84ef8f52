package dev.conduit.plugin.posix;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** What this process holds, for leak checks: descriptors and mappings. */
final class ProcessResources {

    private ProcessResources() {
    }

    /** Entries of {@code /proc/self/fd}; the listing's own descriptor counts alike every time. */
    static long openDescriptors() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Descriptors open on chunk files in {@code directory} (not the directory itself, nor a lease). */
    static long chunkDescriptors(Path directory) {
        return descriptorsOn(directory, ".chunk");
    }

    /** Descriptors open on files in {@code directory} whose names contain {@code suffix} (".lease", ".chunk"; a deleted file's too). */
    static long descriptorsOn(Path directory, String suffix) {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    Path target = Files.readSymbolicLink(fd);
                    return target.startsWith(directory) && target.toString().contains(suffix);
                } catch (IOException e) {
                    return false; // closed meanwhile (the listing's own descriptor)
                }
            }).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Lines of {@code /proc/self/maps} that map a file in {@code directory}. */
    static long mappingsOf(Path directory) {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            String prefix = directory.toRealPath().toString() + "/";
            return lines.filter(line -> line.contains(prefix)).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The names in {@code directory}, sorted. */
    static java.util.List<String> files(Path directory) {
        try (Stream<Path> s = Files.list(directory)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
