package dev.conduit.plugin.verbs;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The verbs entry of a worker address tells a connector where to wire up: for any bytes the
 * decoder returns an address whose wire-up host is an IP literal (never a name to resolve) and
 * whose port, link layer, MTU, buffer geometry, responder depth and remote atomics flag are in range (buffers a multiple of
 * 64 bytes), or throws {@link InvalidHandleException}; a decoded address encodes back to the same bytes. The seeds are
 * addresses of this version (4) and of versions 1 to 3, which are refused by their version
 * ({@code VerbsSeedsAreOfThisVersionTest} keeps the first kind of this version).
 */
class VerbsAddressFuzzTest {

    @FuzzTest(maxExecutions = 100_000, maxDuration = "2m")
    void decodeAcceptsOrNamesTheField(byte[] bytes) {
        WireFormat.Address address;
        try {
            address = WireFormat.Address.decode(new PayloadReader(bytes, 0, bytes.length, "address.verbs."));
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        assertThat(WireFormat.isIpLiteral(address.host())).isTrue();
        assertThat(address.port()).isBetween(1, 255);
        assertThat(address.tcpPort()).isBetween(1, 65535);
        assertThat(address.linkLayer()).isBetween(0, VerbsAbi.IBV_LINK_LAYER_ETHERNET);
        assertThat(address.mtu()).isBetween(VerbsAbi.IBV_MTU_256, VerbsAbi.IBV_MTU_4096);
        assertThat(address.receiveBuffers()).isBetween(2, 4096);
        assertThat(address.bufferSize()).isBetween(4096, 1 << 30);
        // Records and atomic results are 8-byte fields at slot * bufferSize: a size off a multiple of 64 misaligns them.
        assertThat(address.bufferSize() % 64).isZero();
        // Given to the connector's queue pair as max_rd_atomic, where 0 is an EINVAL.
        assertThat(address.responderDepth()).isBetween(1, WireFormat.MAX_READ_DEPTH);
        assertThat(address.encode()).isEqualTo(bytes);
    }
}
