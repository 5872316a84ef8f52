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
     * @throws InvalidHandleException naming the field, when the handle is malformed (one that
     *         contradicts what the cache holds for its export is mapped beside it, as a miss)
     * @throws ConduitException       when this process maps such regions (the exporting plugin is
     *         selected here and imports) but cannot map this one: the export is gone (its producer
     *         freed it), or the plugin's importer refused it, with the importer's reason
     * @throws IllegalStateException  when the worker's {@code Conduit} is closed
     */
    RemoteRegion open(byte[] handle);
}
