package dev.conduit.tck.modular;

import dev.conduit.spi.ConduitPlugin;

/** A provider factory of {@link ModularPlugin}: ServiceLoader calls {@link #provider()}, declared to return any plugin. */
public final class ModularPluginFactory {

    private ModularPluginFactory() {
    }

    public static ConduitPlugin provider() {
        return new ModularPlugin();
    }
}
