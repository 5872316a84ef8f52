package dev.conduit;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.Version;

import java.util.List;
import java.util.Set;

/** A plugin that forwards to another, for tests that override one method. */
class ForwardingPlugin implements ConduitPlugin {

    private final ConduitPlugin delegate;

    ForwardingPlugin(ConduitPlugin delegate) {
        this.delegate = delegate;
    }

    @Override public String name() { return delegate.name(); }
    @Override public Version version() { return delegate.version(); }
    @Override public String spiVersion() { return delegate.spiVersion(); }
    @Override public String description() { return delegate.description(); }
    @Override public Availability probe(PluginContext context) { return delegate.probe(context); }
    @Override public Set<Capability> capabilities() { return delegate.capabilities(); }
    @Override public Set<ThreadMode> threadModes() { return delegate.threadModes(); }
    @Override public List<ConfigKey<?>> configKeys() { return delegate.configKeys(); }
    @Override public int priority() { return delegate.priority(); }
    @Override public Transport openTransport(TransportContext context) { return delegate.openTransport(context); }
    @Override public MemoryProvider openMemoryProvider(PluginContext context) { return delegate.openMemoryProvider(context); }
    @Override public IpcImporter ipcImporter(PluginContext context) { return delegate.ipcImporter(context); }
}
