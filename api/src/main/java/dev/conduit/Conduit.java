package dev.conduit;

import dev.conduit.spi.ThreadMode;

import java.util.List;

/**
 * The entry point: the plugins this process found and selected, their configuration, and the
 * workers, pools and imported regions opened through it.
 *
 * <pre>{@code
 * try (Conduit conduit = Conduit.open();
 *      Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
 *     ...
 * }
 * }</pre>
 *
 * <p>A {@code Conduit} is thread-safe. {@link #close()} closes everything opened through it, in
 * reverse order of opening.
 */
public interface Conduit extends AutoCloseable {

    /** A {@code Conduit} configured from system properties, the environment and defaults. */
    static Conduit open() {
        return builder().build();
    }

    /** A builder, for configuration in code (the strongest source) and plugin directories. */
    static ConduitBuilder builder() {
        return new ConduitBuilder();
    }

    /**
     * Every plugin discovery found: selected, available but not selected, unavailable (with the
     * reason), refused (SPI version) and shadowed (by another plugin of the same name), in
     * preference order for the selected ones, then by name.
     */
    List<PluginInfo> plugins();

    /** The names of the selected, available plugins, most preferred first ({@code CONDUIT_TRANSPORTS}). */
    List<String> selectedPlugins();

    /** Every configuration key the runtime and the plugins declare, with value, source and doc, by name. */
    List<ConfigEntry> configuration();

    /**
     * A worker with a transport of every selected plugin that provides one, used in {@code mode}.
     *
     * @throws dev.conduit.spi.ConduitException when no selected plugin provides a transport, or a
     *         plugin cannot be used in {@code mode} (the message names plugin and modes, and the
     *         {@code conduit.thread.confine} option)
     */
    Worker newWorker(ThreadMode mode);

    /**
     * Closes every worker, pool and imported region opened through this {@code Conduit}, newest
     * first. Errors are collected: the first is thrown with the others suppressed. Idempotent.
     */
    @Override
    void close();
}
