package dev.conduit.spi;

import java.io.Serial;

/**
 * Base of every exception Conduit throws. Messages name the cause (system call and errno name,
 * path, field or config key) and, where there is one, the remedy.
 *
 * <p>Thrown by the runtime and by plugins; caught by applications. Unchecked, like
 * {@link java.io.UncheckedIOException}: most failures are not recoverable where they surface.
 */
public class ConduitException extends RuntimeException {
    @Serial private static final long serialVersionUID = 1L;

    public ConduitException(String message) {
        super(message);
    }

    public ConduitException(String message, Throwable cause) {
        super(message, cause);
    }
}
