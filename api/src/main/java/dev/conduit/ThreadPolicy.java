package dev.conduit;

/**
 * How the runtime enforces a worker's {@link dev.conduit.spi.ThreadMode} on its plugins: the
 * mode in force, shown by {@link Worker#threadPolicy()} and {@code conduit info}.
 */
public enum ThreadPolicy {
    /** {@code SINGLE}: every call checks that it comes from the owner thread. */
    OWNER_CHECK,
    /** {@code SERIALIZED}: an atomic in-use flag detects overlapping calls. */
    OVERLAP_CHECK,
    /** {@code MULTI} over plugins that all declare {@code MULTI}: no guard. */
    PASS_THROUGH,
    /** {@code MULTI} over a plugin that declares only {@code SERIALIZED}: the runtime's lock serializes calls. */
    RUNTIME_LOCK,
    /** A plugin that declares only {@code SINGLE}, used from several threads: every call runs on one runtime-owned thread. */
    CONFINED_THREAD
}
