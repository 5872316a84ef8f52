package dev.conduit.shm;

import dev.conduit.spi.ConduitException;

/**
 * An importer's finding that the producer of what it imports refused, reset or closed the
 * connection, or is no longer there. A process being killed does that too, before the kernel
 * releases its lease (its descriptors close one at a time), so a transport that still finds the
 * producer's lease held looks again once before it believes the refusal.
 */
public final class ProducerGoneException extends ConduitException {
    @java.io.Serial private static final long serialVersionUID = 1L;

    public ProducerGoneException(String message, Throwable cause) {
        super(message, cause);
    }
}
