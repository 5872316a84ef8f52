package dev.conduit.spi;

import java.util.function.Supplier;

/**
 * A record whose own failure costs its caller nothing: housekeeping that warns or reports (a
 * reclaim, a lease kept, an unmap that failed) goes on to what it was doing, and an open that met
 * a failure throws that failure, not the logger's. Out of descriptors, formatting a record can itself fail:
 * the JDK's logging loads its time-zone data with its first record, and that throws an
 * {@link Error} ({@code FileNotFoundException} of {@code lib/tzdb.dat}), then
 * {@link NoClassDefFoundError} at every later record. The JVM's own errors
 * ({@link Cleanup#isTheJvmsOwn}: out of memory, stack overflow) still propagate.
 *
 * <p>For plugins (and the runtime) that log on the way to something that matters more; a warning
 * a peer can cause again and again goes through {@link RepeatedWarning}, which is best effort in
 * the same way. (Public since SPI 1.1.)
 */
public final class BestEffortLog {

    private BestEffortLog() {
    }

    /**
     * Logs {@code message} (and {@code thrown}, when not null) at WARNING, or nothing when making
     * or logging it fails.
     *
     * @return whether the logger took it
     */
    public static boolean warn(System.Logger logger, Supplier<String> message, Throwable thrown) {
        return log(logger, System.Logger.Level.WARNING, message, thrown);
    }

    /**
     * Logs at WARNING a {@code failure} its caller takes and goes on from, where nobody waits for
     * the step that failed (an eviction's unmap, a periodic round, a background free): a plugin's
     * exception or {@link Error} alike (a class it misses), for an {@code Error} let through would
     * end the step's thread or its caller's work for good. The JVM's own
     * ({@link Cleanup#isTheJvmsOwn}) is rethrown instead of logged. (Public since SPI 1.1.)
     *
     * @return whether the logger took it
     * @throws VirtualMachineError {@code failure}, when it is the JVM's own
     */
    public static boolean warnUnlessTheJvmsOwn(System.Logger logger, Supplier<String> message, Throwable failure) {
        if (Cleanup.isTheJvmsOwn(failure)) throw (VirtualMachineError) failure;
        return warn(logger, message, failure);
    }

    /**
     * Logs {@code message} (and {@code thrown}, when not null) at {@code level}, or nothing when
     * making or logging it fails: also with a checked exception thrown undeclared (a message made
     * in Kotlin or with Lombok's {@code @SneakyThrows}, a logger bridged to another framework),
     * which until 2026-12-07 reached the caller.
     *
     * @return whether the logger took it
     */
    public static boolean log(System.Logger logger, System.Logger.Level level, Supplier<String> message, Throwable thrown) {
        try {
            if (thrown == null) {
                logger.log(level, message);
            } else {
                logger.log(level, message, thrown);
            }
            return true;
        } catch (Throwable cannotLog) { // a checked one too, thrown undeclared by the message or the logger
            if (Cleanup.isTheJvmsOwn(cannotLog)) throw (VirtualMachineError) cannotLog;
            return false; // said nowhere, then: what the caller does next matters more
        }
    }
}
