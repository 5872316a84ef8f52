package dev.conduit.internal;

import dev.conduit.spi.ConduitPlugin;

import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Everything a {@link dev.conduit.ConduitBuilder} collected, handed to the runtime as one value.
 *
 * @param builderValues    configuration set in code, by key name
 * @param environment      the environment to read {@code CONDUIT_*} variables from
 * @param systemProperties the properties to read {@code conduit.*} properties from
 * @param classLoader      where class-path plugins are looked up
 * @param discover         whether to use {@link java.util.ServiceLoader} at all
 * @param extraPlugins     plugin instances added in code
 */
public record RuntimeSettings(Map<String, String> builderValues, Map<String, String> environment,
                              Properties systemProperties, ClassLoader classLoader, boolean discover,
                              List<ConduitPlugin> extraPlugins) {
}
