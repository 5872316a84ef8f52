package dev.conduit.plugin.memfd;

import dev.conduit.linux.Linux;
import dev.conduit.tck.TestContext;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link ProbingProcess} in a JVM for which file modes bind: as root (CI), through util-linux
 * {@code setpriv} without {@code CAP_DAC_OVERRIDE} and {@code CAP_DAC_READ_SEARCH}, so that a
 * permission test runs instead of being skipped; as any other user, plainly.
 */
final class WithoutDacOverride {

    private WithoutDacOverride() {
    }

    /** Whether this JVM ignores file modes (root), so that a permission test needs {@link #run}. */
    static boolean needed() {
        return Linux.libc().geteuid() == 0;
    }

    /** {@link ProbingProcess}'s stdout and stderr for {@code args}. */
    static String run(String... args) throws Exception {
        return runThrough(List.of(), args);
    }

    /**
     * {@link ProbingProcess}'s stdout and stderr for {@code args}, started through {@code wrapper}
     * (a command that runs the rest of its arguments, such as {@code unshare}).
     */
    static String runThrough(List<String> wrapper, String... args) throws Exception {
        List<String> command = new ArrayList<>(wrapper);
        command.addAll(List.of("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"));
        return probe(command, args);
    }

    /**
     * {@link ProbingProcess}'s stdout and stderr for {@code args}, run as uid and gid 65534 that
     * keeps {@code CAP_DAC_OVERRIDE} (an ambient capability): a user whom {@code access(2)} calls
     * unable to write where it can.
     */
    static String runAsNobodyWithDacOverride(String... args) throws Exception {
        return probe(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=+dac_override",
                "--ambient-caps=+dac_override", "--"), args);
    }

    private static String probe(List<String> prefix, String... args) throws Exception {
        Path testClasses = Path.of(ProbingProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.memfd=" + testClasses,
                "-cp", TestContext.location().toString(), "--add-reads", "dev.conduit.plugin.memfd=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.memfd/" + ProbingProcess.class.getName()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getOutputStream().close();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("hang guard").isTrue();
        return output;
    }
}
