package dev.conduit.spi;

/**
 * How a worker (and the endpoints made from it) may be used by threads, as in UCX.
 *
 * <p>Applications ask for a mode when they create a worker; plugins declare, in
 * {@link ConduitPlugin#threadModes()}, the modes their objects really support. The runtime
 * enforces the asked-for mode for every plugin, so a plugin never sees a use it did not declare:
 *
 * <table class="striped">
 * <caption>What the runtime does</caption>
 * <tr><th>asked</th><th>plugin declares</th><th>runtime</th></tr>
 * <tr><td>{@code SINGLE}</td><td>any</td><td>checks the owner thread on every call;
 *     another thread gets {@link WrongThreadException}</td></tr>
 * <tr><td>{@code SERIALIZED}</td><td>{@code SERIALIZED} or {@code MULTI}</td><td>detects
 *     overlapping calls with an atomic in-use flag; the loser gets
 *     {@link ConcurrentUseException}</td></tr>
 * <tr><td>{@code MULTI}</td><td>{@code MULTI}</td><td>passes calls through</td></tr>
 * <tr><td>{@code MULTI}</td><td>{@code SERIALIZED}</td><td>serializes calls with its own lock</td></tr>
 * <tr><td>{@code SERIALIZED}, {@code MULTI}</td><td>{@code SINGLE} only</td><td>refuses, naming
 *     plugin and modes, unless thread confinement is enabled ({@code conduit.thread.confine}):
 *     then every call runs on one runtime-owned thread</td></tr>
 * </table>
 */
public enum ThreadMode {
    /** One thread uses the object, ever. */
    SINGLE,
    /** Many threads, never at once: the user serializes. */
    SERIALIZED,
    /** Fully thread-safe. */
    MULTI
}
