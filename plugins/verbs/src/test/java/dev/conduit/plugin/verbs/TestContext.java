package dev.conduit.plugin.verbs;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** A plugin context as the runtime would give one: raw values parsed by each key, else its default. */
record TestContext(Map<String, String> values) implements PluginContext {

    static TestContext of(String... keyValues) {
        Map<String, String> raw = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            raw.put(keyValues[i], keyValues[i + 1]);
        }
        return new TestContext(Map.copyOf(raw));
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

    @Override
    public Path sharedDirectory() {
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    @Override
    public System.Logger logger() {
        return System.getLogger("dev.conduit.plugin.verbs.test");
    }
}
