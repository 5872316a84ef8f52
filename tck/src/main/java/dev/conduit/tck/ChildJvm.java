package dev.conduit.tck;

import dev.conduit.tck.internal.ImportingChild;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A second JVM that runs {@link ImportingChild} the way this JVM runs: same module path and class
 * path, same JVM options (native-access grants, patched modules), minus agents and debuggers. Works
 * whether the TCK is on the module path (started with {@code -m dev.conduit.tck/...}) or on the class
 * path, so an author's build needs no set-up for it.
 */
final class ChildJvm {

    /** A hung child fails the test instead of hanging the build; a guard, not a speed check. */
    static final Duration TIMEOUT = Duration.ofSeconds(120);

    record Result(int exitCode, List<String> stdout, String stderr) {
    }

    private ChildJvm() {
    }

    /**
     * Runs the child to its end, for at most {@code timeout}. A child still running then (a plugin's
     * import that never returns) is destroyed with every process it started, and the test fails naming
     * the timeout and showing what the child printed. Its output goes to files, not pipes, so that
     * waiting never depends on the child closing them.
     */
    static Result run(List<String> arguments, Duration timeout) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String option : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (option.startsWith("-agentlib") || option.startsWith("-javaagent") || option.startsWith("-Xrunjdwp")
                    || option.startsWith("-Djava.class.path=")) {
                continue;
            }
            command.add(option);
        }
        String modulePath = System.getProperty("jdk.module.path");
        if (modulePath != null && !modulePath.isEmpty() && !command.contains("--module-path") && !command.contains("-p")) {
            command.add("--module-path");
            command.add(modulePath);
            command.add("--add-modules");
            command.add("ALL-MODULE-PATH");
        }
        String classPath = System.getProperty("java.class.path");
        if (classPath != null && !classPath.isEmpty()) {
            command.add("-cp");
            command.add(classPath);
        }
        Module tck = ImportingChild.class.getModule();
        if (tck.isNamed()) {
            command.add("-m");
            command.add(tck.getName() + "/" + ImportingChild.class.getName());
        } else {
            command.add(ImportingChild.class.getName());
        }
        command.addAll(arguments);
        Path stdout = Files.createTempFile("conduit-tck-child-", ".stdout");
        Path stderr = Files.createTempFile("conduit-tck-child-", ".stderr");
        Process process = null;
        try {
            process = new ProcessBuilder(command).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
            process.getOutputStream().close();
            if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                destroy(process);
                throw new AssertionError("the importing JVM did not end within " + timeout + " and was destroyed (an IpcImporter.map "
                        + "or a close that never returns? The SPI's calls never block, or bound what they wait for)."
                        + "\nIts stdout:\n" + Files.readString(stdout) + "\nIts stderr:\n" + Files.readString(stderr)
                        + "\nIts command: " + String.join(" ", command));
            }
            return new Result(process.exitValue(), Files.readString(stdout, StandardCharsets.UTF_8).lines().toList(),
                    Files.readString(stderr));
        } finally {
            // Also when the test's own timeout interrupted the wait: no child outlives its test.
            if (process != null && process.isAlive()) destroy(process);
            Files.deleteIfExists(stdout);
            Files.deleteIfExists(stderr);
        }
    }

    /** Kills the child and whatever it started, and waits (bounded) until it is gone. */
    private static void destroy(Process process) throws InterruptedException {
        List<ProcessHandle> descendants = process.descendants().toList();
        process.destroyForcibly();
        descendants.forEach(ProcessHandle::destroyForcibly);
        process.waitFor(10, TimeUnit.SECONDS);
    }
}
