package dev.conduit.plugin.devdax;

import dev.conduit.tck.TestContext;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A second JVM running {@link DevdaxChild} on this test's module path, with this module's test
 * classes patched in: a real other process, with its own descriptors, mappings and pid.
 */
final class ChildJvm implements AutoCloseable {

    /** A hung child fails the test instead of hanging the build; not a speed check. */
    private static final long TIMEOUT_SECONDS = 120;

    private final Process process;
    private final BufferedReader stdout;

    private ChildJvm(Process process) {
        this.process = process;
        this.stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    static ChildJvm start(String... args) throws Exception {
        Path testClasses = Path.of(DevdaxChild.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.devdax=" + testClasses,
                "-cp", TestContext.location().toString(), "--add-reads", "dev.conduit.plugin.devdax=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.devdax/" + DevdaxChild.class.getName()));
        command.addAll(List.of(args));
        return new ChildJvm(new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.PIPE).start());
    }

    long pid() {
        return process.pid();
    }

    /** The child's next line of output; fails with its stderr if it ended without one. */
    String readLine() throws Exception {
        String line = stdout.readLine();
        if (line == null) {
            throw new IllegalStateException("the child printed nothing more; exit " + waitForExit() + ", stderr: " + stderr());
        }
        return line;
    }

    /** Every line the child prints until it exits. */
    List<String> remainingLines() throws IOException {
        return stdout.lines().toList();
    }

    int waitForExit() throws InterruptedException {
        assertThat(process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)).as("child exited").isTrue();
        return process.exitValue();
    }

    String stderr() throws IOException, InterruptedException {
        waitForExit();
        return new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    }

    /** SIGKILL: no close, no shutdown hook, nothing freed; the kernel drops its locks and mappings. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        waitForExit();
    }

    /** Kills the child if it still runs and closes the pipes to it, so nothing of it outlives the test. */
    @Override
    public void close() throws Exception {
        if (process.isAlive()) kill();
        process.getOutputStream().close();
        process.getInputStream().close();
        process.getErrorStream().close();
    }
}
