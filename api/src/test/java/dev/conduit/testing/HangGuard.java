package dev.conduit.testing;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Bounded waits of tests that fail saying what never ended: a hang, not a slow run. The bound is
 * never what a test asserts; speed is measured by JMH and {@code conduit perf}.
 */
public final class HangGuard {

    /** How long a hang guard waits: far past anything a loaded 2-core CI takes. */
    public static final Duration BOUND = Duration.ofMinutes(1);

    private HangGuard() {
    }

    /**
     * Waits, looking every millisecond, until {@code done} holds; one that does not after
     * {@link #BOUND} fails the test naming {@code what}.
     */
    public static void until(BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + BOUND.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("hang guard: " + what + " never came in " + BOUND.toSeconds() + " s");
            }
            LockSupport.parkNanos(1_000_000);
        }
    }

    /** Waits for {@code thread} to end; one still running after {@link #BOUND} fails the test naming {@code what}. */
    public static void join(Thread thread, String what) throws InterruptedException {
        if (!thread.join(BOUND)) {
            throw new AssertionError("hang guard: " + what + " never ended in " + BOUND.toSeconds() + " s (" + thread.getState() + ")");
        }
    }
}
