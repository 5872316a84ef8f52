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

    static Result run(List<String> arguments) throws IOException, InterruptedException {
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
        Path stderr = Files.createTempFile("conduit-tck-child-", ".stderr");
        try {
            Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
            process.getOutputStream().close();
            byte[] out = process.getInputStream().readAllBytes();
            if (!process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                throw new AssertionError("the child JVM did not end within " + TIMEOUT + ": " + String.join(" ", command));
            }
            return new Result(process.exitValue(), new String(out, StandardCharsets.UTF_8).lines().toList(),
                    Files.readString(stderr));
        } finally {
            Files.deleteIfExists(stderr);
        }
    }
}
