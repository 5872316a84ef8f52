package dev.conduit.spi;

import java.io.Serial;
import java.util.Objects;

/**
 * The peer of an endpoint died, hung past its heartbeat timeout, closed its worker, refused the
 * endpoint or can no longer be reached through memory both trust. Every operation on the endpoint
 * fails with it from then on, and the endpoint's error callback receives it once. {@link #reason()}
 * says which, for a program to act on (a publisher connects again to a subscriber that
 * {@linkplain Reason#CLOSED closed}, and alarms on one that {@linkplain Reason#DIED died}; a
 * coordinator takes back a lock only from a holder that died); the message says it for a reader,
 * with the lease, limit or key concerned. The shared-memory transports say "peer worker died" for a
 * process gone without closing (kill -9, a crash) or during its close ("died while closing"),
 * "peer worker closed" for an orderly close, "is hung" for a peer that stopped progressing,
 * "refused this connection" for a peer that drops what this endpoint sends (past one of its
 * limits, or after a record that broke the protocol: the message says which), and "reads nothing
 * more" for a peer that found its receive queue's header overwritten.
 * A peer that closes only its own endpoint to this worker fails nothing here: it just sends no
 * more.
 *
 * <p>Thrown (or reported) by transports through the runtime, which keeps the transport's reason in
 * every failure it makes of it (the endpoint's, the error handler's, a reply endpoint's). A plugin
 * built before SPI 1.1 added the reason (its constructors without one) reports {@link Reason#UNKNOWN}.
 */
public class PeerFailedException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    /**
     * Why the peer failed, as far as the transport can tell: what UCX says with an endpoint's
     * status code (docs/coming-from-ucx-and-aeron.md maps the two). Since SPI 1.1.
     */
    public enum Reason {
        /**
         * The peer's process ended without closing its worker (kill -9, a crash), or while closing
         * it. Nothing writes on its behalf any more: what it held can be taken back.
         */
        DIED,
        /**
         * The peer closed its worker (or its Conduit) in order. Its process may live on and connect
         * again; memory it exported may still be written by it.
         */
        CLOSED,
        /**
         * The peer made no progress past the transport's heartbeat timeout while this endpoint
         * waited on it (its queue full, a handshake unanswered). It may be stopped or only slow: it
         * may resume and write again.
         */
        HUNG,
        /**
         * The peer lives and progresses but drops what this endpoint sends: it refused the
         * connection (past one of its limits, or after a record of this endpoint that broke the
         * protocol) or the means it needs (a bounce ring it cannot map).
         */
        REFUSED,
        /**
         * The memory or protocol between the two can no longer be trusted: a queue header
         * overwritten, a mapping truncated under a copy, a record of the peer that breaks the
         * protocol. The peer may still live.
         */
        DAMAGED,
        /**
         * The transport cannot tell (a connection ended, which a close and a death end alike, or a
         * host unreachable) or does not say (a plugin built before SPI 1.1).
         */
        UNKNOWN
    }

    private final Reason reason;

    /** A failure whose reason is {@link Reason#UNKNOWN}. */
    public PeerFailedException(String message) {
        this(Reason.UNKNOWN, message);
    }

    /** A failure whose reason is {@link Reason#UNKNOWN}. */
    public PeerFailedException(String message, Throwable cause) {
        this(Reason.UNKNOWN, message, cause);
    }

    /** Since SPI 1.1. */
    public PeerFailedException(Reason reason, String message) {
        super(message);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** Since SPI 1.1. */
    public PeerFailedException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /**
     * A failure that says the same as {@code failure}, which it keeps as its cause, with its
     * reason: how the runtime passes a transport's failure on under a message of its own. Since
     * SPI 1.1.
     */
    public PeerFailedException(String message, PeerFailedException failure) {
        this(failure == null ? Reason.UNKNOWN : failure.reason, message, failure);
    }

    /** Why the peer failed; {@link Reason#UNKNOWN} when the transport cannot tell or does not say. Since SPI 1.1. */
    public Reason reason() {
        return reason;
    }
}
