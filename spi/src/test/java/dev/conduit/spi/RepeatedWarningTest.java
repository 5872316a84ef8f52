package dev.conduit.spi;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RepeatedWarningTest {

    private final List<String> warnings = new ArrayList<>();
    private final System.Logger logger = TestLoggers.keeping(warnings);

    @Test
    void theFirstIsLoggedAndTheRestOfTheIntervalOnlyCountedAndMadeNever() {
        RepeatedWarning warning = new RepeatedWarning(logger, Duration.ofMinutes(1));
        AtomicInteger made = new AtomicInteger();
        assertThat(warning.log(() -> "refused peer " + made.incrementAndGet())).isTrue();
        for (int i = 0; i < 1000; i++) assertThat(warning.log(() -> "refused peer " + made.incrementAndGet())).isFalse();
        assertThat(warnings).containsExactly("WARNING refused peer 1");
        assertThat(made).as("messages made").hasValue(1);
    }

    /** Out of descriptors the JDK's logging throws an Error at every record: the caller goes on to what it was doing. */
    @Test
    void aLoggerThatFailsCostsTheCallerNothingButTheJvmsOwnErrorsPropagate() {
        System.Logger failing = TestLoggers.failingAsOutOfDescriptors();
        RepeatedWarning warning = new RepeatedWarning(failing, Duration.ofMinutes(1));
        assertThat(warning.log(() -> "refused peer", new IllegalStateException("cause"))).as("not logged").isFalse();
        assertThat(new RepeatedWarning(logger, Duration.ofMinutes(1)).log(() -> {
            throw new IllegalStateException("a message that cannot be made");
        })).isFalse();
        assertThatThrownBy(() -> new RepeatedWarning(logger, Duration.ofMinutes(1)).log(() -> {
            throw new OutOfMemoryError("Java heap space");
        })).isInstanceOf(OutOfMemoryError.class);
    }

    @Test
    void theNextOneLoggedSaysHowManyWereHeldBack() {
        long[] now = {0};
        RepeatedWarning warning = new RepeatedWarning(logger, Duration.ofMillis(20), () -> now[0]);
        warning.log(() -> "first");
        now[0] = 19_999_999; // just inside the interval
        warning.log(() -> "held");
        warning.log(() -> "held");
        now[0] = 20_000_000;
        assertThat(warning.log(() -> "second")).isTrue();
        assertThat(warnings).containsExactly("WARNING first", "WARNING second (2 more like it since the last one logged; such warnings "
                + "are logged at most once every 20ms)");
    }

    /**
     * System.nanoTime() may be any long, and passes Long.MAX_VALUE to wrap to negative ones: the
     * interval is judged by difference, so that a warning just before the wrap holds back those just
     * after it. Judged as {@code now < lastLogged + interval}, the sum wraps first and the next
     * warning is logged at once, however soon it comes.
     */
    @Test
    void theIntervalHoldsAcrossTheWrapOfTheClock() {
        long[] now = {Long.MAX_VALUE - 5_000_000};
        RepeatedWarning warning = new RepeatedWarning(logger, Duration.ofMillis(20), () -> now[0]);
        assertThat(warning.log(() -> "first")).isTrue();
        now[0] += 1_000_000; // before the wrap
        assertThat(warning.log(() -> "held")).isFalse();
        now[0] += 10_000_000; // after it, 11 ms since the first
        assertThat(warning.log(() -> "held")).isFalse();
        now[0] += 9_000_000; // 20 ms since the first
        assertThat(warning.log(() -> "second")).isTrue();
        assertThat(warnings).containsExactly("WARNING first", "WARNING second (2 more like it since the last one logged; such warnings "
                + "are logged at most once every 20ms)");
    }

    /** Each count is of the interval just past, not of all so far; an interval of a second and a half is named in milliseconds. */
    @Test
    void eachOneLoggedCountsOnlyWhatWasHeldBackSinceTheLastOne() {
        long[] now = {0};
        RepeatedWarning warning = new RepeatedWarning(logger, Duration.ofMillis(1500), () -> now[0]);
        warning.log(() -> "first");
        warning.log(() -> "held");
        warning.log(() -> "held");
        now[0] = 1_500_000_000;
        warning.log(() -> "second");
        warning.log(() -> "held");
        now[0] = 3_000_000_000L;
        warning.log(() -> "third");
        assertThat(warnings).containsExactly("WARNING first",
                "WARNING second (2 more like it since the last one logged; such warnings are logged at most once every 1500ms)",
                "WARNING third (1 more like it since the last one logged; such warnings are logged at most once every 1500ms)");
    }

    /**
     * An interval that is no whole number of milliseconds is named as it is: until 2026-12-07 it was
     * named in whole milliseconds, cut down, so that one of 250us said "once every 0 ms", and one of
     * 1500us "once every 1 ms".
     */
    @Test
    void anIntervalIsNamedExactlyInTheLargestUnitThatSaysIt() {
        for (Duration interval : List.of(Duration.ofNanos(250_000), Duration.ofNanos(1_500_000), Duration.ofMinutes(1))) {
            warnings.clear();
            long[] now = {0};
            RepeatedWarning warning = new RepeatedWarning(logger, interval, () -> now[0]);
            warning.log(() -> "first");
            warning.log(() -> "held");
            now[0] = interval.toNanos();
            warning.log(() -> "second");
            assertThat(warnings).last().asString().endsWith("at most once every " + ConfigKey.durationText(interval) + ")");
        }
        assertThat(warnings).last().asString().endsWith("at most once every 1m)");
    }

    @Test
    void afterAResetTheNextIsLoggedAtOnce() {
        RepeatedWarning warning = new RepeatedWarning(logger, Duration.ofMinutes(1));
        warning.log(() -> "rebind failed");
        warning.log(() -> "rebind failed");
        warning.reset();
        warning.log(() -> "rebind failed again");
        assertThat(warnings).containsExactly("WARNING rebind failed", "WARNING rebind failed again");
    }

    @Test
    void anIntervalThatIsNotPositiveIsRefused() {
        assertThatThrownBy(() -> new RepeatedWarning(logger, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not positive");
    }
}
