package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitPlugin;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the {@code SimulatedFabric*TckTest}s hand the TCK: verbs plugins whose device is
 * {@link LoopbackVerbs}, <b>a simulation of an RDMA fabric, not a device</b>. Everything above the
 * {@link Verbs} interface is the real plugin — {@link VerbsTransport}, {@link VerbsMemoryProvider},
 * the probe, the TCP wire-up — so the contract runs on the plugin's code in every build; what it
 * cannot show about a device is for the {@code RealDevice*} tests.
 *
 * <p>One fabric per test (registered as an instance field, so JUnit makes one per test method):
 * every plugin instance the TCK makes during a test (its own and the runtime's) is on it, as
 * transports of one device would be. After the test, once the TCK has closed everything it opened,
 * it checks what the TCK cannot see: no queue pair, memory region, completion queue or channel left
 * open, and no SEND that found no posted receive (a credit overrun, which a correct sender never
 * causes and a real device would turn into a failed connection).
 */
final class SimulatedFabric implements AfterEachCallback {

    private final LoopbackVerbs verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);

    /** A verbs plugin whose library is this fabric. */
    ConduitPlugin newPlugin() {
        return new VerbsPlugin(library -> verbs);
    }

    /** The fabric's one device, and its GID's loopback address for the wire-up listener. */
    Map<String, String> configuration() {
        return Map.of(VerbsConfig.DEVICE.name(), "loop0", VerbsConfig.WIREUP_ADDRESS.name(), "127.0.0.1");
    }

    /** Runs after the TCK's own {@code @AfterEach}, which closes what the test opened. */
    @Override
    public void afterEach(ExtensionContext context) {
        assertThat(verbs.open).as("queue pairs, memory regions, completion queues and channels left open after the test closed everything").isEmpty();
        assertThat(verbs.receiverNotReady()).as("SENDs that found no posted receive (credits overrun)").isZero();
    }
}
