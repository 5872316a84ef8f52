package dev.conduit.linux;

import dev.conduit.spi.Availability;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Availability, in this JVM (granted native access by surefire) and in one started without the grant. */
class LinuxTest {

    @Test
    void availableWithTheGrant() {
        assertThat(Linux.unavailabilityCause()).isNull();
        assertThat(Linux.isAvailable()).isTrue();
        Availability availability = Linux.availability();
        assertThat(availability.isAvailable()).isTrue();
        assertThat(availability.details()).containsKeys("arch", "kernel");
        assertThat(Linux.libc().getpid()).isEqualTo((int) ProcessHandle.current().pid());
        assertThat(Linux.class.getModule().getName()).isEqualTo("dev.conduit.linux");
    }

    @Test
    void aJvmWithoutTheGrantIsToldTheExactFlag(@TempDir Path directory) throws IOException, InterruptedException {
        String modulePath = System.getProperty("jdk.module.path");
        assumeTrue(modulePath != null, "tests do not run on the module path");
        Path program = directory.resolve("Probe.java");
        Files.writeString(program, """
                public class Probe {
                    public static void main(String[] args) {
                        System.out.println("available=" + dev.conduit.linux.Linux.isAvailable());
                        System.out.println("cause=" + dev.conduit.linux.Linux.unavailabilityCause().getMessage());
                        try {
                            dev.conduit.linux.Linux.libc();
                        } catch (dev.conduit.spi.ConduitException e) {
                            System.out.println("libc=" + e.getMessage());
                        }
                    }
                }
                """);
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--illegal-native-access=deny",
                "--module-path", modulePath,
                "--add-modules", "dev.conduit.linux",
                program.toString()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();

        assertThat(output).as(output)
                .contains("available=false")
                .contains("cause=the JVM denies native access to module dev.conduit.linux: "
                        + "start it with --enable-native-access=dev.conduit.linux")
                .contains("libc=Linux system calls are unavailable: the JVM denies native access");
    }
}
