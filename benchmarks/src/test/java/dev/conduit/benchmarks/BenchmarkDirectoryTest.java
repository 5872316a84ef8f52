package dev.conduit.benchmarks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class BenchmarkDirectoryTest {

    /**
     * A trial's directory is made under the configured shared.dir, the remedy Conduit names when /dev/shm has no room: it
     * was always made under /dev/shm, and each benchmark's builder, which outranks the property and the environment, kept
     * it there.
     */
    @Test
    void aTrialsDirectoryIsMadeUnderTheConfiguredSharedDir(@TempDir Path larger) throws Exception {
        String before = System.getProperty("conduit.shared.dir");
        System.setProperty("conduit.shared.dir", larger.toString());
        Path dir = null;
        try {
            dir = BenchmarkDirectory.create();
            assertThat(dir.getParent()).isEqualTo(larger);
        } finally {
            BenchmarkDirectory.delete(dir);
            if (before == null) System.clearProperty("conduit.shared.dir");
            else System.setProperty("conduit.shared.dir", before);
        }
    }
}
