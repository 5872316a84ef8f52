package dev.conduit.plugin.verbs;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The verbs payload of a remote region's handle gives the registered address, length and key that
 * RDMA then targets. For any bytes the decoder returns a non-null, non-empty range that does not
 * wrap around the address space, or throws {@link InvalidHandleException}; a decoded payload
 * encodes back to the same bytes.
 */
class VerbsRegionFuzzTest {

    @FuzzTest(maxExecutions = 50_000, maxDuration = "2m")
    void decodeAcceptsOnlyARange(byte[] bytes) {
        WireFormat.Region region;
        try {
            region = WireFormat.Region.decode(new PayloadReader(bytes, 0, bytes.length, "payload."));
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        assertThat(region.address()).isNotZero();
        assertThat(region.length()).isPositive();
        assertThat(Long.compareUnsigned(region.address() + region.length(), region.address())).isPositive();
        assertThat(region.encode()).isEqualTo(bytes);
    }
}
