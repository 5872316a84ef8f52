package dev.conduit.shm;

import dev.conduit.spi.MessageSink;

import java.lang.foreign.MemorySegment;

/**
 * A test's sink of the shared-memory transport, which delivers every message with its sender's
 * key: a delivery through the form without it fails the test.
 */
interface KeyedMessageSink extends MessageSink {

    @Override
    default void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                           MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        throw new AssertionError("message " + id + " delivered without its sender's key");
    }
}
