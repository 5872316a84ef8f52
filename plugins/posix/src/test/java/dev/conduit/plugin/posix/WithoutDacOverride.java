package dev.conduit.plugin.posix;

import dev.conduit.linux.Linux;
import dev.conduit.tck.TestContext;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link PosixChild} in a JVM for which file modes bind: as root (CI), through util-linux
 * {@code setpriv} without {@code CAP_DAC_OVERRIDE} and {@code CAP_DAC_READ_SEARCH}, so that a
 * permission test runs instead of being skipped; as any other user, plainly. Or behind a
 * read-only mount ({@link #runInAReadOnlyMount}).
 */
final class WithoutDacOverride {

    private WithoutDacOverride() {
    }

    /** Whether this JVM ignores file modes (root), so that a permission test needs {@link #run}. */
    static boolean needed() {
        return Linux.libc().geteuid() == 0;
    }

    /** {@link PosixChild}'s stdout and stderr for {@code args}. */
    static String run(String... args) throws Exception {
        return runThrough(List.of("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"), args);
    }

    /**
     * {@link PosixChild}'s stdout and stderr for {@code args}, run in a mount namespace of its own
     * where {@code directory} is bind-mounted read-only over itself: a container's {@code -v DIR:DIR:ro}.
     * The mount binds root too ({@code EROFS}), so this needs no dropped capability.
     */
    static String runInAReadOnlyMount(Path directory, String... args) throws Exception {
        return runThrough(List.of("unshare", "--mount", "sh", "-c", "mount --bind -o ro \"$1\" \"$1\" && shift && exec \"$@\"",
                "read-only-mount", directory.toString()), args);
    }

    private static String runThrough(List<String> prefix, String... args) throws Exception {
        Path testClasses = Path.of(PosixChild.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.posix=" + testClasses,
                "-cp", TestContext.location().toString(), "--add-reads", "dev.conduit.plugin.posix=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.posix/" + PosixChild.class.getName()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getOutputStream().close();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("hang guard").isTrue();
        return output;
    }
}
