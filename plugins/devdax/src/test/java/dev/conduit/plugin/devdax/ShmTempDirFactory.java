package dev.conduit.plugin.devdax;

import org.junit.jupiter.api.extension.AnnotatedElementContext;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDirFactory;

import java.nio.file.Files;
import java.nio.file.Path;

/** {@code @TempDir}s under {@code /dev/shm} (a tmpfs: file-backed devices live in memory), or java.io.tmpdir where there is none. */
final class ShmTempDirFactory implements TempDirFactory {

    @Override
    public Path createTempDirectory(AnnotatedElementContext element, ExtensionContext extension) throws Exception {
        return create();
    }

    static Path create() throws java.io.IOException {
        Path shm = Path.of("/dev/shm");
        Path parent = Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
        return Files.createTempDirectory(parent, "conduit-devdax-test-");
    }
}
