package dev.conduit.linux;

import dev.conduit.linux.internal.FlagNames;

/**
 * Operations of {@code flock(2)} ({@code LOCK_*}), with their Linux values.
 *
 * <p>Used for liveness leases (the posix plugin, worker lease files) and for the exclusive
 * device lock of the devdax provider. A {@code flock} belongs to the open file description: the
 * kernel drops it when the last descriptor of that open closes, including when the process
 * dies, which is what makes it a liveness signal across PID namespaces.
 */
public final class LockFlags {

    /** Shared lock. */
    public static final int LOCK_SH = 1;
    /** Exclusive lock. */
    public static final int LOCK_EX = 2;
    /** Fail with {@code EWOULDBLOCK} instead of waiting. */
    public static final int LOCK_NB = 4;
    /** Release the lock. */
    public static final int LOCK_UN = 8;

    private static final FlagNames NAMES = FlagNames.builder()
            .flag("LOCK_SH", LOCK_SH)
            .flag("LOCK_EX", LOCK_EX)
            .flag("LOCK_NB", LOCK_NB)
            .flag("LOCK_UN", LOCK_UN)
            .build();

    private LockFlags() {}

    /** Renders an operation as C would spell it: {@code LOCK_EX|LOCK_NB}. */
    public static String describe(int operation) {
        return NAMES.describe(operation);
    }
}
