package dev.conduit.plugin.memfd;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.TransportContract;

/** The TCK's transport suite, run on the memfd plugin. */
class MemfdTransportTckTest extends TransportContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new MemfdPlugin();
    }
}
