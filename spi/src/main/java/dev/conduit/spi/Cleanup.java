package dev.conduit.spi;

/**
 * Runs clean-up steps on error and close paths so that one failing step neither stops the others
 * nor hides the exception that matters: later failures are attached to the first as suppressed.
 *
 * <p>For plugins (and the runtime) releasing several resources where any release may fail.
 */
public final class Cleanup {

    private Cleanup() {
    }

    /** Runs {@code step}; if it fails, its exception is added to {@code primary} as suppressed. */
    public static void run(Throwable primary, Runnable step) {
        try {
            step.run();
        } catch (RuntimeException | Error e) {
            primary.addSuppressed(e);
        }
    }

    /**
     * Runs {@code step} and returns the first failure so far: {@code first}, or the step's
     * exception if there was none, the step's added to {@code first} as suppressed otherwise.
     */
    public static RuntimeException collect(RuntimeException first, Runnable step) {
        try {
            step.run();
            return first;
        } catch (RuntimeException e) {
            if (first == null) return e;
            first.addSuppressed(e);
            return first;
        }
    }
}
