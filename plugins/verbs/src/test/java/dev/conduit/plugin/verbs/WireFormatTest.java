package dev.conduit.plugin.verbs;

import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every field a peer writes is validated: the decoders name the field of a bad value. */
class WireFormatTest {

    private static final byte[] TOKEN = new byte[16];
    private static final byte[] CONTEXT = new byte[16];
    private static final byte[] GID = LoopbackVerbs.GID;

    static {
        Arrays.fill(TOKEN, (byte) 3);
        Arrays.fill(CONTEXT, (byte) 5);
    }

    private static WireFormat.Address address() {
        return new WireFormat.Address(TOKEN, CONTEXT, 1, VerbsAbi.IBV_LINK_LAYER_ETHERNET, 0, GID, VerbsAbi.IBV_MTU_1024, 64, 8192, 16, true, "10.0.0.2", 4791);
    }

    private static WireFormat.Address decodeAddress(byte[] bytes) {
        return WireFormat.Address.decode(new PayloadReader(bytes, 0, bytes.length, "address.verbs."));
    }

    private static String fieldOf(Runnable decode) {
        try {
            decode.run();
        } catch (InvalidHandleException e) {
            return e.field();
        }
        throw new AssertionError("decoded without complaint");
    }

    @Test
    void anAddressRoundTrips() {
        WireFormat.Address a = decodeAddress(address().encode());
        assertThat(a.token()).isEqualTo(TOKEN);
        assertThat(a.gid()).isEqualTo(GID);
        assertThat(a.host()).isEqualTo("10.0.0.2");
        assertThat(a.tcpPort()).isEqualTo(4791);
        assertThat(a.receiveBuffers()).isEqualTo(64);
        assertThat(decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 1, 7, GID, 5, 2, 4096, 16, true, "fe80::1", 1).encode()).host())
                .isEqualTo("fe80::1");
    }

    /**
     * A {@code wireup.host} is what the connector connects to: the wildcard (0.0.0.0, ::) is no host
     * to connect to, and a connect to it reaches the connector's own host (Linux), so a peer that
     * announces it (its {@code verbs.wireup.address} set to listen on every interface) is taken at its
     * word, and the connect fails with "cannot reach the peer's wire-up listener 0.0.0.0:…" blaming a
     * firewall, or reaches another process's listener on this host. Refused naming the field, as a
     * name is, and so is a multicast group (until 2026-12-07 both decoded), and a scoped IPv6
     * address, whose scope is an interface of the announcing host that the connector would take as
     * one of its own (until 2026-12-07 it decoded).
     */
    @Test
    void aWildcardMulticastOrScopedWireupHostIsRefusedNamingTheField() {
        for (String unreachable : new String[] {"0.0.0.0", "0", "::", "224.0.0.1", "ff02::1", "fe80::1%1", "fe80::1%0"}) {
            assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, true, unreachable, 1).encode())))
                    .as(unreachable).isEqualTo("address.verbs.wireup.host");
        }
    }

    @Test
    void everyBadAddressFieldIsNamed() {
        byte[] good = address().encode();
        assertThat(fieldOf(() -> decodeAddress(Arrays.copyOf(good, good.length - 1)))).isEqualTo("address.verbs.wireup.port");
        assertThat(fieldOf(() -> decodeAddress(Arrays.copyOf(good, good.length + 1)))).isEqualTo("address.verbs.wireup.port");
        assertThat(fieldOf(() -> decodeAddress(new byte[0]))).isEqualTo("address.verbs.version");
        byte[] version = good.clone();
        version[0] = WireFormat.ADDRESS_VERSION + 1;
        assertThat(fieldOf(() -> decodeAddress(version))).isEqualTo("address.verbs.version");
        byte[] port = good.clone();
        port[1 + 16 + 16] = 0;
        assertThat(fieldOf(() -> decodeAddress(port))).isEqualTo("address.verbs.port");
        byte[] linkLayer = good.clone();
        linkLayer[1 + 16 + 16 + 1] = 9;
        assertThat(fieldOf(() -> decodeAddress(linkLayer))).isEqualTo("address.verbs.link.layer");
        byte[] mtu = good.clone();
        mtu[1 + 16 + 16 + 1 + 1 + 2 + 16] = 6;
        assertThat(fieldOf(() -> decodeAddress(mtu))).isEqualTo("address.verbs.mtu");
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 1, 8192, 16, true, "10.0.0.2", 1).encode())))
                .isEqualTo("address.verbs.receive.buffers");
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 100, 16, true, "10.0.0.2", 1).encode())))
                .isEqualTo("address.verbs.buffer.size");
        // Records start at multiples of the buffer size and hold 8-byte fields: 4100 would misalign them.
        assertThatThrownBy(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 4100, 16, true, "10.0.0.2", 1).encode()))
                .isInstanceOf(InvalidHandleException.class).hasMessageContaining("address.verbs.buffer.size")
                .hasMessageContaining("not a multiple of 64").hasMessageContaining("verbs.buffer.size (CONDUIT_VERBS_BUFFER_SIZE)");
        assertThat(decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 4160, 16, true, "10.0.0.2", 1).encode()).bufferSize())
                .isEqualTo(4160);
        // Each bound holds at its edge: the last value in, the first one out.
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 3, 0, GID, 3, 8, 8192, 16, true, "10.0.0.2", 1).encode())))
                .isEqualTo("address.verbs.link.layer");
        assertThat(decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 4096, 8192, 16, true, "10.0.0.2", 1).encode()).receiveBuffers())
                .isEqualTo(4096);
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 4097, 8192, 16, true, "10.0.0.2", 1).encode())))
                .isEqualTo("address.verbs.receive.buffers");
        assertThat(decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 4096, 16, true, "10.0.0.2", 1).encode()).bufferSize())
                .isEqualTo(4096);
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 4096 - 64, 16, true, "10.0.0.2", 1).encode())))
                .isEqualTo("address.verbs.buffer.size");
        assertThat(decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 1 << 30, 16, true, "10.0.0.2", 1).encode()).bufferSize())
                .isEqualTo(1 << 30);
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, (1 << 30) + 64, 16, true, "10.0.0.2", 1).encode())))
                .isEqualTo("address.verbs.buffer.size");
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, true, "evil.example", 1).encode())))
                .isEqualTo("address.verbs.wireup.host");
        assertThat(fieldOf(() -> decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, true, "10.0.0.2", 0).encode())))
                .isEqualTo("address.verbs.wireup.port");
    }

    /**
     * Address version 2 added the responder depth: the RDMA READs and atomics the peer's queue
     * pairs take in flight, which a connection keeps no more than in flight towards it. It is
     * carried from 1 to 255 (a u8, as the queue pair attribute); a 0 would reach
     * {@code ibv_modify_qp} as {@code max_rd_atomic} and is refused naming the field, also inside a
     * request's connector address.
     */
    @Test
    void anAddressCarriesItsResponderDepthAndAZeroIsRefusedNamingIt() {
        assertThat(decodeAddress(address().encode()).responderDepth()).isEqualTo(16);
        assertThat(decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 1, true, "10.0.0.2", 1).encode()).responderDepth())
                .isEqualTo(1);
        assertThat(decodeAddress(new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 255, true, "10.0.0.2", 1).encode()).responderDepth())
                .isEqualTo(255);
        byte[] none = new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 0, true, "10.0.0.2", 1).encode();
        assertThat(catchInvalid(() -> decodeAddress(none)))
                .satisfies(e -> assertThat(e.field()).isEqualTo("address.verbs.responder.depth"))
                .hasMessageContaining("0 RDMA READs and atomics in flight, where a peer takes 1 to 255");
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, none).encode()))))
                .isEqualTo("wireup.sender.address.responder.depth");
        assertThat(decodeRequest(body(request(5, 1, 3, 8).encode())).sender().responderDepth()).as("the connector's, for its acceptor")
                .isEqualTo(16);
    }

    /**
     * An address of a former version, an older Conduit's, is refused by its version, naming both and
     * which side to upgrade: read as a version-4 address, a version-3 one (no context) would have had
     * its port, link layer, LID and GID taken for the context, a version-2 one (no remote atomics
     * either) its host length for the atomics flag too, and a version-1 one (no responder depth
     * either) its host length for the depth.
     */
    @Test
    void anAddressOfAFormerVersionIsRefusedNamingBothVersions() {
        byte[] version1 = new PayloadWriter().u8(1).bytes(TOKEN).u8(1).u8(2).u16(0).bytes(GID).u8(3).u32(64).u32(8192).string("10.0.0.2")
                .u16(4791).toByteArray();
        byte[] version2 = new PayloadWriter().u8(2).bytes(TOKEN).u8(1).u8(2).u16(0).bytes(GID).u8(3).u32(64).u32(8192).u8(16)
                .string("10.0.0.2").u16(4791).toByteArray();
        byte[] version3 = new PayloadWriter().u8(3).bytes(TOKEN).u8(1).u8(2).u16(0).bytes(GID).u8(3).u32(64).u32(8192).u8(16).u8(1)
                .string("10.0.0.2").u16(4791).toByteArray();
        for (byte[] former : List.of(version1, version2, version3)) {
            assertThat(catchInvalid(() -> decodeAddress(former)))
                    .satisfies(e -> assertThat(e.field()).isEqualTo("address.verbs.version"))
                    .hasMessageContaining("verbs address version " + former[0] + ", where this process's Conduit reads only version 4: the "
                            + "peer runs an older Conduit than this process; upgrade the peer");
        }
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, version3).encode())))).as("a version-3 connector's request")
                .isEqualTo("wireup.sender.address.version");
        assertThat(WireFormat.ADDRESS_VERSION).isEqualTo(4);
    }

    /**
     * Address version 3 added whether the transport's device does RDMA atomics, which its regions
     * then take from peers: carried as 0 or 1, anything else refused naming the field, also inside
     * a request's connector address.
     */
    @Test
    void anAddressCarriesWhetherItsDeviceDoesAtomicsAndAnythingButZeroOrOneIsRefusedNamingIt() {
        assertThat(decodeAddress(address().encode()).remoteAtomics()).isTrue();
        byte[] without = new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, false, "10.0.0.2", 1).encode();
        assertThat(decodeAddress(without).remoteAtomics()).isFalse();
        assertThat(decodeRequest(body(request(5, 1, 3, 8, without).encode())).sender().remoteAtomics()).as("the connector's")
                .isFalse();
        byte[] two = address().encode();
        two[1 + 16 + 16 + 1 + 1 + 2 + 16 + 1 + 4 + 4 + 1] = 2;
        assertThat(catchInvalid(() -> decodeAddress(two)))
                .satisfies(e -> assertThat(e.field()).isEqualTo("address.verbs.remote.atomics"))
                .hasMessageContaining("2 is neither 0 (the device does no RDMA atomics) nor 1");
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, two).encode()))))
                .isEqualTo("wireup.sender.address.remote.atomics");
    }

    private static byte[] body(byte[] framed) {
        int length = (framed[0] & 0xFF) | (framed[1] & 0xFF) << 8;
        assertThat(length).isEqualTo(framed.length - 2);
        return Arrays.copyOfRange(framed, 2, framed.length);
    }

    private static WireFormat.Wireup request(int qpn, int psn, int mtu, long creditAddress) {
        return request(qpn, psn, mtu, creditAddress, address().encode());
    }

    private static WireFormat.Wireup request(int qpn, int psn, int mtu, long creditAddress, byte[] senderAddress) {
        return new WireFormat.Wireup(WireFormat.REQUEST, TOKEN, qpn, psn, 0, GID, mtu, creditAddress, 0x1234, senderAddress);
    }

    private static WireFormat.Wireup decodeRequest(byte[] body) {
        return WireFormat.Wireup.decode(body, WireFormat.REQUEST);
    }

    @Test
    void wireupMessagesRoundTripAndEveryBadFieldIsNamed() {
        WireFormat.Wireup w = WireFormat.Wireup.decode(body(request(0x1234, 77, 3, 0x7000).encode()), WireFormat.REQUEST);
        assertThat(w.qpn()).isEqualTo(0x1234);
        assertThat(w.creditAddress()).isEqualTo(0x7000);
        assertThat(w.creditKey()).isEqualTo(0x1234);
        assertThat(w.senderAddress()).as("the connector's address, as it announced it").isEqualTo(address().encode());
        WireFormat.Wireup reply = WireFormat.Wireup.reply(TOKEN, 9, 1, 4, GID, 5);
        assertThat(WireFormat.Wireup.decode(body(reply.encode()), WireFormat.REPLY).lid()).isEqualTo(4);
        assertThat(WireFormat.Wireup.decode(body(reply.encode()), WireFormat.REPLY).senderAddress()).as("a reply's").isNull();

        assertThat(fieldOf(() -> WireFormat.Wireup.decode(body(request(0, 1, 3, 8).encode()), WireFormat.REQUEST))).isEqualTo("wireup.qpn");
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(body(request(1 << 24, 1, 3, 8).encode()), WireFormat.REQUEST)))
                .isEqualTo("wireup.qpn");
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(body(request(5, 1 << 24, 3, 8).encode()), WireFormat.REQUEST)))
                .isEqualTo("wireup.psn");
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(body(request(5, 1, 0, 8).encode()), WireFormat.REQUEST))).isEqualTo("wireup.mtu");
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(body(request(5, 1, 3, 0).encode()), WireFormat.REQUEST)))
                .isEqualTo("wireup.credit.address");
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(body(reply.encode()), WireFormat.REQUEST))).isEqualTo("wireup.kind");
        byte[] body = body(request(5, 1, 3, 8).encode());
        int senderAddressAt = body.length - 2 - address().encode().length;
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(Arrays.copyOf(body, senderAddressAt - 2), WireFormat.REQUEST)))
                .isEqualTo("wireup.credit.rkey");
        byte[] magic = body.clone();
        magic[0] ^= 1;
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(magic, WireFormat.REQUEST))).isEqualTo("wireup.magic");
        byte[] version = body.clone();
        version[4] = 7;
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(version, WireFormat.REQUEST))).isEqualTo("wireup.version");
        byte[] http = "GET / HTTP/1.1\r\n\r\n".getBytes();
        assertThat(fieldOf(() -> WireFormat.Wireup.decode(http, WireFormat.REQUEST))).isEqualTo("wireup.magic");
    }

    /**
     * Version 2 added the connector's address to the request (the acceptor gives it for the
     * connection's messages, to answer them). It is validated as an address, within the lengths an
     * address has, and every bad part of it is named.
     */
    @Test
    void theConnectorsAddressInARequestIsValidatedAsAnAddressAndEveryBadPartIsNamed() {
        byte[] shortest = new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, true, "1", 1).encode();
        byte[] longest = new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, true, "fe80::1%" + "e".repeat(WireFormat.MAX_HOST - 8), 1)
                .encode();
        assertThat(shortest.length).isEqualTo(WireFormat.MIN_ADDRESS_LENGTH);
        assertThat(longest.length).isEqualTo(WireFormat.MAX_ADDRESS_LENGTH);
        byte[] longestRequest = request(5, 1, 3, 8, longest).encode();
        assertThat(longestRequest.length - 2).as("the longest request's body").isLessThanOrEqualTo(WireFormat.MAX_WIREUP);
        assertThat(decodeRequest(body(request(5, 1, 3, 8, shortest).encode())).senderAddress()).isEqualTo(shortest);

        byte[] tooShort = Arrays.copyOf(shortest, shortest.length - 1);
        assertThat(catchInvalid(() -> decodeRequest(body(request(5, 1, 3, 8, tooShort).encode()))))
                .satisfies(e -> assertThat(e.field()).isEqualTo("wireup.sender.address"))
                .hasMessageContaining("an address of " + (WireFormat.MIN_ADDRESS_LENGTH - 1) + " bytes, where a verbs transport address has "
                        + WireFormat.MIN_ADDRESS_LENGTH + " to " + WireFormat.MAX_ADDRESS_LENGTH);
        byte[] tooLong = Arrays.copyOf(longest, longest.length + 1);
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, tooLong).encode())))).isEqualTo("wireup.sender.address");
        // A bad field inside the address is named inside it.
        byte[] named = new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, true, "evil.example", 1).encode();
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, named).encode())))).isEqualTo("wireup.sender.address.wireup.host");
        byte[] portZero = new WireFormat.Address(TOKEN, CONTEXT, 1, 2, 0, GID, 3, 8, 8192, 16, true, "10.0.0.2", 0).encode();
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, portZero).encode())))).isEqualTo("wireup.sender.address.wireup.port");
        byte[] otherVersion = address().encode();
        otherVersion[0] = WireFormat.ADDRESS_VERSION + 1;
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, otherVersion).encode())))).isEqualTo("wireup.sender.address.version");
        // An address whose own length disagrees with the length before it: bytes left over inside the field.
        byte[] padded = Arrays.copyOf(address().encode(), address().encode().length + 1);
        assertThat(fieldOf(() -> decodeRequest(body(request(5, 1, 3, 8, padded).encode())))).isEqualTo("wireup.sender.address.wireup.port");

        byte[] body = body(request(5, 1, 3, 8).encode());
        assertThat(fieldOf(() -> decodeRequest(Arrays.copyOf(body, body.length - 1)))).as("cut inside the address")
                .isEqualTo("wireup.sender.address");
        assertThat(fieldOf(() -> decodeRequest(Arrays.copyOf(body, body.length - 2 - address().encode().length + 1))))
                .as("cut inside the address's length").isEqualTo("wireup.sender.address.length");
        assertThat(fieldOf(() -> decodeRequest(Arrays.copyOf(body, body.length + 1)))).as("a byte after the address")
                .isEqualTo("wireup.sender.address");
    }

    /**
     * A request of version 1, an older Conduit's (no connector address), is refused by its version,
     * naming both and which side to upgrade, before anything else of it is read; an older acceptor
     * refuses a version-2 request the same way (its check of the version is the same code at 1).
     */
    @Test
    void aRequestOfTheFormerVersionIsRefusedNamingBothVersions() {
        byte[] version1 = new PayloadWriter().u32(WireFormat.WIREUP_MAGIC).u8(1).u8(WireFormat.REQUEST).bytes(TOKEN).u32(5).u32(1).u16(0)
                .bytes(GID).u8(3).u64(8).u32(0x1234).toByteArray();
        assertThat(catchInvalid(() -> decodeRequest(version1)))
                .satisfies(e -> assertThat(e.field()).isEqualTo("wireup.version"))
                .hasMessageContaining("verbs wire-up version 1, where this process's Conduit reads only version 2: the peer runs an older "
                        + "Conduit than this process; upgrade the peer");
        assertThat(WireFormat.WIREUP_VERSION).isEqualTo(2);
    }

    private static InvalidHandleException catchInvalid(Runnable decode) {
        try {
            decode.run();
        } catch (InvalidHandleException e) {
            return e;
        }
        throw new AssertionError("decoded without complaint");
    }

    @Test
    void regionPayloadsRoundTripAndBadOnesAreNamed() {
        WireFormat.Region r = WireFormat.Region.decode(new PayloadReader(new WireFormat.Region(CONTEXT, 0x10000, 4096, -5).encode()));
        assertThat(r.rkey()).isEqualTo(-5);
        assertThat(r.context()).isEqualTo(CONTEXT);
        assertThat(fieldOf(() -> WireFormat.Region.decode(new PayloadReader(new PayloadWriter().u8(2).bytes(new byte[15]).toByteArray()))))
                .isEqualTo("context");
        assertThat(fieldOf(() -> WireFormat.Region.decode(new PayloadReader(new PayloadWriter().u8(2).bytes(CONTEXT).u64(0).u64(1).u32(1)
                .toByteArray())))).isEqualTo("address");
        assertThat(fieldOf(() -> WireFormat.Region.decode(new PayloadReader(new PayloadWriter().u8(2).bytes(CONTEXT).u64(8).u64(0).u32(1)
                .toByteArray())))).isEqualTo("length");
        assertThat(fieldOf(() -> WireFormat.Region.decode(new PayloadReader(new PayloadWriter().u8(2).bytes(CONTEXT).u64(-8).u64(16).u32(1)
                .toByteArray())))).isEqualTo("length");
        assertThat(fieldOf(() -> WireFormat.Region.decode(new PayloadReader(new PayloadWriter().u8(3).toByteArray())))).isEqualTo("version");
        // Which side to upgrade, as every format's refusal says it: it named both versions only.
        assertThatThrownBy(() -> WireFormat.Region.decode(new PayloadReader(new PayloadWriter().u8(3).toByteArray())))
                .hasMessageContaining("verbs region payload version 3, where this process's Conduit reads only version 2: the process that "
                        + "exported the region runs a newer Conduit than this process; upgrade this process");
        assertThat(fieldOf(() -> WireFormat.Region.decode(new PayloadReader(new PayloadWriter().u8(2).bytes(CONTEXT).u64(8).u64(8)
                .toByteArray())))).isEqualTo("rkey");
    }

    /**
     * Region version 2 added the exporter's device context, which an endpoint compares with its
     * peer's before any RMA. A version-1 payload, an older exporter's handle, is refused by its
     * version naming both and which side to upgrade; read as version 2 it would have been refused as
     * cut short, naming the rkey and no version.
     */
    @Test
    void aRegionPayloadOfTheFormerVersionIsRefusedNamingBothVersions() {
        byte[] version1 = new PayloadWriter().u8(1).u64(0x10000).u64(4096).u32(7).toByteArray();
        assertThat(catchInvalid(() -> WireFormat.Region.decode(new PayloadReader(version1, 0, version1.length, "payload."))))
                .satisfies(e -> assertThat(e.field()).isEqualTo("payload.version"))
                .hasMessageContaining("verbs region payload version 1, where this process's Conduit reads only version 2: the process that "
                        + "exported the region runs an older Conduit than this process; upgrade the process that exported the region");
        assertThat(WireFormat.REGION_VERSION).isEqualTo(2);
    }

    @Test
    void ipv4MappedGidsGiveTheirAddress() {
        assertThat(WireFormat.ipv4Of(GID).getHostAddress()).isEqualTo("127.0.0.1");
        byte[] linkLocal = new byte[16];
        linkLocal[0] = (byte) 0xFE;
        linkLocal[1] = (byte) 0x80;
        assertThat(WireFormat.ipv4Of(linkLocal)).isNull();
    }

    @Test
    void recordCountsAndTheLargestPayloadAgree() {
        assertThat(Records.count(0, 8192 - Records.HEADER, 8192)).isEqualTo(1);
        assertThat(Records.count(0, 8192 - Records.HEADER + 1, 8192)).isEqualTo(2);
        assertThat(Records.count(Records.MAX_MESSAGE_HEADER, Records.maxPayload(64, 8192), 8192)).isEqualTo(64);
    }
}
