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

    /**
     * Returns once a thread of this process is blocked in {@code read(fd, ...)}: inside a native
     * call on the segment it reads into, which its arena then refuses to close. At most 30 s.
     */
    static void awaitBlockedInRead(dev.conduit.linux.FileDescriptor fd) throws InterruptedException {
        // /proc/<tid>/syscall: the syscall's number, then its arguments; read(2) is 0 on x86-64 and 63 on aarch64.
        int read = System.getProperty("os.arch").equals("aarch64") ? 63 : 0;
        String prefix = read + " 0x" + Integer.toHexString(fd.fd()) + " ";
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
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
        throw new AssertionError("no thread of this process blocked in read(" + fd + ") within 30 s");
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
