package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * Receives the active messages a transport takes off its queue.
 *
 * <p><b>Implemented by</b> the runtime (which dispatches to the application's handler for
 * {@code id}); <b>called by</b> transports during {@link Transport#progress()}, on the progress
 * thread.
 *
 * <p>Header and payload are given as a buffer, an offset and a length, not as slices, so that
 * delivering a message allocates nothing: a transport passes the same long-lived segments (its
 * receive queue, its bounce buffers) for every message. The bytes are valid only until this call
 * returns; the runtime exposes them to the application read-only. Pass read-only segments
 * ({@code asReadOnly()}, made once): the application's {@code Message.payloadBuffer()} is then the
 * segment itself; from a writable one the runtime makes a read-only view, once per segment in a
 * row.
 */
public interface MessageSink {

    /**
     * Delivers one message.
     *
     * @param id            the active-message id the sender used
     * @param headerBuffer  the segment holding the header
     * @param headerOffset  where the header starts in it
     * @param headerLength  its length (may be 0)
     * @param payloadBuffer the segment holding the payload (may be {@code headerBuffer})
     * @param payloadOffset where the payload starts in it
     * @param payloadLength its length (may be 0)
     */
    void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                   MemorySegment payloadBuffer, long payloadOffset, long payloadLength);
}
