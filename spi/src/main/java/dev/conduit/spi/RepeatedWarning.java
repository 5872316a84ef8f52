package dev.conduit.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A WARNING that a peer, or a fault that persists, can cause again and again: logged at most
 * once per interval, with how many were held back since the last one logged. A plugin logs what
 * a peer sends it wrong, so that its user learns of a broken or hostile peer; a peer that repeats
 * it as fast as it can connect must not flood the log. Thread-safe.
 *
 * <p>Best effort: a warning that cannot be made or logged costs its caller nothing, for it is
 * said on the way to something that matters more (a check of the peers, a close, the next turn
 * of a serving loop): {@link BestEffortLog}. (Until 2026-12-07 the logger's failure reached the
 * caller.)
 */
public final class RepeatedWarning {

    private final System.Logger logger;
    private final LongSupplier nanoTime;
    private final long intervalNanos;
    private final String interval;
    private long lastLogged;
    private boolean logged;
    private long heldBack;

    /**
     * @param logger   where the warnings go
     * @param interval the least time between two of them
     */
    public RepeatedWarning(System.Logger logger, Duration interval) {
        this(logger, interval, System::nanoTime);
    }

    /** With the clock {@code nanoTime} reads, for tests that move time themselves. */
    RepeatedWarning(System.Logger logger, Duration interval, LongSupplier nanoTime) {
        this.logger = Objects.requireNonNull(logger, "logger");
        this.nanoTime = nanoTime;
        if (interval.isNegative() || interval.isZero()) throw new IllegalArgumentException("interval " + interval + " is not positive");
        this.intervalNanos = interval.toNanos();
        // Exact: until 2026-12-07 whole milliseconds, cut down, so that 250us read "once every 0 ms".
        this.interval = ConfigKey.durationText(interval);
    }

    /**
     * Logs the warning {@code message} makes, unless one was logged less than the interval ago:
     * then only counts it. The message is made only when it is logged.
     *
     * @return whether it was logged (false also when making or logging it failed)
     */
    public boolean log(Supplier<String> message) {
        return log(message, null);
    }

    /**
     * As {@link #log(Supplier)}, with {@code thrown} (may be {@code null}) logged with the message.
     *
     * @return whether it was logged
     */
    public boolean log(Supplier<String> message, Throwable thrown) {
        long held;
        synchronized (this) {
            long now = nanoTime.getAsLong();
            if (logged && now - lastLogged < intervalNanos) {
                heldBack++;
                return false;
            }
            held = heldBack;
            heldBack = 0;
            logged = true;
            lastLogged = now;
        }
        Supplier<String> text = () -> message.get() + (held == 0 ? ""
                : " (" + held + " more like it since the last one logged; such warnings are logged at most once every " + interval + ")");
        return BestEffortLog.warn(logger, text, thrown);
    }

    /** Forgets the last one logged (the fault it told of is over): the next is logged at once. */
    public synchronized void reset() {
        logged = false;
        heldBack = 0;
    }
}
