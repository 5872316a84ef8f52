package dev.conduit.plugin.memfd;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.PluginMetadataContract;

/** The TCK's plugin-metadata suite, run on the memfd plugin. */
class MemfdMetadataTckTest extends PluginMetadataContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new MemfdPlugin();
    }
}
