package dev.conduit.tools;

import java.util.Map;

/**
 * One row of {@code conduit perf}: one test at one size.
 *
 * @param test         the test
 * @param variant      {@code cached} or {@code uncached} for ipc_import, else {@code null}
 * @param size         bytes per operation (8 for atomic_lat)
 * @param iterations   measured operations (round trips, messages, puts, gets, fetchAdds, imports)
 * @param warmup       operations done before, not recorded
 * @param elapsedNanos wall time of the measured operations
 * @param latency      nanoseconds per sample (one-way for ping-pong tests), or {@code null} for bandwidth tests and skipped rows
 * @param skipped      why the row was not measured, or {@code null}
 * @param counters     what else the test counted: the bytes the client's thread allocated in the measured loop
 *                     ({@code allocatedBytes}) and the server's from READY to END ({@code serverAllocatedBytes}),
 *                     and for ipc_import the IPC cache's hits and misses during it
 */
record PerfResult(PerfTest test, String variant, long size, long iterations, long warmup, long elapsedNanos, LatencyHistogram latency,
                  String skipped, Map<String, Long> counters) {

    PerfResult {
        counters = Map.copyOf(counters);
    }

    static PerfResult skipped(PerfTest test, String variant, long size, String why) {
        return new PerfResult(test, variant, size, 0, 0, 0, null, why, Map.of());
    }

    /** This row with one more counter. */
    PerfResult withCounter(String name, long value) {
        Map<String, Long> more = new java.util.HashMap<>(counters);
        more.put(name, value);
        return new PerfResult(test, variant, size, iterations, warmup, elapsedNanos, latency, skipped, more);
    }

    /** The test's name with its variant: {@code am_lat}, {@code ipc_import cached}. */
    String title() {
        return variant == null ? test.label() : test.label() + " " + variant;
    }

    boolean isSkipped() {
        return skipped != null;
    }

    /** Operations per second, or NaN when nothing was measured. */
    double opsPerSecond() {
        return elapsedNanos <= 0 || iterations <= 0 ? Double.NaN : iterations * 1e9 / elapsedNanos;
    }

    /** {@code size} bytes per operation times operations per second, in 10^6 bytes per second; NaN when the test moves no data. */
    double megabytesPerSecond() {
        return test.reportsBandwidth() ? size * opsPerSecond() / 1e6 : Double.NaN;
    }

    /** The latency at {@code percentile} (0..100) in microseconds, or NaN without a distribution. */
    double latencyMicros(double percentile) {
        if (latency == null || latency.getTotalCount() == 0) return Double.NaN;
        // HdrHistogram gives the top of the bucket that holds the percentile's sample; past the largest sample (one in that
        // sample's bucket) it read above the max, as p99.99 of fewer than 10,000 samples does.
        return Math.min(latency.getValueAtPercentile(percentile), latency.largest()) / 1e3;
    }

    double maxMicros() {
        return latency == null || latency.getTotalCount() == 0 ? Double.NaN : latency.largest() / 1e3;
    }

    double minMicros() {
        return latency == null || latency.getTotalCount() == 0 ? Double.NaN : latency.smallest() / 1e3;
    }

    double meanMicros() {
        if (latency == null || latency.getTotalCount() == 0) return Double.NaN;
        // HdrHistogram's mean is of its buckets' middles: samples that share a bucket read a mean past them (one sample of
        // 10,000 ns a mean of 10,004 ns). Held to the samples, as the percentiles are held to the largest.
        return Math.clamp(latency.getMean(), latency.smallest(), latency.largest()) / 1e3;
    }
}
