package dev.conduit.plugin.memfd;

import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.RemoteMemory;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportContext;

import java.nio.file.Path;

/** A {@code SINGLE} worker's transport context over a {@link TestContext}, with no remote memory. */
record TestTransportContext(TestContext plugin, MessageSink messageSink) implements TransportContext {
    @Override
    public ThreadMode threadMode() {
        return ThreadMode.SINGLE;
    }

    @Override
    public RemoteMemory remoteMemory() {
        return handle -> {
            throw new NotSupportedException("not in this test");
        };
    }

    @Override
    public dev.conduit.spi.Config config() {
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
