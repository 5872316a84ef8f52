package dev.conduit.tools;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * What a {@code conduit perf} client measures: tests, sizes, how long each runs and warms up, how
 * it waits.
 *
 * @param tests      in the order they run
 * @param sizes      bytes per operation, in the order given
 * @param iterations {@code -n}, or {@code null}: each test's default ({@link PerfTest#defaultIterations})
 * @param duration   {@code -d}, or {@code null}
 * @param warmup     {@code -w}, or {@code null}: a tenth of the measured iterations or duration
 * @param wakeup     how waiting loops wait
 * @param timeout    how long to wait for the peer (bootstrap, a reply, one operation) before giving up
 * @param peers      workers of the client connected to the server's worker: the measuring one, and
 *                   {@code peers - 1} that each send one message first and then stay connected and idle
 */
record PerfPlan(List<PerfTest> tests, List<Long> sizes, Long iterations, Duration duration, PerfParsing.Warmup warmup, Wakeup wakeup,
                Duration timeout, int peers) {

    /** How a loop that waits for the peer waits. */
    enum Wakeup {
        /** {@code worker.progress()} in a loop: lowest latency, one core busy (the default). */
        BUSY,
        /** {@code worker.progress()}, and {@code worker.await(...)} when it found nothing: sleeps on the transport's futex. */
        AWAIT;

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    PerfPlan {
        tests = List.copyOf(tests);
        sizes = List.copyOf(sizes);
    }

    /** The largest size any test uses: what the RMA regions must hold (at least one 64-bit word). */
    long largestSize() {
        return Math.max(8, sizes.stream().mapToLong(Long::longValue).max().orElse(8));
    }

    /** How long one measured run of {@code test} at {@code size} goes. */
    Phase measured(PerfTest test, long size, boolean uncached) {
        if (duration != null) return Phase.forDuration(duration);
        return Phase.forIterations(iterations != null ? iterations : test.defaultIterations(size, uncached));
    }

    /**
     * The warm-up before it, not recorded. Default: a tenth of the measurement, and at least
     * {@link #DEFAULT_WARMUP_MINIMUM} — on two cores a measurement that starts before the JIT
     * compilers of both JVMs are done sees their threads take a core for milliseconds at a time.
     * The first row of a run warms up for at least {@link #FIRST_WARMUP_MINIMUM}: before it, nothing
     * of the messaging path is compiled yet in either JVM.
     */
    Phase warmup(PerfTest test, long size, boolean uncached, boolean first) {
        if (warmup != null) {
            return warmup.isDuration() ? Phase.forDuration(warmup.duration()) : Phase.forIterations(warmup.iterations());
        }
        Duration minimum = first ? FIRST_WARMUP_MINIMUM : DEFAULT_WARMUP_MINIMUM;
        if (duration != null) return Phase.forDuration(max(duration.dividedBy(10), minimum));
        long n = iterations != null ? iterations : test.defaultIterations(size, uncached);
        return new Phase(n / 10, minimum.toNanos());
    }

    /** The shortest default warm-up of a run's first row. */
    static final Duration FIRST_WARMUP_MINIMUM = Duration.ofSeconds(2);

    /** The shortest default warm-up. */
    static final Duration DEFAULT_WARMUP_MINIMUM = Duration.ofMillis(300);

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    /** A number of iterations, a duration, or both (a phase then lasts until both are reached); {@link #none()} when both are zero. */
    record Phase(long iterations, long nanos) {
        static Phase forIterations(long n) {
            return new Phase(n, 0);
        }

        static Phase forDuration(Duration d) {
            return new Phase(0, d.toNanos());
        }

        boolean none() {
            return iterations == 0 && nanos == 0;
        }

        boolean timed() {
            return nanos > 0;
        }
    }
}
