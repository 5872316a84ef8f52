package dev.conduit.spi;

import java.io.Serial;

/**
 * An optional operation that this plugin does not provide, like UMF's
 * {@code UMF_RESULT_ERROR_NOT_SUPPORTED}. A plugin says "not supported" rather than guess.
 *
 * <p>Thrown by the default methods of {@link ConduitPlugin}, {@link MemoryProvider} and
 * {@link TransportEndpoint}; the runtime turns it into an error that names the plugin and the
 * capability it would have needed.
 */
public class NotSupportedException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    public NotSupportedException(String message) {
        super(message);
    }
}
