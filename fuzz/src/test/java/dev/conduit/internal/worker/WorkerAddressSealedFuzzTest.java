package dev.conduit.internal.worker;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.internal.codec.Envelope;
import dev.conduit.spi.InvalidHandleException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fields of a worker address, framed and sealed as its maker would: {@link WorkerAddressFuzzTest}'s
 * random bytes almost never carry a matching CRC, so {@link AddressFormat#decode} refuses them on
 * {@code crc} whatever their fields say, and a field check it lost would go unseen. Sealed, the
 * fields alone decide: an accepted address lists 1 to {@link AddressFormat#MAX_ENTRIES} transports,
 * each plugin once, and encodes back to the same bytes.
 */
class WorkerAddressSealedFuzzTest {

    @FuzzTest(maxExecutions = 250_000, maxDuration = "2m")
    void sealedFieldsDecodeToDistinctPluginsAndEncodeBack(byte[] fields) {
        if (fields.length + Envelope.OVERHEAD > AddressFormat.MAX_LENGTH) {
            return; // refused by its length alone, as WorkerAddressFuzzTest covers
        }
        byte[] bytes = Envelope.seal(Envelope.begin(AddressFormat.MAGIC, AddressFormat.VERSION).bytes(fields));
        AddressFormat.Decoded decoded;
        try {
            decoded = AddressFormat.decode(bytes);
        } catch (InvalidHandleException e) {
            assertThat(e.field()).as("a sealed address refused on its crc: %s", e.getMessage()).isNotEqualTo("crc");
            return;
        }
        assertThat(decoded.entries()).hasSizeBetween(1, AddressFormat.MAX_ENTRIES)
                .extracting(AddressFormat.Entry::plugin).doesNotHaveDuplicates();
        assertThat(AddressFormat.encode(decoded.idHigh(), decoded.idLow(), decoded.entries())).isEqualTo(bytes);
    }
}
