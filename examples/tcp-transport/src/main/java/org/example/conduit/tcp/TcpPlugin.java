package org.example.conduit.tcp;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.Version;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Active messages over TCP (non-blocking {@code java.nio} sockets), for peers that share no memory.
 *
 * <p>It declares {@link ThreadMode#SINGLE} and {@link ThreadMode#SERIALIZED} only: its objects keep
 * plain fields and are never safe for two threads at once. A {@code MULTI} worker over it is still
 * safe, because the runtime then serializes every call with its own lock.
 */
public final class TcpPlugin implements ConduitPlugin {

    static final ConfigKey<String> HOST = ConfigKey.string("tcp.host", "127.0.0.1",
            "The address the transport listens on and publishes to peers, e.g. 127.0.0.1 or a host's LAN address; not a "
                    + "wildcard (0.0.0.0, ::), which names no host to a peer.");
    static final ConfigKey<Long> MAX_PAYLOAD = ConfigKey.bytes("tcp.max.payload", 1L << 20, 1024, Frame.MAX_PAYLOAD,
            "The largest payload one message carries; the receiver's buffer holds one whole message.");
    static final ConfigKey<Duration> CONNECT_TIMEOUT = ConfigKey.duration("tcp.connect.timeout", Duration.ofSeconds(2),
            "How long connect waits for the peer's host to accept the connection, and then for the peer's acknowledgement "
                    + "of its hello, before it fails; and how long the receiver waits for a connector's hello before it closes the "
                    + "connection.");

    @Override
    public String name() {
        return "tcp";
    }

    @Override
    public Version version() {
        return Version.parse("1.0.0");
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public String description() {
        return "example third-party plugin: active messages over TCP";
    }

    @Override
    public Availability probe(PluginContext context) {
        String host;
        try {
            host = host(context.config());
        } catch (ConduitException e) {
            return Availability.unavailable(e.getMessage());
        }
        try (ServerSocketChannel probe = ServerSocketChannel.open()) {
            probe.bind(new InetSocketAddress(TcpTransport.listenAddress(host), 0));
            return Availability.available(Map.of("listen", host));
        } catch (ConduitException e) {
            return Availability.unavailable(e.getMessage());
        } catch (IOException | RuntimeException e) {
            return Availability.unavailable(TcpTransport.cannotListen(host, e));
        }
    }

    @Override
    public Set<Capability> capabilities() {
        return Set.of(Capability.AM, Capability.CROSS_HOST);
    }

    @Override
    public Set<ThreadMode> threadModes() {
        return Set.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED);
    }

    @Override
    public List<ConfigKey<?>> configKeys() {
        return List.of(HOST, MAX_PAYLOAD, CONNECT_TIMEOUT);
    }

    @Override
    public int priority() {
        return 10;
    }

    @Override
    public Transport openTransport(TransportContext context) {
        return TcpTransport.open(context, host(context.config()), Math.toIntExact(context.config().get(MAX_PAYLOAD)),
                context.config().get(CONNECT_TIMEOUT));
    }

    /**
     * {@code tcp.host} without the blanks at its ends, which a text key keeps (an environment file, a
     * quoted shell variable) and which would make it another host name, one that resolves to nothing.
     *
     * @throws ConduitException if nothing is left: the empty host is the loopback address to
     *                          {@code InetAddress.getByName}, and peers would be told to connect to ""
     */
    private static String host(Config config) {
        String host = config.get(HOST).strip();
        if (host.isEmpty()) {
            throw new ConduitException("tcp: tcp.host (CONDUIT_TCP_HOST) is '" + config.get(HOST) + "', which names no host; set it to "
                    + "a local address, or leave it unset for 127.0.0.1");
        }
        return host;
    }
}
