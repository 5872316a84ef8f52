package dev.conduit.spi;

/**
 * What the runtime gives a transport when it opens one for a worker.
 *
 * <p><b>Implemented by</b> the runtime; <b>used by</b> transport plugins.
 */
public interface TransportContext extends PluginContext {

    /**
     * The thread mode the runtime enforces on this worker. The runtime has already made sure that
     * the transport is only called in a mode it declares; a transport may use this to pick cheaper
     * internals (no atomics when {@link ThreadMode#SINGLE}).
     */
    ThreadMode threadMode();

    /** Where the transport delivers the active messages it receives, during {@link Transport#progress()}. */
    MessageSink messageSink();

    /** Maps peers' exported regions through the runtime's central IPC cache, for RMA. */
    RemoteMemory remoteMemory();
}
