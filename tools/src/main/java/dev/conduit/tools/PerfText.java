package dev.conduit.tools;

import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.charset.Charset;
import java.util.List;
import java.util.Locale;

/**
 * The text form of a {@code conduit perf} run: a header naming transport, thread mode, wake-up,
 * both processes and the machine, then one table per test, printed as each test ends. Plain
 * aligned text, no colors; latencies in microseconds.
 */
final class PerfText {

    private static final String ROW = "%10s %11s %13s %11s %9s %9s %9s %9s %9s %9s%n";

    private PerfText() {
    }

    /** {@code µs} where the output can show it, else {@code us}. */
    static String micros() {
        String encoding = System.getProperty("stdout.encoding", Charset.defaultCharset().name());
        try {
            return Charset.forName(encoding).newEncoder().canEncode('\u00b5') ? "\u00b5s" : "us";
        } catch (RuntimeException e) {
            return "us";
        }
    }

    static void header(PerfRun run, PrintWriter out) {
        PerfRun.Peer c = run.client();
        PerfRun.Peer s = run.server();
        out.println("conduit perf " + run.version() + ", " + run.date());
        // The server's fields are what its WELCOME said: shown escaped, so that a peer's control characters forge no line here.
        out.println("  transport    " + run.transport() + "   (client worker: " + String.join(", ", c.transports()) + "; server worker: "
                + SharedFiles.shown(String.join(", ", s.transports())) + ")");
        out.println("  thread mode  client " + c.threadMode() + " (" + c.threadPolicy() + "), server " + SharedFiles.shown(s.threadMode())
                + " (" + SharedFiles.shown(s.threadPolicy()) + ")");
        out.println("  wakeup       " + run.wakeup());
        out.println("  peers        " + run.peers() + (run.peers() == 1 ? "   (one worker connected to the server's)"
                : "   (workers connected to the server's: the measuring one and " + (run.peers() - 1) + " idle ones)"));
        out.println("  client       pid " + c.pid() + " on " + c.host());
        out.println("  server       pid " + s.pid() + " on " + SharedFiles.shown(s.host()) + "   (" + run.bootstrap() + ")");
        PerfRun.Machine m = run.machine();
        out.println("  machine      " + m.cpu() + ", " + m.cores() + " cores, kernel " + m.kernel() + ", Java " + m.java() + ", load average "
                + m.load());
        out.println(String.format(Locale.ROOT, "  timer        System.nanoTime, %.0f ns a call (inside every latency sample)", run.timerNanos()));
        out.flush();
    }

    /** One test's table. */
    static void table(List<PerfResult> rows, PrintWriter out) {
        if (rows.isEmpty()) return;
        PerfResult first = rows.getFirst();
        String u = micros();
        out.println();
        out.println(first.title() + ": " + first.test().method());
        out.printf(Locale.ROOT, ROW, "size", "iterations", "ops/s", "MB/s", "p50 " + u, "p90 " + u, "p99 " + u, "p99.9 " + u, "p99.99 " + u,
                "max " + u);
        for (PerfResult r : rows) {
            if (r.isSkipped()) {
                out.printf(Locale.ROOT, "%10s  skipped: %s%n", PerfParsing.formatSize(r.size()), SharedFiles.shown(r.skipped())); // READY's reason, the server's words
                continue;
            }
            out.printf(Locale.ROOT, ROW, PerfParsing.formatSize(r.size()), String.format(Locale.ROOT, "%,d", r.iterations()),
                    number(r.opsPerSecond(), 0), megabytes(r.megabytesPerSecond()),
                    latency(r.latencyMicros(50)), latency(r.latencyMicros(90)), latency(r.latencyMicros(99)),
                    latency(r.latencyMicros(99.9)), latency(r.latencyMicros(99.99)), latency(r.maxMicros()));
        }
        out.flush();
    }

    private static String number(double v, int decimals) {
        if (Double.isNaN(v)) return "-";
        return String.format(Locale.ROOT, "%,." + decimals + "f", v);
    }

    /**
     * MB/s with one decimal, and below 1 with three significant digits: a slow row (a ping-pong of 1 byte with
     * {@code --wakeup await}, a loaded machine) is never printed as {@code 0.0}, which reads as nothing moved.
     */
    static String megabytes(double v) {
        if (Double.isNaN(v)) return "-";
        if (v >= 1 || v == 0) return number(v, 1);
        return new BigDecimal(v).round(new MathContext(3, RoundingMode.HALF_EVEN)).toPlainString();
    }

    /** Microseconds with about three significant digits; {@code -} when there is no distribution. */
    static String latency(double micros) {
        if (Double.isNaN(micros)) return "-";
        if (micros < 1) return String.format(Locale.ROOT, "%.3f", micros);
        if (micros < 10) return String.format(Locale.ROOT, "%.2f", micros);
        if (micros < 100) return String.format(Locale.ROOT, "%.1f", micros);
        return String.format(Locale.ROOT, "%,.0f", micros);
    }
}
