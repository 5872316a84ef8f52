package dev.conduit.it.process;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A second JVM running a main class of this test module, driven over a line protocol
 * ({@link CommandLoop}): the test writes one command per line on the child's stdin, the child
 * answers each with one line, {@code OK <text>} or {@code ERR <type> <field> <message>}. Its first
 * line is {@code READY key=value...} ({@link #hello()}). Its stderr goes to a file, quoted in every
 * failure and printed to this JVM's stdout (the surefire report) when it is closed.
 *
 * <p>The child runs the way this JVM runs: on the same module path ({@code jdk.module.path}, main
 * class as {@code dev.conduit.it/<class>}) or class path, with native access granted the same way
 * ({@code dev.conduit.linux}, or {@code ALL-UNNAMED} on the class path) and
 * {@code --illegal-native-access=deny}. It inherits this JVM's environment minus every
 * {@code CONDUIT_*} variable, plus what the builder adds; {@code CONDUIT_SHARED_DIR} is its own
 * view of the shared directory ({@link Launcher}).
 *
 * <pre>{@code
 * try (ChildJvm child = ChildJvm.builder(ConduitPeer.class).sharedDirectory(dir).launcher(Launcher.container()).start()) {
 *     child.call("open");
 *     ChildJvm.Failure f = child.callExpectingFailure("import", "x", hex);
 *     child.exit();            // or child.kill(): SIGKILL to the JVM, as a crash
 * }                            // close() kills what is still alive and asserts it ended
 * }</pre>
 *
 * Every wait is bounded ({@link #REPLY_TIMEOUT}): a hung child fails the test, it never hangs the
 * build. The bound is a guard, not a speed check.
 */
public final class ChildJvm implements AutoCloseable {

    /** How long one reply, the start or an exit may take before the test fails: a hang guard only. */
    public static final Duration REPLY_TIMEOUT = Duration.ofSeconds(60);

    private static final String EOF = new String("<eof>"); // identity marks the end of stdout

    /** The modules granted native access on the module path (DESIGN.md section 7): the Linux layer and the verbs plugin. */
    private static final String NATIVE_MODULES = "dev.conduit.linux,dev.conduit.plugin.verbs";

    private final String description;
    /** Stands, in an environment value, for the shared directory as the child sees it (a container's mount point). */
    public static final String SHARED = "{shared}";

    private final Process process;
    private final Launcher launcher;
    private final Path hostSharedDirectory;
    private final Path childSharedDirectory;
    private final Path stderrFile;
    private final Writer stdin;
    private final BlockingQueue<String> stdout = new LinkedBlockingQueue<>();
    private final Map<String, String> hello;
    private ProcessHandle jvm;
    private boolean closed;

    private ChildJvm(Builder b, Path childSharedDirectory, Path stderrFile) throws IOException {
        this.launcher = b.launcher;
        this.hostSharedDirectory = b.sharedDirectory;
        this.childSharedDirectory = childSharedDirectory;
        this.stderrFile = stderrFile;
        List<String> java = javaCommand(b.mainClass, b.jvmOptions, b.arguments);
        List<String> command = launcher.command(java, hostSharedDirectory, childSharedDirectory);
        ProcessBuilder pb = new ProcessBuilder(command).redirectError(stderrFile.toFile());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("CONDUIT_"));
        if (childSharedDirectory != null) env.put("CONDUIT_SHARED_DIR", childSharedDirectory.toString());
        b.environment.forEach((k, v) -> env.put(k, childSharedDirectory == null ? v : v.replace(SHARED, childSharedDirectory.toString())));
        this.description = b.mainClass.getSimpleName() + " (" + launcher + ")";
        this.process = pb.start();
        this.stdin = new java.io.OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread reader = new Thread(this::pumpStdout, "child-stdout-" + process.pid());
        reader.setDaemon(true);
        reader.start();
        Map<String, String> h;
        try {
            String first = nextLine("READY");
            if (!first.startsWith("READY")) throw fail("expected READY as the first line, got: " + first);
            h = parseFields(first.substring("READY".length()));
        } catch (RuntimeException | Error e) {
            destroyQuietly();
            throw e;
        }
        this.hello = Map.copyOf(h);
    }

    /** A child that runs {@code mainClass}, a class of this test module with a {@code main} that runs a {@link CommandLoop}. */
    public static Builder builder(Class<?> mainClass) {
        return new Builder(mainClass);
    }

    /** What to start. */
    public static final class Builder {
        private final Class<?> mainClass;
        private final Map<String, String> environment = new LinkedHashMap<>();
        private final List<String> arguments = new ArrayList<>();
        private final List<String> jvmOptions = new ArrayList<>();
        private Launcher launcher = Launcher.direct();
        private Path sharedDirectory;

        private Builder(Class<?> mainClass) {
            this.mainClass = mainClass;
        }

        /** The test's shared directory (host view): the child gets its own view of it in {@code CONDUIT_SHARED_DIR}. */
        public Builder sharedDirectory(Path directory) {
            this.sharedDirectory = directory;
            return this;
        }

        /**
         * An environment variable of the child (after {@code CONDUIT_*} are dropped and the shared directory is set);
         * {@value ChildJvm#SHARED} in the value stands for the child's own view of the shared directory.
         */
        public Builder env(String name, String value) {
            environment.put(name, value);
            return this;
        }

        public Builder args(String... args) {
            arguments.addAll(Arrays.asList(args));
            return this;
        }

        public Builder jvmOptions(String... options) {
            jvmOptions.addAll(Arrays.asList(options));
            return this;
        }

        public Builder launcher(Launcher launcher) {
            this.launcher = launcher;
            return this;
        }

        /** Starts the child and waits for its {@code READY} line. */
        public ChildJvm start() throws IOException {
            Path child = sharedDirectory == null ? null : launcher.childSharedDirectory(sharedDirectory);
            Path stderr = Files.createTempFile("conduit-child-", ".stderr");
            try {
                return new ChildJvm(this, child, stderr);
            } catch (IOException | RuntimeException | Error e) {
                if (child != null) launcher.cleanUp(sharedDirectory, child);
                Files.deleteIfExists(stderr);
                throw e;
            }
        }
    }

    /** The java command that runs {@code mainClass} as this JVM runs: module path or class path. */
    public static List<String> javaCommand(Class<?> mainClass, List<String> jvmOptions, List<String> arguments) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // -XX:-UsePerfData: JVMs in PID namespaces of their own are all pid 1 and would share /tmp/hsperfdata_<user>/1,
        // and the JVM that finds it locked prints a warning on stdout, before READY.
        List<String> command = new ArrayList<>(List.of(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-Xmx256m", "-XX:-UsePerfData", "--illegal-native-access=deny"));
        boolean modulePath = mainClass.getModule().isNamed();
        command.add("--enable-native-access=" + (modulePath ? NATIVE_MODULES : "ALL-UNNAMED"));
        command.addAll(jvmOptions);
        if (modulePath) {
            String modules = System.getProperty("jdk.module.path");
            if (modules == null || modules.isBlank()) throw new IllegalStateException("this JVM runs on the module path but says no jdk.module.path");
            command.addAll(List.of("--module-path", modules, "--module", mainClass.getModule().getName() + "/" + mainClass.getName()));
        } else {
            // Surefire may launch through a manifest-only jar; it also says the real test class path.
            String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
            command.addAll(List.of("--class-path", classPath, mainClass.getName()));
        }
        command.addAll(arguments);
        return command;
    }

    /** How long a child run to its end ({@link #runToEnd}) may take before the test fails: a hang guard only. */
    public static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);

    /** A finished child: its exit code and what it wrote, stdout and stderr interleaved. */
    public record Ended(int exitCode, String output) {}

    /**
     * Runs {@code mainClass} as {@link #javaCommand} starts it, with no stdin, to its end, and
     * returns its exit code and output. See {@link #runToEnd(List)}.
     */
    public static Ended runToEnd(Class<?> mainClass, List<String> jvmOptions, List<String> arguments) throws IOException {
        return runToEnd(javaCommand(mainClass, jvmOptions, arguments));
    }

    /**
     * Runs {@code command} (a {@link #javaCommand}, perhaps behind {@code unshare} or {@code prlimit})
     * with no stdin to its end, and returns its exit code and output. The output goes to a file, not
     * a pipe: a chatty child cannot fill a pipe nobody reads and hang on its write, and a hung child
     * cannot hang the read. A child still running after {@link #RUN_TIMEOUT} is killed and fails the
     * test with what it wrote so far.
     */
    public static Ended runToEnd(List<String> command) throws IOException {
        Path output = Files.createTempFile("conduit-child-", ".out");
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            try {
                if (!process.waitFor(RUN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new AssertionError(String.join(" ", command) + " did not end within " + RUN_TIMEOUT
                            + " (hung?); its output so far:\n" + readLeniently(output));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + String.join(" ", command));
            } finally {
                process.destroyForcibly(); // nothing if it has exited
            }
            return new Ended(process.exitValue(), readLeniently(output));
        } finally {
            Files.deleteIfExists(output);
        }
    }

    /** The file as UTF-8, a malformed byte (a crash report's, a truncated line's) replaced rather than thrown on. */
    private static String readLeniently(Path file) throws IOException {
        return new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
    }

    /**
     * Sends {@code signal} ({@code -STOP}, {@code -CONT}, ...) to the process {@code pid} with
     * kill(1); fails unless kill succeeds.
     */
    public static void signal(long pid, String signal) {
        try {
            Process p = new ProcessBuilder("kill", signal, Long.toString(pid)).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) throw new AssertionError("kill " + signal + " " + pid + " failed: " + out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted sending " + signal + " to " + pid);
        }
    }

    /**
     * Freezes the process {@code pid} with {@code SIGSTOP} and returns once every thread of it has
     * stopped. kill(2) returns before that: the kernel wakes one thread to take the signal, and
     * that thread stops the others when it runs, so on a loaded machine they run on meanwhile (200
     * stops of an idle JVM beside other builds found threads still running in 38 as kill returned,
     * and HungPeerTest's "frozen" memfd peer answered a connect). The wait is bounded by
     * {@link #REPLY_TIMEOUT}, a hang guard.
     */
    public static void stop(long pid) {
        signal(pid, "-STOP");
        long deadline = System.nanoTime() + REPLY_TIMEOUT.toNanos();
        List<String> running;
        while (!(running = runningThreads(pid)).isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("threads of " + pid + " still not stopped " + REPLY_TIMEOUT + " after SIGSTOP (tid:state): " + running);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + pid + " to stop");
            }
        }
    }

    /** The threads of {@code pid} that are neither stopped nor gone, as {@code tid:state} from /proc. */
    private static List<String> runningThreads(long pid) {
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        List<String> running = new ArrayList<>();
        try (var threads = Files.list(tasks)) {
            for (Path task : threads.toList()) {
                String stat;
                try {
                    stat = Files.readString(task.resolve("stat"));
                } catch (java.nio.file.NoSuchFileException ended) {
                    continue; // the thread ended since the listing
                }
                // pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'.
                char state = stat.charAt(stat.lastIndexOf(')') + 2);
                if ("TtZX".indexOf(state) < 0) running.add(task.getFileName() + ":" + state);
            }
        } catch (java.nio.file.NoSuchFileException gone) {
            throw new AssertionError("process " + pid + " is gone: it cannot be stopped");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return running;
    }

    /** The {@code READY} line's fields: at least {@code pid}, {@code uid}, {@code hostname}, {@code shared}, {@code loading}, {@code ns.*}. */
    public Map<String, String> hello() {
        return hello;
    }

    /** The child's pid as it sees it ({@code ProcessHandle.current().pid()} in its PID namespace). */
    public long pidInside() {
        return Long.parseLong(hello.get("pid"));
    }

    /** The shared directory as the child sees it (its {@code CONDUIT_SHARED_DIR}), or null if none was given. */
    public Path sharedDirectory() {
        return childSharedDirectory;
    }

    /** The process this JVM started: the JVM itself when direct, {@code unshare} for a container. */
    public Process process() {
        return process;
    }

    /**
     * The child JVM's process as this JVM sees it (its pid in the host's PID namespace): for a
     * container, {@code unshare}'s only child.
     */
    public synchronized ProcessHandle jvm() {
        if (jvm == null) {
            if (launcher instanceof Launcher.Direct) {
                jvm = process.toHandle(); // also as another user: setpriv execs the JVM
            } else {
                List<ProcessHandle> children = process.children().toList();
                if (children.size() != 1) throw fail("expected unshare to have one child (the JVM), found " + children);
                jvm = children.getFirst();
            }
        }
        return jvm;
    }

    /** Sends {@code command args...} and returns the text after {@code OK}; an {@code ERR} reply fails the test. */
    public String call(String command, Object... args) {
        Reply r = send(command, args);
        if (r.failure != null) throw fail("'" + command + "' failed in the child: " + r.failure);
        return r.text;
    }

    /** Sends {@code command args...}, which must fail in the child, and returns how. */
    public Failure callExpectingFailure(String command, Object... args) {
        Reply r = send(command, args);
        if (r.failure == null) throw fail("'" + command + "' was expected to fail in the child, but answered OK " + r.text);
        return r.failure;
    }

    private record Reply(String text, Failure failure) {}

    /** An {@code ERR} reply: the exception's simple class name, the handle field it names (or null), its message. */
    public record Failure(String type, String field, String message) {
        @Override
        public String toString() {
            return type + (field == null ? "" : " [field " + field + "]") + ": " + message;
        }
    }

    private synchronized Reply send(String command, Object... args) {
        StringBuilder line = new StringBuilder(command);
        for (Object a : args) {
            String s = String.valueOf(a);
            if (s.isEmpty() || s.chars().anyMatch(c -> c <= ' ')) throw new IllegalArgumentException("argument '" + s + "' is empty or has spaces");
            line.append(' ').append(s);
        }
        try {
            stdin.write(line.append('\n').toString());
            stdin.flush();
        } catch (IOException e) {
            throw fail("cannot send '" + command + "' (the child is gone?): " + e);
        }
        String reply = nextLine("the reply to '" + command + "'");
        if (reply.startsWith("OK")) return new Reply(reply.length() > 2 ? reply.substring(3) : "", null);
        if (reply.startsWith("ERR ")) {
            String[] parts = reply.split(" ", 4);
            if (parts.length < 4) throw fail("malformed ERR line: " + reply);
            return new Reply(null, new Failure(parts[1], parts[2].equals("-") ? null : parts[2], CommandLoop.unescape(parts[3])));
        }
        throw fail("unexpected line from the child in reply to '" + command + "': " + reply);
    }

    /** Splits {@code key=value key=value} into a map. */
    public static Map<String, String> parseFields(String text) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String token : text.trim().split(" +")) {
            if (token.isEmpty()) continue;
            int eq = token.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("not key=value: '" + token + "' in '" + text + "'");
            fields.put(token.substring(0, eq), token.substring(eq + 1));
        }
        return fields;
    }

    private void pumpStdout() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) stdout.add(line);
        } catch (IOException e) {
            // the process is gone; EOF below
        } finally {
            stdout.add(EOF);
        }
    }

    private String nextLine(String what) {
        String line;
        try {
            line = stdout.poll(REPLY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw fail("interrupted waiting for " + what);
        }
        if (line == null) throw fail("no " + what + " within " + REPLY_TIMEOUT + " (hung?)");
        if (line == EOF) {
            stdout.add(EOF);
            String exit = waitQuietly() ? "exited with " + process.exitValue() : "closed its stdout";
            throw fail("the child " + exit + " before " + what);
        }
        return line;
    }

    /** Asks the child to exit ({@code exit}), waits for it and returns its exit code. */
    public int exit() {
        call("exit");
        if (!waitQuietly()) throw fail("did not exit within " + REPLY_TIMEOUT + " after 'exit'");
        return process.exitValue();
    }

    /**
     * {@code SIGKILL} to the child JVM ({@link #jvm()}), as a crash: no shutdown hook, no close,
     * the kernel releases its descriptors and locks. Waits until the JVM, and for a container
     * unshare, are gone; returns the exit code of {@link #process()}: 137 (128 + SIGKILL) direct;
     * for a container unshare's, which says only that its child failed (1 with util-linux 2.38).
     *
     * <p>It returns as soon as the JVM is reaped, so that a test can time the death: it waits for
     * {@link #process()} first, which this JVM reaps ({@code waitpid}) the moment it exits, and
     * unshare exits once its child, the JVM, is gone. {@link ProcessHandle#onExit()} of a process
     * that is not this JVM's child (the JVM in a container) polls, the first time 300 ms after the
     * call: waited for first, as before 2026-12-02, it made the tests report the container's JVM
     * "reaped" 300 ms after the signal, whatever its death took. Asked after unshare's exit, it
     * finds the JVM gone at once.
     */
    public int kill() {
        ProcessHandle target = jvm();
        target.destroyForcibly();
        if (!waitQuietly()) {
            throw fail("the JVM (pid " + target.pid() + ") did not die after SIGKILL, or " + process.info().command().orElse("its launcher")
                    + " did not exit");
        }
        try {
            target.onExit().get(REPLY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw fail("the JVM (pid " + target.pid() + ") did not die after SIGKILL: " + e);
        }
        return process.exitValue();
    }

    /** Whether the child (the JVM, and for a container unshare) is still running. */
    public boolean isAlive() {
        return process.isAlive() || (jvm != null && jvm.isAlive());
    }

    /** What the child wrote on stderr so far. */
    public String stderr() {
        try {
            return Files.exists(stderrFile) ? Files.readString(stderrFile) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private boolean waitQuietly() {
        try {
            return process.waitFor(REPLY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private void destroyQuietly() {
        try {
            if (jvm != null) jvm.destroyForcibly();
            else if (launcher instanceof Launcher.Container) process.children().forEach(ProcessHandle::destroyForcibly);
        } finally {
            process.destroyForcibly();
            waitQuietly();
        }
    }

    /**
     * Kills whatever still runs (JVM and launcher), waits for it, asserts that it ended, prints its
     * stderr to this JVM's stdout and removes the mount point a container used. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        ProcessHandle inner = launcher instanceof Launcher.Container
                ? (jvm != null ? jvm : process.children().findFirst().orElse(null)) : null;
        if (inner != null) inner.destroyForcibly();
        process.destroyForcibly(); // nothing if it has exited
        boolean ended = waitQuietly();
        if (inner != null) {
            try {
                inner.onExit().get(REPLY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                // reported below
            }
            ended &= !inner.isAlive();
        }
        String err = stderr();
        System.out.printf("--- child %s, pid %d, exit %s; stderr ---%n%s--- end of child stderr ---%n",
                description, process.pid(), process.isAlive() ? "none" : String.valueOf(process.exitValue()), err);
        try {
            Files.deleteIfExists(stderrFile);
            if (childSharedDirectory != null && ended) launcher.cleanUp(hostSharedDirectory, childSharedDirectory);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (!ended) throw new AssertionError("child " + description + " (pid " + process.pid() + ") is still alive after SIGKILL");
    }

    private AssertionError fail(String message) {
        return new AssertionError("child " + description + ": " + message + "\n--- child stderr ---\n" + stderr()
                + "--- end of child stderr ---");
    }

    @Override
    public String toString() {
        return description + " pid " + process.pid() + " " + hello.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(" "));
    }
}
