package dev.conduit.spi;

import java.io.Serial;
import java.util.Objects;

/**
 * Bytes given as an IPC handle (or any other peer-written record) are not valid. The exception
 * names the {@linkplain #field() field} that failed validation, so that a corrupted, truncated or
 * hostile record can be told apart from a stale one.
 *
 * <p>Thrown by the runtime's handle and address decoders, by a plugin's {@link IpcImporter} when it
 * decodes its own payload, and by a transport decoding its part of a peer's address. Nothing is
 * opened or mapped when it is thrown. The message starts with what the bytes were given as
 * ({@code invalid Conduit worker address: field 'magic': …}); {@code handle} unless the
 * {@link PayloadReader} that found the fault was told otherwise.
 */
public class InvalidHandleException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    private final String field;

    public InvalidHandleException(String field, String message) {
        this("handle", field, message);
    }

    /**
     * @param what what the bytes were given as, for the message: {@code "Conduit worker address"},
     *             {@code "verbs wire-up message"}
     * @since SPI 1.1
     */
    public InvalidHandleException(String what, String field, String message) {
        super("invalid " + Objects.requireNonNull(what, "what") + ": field '" + Objects.requireNonNull(field) + "': " + message);
        this.field = field;
    }

    /** The name of the field that failed validation, e.g. {@code "magic"} or {@code "payload.path"}. */
    public String field() {
        return field;
    }
}
