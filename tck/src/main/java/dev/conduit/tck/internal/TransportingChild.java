package dev.conduit.tck.internal;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;

/**
 * The worker process of the transport suite's check of a killed worker's files (and of the live
 * one beside it whose files a reclaim must leave alone): it opens the plugin's transport, connects
 * it to the test's own transport and sends it one message, so that a transport that makes a
 * connection's files only then has made them, and prints {@code OPENED} with {@code connected} or
 * why it could not connect (a transport of one JVM, as the TCK's loopback, cannot: the files its
 * open made are still checked). Then it waits for its stdin to end, which the test never ends when
 * it kills it; once it ends it closes the transport, so that it leaves nothing, and exits.
 *
 * <p>Arguments: {@code pluginName pluginClass sharedDirectory peerAddressHex key=value...}; the
 * plugin and the configuration are found as {@link ImportingChild} finds them.
 */
public final class TransportingChild {

    /** What the line printed once the transport is open and connected starts with. */
    public static final String OPENED = "OPENED ";
    /** What follows {@link #OPENED} when the connection was made and its message accepted. */
    public static final String CONNECTED = "connected";

    /** A hang guard for the one message's acceptance, not a speed check. */
    private static final long SEND_GUARD_NANOS = 30_000_000_000L;

    private TransportingChild() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[2]);
        byte[] peer = HexFormat.of().parseHex(args[3]);
        Map<String, String> config = ImportingChild.configuration(args, 4);
        ConduitPlugin plugin = ImportingChild.find(args[0], args[1]);
        MessageSink discarding = (id, header, headerOffset, headerLength, payload, payloadOffset, payloadLength) -> { };
        try (Transport transport = plugin.openTransport(dev.conduit.tck.TestContext.of(shared, config)
                .forTransport(ThreadMode.SERIALIZED, discarding))) {
            ExportingChild.printAndAwaitTheEndOfStdin(OPENED + connectAndSendOne(plugin.name(), transport, peer));
        } catch (RuntimeException | Error e) {
            System.out.println("ERR " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    /** {@link #CONNECTED}, or what kept the transport from connecting to {@code peer} or sending it a message. */
    private static String connectAndSendOne(String plugin, Transport transport, byte[] peer) {
        try {
            TransportEndpoint endpoint = transport.connect(Addresses.reader(plugin, peer), cause -> { });
            long deadline = System.nanoTime() + SEND_GUARD_NANOS;
            while (!endpoint.trySend(1, MemorySegment.NULL, Patterns.segment(8, 1))) {
                transport.progress();
                if (System.nanoTime() - deadline > 0) return "not connected: the message was not accepted within 30 s";
            }
            transport.progress();
            return CONNECTED;
        } catch (RuntimeException e) {
            return "not connected: " + e;
        }
    }
}
