package dev.conduit.tools;

import dev.conduit.tools.CommandRunner.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Short real runs of {@code conduit perf} between two JVMs: with the server it spawns itself, with
 * a server bootstrapped over TCP, and with a server in PID, IPC, UTS and mount namespaces of its
 * own that sees the shared directory at another path. They check that the runs complete and that
 * the JSON is well-formed and complete — never how fast anything was.
 */
class PerfRunTest {

    /** Every test at two sizes: am_lat, am_bw, put_lat, put_bw, get_lat (2 each), atomic_lat (1), ipc_import cached and uncached (2 each). */
    private static final int ROWS = 5 * 2 + 1 + 2 * 2;
    private static final String[] SHORT = {"all", "-n", "200", "-w", "50", "-s", "8,4k", "--json"};

    private final CommandRunner conduit = CommandRunner.discovering();

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aRunAgainstASpawnedServerMeasuresEveryTest() {
        Result result = conduit.run(concat(List.of("perf"), SHORT));

        assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_OK);
        Map<String, Object> doc = checkDocument(result.out());
        String bootstrap = (String) doc.get("bootstrap");
        assertThat(bootstrap).startsWith("spawned by this process, private shared directory /dev/shm/conduit-perf-");
        Path privateDirectory = Path.of(bootstrap.substring(bootstrap.lastIndexOf(' ') + 1));
        assertThat(privateDirectory).as("removed after the run").doesNotExist();
        assertThat(((Number) Json.object(doc, "server").get("pid")).longValue()).isNotEqualTo(ProcessHandle.current().pid());
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void idlePeersStayConnectedToTheServerWhileTheMeasuringOneRuns() {
        Result result = conduit.run("perf", "am_lat", "-n", "200", "-w", "50", "-s", "8", "--peers", "16", "--json");

        assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_OK);
        Map<String, Object> doc = JsonParser.parseObject(result.out());
        assertThat(((Number) doc.get("peers")).intValue()).isEqualTo(16);
        assertThat(result.err()).as("the server handles every idle peer's message").doesNotContain("no handler");
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aServerCanHandOutItsBootstrapOverTcp() throws Exception {
        List<String> command = new ArrayList<>(PerfPeer.javaCommand());
        command.addAll(List.of("perf", "--server", "--listen", "127.0.0.1:0", "--exit-with-stdin"));
        Process server = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            BufferedReader lines = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String port = awaitLine(lines, Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)"));

            Result result = conduit.run("perf", "--connect", "127.0.0.1:" + port, "am_lat", "am_bw", "get_lat", "-n", "200", "-w", "50",
                    "-s", "8", "--json");

            assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_OK);
            Map<String, Object> doc = JsonParser.parseObject(result.out());
            assertThat(doc.get("bootstrap")).isEqualTo("bootstrap over TCP from 127.0.0.1:" + port);
            assertThat(Json.objects(doc, "results")).hasSize(3).allSatisfy(r -> assertThat(r.get("skipped")).isNull());
            assertThat(server.waitFor(20, TimeUnit.SECONDS)).as("the server serves one client, then exits").isTrue();
            assertThat(server.exitValue()).as(drain(lines)).isZero();
        } finally {
            server.destroyForcibly();
        }
    }

    /**
     * The server runs under {@code unshare --pid --ipc --uts --mount --fork --mount-proc}, with its
     * own host name, and sees the shared directory bind-mounted at another path; nothing but that
     * directory connects the two. The bootstrap goes through a file in it.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aServerInItsOwnNamespacesIsReachedThroughTheSharedDirectoryAlone() throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "cperf");
        Path mountPoint = Files.createTempDirectory(Path.of("/tmp"), "cperf-ct");
        Path script = Files.createTempFile("conduit-perf-container", ".sh");
        Process server = null;
        try {
            List<String> java = new ArrayList<>(PerfPeer.javaCommand());
            java.addAll(List.of("perf", "--server", "--shared-dir", mountPoint.toString(), "--name", "ct", "--exit-with-stdin"));
            Files.writeString(script, String.join("\n",
                    "set -e",
                    "hostname perf-container",
                    "mkdir -p " + quote(mountPoint.toString()),
                    "mount --bind " + quote(shared.toString()) + " " + quote(mountPoint.toString()),
                    "exec " + java.stream().map(PerfRunTest::quote).collect(Collectors.joining(" ")),
                    ""));
            server = new ProcessBuilder("unshare", "--pid", "--ipc", "--uts", "--mount", "--fork", "--mount-proc", "sh", script.toString())
                    .redirectErrorStream(true).start();
            BufferedReader lines = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            awaitLine(lines, Pattern.compile("published " + Pattern.quote(mountPoint.resolve("conduit-perf-ct.addr").toString())));
            assertThat(Files.getPosixFilePermissions(shared.resolve("conduit-perf-ct.addr")))
                    .isEqualTo(PosixFilePermissions.fromString("rw-------"));

            Result result = conduit.run(concat(List.of("perf", "--connect", "--shared-dir", shared.toString(), "--name", "ct"), SHORT));

            assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_OK);
            Map<String, Object> doc = checkDocument(result.out());
            Map<String, Object> peer = Json.object(doc, "server");
            assertThat(peer.get("host")).as("its own UTS namespace").isEqualTo("perf-container");
            assertThat(((Number) peer.get("pid")).longValue()).as("its own PID namespace").isEqualTo(1);
            assertThat(doc.get("bootstrap")).isEqualTo("bootstrap through the shared directory " + shared + ", file conduit-perf-ct.addr");
            assertThat(server.waitFor(20, TimeUnit.SECONDS)).as("the server serves one client, then exits").isTrue();
            assertThat(server.exitValue()).as(drain(lines)).isZero();
            assertThat(shared.resolve("conduit-perf-ct.addr")).as("removed when the server exits").doesNotExist();
        } finally {
            if (server != null) server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            PerfPeer.deleteTree(shared);
            Files.deleteIfExists(mountPoint);
            Files.deleteIfExists(script);
        }
    }

    /** Checks a --json document of a SHORT run: every row measured, every number there and positive. */
    private static Map<String, Object> checkDocument(String json) {
        Map<String, Object> doc = JsonParser.parseObject(json);
        assertThat(doc).containsEntry("tool", "conduit perf").containsEntry("wakeup", "busy").containsKeys("transport", "date", "machine");
        assertThat(Json.object(doc, "client")).containsEntry("threadMode", "SINGLE");
        assertThat(Json.object(doc, "server")).containsEntry("threadMode", "SINGLE");
        List<Map<String, Object>> results = Json.objects(doc, "results");
        assertThat(results).hasSize(ROWS);
        assertThat(results.stream().map(r -> r.get("test") + (r.get("variant") == null ? "" : " " + r.get("variant"))).distinct())
                .containsExactly("am_lat", "am_bw", "put_lat", "put_bw", "get_lat", "atomic_lat", "ipc_import cached", "ipc_import uncached");
        for (Map<String, Object> r : results) {
            String row = r.get("test") + " " + r.get("variant") + " " + r.get("size");
            assertThat(r.get("skipped")).as(row).isNull();
            assertThat(((Number) r.get("iterations")).longValue()).as(row).isEqualTo(200);
            assertThat(((Number) r.get("warmupIterations")).longValue()).as(row).isEqualTo(50);
            assertThat(((Number) r.get("opsPerSecond")).doubleValue()).as(row).isPositive();
            if ("latency".equals(r.get("kind"))) {
                Map<String, Object> latency = Json.object(r, "latencyMicros");
                assertThat(((Number) latency.get("samples")).longValue()).as(row).isEqualTo(200);
                assertThat(((Number) latency.get("p50")).doubleValue()).as(row).isPositive();
                assertThat(((Number) latency.get("max")).doubleValue()).as(row).isGreaterThanOrEqualTo(((Number) latency.get("p99")).doubleValue());
            } else {
                assertThat(((Number) r.get("megabytesPerSecond")).doubleValue()).as(row).isPositive();
            }
        }
        Map<String, Object> uncached = results.stream().filter(r -> "uncached".equals(r.get("variant"))).findFirst().orElseThrow();
        assertThat(((Number) Json.object(uncached, "counters").get("cacheHits")).longValue()).isZero();
        assertThat(((Number) Json.object(uncached, "counters").get("cacheMisses")).longValue()).isEqualTo(200);
        return doc;
    }

    /** Reads the server's output until a line matches; returns the first group, or the whole match. */
    private static String awaitLine(BufferedReader lines, Pattern pattern) throws IOException {
        StringBuilder seen = new StringBuilder();
        for (String line; (line = lines.readLine()) != null; ) {
            seen.append(line).append('\n');
            Matcher m = pattern.matcher(line);
            if (m.find()) return m.groupCount() > 0 ? m.group(1) : m.group();
        }
        throw new AssertionError("the server ended without printing " + pattern + "; it printed:\n" + seen);
    }

    private static String drain(BufferedReader lines) {
        try {
            return lines.lines().collect(Collectors.joining("\n"));
        } catch (RuntimeException e) {
            return "(unreadable)";
        }
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }

    private static String[] concat(List<String> first, String... rest) {
        List<String> all = new ArrayList<>(first);
        all.addAll(List.of(rest));
        return all.toArray(String[]::new);
    }
}
