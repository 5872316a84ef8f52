package dev.conduit.spi;

import java.io.Serial;

/**
 * Base of every exception Conduit throws for a failure of the system, a peer, a plugin or the
 * configuration. Messages name the cause (system call and errno name, path, field or config key)
 * and, where there is one, the remedy. A misuse of the API is the JDK's exception instead, as each
 * method's javadoc says: {@link IllegalStateException} for a closed object or a call from a
 * handler, {@link WrongThreadException} for a {@code SINGLE} object used from another thread,
 * {@link IllegalArgumentException} and {@link IndexOutOfBoundsException} for arguments.
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
