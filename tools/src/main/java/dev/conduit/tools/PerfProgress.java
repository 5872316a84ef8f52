package dev.conduit.tools;

import java.io.PrintWriter;

/**
 * The live progress line on a terminal: {@code \r}-updated at most every 200 ms, between samples
 * (never inside a timed operation), and cleared before anything else is printed. Off unless the
 * process has a terminal ({@code System.console()}), so piped and redirected output stays clean.
 */
final class PerfProgress {

    private static final long INTERVAL_NANOS = 200_000_000L;

    private final PrintWriter out;
    private final boolean enabled;
    private String label = "";
    private long total;
    private long phaseStart;
    private long phaseNanos;
    private long next;
    private int shown;

    private PerfProgress(PrintWriter out, boolean enabled) {
        this.out = out;
        this.enabled = enabled;
    }

    /** On when this process has a terminal. */
    static PerfProgress onTerminal(PrintWriter out) {
        java.io.Console console = System.console();
        return new PerfProgress(out, console != null && console.isTerminal());
    }

    static PerfProgress off() {
        return new PerfProgress(null, false);
    }

    /** A new phase: {@code total} iterations, or, when 0, a duration of {@code nanos}. */
    void start(String label, long total, long nanos) {
        if (!enabled) return;
        this.label = label;
        this.total = total;
        this.phaseStart = System.nanoTime();
        this.phaseNanos = nanos;
        this.next = 0;
    }

    /** Called between samples with the iterations done and the current time: cheap unless it is time to redraw. */
    void tick(long done, long now) {
        if (enabled && now - next >= 0) draw(done, now);
    }

    private void draw(long done, long now) {
        next = now + INTERVAL_NANOS;
        String where = total > 0
                ? String.format("%,d/%,d", done, total)
                : String.format("%.1f/%.1f s", (now - phaseStart) / 1e9, phaseNanos / 1e9);
        String line = "conduit perf: " + label + "  " + where;
        out.print("\r" + line + " ".repeat(Math.max(0, shown - line.length())));
        out.flush();
        shown = line.length();
    }

    /** Erases the line. */
    void clear() {
        if (!enabled || shown == 0) return;
        out.print("\r" + " ".repeat(shown) + "\r");
        out.flush();
        shown = 0;
    }
}
