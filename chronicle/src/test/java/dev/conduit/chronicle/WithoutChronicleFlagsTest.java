package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application that uses this module in a JVM started without Chronicle's flags (README,
 * "Chronicle"). It met Chronicle's ExceptionInInitializerError, "module java.base does not open
 * java.lang.reflect to unnamed module", which names neither a flag nor where they are listed, and
 * NoClassDefFoundError on every later call.
 */
class WithoutChronicleFlagsTest {

    @TempDir
    Path shared;

    /**
     * Makes a view and a ChronicleMessages, twice, and prints what each threw; with a second
     * argument {@code copy}, makes a view and copies it with Chronicle's {@code Bytes.copy()}.
     */
    public static void main(String[] args) {
        try (Conduit conduit = Conduits.posix(Path.of(args[0]))) {
            Region region = conduit.pool("posix").allocate(64);
            List<Runnable> uses = args.length > 1 && args[1].equals("copy")
                    ? List.of(() -> ChronicleViews.bytes(region).copy().releaseLast())
                    : List.of(() -> ChronicleViews.bytes(region), ChronicleMessages::new);
            for (int i = 0; i < 2; i++) {
                for (Runnable use : uses) {
                    try {
                        use.run();
                        System.out.println("no error");
                    } catch (Throwable t) {
                        System.out.println(t.getClass().getName() + ": " + t.getMessage());
                    }
                }
            }
        }
    }

    /**
     * A JVM with {@code --add-opens=java.base/java.lang.reflect} but not the two exports the README
     * lists with it is told, on every call, which flags it lacks. Until 2026-12-07 that flag alone
     * passed the check; Chronicle's own native memory (here {@code Bytes.copy()} of a view) then
     * failed in its class {@code OS}'s initializer, "does not export sun.nio.ch", and every later
     * use with NoClassDefFoundError "Could not initialize class
     * net.openhft.chronicle.bytes.BytesUtil", naming no flag and no remedy.
     */
    @Test
    void aJvmWithOnlyTheReflectionFlagIsToldWhichFlagsItLacksRatherThanMeetingChroniclesInitializerError() throws Exception {
        Path out = shared.resolve("child.out");
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-Dchronicle.analytics.disable=true", "--class-path", ChildPeer.classPath(), WithoutChronicleFlagsTest.class.getName(),
                shared.toString(), "copy").redirectErrorStream(true).redirectOutput(out.toFile()).start();
        if (!child.waitFor(HangGuard.GUARD.toSeconds(), TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new AssertionError("the child did not end within the hang guard of " + HangGuard.GUARD);
        }
        List<String> errors = Files.readAllLines(out, StandardCharsets.UTF_8).stream()
                .filter(line -> line.startsWith("java.") || line.startsWith("no error")).toList();
        assertThat(errors).as(Files.readString(out)).hasSize(2).allSatisfy(line -> assertThat(line)
                .startsWith("java.lang.IllegalStateException: Chronicle Bytes cannot start in this JVM: it lacks "
                        + "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED"));
    }

    @Test
    void aJvmWithoutTheFlagsIsToldWhichItLacksOnEveryCall() throws Exception {
        Path out = shared.resolve("child.out");
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "--class-path", ChildPeer.classPath(), WithoutChronicleFlagsTest.class.getName(),
                shared.toString()).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        if (!child.waitFor(HangGuard.GUARD.toSeconds(), TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new AssertionError("the child did not end within the hang guard of " + HangGuard.GUARD);
        }
        List<String> errors = Files.readAllLines(out, StandardCharsets.UTF_8).stream()
                .filter(line -> line.startsWith("java.") || line.startsWith("no error")).toList();
        assertThat(errors).as(Files.readString(out)).hasSize(4).allSatisfy(line -> assertThat(line)
                .startsWith("java.lang.IllegalStateException: Chronicle Bytes cannot start in this JVM: it lacks "
                        + "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED "
                        + "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED (Chronicle is on the class path)")
                .contains("README, \"Chronicle\""));
    }
}
