package dev.conduit.plugin.memfd;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.MemoryProviderContract;

/** The TCK's memory-provider suite, run on the memfd plugin. */
class MemfdMemoryProviderTckTest extends MemoryProviderContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new MemfdPlugin();
    }
}
