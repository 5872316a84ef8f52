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

    /**
     * Runs {@code step}; if it fails, its exception is added to {@code primary} as suppressed,
     * unless it is {@code primary} itself (a resource that throws its first failure again from its
     * close): as a try-with-resources does. (Until 2026-12-07 that threw "Self-suppression not
     * permitted" in {@code primary}'s place.) A checked exception the step throws undeclared (a
     * plugin's close in Kotlin, or with Lombok's {@code @SneakyThrows}) is added as any other; until
     * 2026-12-07 it left this method in {@code primary}'s place.
     */
    public static void run(Throwable primary, Runnable step) {
        try {
            step.run();
        } catch (Throwable e) { // a checked one too, thrown undeclared
            suppress(primary, e);
        }
    }

    /**
     * Runs {@code step} and returns the first failure so far: {@code first}, or the step's
     * exception if there was none, the step's added to {@code first} as suppressed otherwise.
     *
     * <p>An {@code Error} of the step (a class missing from a plugin, a fault on mapped memory,
     * which the JDK reports as an {@code InternalError}) is collected too, so that the steps after
     * it still run: as the first failure it is returned as the cause of a {@link ConduitException}
     * that names it. The JVM's own ({@link VirtualMachineError} other than {@code InternalError}:
     * out of memory, a stack overflow) is thrown at once, with {@code first} suppressed in it,
     * where no caller that catches {@code ConduitException} would swallow it. (Since SPI 1.1;
     * before, any {@code Error} left the caller's loop and lost {@code first}.) A step that throws
     * {@code first} itself again leaves it as it was (until 2026-12-07 that threw "Self-suppression
     * not permitted" in its place, and the caller's later steps did not run). A checked exception
     * the step throws undeclared (a plugin's close in Kotlin, or with Lombok's {@code @SneakyThrows})
     * is collected as such an {@code Error} is; until 2026-12-07 it left this method, losing
     * {@code first}, and the caller's later steps did not run.
     *
     * @throws VirtualMachineError the step's, when it is the JVM's own
     */
    public static RuntimeException collect(RuntimeException first, Runnable step) {
        try {
            step.run();
            return first;
        } catch (RuntimeException e) {
            if (first == null) return e;
            suppress(first, e);
            return first;
        } catch (Throwable e) { // an Error, or a checked exception thrown undeclared
            if (isTheJvmsOwn(e)) {
                if (first != null) e.addSuppressed(first);
                throw (VirtualMachineError) e;
            }
            if (first == null) return new ConduitException("a clean-up step failed with " + e, e);
            first.addSuppressed(e);
            return first;
        }
    }

    /** Throwable refuses to suppress itself (IllegalArgumentException), which would hide {@code primary}. */
    private static void suppress(Throwable primary, Throwable e) {
        if (e != primary) primary.addSuppressed(e);
    }

    /**
     * Whether {@code failure} is the JVM's own (out of memory, a stack overflow), which no plugin's
     * fault is to be taken for: a {@link VirtualMachineError} other than the {@code InternalError}
     * the JDK reports a fault on mapped memory with. A catch of {@code Error} on a plugin's
     * clean-up path rethrows these, as {@link #collect} does; the runtime judges a plugin's
     * failures by the same test. (Public since SPI 1.1.)
     */
    public static boolean isTheJvmsOwn(Throwable failure) {
        return failure instanceof VirtualMachineError && !(failure instanceof InternalError);
    }
}
