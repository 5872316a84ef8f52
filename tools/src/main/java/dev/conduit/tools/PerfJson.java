package dev.conduit.tools;

import java.io.PrintWriter;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code conduit perf --json}: one JSON document with what the table shows and the machine. Members
 * are only ever added, never renamed or removed. Numbers that do not apply (MB/s of atomics,
 * latencies of bandwidth tests) are {@code null}.
 */
final class PerfJson {

    private PerfJson() {
    }

    /**
     * Why a run stopped before it completed, for the {@code error} member of its document.
     *
     * @param during  the row or warm-up it was measuring ({@link PerfClient#phase()})
     * @param message the failure's message, as standard error gives it: for a spawned server, with its last lines
     */
    record Stop(String during, String message) {
    }

    /** The document of a completed run: no {@code error} member, as before runs that failed had a document at all. */
    static void write(PerfRun run, PrintWriter out) {
        write(run, null, out);
    }

    /**
     * The document of {@code run}; for a run that failed ({@code stop} not null), with the rows measured before
     * and an {@code error} member saying where and why it stopped. Members are only added, so a reader of
     * completed runs reads these too: it tells them by {@code error}, or by the exit code 1.
     */
    static void write(PerfRun run, Stop stop, PrintWriter out) {
        JsonWriter json = new JsonWriter(out);
        json.beginObject()
                .member("tool", "conduit perf")
                .member("version", run.version())
                .member("date", run.date().toString())
                .member("transport", run.transport())
                .member("wakeup", run.wakeup())
                .member("peers", run.peers())
                .member("bootstrap", run.bootstrap())
                .member("timerNanos", run.timerNanos(), 1);
        peer(json, "client", run.client());
        peer(json, "server", run.server());
        PerfRun.Machine m = run.machine();
        json.name("machine").beginObject()
                .member("cpu", m.cpu())
                .member("cores", m.cores())
                .member("kernel", m.kernel())
                .member("java", m.java())
                .member("vm", m.vm())
                .member("load", m.load())
                .endObject();
        json.name("results").beginArray();
        for (PerfResult r : run.results()) result(json, r);
        json.endArray();
        if (stop != null) {
            json.name("error").beginObject()
                    .member("during", stop.during())
                    .member("message", stop.message())
                    .endObject();
        }
        json.endObject();
        json.finish();
        out.println();
        out.flush();
    }

    private static void peer(JsonWriter json, String name, PerfRun.Peer p) {
        json.name(name).beginObject()
                .member("pid", p.pid())
                .member("host", p.host())
                .member("threadMode", p.threadMode())
                .member("threadPolicy", p.threadPolicy());
        strings(json, "transports", p.transports());
        json.endObject();
    }

    private static void strings(JsonWriter json, String name, List<String> values) {
        json.name(name).beginArray();
        values.forEach(json::value);
        json.endArray();
    }

    private static void result(JsonWriter json, PerfResult r) {
        json.beginObject()
                .member("test", r.test().label())
                .member("variant", r.variant())
                .member("kind", r.test().isLatency() ? "latency" : "bandwidth")
                .member("method", r.test().method())
                .member("size", r.size())
                .member("skipped", r.skipped());
        if (!r.isSkipped()) {
            json.member("iterations", r.iterations())
                    .member("warmupIterations", r.warmup())
                    .member("elapsedNanos", r.elapsedNanos())
                    .member("opsPerSecond", r.opsPerSecond(), 1)
                    // To the byte per second: at 3 decimals, a row under 500 B/s (a slow ping-pong of a few bytes) read 0.
                    .member("megabytesPerSecond", r.megabytesPerSecond(), 6);
            json.name("latencyMicros");
            if (r.latency() == null) {
                json.nullValue();
            } else {
                json.beginObject()
                        .member("samples", r.latency().getTotalCount())
                        .member("oneWay", r.test().halvedRoundTrip())
                        .member("min", r.minMicros(), 3)
                        .member("mean", r.meanMicros(), 3)
                        .member("p50", r.latencyMicros(50), 3)
                        .member("p90", r.latencyMicros(90), 3)
                        .member("p99", r.latencyMicros(99), 3)
                        .member("p99.9", r.latencyMicros(99.9), 3)
                        .member("p99.99", r.latencyMicros(99.99), 3)
                        .member("max", r.maxMicros(), 3)
                        .endObject();
            }
        }
        json.name("counters").beginObject();
        for (Map.Entry<String, Long> e : new TreeMap<>(r.counters()).entrySet()) json.member(e.getKey(), e.getValue());
        json.endObject();
        json.endObject();
    }
}
