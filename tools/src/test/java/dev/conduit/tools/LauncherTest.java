package dev.conduit.tools;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code ./conduit} launcher of the source tree, in a tree of its own that holds the launcher, {@code scripts/jdk.sh}
 * and what a test lays out under {@code tools/target}, run with a {@code PATH} that has no {@code mvn}: what it says when
 * it must build the command and cannot (docs/tools.md, "What the launcher does").
 */
class LauncherTest {

    /** The source tree's root: this module's parent, where Maven runs its tests. */
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).resolve("..").normalize();

    /** What the launcher runs besides the JDK and Maven. */
    private static final List<String> TOOLS = List.of("bash", "readlink", "dirname", "find", "flock", "mkdir", "touch", "mktemp",
            "rm", "cat", "sed", "head");

    @TempDir
    Path tree;

    private Path bin;

    @BeforeEach
    void layOutATree() throws IOException {
        Files.copy(ROOT.resolve("conduit"), tree.resolve("conduit"));
        Files.createDirectories(tree.resolve("scripts"));
        Files.copy(ROOT.resolve("scripts/jdk.sh"), tree.resolve("scripts/jdk.sh"));
        bin = Files.createDirectory(tree.resolve("bin-without-mvn"));
        for (String tool : TOOLS) {
            Files.createSymbolicLink(bin.resolve(tool), onThePath(tool));
        }
    }

    /**
     * A command built once and made stale by a source saved since was "the conduit command is not built and mvn is not
     * on the PATH to build it" to a user who had built it: it now names the source newer than the jar, and what to
     * install.
     */
    @Test
    void aStaleCommandWithoutMavenNamesTheSourceNewerThanItsJarAndTheRemedy() throws Exception {
        Path jar = Files.createDirectories(tree.resolve("tools/target/lib")).resolveSibling("conduit-tools-0.1.0.jar");
        Files.write(jar, new byte[0]);
        Files.setLastModifiedTime(jar, FileTime.from(Instant.parse("2026-01-01T00:00:00Z")));
        Path source = Files.createDirectories(tree.resolve("api/src/main/java")).resolve("Saved.java");
        Files.writeString(source, "class Saved {}");

        Result result = launch("info");

        assertThat(result.exitCode()).isEqualTo(1);
        assertThat(result.stderr()).contains("conduit: the conduit command is out of date: " + source + " is newer than " + jar
                        + ", and mvn is not on the PATH to build it: install Maven 3.8.7 or newer")
                .doesNotContain("not built");
    }

    /** A tree never built is told so, and what to install. */
    @Test
    void aCommandNeverBuiltWithoutMavenSaysItIsNotBuiltAndTheRemedy() throws Exception {
        Result result = launch("info");

        assertThat(result.exitCode()).isEqualTo(1);
        assertThat(result.stderr()).contains("conduit: the conduit command is not built (no " + tree.resolve("tools/target")
                + "/conduit-tools-*.jar), and mvn is not on the PATH to build it: install Maven 3.8.7 or newer");
    }

    /**
     * With no JDK 25 or newer found, the launcher says there is no javac on the PATH when there is none: it said "the javac
     * on the PATH is not one" then too. {@code /usr/lib/jvm} is hidden under a tmpfs in a mount namespace of the launcher's
     * own (the tests run as root), JAVA_HOME unset.
     */
    @Test
    void noJdkFoundWithNoJavacOnThePathSaysThereIsNone() throws Exception {
        Result result = launchWithUsrLibJvmHidden(bin);

        assertThat(result.exitCode()).isEqualTo(1);
        assertThat(result.stderr()).contains("conduit: no JDK 25 or newer found: JAVA_HOME is unset, no /usr/lib/jvm/* holds one, "
                + "and there is no javac on the PATH. Install a JDK 25, or set JAVA_HOME to one.");
    }

    /** The same with an older JDK's javac on the PATH names that javac, the JDK it is of and its version. */
    @Test
    void noJdkFoundWithAnOlderJavacOnThePathNamesItAndItsVersion() throws Exception {
        Path jdk = Files.createDirectories(tree.resolve("jdk-17/bin")).getParent().toRealPath();
        Files.writeString(jdk.resolve("release"), "JAVA_VERSION=\"17.0.2\"\n");
        for (String tool : List.of("java", "javac")) {
            Files.writeString(jdk.resolve("bin").resolve(tool), "#!/bin/sh\nexit 1\n");
            assertThat(jdk.resolve("bin").resolve(tool).toFile().setExecutable(true)).isTrue();
        }
        Files.createSymbolicLink(bin.resolve("javac"), jdk.resolve("bin/javac"));

        Result result = launchWithUsrLibJvmHidden(bin);

        assertThat(result.exitCode()).isEqualTo(1);
        assertThat(result.stderr()).contains("conduit: no JDK 25 or newer found: JAVA_HOME is unset, no /usr/lib/jvm/* holds one, "
                + "and the javac on the PATH, " + bin.resolve("javac") + ", is of " + jdk + " (Java 17). Install a JDK 25, or set "
                + "JAVA_HOME to one.");
    }

    private record Result(int exitCode, String stderr) {
    }

    private Result launch(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(tree.resolve("conduit").toString()));
        command.addAll(List.of(args));
        return run(command, bin, System.getProperty("java.home"));
    }

    /** {@code ./conduit info} with {@code path} as its PATH, JAVA_HOME unset and an empty tmpfs over /usr/lib/jvm. */
    private Result launchWithUsrLibJvmHidden(Path path) throws Exception {
        return run(List.of("/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                "/usr/bin/mount -t tmpfs conduit-no-jdk /usr/lib/jvm && exec \"$@\"", "no-jdk", tree.resolve("conduit").toString(),
                "info"), path, null);
    }

    private Result run(List<String> command, Path path, String javaHome) throws Exception {
        ProcessBuilder builder = new ProcessBuilder(command).redirectInput(new File("/dev/null"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        builder.environment().clear();
        builder.environment().put("PATH", path.toString());
        if (javaHome != null) builder.environment().put("JAVA_HOME", javaHome);
        Process process = builder.start();
        String stderr = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("hang guard").isTrue();
        return new Result(process.exitValue(), stderr);
    }

    private static Path onThePath(String tool) {
        for (String directory : List.of("/usr/bin", "/bin", "/usr/sbin", "/sbin")) {
            Path candidate = Path.of(directory, tool);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError(tool + " is in none of /usr/bin, /bin, /usr/sbin, /sbin: the launcher needs it");
    }
}
