package org.example.conduit.tcp;

import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A whole frame sits in one ByteBuffer, whose capacity is an int: tcp.max.payload is bounded by
 * what it holds ({@link Frame#MAX_PAYLOAD}), so that a larger value is refused as the transport
 * opens, naming the key and its range. Unbounded, 4g failed the open with an ArithmeticException
 * "integer overflow" that named nothing, and 2147483000 opened, then overflowed the frame buffer's
 * size at every connect, after the socket had connected.
 */
class TcpMaxPayloadBoundsTest {

    @ParameterizedTest
    @ValueSource(strings = {"4g", "2147483000", "1025m"})
    void aMaxPayloadAFrameBufferCannotHoldIsRefusedAtOpenNamingTheKeyAndItsRange(String value, @TempDir Path shared) {
        RuntimeException refusal = assertThrows(RuntimeException.class, () -> new TcpPlugin()
                .openTransport(TestContext.of(shared, "tcp.max.payload", value)
                        .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))
                .close(), "tcp.max.payload=" + value + " opened a transport");
        assertTrue(String.valueOf(refusal.getMessage()).contains("tcp.max.payload")
                && refusal.getMessage().contains("from 1024 to " + (1L << 30)), "the refusal of tcp.max.payload=" + value + ": " + refusal);
    }

    @ParameterizedTest
    @ValueSource(strings = {"1g", "1024"})
    void aMaxPayloadAtEitherEndOfTheRangeOpens(String value, @TempDir Path shared) {
        new TcpPlugin().openTransport(TestContext.of(shared, "tcp.max.payload", value)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { })).close();
    }
}
