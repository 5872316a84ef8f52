package org.example.conduit.tcp;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.PluginMetadataContract;

/** The TCK's PluginMetadataContract suite: what proves this plugin correct. One subclass per suite is all it takes. */
class TcpMetadataContractTest extends PluginMetadataContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new TcpPlugin();
    }
}
