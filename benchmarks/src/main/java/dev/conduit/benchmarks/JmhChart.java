package dev.conduit.benchmarks;

import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.CategoryLabelPositions;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.category.StatisticalBarRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.RangeType;
import org.jfree.data.statistics.DefaultStatisticalCategoryDataset;

import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Draws JMH's JSON results as bar charts, one per benchmark method (and mode), into one PNG:
 * {@code JmhChart [RESULT.json [CHART.png]]}, by default {@code benchmarks/target/jmh-result.json}
 * and {@code benchmarks/target/jmh.png} (not the recorded chart in {@code docs/img}, which a run with the defaults
 * replaced until 2026-12-06). Bars are the scores, error bars JMH's 99.9 % confidence
 * half-width ({@code scoreError}) when it has one; the first {@code @Param} picks the bar's series
 * (colour), the others its category, so {@code MessagingBenchmark.pingPong} shows memfd and posix
 * side by side for each size. Runs headless.
 */
public final class JmhChart {

    private static final int COLUMNS = 2, WIDTH = 640, HEIGHT = 380;
    private static final Color[] PAINTS = {new Color(0x1F77B4), new Color(0xFF7F0E), new Color(0x2CA02C),
            new Color(0xD62728), new Color(0x9467BD), new Color(0x8C564B)};

    private JmhChart() {
    }

    public static void main(String[] args) {
        if (args.length > 2) {
            System.err.println("usage: JmhChart [RESULT.json [CHART.png]]");
            System.exit(2);
        }
        System.setProperty("java.awt.headless", "true");
        Path in = Path.of(args.length > 0 ? args[0] : "benchmarks/target/jmh-result.json");
        Path out = Path.of(args.length > 1 ? args[1] : "benchmarks/target/jmh.png");
        try {
            draw(in, out);
        } catch (NoSuchFileException e) {
            System.err.println("JmhChart: " + e.getFile() + " does not exist (paths are relative to the working directory: "
                    + "run from the tree's root, or name the result and the chart)");
            System.exit(1);
        } catch (IOException e) {
            System.err.println("JmhChart: " + e.getMessage());
            System.exit(1);
        } catch (RuntimeException e) { // malformed JSON, or a result without the members JMH writes
            System.err.println("JmhChart: " + in + " is not a JMH JSON result: " + e);
            System.exit(1);
        }
    }

    /** Draws the charts of the JMH result {@code in} into {@code out}; fails naming the problem with {@code in}. */
    static void draw(Path in, Path out) throws IOException {
        String text = Files.readString(in);
        // JMH empties the result file as a run starts and writes it at the end: an empty one is a run that did not end
        // well, which the JSON parser would only call an unexpected end at offset 0.
        if (text.isBlank()) {
            throw new IOException(in + " is empty: the JMH run that wrote it failed, was stopped, or matched no benchmark "
                    + "(JMH empties the file as it starts and writes the results at its end); run the benchmarks again");
        }
        Object parsed = new Json(text).value();
        if (!(parsed instanceof List<?> results)) throw new IOException(in + ": not a JMH JSON result (an array)");

        // benchmark (short name + mode) -> dataset, and its unit
        Map<String, DefaultStatisticalCategoryDataset> datasets = new LinkedHashMap<>();
        Map<String, String> units = new LinkedHashMap<>();
        for (Object o : results) {
            Map<?, ?> r = (Map<?, ?>) o;
            String name = (String) r.get("benchmark");
            name = name.substring(name.lastIndexOf('.', name.lastIndexOf('.') - 1) + 1); // Class.method
            String key = name + " (" + r.get("mode") + ")";
            Map<?, ?> metric = (Map<?, ?>) r.get("primaryMetric");
            double score = number(metric.get("score"));
            double error = number(metric.get("scoreError"));
            units.put(key, String.valueOf(metric.get("scoreUnit")));
            List<String> values = new ArrayList<>();
            if (r.get("params") instanceof Map<?, ?> params) {
                for (Object v : params.values()) values.add(String.valueOf(v));
            }
            String series = values.isEmpty() ? "score" : values.getFirst();
            String category = values.size() <= 1 ? (values.isEmpty() ? "-" : values.getFirst()) : String.join(" ", values.subList(1, values.size()));
            datasets.computeIfAbsent(key, k -> new DefaultStatisticalCategoryDataset())
                    .add(score, Double.isFinite(error) ? error : 0.0, series, category);
        }
        if (datasets.isEmpty()) throw new IOException(in + ": no results (every benchmark of the run failed, or none matched)");

        int n = datasets.size(), cols = Math.min(COLUMNS, n), rows = (n + cols - 1) / cols;
        BufferedImage image = new BufferedImage(cols * WIDTH, rows * HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, image.getWidth(), image.getHeight());
        int i = 0;
        for (var e : datasets.entrySet()) {
            JFreeChart chart = chart(e.getKey(), units.get(e.getKey()), e.getValue());
            chart.draw(g, new Rectangle2D.Double((i % cols) * WIDTH, (i / cols) * HEIGHT, WIDTH, HEIGHT));
            i++;
        }
        g.dispose();
        if (out.toAbsolutePath().getParent() != null) Files.createDirectories(out.toAbsolutePath().getParent());
        try (OutputStream os = Files.newOutputStream(out)) {
            ChartUtils.writeBufferedImageAsPNG(os, image);
        }
        System.out.println("JmhChart: " + n + " chart(s) of " + results.size() + " result(s) from " + in + " -> " + out);
    }

    private static JFreeChart chart(String title, String unit, DefaultStatisticalCategoryDataset data) {
        CategoryAxis x = new CategoryAxis();
        if (data.getColumnCount() > 6) x.setCategoryLabelPositions(CategoryLabelPositions.UP_45);
        NumberAxis y = new NumberAxis(unit);
        y.setAutoRangeIncludesZero(true);
        y.setRangeType(RangeType.POSITIVE); // an error bar wider than its score is cut at 0
        StatisticalBarRenderer bars = new StatisticalBarRenderer();
        bars.setErrorIndicatorPaint(Color.BLACK);
        bars.setDrawBarOutline(false);
        bars.setShadowVisible(false);
        bars.setItemMargin(0.05);
        for (int s = 0; s < data.getRowCount(); s++) bars.setSeriesPaint(s, PAINTS[s % PAINTS.length]);
        CategoryPlot plot = new CategoryPlot(data, x, y, bars);
        plot.setOrientation(PlotOrientation.VERTICAL);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        JFreeChart chart = new JFreeChart(null, JFreeChart.DEFAULT_TITLE_FONT, plot, data.getRowCount() > 1);
        chart.setTitle(new TextTitle(title, new Font(Font.SANS_SERIF, Font.BOLD, 14)));
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    /** A JSON number, or JMH's "NaN" (a string) as NaN. */
    private static double number(Object o) {
        if (o instanceof Number n) return n.doubleValue();
        if (o instanceof String s) {
            try {
                return Double.parseDouble(s);
            } catch (NumberFormatException e) {
                return Double.NaN;
            }
        }
        return Double.NaN;
    }

    /** Just enough JSON for JMH's output: objects (as insertion-ordered maps), arrays, strings, numbers, literals. */
    static final class Json {
        private final String s;
        private int p;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            ws();
            if (p >= s.length()) throw error("unexpected end");
            char c = s.charAt(p);
            switch (c) {
                case '{' -> {
                    p++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (peek('}')) return m;
                    do {
                        ws();
                        String k = string();
                        ws();
                        expect(':');
                        m.put(k, value());
                        ws();
                    } while (take(','));
                    expect('}');
                    return m;
                }
                case '[' -> {
                    p++;
                    List<Object> l = new ArrayList<>();
                    ws();
                    if (peek(']')) return l;
                    do {
                        l.add(value());
                        ws();
                    } while (take(','));
                    expect(']');
                    return l;
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    int start = p;
                    while (p < s.length() && ",}] \t\r\n".indexOf(s.charAt(p)) < 0) p++;
                    String t = s.substring(start, p);
                    return switch (t) {
                        case "true" -> Boolean.TRUE;
                        case "false" -> Boolean.FALSE;
                        case "null" -> null;
                        default -> {
                            try {
                                yield Double.parseDouble(t);
                            } catch (NumberFormatException e) {
                                throw error("bad token '" + t + "'");
                            }
                        }
                    };
                }
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (p >= s.length()) throw error("unterminated string");
                char c = s.charAt(p++);
                if (c == '"') return b.toString();
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(p++);
                switch (e) {
                    case 'n' -> b.append('\n');
                    case 't' -> b.append('\t');
                    case 'r' -> b.append('\r');
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'u' -> {
                        b.append((char) Integer.parseInt(s.substring(p, p + 4), 16));
                        p += 4;
                    }
                    default -> b.append(e);
                }
            }
        }

        private void ws() {
            while (p < s.length() && Character.isWhitespace(s.charAt(p))) p++;
        }

        private boolean peek(char c) {
            if (p < s.length() && s.charAt(p) == c) {
                p++;
                return true;
            }
            return false;
        }

        private boolean take(char c) {
            return peek(c);
        }

        private void expect(char c) {
            if (!peek(c)) throw error("expected '" + c + "'");
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("JSON: " + what + " at offset " + p);
        }
    }
}
