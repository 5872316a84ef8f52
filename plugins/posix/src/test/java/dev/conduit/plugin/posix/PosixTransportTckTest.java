package dev.conduit.plugin.posix;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.TransportContract;

import java.io.IOException;
import java.nio.file.Path;

/** The TCK's transport suite, run on the posix plugin in a directory under /dev/shm. */
class PosixTransportTckTest extends TransportContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new PosixPlugin();
    }

    @Override
    protected Path newSharedDirectory() throws IOException {
        return ShmTempDirFactory.create();
    }
}
