package dev.conduit.spi;

/**
 * Resolved configuration. Implemented by the runtime; a plugin reads its declared
 * {@link ConfigKey}s through the {@link PluginContext} it is given.
 *
 * <p>Sources, strongest first: the application's builder, system properties
 * ({@code conduit.posix.dir}), environment variables ({@code CONDUIT_POSIX_DIR}), the key's
 * default. A value is parsed when it is read, and checked by the key's own rule
 * ({@link ConfigKey#withCheck}); the runtime reads every declared key when the {@code Conduit} is
 * built. A malformed or refused one is a {@link ConfigException} naming key, value, source and
 * expected form; a check that fails instead of refusing (throws anything but
 * {@link IllegalArgumentException}) is one that says so, with what it threw as its cause, and the
 * runtime marks the key's plugin {@code BROKEN} instead of failing the build.
 */
public interface Config {

    /** The value of {@code key} from the strongest source that sets it, or its default. */
    <T> T get(ConfigKey<T> key);

    /**
     * Where the value of {@code key} in force comes from, as an error names it: "the builder",
     * "system property conduit.x.y", "environment variable CONDUIT_X_Y" or "the default"; for
     * {@link ConfigKey#badValue}. The runtime's configuration says; this default, for a
     * configuration made elsewhere (a plugin's tests), says "the configuration". Since SPI 1.1.
     */
    default String sourceOf(ConfigKey<?> key) {
        return "the configuration";
    }
}
