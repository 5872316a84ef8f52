package dev.conduit.tck;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.RemoteMemory;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportContext;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The context of a plugin called directly, as the suites call it and as a plugin's own unit tests
 * may: configuration from raw values by key name, parsed as the runtime parses them (a value that
 * does not parse throws the runtime's {@code ConfigException}, from "test configuration"), else
 * each key's default; a shared directory; a logger. {@link #forTransport} makes the context of one
 * worker's transport of it.
 *
 * @param values          raw configuration values by key name, e.g. {@code "posix.queue.size" -> "64k"}
 * @param sharedDirectory the shared directory, as {@code shared.dir} gives it to the runtime
 * @param logger          where the plugin logs
 */
public record TestContext(Map<String, String> values, Path sharedDirectory, System.Logger logger) implements PluginContext {

    public TestContext {
        values = Map.copyOf(values);
    }

    /** Shared directory {@code sharedDirectory}, every key at its default. */
    public static TestContext of(Path sharedDirectory) {
        return of(sharedDirectory, Map.of());
    }

    /** Shared directory {@code sharedDirectory}, and {@code values} by key name. */
    public static TestContext of(Path sharedDirectory, Map<String, String> values) {
        return new TestContext(values, sharedDirectory, System.getLogger("dev.conduit.tck.TestContext"));
    }

    /** Shared directory {@code sharedDirectory}, and {@code keyValues} as pairs of key name and raw value. */
    public static TestContext of(Path sharedDirectory, String... keyValues) {
        return of(sharedDirectory, pairs(keyValues));
    }

    /**
     * {@code keyValues} as pairs of key name and raw value, and the temporary directory as the
     * shared directory: for a plugin that uses none (devdax, verbs).
     */
    public static TestContext of(String... keyValues) {
        return of(Path.of(System.getProperty("java.io.tmpdir")), pairs(keyValues));
    }

    /**
     * Where this class was loaded from: the TCK's jar (or classes directory). A test that starts a
     * child JVM running one of its classes patched into the plugin's module (with
     * {@code --patch-module}, from the module path alone) puts it on the child's class path, with
     * {@code --add-reads <module>=ALL-UNNAMED}, so that the child can make its context with this class.
     */
    public static Path location() {
        try {
            return Path.of(TestContext.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException("the TCK's location is no path: " + e.getMessage(), e);
        }
    }

    /** The same context, logging to {@code logger} (a test that checks what the plugin logs). */
    public TestContext withLogger(System.Logger logger) {
        return new TestContext(values, sharedDirectory, logger);
    }

    private static Map<String, String> pairs(String... keyValues) {
        if (keyValues.length % 2 != 0) {
            throw new IllegalArgumentException("key names and values come in pairs; " + keyValues.length + " strings given");
        }
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            values.put(keyValues[i], keyValues[i + 1]);
        }
        return values;
    }

    @Override
    public Config config() {
        return new Config() {
            @Override
            public <T> T get(ConfigKey<T> key) {
                String raw = values.get(key.name());
                return raw == null ? key.defaultValue() : key.parse(raw, "test configuration");
            }

            @Override
            public String sourceOf(ConfigKey<?> key) {
                return values.containsKey(key.name()) ? "test configuration" : "the default";
            }
        };
    }

    /**
     * The context of a transport of a worker in {@code mode} that delivers to {@code sink}, with
     * this configuration, shared directory and logger. Its {@link TransportContext#remoteMemory()}
     * refuses every handle ({@link NotSupportedException}): the suites check RMA through the
     * runtime, which imports peers' regions for its transports.
     */
    public TransportContext forTransport(ThreadMode mode, MessageSink sink) {
        return new Transport(this, mode, sink);
    }

    private record Transport(TestContext plugin, ThreadMode threadMode, MessageSink messageSink) implements TransportContext {
        @Override
        public RemoteMemory remoteMemory() {
            return handle -> {
                throw new NotSupportedException("a test's transport context imports no remote region (TestContext.forTransport): "
                        + "RMA is checked through the runtime");
            };
        }

        @Override
        public Config config() {
            return plugin.config();
        }

        @Override
        public Path sharedDirectory() {
            return plugin.sharedDirectory();
        }

        @Override
        public System.Logger logger() {
            return plugin.logger();
        }
    }
}
