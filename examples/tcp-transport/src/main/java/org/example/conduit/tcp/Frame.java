package org.example.conduit.tcp;

import dev.conduit.spi.ConduitException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The wire format, at version {@link #VERSION}, which the transport's address carries first: a
 * peer of another version is refused at the connect, naming both, rather than misreading the
 * stream. A connection starts with a hello: the receiver's 16-byte token (from its
 * address), then the connector's own transport address, which the receiver gives for
 * {@code Transport.senderAddress} (a reply's connect), little-endian:
 *
 * <pre>
 * +-------------+--------------------+-------------------+
 * | token (16)  | address len (u16)  | address (n bytes) |
 * |             | n, at most 1024    |                   |
 * +-------------+--------------------+-------------------+
 * </pre>
 *
 * The receiver answers a hello whose token is its own with {@link #ACK}, the only bytes it ever
 * writes on the connection; anything else (a wrong token, an address of no length or too long)
 * it closes. Then the connector sends frames:
 *
 * <pre>
 * +----------------+----------+----------------+-----------+------------+
 * | length (u32)   | id (i32) | header len u32 | header    | payload    |
 * | 12 + h + p     |          | h              | h bytes   | p bytes    |
 * +----------------+----------+----------------+-----------+------------+
 * </pre>
 */
final class Frame {

    /**
     * 4: the receiver acknowledges the hello (3: it did not, and connect returned an endpoint to whatever listened on the port;
     * 2: the address carried no loopback scope, and a loopback address was tried from any network namespace;
     * 1: the hello carried the token alone, and the address had no version).
     */
    static final int VERSION = 4;
    /** The receiver's answer to a hello it verified: fixed, and carrying the version, so that no other program's bytes pass for it. */
    static final byte[] ACK = {'a', 'c', 'k', VERSION};
    static final int TOKEN_LENGTH = 16;
    /** The hello before the connector's address: the token and the address's length. */
    static final int HELLO_PREFIX = TOKEN_LENGTH + 2;
    static final int PREFIX = 12;
    static final int MAX_HEADER = 1024;
    /**
     * The largest {@code tcp.max.payload}: a whole frame sits in one {@link ByteBuffer}, whose
     * capacity is an int, so a larger key would overflow its size; 1 GiB is the round size below.
     */
    static final long MAX_PAYLOAD = 1L << 30;

    private Frame() {
    }

    /**
     * A direct buffer for one whole frame of up to {@code maxPayload} bytes of payload. Direct
     * memory is bounded apart from the heap (-XX:MaxDirectMemorySize): running out of it is a
     * ConduitException naming the key that sizes the buffer, not an Error from deep inside a connect
     * or a progress().
     */
    static ByteBuffer buffer(int maxPayload) {
        int capacity = PREFIX + MAX_HEADER + maxPayload;
        try {
            return ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        } catch (OutOfMemoryError e) {
            throw new ConduitException("tcp: no direct memory for a connection's frame buffer of " + capacity + " bytes ("
                    + e.getMessage() + "); lower tcp.max.payload (CONDUIT_TCP_MAX_PAYLOAD) or raise the JVM's -XX:MaxDirectMemorySize", e);
        }
    }
}
