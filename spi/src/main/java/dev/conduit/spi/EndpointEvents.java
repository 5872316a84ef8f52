package dev.conduit.spi;

/**
 * Events of one endpoint that a transport reports to the runtime.
 *
 * <p><b>Implemented by</b> the runtime; <b>called by</b> transports, from {@link Transport#progress()}
 * or from {@link TransportEndpoint#checkPeer()} (the runtime's keepalive).
 */
public interface EndpointEvents {

    /** The peer died, hung past its heartbeat timeout, or the connection broke. Reported once. */
    void peerFailed(PeerFailedException cause);
}
