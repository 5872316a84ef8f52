package org.example.conduit.tcp;

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
 * Then it carries frames:
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
     * 3: the address carries its loopback scope (2: it did not, and a loopback address was tried from any network namespace;
     * 1: the hello carried the token alone, and the address had no version).
     */
    static final int VERSION = 3;
    static final int TOKEN_LENGTH = 16;
    /** The hello before the connector's address: the token and the address's length. */
    static final int HELLO_PREFIX = TOKEN_LENGTH + 2;
    static final int PREFIX = 12;
    static final int MAX_HEADER = 1024;

    private Frame() {
    }
}
