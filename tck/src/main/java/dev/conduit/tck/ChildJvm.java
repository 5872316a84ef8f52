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
 * A second JVM that runs {@link ImportingChild} to its end ({@link #run}), or another child of the
 * TCK's beside the test ({@link #start}), the way this JVM runs: same module path and class path,
 * same JVM options (native-access grants, patched modules), minus agents and debuggers. Works
 * whether the TCK is on the module path (started with {@code -m dev.conduit.tck/...}) or on the
 * class path, so an author's build needs no set-up for it.
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
        List<String> command = command(ImportingChild.class, arguments);
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

    /**
     * Starts {@code main} with {@code arguments} and returns at once: a child that runs beside the
     * test (an exporter the test kills). Its stdout goes to a file the test reads as it grows, and
     * its stdin stays open until {@link Started#close()}, so a child may wait on it for its end.
     */
    static Started start(Class<?> main, List<String> arguments) throws IOException {
        List<String> command = command(main, arguments);
        Path stdout = Files.createTempFile("conduit-tck-child-", ".stdout");
        Path stderr = Files.createTempFile("conduit-tck-child-", ".stderr");
        try {
            return new Started(new ProcessBuilder(command).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start(),
                    stdout, stderr, command);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(stdout);
            Files.deleteIfExists(stderr);
            throw e;
        }
    }

    /** A child {@link #start} started; closing it ends it (its stdin closed, then killed if it does not end) and deletes its output. */
    static final class Started implements AutoCloseable {
        private final Process process;
        private final Path stdout;
        private final Path stderr;
        private final List<String> command;
        private boolean killed;

        private Started(Process process, Path stdout, Path stderr, List<String> command) {
            this.process = process;
            this.stdout = stdout;
            this.stderr = stderr;
            this.command = command;
        }

        /**
         * The rest of the first line the child printed that starts with {@code prefix}, waiting for it at
         * most {@code guard} (a hang guard, not a speed check); fails, showing what the child printed, when
         * the child ends without printing it or the guard passes.
         */
        String awaitLine(String prefix, Duration guard) throws IOException, InterruptedException {
            long deadline = System.nanoTime() + guard.toNanos();
            while (true) {
                boolean ended = !process.isAlive();
                String printed = Files.readString(stdout, StandardCharsets.UTF_8);
                // Whole lines only: the last one, without its end, may still be being written.
                for (String line : printed.substring(0, printed.lastIndexOf('\n') + 1).lines().toList()) {
                    if (line.startsWith(prefix)) return line.substring(prefix.length());
                }
                if (ended || System.nanoTime() - deadline > 0) {
                    throw new AssertionError("the child JVM " + (ended ? "ended (exit code " + process.exitValue() + ")" : "did not "
                            + "print it within " + guard) + " without printing a line starting with '" + prefix + "'" + output());
                }
                Thread.sleep(10);
            }
        }

        /** Kills the child with SIGKILL ({@link Process#destroyForcibly()} on Linux) and waits until it is gone, at most {@code guard}. */
        void kill(Duration guard) throws InterruptedException {
            killed = true;
            process.destroyForcibly();
            if (!process.waitFor(guard.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new AssertionError("the child JVM, killed with SIGKILL, was still there " + guard + " later");
            }
        }

        /** Whether {@link #kill} was called: the child then closed nothing it had opened. */
        boolean killed() {
            return killed;
        }

        /** What the child printed, and its command, for failure messages. */
        String output() throws IOException {
            return "\nIts stdout:\n" + Files.readString(stdout) + "\nIts stderr:\n" + Files.readString(stderr)
                    + "\nIts command: " + String.join(" ", command);
        }

        /**
         * Closes the child's stdin, on which a child waits for its end, and waits for it to end at most
         * {@link #TIMEOUT}; kills it, and whatever it started, if it is still there.
         */
        @Override
        public void close() throws IOException, InterruptedException {
            try {
                process.getOutputStream().close();
                if (!process.waitFor(TIMEOUT.toNanos(), TimeUnit.NANOSECONDS)) destroy(process);
            } finally {
                if (process.isAlive()) destroy(process);
                Files.deleteIfExists(stdout);
                Files.deleteIfExists(stderr);
            }
        }
    }

    /**
     * The command that runs {@code main} the way this JVM runs: its options minus agents and debuggers,
     * its module path and class path; the TCK's module when it is named.
     */
    private static List<String> command(Class<?> main, List<String> arguments) {
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
        Module module = main.getModule();
        if (module.isNamed()) {
            command.add("-m");
            command.add(module.getName() + "/" + main.getName());
        } else {
            command.add(main.getName());
        }
        command.addAll(arguments);
        return command;
    }

    /** Kills the child and whatever it started, and waits (bounded) until it is gone. */
    private static void destroy(Process process) throws InterruptedException {
        List<ProcessHandle> descendants = process.descendants().toList();
        process.destroyForcibly();
        descendants.forEach(ProcessHandle::destroyForcibly);
        process.waitFor(10, TimeUnit.SECONDS);
    }
}
