package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.MemoryProviderContract;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
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

    /**
     * The simulated fabric lives in this JVM: the second JVM of this check would open the real verbs
     * plugin and find no device. Nor would it find a file to look at: verbs memory makes none in the
     * shared directory (its chunks are the process's native memory and the adapter's registrations, which the
     * kernel takes back with the process), which {@link RealDeviceMemoryProviderTckTest} shows where a
     * device is.
     */
    @Test
    @Override
    public void aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay() {
        Assumptions.abort("the simulated fabric is this JVM's alone, so a second JVM finds no device; and verbs memory makes no file "
                + "in the shared directory (RealDeviceMemoryProviderTckTest runs the check where a device is)");
    }
}
