package dev.conduit.tools;

import org.HdrHistogram.Histogram;

import java.io.Serial;

/**
 * The latencies of one {@code conduit perf} row, in nanoseconds up to {@link PerfClient#HIGHEST_NANOS}, to 3 significant
 * digits, and the largest and smallest sample as they were: HdrHistogram's own {@link #getMaxValue()} is the highest value
 * of the largest sample's bucket, up to 1/1024 above it (a max of 8,028,123 ns reads 8,028,159; 10,000 reads 10,007), not a
 * sample taken.
 */
final class LatencyHistogram extends Histogram {

    @Serial private static final long serialVersionUID = 1L;

    private long largest = Long.MIN_VALUE;
    private long smallest = Long.MAX_VALUE;

    LatencyHistogram() {
        super(PerfClient.HIGHEST_NANOS, 3);
    }

    @Override
    public void recordValue(long value) {
        super.recordValue(value);
        sample(value);
    }

    @Override
    public void recordValueWithCount(long value, long count) {
        super.recordValueWithCount(value, count);
        if (count > 0) sample(value);
    }

    private void sample(long value) {
        if (value > largest) largest = value;
        if (value < smallest) smallest = value;
    }

    /** The largest sample recorded; 0 when none was. */
    long largest() {
        return getTotalCount() == 0 ? 0 : largest;
    }

    /** The smallest sample recorded; 0 when none was. */
    long smallest() {
        return getTotalCount() == 0 ? 0 : smallest;
    }
}
