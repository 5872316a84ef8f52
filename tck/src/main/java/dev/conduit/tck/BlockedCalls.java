package dev.conduit.tck;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;

/**
 * Waits for a thread of this process to be inside a system call, as {@code /proc/self/task/<tid>/syscall}
 * shows it: for a plugin's unit tests of what must not happen while a native call runs. A downcall
 * holds the arenas of its segments from before the call until it returns, so a thread blocked in
 * {@code read(2)} into a chunk's segment (from a pipe or socket nothing is written to) makes that
 * chunk's unmap fail for sure, for as long as the test keeps it blocked: the way to test a provider's
 * free or close that meets a mapping in use. Linux only.
 */
public final class BlockedCalls {

    /** A hang guard: the thread is expected within milliseconds. */
    private static final Duration GUARD = Duration.ofSeconds(30);

    private BlockedCalls() {
    }

    /**
     * Returns once a thread of this process is blocked in {@code read(fd, ...)}.
     *
     * @throws AssertionError when none is within 30 s
     */
    public static void awaitBlockedInRead(int fd) throws InterruptedException {
        // The syscall's number, then its arguments in hex: read(2) is 0 on x86-64 and 63 on aarch64.
        int read = System.getProperty("os.arch").equals("aarch64") ? 63 : 0;
        String prefix = read + " 0x" + Integer.toHexString(fd) + " ";
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (System.nanoTime() < deadline) {
            try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
                if (tasks.anyMatch(task -> {
                    try {
                        return Files.readString(task.resolve("syscall")).startsWith(prefix);
                    } catch (IOException e) {
                        return false; // the thread ended meanwhile
                    }
                })) return;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            Thread.sleep(5);
        }
        throw new AssertionError("no thread of this process blocked in read(" + fd + ") within " + GUARD);
    }
}
