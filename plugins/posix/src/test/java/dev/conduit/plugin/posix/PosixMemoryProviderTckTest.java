package dev.conduit.plugin.posix;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.MemoryProviderContract;

import java.io.IOException;
import java.nio.file.Path;

/** The TCK's memory-provider suite, run on the posix plugin in a directory under /dev/shm. */
class PosixMemoryProviderTckTest extends MemoryProviderContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new PosixPlugin();
    }

    @Override
    protected Path newSharedDirectory() throws IOException {
        return ShmTempDirFactory.create();
    }
}
