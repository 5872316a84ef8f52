package dev.conduit.plugin.verbs;

import dev.conduit.tck.TestContext;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which source GID a RoCE port's connections use. mlx5 lists each IP address twice, as RoCE v1
 * at the lower index and RoCE v2 at the next, with the same GID bytes; only sysfs tells the types
 * apart. The device is {@link FakeVerbs} (not a device) and sysfs a fixture tree of the kernel's
 * shape.
 */
class GidChoiceTest {

    private static final System.Logger LOG = System.getLogger("dev.conduit.plugin.verbs.test");
    private static final byte[] LINK_LOCAL = {(byte) 0xfe, (byte) 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, (byte) 0xff, (byte) 0xfe, 0x12, 0x34, 0x56};
    private static final byte[] IPV4 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 0, 0, 5};

    @TempDir
    Path sysfs;

    /** Port 1 of mlx5_0 as mlx5 fills it: link-local v1, v2, then the IPv4 address as v1, v2. */
    private static Verbs.Device mlx5() {
        Map<String, byte[]> gids = Map.of("1/0", LINK_LOCAL, "1/1", LINK_LOCAL, "1/2", IPV4, "1/3", IPV4);
        return new FakeVerbs().device("mlx5_0", new FakeVerbs.FakeDevice(FakeVerbs.attributes(1), List.of(port()), gids, null))
                .open("mlx5_0");
    }

    private static Verbs.PortAttributes port() {
        return new Verbs.PortAttributes(VerbsAbi.IBV_PORT_ACTIVE, VerbsAbi.IBV_MTU_4096, VerbsAbi.IBV_MTU_1024, 4, 0, 5,
                VerbsAbi.IBV_LINK_LAYER_ETHERNET, 1L << 30);
    }

    private void types(String... types) throws IOException {
        Path directory = Files.createDirectories(sysfs.resolve("class/infiniband/mlx5_0/ports/1/gid_attrs/types"));
        for (int i = 0; i < types.length; i++) {
            Files.writeString(directory.resolve(Integer.toString(i)), types[i] + "\n");
        }
    }

    private int chosen(int configured) {
        return VerbsDomain.gidIndex(mlx5(), "mlx5_0", 1, port(), configured, sysfs, LOG);
    }

    /** It used to take index 2, the first IPv4-mapped entry: RoCE v1, which no IP router forwards. */
    @Test
    void theRoceV2EntryOfAnIpv4AddressIsChosenOverItsV1Twin() throws IOException {
        types("IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2");
        assertThat(chosen(-1)).isEqualTo(3);
    }

    @Test
    void withoutGidTypesInSysfsTheFirstIpv4MappedGidIsTakenAsBefore() {
        assertThat(chosen(-1)).isEqualTo(2);
    }

    @Test
    void withOnlyRoceV1EntriesTheFirstIpv4MappedOneIsTaken() throws IOException {
        types("IB/RoCE v1", "IB/RoCE v1", "IB/RoCE v1", "IB/RoCE v1");
        assertThat(chosen(-1)).isEqualTo(2);
    }

    @Test
    void aConfiguredGidIndexWinsOverTheTypes() throws IOException {
        types("IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2");
        assertThat(chosen(2)).isEqualTo(2);
    }

    @Test
    void theDomainOpensWithTheRoceV2Gid() throws IOException {
        // Through the plugin over the simulated fabric, whose only IPv4 GID is at index 0: here said to be RoCE v2.
        Files.createDirectories(sysfs.resolve("class/infiniband/loop0/ports/1/gid_attrs/types"));
        Files.writeString(sysfs.resolve("class/infiniband/loop0/ports/1/gid_attrs/types/0"), "RoCE v2\n");
        LoopbackVerbs verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);
        VerbsDomain domain = VerbsDomain.open(verbs, TestContext.of().config(), sysfs, LOG);
        try {
            assertThat(domain.gidIndex()).isZero();
            assertThat(domain.gid()).isEqualTo(LoopbackVerbs.GID);
        } finally {
            domain.protectionDomain().close();
            domain.device().close();
        }
    }
}
