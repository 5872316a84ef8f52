package dev.conduit.internal;

import dev.conduit.internal.threading.PlatformHandOff;
import dev.conduit.spi.Config;
import dev.conduit.spi.PluginContext;

import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * The context one plugin is given: the shared configuration, this process's view of the shared
 * directory, a logger named after the plugin, and its blocking calls made off virtual threads.
 */
public record RuntimePluginContext(Config config, Path sharedDirectory, System.Logger logger) implements PluginContext {

    public static RuntimePluginContext of(Config config, Path sharedDirectory, String plugin) {
        return new RuntimePluginContext(config, sharedDirectory, System.getLogger("dev.conduit.plugin." + plugin));
    }

    /** On a platform thread for a virtual thread, which parks meanwhile ({@link PlatformHandOff#blockingCall}). */
    @Override
    public <T> T blockingCall(Supplier<T> call) {
        return PlatformHandOff.blockingCall(call);
    }
}
