package dev.conduit.plugin.memfd;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The importer in another JVM that never opened a provider (the namespace variants are the
 * integration tests' business): it maps the chunk and both processes see each other's writes,
 * and a freed export fails there with the same message as here.
 */
class CrossProcessImportTest {
    private static final long SIZE = 64 * 1024;

    @TempDir
    Path shared;

    @TempDir
    Path logs;

    @Test
    @Timeout(120) // a hang guard, not a speed check
    void anotherProcessImportsAChunkWithoutAProviderOfItsOwn() throws Exception {
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(SIZE);
            chunk.segment().set(JAVA_LONG, 0, 4711);
            Result live = run(provider.export(chunk));
            assertThat(live.exitCode()).as(live.stderr()).isZero();
            assertThat(live.stdout()).containsExactly("read=4711", "left=0");
            assertThat(chunk.segment().get(JAVA_LONG, 8)).isEqualTo(ImportingProcess.WRITTEN);

            Chunk freed = provider.allocate(SIZE);
            byte[] stale = provider.export(freed);
            provider.free(freed);
            Result gone = run(stale);
            assertThat(gone.exitCode()).isEqualTo(3);
            assertThat(gone.stderr()).startsWith("export gone: the producer freed the chunk or closed its pool");
        }
    }

    private record Result(int exitCode, List<String> stdout, String stderr) {}

    private Result run(byte[] payload) throws IOException, InterruptedException, URISyntaxException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path errors = Files.createTempFile(logs, "stderr", ".txt");
        Path testClasses = Path.of(ImportingProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Process process = new ProcessBuilder(java.toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.memfd=" + testClasses,
                "-m", "dev.conduit.plugin.memfd/" + ImportingProcess.class.getName(),
                shared.toString(), HexFormat.of().formatHex(payload), Long.toString(SIZE))
                .redirectError(errors.toFile())
                .start();
        process.getOutputStream().close();
        String stdout = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Result(process.exitValue(), stdout.lines().toList(), Files.readString(errors));
    }
}
