package dev.conduit.spi;

/**
 * What the runtime gives a transport when it opens one for a worker.
 *
 * <p><b>Implemented by</b> the runtime; <b>used by</b> transport plugins.
 */
public interface TransportContext extends PluginContext {

    /**
     * The thread mode this transport is called in, one its declared modes serve (a plugin that
     * declares {@code MULTI} serves every mode, one that declares {@code SERIALIZED} serves
     * {@code SINGLE} too): the worker's mode, but
     * {@link ThreadMode#SERIALIZED} under a {@code MULTI} worker for a plugin that does not declare
     * {@code MULTI} (the runtime's lock serializes its calls), and {@link ThreadMode#SINGLE} for a
     * plugin confined to one runtime thread ({@code thread.confine}). A transport may use this to
     * pick cheaper internals (no atomics when {@code SINGLE}). Calls never overlap but in
     * {@code MULTI}; in {@code SINGLE} they come from one thread, except, for a plugin that also
     * declares {@code SERIALIZED} or {@code MULTI}, the sleep of {@link Transport#await} for an
     * owner that is a virtual thread, which the runtime makes on a platform thread of its own: keep
     * nothing confined to a thread (a confined arena) unless the plugin declares {@code SINGLE}
     * alone. {@link Transport#signal()} may come from any thread in every mode.
     */
    ThreadMode threadMode();

    /** Where the transport delivers the active messages it receives, during {@link Transport#progress()}. */
    MessageSink messageSink();

    /** Maps peers' exported regions through the runtime's central IPC cache, for RMA. */
    RemoteMemory remoteMemory();
}
