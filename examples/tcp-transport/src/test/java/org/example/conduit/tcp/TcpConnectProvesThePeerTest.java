package org.example.conduit.tcp;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * connect proves the peer reachable or throws (plugin-authoring.md, "Transport": it "completes a handshake whose token
 * is compared ... also for the address of a transport that has closed"): it returns once the receiver, having compared
 * the token, acknowledged the hello. The address of a closed transport whose port something else listens on now (its
 * port was ephemeral: another worker's transport, any server) fails the connect, a plain ConduitException, so that the
 * runtime tries the next transport the workers share, instead of an endpoint whose messages go to whatever listens there.
 */
@Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class TcpConnectProvesThePeerTest {

    @Test
    void aConnectToAClosedTransportsAddressWhosePortAnotherListenerTookIsRefused(@TempDir Path shared) throws IOException {
        TestContext context = TestContext.of(shared);
        byte[] address;
        int port;
        try (Transport closed = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            address = closed.address();
            PayloadReader reader = new PayloadReader(address);
            reader.u8("version");
            reader.string("host", 255);
            port = reader.u16("port");
        }
        try (ServerSocketChannel another = ServerSocketChannel.open();
             Transport sender = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            another.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            another.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            ConduitException refusal = assertThrows(ConduitException.class, () -> {
                TransportEndpoint ep = sender.connect(new PayloadReader(address), cause -> { });
                ep.close();
            }, "connect to the address of a closed tcp transport whose port " + port + " another listener took: the connector never "
                    + "learns that no transport with that token answered, and returns an endpoint");
            assertTrue(refusal.getMessage().contains(":" + port + ": something accepted the connection but did not acknowledge the hello "
                    + "within tcp.connect.timeout (2s)"), refusal.getMessage());
            assertFalse(refusal instanceof PeerFailedException, "an address whose port another program took is not a dead peer: " + refusal);
        }
    }

    /**
     * The likelier stale address: another worker's transport took the port. It refuses the hello, whose token is not its
     * own, and closes the connection; the connect fails saying so.
     */
    @Test
    void aConnectWhoseTokenTheTransportListeningThereDoesNotHoldIsRefused(@TempDir Path shared) {
        TestContext context = TestContext.of(shared);
        try (Transport other = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }));
             Transport sender = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            byte[] stale = other.address();
            Arrays.fill(stale, stale.length - Frame.TOKEN_LENGTH, stale.length, (byte) 0); // its host and port, another transport's token
            ConduitException refusal = assertThrows(ConduitException.class, () -> {
                TransportEndpoint ep = sender.connect(new PayloadReader(stale), cause -> { });
                ep.close();
            }, "connect with a token that the transport listening at the address does not hold");
            assertTrue(refusal.getMessage().contains("instead of acknowledging the hello: the transport there refused it"),
                    refusal.getMessage());
        }
    }
}
