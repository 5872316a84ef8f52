package dev.conduit.plugin.devdax;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

/** Reading a device's header while its owner writes a new layout over it. */
class LayoutTest {

    private static final Layout.Geometry GEOMETRY = new Layout.Geometry(64L << 20, 4096);
    private static final ValueLayout.OfLong LITTLE_ENDIAN_LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt LITTLE_ENDIAN_INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * An importer or {@code conduit info} may read the header while an owner formats the device:
     * the magic was looked at once, before the fields, so a format that began after that look
     * gave fields half cleared ("layout version 0", "checksum does not match"), and the layout
     * was called damaged, with the remedy of a reset that was under way. The reader now sees
     * either layout, or the device blank, never a damaged one; only a read that waited
     * {@link Layout#FORMAT_WAIT_MILLIS} for a format's end may say the layout is being written,
     * which this owner, formatting back to back, keeps doing.
     */
    @Test
    void aReadThatAFormatOverlapsSeesALayoutNeverADamagedOne() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            Layout.format(metadata, GEOMETRY, 0x1111, 1);
            int formats = 2_000; // layout id 0x2222 with even generations, 0x1111 with odd ones
            Thread owner = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < formats; i++) {
                    Layout.format(metadata, GEOMETRY, i % 2 == 0 ? 0x2222 : 0x1111, i + 2);
                    LockSupport.parkNanos(20_000);
                }
            });
            List<String> damaged = new ArrayList<>();
            List<Layout.Header> torn = new ArrayList<>();
            long reads = 0;
            while (owner.isAlive()) {
                reads++;
                long began = System.nanoTime();
                Layout.Found found = Layout.read(metadata);
                boolean waitedForTheFormat = System.nanoTime() - began >= TimeUnit.MILLISECONDS.toNanos(Layout.FORMAT_WAIT_MILLIS);
                switch (found) {
                    // A read that a loaded machine kept off the processor that long finds the owner still rewriting, and says so.
                    case Layout.BeingWritten(String reason) when waitedForTheFormat -> { }
                    case Layout.BeingWritten(String reason) -> damaged.add("being written, before the wait was over: " + reason);
                    case Layout.Damaged(String reason) -> damaged.add(reason);
                    // Each format writes layout id 0x2222 with an even generation, 0x1111 with an odd one.
                    case Layout.Valid(Layout.Header h) when (h.layoutId() == 0x2222) != (h.generation() % 2 == 0) -> torn.add(h);
                    default -> { }
                }
            }
            owner.join();
            assertThat(damaged).as("reads seen as damaged, of %d reads beside %d formats", reads, formats).isEmpty();
            assertThat(torn).as("headers of one format with the generation of another").isEmpty();
            assertThat(Layout.read(metadata)).isInstanceOf(Layout.Valid.class);
        }
    }

    /**
     * A format that begins under a read (the magic cleared between the copy and the second look)
     * and does not end within {@link Layout#FORMAT_WAIT_MILLIS} is a layout being written, not a
     * blank device: read as blank, an importer was told the device holds no layout and asked
     * whether its device table leads it to the producer's device, which sent it the wrong way.
     */
    @Test
    void aFormatThatBeganUnderAReadAndDoesNotEndIsBeingWritten() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            Layout.format(metadata, GEOMETRY, 0x1111, 1);
            Layout.Found found = Layout.read(metadata, () -> metadata.set(ValueLayout.JAVA_LONG, Layout.OFFSET_MAGIC, 0L));
            assertThat(found).isEqualTo(new Layout.BeingWritten("its owner began writing a new layout while it was read, and had not "
                    + "finished after " + Layout.FORMAT_WAIT_MILLIS + " ms"));
        }
    }

    /**
     * An owner whose starts come and go between every copy and its second look (the generation
     * moves each time) is rewriting the layout: after {@link Layout#FORMAT_WAIT_MILLIS} that is
     * what the read says, not damage, whose remedy (a reset) would be wrong for it.
     */
    @Test
    void anOwnerThatKeepsRewritingTheLayoutIsWritingIt() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            Layout.format(metadata, GEOMETRY, 0x1111, 1);
            Layout.Found found = Layout.read(metadata, () -> Layout.writeGeneration(metadata, Layout.generation(metadata) + 1));
            assertThat(found).isEqualTo(new Layout.BeingWritten("its owner kept rewriting it while it was read for "
                    + Layout.FORMAT_WAIT_MILLIS + " ms"));
        }
    }

    /** Damage that stays is reported as damage, after one more read: the retry is for a format under way, not for this. */
    @Test
    void aHeaderDamagedForGoodIsStillDamaged() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            Layout.format(metadata, GEOMETRY, 0x1111, 1);
            metadata.set(ValueLayout.JAVA_LONG_UNALIGNED, Layout.OFFSET_SIZE, 3 * 4096L);
            assertThat(Layout.read(metadata)).isEqualTo(new Layout.Damaged("the header's checksum does not match its contents"));
        }
    }

    /**
     * A header with a checksum that matches, but a field no format of this version writes (another
     * version, a geometry no device has, layout id 0, the table or the data elsewhere, generation
     * 0), is damage naming the field, not a layout: an importer would map ranges checked against
     * it, and an owner's recover adopt its table.
     */
    @ParameterizedTest
    @MethodSource("fieldsNoFormatWrites")
    void aHeaderWithAFieldNoFormatWritesIsDamagedNamingIt(long field, long value, String reason) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            Layout.format(metadata, GEOMETRY, 0x1111, 1);
            metadata.set(LITTLE_ENDIAN_LONG, field, value);
            sealHeader(metadata);
            assertThat(Layout.read(metadata)).isEqualTo(new Layout.Damaged(reason));
        }
    }

    static Stream<Arguments> fieldsNoFormatWrites() {
        long size = GEOMETRY.size();
        long data = GEOMETRY.dataOffset();
        return Stream.of(
                Arguments.of(Layout.OFFSET_VERSION, 2L, "layout version 2, but this plugin reads version 1"),
                Arguments.of(Layout.OFFSET_ALIGNMENT, 2048L, "size " + size + " and alignment 2048 are not a valid geometry"),
                Arguments.of(Layout.OFFSET_SIZE, size + 512, "size " + (size + 512) + " and alignment 4096 are not a valid geometry"),
                Arguments.of(Layout.OFFSET_LAYOUT_ID, 0L, "inconsistent header (layout id 0, table at 128, data at " + data
                        + ", generation 1)"),
                Arguments.of(Layout.OFFSET_TABLE, 256L, "inconsistent header (layout id 1111, table at 256, data at " + data
                        + ", generation 1)"),
                Arguments.of(Layout.OFFSET_DATA, data + 4096, "inconsistent header (layout id 1111, table at 128, data at "
                        + (data + 4096) + ", generation 1)"),
                Arguments.of(Layout.OFFSET_GENERATION, 0L, "inconsistent header (layout id 1111, table at 128, data at " + data
                        + ", generation 0)"));
    }

    /** Writes the checksum of the header's fields as they are now, as a format would have. */
    private static void sealHeader(MemorySegment metadata) {
        CRC32C crc = new CRC32C();
        crc.update(metadata.asSlice(Layout.OFFSET_VERSION, Layout.OFFSET_CRC - Layout.OFFSET_VERSION).toArray(ValueLayout.JAVA_BYTE));
        metadata.set(LITTLE_ENDIAN_INT, Layout.OFFSET_CRC, (int) crc.getValue());
    }

    /** A device whose magic is absent reads as blank at once: nothing was under way when the read began. */
    @Test
    void aDeviceWithoutTheMagicIsBlank() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            assertThat(Layout.read(metadata)).isEqualTo(new Layout.Blank());
        }
    }

    /**
     * An importer reads an allocation's entry while its owner may free it and publish another in
     * its place: the id, the length, then the id again. An entry freed between the reads, with
     * or without another allocation published there, is no entry (null), never the first id with
     * the other allocation's length. Nothing checked the second look: without it both reads below
     * gave an entry.
     */
    @Test
    void anEntryFreedWhileItIsReadIsNoEntryAlsoWhenAnotherIsPublishedInItsPlace() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            Layout.format(metadata, GEOMETRY, 0x1111, 1);
            long offset = GEOMETRY.dataOffset();
            Layout.publish(metadata, GEOMETRY, offset, 0xA, 8192);
            assertThat(Layout.readEntry(metadata, 0, GEOMETRY, offset)).isEqualTo(new Layout.Entry(offset, 0xA, 8192));

            assertThat(Layout.readEntry(metadata, 0, GEOMETRY, offset, () -> Layout.revoke(metadata, GEOMETRY, offset)))
                    .as("freed between the reads").isNull();
            Layout.publish(metadata, GEOMETRY, offset, 0xA, 8192);
            assertThat(Layout.readEntry(metadata, 0, GEOMETRY, offset, () -> {
                Layout.revoke(metadata, GEOMETRY, offset);
                Layout.publish(metadata, GEOMETRY, offset, 0xB, 4096);
            })).as("freed and another allocation published in its place").isNull();
        }
    }
}
