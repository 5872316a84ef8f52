package dev.conduit.internal.worker;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Worker addresses are exchanged out of band with peers. For any bytes, {@link AddressFormat#decode}
 * returns an address or throws {@link InvalidHandleException}, and a decoded address encodes back to
 * the same bytes.
 */
class WorkerAddressFuzzTest {

    @FuzzTest(maxExecutions = 250_000, maxDuration = "2m")
    void decodeAcceptsOrNamesTheField(byte[] bytes) {
        AddressFormat.Decoded decoded;
        try {
            decoded = AddressFormat.decode(bytes);
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        assertThat(AddressFormat.encode(decoded.idHigh(), decoded.idLow(), decoded.entries())).isEqualTo(bytes);
    }
}
