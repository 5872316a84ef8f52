package dev.conduit.it;

import dev.conduit.it.child.ChildMain;
import dev.conduit.it.process.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The wait for probes past {@code probe.timeout} judges them by the JVM's processor-time clocks
 * (PluginRegistry), which live in {@code java.management}: a build whose probes end well before
 * the timeout must not pay for loading them. Seen in a JVM of its own, whose class loading is not
 * yet done by earlier tests.
 */
class ProbeWaitChildProcessTest {

    @TempDir
    Path tmp;

    /**
     * Until 2026-12-04 every build loaded the management classes (54 of them, 30 to 80 ms of the
     * build's thread on this project's two cores) as it started its probes, to read clocks that
     * only a probe still running near the timeout needs.
     */
    @Test
    void aBuildWhoseProbesEndLongBeforeTheTimeoutLoadsNoManagementClasses() throws Exception {
        Path classes = tmp.resolve("class-load.log");
        ProcessBuilder pb = new ProcessBuilder(ChildJvm.javaCommand(ChildMain.class, List.of("-Xlog:class+load=info:file=" + classes),
                List.of()));
        pb.environment().keySet().removeIf(k -> k.startsWith("CONDUIT_"));
        pb.environment().put("CONDUIT_TRANSPORTS", "memfd,posix");
        pb.environment().put("CONDUIT_SHARED_DIR", Files.createDirectory(tmp.resolve("shared")).toString());
        // Far from any probe's end: the clocks are read only from a second before it.
        pb.environment().put("CONDUIT_PROBE_TIMEOUT", "10m");
        Path out = tmp.resolve("stdout.txt");
        Path err = tmp.resolve("stderr.txt");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));

        Process child = pb.start();
        boolean exited = child.waitFor(120, TimeUnit.SECONDS); // a bound against hanging, not a speed check
        if (!exited) child.destroyForcibly();
        String stderr = Files.readString(err);
        assertThat(exited).as("child exited; stderr:%n%s", stderr).isTrue();
        assertThat(child.exitValue()).as("exit code; stderr:%n%s", stderr).isZero();
        assertThat(Files.readString(out)).contains("selected=memfd,posix\n");

        List<String> loaded = Files.readAllLines(classes);
        assertThat(loaded).as("the probes were waited for").anyMatch(line -> line.contains(" dev.conduit.internal.discovery.PluginRegistry$ProbeProgress "));
        assertThat(loaded).as("classes of java.management or jdk.management loaded")
                .noneMatch(line -> line.contains("source: jrt:/java.management") || line.contains("source: jrt:/jdk.management"));
    }
}
