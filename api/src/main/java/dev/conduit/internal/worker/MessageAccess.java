package dev.conduit.internal.worker;

import dev.conduit.Message;

import java.lang.foreign.MemorySegment;

/**
 * The runtime's access to {@link Message}'s non-public state, which lives in another package: the
 * class installs an implementation when it is initialized (as the JDK's {@code SharedSecrets}).
 * This package is not exported, so applications cannot reach it.
 */
public abstract class MessageAccess {

    private static volatile MessageAccess instance;

    /** Called once, by {@link Message}'s static initializer. */
    public static void install(MessageAccess access) {
        if (instance != null) throw new IllegalStateException("already installed");
        instance = access;
    }

    static MessageAccess get() {
        MessageAccess a = instance;
        if (a == null) {
            try {
                Class.forName(Message.class.getName(), true, Message.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new AssertionError(e);
            }
            a = instance;
        }
        return a;
    }

    /** A new, invalid flyweight. */
    public abstract Message create();

    /**
     * Points {@code m} at one message and makes it valid; {@code from} and {@code sender} say whom
     * to answer ({@code Message.replyEndpoint()}): the sink of the transport it came through (null
     * for none) and that transport's key of the connection (0 when it does not name it).
     */
    public abstract void fill(Message m, int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                              MemorySegment payloadBuffer, long payloadOffset, long payloadLength, TransportSink from, long sender);

    /**
     * Makes {@code m} invalid and drops its references to the message's buffers. It keeps the
     * read-only view of the last writable buffer its payload came from (and so that buffer), which
     * spares the next message from the same buffer a new view.
     */
    public abstract void invalidate(Message m);
}
