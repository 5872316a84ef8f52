package dev.conduit.benchmarks;

import java.io.IOException;

/** What the benchmarks' trials share around their set-up and tear-down. */
final class Trials {

    private Trials() {
    }

    /** A trial's tear-down, as the benchmarks' {@code close()} methods declare it. */
    @FunctionalInterface
    interface TearDown {
        void run() throws IOException, InterruptedException;
    }

    /**
     * Tears down what a set-up that failed with {@code failure} opened: JMH runs no tear-down after
     * a failed set-up, so without it a trial's directory, Conduits and peer JVMs would stay. What
     * the tear-down throws is added to {@code failure} as suppressed, so that the set-up's own
     * failure is what the run reports.
     */
    static void tearDownAfter(Throwable failure, TearDown tearDown) {
        try {
            tearDown.run();
        } catch (RuntimeException | IOException | InterruptedException suppressed) {
            failure.addSuppressed(suppressed);
        }
    }
}
