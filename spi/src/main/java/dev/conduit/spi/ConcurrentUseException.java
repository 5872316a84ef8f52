package dev.conduit.spi;

import java.io.Serial;

/**
 * Two threads used an object in {@link ThreadMode#SERIALIZED} mode at the same time. The runtime
 * detects the overlap (an atomic in-use flag) and throws this instead of letting the plugin
 * corrupt its state; the call that lost the race did nothing.
 *
 * <p>Thrown by the runtime's thread-mode guard; never by plugins.
 */
public class ConcurrentUseException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    public ConcurrentUseException(String message) {
        super(message);
    }
}
