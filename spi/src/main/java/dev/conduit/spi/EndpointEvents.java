package dev.conduit.spi;

/**
 * Events of one endpoint that a transport reports to the runtime.
 *
 * <p><b>Implemented by</b> the runtime; <b>called by</b> transports, from {@link Transport#progress()}
 * or from {@link TransportEndpoint#checkPeer()} (the runtime's keepalive), on the thread the runtime
 * called them on; also from {@link Transport#connect} before it returns (the runtime keeps the
 * report until the endpoint exists). Never from a thread of the plugin's own: the report discards
 * the endpoint's local queue, which the runtime guards with a lock only in a {@code MULTI} worker
 * over a plugin that declares {@code MULTI}; elsewhere a report from another thread races with the
 * application's sends on that queue.
 */
public interface EndpointEvents {

    /** The peer died, hung past its heartbeat timeout, or the connection broke. Reported once. */
    void peerFailed(PeerFailedException cause);
}
