package dev.conduit.tck;

import com.sun.management.HotSpotDiagnosticMXBean;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The virtual threads alive in this JVM, as the JDK's thread dump lists them ({@link
 * HotSpotDiagnosticMXBean#dumpThreads}, in JSON): {@code ThreadGroup.enumerate} and {@code
 * Thread.getAllStackTraces} list platform threads only, and every virtual thread is in one group of
 * the JDK's. The dump lists every virtual thread while {@code jdk.trackAllThreads} is true, the
 * default ({@link #allTracked}); otherwise only those of executors and structured scopes.
 */
final class VirtualThreads {

    /** A virtual thread as the dump shows it: its id, name (often empty), state and stack, innermost frame first. */
    record Seen(long tid, String name, String state, List<String> stack) {
        /**
         * Whether it is one of the JDK's I/O pollers ({@code sun.nio.ch.Poller}), which the JDK starts as virtual threads
         * when a virtual thread first waits on a channel, and keeps for the JVM's life.
         */
        boolean isTheJdksPoller() {
            return stack.stream().anyMatch(frame -> frame.startsWith("java.base/sun.nio.ch.Poller."));
        }
    }

    private VirtualThreads() {
    }

    /**
     * Whether the thread dump lists every virtual thread: {@code jdk.trackAllThreads} unset, empty or true, as the JDK
     * reads it when it makes its root thread container.
     */
    static boolean allTracked() {
        String track = System.getProperty("jdk.trackAllThreads");
        return track == null || track.isEmpty() || Boolean.parseBoolean(track);
    }

    /** The virtual threads alive now, by id. */
    static Map<Long, Seen> alive() throws IOException {
        Path directory = Files.createTempDirectory("conduit-tck-threads");
        Path dump = directory.resolve("threads.json"); // dumpThreads refuses a file that exists
        try {
            ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                    .dumpThreads(dump.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.JSON);
            return virtualThreadsOf(Files.readString(dump));
        } finally {
            Files.deleteIfExists(dump);
            Files.delete(directory);
        }
    }

    /** The virtual threads of a JSON thread dump: {@code threadDump.threadContainers[].threads[]} whose {@code virtual} is true. */
    static Map<Long, Seen> virtualThreadsOf(String json) {
        Map<Long, Seen> virtual = new LinkedHashMap<>();
        Map<?, ?> threadDump = (Map<?, ?>) ((Map<?, ?>) new Json(json).value()).get("threadDump");
        for (Object container : (List<?>) threadDump.get("threadContainers")) {
            for (Object element : (List<?>) ((Map<?, ?>) container).get("threads")) {
                Map<?, ?> thread = (Map<?, ?>) element;
                if (!Boolean.TRUE.equals(thread.get("virtual"))) continue;
                long tid = Long.parseLong((String) thread.get("tid"));
                List<String> stack = ((List<?>) thread.get("stack")).stream().map(String.class::cast).toList();
                virtual.put(tid, new Seen(tid, (String) thread.get("name"), (String) thread.get("state"), stack));
            }
        }
        return virtual;
    }

    /**
     * Just enough JSON for the JDK's thread dump: objects as maps, arrays as lists, strings, true, false and null; a
     * number is kept as its text. The TCK has no JSON library on its path, and adds none for this.
     */
    private static final class Json {
        private final String text;
        private int at;

        Json(String text) {
            this.text = text;
        }

        Object value() {
            skipBlanks();
            char c = text.charAt(at);
            return switch (c) {
                case '{' -> object();
                case '[' -> array();
                case '"' -> string();
                case 't' -> word("true", Boolean.TRUE);
                case 'f' -> word("false", Boolean.FALSE);
                case 'n' -> word("null", null);
                default -> number();
            };
        }

        private Map<String, Object> object() {
            Map<String, Object> members = new LinkedHashMap<>();
            at++;
            skipBlanks();
            if (text.charAt(at) == '}') {
                at++;
                return members;
            }
            while (true) {
                skipBlanks();
                String name = string();
                skipBlanks();
                expect(':');
                members.put(name, value());
                skipBlanks();
                if (text.charAt(at++) == '}') return members;
            }
        }

        private List<Object> array() {
            List<Object> elements = new ArrayList<>();
            at++;
            skipBlanks();
            if (text.charAt(at) == ']') {
                at++;
                return elements;
            }
            while (true) {
                elements.add(value());
                skipBlanks();
                if (text.charAt(at++) == ']') return elements;
            }
        }

        private String string() {
            expect('"');
            StringBuilder s = new StringBuilder();
            while (true) {
                char c = text.charAt(at++);
                if (c == '"') return s.toString();
                if (c != '\\') {
                    s.append(c);
                    continue;
                }
                char escaped = text.charAt(at++);
                switch (escaped) {
                    case 'b' -> s.append('\b');
                    case 'f' -> s.append('\f');
                    case 'n' -> s.append('\n');
                    case 'r' -> s.append('\r');
                    case 't' -> s.append('\t');
                    case 'u' -> {
                        s.append((char) Integer.parseInt(text, at, at + 4, 16));
                        at += 4;
                    }
                    default -> s.append(escaped); // \" \\ \/
                }
            }
        }

        private String number() {
            int start = at;
            while (at < text.length() && "+-.eE0123456789".indexOf(text.charAt(at)) >= 0) at++;
            if (at == start) throw new IllegalArgumentException("not JSON at " + at + ": " + text.charAt(at));
            return text.substring(start, at);
        }

        private Object word(String word, Object value) {
            if (!text.startsWith(word, at)) throw new IllegalArgumentException("not JSON at " + at + ": " + word + " expected");
            at += word.length();
            return value;
        }

        private void expect(char c) {
            if (text.charAt(at++) != c) throw new IllegalArgumentException("not JSON at " + (at - 1) + ": '" + c + "' expected");
        }

        private void skipBlanks() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
        }
    }
}
