package dev.conduit.tck;

import dev.conduit.spi.ConduitPlugin;

/** The TCK's own well-behaved transport fixture passes the transport suite (the baseline of {@link TckCatchesBrokenPluginsTest}). */
class LoopbackPluginTckTest extends TransportContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new LoopbackPlugin();
    }
}
