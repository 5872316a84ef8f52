package dev.conduit.spi;

import java.io.Serial;

/**
 * The peer of an endpoint died, hung past its heartbeat timeout, or closed the connection. Every
 * operation on the endpoint fails with it from then on, and the endpoint's error callback receives
 * it once.
 *
 * <p>Thrown (or reported) by transports through the runtime.
 */
public class PeerFailedException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    public PeerFailedException(String message) {
        super(message);
    }

    public PeerFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
