package dev.conduit.spi;

import java.io.Serial;
import java.util.Objects;

/**
 * Bytes given as an IPC handle (or any other peer-written record) are not valid. The exception
 * names the {@linkplain #field() field} that failed validation, so that a corrupted, truncated or
 * hostile record can be told apart from a stale one.
 *
 * <p>Thrown by the runtime's handle decoder and by a plugin's {@link IpcImporter} when it decodes
 * its own payload. Nothing is opened or mapped when it is thrown.
 */
public class InvalidHandleException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    private final String field;

    public InvalidHandleException(String field, String message) {
        super("invalid handle: field '" + Objects.requireNonNull(field) + "': " + message);
        this.field = field;
    }

    /** The name of the field that failed validation, e.g. {@code "magic"} or {@code "payload.path"}. */
    public String field() {
        return field;
    }
}
