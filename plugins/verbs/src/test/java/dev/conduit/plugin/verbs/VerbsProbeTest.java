package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.conduit.plugin.verbs.VerbsAbi.IBV_LINK_LAYER_ETHERNET;
import static dev.conduit.plugin.verbs.VerbsAbi.IBV_LINK_LAYER_INFINIBAND;
import static dev.conduit.plugin.verbs.VerbsAbi.IBV_PORT_ACTIVE;
import static dev.conduit.plugin.verbs.VerbsAbi.IBV_PORT_DOWN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * The probe's reasons and details. The first tests run the real {@link FfmVerbs} on this machine
 * (a library that does not exist; the real library on a machine without RDMA); the others run the
 * probe's logic over {@link FakeVerbs}, which is not a device.
 */
class VerbsProbeTest {

    private static final byte[] GID = {(byte) 0xfe, (byte) 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, (byte) 0xff, (byte) 0xfe, 0x12, 0x34, 0x56};

    private static Availability probe(Verbs verbs) {
        return new VerbsPlugin(library -> verbs).probe(TestContext.of());
    }

    @Test
    void aMissingLibraryIsNamedWithTheLoadersWordsAndTheRemedy() {
        Availability a = new VerbsPlugin().probe(TestContext.of("verbs.library", "libibverbs-conduit-missing.so.1"));
        assertThat(a.isAvailable()).isFalse();
        assertThat(a.reason())
                .startsWith("libibverbs-conduit-missing.so.1 not found (dlopen: ")
                .contains("apt-get install libibverbs1")
                .contains("verbs.library (CONDUIT_VERBS_LIBRARY)");
        assertThat(a.details()).containsExactly(Map.entry("formats", "address 4, wire-up 2, region 2"),
                Map.entry("library", "libibverbs-conduit-missing.so.1"));
    }

    @Test
    void aLibraryWithoutTheVerbsFunctionsIsRefusedByName() {
        // libc opens, but exports no ibv_get_device_list.
        Availability a = new VerbsPlugin().probe(TestContext.of("verbs.library", "libc.so.6"));
        assertThat(a.isAvailable()).isFalse();
        assertThat(a.reason()).startsWith("libc.so.6 has no function ibv_get_device_list: it is not rdma-core's libibverbs");
    }

    @Test
    void theRealLibraryOnAMachineWithoutRdmaSaysTheKernelHasNoVerbs() {
        assumeFalse(Files.exists(Path.of("/sys/class/infiniband_verbs")), "this machine has RDMA verbs in its kernel");
        assumeFalse(!Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libibverbs.so.1"))
                && !Files.exists(Path.of("/usr/lib64/libibverbs.so.1")), "libibverbs.so.1 is not installed");
        Availability a = new VerbsPlugin().probe(TestContext.of());
        assertThat(a.isAvailable()).isFalse();
        assertThat(a.reason()).isEqualTo("no RDMA devices: ibv_get_device_list(&num_devices): ENOSYS (Function not implemented): "
                + FfmVerbs.hintForDeviceList(Errno.ENOSYS));
        assertThat(a.details()).containsExactly(Map.entry("formats", "address 4, wire-up 2, region 2"), Map.entry("library", "libibverbs.so.1"),
                Map.entry("devices", "none"));
        // A second probe reuses the loaded library and says the same.
        assertThat(new VerbsPlugin().probe(TestContext.of())).isEqualTo(a);
    }

    @Test
    void anEmptyDeviceListSuggestsSoftRoce() {
        Availability a = probe(new FakeVerbs());
        assertThat(a.isAvailable()).isFalse();
        assertThat(a.reason()).isEqualTo("no RDMA devices: libibverbs.so.1 lists none (ibv_devices would say the same): load the "
                + "driver of an RDMA adapter, or set up Soft-RoCE (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)");
        assertThat(a.details()).containsEntry("devices", "none");
    }

    @Test
    void aDeviceListErrorCarriesTheErrno() {
        Availability a = probe(new FakeVerbs().failList(Errno.ENOMEM));
        assertThat(a.reason()).startsWith("no RDMA devices: ibv_get_device_list(&num_devices): ENOMEM (Cannot allocate memory)");
    }

    @Test
    void portsThatAreNotActiveAreListedWithTheirState() {
        FakeVerbs verbs = new FakeVerbs()
                .device("mlx5_0", new FakeVerbs.FakeDevice(FakeVerbs.attributes(2),
                        List.of(FakeVerbs.port(IBV_PORT_DOWN, IBV_LINK_LAYER_INFINIBAND), FakeVerbs.port(VerbsAbi.IBV_PORT_INIT, IBV_LINK_LAYER_INFINIBAND)),
                        Map.of(), null));
        Availability a = probe(verbs);
        assertThat(a.isAvailable()).isFalse();
        assertThat(a.reason()).startsWith("no active RDMA port (mlx5_0 port 1 DOWN, mlx5_0 port 2 INIT): bring a link up");
        assertThat(a.details()).containsEntry("mlx5_0 port 1", "DOWN, link layer InfiniBand, lid 7, active mtu 1024, max_msg_sz 1073741824, gid table 2");
        assertThat(verbs.closed).containsExactly("mlx5_0");
    }

    @Test
    void aDeviceThatCannotBeOpenedIsTheReasonWhenNoneCan() {
        Availability a = probe(new FakeVerbs().device("rxe0", new FakeVerbs.FakeDevice(FakeVerbs.attributes(1), List.of(), Map.of(), Errno.EACCES)));
        assertThat(a.isAvailable()).isFalse();
        assertThat(a.reason()).startsWith("no usable RDMA device: ibv_open_device(rxe0): EACCES (Permission denied): check the permissions");
        assertThat(a.details().get("rxe0")).startsWith("unusable: ibv_open_device(rxe0): EACCES");
    }

    @Test
    void oneActivePortMakesThePluginAvailableAndEveryDeviceIsListed() {
        FakeVerbs verbs = new FakeVerbs()
                .device("rxe0", new FakeVerbs.FakeDevice(FakeVerbs.attributes(1),
                        List.of(FakeVerbs.port(IBV_PORT_ACTIVE, IBV_LINK_LAYER_ETHERNET)), Map.of("1/0", GID, "1/1", new byte[16]), null))
                .device("mlx4_0", new FakeVerbs.FakeDevice(FakeVerbs.attributes(1), List.of(), Map.of(), Errno.EACCES));
        Availability a = probe(verbs);
        assertThat(a.isAvailable()).isTrue();
        assertThat(a.details()).containsExactly(
                Map.entry("formats", "address 4, wire-up 2, region 2"),
                Map.entry("library", "libibverbs.so.1"),
                Map.entry("devices", "rxe0, mlx4_0"),
                Map.entry("rxe0", "node guid 0002:c903:00a0:b0c0, firmware 1.2.3, vendor 0x2c9 part 4119, 1 port, max_qp 262144, "
                        + "max_cqe 4194303, max_mr_size 18446744073709551615, atomics HCA, max_qp_rd_atom 16, max_qp_init_rd_atom 8"),
                Map.entry("rxe0 port 1", "ACTIVE, link layer Ethernet, lid 7, active mtu 1024, max_msg_sz 1073741824, gid table 2"),
                Map.entry("rxe0 port 1 gid[0]", "fe80:0000:0000:0000:5054:00ff:fe12:3456"),
                Map.entry("mlx4_0", "unusable: ibv_open_device(mlx4_0): EACCES (Permission denied): check the permissions of /dev/infiniband/uverbs*"));
    }

    /** The simulated fabric behind a first device this process may not open: a host with two adapters and the permissions of one. */
    private static Verbs withAnUnopenableDeviceFirst(LoopbackVerbs fabric) {
        return new Verbs() {
            @Override
            public String library() {
                return fabric.library();
            }

            @Override
            public List<String> deviceNames() {
                return List.of("mlx5_0", "loop0");
            }

            @Override
            public Device open(String name) {
                if (name.equals("mlx5_0")) {
                    throw new dev.conduit.linux.ErrnoException("ibv_open_device", Errno.EACCES, name, name,
                            "check the permissions of /dev/infiniband/uverbs*");
                }
                return fabric.open(name);
            }
        };
    }

    /**
     * Without verbs.device the probe passes over a device it cannot open and finds the plugin
     * available through the next; the transport and the memory provider used to stop at that first
     * device and throw its EACCES, so a worker failed to open the plugin its probe had offered.
     */
    @Test
    void aDeviceThatCannotBeOpenedIsPassedOverByTheTransportAsByTheProbe() {
        LoopbackVerbs fabric = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);
        Verbs verbs = withAnUnopenableDeviceFirst(fabric);
        assertThat(probe(verbs).isAvailable()).as("the probe").isTrue();
        try (TestWorker worker = new TestWorker(verbs)) {
            assertThat(worker.transport.domain.deviceName()).isEqualTo("loop0");
        }
        assertThat(fabric.openObjects()).isZero();
    }

    /** Named, a device that cannot be opened is the error, as before; when none opens, the error says why for each. */
    @Test
    void aNamedDeviceThatCannotBeOpenedIsTheErrorAndSoIsEveryDeviceWhenNoneOpens() {
        Verbs verbs = withAnUnopenableDeviceFirst(new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA));
        assertThatThrownBy(() -> new VerbsPlugin(library -> verbs).openTransport(TestContext.of("verbs.device", "mlx5_0")
                .forTransport(dev.conduit.spi.ThreadMode.SINGLE, (id, hb, ho, hl, pb, po, pl) -> { })))
                .isInstanceOf(dev.conduit.linux.ErrnoException.class).hasMessageStartingWith("ibv_open_device(mlx5_0): EACCES");
        FakeVerbs none = new FakeVerbs()
                .device("mlx5_0", new FakeVerbs.FakeDevice(FakeVerbs.attributes(1), List.of(), Map.of(), Errno.EACCES))
                .device("mlx5_1", new FakeVerbs.FakeDevice(FakeVerbs.attributes(1), List.of(), Map.of(), Errno.ENODEV));
        assertThatThrownBy(() -> new VerbsPlugin(library -> none).openMemoryProvider(TestContext.of()))
                .isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageStartingWith("verbs: no usable RDMA device: ibv_open_device(mlx5_0): EACCES")
                .hasMessageContaining("; ibv_open_device(mlx5_1): ENODEV");
    }

    /**
     * A library path, a device name and an IP address never start or end with a blank, so blanks
     * around one (CONDUIT_VERBS_DEVICE=" loop0" from an environment file) are a quoting mistake:
     * they are dropped, as for every other kind of key and for devdax.device. Until 2026-12-02 they
     * were kept: the library was opened as " libibverbs.so.1", the device not found ("no device
     * ' loop0'") and the wire-up address refused ("not an IPv4 or IPv6 address").
     */
    @Test
    void theLibraryDeviceAndWireupAddressAreTakenWithoutTheBlanksAroundThem() {
        LoopbackVerbs fabric = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);
        List<String> loaded = new java.util.concurrent.CopyOnWriteArrayList<>();
        VerbsPlugin plugin = new VerbsPlugin(library -> {
            loaded.add(library);
            return fabric;
        });
        TestContext context = TestContext.of("verbs.library", " libibverbs.so.1\t", "verbs.device", " loop0 ",
                "verbs.wireup.address", "127.0.0.1 ");
        assertThat(plugin.probe(context).details()).containsEntry("library", "libibverbs.so.1");
        try (VerbsTransport transport = (VerbsTransport) plugin.openTransport(context.forTransport(dev.conduit.spi.ThreadMode.SINGLE,
                (id, hb, ho, hl, pb, po, pl) -> { }))) {
            assertThat(transport.domain.deviceName()).isEqualTo("loop0");
            byte[] address = transport.address();
            assertThat(WireFormat.Address.decode(new dev.conduit.spi.PayloadReader(address, 0, address.length, "address")).host())
                    .isEqualTo("127.0.0.1");
        }
        assertThat(loaded).containsOnly("libibverbs.so.1");
        assertThat(fabric.openObjects()).isZero();
    }

    @Test
    void aGidThatCannotBeReadIsShownNotFatal() {
        FakeVerbs verbs = new FakeVerbs().device("rxe0", new FakeVerbs.FakeDevice(FakeVerbs.attributes(1),
                List.of(FakeVerbs.port(IBV_PORT_ACTIVE, IBV_LINK_LAYER_ETHERNET)), Map.of("1/0", GID), null));
        Availability a = probe(verbs);
        assertThat(a.isAvailable()).isTrue();
        assertThat(a.details().get("rxe0 port 1 gid[1]")).startsWith("unreadable: ibv_query_gid(rxe0, 1, 1, &gid): EINVAL");
    }

    @Test
    void declaresItsCapabilitiesAndOnlyTheModesTheDoorbellAllows() {
        VerbsPlugin plugin = new VerbsPlugin();
        assertThat(plugin.capabilities()).containsExactlyInAnyOrder(Capability.MEMORY, Capability.AM, Capability.RMA,
                Capability.ATOMICS, Capability.WAKEUP, Capability.CROSS_HOST);
        assertThat(plugin.threadModes()).containsExactlyInAnyOrder(dev.conduit.spi.ThreadMode.SINGLE, dev.conduit.spi.ThreadMode.SERIALIZED);
        assertThat(plugin.priority()).isBetween(0, 99);
        assertThat(plugin.configKeys()).extracting(k -> k.name()).containsExactly("verbs.library", "verbs.device",
                "verbs.port", "verbs.gid.index", "verbs.wireup.address", "verbs.wireup.timeout", "verbs.buffer.size",
                "verbs.receive.buffers", "verbs.send.buffers", "verbs.liveness.interval", "verbs.heartbeat.timeout");
    }

    @Test
    void theNativeAccessSentenceNamesTheFlag() {
        assertThat(FfmVerbs.nativeAccessDenied(VerbsPlugin.class.getModule()))
                .isEqualTo("the JVM denies native access to module dev.conduit.plugin.verbs: start it with "
                        + "--enable-native-access=dev.conduit.plugin.verbs (besides dev.conduit.linux)");
    }
}
