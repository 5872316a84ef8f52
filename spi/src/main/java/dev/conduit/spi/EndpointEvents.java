package dev.conduit.spi;

/**
 * Events of one endpoint that a transport reports to the runtime.
 *
 * <p><b>Implemented by</b> the runtime; <b>called by</b> transports, on the thread the runtime
 * called them on, from {@link Transport#progress()}; from {@link TransportEndpoint#checkPeer()} (the
 * runtime's keepalive), which then returns normally; from {@link Transport#connect} before it
 * returns (the runtime keeps the report until the endpoint exists); and from the endpoint's own
 * {@link TransportEndpoint#trySend trySend} or {@link TransportEndpoint#trySendEncoded trySendEncoded}
 * when the send finds the peer gone or the memory it writes damaged (memfd and posix do, for a
 * mapping that faulted or a peer's queue found corrupt), after which that call throws the
 * reported {@link PeerFailedException}, or returns as having sent when it took the message before
 * it found out (one that reports and then refuses the message, as if there were no room, has the
 * application's send throw the failure, the message not queued). The runtime fails the endpoint on a report: it discards and counts the endpoint's
 * local queue and calls the application's error handler from the worker's next progress; a
 * report made while the runtime hands a queued message over (the worker's progress draining the
 * queue) waits for that send's answer, so that a message the send took is not counted among those
 * discarded.
 *
 * <p>Never from a thread of the plugin's own: the report discards the endpoint's local queue,
 * which the runtime guards with a lock only in a {@code MULTI} worker over a plugin that declares
 * {@code MULTI}; elsewhere a report from another thread races with the application's sends on
 * that queue.
 */
public interface EndpointEvents {

    /** The peer died, hung past its heartbeat timeout, or the connection broke. Reported once. */
    void peerFailed(PeerFailedException cause);
}
