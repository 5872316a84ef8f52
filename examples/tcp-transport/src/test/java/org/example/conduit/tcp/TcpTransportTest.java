package org.example.conduit.tcp;

import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.ResourceBundle;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the TCK cannot see: how the transport treats a stranger that connects to its port. */
class TcpTransportTest {

    /**
     * A stranger can connect as fast as it likes: each connection it makes with a wrong token is
     * dropped, but the warnings are not one per connection (plugin-authoring.md: what a peer or a
     * stranger can repeat goes through RepeatedWarning).
     */
    @Test
    void strangersThatPresentAWrongTokenAreDroppedWithoutFloodingTheLog(@TempDir Path shared) throws IOException {
        List<String> warnings = new CopyOnWriteArrayList<>();
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared).withLogger(recording(warnings))
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            PayloadReader address = new PayloadReader(transport.address());
            InetSocketAddress listening = new InetSocketAddress(InetAddress.getByName(address.string("host", 255)), address.u16("port"));
            int strangers = 20;
            for (int i = 0; i < strangers; i++) {
                try (SocketChannel stranger = SocketChannel.open(listening)) {
                    stranger.write(ByteBuffer.wrap(new byte[Frame.TOKEN_LENGTH]));
                    stranger.configureBlocking(false);
                    // Dropped: the transport closes the connection, which the stranger reads as end of stream.
                    ByteBuffer nothing = ByteBuffer.allocate(1);
                    while (stranger.read(nothing.clear()) >= 0) transport.progress();
                }
            }
            assertEquals(1, warnings.size(), "warnings logged for " + strangers + " connections with a wrong token, made one after "
                    + "another within a minute: " + warnings);
            assertTrue(warnings.getFirst().contains("wrong token"), warnings.getFirst());
        }
    }

    /** A logger that keeps the text of every WARNING. */
    private static System.Logger recording(List<String> warnings) {
        return new System.Logger() {
            @Override
            public String getName() {
                return "tcp-test";
            }

            @Override
            public boolean isLoggable(Level level) {
                return true;
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String message, Throwable thrown) {
                if (level == Level.WARNING) warnings.add(message);
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String format, Object... params) {
                if (level == Level.WARNING) warnings.add(params == null || params.length == 0 ? format
                        : java.text.MessageFormat.format(format, params));
            }
        };
    }
}
