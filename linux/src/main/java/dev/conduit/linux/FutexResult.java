package dev.conduit.linux;

/**
 * How a {@link Libc#futexWait futex wait} ended.
 *
 * <p>Used by the shared-memory transport's {@code worker.await(timeout)}. Every outcome means
 * "look at the word again": a futex wait is only a hint that it may have changed.
 */
public enum FutexResult {
    /**
     * Woken by {@code FUTEX_WAKE}, or spuriously (a signal, a wake meant for an earlier waiter):
     * re-check the word.
     */
    WOKEN,
    /** The timeout passed without a wake. */
    TIMED_OUT,
    /** The word did not hold the expected value when the call began, so it did not sleep. */
    VALUE_MISMATCH
}
