package dev.conduit.plugin.posix;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A plugin context as the runtime would give one: configuration from raw text values parsed by
 * each key (else its default), a shared directory, a logger.
 */
record TestContext(Config config, Path sharedDirectory, System.Logger logger) implements PluginContext {

    /** Shared directory {@code shared}, and {@code keyValues} as pairs of key name and raw value. */
    static TestContext of(Path shared, String... keyValues) {
        Map<String, String> raw = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            raw.put(keyValues[i], keyValues[i + 1]);
        }
        Config config = new Config() {
            @Override
            public <T> T get(ConfigKey<T> key) {
                String value = raw.get(key.name());
                return value == null ? key.defaultValue() : key.parse(value, "test");
            }
        };
        return new TestContext(config, shared, System.getLogger("dev.conduit.plugin.posix"));
    }
}
