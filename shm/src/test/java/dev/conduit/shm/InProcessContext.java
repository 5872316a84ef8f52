package dev.conduit.shm;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.RemoteMemory;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportContext;

import java.nio.file.Path;

/** The context of a transport of this module's tests: default configuration, serialized, no remote memory; the logger given, or the JDK's. */
record InProcessContext(Path sharedDirectory, MessageSink messageSink, System.Logger logger) implements TransportContext {

    InProcessContext(Path sharedDirectory, MessageSink messageSink) {
        this(sharedDirectory, messageSink, System.getLogger(InProcessContext.class.getName()));
    }

    @Override
    public ThreadMode threadMode() {
        return ThreadMode.SERIALIZED;
    }

    @Override
    public RemoteMemory remoteMemory() {
        return handle -> {
            throw new NotSupportedException("not in this test");
        };
    }

    @Override
    public Config config() {
        return new Config() {
            @Override
            public <T> T get(ConfigKey<T> key) {
                return key.defaultValue();
            }
        };
    }
}
