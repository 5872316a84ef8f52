package dev.conduit.it.plugins;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.spi.Version;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/** A plugin found by {@link java.util.ServiceLoader}, with a transport that does nothing. */
abstract class SimplePlugin implements ConduitPlugin {

    private final String name;
    private final int priority;

    SimplePlugin(String name, int priority) {
        this.name = name;
        this.priority = priority;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Version version() {
        return Version.parse("1.0.0");
    }

    @Override
    public String spiVersion() {
        return SPI_VERSION;
    }

    @Override
    public String description() {
        return "integration-test plugin " + name;
    }

    @Override
    public Availability probe(PluginContext context) {
        return Availability.available(Map.of("module", String.valueOf(getClass().getModule().getName())));
    }

    @Override
    public Set<Capability> capabilities() {
        return EnumSet.of(Capability.AM);
    }

    @Override
    public Set<ThreadMode> threadModes() {
        return EnumSet.allOf(ThreadMode.class);
    }

    @Override
    public int priority() {
        return priority;
    }

    @Override
    public Transport openTransport(TransportContext context) {
        return new Transport() {
            @Override
            public byte[] address() {
                return new byte[0];
            }

            @Override
            public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
                throw new NotSupportedException(name + " connects nowhere");
            }

            @Override
            public int progress() {
                return 0;
            }

            @Override
            public void close() {
            }
        };
    }
}
