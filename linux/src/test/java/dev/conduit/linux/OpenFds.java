package dev.conduit.linux;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** Counts this process's open descriptors and reads their close-on-exec flag, for leak checks. */
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

    /**
     * Whether {@code fd} is closed in a child process at its {@code exec}: the {@code flags} line of
     * {@code /proc/self/fdinfo} (octal) includes {@code O_CLOEXEC} when the descriptor's {@code FD_CLOEXEC} is set.
     * A child started with {@link ProcessBuilder} cannot tell: the JDK closes every descriptor above 2 in it.
     */
    public static boolean isCloseOnExec(FileDescriptor fd) {
        Path info = Path.of("/proc/self/fdinfo/" + fd.fd());
        try (Stream<String> lines = Files.lines(info)) {
            String flags = lines.filter(line -> line.startsWith("flags:")).findFirst()
                    .orElseThrow(() -> new IllegalStateException(info + " has no flags line"));
            return (Integer.parseInt(flags.substring("flags:".length()).strip(), 8) & OpenFlags.O_CLOEXEC) != 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
