package dev.conduit.internal;

import dev.conduit.spi.Config;
import dev.conduit.spi.PluginContext;

import java.nio.file.Path;

/**
 * The context one plugin is given: the shared configuration, this process's view of the shared
 * directory, and a logger named after the plugin.
 */
public record RuntimePluginContext(Config config, Path sharedDirectory, System.Logger logger) implements PluginContext {

    public static RuntimePluginContext of(Config config, Path sharedDirectory, String plugin) {
        return new RuntimePluginContext(config, sharedDirectory, System.getLogger("dev.conduit.plugin." + plugin));
    }
}
