package dev.conduit.benchmarks.compare;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The report compare.sh writes: its line on the vCPUs' placement, from the script's probes, and what its figures are. */
class CompareReportTest {

    @Test
    void theReportSaysUcxsP50IsOfItsLastRoundTripsOnly(@TempDir Path dir) throws Exception {
        Path results = Files.writeString(dir.resolve("results.tsv"), "ucx\tposix\tam_lat\t8\tp50_us\t0.5\n");
        Path facts = Files.writeString(dir.resolve("facts.txt"), "");
        Path doc = Files.writeString(dir.resolve("performance.md"), "# Performance\n");

        CompareReport.main(new String[] {results.toString(), facts.toString(), doc.toString(), dir.resolve("chart.png").toString()});

        assertThat(Files.readString(doc)).contains("UCX's p50 is ucx_perftest's own, the median of its last 2048 round trips only");
    }

    @Test
    void probesWithinOnePlacementAreListedWithoutAWarning() {
        // As in one run on the project's VM, every probe in the slow placement: they spread, and stay under 2.2x.
        String line = CompareReport.placement("before Conduit memfd 0.2750; before the Java limit 0.1660; after the last peer 0.2030");

        assertThat(line).isEqualTo("the C ping-pong of 8 B (µs one way) before Conduit memfd 0.275, before the Java limit 0.166, "
                + "after the last peer 0.203");
    }

    @Test
    void probesMoreThanTwiceApartSayThePlacementChanged() {
        String line = CompareReport.placement("before Conduit memfd 0.0485; before Aeron IPC 0.2061");

        assertThat(line).startsWith("the C ping-pong of 8 B (µs one way) before Conduit memfd 0.049, before Aeron IPC 0.206. ")
                .contains("ranged from 0.049 to 0.206 µs", "changed their placement", "read each peer against the probe before it");
    }

    @Test
    void aProbeWithoutAFigureIsLeftOut() {
        assertThat(CompareReport.placement("before UCX ; before the Unix socket 0.0500")).isEqualTo(
                "the C ping-pong of 8 B (µs one way) before the Unix socket 0.050");
        assertThat(CompareReport.placement("before UCX")).isEqualTo("no probe measured");
    }
}
