package dev.conduit.spi;

/**
 * Access to peers' exported regions, through the runtime's central IPC cache.
 *
 * <p><b>Implemented by</b> the runtime; <b>used by</b> transports for RMA.
 */
public interface RemoteMemory {

    /**
     * Opens the region an IPC handle describes. When this process can map it (same host), the
     * mapping comes from the IPC cache; otherwise only the handle's fields are available.
     *
     * @throws InvalidHandleException naming the field, when the handle is malformed
     */
    RemoteRegion open(byte[] handle);
}
