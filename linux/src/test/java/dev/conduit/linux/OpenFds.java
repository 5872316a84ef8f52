package dev.conduit.linux;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** Counts this process's open descriptors, for leak checks. */
public final class OpenFds {
    private OpenFds() {}

    /** Entries of {@code /proc/self/fd}; the listing's own descriptor is counted every time alike. */
    public static long count() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
