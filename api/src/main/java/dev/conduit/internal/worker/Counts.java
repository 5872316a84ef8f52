package dev.conduit.internal.worker;

/**
 * A count and its noun, singular for one, for the messages a user reads: "1 byte", "1 message".
 */
final class Counts {

    private Counts() {
    }

    /** {@code n} bytes: "1 byte", "16 bytes". */
    static String bytes(long n) {
        return n + (n == 1 ? " byte" : " bytes");
    }

    /** {@code n} messages: "1 message", "3 messages". */
    static String messages(long n) {
        return n + (n == 1 ? " message" : " messages");
    }
}
