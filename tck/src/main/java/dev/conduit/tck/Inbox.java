package dev.conduit.tck;

import dev.conduit.spi.MessageSink;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A message sink that copies out every message it is given, in arrival order. */
final class Inbox implements MessageSink {

    record Received(int id, byte[] header, byte[] payload) {
    }

    final List<Received> messages = new CopyOnWriteArrayList<>();

    @Override
    public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                          MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        messages.add(new Received(id,
                headerBuffer.asSlice(headerOffset, headerLength).toArray(ValueLayout.JAVA_BYTE),
                payloadBuffer.asSlice(payloadOffset, payloadLength).toArray(ValueLayout.JAVA_BYTE)));
    }

    int size() {
        return messages.size();
    }
}
