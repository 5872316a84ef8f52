package dev.conduit.linux.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What a fresh JVM binds: each binding generates the JDK's downcall stub, which a JVM pays for at
 * its start (docs/performance.md, "Cold start"). Seen in a JVM of its own, whose holder classes
 * are not yet initialized by earlier tests.
 */
class BindingTest {

    private static final Pattern INITIALIZED = Pattern.compile("Initializing '(dev/conduit/linux/internal/FfmLibc\\$[A-Za-z0-9]+)'");

    /**
     * Until 2026-12-06 handles were bound by family: the probe's getpid bound getuid, geteuid and
     * getpagesize with it, and the first memfd_create and close of a JVM bound 19 more (open, read,
     * write, statx, ...), which a fresh Conduit.open() paid for in its probes.
     */
    @Test
    void aFreshJvmBindsOnlyTheFunctionsItCalls(@TempDir Path directory) throws Exception {
        String modulePath = System.getProperty("jdk.module.path");
        assumeTrue(modulePath != null, "tests do not run on the module path");
        Path program = directory.resolve("Calls.java");
        Files.writeString(program, """
                public class Calls {
                    public static void main(String[] args) {
                        dev.conduit.linux.Libc libc = dev.conduit.linux.Linux.libc();
                        try (dev.conduit.linux.FileDescriptor fd = libc.memfdCreate("binding-test", 0)) {
                            System.out.println("fd=" + fd.fd());
                        }
                    }
                }
                """);
        Path log = directory.resolve("class-init.log");
        Path output = directory.resolve("output.txt");
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux",
                "-Xlog:class+init=info:file=" + log,
                "--module-path", modulePath,
                "--add-modules", "dev.conduit.linux",
                program.toString()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        boolean exited = process.waitFor(2, TimeUnit.MINUTES); // a bound against hanging, not a speed check
        if (!exited) process.destroyForcibly();
        String printed = Files.readString(output);
        assertThat(exited).as(printed).isTrue();
        assertThat(process.exitValue()).as(printed).isZero();
        assertThat(printed).contains("fd=");

        // The handles each initialized holder of FfmLibc bound, by the holder's name.
        Map<String, Integer> bound = new TreeMap<>();
        Matcher matcher = INITIALIZED.matcher(Files.readString(log));
        while (matcher.find()) {
            Class<?> holder = Class.forName(matcher.group(1).replace('/', '.'), false, FfmLibc.class.getClassLoader());
            int handles = 0;
            for (Field field : holder.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers()) && field.getType() == MethodHandle.class) handles++;
            }
            if (handles > 0) bound.put(holder.getSimpleName(), handles);
        }
        assertThat(bound).as("handles bound, by holder class").isEqualTo(Map.of("Getpid", 1, "MemfdCreate", 1, "Close", 1));
    }
}
