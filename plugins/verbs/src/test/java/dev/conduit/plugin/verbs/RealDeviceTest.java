package dev.conduit.plugin.verbs;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The bindings and the transport on real hardware or Soft-RoCE: runs only when
 * {@code CONDUIT_TEST_VERBS_DEVICE} names a device with an active port (docs/plugins.md, "verbs",
 * gives the Soft-RoCE commands). Two workers of this JVM connect through the device (queue pairs
 * on one port reach each other through the adapter). The machines this project is built on have
 * no RDMA device: there it is skipped, and none of this has run.
 */
@EnabledIfEnvironmentVariable(named = RealDevice.VARIABLE, matches = ".+", disabledReason = RealDevice.WHY_SKIPPED)
class RealDeviceTest {

    private static final String DEVICE = RealDevice.name();

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

    private static TestWorker worker() {
        return new TestWorker(FfmVerbs.load("libibverbs.so.1"), "verbs.device", DEVICE, "verbs.buffer.size", "4k",
                "verbs.receive.buffers", "16", "verbs.send.buffers", "16");
    }

    private static TransportEndpoint connected(TestWorker from, TestWorker to) {
        TransportEndpoint e = from.connect(to);
        TestWorker.progressUntil(() -> !((VerbsEndpoint) e).isConnecting(), from, to);
        return e;
    }

    @Test
    void messagesLargeAndSmallArriveInOrderThroughTheDevice() {
        try (TestWorker a = worker(); TestWorker b = worker()) {
            TransportEndpoint e = connected(a, b);
            byte[] large = new byte[(int) e.maxPayloadSize()];
            java.util.Arrays.fill(large, (byte) 0x5A);
            for (int i = 0; i < 500; i++) {
                MemorySegment payload = i % 50 == 0 ? MemorySegment.ofArray(large) : MemorySegment.ofArray(("m" + i).getBytes());
                int id = i;
                TestWorker.progressUntil(() -> e.trySend(id, MemorySegment.NULL, payload), a, b);
            }
            TestWorker.progressUntil(() -> b.received.size() == 500, a, b);
            for (int i = 0; i < 500; i++) {
                assertThat(b.received.get(i).id()).isEqualTo(i);
                assertThat(b.received.get(i).payload()).isEqualTo(i % 50 == 0 ? large : ("m" + i).getBytes());
            }
            e.close();
        }
    }

    @Test
    void putGetAndAtomicsThroughTheDevice() {
        try (TestWorker a = worker(); TestWorker b = worker(); MemoryProvider memory = b.memory()) {
            TransportEndpoint e = connected(a, b);
            Chunk chunk = memory.allocate(64 * 1024);
            RemoteRegion region = TestWorker.region(memory, chunk, 4096, 32 * 1024);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment source = arena.allocate(10_000);
                source.fill((byte) 7);
                e.put(source, region, 8);
                e.flush();
                assertThat(chunk.segment().asSlice(4096 + 8, 10_000).mismatch(source)).isEqualTo(-1);
                MemorySegment back = arena.allocate(10_000);
                e.get(region, 8, back);
                assertThat(back.mismatch(source)).isEqualTo(-1);
            }
            Verbs.DeviceAttributes attributes;
            try (Verbs.Device device = FfmVerbs.load("libibverbs.so.1").open(DEVICE)) {
                attributes = device.attributes();
            }
            if (attributes.atomicCap() != VerbsAbi.IBV_ATOMIC_NONE) {
                assertThat(e.fetchAdd(region, 16 * 1024, 5)).isZero();
                assertThat(e.compareAndSwap(region, 16 * 1024, 5, 9)).isEqualTo(5);
            } else {
                assertThatThrownBy(() -> e.fetchAdd(region, 0, 1)).isInstanceOf(NotSupportedException.class).hasMessageContaining(DEVICE);
            }
            e.close();
            memory.free(chunk);
        }
    }

    @Test
    void aPeerThatClosesFailsTheEndpoint() {
        try (TestWorker a = worker()) {
            TestWorker b = worker();
            TransportEndpoint e = connected(a, b);
            b.close();
            TestWorker.progressUntil(() -> !a.failures.isEmpty(), a);
            assertThatThrownBy(() -> e.trySend(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[1])))
                    .isInstanceOf(PeerFailedException.class);
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
