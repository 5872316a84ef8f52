package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * Receives the active messages a transport takes off its queue.
 *
 * <p><b>Implemented by</b> the runtime (which dispatches to the application's handler for
 * {@code id}); <b>called by</b> transports during {@link Transport#progress()}, on the progress
 * thread.
 */
public interface MessageSink {

    /**
     * Delivers one message. {@code header} and {@code payload} may be views of shared memory that
     * are valid only until this call returns; the runtime hands them to the application read-only.
     */
    void onMessage(int id, MemorySegment header, MemorySegment payload);
}
