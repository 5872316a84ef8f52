package dev.conduit.it.process;

import dev.conduit.spi.InvalidHandleException;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The child's side of {@link ChildJvm}'s line protocol. The child's real stdout carries only
 * protocol lines; {@link System#out} is pointed at stderr, so a stray print cannot break it.
 *
 * <pre>
 * child → test   READY pid=&lt;pid here&gt; hostname=&lt;uts name&gt; shared=&lt;CONDUIT_SHARED_DIR&gt; loading=module-path|class-path ns.pid=pid:[…] ns.ipc=… ns.uts=… ns.mnt=… ns.net=… ns.user=… uid=&lt;effective uid here&gt;
 * test → child   &lt;command&gt; &lt;arg&gt; …          (arguments have no spaces; bytes travel as hex)
 * child → test   OK [&lt;text&gt;]
 *            or  ERR &lt;exception simple name&gt; &lt;handle field, or -&gt; &lt;message, newlines as \n&gt;
 * </pre>
 *
 * Built in: {@code ping} (answers {@code OK pong}) and {@code exit} (answers {@code OK}, then exits
 * with 0). The end of stdin (the test JVM died) exits with 2, so no child outlives its test JVM.
 * A failing command prints its stack trace to stderr and answers {@code ERR}.
 */
public final class CommandLoop {

    /** One command: its arguments in, the text after {@code OK} out; an exception makes the {@code ERR} line. */
    @FunctionalInterface
    public interface Command {
        String run(List<String> args) throws Exception;
    }

    private final Map<String, Command> commands = new LinkedHashMap<>();
    private final Map<String, String> hello = new LinkedHashMap<>();

    public CommandLoop() {
        hello.put("pid", Long.toString(ProcessHandle.current().pid()));
        hello.put("hostname", hostname());
        hello.put("shared", String.valueOf(System.getenv("CONDUIT_SHARED_DIR")));
        hello.put("loading", CommandLoop.class.getModule().isNamed() ? "module-path" : "class-path");
        namespaces().forEach((k, v) -> hello.put("ns." + k, v));
        // Apart from namespaces(): every container launcher makes the others, only a rootless one a user namespace.
        hello.put("ns.user", namespace("user"));
        hello.put("uid", uid());
    }

    /** This process's effective uid as its user namespace shows it: the owner of {@code /proc/self}. */
    public static String uid() {
        try {
            return String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | UnsupportedOperationException e) {
            return "unknown";
        }
    }

    public CommandLoop on(String name, Command command) {
        commands.put(name, command);
        return this;
    }

    /** Adds a field to the {@code READY} line. */
    public CommandLoop hello(String key, String value) {
        hello.put(key, value);
        return this;
    }

    /** Says {@code READY}, then serves commands until {@code exit} or the end of stdin; never returns. */
    public void run() {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        StringBuilder ready = new StringBuilder("READY");
        hello.forEach((k, v) -> ready.append(' ').append(k).append('=').append(v.replace(' ', '_')));
        protocol.println(ready);
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                List<String> words = Arrays.asList(line.trim().split(" +"));
                String name = words.getFirst();
                List<String> args = words.subList(1, words.size());
                if (name.equals("exit")) {
                    protocol.println("OK");
                    protocol.flush();
                    System.exit(0);
                }
                protocol.println(answer(name, args));
            }
        } catch (IOException e) {
            e.printStackTrace();
        }
        System.err.println("stdin closed: the test JVM is gone; exiting");
        System.exit(2);
    }

    private String answer(String name, List<String> args) {
        if (name.equals("ping")) return "OK pong";
        Command c = commands.get(name);
        if (c == null) return "ERR IllegalArgumentException - unknown command '" + name + "'; known: ping exit " + String.join(" ", commands.keySet());
        try {
            String text = c.run(args);
            return text == null || text.isEmpty() ? "OK" : "OK " + text;
        } catch (Throwable t) {
            System.err.println("command '" + name + " " + String.join(" ", args) + "' failed:");
            t.printStackTrace();
            String field = t instanceof InvalidHandleException ihe ? ihe.field() : "-";
            return "ERR " + t.getClass().getSimpleName() + " " + field + " " + escape(String.valueOf(t.getMessage()));
        }
    }

    static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n");
    }

    static String unescape(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 1 < s.length()) {
                char n = s.charAt(++i);
                b.append(n == 'n' ? '\n' : n == 'r' ? '\r' : n);
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /** This process's UTS name, as its UTS namespace says. */
    public static String hostname() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        } catch (IOException e) {
            return "unknown";
        }
    }

    /** The namespaces this process is in: {@code pid -> pid:[4026531836]}, for pid, ipc, uts, mnt and net. */
    public static Map<String, String> namespaces() {
        Map<String, String> ns = new TreeMap<>();
        for (String kind : List.of("pid", "ipc", "uts", "mnt", "net")) ns.put(kind, namespace(kind));
        return ns;
    }

    /** The namespace of {@code kind} ({@code /proc/self/ns/<kind>}) this process is in, as {@code user:[4026531837]}. */
    public static String namespace(String kind) {
        try {
            return Files.readSymbolicLink(Path.of("/proc/self/ns", kind)).toString();
        } catch (IOException e) {
            return "unknown";
        }
    }
}
