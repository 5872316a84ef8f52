package dev.conduit.plugin.devdax;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a devdax importer or a restarting provider reads that another process wrote: the handle's
 * payload, and the device's header and allocation table. For any bytes the payload decoder returns
 * a payload or throws {@link InvalidHandleException}; the header reader classifies any header as
 * blank, damaged or valid without throwing; and recovery of a valid layout's table keeps only
 * aligned, in-range, non-overlapping allocations in the data area.
 */
class DevdaxLayoutFuzzTest {

    private static final long ALIGNMENT = 4096;
    private static final long DEVICE = 64 * ALIGNMENT;

    @FuzzTest(maxExecutions = 100_000, maxDuration = "2m")
    void payloadHeaderAndTableNeverBreakTheReader(FuzzedDataProvider data) {
        byte[] payload = data.consumeBytes(data.consumeInt(0, 128));
        try {
            DevdaxPayload decoded = DevdaxPayload.decode(new PayloadReader(payload, 0, payload.length, "payload."));
            assertThat(decoded.encode()).isEqualTo(payload);
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
        }

        Layout.Geometry geometry = new Layout.Geometry(DEVICE, ALIGNMENT);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(geometry.dataOffset(), 8);
            boolean validHeader = data.consumeBoolean();
            if (validHeader) {
                // A generation of 2^63-1 cannot be moved on by the next owner: the reader calls it damage.
                Layout.format(metadata, geometry, data.consumeLong() | 1, Math.clamp(data.consumeLong() & Long.MAX_VALUE, 1, Long.MAX_VALUE - 1));
            } else {
                byte[] header = data.consumeBytes((int) Layout.TABLE_OFFSET);
                MemorySegment.copy(header, 0, metadata, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, header.length);
            }
            Layout.Found found = Layout.read(metadata);
            assertThat(found).isNotNull();
            if (!validHeader) return;
            assertThat(found).isInstanceOf(Layout.Valid.class);

            byte[] table = data.consumeRemainingAsBytes();
            long tableLength = Layout.ENTRY_SIZE * geometry.capacity();
            MemorySegment.copy(table, 0, metadata, java.lang.foreign.ValueLayout.JAVA_BYTE, Layout.TABLE_OFFSET,
                    (int) Math.min(table.length, tableLength));
            List<String> dropped = new ArrayList<>();
            List<Layout.Entry> entries = Layout.adoptable(metadata, geometry, dropped);
            long end = geometry.dataOffset();
            for (Layout.Entry e : entries) {
                assertThat(e.offset()).isGreaterThanOrEqualTo(end);
                assertThat(e.offset() % ALIGNMENT).isZero();
                assertThat(e.length()).isPositive();
                assertThat(e.length() % ALIGNMENT).isZero();
                assertThat(e.length()).isLessThanOrEqualTo(DEVICE - e.offset());
                end = e.offset() + e.length();
                assertThat(Layout.readEntry(metadata, 0, geometry, e.offset())).isEqualTo(e);
            }
            assertThat(Layout.adoptable(metadata, geometry, new ArrayList<>())).as("recovery is idempotent").isEqualTo(entries);
        }
    }
}
