package dev.conduit.plugin.verbs;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Wire-up requests (read by the acceptor's wire-up thread) and replies (read by the connector)
 * come from whoever connects to, or listens on, a TCP port. The first input byte picks the kind
 * the reader expects (2: a reply, anything else: a request), the rest is the message body. For any
 * body the decoder returns a message of the expected kind with a 24-bit queue pair number and PSN,
 * and in a request a non-null credit address and the connector's address (within the lengths an
 * address has, and one that decodes as an address: the acceptor hands it on for answers), or throws
 * {@link InvalidHandleException}; a decoded message encodes back to its length and the same body.
 * The seeds are a request and a reply of this version and of version 1, which is refused by its version, and a request
 * whose connector's address is of address version 2, refused by that address's version.
 */
class VerbsWireupFuzzTest {

    @FuzzTest(maxExecutions = 100_000, maxDuration = "2m")
    void decodeAcceptsOrNamesTheField(byte[] bytes) {
        if (bytes.length == 0) {
            return;
        }
        int expected = bytes[0] == WireFormat.REPLY ? WireFormat.REPLY : WireFormat.REQUEST;
        byte[] body = Arrays.copyOfRange(bytes, 1, bytes.length);
        WireFormat.Wireup message;
        try {
            message = WireFormat.Wireup.decode(body, expected);
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        assertThat(message.kind()).isEqualTo(expected);
        assertThat(message.qpn()).isBetween(1, WireFormat.MAX_QPN);
        assertThat(message.psn()).isBetween(0, WireFormat.MAX_QPN);
        assertThat(message.mtu()).isBetween(VerbsAbi.IBV_MTU_256, VerbsAbi.IBV_MTU_4096);
        if (expected == WireFormat.REQUEST) {
            assertThat(message.creditAddress()).isNotZero();
            assertThat(message.senderAddress().length).isBetween(WireFormat.MIN_ADDRESS_LENGTH, WireFormat.MAX_ADDRESS_LENGTH);
            WireFormat.Address.decode(new dev.conduit.spi.PayloadReader(message.senderAddress()));
        } else {
            assertThat(message.senderAddress()).isNull();
        }
        byte[] encoded = message.encode();
        assertThat(Arrays.copyOfRange(encoded, 2, encoded.length)).isEqualTo(body);
        assertThat((encoded[0] & 0xFF) | (encoded[1] & 0xFF) << 8).isEqualTo(body.length);
    }
}
