package dev.conduit.plugin.devdax;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/** Reading a device's header while its owner writes a new layout over it. */
class LayoutTest {

    private static final Layout.Geometry GEOMETRY = new Layout.Geometry(64L << 20, 4096);

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

    /** A device whose magic is absent reads as blank at once: nothing was under way when the read began. */
    @Test
    void aDeviceWithoutTheMagicIsBlank() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment metadata = arena.allocate(GEOMETRY.dataOffset(), 4096);
            assertThat(Layout.read(metadata)).isEqualTo(new Layout.Blank());
        }
    }
}
