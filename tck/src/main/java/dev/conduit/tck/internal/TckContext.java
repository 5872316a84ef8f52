package dev.conduit.tck.internal;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.RemoteMemory;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportContext;

import java.nio.file.Path;
import java.util.Map;

/**
 * The context the suites give a plugin when they call it directly: configuration from raw values
 * by key name, parsed as the runtime parses them, or the keys' defaults.
 */
public record TckContext(Map<String, String> values, Path sharedDirectory, ThreadMode threadMode, MessageSink messageSink)
        implements TransportContext {

    public TckContext {
        values = Map.copyOf(values);
    }

    public static TckContext of(Path sharedDirectory, Map<String, String> values, ThreadMode mode, MessageSink sink) {
        return new TckContext(values, sharedDirectory, mode, sink);
    }

    @Override
    public Config config() {
        return new Config() {
            @Override
            public <T> T get(ConfigKey<T> key) {
                String raw = values.get(key.name());
                return raw == null ? key.defaultValue() : key.parse(raw, "TCK configuration");
            }
        };
    }

    @Override
    public System.Logger logger() {
        return System.getLogger("dev.conduit.tck");
    }

    @Override
    public RemoteMemory remoteMemory() {
        return handle -> {
            throw new NotSupportedException("the TCK checks RMA through the runtime, not through a bare transport context");
        };
    }
}
