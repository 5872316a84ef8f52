package dev.conduit.plugin.devdax;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.MemoryProviderContract;
import org.junit.jupiter.api.AfterEach;

import java.nio.file.Path;
import java.util.Map;

/** The TCK's memory-provider suite, run on the devdaxplugin over a file-backed device (no DAX hardware here; {@link RealDeviceTest} covers a real one where it exists). */
class DevdaxMemoryProviderTckTest extends MemoryProviderContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new DevdaxPlugin();
    }

    private final Fixtures.TckDevice device = new Fixtures.TckDevice();

    @Override
    protected Map<String, String> configuration(Path sharedDirectory) {
        return device.configuration();
    }

    @AfterEach
    void deleteDevice() throws Exception {
        device.delete();
    }
}
