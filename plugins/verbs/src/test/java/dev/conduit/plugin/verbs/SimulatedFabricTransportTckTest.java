package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.TransportContract;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.util.Map;

/**
 * The TCK's transport suite, run on the real verbs plugin over {@link LoopbackVerbs}: <b>a simulated
 * fabric, not a device</b> ({@link SimulatedFabric} says what that shows and what it checks
 * besides). {@link RealDeviceTransportTckTest} runs the same suite on a device where one exists.
 */
class SimulatedFabricTransportTckTest extends TransportContract {

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
     * plugin and find no device. Nor would it find a file to look at: a verbs worker makes none in
     * the shared directory (its queue pairs and registrations are the adapter's, which the kernel
     * takes back with the process), which {@link RealDeviceTransportTckTest} shows where a device is.
     */
    @Test
    @Override
    public void aKilledWorkersFilesAreReclaimedByTheNextTransportAndALiveOnesStay() {
        Assumptions.abort("the simulated fabric is this JVM's alone, so a second JVM finds no device; and a verbs worker makes no file "
                + "in the shared directory (RealDeviceTransportTckTest runs the check where a device is)");
    }
}
