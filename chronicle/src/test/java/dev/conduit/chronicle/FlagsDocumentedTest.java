package dev.conduit.chronicle;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Chronicle's JVM flags are written in three places a test can see — this module's POM (which
 * gives them to this JVM), the README and the {@code ./conduit} launcher — and must agree.
 */
class FlagsDocumentedTest {

    private static String[] flags() {
        String flags = System.getProperty("conduit.chronicle.jvm.args");
        assertThat(flags).as("system property conduit.chronicle.jvm.args (chronicle/pom.xml)").isNotBlank();
        return flags.trim().split("\\s+");
    }

    private static String read(String file) throws IOException {
        return Files.readString(Path.of(System.getProperty("user.dir")).resolve("..").resolve(file).normalize());
    }

    @Test
    void theReadmeAndTheLauncherListEveryFlagThisModulesTestsRunWith() throws IOException {
        String readme = read("README.md");
        String launcher = read("conduit");
        for (String flag : flags()) {
            assertThat(readme).as("README.md lists " + flag).contains(flag);
            assertThat(launcher).as("./conduit adds " + flag).contains(flag);
        }
    }

    @Test
    void thisJvmRunsWithThem() {
        String command = ProcessHandle.current().info().commandLine().orElseThrow();
        for (String flag : flags()) assertThat(command).contains(flag);
    }
}
