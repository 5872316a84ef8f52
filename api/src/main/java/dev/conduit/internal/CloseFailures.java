package dev.conduit.internal;

import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;

/**
 * What a close that went on past every failure throws at its end. Close loops collect plugins'
 * {@code Error}s too (a fault on mapped memory is an {@code InternalError}, a plugin missing one
 * of its classes a {@code NoClassDefFoundError}), so that one of them does not leave the rest
 * open; but the JVM's own ({@link VirtualMachineError}: out of memory, a stack overflow; not the
 * {@code InternalError} the JDK reports a fault on mapped memory with) must not end up where a
 * caller that catches {@code ConduitException} would swallow it.
 */
public final class CloseFailures {

    private CloseFailures() {
    }

    /**
     * Throws {@code failure} as it is, whichever kind it is (a close kept it to report later); nothing when it is null.
     * It is a {@code RuntimeException} or an {@code Error}: a checked exception a plugin threw undeclared (Kotlin,
     * {@code @SneakyThrows}) would pass here unthrown, so each caller names one as the plugin's fault before it keeps it
     * ({@code RuntimeEndpoint.thrownBy}), as every caller does since 2026-12-07.
     */
    public static void rethrow(Throwable failure) {
        if (failure instanceof RuntimeException e) throw e;
        if (failure instanceof Error e) throw e;
    }

    /** Throws {@code failure} as it is when it is the JVM's own error ({@link Cleanup#isTheJvmsOwn}), where a plugin's others are caught. */
    public static void rethrowIfTheJvmsOwn(Throwable failure) {
        if (Cleanup.isTheJvmsOwn(failure)) throw (VirtualMachineError) failure;
    }

    /**
     * Throws {@code collected} (a {@code ConduitException} whose suppressed exceptions are the
     * failures), or, when one of those is the JVM's own error, that error, with the others
     * suppressed in it. Nothing when {@code collected} is null.
     */
    public static void throwCollected(RuntimeException collected) {
        if (collected == null) return;
        VirtualMachineError fatal = null;
        for (Throwable s : collected.getSuppressed()) {
            if (Cleanup.isTheJvmsOwn(s)) {
                fatal = (VirtualMachineError) s;
                break;
            }
        }
        if (fatal == null) throw collected;
        ConduitException rest = new ConduitException(collected.getMessage());
        for (Throwable s : collected.getSuppressed()) {
            if (s != fatal) rest.addSuppressed(s);
        }
        if (rest.getSuppressed().length > 0) fatal.addSuppressed(rest);
        throw fatal;
    }
}
