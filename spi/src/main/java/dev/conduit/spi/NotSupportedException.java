package dev.conduit.spi;

import java.io.Serial;

/**
 * An optional operation that this plugin does not provide, like UMF's
 * {@code UMF_RESULT_ERROR_NOT_SUPPORTED}. A plugin says "not supported" rather than guess.
 *
 * <p>Thrown by the default methods of {@link ConduitPlugin}, {@link MemoryProvider},
 * {@link Transport} ({@code await}, {@code signal}, {@code senderAddress}) and
 * {@link TransportEndpoint}. Where an application asked for the operation, the runtime turns it
 * into an error that names the plugin and the capability it would have needed; where the operation
 * is one the runtime offers to use ({@link TransportEndpoint#trySendEncoded},
 * {@link TransportEndpoint#checkPeer}), it is the answer "not offered": the runtime encodes into a
 * buffer of its own, or stops probing that endpoint, and nothing fails.
 */
public class NotSupportedException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    public NotSupportedException(String message) {
        super(message);
    }
}
