package dev.conduit.plugin.memfd;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;

import java.nio.file.Path;
import java.util.Map;

/**
 * A {@link PluginContext} for tests: configuration from raw values by key name, parsed the way
 * the runtime parses them, or the keys' defaults.
 */
record TestContext(Map<String, String> values, Path sharedDirectory, System.Logger logger) implements PluginContext {

    TestContext {
        values = Map.copyOf(values);
    }

    static TestContext of(Path sharedDirectory) {
        return of(sharedDirectory, Map.of());
    }

    static TestContext of(Path sharedDirectory, Map<String, String> values) {
        return new TestContext(values, sharedDirectory, System.getLogger("dev.conduit.plugin.memfd.test"));
    }

    @Override
    public Config config() {
        return new Config() {
            @Override
            public <T> T get(ConfigKey<T> key) {
                String raw = values.get(key.name());
                return raw == null ? key.defaultValue() : key.parse(raw, "test");
            }
        };
    }
}
