package dev.conduit.plugin.devdax;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A plugin context as the runtime would give one: configuration from raw text values parsed by
 * each key (else its default), a shared directory (which this plugin does not use), a logger.
 */
record TestContext(Map<String, String> values, Path sharedDirectory, System.Logger logger) implements PluginContext {

    TestContext {
        values = Map.copyOf(values);
    }

    /** {@code keyValues} as pairs of key name and raw value. */
    static TestContext of(String... keyValues) {
        Map<String, String> raw = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            raw.put(keyValues[i], keyValues[i + 1]);
        }
        return new TestContext(raw, Path.of(System.getProperty("java.io.tmpdir")), System.getLogger("dev.conduit.plugin.devdax.test"));
    }

    /** A context whose device table has {@code alias=path} and nothing else, plus {@code keyValues}. */
    static TestContext device(String alias, Path path, String... keyValues) {
        String[] all = new String[keyValues.length + 2];
        all[0] = "devdax.devices";
        all[1] = alias + "=" + path;
        System.arraycopy(keyValues, 0, all, 2, keyValues.length);
        return of(all);
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
