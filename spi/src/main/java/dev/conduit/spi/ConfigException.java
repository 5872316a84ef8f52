package dev.conduit.spi;

import java.io.Serial;

/**
 * A configuration value is malformed or a configuration key is unknown. The message names the
 * key (as property and environment variable), the value, and the form that was expected.
 *
 * <p>Thrown by {@link ConfigKey#parse(String, String)} and by the runtime when it resolves configuration.
 */
public class ConfigException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
