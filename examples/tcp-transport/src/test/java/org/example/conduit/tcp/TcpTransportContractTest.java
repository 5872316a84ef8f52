package org.example.conduit.tcp;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.TransportContract;

/** The TCK's TransportContract suite: what proves this plugin correct. One subclass per suite is all it takes. */
class TcpTransportContractTest extends TransportContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new TcpPlugin();
    }
}
