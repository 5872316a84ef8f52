package dev.conduit;

import dev.conduit.spi.PeerFailedException;

/**
 * Told when an endpoint's peer failed ({@link Worker#connect(WorkerAddress, EndpointErrorHandler)}).
 *
 * <p>Called once per endpoint, on a thread calling {@link Worker#progress()} (or
 * {@link Worker#await}), inside the worker's guard, after the transports' progress step: it may
 * close the endpoint or connect again. An exception it throws propagates out of that
 * {@code progress()} call, as a message handler's does. Once it returns, the worker gives back
 * what the failed endpoint held (its transport endpoint and peer regions), so an endpoint dropped
 * unclosed leaks nothing; closing it is still allowed, and it keeps throwing the failure.
 */
@FunctionalInterface
public interface EndpointErrorHandler {

    /**
     * @param endpoint the endpoint that failed; every operation on it now throws {@link PeerFailedException}
     * @param cause    why, with the transport's report as its cause: its
     *                 {@link PeerFailedException#reason() reason()} is the transport's, for the handler
     *                 to switch on (a close, a death, a hang); its message says how many locally
     *                 queued messages were discarded
     */
    void onError(Endpoint endpoint, PeerFailedException cause);
}
