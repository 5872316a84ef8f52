package dev.conduit.it.ipc;

import org.junit.jupiter.api.extension.AnnotatedElementContext;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDirFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

/**
 * A fresh shared directory under {@code /dev/shm} per test ({@code @TempDir(factory = ShmDir.class)}),
 * named short ({@code /dev/shm/cit-<8 hex>}), so that the memfd plugin's socket path fits an AF_UNIX
 * address (a {@code shared.dir} of at most 38 bytes; a longer one is reached through /proc/self/fd).
 * JUnit removes it after the test.
 */
public final class ShmDir implements TempDirFactory {

    @Override
    public Path createTempDirectory(AnnotatedElementContext element, ExtensionContext extension) throws IOException {
        Path shm = Path.of("/dev/shm");
        if (!Files.isDirectory(shm) || !Files.isWritable(shm)) {
            throw new IllegalStateException("/dev/shm is missing or not writable: the cross-process tests share memory through it");
        }
        for (int attempt = 0; ; attempt++) {
            Path dir = shm.resolve("cit-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()));
            try {
                return Files.createDirectory(dir);
            } catch (java.nio.file.FileAlreadyExistsException e) {
                if (attempt > 10) throw e;
            }
        }
    }

    /**
     * Whether the file system of {@code directory} records when a file was made ({@code statx}'s
     * {@code stx_btime}; tmpfs does from Linux 5.18), which a shared-memory worker's address then
     * carries: asked of the JDK, whose {@code creationTime()} falls back to the modification time where
     * there is none, here set far in the past on a file made for the question.
     */
    public static boolean recordsBirthTimes(Path directory) {
        try {
            Path probe = Files.createTempFile(directory, "birth", ".probe");
            try {
                Files.setLastModifiedTime(probe, java.nio.file.attribute.FileTime.fromMillis(1_000_000));
                return Files.readAttributes(probe, java.nio.file.attribute.BasicFileAttributes.class).creationTime().toMillis() != 1_000_000;
            } finally {
                Files.delete(probe);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The names in {@code directory}, sorted. */
    static List<String> files(Path directory) {
        try (Stream<Path> s = Files.list(directory)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
