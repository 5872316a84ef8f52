package dev.conduit.plugin.verbs;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A JVM that grants native access to the Linux layer only, as every launcher did before this
 * plugin existed: the plugin loads, and its probe names the missing flag instead of failing.
 */
class NativeAccessTest {

    @Test
    void aJvmWithoutTheGrantGetsAProbeReasonNamingTheFlag(@TempDir Path directory) throws IOException, InterruptedException {
        String modulePath = System.getProperty("jdk.module.path");
        assumeTrue(modulePath != null, "tests do not run on the module path");
        Path program = directory.resolve("Probe.java");
        Files.writeString(program, """
                import dev.conduit.spi.*;
                import java.nio.file.Path;
                import java.util.ServiceLoader;

                public class Probe {
                    public static void main(String[] args) {
                        PluginContext context = new PluginContext() {
                            public Config config() {
                                return new Config() {
                                    public <T> T get(ConfigKey<T> key) { return key.defaultValue(); }
                                };
                            }
                            public Path sharedDirectory() { return Path.of("/tmp"); }
                            public System.Logger logger() { return System.getLogger("probe"); }
                        };
                        for (ConduitPlugin plugin : ServiceLoader.load(ConduitPlugin.class)) {
                            if (plugin.name().equals("verbs")) {
                                Availability a = plugin.probe(context);
                                System.out.println("available=" + a.isAvailable());
                                System.out.println("reason=" + a.reason());
                            }
                        }
                    }
                }
                """);
        List<String> command = List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--illegal-native-access=deny",
                "--enable-native-access=dev.conduit.linux",
                "--module-path", modulePath,
                "--add-modules", "dev.conduit.plugin.verbs",
                program.toString());
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();

        assertThat(output).as(output)
                .contains("available=false")
                .contains("reason=the JVM denies native access to module dev.conduit.plugin.verbs: start it with "
                        + "--enable-native-access=dev.conduit.plugin.verbs (besides dev.conduit.linux)");
        assertThat(process.exitValue()).as(output).isZero();
    }
}
