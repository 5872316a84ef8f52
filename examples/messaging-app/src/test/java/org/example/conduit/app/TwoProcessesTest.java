package org.example.conduit.app;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs the application as it is deployed: two JVMs with the application and its libraries on the
 * module path, the TCP plugin only in the plugin directory ({@code CONDUIT_PLUGIN_PATH}).
 */
class TwoProcessesTest {

    @TempDir
    Path shared;

    @Test
    void twoProcessesExchangeMessagesAndARegion() throws Exception {
        Process responder = start("respond");
        Process caller = null;
        try {
            BufferedReader responderOut = new BufferedReader(new InputStreamReader(responder.getInputStream(), StandardCharsets.UTF_8));
            String first = responderOut.readLine();
            assertTrue(first != null && first.startsWith("ADDRESS "), "the responder's first line: " + first + "; stderr: " + stderr(responder, "respond"));
            caller = start("call", first.substring("ADDRESS ".length()));
            List<String> lines = new String(caller.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
            assertTrue(caller.waitFor(120, TimeUnit.SECONDS), "the caller ended");
            assertEquals(0, caller.exitValue(), "the caller's exit code; stdout " + lines + "; stderr: " + stderr(caller, "call"));
            assertTrue(responder.waitFor(120, TimeUnit.SECONDS), "the responder ended");
            assertEquals(0, responder.exitValue(), "the responder's exit code; stderr: " + stderr(responder, "respond"));
            long sum = 0;
            for (int i = 0; i < MessagingApp.LONGS; i++) sum += i * 3L;
            assertEquals(List.of(
                    "transport tcp, thread policy RUNTIME_LOCK",
                    "region: responder read sum " + sum + " (expected " + sum + "), its writes arrived",
                    "multi: 4 threads sent 4000, responder counted 4000 in each thread's order"), lines);
        } finally {
            responder.destroyForcibly().waitFor();
            if (caller != null) caller.destroyForcibly().waitFor();
        }
    }

    private Process start(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux",
                "-p", System.getProperty("app.classes") + File.pathSeparator + System.getProperty("app.modules"),
                "-m", "org.example.conduit.app/" + MessagingApp.class.getName()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectError(stderrFile(args[0]).toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("CONDUIT_"));
        pb.environment().put("CONDUIT_PLUGIN_PATH", System.getProperty("app.plugins"));
        pb.environment().put("CONDUIT_SHARED_DIR", shared.toString());
        return pb.start();
    }

    /** Where {@link #start} puts the stderr of a process started as {@code role} ("respond", "call"). */
    private Path stderrFile(String role) {
        return shared.resolve(role + ".stderr");
    }

    /**
     * The stderr of {@code p}, started as {@code role}: named by the caller, because a process that
     * has exited shows no arguments ({@code ProcessHandle.Info}), from which it was guessed.
     */
    private String stderr(Process p, String role) throws Exception {
        p.waitFor(10, TimeUnit.SECONDS);
        Path file = stderrFile(role);
        return Files.exists(file) ? Files.readString(file) : "";
    }
}
