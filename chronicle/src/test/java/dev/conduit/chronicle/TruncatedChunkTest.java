package dev.conduit.chronicle;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A posix chunk that a same-user peer truncates under a Chronicle view: the view's next access
 * faults. docs/decisions.md ("SIGBUS on a truncated posix mapping") measured that every access
 * survives as the JVM's {@code InternalError} but a compare-and-swap run by the interpreter, which
 * kills the JVM, and that Conduit reads a word before every CAS on memory a peer may truncate.
 * Run in a child JVM with {@code -Xint}, as the first CAS of a view runs.
 */
class TruncatedChunkTest {

    @TempDir
    Path shared;

    private String run(String access) throws IOException, InterruptedException {
        String flags = System.getProperty("conduit.chronicle.jvm.args");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xint", "-XX:+UseSerialGC", "-Xmx256m", "-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=" + shared.resolve("hs_err_%p.log"),
                "--enable-native-access=ALL-UNNAMED"));
        command.addAll(Arrays.asList(flags.replace("=chronicle.core", "=ALL-UNNAMED").trim().split("\\s+")));
        command.addAll(List.of("--class-path", ChildPeer.classPath(), TruncatedChunkPeer.class.getName(), shared.resolve(access).toString(), access));
        Files.createDirectories(shared.resolve(access));
        Path out = Files.createTempFile(shared, "child", ".out");
        Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        if (!child.waitFor(300, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new AssertionError("the child did not end within the hang guard of 300 s");
        }
        return "exit " + child.exitValue() + "\n" + Files.readString(out, StandardCharsets.UTF_8);
    }

    /** The control: a plain read of the truncated page survives as InternalError, even interpreted. */
    @Test
    void aReadThroughAViewOfATruncatedChunkThrowsAndTheJvmLives() throws Exception {
        assertThat(run("read")).startsWith("exit 0").contains("SURVIVED java.lang.InternalError");
    }

    @Test
    void aCompareAndSwapThroughAViewOfATruncatedChunkThrowsAndTheJvmLives() throws Exception {
        assertThat(run("cas")).startsWith("exit 0").contains("SURVIVED java.lang.InternalError");
    }

    /** The int CAS reads its word first too (compareAndSwapInt, and testAndSetInt and writeMaxInt through it). */
    @Test
    void anIntCompareAndSwapThroughAViewOfATruncatedChunkThrowsAndTheJvmLives() throws Exception {
        assertThat(run("cas-int")).startsWith("exit 0").contains("SURVIVED java.lang.InternalError");
    }
}
