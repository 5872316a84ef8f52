package dev.conduit.shm;

import java.util.function.Supplier;

/**
 * A record whose own failure costs its caller nothing: housekeeping that warns or reports (a
 * reclaim, a lease kept, an unmap that failed) goes on to what it was doing, and an open that met
 * a failure throws that failure, not the logger's. Out of descriptors, formatting a record can itself fail:
 * the JDK's logging loads its time-zone data with its first record, and that throws an
 * {@link Error} ({@code FileNotFoundException} of {@code lib/tzdb.dat}), then
 * {@link NoClassDefFoundError} at every later record. The JVM's own errors
 * ({@link VirtualMachineError}: out of memory, stack overflow) still propagate.
 */
final class BestEffortLog {

    private BestEffortLog() {
    }

    /** Logs {@code message} (and {@code thrown}, when not null) at WARNING, or nothing when logging fails. */
    static void warn(System.Logger logger, Supplier<String> message, Throwable thrown) {
        log(logger, System.Logger.Level.WARNING, message, thrown);
    }

    /** Logs {@code message} (and {@code thrown}, when not null) at {@code level}, or nothing when logging fails. */
    static void log(System.Logger logger, System.Logger.Level level, Supplier<String> message, Throwable thrown) {
        try {
            if (thrown == null) {
                logger.log(level, message);
            } else {
                logger.log(level, message, thrown);
            }
        } catch (RuntimeException | Error cannotLog) {
            if (cannotLog instanceof VirtualMachineError vm) throw vm;
            // said nowhere, then: what the caller does next matters more
        }
    }
}
