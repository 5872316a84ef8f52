package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A shared directory whose path is long: the kernel opens a path of at most 4,095 bytes, and the
 * directory of 4,080 bytes opens, but the path of a file in it does not. Everything in it is
 * reached through the directory's descriptor, so both transports work there; a directory past the
 * limit is refused at once, naming the limit and the remedy.
 */
class LongSharedDirectoryPathTest {

    private Path root;

    @AfterEach
    void removeTheTree() throws IOException, InterruptedException {
        // The JDK's file API takes whole paths, which are too long in there; rm walks with *at calls.
        if (root != null) assertThat(new ProcessBuilder("rm", "-rf", root.toString()).inheritIO().start().waitFor()).isZero();
    }

    /** A directory of exactly {@code length} bytes of path, made of components of at most 250 bytes, under /dev/shm. */
    private Path directoryOfPathLength(int length) throws IOException, InterruptedException {
        root = Files.createTempDirectory(Path.of("/dev/shm"), "cit-long");
        StringBuilder path = new StringBuilder(root.toString());
        while (path.length() < length) {
            int component = Math.min(250, length - path.length() - 1);
            if (component < 1) component = 1;
            path.append('/').append("d".repeat(component));
        }
        Path directory = Path.of(path.toString());
        assertThat(new ProcessBuilder("mkdir", "-p", directory.toString()).inheritIO().start().waitFor()).isZero();
        return directory;
    }

    private static Conduit open(String transport, Path directory) {
        return Conduit.builder().environment(Map.of()).transports(transport).sharedDirectory(directory).build();
    }

    /** Its workers' leases were renamed into place by path, which failed with ENAMETOOLONG: no worker, no pool. */
    @ParameterizedTest
    @ValueSource(strings = {"posix", "memfd"})
    void workersAndPoolsWorkInADirectoryWhoseFilesPathsAreLongerThanTheKernelTakes(String transport) throws Exception {
        Path directory = directoryOfPathLength(4080);
        assertThat(directory.toString()).hasSize(4080);
        try (Conduit conduit = open(transport, directory);
             Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
             Worker sender = conduit.newWorker(ThreadMode.SINGLE)) {
            AtomicLong received = new AtomicLong();
            receiver.onMessage(7, m -> received.set(m.payloadLong(0)));
            Endpoint endpoint = sender.connect(receiver.address());
            endpoint.send(7, java.lang.foreign.MemorySegment.ofArray(new long[]{42}));
            for (int i = 0; i < 1_000_000 && received.get() == 0; i++) {
                sender.progress();
                receiver.progress();
            }
            assertThat(received).hasValue(42);
            try (Pool pool = conduit.pool(transport)) {
                Region region = pool.allocate(4096);
                region.segment().set(ValueLayout.JAVA_LONG, 0, 4080);
                try (ImportedRegion imported = conduit.importRegion(region.exportHandle())) {
                    assertThat(imported.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(4080);
                }
            }
        }
        String[] left = new ProcessBuilder("ls", "-A", directory.toString()).start().inputReader().lines().toArray(String[]::new);
        assertThat(left).as("nothing left in the directory").isEmpty();
    }

    /** memfd said the directory "does not exist or is not a directory"; both now name the limit and what to do. */
    @ParameterizedTest
    @ValueSource(strings = {"posix", "memfd"})
    void aDirectoryWhosePathIsLongerThanTheKernelTakesIsRefusedNamingTheLimitAndTheRemedy(String transport) throws Exception {
        Path directory = directoryOfPathLength(4200);
        try (Conduit conduit = open(transport, directory)) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE).close())
                    .hasMessageContaining("the path is longer than the kernel takes (PATH_MAX: 4,095 bytes): reach the same directory "
                        + "through a shorter path, a symbolic link or a bind mount to it");
            assertThatThrownBy(() -> conduit.pool(transport).close())
                    .hasMessageContaining("the path is longer than the kernel takes (PATH_MAX: 4,095 bytes)");
        }
    }
}
