package dev.conduit.plugin.memfd;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.HugePageReservation;
import dev.conduit.tck.TestContext;
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
            assertThat(live.stdout()).containsExactly("read=4711", "exporter=ALIVE", "left=0");
            assertThat(chunk.segment().get(JAVA_LONG, 8)).isEqualTo(ImportingProcess.WRITTEN);

            Chunk freed = provider.allocate(SIZE);
            byte[] stale = provider.export(freed);
            provider.free(freed);
            Result gone = run(stale);
            assertThat(gone.exitCode()).isEqualTo(3);
            assertThat(gone.stderr()).startsWith("export gone: the producer freed the chunk or closed its pool");
        }
    }

    /**
     * A container given the shared directory read-only ({@code -v DIR:DIR:ro}): importing only
     * connects to the producer's socket, so it works there, and the importer writes into the chunk
     * (the mapping is the memfd's, not the mount's).
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void aProcessWithAReadOnlyMountOfTheSharedDirectoryImportsAChunk() throws Exception {
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(SIZE);
            chunk.segment().set(JAVA_LONG, 0, 815);
            Result imported = run(provider.export(chunk), List.of("unshare", "--mount", "sh", "-c",
                    "mount --bind -o ro \"$1\" \"$1\" || exit 8; touch \"$1/written\" 2>/dev/null && exit 9; shift && exec \"$@\"",
                    "read-only-mount", shared.toString()));
            assertThat(imported.exitCode()).as("exit code (8: no read-only mount made, 9: the mount was writable); stderr: %s", imported.stderr()).isZero();
            assertThat(imported.stdout()).containsExactly("read=815", "exporter=ALIVE", "left=0");
            assertThat(chunk.segment().get(JAVA_LONG, 8)).isEqualTo(ImportingProcess.WRITTEN);
        }
    }

    /**
     * A chunk of huge pages ({@code memfd.hugepages=yes}) maps in the other JVM as any chunk does:
     * the passed memfd is a hugetlb file of the chunk's length, a multiple of the huge page size,
     * mapped whole from offset 0, taking no page of its own (the producer's {@code fallocate} took
     * them all). The importer reads the producer's long at the chunk's last page and writes its own.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void anotherProcessImportsAChunkOfHugePages() throws Exception {
        long size = 4L << 20;
        try (HugePageReservation pool = HugePageReservation.withFree(2);
             MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared,
                     java.util.Map.of("memfd.hugepages", "yes")))) {
            if (pool.free() < 2) { // the kernel granted fewer: the refusal, which MemfdHugePagesTest checks in full
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> provider.allocate(size)).hasMessageContaining("ENOSPC");
                return;
            }
            Chunk chunk = provider.allocate(size);
            assertThat(HugePageReservation.kernelPageSizeOf(chunk.segment())).isEqualTo("KernelPageSize: 2048 kB");
            chunk.segment().set(JAVA_LONG, 0, 2048);
            Result imported = run(provider.export(chunk), List.of(), size);
            assertThat(imported.exitCode()).as(imported.stderr()).isZero();
            assertThat(imported.stdout()).containsExactly("read=2048", "exporter=ALIVE", "left=0");
            assertThat(chunk.segment().get(JAVA_LONG, 8)).isEqualTo(ImportingProcess.WRITTEN);
            assertThat(pool.free()).as("the import took no page of its own").isZero();
        }
    }

    private record Result(int exitCode, List<String> stdout, String stderr) {}

    private Result run(byte[] payload) throws IOException, InterruptedException, URISyntaxException {
        return run(payload, List.of(), SIZE);
    }

    private Result run(byte[] payload, List<String> wrapper) throws IOException, InterruptedException, URISyntaxException {
        return run(payload, wrapper, SIZE);
    }

    /** Runs {@link ImportingProcess} through {@code wrapper}, a command that runs the rest of its arguments. */
    private Result run(byte[] payload, List<String> wrapper, long size) throws IOException, InterruptedException, URISyntaxException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path errors = Files.createTempFile(logs, "stderr", ".txt");
        Path testClasses = Path.of(ImportingProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> command = new java.util.ArrayList<>(wrapper);
        command.addAll(List.of(java.toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.memfd=" + testClasses,
                "-cp", TestContext.location().toString(), "--add-reads", "dev.conduit.plugin.memfd=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.memfd/" + ImportingProcess.class.getName(),
                shared.toString(), HexFormat.of().formatHex(payload), Long.toString(size)));
        Process process = new ProcessBuilder(command)
                .redirectError(errors.toFile())
                .start();
        process.getOutputStream().close();
        String stdout = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Result(process.exitValue(), stdout.lines().toList(), Files.readString(errors));
    }
}
