package dev.conduit.tools;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@code conduit} in a JVM of its own, started through a prefix that changes who it runs as: util-linux
 * {@code setpriv} without the capabilities that override file modes ({@link #WITHOUT_DAC_OVERRIDE}), so that a
 * permission binds when the tests run as root; {@code unshare --user --map-user}; a mount namespace of its own.
 */
final class ConduitProcess {

    /** Root without {@code CAP_DAC_OVERRIDE} and {@code CAP_DAC_READ_SEARCH}: file modes bind it as any user. */
    static final List<String> WITHOUT_DAC_OVERRIDE = List.of("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--");

    /** What a {@code conduit} process printed, standard error included, and its exit code. */
    record Output(int exitCode, String output) {
    }

    private ConduitProcess() {
    }

    /** Runs {@code conduit args} in a JVM of its own, started through {@code prefix} (setpriv, unshare). */
    static Output runThrough(List<String> prefix, String... args) throws Exception {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(PerfPeer.javaCommand());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        String output = HangGuard.await("conduit " + String.join(" ", args), HangGuard::childrenCpu,
                () -> new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("hang guard").isTrue();
        return new Output(process.exitValue(), output);
    }
}
