package org.example.conduit.tcp;

/**
 * The wire format. A connection starts with the receiver's 16-byte token (from its address), then
 * carries frames, little-endian:
 *
 * <pre>
 * +----------------+----------+----------------+-----------+------------+
 * | length (u32)   | id (i32) | header len u32 | header    | payload    |
 * | 12 + h + p     |          | h              | h bytes   | p bytes    |
 * +----------------+----------+----------------+-----------+------------+
 * </pre>
 */
final class Frame {

    static final int TOKEN_LENGTH = 16;
    static final int PREFIX = 12;
    static final int MAX_HEADER = 1024;

    private Frame() {
    }
}
