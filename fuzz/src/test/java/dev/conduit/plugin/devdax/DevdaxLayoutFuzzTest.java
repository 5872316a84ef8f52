package dev.conduit.plugin.devdax;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a devdax importer or a restarting provider reads that another process wrote: the handle's
 * payload, and the device's header and allocation table. For any bytes the payload decoder returns
 * a payload or throws {@link InvalidHandleException}; the header reader classifies any header as
 * blank, damaged or valid without throwing; and recovery of a valid layout's table keeps only
 * aligned, in-range, non-overlapping allocations in the data area.
 *
 * <p>A header is one of three: written by {@link Layout#format}; any bytes, which almost never carry
 * a matching checksum, so that the reader calls them damaged on it whatever their fields say; or
 * any fields under the magic, this version and a matching checksum, as a process that writes the
 * device could write them, so that the fields alone decide: a header read as valid has a geometry
 * the importer and the provider can use (an alignment that is a power of two of at least 4096, a
 * size that is a positive multiple of it, the table and the data where the geometry puts them, room
 * for data) and a generation a start can move on. Without the third, a geometry check the reader lost
 * went unseen (an alignment of 0 divides by zero in {@link Layout.Geometry#capacity}).
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
            int kind = data.consumeInt(0, 2);
            boolean validHeader = kind == 0;
            if (kind == 2) {
                Layout.Found found = Layout.read(sealedHeader(metadata, data));
                if (found instanceof Layout.Valid(Layout.Header header)) {
                    Layout.Geometry g = header.geometry();
                    assertThat(g.alignment()).as("alignment").isGreaterThanOrEqualTo(4096);
                    assertThat(Long.bitCount(g.alignment())).as("alignment %d a power of two", g.alignment()).isEqualTo(1);
                    assertThat(g.size()).as("size").isPositive();
                    assertThat(g.size() % g.alignment()).as("size %d in whole units of %d", g.size(), g.alignment()).isZero();
                    assertThat(metadata.get(LE_LONG, Layout.OFFSET_TABLE)).as("table offset").isEqualTo(Layout.TABLE_OFFSET);
                    assertThat(metadata.get(LE_LONG, Layout.OFFSET_DATA)).as("data offset").isEqualTo(g.dataOffset());
                    assertThat(g.dataOffset()).as("room for data").isLessThan(g.size());
                    assertThat(header.layoutId()).as("layout id").isNotZero();
                    assertThat(header.generation()).as("generation").isBetween(1L, Layout.MAX_GENERATION);
                } else {
                    assertThat(found).isNotNull();
                }
                return;
            }
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

    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * {@code metadata} with a header of any fields, each either what a consistent header holds or any value, under
     * the magic, this version and the checksum of those fields, as {@link Layout#format} computes it.
     */
    private static MemorySegment sealedHeader(MemorySegment metadata, FuzzedDataProvider data) {
        long alignment = data.consumeBoolean() ? 1L << data.consumeInt(0, 63) : data.consumeLong();
        long size = data.consumeBoolean() && alignment > 0 ? alignment * data.consumeLong(0, Long.MAX_VALUE / alignment) : data.consumeLong();
        long dataOffset = data.consumeBoolean() && alignment > 0 ? new Layout.Geometry(size, alignment).dataOffset() : data.consumeLong();
        metadata.set(LE_INT, Layout.OFFSET_VERSION, Layout.VERSION);
        metadata.set(LE_LONG, Layout.OFFSET_LAYOUT_ID, data.consumeLong());
        metadata.set(LE_LONG, Layout.OFFSET_SIZE, size);
        metadata.set(LE_LONG, Layout.OFFSET_ALIGNMENT, alignment);
        metadata.set(LE_LONG, Layout.OFFSET_TABLE, data.consumeBoolean() ? Layout.TABLE_OFFSET : data.consumeLong());
        metadata.set(LE_LONG, Layout.OFFSET_DATA, dataOffset);
        metadata.set(LE_LONG, Layout.OFFSET_GENERATION, data.consumeLong());
        CRC32C crc = new CRC32C();
        crc.update(metadata.asSlice(Layout.OFFSET_VERSION, Layout.OFFSET_CRC - Layout.OFFSET_VERSION).asByteBuffer());
        metadata.set(LE_INT, Layout.OFFSET_CRC, (int) crc.getValue());
        metadata.set(LE_LONG, Layout.OFFSET_MAGIC, Layout.MAGIC);
        return metadata;
    }
}
