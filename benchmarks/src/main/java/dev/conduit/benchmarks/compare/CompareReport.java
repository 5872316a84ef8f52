package dev.conduit.benchmarks.compare;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The report of benchmarks/compare.sh: reads the peers' results (tab-separated
 * {@code peer transport test size metric value}) and the run's facts ({@code key=value} lines),
 * replaces the table between {@code <!-- compare:begin -->} and {@code <!-- compare:end -->} in
 * docs/performance.md and draws docs/img/compare.png.
 *
 * <pre>java -cp benchmarks.jar dev.conduit.benchmarks.compare.CompareReport RESULTS.tsv FACTS.txt PERFORMANCE.md CHART.png</pre>
 *
 * Ratios are always Conduit's figure divided by the peer's: for latency below 1 means Conduit is
 * faster, for bandwidth above 1 means Conduit is faster.
 */
public final class CompareReport {

    static final String BEGIN = "<!-- compare:begin -->";
    static final String END = "<!-- compare:end -->";
    static final long[] SIZES = {8, 4096, 65536, 1 << 20};
    static final String[] TESTS = {"am_lat", "am_bw", "put_bw"};

    /** A column of the table: a label, and where its figure comes from for a test. */
    record Peer(String label, String peer, String transport, Map<String, String> testFor) {
        String source(String test) {
            return testFor.get(test);
        }
    }

    /** The columns of the table and the chart, in order: Conduit memfd (what every ratio divides), Conduit posix, UCX over {@code ucxTransport}, then the rest. */
    private static List<Peer> peers(String ucxTransport) {
        return List.of(
                new Peer("Conduit memfd", "conduit", "memfd", Map.of("am_lat", "am_lat", "am_bw", "am_bw", "put_bw", "put_bw")),
                new Peer("Conduit posix", "conduit", "posix", Map.of("am_lat", "am_lat", "am_bw", "am_bw", "put_bw", "put_bw")),
                new Peer(ucxLabel(ucxTransport), "ucx", ucxTransport, Map.of("am_lat", "am_lat", "am_bw", "am_bw", "put_bw", "put_bw")),
                new Peer("C limit", "c", "-", Map.of("am_lat", "c_pingpong/am_lat", "am_bw", "c_memcpy/memcpy", "put_bw", "c_memcpy/memcpy")),
                new Peer("Java limit", "java_line", "-", Map.of("am_lat", "am_lat")),
                new Peer("Conduit queue alone", "conduit_queue", "-", Map.of("am_lat", "am_lat")),
                new Peer("Unix socket (JDK)", "uds", "-", Map.of("am_lat", "am_lat", "am_bw", "am_bw")),
                new Peer("Aeron IPC", "aeron", "-", Map.of("am_lat", "am_lat")),
                new Peer("Agrona ring buffer", "agrona", "-", Map.of("am_lat", "am_lat")));
    }

    private static String ucxLabel(String transport) {
        return "UCX " + transport;
    }

    /** What UCX was measured over: posix, or sm when compare.sh found posix failing (its results say which). */
    private String ucxTransport = "posix";
    private List<Peer> columns = peers(ucxTransport);

    /** One colour per column of the table, the same in every chart. */
    private static final Color[] PAINTS = {new Color(0xD62728), new Color(0xFF7F0E), new Color(0x1F77B4), Color.BLACK, Color.GRAY,
            new Color(0xE377C2), new Color(0x9467BD), new Color(0x2CA02C), new Color(0x8C564B)};

    /** Byte counts as the table writes them (8 B, 4 KiB, 1 MiB). */
    private static final class SizeFormat extends NumberFormat {
        private static final long serialVersionUID = 1L;

        @Override
        public StringBuffer format(double number, StringBuffer toAppendTo, FieldPosition pos) {
            return toAppendTo.append(sizeLabel(Math.round(number)));
        }

        @Override
        public StringBuffer format(long number, StringBuffer toAppendTo, FieldPosition pos) {
            return toAppendTo.append(sizeLabel(number));
        }

        @Override
        public Number parse(String source, ParsePosition parsePosition) {
            return null;
        }
    }

    private final Map<String, Double> values = new LinkedHashMap<>();
    private final Map<String, String> facts = new LinkedHashMap<>();

    private CompareReport() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 4) {
            System.err.println("usage: CompareReport RESULTS.tsv FACTS.txt PERFORMANCE.md CHART.png");
            System.exit(2);
        }
        System.setProperty("java.awt.headless", "true");
        CompareReport r = new CompareReport();
        r.read(Path.of(args[0]), Path.of(args[1]));
        String table = r.markdown();
        Path doc = Path.of(args[2]);
        String text = Files.readString(doc);
        int b = text.indexOf(BEGIN), e = text.indexOf(END);
        if (b < 0 || e < b) {
            text = text.stripTrailing() + "\n\n## Peers side by side\n\n" + BEGIN + "\n" + END + "\n";
            b = text.indexOf(BEGIN);
            e = text.indexOf(END);
        }
        text = text.substring(0, b + BEGIN.length()) + "\n" + table + text.substring(e);
        Files.writeString(doc, text);
        r.chart(Path.of(args[3]));
        System.out.print(table);
    }

    private void read(Path results, Path factsFile) throws IOException {
        for (String line : Files.readAllLines(results)) {
            String[] f = line.split("\t");
            if (f.length != 6) {
                continue;
            }
            try {
                values.put(key(f[0], f[1], f[2], Long.parseLong(f[3])), Double.parseDouble(f[5]));
                if (f[0].equals("ucx")) {
                    ucxTransport = f[1];
                }
            } catch (NumberFormatException ignored) {
                // a line that is not a result
            }
        }
        columns = peers(ucxTransport);
        for (String line : Files.readAllLines(factsFile)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                facts.merge(line.substring(0, eq), line.substring(eq + 1), (a, c) -> a + "; " + c);
            }
        }
    }

    private static String key(String peer, String transport, String test, long size) {
        return peer + "|" + transport + "|" + test + "|" + size;
    }

    /** The figure of a column for a test and size, or null. */
    Double value(Peer p, String test, long size) {
        String src = p.source(test);
        if (src == null) {
            return null;
        }
        if (p.peer().equals("c")) {
            String[] s = src.split("/");
            return values.get(key(s[0], "-", s[1], size));
        }
        return values.get(key(p.peer(), p.transport(), src, size));
    }

    /**
     * The report's line on the vCPUs' placement from compare.sh's probes ({@code "before Aeron IPC 0.2061; ...; after the
     * last peer 0.0512"}: the C ping-pong of 8 B, one way, in µs), and, when they differ by {@value #PLACEMENT_MOVED}x
     * or more, that the placement changed during the run: a ratio between peers measured in different placements then
     * compares the placements.
     */
    static String placement(String probes) {
        double min = Double.MAX_VALUE;
        double max = 0;
        StringBuilder listed = new StringBuilder();
        for (String probe : probes.split("; ")) {
            int space = probe.lastIndexOf(' ');
            double us;
            try {
                us = Double.parseDouble(probe.substring(space + 1));
            } catch (NumberFormatException e) {
                continue; // a probe whose ping-pong printed no figure says nothing
            }
            min = Math.min(min, us);
            max = Math.max(max, us);
            if (!listed.isEmpty()) listed.append(", ");
            listed.append(probe, 0, space).append(' ').append(String.format(Locale.ROOT, "%.3f", us));
        }
        if (listed.isEmpty()) return "no probe measured";
        String line = "the C ping-pong of 8 B (µs one way) " + listed;
        if (max / min < PLACEMENT_MOVED) return line;
        return line + String.format(Locale.ROOT, ". **It ranged from %.3f to %.3f µs: the vCPUs changed their placement on the "
                + "host during the run, so a ratio between peers measured in different placements compares the placements, not "
                + "the peers; read each peer against the probe before it, or run again**", min, max);
    }

    /**
     * How far apart the placement probes must lie for the report to say that the placement changed: on the project's VM
     * the probes of one placement lay up to 1.8x apart (0.155-0.273 µs), those of the two placements 2.5x and more
     * (0.041-0.062 against 0.155 and up). Those were measured with the ping-pong's two slots adjacent, which it made
     * about 30-40 % slower than slots a page apart do since 2026-12-06: to be measured again before it is changed.
     */
    static final double PLACEMENT_MOVED = 2.2;

    private String markdown() {
        StringBuilder sb = new StringBuilder();
        sb.append("- **When**: ").append(facts.getOrDefault("date", "?")).append("\n");
        sb.append("- **Command**: `").append(facts.getOrDefault("command", "benchmarks/compare.sh")).append("`\n");
        sb.append("- **Machine**: ").append(facts.getOrDefault("cpu", "?")).append(", ").append(facts.getOrDefault("cores", "?"))
                .append(" cores, kernel ").append(facts.getOrDefault("kernel", "?")).append(", ").append(facts.getOrDefault("java", "?")).append("\n");
        sb.append("- **Load average**: ").append(facts.getOrDefault("load_before", "?")).append(" before the run, ")
                .append(facts.getOrDefault("load_after", "?")).append(" after it\n");
        sb.append("- **Peers**: ").append(facts.getOrDefault("peers", "?")).append("\n");
        if (facts.containsKey("ucx")) {
            sb.append("- **UCX**: ").append(facts.get("ucx")).append("\n");
        }
        if (facts.containsKey("missing")) {
            sb.append("- **Not measured**: ").append(facts.get("missing")).append("\n");
        }
        if (facts.containsKey("placement")) {
            sb.append("- **Placement**: ").append(placement(facts.get("placement"))).append("\n");
        }
        sb.append("- **Noise**: ").append(facts.getOrDefault("noise",
                "2 cores: both sides of every measurement spin on one core each, so anything else running preempts them; "
                        + "the measurements ran one after another, and only figures from this one run are comparable.")).append("\n\n");
        sb.append("Latency is the p50 of one-way latency (round trip / 2) in µs; bandwidth is MB/s (10^6 bytes). ")
                .append("UCX's p50 is ucx_perftest's own, the median of its last 2048 round trips only (at 8 B about 1 % of its run). ")
                .append("Each peer's cell is its figure and, after it, Conduit memfd's figure divided by it (latency: below 1× Conduit is faster; ")
                .append("bandwidth: above 1× Conduit is faster). The C limit is a cache-line ping-pong with one memcpy of the payload per hop ")
                .append("(latency), and single-thread memcpy (bandwidth); the Java limit is the same ping-pong between two JVMs; Conduit queue alone is the shared-memory queue that memfd and posix put messages through, between two JVMs, with no transport or runtime on it (every size inline). The last column is Conduit posix's figure over ")
                .append(ucxLabel(ucxTransport)).append("'s: ").append(ucxTransport.equals("posix") ? "the same kind of transport on both sides"
                        : "shared memory on both sides, through UCX's " + ucxTransport + " transports (its posix transport failed in this run: see UCX above)")
                .append(".\n\n");
        sb.append("| test | size |");
        for (Peer p : columns) {
            sb.append(' ').append(p.label()).append(" |");
        }
        sb.append(" posix ÷ ").append(ucxLabel(ucxTransport)).append(" |\n|---|---:|");
        sb.append("---:|".repeat(columns.size() + 1)).append("\n");
        for (String test : TESTS) {
            boolean lat = test.endsWith("_lat");
            for (long size : SIZES) {
                Double conduit = value(columns.get(0), test, size);
                sb.append("| ").append(test).append(" | ").append(sizeLabel(size)).append(" |");
                for (int i = 0; i < columns.size(); i++) {
                    Double v = value(columns.get(i), test, size);
                    sb.append(' ');
                    if (v == null) {
                        sb.append('–');
                    } else {
                        sb.append(fmt(v, lat));
                        if (i >= 2 && conduit != null && v > 0) {
                            sb.append(" (").append(ratio(conduit / v)).append(')');
                        }
                    }
                    sb.append(" |");
                }
                Double posix = value(columns.get(1), test, size), ucx = value(columns.get(2), test, size);
                sb.append(' ').append(posix != null && ucx != null && ucx > 0 ? ratio(posix / ucx) : "–").append(" |\n");
            }
        }
        sb.append("\n![Peers side by side](img/compare.png)\n");
        return sb.toString();
    }

    static String sizeLabel(long size) {
        return size >= 1 << 20 ? (size >> 20) + " MiB" : size >= 1024 ? (size >> 10) + " KiB" : size + " B";
    }

    private static String fmt(double v, boolean lat) {
        if (lat) {
            return v < 10 ? String.format(Locale.ROOT, "%.3f µs", v) : String.format(Locale.ROOT, "%,.1f µs", v);
        }
        // A stream slowed to under 10 MB/s keeps two significant digits: a "0 MB/s" beside a ratio reads as an error.
        return v < 9.5 ? String.format(Locale.ROOT, "%.2g MB/s", v) : String.format(Locale.ROOT, "%,.0f MB/s", v);
    }

    /** Two significant digits below 1 (a Unix socket's 0.004× is not 0.00×), two decimals up to 10, none above. */
    private static String ratio(double r) {
        return r < 0.1 ? String.format(Locale.ROOT, "%.2g×", r) : r < 10 ? String.format(Locale.ROOT, "%.2f×", r)
                : String.format(Locale.ROOT, "%.0f×", r);
    }

    private void chart(Path file) throws IOException {
        int w = 760, h = 460, header = 40;
        BufferedImage image = new BufferedImage(w * TESTS.length, header + h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, image.getWidth(), image.getHeight());
            TextTitle title = new TextTitle("benchmarks/compare.sh, " + facts.getOrDefault("date", "") + ": "
                    + facts.getOrDefault("cpu", "") + ", " + facts.getOrDefault("cores", "?") + " cores, load "
                    + facts.getOrDefault("load_before", "?"), new Font(Font.SANS_SERIF, Font.BOLD, 14));
            title.setPaint(Color.BLACK);
            title.draw(g, new Rectangle2D.Double(0, 8, image.getWidth(), 26));
            for (int i = 0; i < TESTS.length; i++) {
                chartFor(TESTS[i]).draw(g, new Rectangle2D.Double(i * w, header, w, h));
            }
        } finally {
            g.dispose();
        }
        Files.createDirectories(file.toAbsolutePath().getParent());
        try (OutputStream out = Files.newOutputStream(file)) {
            ChartUtils.writeBufferedImageAsPNG(out, image);
        }
    }

    private JFreeChart chartFor(String test) {
        boolean lat = test.endsWith("_lat");
        XYSeriesCollection data = new XYSeriesCollection();
        List<Color> paints = new ArrayList<>();
        for (int k = 0; k < columns.size(); k++) {
            Peer p = columns.get(k);
            XYSeries s = new XYSeries(p.label());
            for (long size : SIZES) {
                Double v = value(p, test, size);
                if (v != null && v > 0) {
                    s.add(size, v);
                }
            }
            if (s.getItemCount() > 0) {
                data.addSeries(s);
                paints.add(PAINTS[k % PAINTS.length]);
            }
        }
        LogAxis x = new LogAxis("message size (bytes)");
        x.setBase(2);
        x.setSmallestValue(1);
        x.setTickUnit(new NumberTickUnit(2));
        x.setNumberFormatOverride(new SizeFormat());
        LogAxis y = new LogAxis(lat ? "p50 one-way latency (µs)" : "MB/s");
        y.setBase(10);
        y.setSmallestValue(lat ? 0.001 : 0.1);
        y.setTickUnit(new NumberTickUnit(1));
        y.setNumberFormatOverride(new DecimalFormat("#,##0.###", DecimalFormatSymbols.getInstance(Locale.ROOT)));
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        for (int i = 0; i < data.getSeriesCount(); i++) {
            renderer.setSeriesStroke(i, new BasicStroke(2f));
            renderer.setSeriesPaint(i, paints.get(i));
        }
        XYPlot plot = new XYPlot(data, x, y, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        JFreeChart chart = new JFreeChart(test + (lat ? " (lower is better)" : " (higher is better)"),
                new Font(Font.SANS_SERIF, Font.BOLD, 14), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }
}
