package dev.conduit.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The three renderings of a run — table, JSON, PNG — on a made-up run, so that no number here depends on this machine. */
class PerfOutputTest {

    private static PerfRun run() {
        List<PerfResult> results = new ArrayList<>();
        for (long size : new long[] {8, 4096}) {
            results.add(new PerfResult(PerfTest.AM_LAT, null, size, 1000, 100, 2_000_000, histogram(300 + size / 10), null,
                    Map.of("allocatedBytes", 0L)));
            results.add(new PerfResult(PerfTest.AM_BW, null, size, 100_000, 10_000, 50_000_000, null, null, Map.of()));
        }
        results.add(new PerfResult(PerfTest.ATOMIC_LAT, null, 8, 1000, 100, 100_000, histogram(50), null, Map.of()));
        results.add(new PerfResult(PerfTest.IPC_IMPORT, "uncached", 8, 1000, 100, 200_000_000, histogram(200_000), null,
                Map.of("cacheHits", 0L, "cacheMisses", 1000L)));
        results.add(PerfResult.skipped(PerfTest.GET_LAT, null, 1 << 30, "larger than the server's region"));
        PerfRun.Peer client = new PerfRun.Peer(100, "host", "SINGLE", "OWNER_CHECK", List.of("memfd", "posix"));
        PerfRun.Peer server = new PerfRun.Peer(1, "perf-container", "SINGLE", "OWNER_CHECK", List.of("memfd"));
        return new PerfRun("1.0", Instant.parse("2026-01-02T03:04:05Z"), "memfd", "busy", 1, client, server, "spawned", 21.5,
                new PerfRun.Machine("Some CPU \u00ae", 2, "6.1.0", "25", "VM", "0.50 0.40 0.30"), results);
    }

    /** {@link #run()}'s header with {@code results} as its rows. */
    private static PerfRun runOf(List<PerfResult> results) {
        PerfRun base = run();
        return new PerfRun(base.version(), base.date(), base.transport(), base.wakeup(), base.peers(), base.client(), base.server(),
                base.bootstrap(), base.timerNanos(), base.machine(), results);
    }

    /** 1000 samples around {@code nanos}, with a tail. */
    private static LatencyHistogram histogram(long nanos) {
        LatencyHistogram h = new LatencyHistogram();
        for (int i = 0; i < 1000; i++) h.recordValue(nanos + i % 50 + (i == 999 ? nanos * 20 : 0));
        return h;
    }

    @Test
    void theTableHasAHeaderAndOneRowPerSize() {
        StringWriter text = new StringWriter();
        PrintWriter out = new PrintWriter(text);
        PerfRun run = run();
        PerfText.header(run, out);
        PerfText.table(run.results().subList(0, 1), out);
        PerfText.table(List.of(run.results().get(1), run.results().get(3)), out);
        PerfText.table(run.results().subList(5, 6), out);
        out.flush();
        String s = text.toString();

        assertThat(s).contains("transport    memfd", "thread mode  client SINGLE (OWNER_CHECK), server SINGLE (OWNER_CHECK)", "wakeup       busy", "peers        1",
                "client       pid 100 on host", "server       pid 1 on perf-container", "2 cores", "load average 0.50 0.40 0.30");
        assertThat(s).contains("am_lat: active-message ping-pong", "size", "iterations", "ops/s", "MB/s", "p50", "p90", "p99", "p99.9", "p99.99", "max");
        // 1000 round trips in 2 ms: 500,000 ops/s; 8 bytes each: 4.0 MB/s; p50 of ~300 ns: 0.3 µs.
        assertThat(s).containsPattern("\\s8\\s+1,000\\s+500,000\\s+4\\.0\\s+0\\.3\\d\\d\\s");
        // bandwidth rows have no latency columns
        assertThat(s).containsPattern("\\s4k\\s+100,000\\s+2,000,000\\s+8,192\\.0\\s+-\\s+-\\s+-\\s+-\\s+-\\s+-");
        assertThat(s).contains("ipc_import uncached: ").containsPattern("\\s8\\s+1,000\\s+5,000\\s+-\\s+200");
    }

    /**
     * A latency-critical reader judges by the tail: p99.9, p99.99 and max, each its own figure.
     * 100,000 samples, 99,900 of them at 1 µs, 90 at 50 µs and 10 at 1 ms: p99.9 is the 99,900th
     * (1 µs), p99.99 the 99,990th (50 µs), max the last (1 ms).
     */
    @Test
    void theTailIsGivenAsP99Point9P99Point99AndMaxInTheTableAndTheJson() {
        LatencyHistogram h = new LatencyHistogram();
        h.recordValueWithCount(1_000, 99_900);
        h.recordValueWithCount(50_000, 90);
        h.recordValueWithCount(1_000_000, 10);
        PerfResult row = new PerfResult(PerfTest.AM_LAT, null, 8, 100_000, 1000, 200_000_000, h, null, Map.of());
        PerfRun run = runOf(List.of(row));

        StringWriter text = new StringWriter();
        PerfText.table(run.results(), new PrintWriter(text, true));
        assertThat(text.toString()).containsPattern("p99\\.9 \\S+\\s+p99\\.99 \\S+\\s+max ")
                .containsPattern("\\s1\\.00\\s+50\\.0\\s+1,000\\s*$");

        StringWriter json = new StringWriter();
        PerfJson.write(run, new PrintWriter(json));
        Map<String, Object> latency = Json.object(Json.objects(JsonParser.parseObject(json.toString()), "results").getFirst(), "latencyMicros");
        assertThat(((Number) latency.get("p99.9")).doubleValue()).isEqualTo(1.0);
        assertThat(((Number) latency.get("p99.99")).doubleValue()).isCloseTo(50.0, within(0.1)); // HdrHistogram's 3 digits
        assertThat(((Number) latency.get("max")).doubleValue()).isEqualTo(1000.0);
    }

    /**
     * A slow row's rate is a figure, not zero: 300 round trips of 8 bytes in one second (a loaded machine) are 2,400 B/s,
     * which the table printed as {@code 0.0} MB/s and the JSON as {@code 0.002}; and 20 of 1 byte, 20 B/s, as {@code 0}.
     */
    @Test
    void aRateBelowOneMegabyteASecondKeepsItsDigitsInTheTableAndTheJson() {
        PerfRun run = runOf(List.of(
                new PerfResult(PerfTest.AM_LAT, null, 8, 300, 30, 1_000_000_000, histogram(3_000_000), null, Map.of()),
                new PerfResult(PerfTest.AM_LAT, null, 1, 20, 2, 1_000_000_000, histogram(3_000_000), null, Map.of())));

        StringWriter text = new StringWriter();
        PerfText.table(run.results(), new PrintWriter(text, true));
        assertThat(text.toString()).containsPattern("\\s8\\s+300\\s+300\\s+0\\.00240\\s")
                .containsPattern("\\s1\\s+20\\s+20\\s+0\\.0000200\\s");

        StringWriter json = new StringWriter();
        PerfJson.write(run, new PrintWriter(json));
        List<Map<String, Object>> rows = Json.objects(JsonParser.parseObject(json.toString()), "results");
        assertThat(((Number) rows.get(0).get("megabytesPerSecond")).doubleValue()).isEqualTo(0.0024);
        assertThat(((Number) rows.get(1).get("megabytesPerSecond")).doubleValue()).isEqualTo(0.00002);
        assertThat(PerfText.megabytes(8_729.149)).isEqualTo("8,729.1");
        assertThat(PerfText.megabytes(0.9996)).isEqualTo("1.00");
        assertThat(PerfText.megabytes(1)).as("one decimal from 1 MB/s on").isEqualTo("1.0");
    }

    /**
     * A latency keeps about three significant digits: three decimals below 1 µs, two below 10, one below 100, none from 100 on,
     * each bound the first value of the next form.
     */
    @Test
    void aLatencyKeepsAboutThreeSignificantDigitsOnEitherSideOfEachBound() {
        assertThat(Stream.of(0.999, 1.0, 9.99, 10.0, 99.9, 100.0).map(PerfText::latency).toList())
                .containsExactly("0.999", "1.00", "9.99", "10.0", "99.9", "100");
    }

    /**
     * The max is the largest sample as it was taken, in the table and the JSON, as is the min: HdrHistogram's own max is
     * the top of the largest sample's bucket, so a slowest round trip of 8,028,123 ns read 8,028.159 µs in the JSON, one of
     * 43,029,049 ns 43,057 µs in the table, and a fastest of 2,049,000 ns, 2,048 µs.
     */
    @Test
    void theMaxAndMinAreTheSamplesTakenNotTheirBucketsEdges() {
        LatencyHistogram h = new LatencyHistogram();
        h.recordValueWithCount(2_100, 998);
        h.recordValue(2_049_000);
        h.recordValue(8_028_123);
        PerfResult row = new PerfResult(PerfTest.AM_LAT, null, 8, 1000, 100, 20_000_000, h, null, Map.of());
        PerfResult small = new PerfResult(PerfTest.AM_LAT, null, 8, 1000, 100, 20_000_000, histogram(2_049_000), null, Map.of());
        PerfRun run = runOf(List.of(row, small));

        StringWriter json = new StringWriter();
        PerfJson.write(run, new PrintWriter(json));
        List<Map<String, Object>> rows = Json.objects(JsonParser.parseObject(json.toString()), "results");
        Map<String, Object> latency = Json.object(rows.getFirst(), "latencyMicros");
        assertThat(((Number) latency.get("max")).doubleValue()).isEqualTo(8028.123);
        // p99.99 of 1000 samples is the largest: the sample, not its bucket's top above the max
        assertThat(((Number) latency.get("p99.99")).doubleValue()).isEqualTo(8028.123);
        assertThat(((Number) latency.get("min")).doubleValue()).isEqualTo(2.1);
        assertThat(((Number) Json.object(rows.get(1), "latencyMicros").get("min")).doubleValue()).isEqualTo(2049.0);

        StringWriter text = new StringWriter();
        PerfText.table(List.of(small), new PrintWriter(text, true));
        // 1000 samples of 2,049,000 + i % 50 ns, the last 20 times as long: max 43,029,049 ns, the top of its bucket 43,057,151.
        assertThat(text.toString()).containsPattern("\\s43,029\\s+43,029\\s*$");
    }

    /**
     * The mean lies between the min and the max, the samples themselves: HdrHistogram's mean is of its buckets' middles, so
     * that a row whose samples all fall in one bucket (one sample of 10,000 ns, bucket 10,000-10,007) read a mean of
     * 10.004 µs above its max of 10.000 µs, as the percentiles read above the max before they were held to it.
     */
    @Test
    void theMeanIsNeverAboveTheMaxNorBelowTheMin() {
        LatencyHistogram h = new LatencyHistogram();
        h.recordValue(10_000);
        PerfResult row = new PerfResult(PerfTest.AM_LAT, null, 8, 1, 0, 20_000, h, null, Map.of());

        assertThat(row.meanMicros()).isBetween(row.minMicros(), row.maxMicros());
    }

    @Test
    void aSkippedRowSaysWhy() {
        StringWriter text = new StringWriter();
        PerfText.table(List.of(run().results().getLast()), new PrintWriter(text, true));

        assertThat(text.toString()).contains("1g  skipped: larger than the server's region");
    }

    @Test
    @SuppressWarnings("unchecked")
    void theJsonDocumentIsWellFormedWithEveryField() {
        StringWriter text = new StringWriter();
        PerfJson.write(run(), new PrintWriter(text));
        Map<String, Object> doc = JsonParser.parseObject(text.toString());

        assertThat(doc).containsEntry("tool", "conduit perf").containsEntry("transport", "memfd").containsEntry("wakeup", "busy")
                .containsKeys("version", "date", "bootstrap", "timerNanos");
        assertThat(((Number) doc.get("peers")).intValue()).isEqualTo(1);
        assertThat(Json.object(doc, "client")).containsEntry("host", "host").containsKeys("pid", "threadMode", "threadPolicy", "transports");
        assertThat(Json.object(doc, "server")).containsEntry("host", "perf-container");
        Map<String, Object> machine = Json.object(doc, "machine");
        assertThat(machine).containsKeys("cpu", "cores", "kernel", "java", "vm", "load");
        assertThat(machine.get("cpu")).isEqualTo("Some CPU \u00ae");
        assertThat(text.toString()).contains("\\u00ae").isASCII();

        List<Map<String, Object>> results = Json.objects(doc, "results");
        assertThat(results).hasSize(7);
        Map<String, Object> amLat = results.getFirst();
        assertThat(amLat).containsEntry("test", "am_lat").containsEntry("kind", "latency").containsEntry("skipped", null)
                .containsKeys("method", "size", "iterations", "warmupIterations", "elapsedNanos", "opsPerSecond", "megabytesPerSecond");
        Map<String, Object> latency = Json.object(amLat, "latencyMicros");
        assertThat(latency).containsKeys("samples", "oneWay", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max");
        for (String p : List.of("min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max")) {
            assertThat(((Number) latency.get(p)).doubleValue()).as(p).isPositive();
        }
        assertThat(((Number) amLat.get("opsPerSecond")).doubleValue()).isPositive();

        Map<String, Object> amBw = results.get(1);
        assertThat(amBw).containsEntry("kind", "bandwidth").containsEntry("latencyMicros", null);
        assertThat(((Number) amBw.get("megabytesPerSecond")).doubleValue()).isPositive();

        Map<String, Object> atomic = results.get(4);
        assertThat(atomic).containsEntry("test", "atomic_lat").containsEntry("megabytesPerSecond", null);

        Map<String, Object> ipc = results.get(5);
        assertThat(ipc).containsEntry("variant", "uncached");
        assertThat(Json.object(ipc, "counters")).containsEntry("cacheMisses", java.math.BigDecimal.valueOf(1000));

        assertThat(results.getLast()).containsEntry("skipped", "larger than the server's region").doesNotContainKey("iterations");
    }

    @Test
    void plotWritesAReadablePng(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("perf.png");

        PerfPlot.write(run(), png);

        assertThat(png).isRegularFile();
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image).isNotNull();
        assertThat(image.getWidth()).isPositive();
        assertThat(image.getHeight()).isPositive();
        byte[] bytes = Files.readAllBytes(png);
        assertThat(new String(bytes, 1, 3, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("PNG");
    }

    /**
     * {@code -s 8,8} (or {@code -s 1k,1024}) measures a size twice, as a look at the run's own noise: the table and the JSON
     * have both rows, and so has the chart. Each size's curve was a series keyed by its size alone, and JFreeChart refuses
     * a second series of one key, so that the run, measured to its end, failed with its IllegalArgumentException ("This
     * dataset already contains a series with the key 8 B") and wrote no chart.
     */
    @Test
    void aSizeMeasuredTwiceIsDrawnTwice(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("perf.png");
        List<PerfResult> rows = new ArrayList<>();
        for (long size : new long[] {8, 1024, 8, 1024}) {
            rows.add(new PerfResult(PerfTest.AM_LAT, null, size, 1000, 100, 2_000_000, histogram(300 + size), null, Map.of()));
        }

        PerfPlot.write(runOf(rows), png);

        assertThat(ImageIO.read(png.toFile())).isNotNull();
        assertThat(PerfPlot.seriesNames(rows)).containsExactly("8 B", "1k B", "8 B (2)", "1k B (2)");
    }

    /**
     * A plot written to a full file system (a full /tmp) failed with ImageIO's "javax.imageio.IIOException: I/O error
     * writing PNG file!", which hides the cause; /dev/full fails every write with ENOSPC. Its file system has room, so
     * freeing space there is no remedy: the error said "(ENOSPC): free space there" when the reason's words were the
     * English "No space left on device" (and not under another locale), and now judges by the free space alone. The errno
     * is named, in the words the check before the run uses: the error quoted the JDK's reason alone, in the process's
     * locale, with no errno. (PerfRunTest writes to a tmpfs that is full, in German too.)
     */
    @Test
    void aPlotThatCannotBeWrittenSaysWhy() {
        assumeTrue(Files.exists(Path.of("/dev/full")), "no /dev/full here");
        assumeFalse(PerfPeer.tooFull(Path.of("/dev/full"), 1 << 20), "/dev is full here");

        assertThatThrownBy(() -> PerfPlot.write(run(), Path.of("/dev/full")))
                .hasMessageMatching("--plot: cannot write /dev/full \\(\\d+ bytes\\): ENOSPC \\(No space left on device\\): give another --plot file")
                .hasMessageNotContaining("I/O error writing PNG file");
        assertThat(Path.of("/dev/full")).exists();
    }

    /**
     * A plot is written whole into a file beside it, then renamed over it: given a symbolic link (a
     * latest.png that names the newest of many), the rename replaced the link with the plot and left
     * the file it named as it was; a write through the link, as before, updated that file.
     */
    @Test
    void aPlotGivenASymbolicLinkIsWrittenToTheFileItNamesAndLeavesTheLink(@TempDir Path dir) throws Exception {
        Path target = Files.writeString(dir.resolve("run-7.png"), "the previous plot");
        Path link = Files.createSymbolicLink(dir.resolve("latest.png"), target.getFileName());

        PerfPlot.write(run(), link);

        assertThat(link).isSymbolicLink();
        assertThat(Files.readSymbolicLink(link)).isEqualTo(target.getFileName());
        assertThat(ImageIO.read(target.toFile())).as("the file the link names holds the plot").isNotNull();
        try (var leftovers = Files.list(dir)) {
            assertThat(leftovers).as("no partial file is left beside it").containsExactlyInAnyOrder(target, link);
        }
    }

    /**
     * A symbolic link that names a file not made yet (latest.png set to the next run's name before the run) is followed as
     * one whose file exists: the plot is made as the file it names, in that file's directory, and the link stays. The
     * rename replaced the link itself with the plot, and the file the link named was never made.
     */
    @Test
    void aPlotGivenASymbolicLinkToAFileNotMadeYetMakesThatFileAndLeavesTheLink(@TempDir Path dir) throws Exception {
        Path runs = Files.createDirectory(dir.resolve("runs"));
        Path target = runs.resolve("run-8.png");
        Path link = Files.createSymbolicLink(dir.resolve("latest.png"), dir.relativize(target));

        PerfPlot.write(run(), link);

        assertThat(link).isSymbolicLink();
        assertThat(Files.readSymbolicLink(link)).isEqualTo(dir.relativize(target));
        assertThat(ImageIO.read(target.toFile())).as("the file the link names holds the plot").isNotNull();
        try (var leftovers = Files.list(runs)) {
            assertThat(leftovers).as("no partial file is left beside it").containsExactly(target);
        }
    }

    /**
     * A plot written over one the user kept to themselves (mode 0600, or another owner's file root writes over) keeps that
     * file's mode and owner: the plot is a new file renamed over the old one, which got 0666 less the umask and the writer
     * as its owner, so that a private plot became readable by every user.
     */
    @Test
    void aPlotWrittenOverAnotherKeepsThatFilesModeAndOwner(@TempDir Path dir) throws Exception {
        Path png = Files.writeString(dir.resolve("perf.png"), "the previous plot");
        Files.setPosixFilePermissions(png, PosixFilePermissions.fromString("rw-------"));
        boolean root = (int) Files.getAttribute(dir, "unix:uid") == 0 && "root".equals(System.getProperty("user.name"));
        if (root) Files.setAttribute(png, "unix:uid", 1000);

        PerfPlot.write(run(), png);

        assertThat(ImageIO.read(png.toFile())).as("the plot was written").isNotNull();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(png))).isEqualTo("rw-------");
        if (root) assertThat((int) Files.getAttribute(png, "unix:uid")).as("the previous plot's owner").isEqualTo(1000);
    }
}
