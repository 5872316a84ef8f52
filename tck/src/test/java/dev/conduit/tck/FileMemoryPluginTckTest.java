package dev.conduit.tck;

import dev.conduit.spi.ConduitPlugin;

/** The TCK's own well-behaved memory fixture passes the memory-provider suite (the baseline of {@link TckCatchesBrokenPluginsTest}). */
class FileMemoryPluginTckTest extends MemoryProviderContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new FileMemoryPlugin();
    }
}
