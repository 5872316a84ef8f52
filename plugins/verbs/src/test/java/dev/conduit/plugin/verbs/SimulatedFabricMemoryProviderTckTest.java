package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.MemoryProviderContract;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.util.Map;

/**
 * The TCK's memory-provider suite, run on the real verbs plugin over {@link LoopbackVerbs}: <b>a simulated
 * fabric, not a device</b> ({@link SimulatedFabric} says what that shows and what it checks
 * besides). {@link RealDeviceMemoryProviderTckTest} runs the same suite on a device where one exists.
 */
class SimulatedFabricMemoryProviderTckTest extends MemoryProviderContract {

    @RegisterExtension
    final SimulatedFabric fabric = new SimulatedFabric();

    @Override
    protected ConduitPlugin newPlugin() {
        return fabric.newPlugin();
    }

    @Override
    protected Map<String, String> configuration(Path sharedDirectory) {
        return fabric.configuration();
    }
}
