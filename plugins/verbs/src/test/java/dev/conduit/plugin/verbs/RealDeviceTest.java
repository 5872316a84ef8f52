package dev.conduit.plugin.verbs;

import dev.conduit.spi.Availability;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bindings on real hardware or Soft-RoCE: runs only when {@code CONDUIT_TEST_VERBS_DEVICE}
 * names a device with an active port (docs/plugins.md, "verbs", gives the Soft-RoCE commands).
 * The machines this project is built on have no RDMA device: there it is skipped.
 */
@EnabledIfEnvironmentVariable(named = "CONDUIT_TEST_VERBS_DEVICE", matches = ".+")
class RealDeviceTest {

    private static final String DEVICE = System.getenv("CONDUIT_TEST_VERBS_DEVICE");

    @Test
    void theNamedDeviceIsListedOpensAndHasAnActivePortWithAGid() {
        Verbs verbs = FfmVerbs.load("libibverbs.so.1");
        assertThat(verbs.deviceNames()).contains(DEVICE);
        try (Verbs.Device device = verbs.open(DEVICE)) {
            Verbs.DeviceAttributes attributes = device.attributes();
            assertThat(attributes.physicalPorts()).isPositive();
            assertThat(attributes.maxQp()).isPositive();
            assertThat(attributes.maxCqe()).isPositive();
            boolean active = false;
            for (int port = 1; port <= attributes.physicalPorts(); port++) {
                Verbs.PortAttributes attr = device.port(port);
                assertThat(VerbsAbi.mtuBytes(attr.activeMtu())).as("active mtu of port %d", port).isPositive();
                assertThat(attr.gidTableLength()).isPositive();
                if (attr.isActive()) {
                    active = true;
                    assertThat(device.gid(port, 0)).hasSize(16);
                }
            }
            assertThat(active).as("an active port on " + DEVICE).isTrue();
        }
    }

    @Test
    void theProbeIsAvailableAndDescribesTheDevice() {
        Availability a = new VerbsPlugin().probe(TestContext.of());
        assertThat(a.isAvailable()).as(a.reason()).isTrue();
        assertThat(List.of(a.details().get("devices").split(", "))).contains(DEVICE);
        assertThat(a.details()).containsKey(DEVICE + " port 1");
        assertThat(a.details().get(DEVICE)).startsWith("node guid ");
    }
}
