package dev.conduit.it;

import dev.conduit.it.child.ChildMain;
import dev.conduit.it.process.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A second JVM, started like this one (same java binary, same module or class path), configured
 * only through its real environment: proves the environment source and the warning for an
 * unknown {@code CONDUIT_*} variable end to end. One child per execution.
 */
class EnvironmentChildProcessTest {

    @TempDir
    Path tmp;

    @Test
    void aChildJvmIsConfiguredByItsEnvironmentAndWarnsAboutAMisspeltVariable() throws Exception {
        Loading loading = Loading.current();
        // Same module or class path and native-access grant as this JVM (the harness's command line).
        ProcessBuilder pb = new ProcessBuilder(ChildJvm.javaCommand(ChildMain.class, List.of(), List.of()));
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("CONDUIT_"));
        env.put("CONDUIT_TRANSPORTS", "it-beta");
        env.put("CONDUIT_TRANSPROTS", "x");
        Path out = tmp.resolve("stdout.txt");
        Path err = tmp.resolve("stderr.txt");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));

        Process child = pb.start();
        boolean exited = child.waitFor(120, TimeUnit.SECONDS); // a bound against hanging, not a speed check
        if (!exited) child.destroyForcibly();
        String stdout = read(out);
        String stderr = read(err);
        System.out.printf("child %s%n--- stdout ---%n%s--- stderr ---%n%s", pb.command(), stdout, stderr);
        assertThat(exited).as("child exited; stderr:%n%s", stderr).isTrue();
        assertThat(child.exitValue()).as("exit code; stderr:%n%s", stderr).isZero();

        assertThat(stdout).contains("selected=it-beta\n");
        assertThat(stdout).contains("config transports=it-beta source=ENVIRONMENT");
        assertThat(stdout).contains("config plugin.path=null source=DEFAULT");
        assertThat(stdout).containsPattern("plugin it-alpha EXCLUDED origin=" + Pattern.quote(loading.originPrefix));
        assertThat(stdout).as("the real plugins, found but left out")
                .containsPattern("plugin memfd EXCLUDED origin=" + Pattern.quote(loading.originPrefix))
                .containsPattern("plugin posix EXCLUDED origin=" + Pattern.quote(loading.originPrefix));
        assertThat(stderr).as("native access is granted to the Linux layer").doesNotContain("restricted method");
        assertThat(stderr)
                .contains("unknown environment variable CONDUIT_TRANSPROTS is ignored")
                .contains("did you mean CONDUIT_TRANSPORTS?");
        assertThat(stderr.split("CONDUIT_TRANSPROTS", -1)).as("warned once").hasSize(2);
    }

    private static String read(Path p) throws IOException {
        return Files.exists(p) ? Files.readString(p) : "";
    }
}
