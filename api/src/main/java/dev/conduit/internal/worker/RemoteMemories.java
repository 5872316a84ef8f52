package dev.conduit.internal.worker;

import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.RemoteMemory;

/** Remote-memory access for transports. */
final class RemoteMemories {

    private RemoteMemories() {
    }

    /** For a runtime without an IPC cache: RMA is refused, naming why. */
    static RemoteMemory unavailable() {
        return handle -> {
            throw new NotSupportedException("remote regions need the runtime's IPC cache, which this worker was opened without");
        };
    }
}
