package dev.conduit.tools;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFlags;
import dev.conduit.spi.ConduitException;
import org.HdrHistogram.HistogramIterationValue;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import javax.imageio.ImageIO;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code conduit perf --plot FILE.png}: one PNG with, for every latency test, the latency
 * distribution (one percentile curve per size, HdrHistogram's usual log "nines" axis), and for the
 * bandwidth tests MB/s by message size. Each chart is drawn by JFreeChart, headless, into one image.
 */
final class PerfPlot {

    private static final int CHART_WIDTH = 800;
    private static final int CHART_HEIGHT = 480;
    private static final int HEADER_HEIGHT = 56;

    private PerfPlot() {
    }

    /** Whether {@code run} has a row to draw: one that was measured, not skipped. */
    static boolean hasData(PerfRun run) {
        return run.results().stream().anyMatch(r -> !r.isSkipped());
    }

    /** Draws the charts of {@code run} into {@code file} (PNG); it must have a row to draw ({@link #hasData}). */
    static void write(PerfRun run, Path file) {
        // Before any AWT class loads: no display is needed, or wanted.
        System.setProperty("java.awt.headless", "true");
        List<JFreeChart> charts = new ArrayList<>();
        Map<String, List<PerfResult>> latencyTests = new LinkedHashMap<>();
        List<PerfResult> bandwidth = new ArrayList<>();
        for (PerfResult r : run.results()) {
            if (r.isSkipped()) continue;
            if (r.latency() != null && r.latency().getTotalCount() > 0) {
                latencyTests.computeIfAbsent(r.title(), k -> new ArrayList<>()).add(r);
            } else if (r.test().kind() == PerfTest.Kind.BANDWIDTH) {
                bandwidth.add(r);
            }
        }
        latencyTests.forEach((title, rows) -> charts.add(latencyChart(title, rows)));
        if (!bandwidth.isEmpty()) charts.add(bandwidthChart(bandwidth));
        if (charts.isEmpty()) throw new ConduitException("--plot: no test produced data to draw");

        int columns = charts.size() == 1 ? 1 : 2;
        int rows = (charts.size() + columns - 1) / columns;
        BufferedImage image = new BufferedImage(columns * CHART_WIDTH, HEADER_HEIGHT + rows * CHART_HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, image.getWidth(), image.getHeight());
            TextTitle title = new TextTitle(headerLine(run), new Font(Font.SANS_SERIF, Font.BOLD, 14));
            title.setPaint(Color.BLACK);
            title.arrange(g);
            title.draw(g, new Rectangle2D.Double(0, 4, image.getWidth(), 28));
            TextTitle machine = new TextTitle(machineLine(run), new Font(Font.SANS_SERIF, Font.PLAIN, 11));
            machine.setPaint(Color.DARK_GRAY);
            machine.arrange(g);
            machine.draw(g, new Rectangle2D.Double(0, 30, image.getWidth(), 22));
            for (int i = 0; i < charts.size(); i++) {
                int x = (i % columns) * CHART_WIDTH;
                int y = HEADER_HEIGHT + (i / columns) * CHART_HEIGHT;
                charts.get(i).draw(g, new Rectangle2D.Double(x, y, CHART_WIDTH, CHART_HEIGHT));
            }
        } finally {
            g.dispose();
        }
        // Encoded in memory first: ImageIO reports a failed write as "I/O error writing PNG file!", hiding its cause.
        // And without ImageIO's cache file in java.io.tmpdir, which failed every plot where /tmp is full.
        ImageIO.setUseCache(false);
        ByteArrayOutputStream png = new ByteArrayOutputStream();
        try {
            ChartUtils.writeBufferedImageAsPNG(png, image);
        } catch (IOException e) {
            throw new ConduitException("--plot: cannot encode the PNG for " + file + ": " + e, e);
        }
        try {
            writeWhole(file, png.toByteArray());
        } catch (ErrnoException e) {
            // Judged by the free space, not by the errno: /dev/full says ENOSPC on a file system with room.
            String remedy = PerfPeer.tooFull(file, png.size()) ? "free space there or give another --plot file" : "give another --plot file";
            throw new ConduitException("--plot: cannot write " + file + " (" + png.size() + " bytes): " + inWords(e, "", remedy), e);
        } catch (IOException e) {
            throw new ConduitException("--plot: cannot write " + file + " (" + png.size() + " bytes): " + PerfPeer.reason(e)
                    + "; give another --plot file", e);
        }
    }

    /**
     * Why no file can be made in {@code dir}, as the errno names it with what that means there and what to do, or null when
     * one can. Found by making one and removing it, before the run: a permission check passes root on a file system that
     * holds none (procfs), where the chart's write failed after the run, its ENOENT taken for a full disk. Through the
     * system calls, for the errno itself: the JDK's exception named the probe's own file, which the user never chose
     * ("java.nio.file.NoSuchFileException: /proc/.conduit-perf-plot123.probe"), and its reason is in the process's locale.
     */
    static String whyNoFileIn(Path dir) {
        Libc libc = Linux.libc();
        String name = ".conduit-perf-plot-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong()) + ".probe";
        // O_PATH: search permission is all a directory needs to make a file in it, not read permission too.
        try (FileDescriptor directory = libc.open(dir.toString(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY, 0)) {
            libc.openat(directory, name, OpenFlags.O_WRONLY | OpenFlags.O_CREAT | OpenFlags.O_EXCL | OpenFlags.O_NOFOLLOW, 0600).close();
            libc.unlinkat(directory, name, 0);
            return null;
        } catch (ErrnoException e) {
            String meaning = switch (e.errnoName()) {
                case "ENOENT" -> ", though it exists: its file system makes no new files (procfs, for one)";
                case "EACCES", "EPERM" -> ", this user may not create files there";
                case "EROFS" -> ", it is mounted read-only";
                case "ENOSPC", "EDQUOT" -> ", its file system has no room for one";
                default -> "";
            };
            return inWords(e, meaning, "give a file in a writable directory of a file system that holds files");
        }
    }

    /**
     * {@code e}'s errno as the --plot errors name it: its name and words, the same in any locale (strerror's, which the JDK
     * quotes, are the process's), then {@code meaning} and what to do: {@code remedy}, or the shortage's remedy for
     * {@code EMFILE}/{@code ENFILE}.
     */
    private static String inWords(ErrnoException e, String meaning, String remedy) {
        return e.errnoName() + " (" + Errno.description(e.errno()) + ")" + meaning + ": " + Errno.remedy(e.errno(), remedy);
    }

    /**
     * Writes {@code bytes} as {@code file}, whole or not at all: into a new file beside it, renamed
     * over it once written, so that a failure (a full file system) leaves neither a file cut short
     * nor a previous plot overwritten in part, and removes nothing it did not create. What is not a
     * regular file (a device such as {@code /dev/stdout}) is written in place: renaming over it would
     * replace it. A symbolic link is followed, as a write through it would be: renamed over, the link
     * would be replaced and the file it names left as it was.
     */
    private static void writeWhole(Path file, byte[] bytes) throws IOException {
        Libc libc = Linux.libc();
        if (Files.exists(file) && !Files.isRegularFile(file)) {
            try (FileDescriptor out = libc.open(file.toString(), OpenFlags.O_WRONLY | OpenFlags.O_TRUNC, 0)) {
                writeAll(libc, out, bytes);
            }
            return;
        }
        Path target = landing(file);
        String name = target.getFileName().toString();
        String partial = "." + name + "." + Long.toHexString(System.nanoTime()) + ".partial";
        // Through the system calls, as whyNoFileIn makes its probe: a failure carries the kernel's errno, not the JDK's
        // reason in the process's locale.
        try (FileDescriptor directory = libc.open(target.getParent().toString(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY, 0)) {
            // Mode 0666 less the umask: the mode a new file gets here (createTempFile's 0600 would hide the plot from others).
            FileDescriptor out = libc.openat(directory, partial, OpenFlags.O_WRONLY | OpenFlags.O_CREAT | OpenFlags.O_EXCL
                    | OpenFlags.O_NOFOLLOW, 0666);
            try {
                try (out) {
                    if (Files.isRegularFile(target)) keepModeAndOwner(libc, target, directory, partial, out);
                    writeAll(libc, out, bytes);
                }
                libc.renameat(directory, partial, name);
            } catch (RuntimeException e) {
                try {
                    libc.unlinkat(directory, partial, 0);
                } catch (RuntimeException cleanup) {
                    e.addSuppressed(cleanup);
                }
                throw e;
            }
        }
    }

    /**
     * Gives the plot that replaces {@code previous} that file's permissions, and its owner where this process may (root
     * writing over a user's plot; as {@code cp -p} does, an owner this user may not give is not given: {@code EPERM}): a
     * new file gets 0666 less the umask and this process as its owner, so that a plot kept private (0600) became
     * readable by every user once written over.
     */
    private static void keepModeAndOwner(Libc libc, Path previous, FileDescriptor directory, String partial, FileDescriptor out)
            throws IOException {
        libc.fchmod(out, (int) Files.getAttribute(previous, "unix:mode") & 07777);
        int uid = (int) Files.getAttribute(previous, "unix:uid");
        int gid = (int) Files.getAttribute(previous, "unix:gid");
        FileStatus made = libc.fstat(out);
        if (made.uid() == uid && made.gid() == gid) return;
        try {
            libc.fchownat(directory, partial, uid, gid, 0);
        } catch (ErrnoException e) {
            if (!"EPERM".equals(e.errnoName())) throw e;
        }
    }

    /** The most links followed from a --plot file, as the kernel's path walk follows at most 40 before ELOOP. */
    private static final int MAX_LINKS = 40;

    /**
     * The file a write to {@code file} would land in: a symbolic link's, followed to its end also when that names a file not
     * made yet (a latest.png set to the next run's name), which a write through the link creates. Taken as it was, such a link
     * was renamed over, replaced by the plot, and the file it named never made; the check before the run judges this file's
     * directory.
     */
    static Path landing(Path file) throws IOException {
        if (Files.exists(file)) return file.toRealPath();
        Path p = file.toAbsolutePath();
        for (int links = 0; Files.isSymbolicLink(p); links++) {
            if (links == MAX_LINKS) {
                throw new FileSystemException(file.toString(), null, "ELOOP (" + Errno.description(Errno.ELOOP) + ")");
            }
            p = p.resolveSibling(Files.readSymbolicLink(p));
        }
        return p;
    }

    /** write(2) until all of {@code bytes} is written: a write may take fewer. */
    private static void writeAll(Libc libc, FileDescriptor out, byte[] bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(Math.max(1, bytes.length));
            MemorySegment.copy(bytes, 0, buffer, ValueLayout.JAVA_BYTE, 0, bytes.length);
            long written = 0;
            while (written < bytes.length) written += libc.write(out, buffer.asSlice(written, bytes.length - written));
        }
    }

    private static String headerLine(PerfRun run) {
        return "conduit perf: " + run.transport() + ", " + run.client().threadMode() + ", wakeup " + run.wakeup()
                + ", pids " + run.client().pid() + " / " + run.server().pid();
    }

    private static String machineLine(PerfRun run) {
        PerfRun.Machine m = run.machine();
        return m.cpu() + ", " + m.cores() + " cores, " + m.kernel() + ", Java " + m.java() + ", load " + m.load() + ", " + run.date();
    }

    /** Percentile curves, one per size: x is 1 / (1 - percentile), on a log axis labelled in percent. */
    private static JFreeChart latencyChart(String title, List<PerfResult> rows) {
        XYSeriesCollection data = new XYSeriesCollection();
        List<String> names = seriesNames(rows);
        for (int i = 0; i < rows.size(); i++) {
            PerfResult r = rows.get(i);
            XYSeries series = new XYSeries(names.get(i), false, true);
            LatencyHistogram h = r.latency();
            long total = h.getTotalCount();
            for (HistogramIterationValue v : h.percentiles(5)) {
                double p = v.getPercentileLevelIteratedTo() / 100;
                // The last point (100%) has no finite x: place it where one sample in `total` would be.
                double x = p >= 1 ? Math.max(1, total) : 1 / (1 - p);
                series.add(Math.min(x, Math.max(1, total)), Math.max(0.001, Math.min(v.getValueIteratedTo(), h.largest()) / 1e3));
            }
            data.addSeries(series);
        }
        LogAxis percentile = logAxis("percentile", 10, 1, new PercentileFormat());
        LogAxis latency = logAxis("latency (" + PerfText.micros() + (rows.getFirst().test().halvedRoundTrip() ? ", one-way)" : ")"), 10, 0.001,
                plainNumbers());
        XYPlot plot = new XYPlot(data, percentile, latency, new XYLineAndShapeRenderer(true, false));
        style(plot);
        JFreeChart chart = new JFreeChart(title + " - latency distribution", new Font(Font.SANS_SERIF, Font.BOLD, 14), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    /**
     * The legend's name of each row's curve: its size, and for a size measured again ({@code -s 8,8}, {@code -s 1k,1024})
     * which time it is ({@code 8 B (2)}): a chart's series need names of their own.
     */
    static List<String> seriesNames(List<PerfResult> rows) {
        Map<String, Integer> seen = new HashMap<>();
        List<String> names = new ArrayList<>();
        for (PerfResult r : rows) {
            String size = (r.test().sized() ? PerfParsing.formatSize(r.size()) : "8") + " B";
            int time = seen.merge(size, 1, Integer::sum);
            names.add(time == 1 ? size : size + " (" + time + ")");
        }
        return names;
    }

    /** MB/s by size, one line per bandwidth test. */
    private static JFreeChart bandwidthChart(List<PerfResult> rows) {
        Map<String, XYSeries> byTest = new LinkedHashMap<>();
        for (PerfResult r : rows) {
            double mbs = r.megabytesPerSecond();
            if (!Double.isFinite(mbs) || mbs <= 0) continue;
            byTest.computeIfAbsent(r.title(), t -> new XYSeries(t, true, true)).add(r.size(), mbs);
        }
        XYSeriesCollection data = new XYSeriesCollection();
        byTest.values().forEach(data::addSeries);
        LogAxis size = logAxis("message size (bytes)", 2, 1, new SizeFormat());
        LogAxis mbs = logAxis("MB/s (10^6 bytes per second)", 10, 0.001, plainNumbers());
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        XYPlot plot = new XYPlot(data, size, mbs, renderer);
        style(plot);
        JFreeChart chart = new JFreeChart("bandwidth by message size", new Font(Font.SANS_SERIF, Font.BOLD, 14), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    /** A log axis with a tick at every power of {@code base}, labelled by {@code format}. */
    private static LogAxis logAxis(String label, double base, double smallest, NumberFormat format) {
        LogAxis axis = new LogAxis(label);
        axis.setBase(base);
        axis.setSmallestValue(smallest);
        axis.setTickUnit(new NumberTickUnit(1));
        axis.setNumberFormatOverride(format);
        return axis;
    }

    private static NumberFormat plainNumbers() {
        NumberFormat f = NumberFormat.getNumberInstance(Locale.ROOT);
        f.setMaximumFractionDigits(3);
        return f;
    }

    private static void style(XYPlot plot) {
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    }

    /** Labels x = 1 / (1 - p) as the percentile p: 1 is 0%, 10 is 90%, 1000 is 99.9%. */
    private static final class PercentileFormat extends NumberFormat {
        @java.io.Serial
        private static final long serialVersionUID = 1L;

        @Override
        public StringBuffer format(double x, StringBuffer to, FieldPosition pos) {
            double p = 100 * (1 - 1 / x);
            String s = p <= 0 ? "0" : String.format(Locale.ROOT, "%.6f", p).replaceAll("0+$", "").replaceAll("\\.$", "");
            return to.append(s).append('%');
        }

        @Override
        public StringBuffer format(long x, StringBuffer to, FieldPosition pos) {
            return format((double) x, to, pos);
        }

        @Override
        public Number parse(String source, ParsePosition pos) {
            return null;
        }
    }

    /** Labels sizes as on the command line: 8, 4k, 1m. */
    private static final class SizeFormat extends NumberFormat {
        @java.io.Serial
        private static final long serialVersionUID = 1L;

        @Override
        public StringBuffer format(double x, StringBuffer to, FieldPosition pos) {
            long v = Math.round(x);
            return to.append(v >= 1 ? PerfParsing.formatSize(v) : String.format(Locale.ROOT, "%.2g", x));
        }

        @Override
        public StringBuffer format(long x, StringBuffer to, FieldPosition pos) {
            return format((double) x, to, pos);
        }

        @Override
        public Number parse(String source, ParsePosition pos) {
            return null;
        }
    }
}
