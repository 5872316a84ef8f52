package dev.conduit.chronicle;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link CrossProcessPeer} in a second JVM, on the class path, with Chronicle's flags for the
 * class path ({@code ALL-UNNAMED}, from the system property {@code conduit.chronicle.jvm.args}
 * that this module's surefire configuration sets from the same POM property as its own flags).
 * A smaller cousin of integration-tests' {@code ChildJvm}: that harness lives in a test module
 * that must not see Chronicle. Every wait is bounded: a hung child fails the test, never hangs it.
 */
final class ChildPeer implements AutoCloseable {

    private static final long REPLY_SECONDS = 120;

    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> stdout = new LinkedBlockingQueue<>();
    private final Path stderr;

    ChildPeer(Path shared) throws IOException, InterruptedException {
        this(CrossProcessPeer.class, shared.toString());
    }

    /** A child running {@code main}'s {@code main(arguments)}, which answers commands through {@link PeerCommands}. */
    ChildPeer(Class<?> main, String... arguments) throws IOException, InterruptedException {
        String flags = System.getProperty("conduit.chronicle.jvm.args");
        if (flags == null) throw new IllegalStateException("system property conduit.chronicle.jvm.args is not set (see chronicle/pom.xml)");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:+UseSerialGC", "-Xmx256m", "--enable-native-access=ALL-UNNAMED", "--illegal-native-access=deny"));
        command.addAll(Arrays.asList(flags.replace("=chronicle.core", "=ALL-UNNAMED").trim().split("\\s+")));
        command.addAll(List.of("--class-path", classPath(), main.getName()));
        command.addAll(List.of(arguments));
        stderr = Files.createTempFile("chronicle-child", ".err");
        ProcessBuilder pb = new ProcessBuilder(command).redirectError(stderr.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("CONDUIT_"));
        process = pb.start();
        stdin = new java.io.OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread pump = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) stdout.add(line);
            } catch (IOException ignored) {
                // the child ended
            } finally {
                stdout.add("<eof>");
            }
        }, "chronicle-child-stdout");
        pump.setDaemon(true);
        pump.start();
        String ready = next();
        if (!ready.equals("READY")) throw failure("expected READY, got " + ready);
    }

    /** Everything this JVM was started with, on one class path (the child needs no module). */
    static String classPath() {
        Set<String> entries = new LinkedHashSet<>();
        for (String p : new String[] {"jdk.module.path", "surefire.test.class.path", "java.class.path"}) {
            String v = System.getProperty(p);
            if (v != null && !v.isBlank()) entries.addAll(Arrays.asList(v.split(java.io.File.pathSeparator)));
        }
        try {
            entries.add(Path.of(CrossProcessPeer.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    /** Sends a command; returns what follows {@code OK }, or fails with the child's error. */
    String call(String... command) throws IOException, InterruptedException {
        stdin.write(String.join(" ", command) + "\n");
        stdin.flush();
        String reply = next();
        if (!reply.startsWith("OK ")) throw failure(String.join(" ", command) + " -> " + reply);
        return reply.substring(3);
    }

    /** Sends a command without waiting for its reply ({@link #reply()} later). */
    void start(String... command) throws IOException {
        stdin.write(String.join(" ", command) + "\n");
        stdin.flush();
    }

    String reply() throws IOException, InterruptedException {
        String reply = next();
        if (!reply.startsWith("OK ")) throw failure(reply);
        return reply.substring(3);
    }

    private String next() throws IOException, InterruptedException {
        String line = stdout.poll(REPLY_SECONDS, TimeUnit.SECONDS);
        if (line == null) throw failure("no reply within the hang guard of " + REPLY_SECONDS + " s");
        if (line.equals("<eof>")) throw failure("the child ended");
        return line;
    }

    /** Kills the child with {@code SIGKILL}: no close, no shutdown hook. Returns its exit status (137). */
    int kill() throws InterruptedException {
        process.destroyForcibly();
        return process.waitFor();
    }

    private boolean exited() {
        try {
            return process.waitFor(REPLY_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private AssertionError failure(String what) throws IOException {
        return new AssertionError("child JVM: " + what + "\n--- its stderr ---\n" + Files.readString(stderr));
    }

    @Override
    public void close() throws IOException {
        try {
            stdin.close();
            if (!exited()) {
                process.destroyForcibly();
                throw failure("did not exit after its stdin closed");
            }
        } finally {
            Files.deleteIfExists(stderr);
        }
    }
}
