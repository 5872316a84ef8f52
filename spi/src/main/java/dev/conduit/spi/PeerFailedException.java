package dev.conduit.spi;

import java.io.Serial;

/**
 * The peer of an endpoint died, hung past its heartbeat timeout, or closed its worker. Every
 * operation on the endpoint fails with it from then on, and the endpoint's error callback receives
 * it once. The message says which: the shared-memory transports say "peer worker died" for a
 * process gone without closing (kill -9, a crash) or during its close ("died while closing"),
 * "peer worker closed" for an orderly close, "is hung" for a peer that stopped progressing,
 * "refused this connection" for a peer that drops what this endpoint sends (past one of its
 * limits, or after a record that broke the protocol: the message says which), and "reads nothing more" for a peer that found its receive
 * queue's header overwritten.
 * A peer that closes only its own endpoint to this worker fails nothing here: it just sends no
 * more.
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
