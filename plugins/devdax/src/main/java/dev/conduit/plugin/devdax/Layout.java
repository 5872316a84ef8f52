package dev.conduit.plugin.devdax;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32C;

/**
 * The allocator's metadata, kept on the device itself so that it outlives the owner: a header and
 * an allocation table at the start of the device, the <em>metadata region</em>, which is never
 * handed out. All integers little-endian.
 *
 * <table class="striped">
 * <caption>Header (offset 0)</caption>
 * <tr><th>offset</th><th>size</th><th>field</th><th>meaning</th></tr>
 * <tr><td>0</td><td>8</td><td>magic</td><td>ASCII {@code CNDTDAX} and a NUL; when formatting, cleared first (a
 *     store-store fence keeps every later store behind it) and written last (release), so a half-written layout
 *     reads as none; readers copy the header between two looks at it ({@link #read})</td></tr>
 * <tr><td>8</td><td>4</td><td>version</td><td>{@value #VERSION}</td></tr>
 * <tr><td>12</td><td>4</td><td>reserved</td><td>0</td></tr>
 * <tr><td>16</td><td>8</td><td>layout id</td><td>random, not 0, chosen when the layout is first written and kept by
 *     every restart; exports carry it, so an importer whose alias leads to another device says so</td></tr>
 * <tr><td>24</td><td>8</td><td>size</td><td>bytes managed: the device's size rounded down to the alignment</td></tr>
 * <tr><td>32</td><td>8</td><td>alignment</td><td>allocation unit, a power of two</td></tr>
 * <tr><td>40</td><td>8</td><td>table offset</td><td>{@value #TABLE_OFFSET}</td></tr>
 * <tr><td>48</td><td>8</td><td>data offset</td><td>length of the metadata region: table offset + entry size &times;
 *     (size / alignment), rounded up to the alignment; the first byte that may be allocated</td></tr>
 * <tr><td>56</td><td>4</td><td>header CRC</td><td>CRC32C of bytes 8 to 55</td></tr>
 * <tr><td>60</td><td>4</td><td>reserved</td><td>0</td></tr>
 * <tr><td>64</td><td>8</td><td>generation</td><td>1 when formatted, + 1 at every start of an owner (reset or recover);
 *     outside the CRC, so that a start changes it with one atomic store; from 1 to {@link #MAX_GENERATION}
 *     (2<sup>63</sup>-2), since exports carry it: any other value is damage. A start that finds the largest treats it
 *     as damage too, for it cannot move it on to a value readers take</td></tr>
 * <tr><td>72</td><td>8</td><td>next offset</td><td>where the owner's next allocation search starts (the end of its
 *     last allocation), so that a restarted owner goes on from there instead of handing the previous owner's ranges
 *     out again at once; a hint, outside the CRC, stored atomically: a value inside the data area is rounded up to
 *     the alignment, any other (0, as layouts written before it was kept read) means the data offset</td></tr>
 * <tr><td>80</td><td>48</td><td>reserved</td><td>0</td></tr>
 * </table>
 *
 * <table class="striped">
 * <caption>Allocation table (offset {@value #TABLE_OFFSET}): one entry per alignment unit of the device</caption>
 * <tr><th>offset in entry</th><th>size</th><th>field</th><th>meaning</th></tr>
 * <tr><td>0</td><td>8</td><td>allocation id</td><td>random, not 0, when an allocation starts at this entry's unit
 *     ({@code offset = index × alignment}); 0 otherwise</td></tr>
 * <tr><td>8</td><td>8</td><td>length</td><td>the allocation's length in bytes, a multiple of the alignment</td></tr>
 * </table>
 *
 * <p><b>Crash consistency.</b> Indexing the table by unit makes every allocation one entry that
 * one process writes: allocating stores the length, then the id with release semantics; freeing
 * stores id 0 first (which revokes every export of it at once), then length 0. An owner that dies
 * between two stores leaves either no allocation or a whole one, never a torn one; a reader (an
 * importer in another process) reads id, length and id again with acquire semantics, and trusts
 * the entry only if both ids match. This holds across process crashes, whose stores the CPU
 * caches keep. Across power loss it holds only where the CPU caches are in the persistence domain
 * (eADR, or CXL memory that is not persistent anyway): the plugin does not flush cache lines.
 *
 * <p><b>Cost.</b> 16 bytes per alignment unit: 1/131072 of the device at 2 MiB alignment, 1/256
 * at 4 KiB; the metadata region is at least one alignment unit.
 */
final class Layout {

    /** "CNDTDAX\0", little-endian. */
    static final long MAGIC = 0x0058_4144_5444_4E43L;
    static final int VERSION = 1;
    /**
     * The largest generation a layout may hold. 2<sup>63</sup>-1 is none: a start from it would wrap to a
     * negative one, which exports cannot carry. A start stores one more than it found, so it takes a layout at
     * this generation for damaged ({@code DevdaxProvider#start}) rather than store one no reader accepts.
     */
    static final long MAX_GENERATION = Long.MAX_VALUE - 1;
    static final long TABLE_OFFSET = 128;
    static final long ENTRY_SIZE = 16;

    static final long OFFSET_MAGIC = 0;
    static final long OFFSET_VERSION = 8;
    static final long OFFSET_LAYOUT_ID = 16;
    static final long OFFSET_SIZE = 24;
    static final long OFFSET_ALIGNMENT = 32;
    static final long OFFSET_TABLE = 40;
    static final long OFFSET_DATA = 48;
    static final long OFFSET_CRC = 56;
    static final long OFFSET_GENERATION = 64;
    static final long OFFSET_NEXT = 72;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG_HANDLE = LONG.varHandle();
    /** How long {@link #read} waits for a format that began under it to end. */
    static final long FORMAT_WAIT_MILLIS = 100;
    private static final long REREAD_PAUSE_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

    private Layout() {
    }

    // ---------------------------------------------------------------- geometry

    /**
     * Where things are on a device of {@code size} bytes managed in units of {@code alignment}.
     *
     * @param size      bytes managed, a multiple of {@code alignment}
     * @param alignment allocation unit, a power of two
     */
    record Geometry(long size, long alignment) {

        /**
         * The geometry of a device that reports {@code deviceSize} bytes, allocated in units of
         * {@code alignment}: the size is rounded down to the alignment.
         */
        static Geometry of(long deviceSize, long alignment) {
            return new Geometry(deviceSize - deviceSize % alignment, alignment);
        }

        /** Entries in the table: one per alignment unit. */
        long capacity() {
            return size / alignment;
        }

        /** The first byte after the metadata region, a multiple of the alignment. */
        long dataOffset() {
            long end = TABLE_OFFSET + ENTRY_SIZE * capacity();
            return (end + alignment - 1) / alignment * alignment;
        }

        /** Whether at least one unit remains for data. */
        boolean hasRoomForData() {
            return size > 0 && dataOffset() < size;
        }

        long entryOffset(long offset) {
            return TABLE_OFFSET + ENTRY_SIZE * (offset / alignment);
        }
    }

    // ---------------------------------------------------------------- reading, for every process

    /** A header as read from a device. */
    record Header(long layoutId, Geometry geometry, long generation) {
    }

    /** What the start of a device holds. */
    sealed interface Found permits Blank, Damaged, BeingWritten, Valid {
    }

    /** No layout: the magic is absent (a new device, or one a format was interrupted on). */
    record Blank() implements Found {
    }

    /** Something with the magic that is not a layout this plugin can use, and why. */
    record Damaged(String reason) implements Found {
    }

    /**
     * A layout its owner was writing while it was read, and had not finished after
     * {@value #FORMAT_WAIT_MILLIS} ms: neither blank nor damaged, and read again once the owner
     * has started. (An owner may take seconds: its format writes 16 bytes per allocation unit.)
     */
    record BeingWritten(String reason) implements Found {
    }

    record Valid(Header header) implements Found {
    }

    /**
     * Reads the header from {@code metadata}, a mapping of at least the device's first
     * {@value #TABLE_OFFSET} bytes, and checks every field.
     *
     * <p>An owner may format the device while another process reads it (an importer, or
     * {@code conduit info}): the magic is then cleared under the read, and the fields read are half
     * old, half new. So the header is copied between two looks at the magic and the generation,
     * as a seqlock's readers copy between two looks at its sequence, and checked in the copy: a
     * copy either changed under (a format clears the magic, and every owner's start, a format's
     * too, moves the generation, so one that came and went between the looks is seen) is not trusted, and the format's end is waited for (up to
     * {@value #FORMAT_WAIT_MILLIS} ms; then it is {@link BeingWritten}). A header whose magic is
     * absent at the first look is {@link Blank}: that look cannot tell a format under way from a
     * device never formatted, or one whose format was interrupted. A copy found damaged is taken
     * again, because a whole format may have passed between the two looks; damage is reported
     * once two copies in a row are the same bytes.
     */
    static Found read(MemorySegment metadata) {
        return read(metadata, () -> { });
    }

    /** {@link #read(MemorySegment)}, running {@code afterCopy} between each copy and the second look: tests write there. */
    static Found read(MemorySegment metadata, Runnable afterCopy) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FORMAT_WAIT_MILLIS);
        boolean formatSeen = false;
        MemorySegment copy = MemorySegment.ofArray(new long[(int) (TABLE_OFFSET / Long.BYTES)]);
        MemorySegment damagedCopy = null;
        while (true) {
            boolean late = System.nanoTime() - deadline > 0;
            if (magic(metadata) != MAGIC) {
                if (!formatSeen) return new Blank();
                if (late) {
                    return new BeingWritten("its owner began writing a new layout while it was read, and had not finished after "
                            + FORMAT_WAIT_MILLIS + " ms");
                }
                LockSupport.parkNanos(REREAD_PAUSE_NANOS);
                continue;
            }
            long generation = generation(metadata);
            MemorySegment.copy(metadata, 0, copy, 0, TABLE_OFFSET);
            afterCopy.run();
            VarHandle.loadLoadFence(); // the copy's loads come before the second look at the magic
            if (magic(metadata) != MAGIC || generation(metadata) != generation) {
                // A format began, or one came and went (the magic back, the generation not: every owner's start moves it).
                if (late) return new BeingWritten("its owner kept rewriting it while it was read for " + FORMAT_WAIT_MILLIS + " ms");
                formatSeen = true;
                continue;
            }
            Found found = readFields(copy);
            if (!(found instanceof Damaged) || late || (damagedCopy != null && copy.mismatch(damagedCopy) == -1)) return found;
            damagedCopy = MemorySegment.ofArray(new long[(int) (TABLE_OFFSET / Long.BYTES)]).copyFrom(copy);
            LockSupport.parkNanos(REREAD_PAUSE_NANOS); // damage whose bytes keep changing is not read in a spin
        }
    }

    private static long magic(MemorySegment metadata) {
        return (long) LONG_HANDLE.getAcquire(metadata, OFFSET_MAGIC);
    }

    /** The header's fields in {@code header}, a copy of the device's first {@value #TABLE_OFFSET} bytes, checked. */
    private static Found readFields(MemorySegment header) {
        int version = header.get(INT, OFFSET_VERSION);
        if (version != VERSION) {
            return new Damaged("layout version " + Integer.toUnsignedString(version) + ", but this plugin reads version " + VERSION);
        }
        int crc = header.get(INT, OFFSET_CRC);
        if (crc != crc(header)) {
            return new Damaged("the header's checksum does not match its contents");
        }
        long layoutId = header.get(LONG, OFFSET_LAYOUT_ID);
        long size = header.get(LONG, OFFSET_SIZE);
        long alignment = header.get(LONG, OFFSET_ALIGNMENT);
        long tableOffset = header.get(LONG, OFFSET_TABLE);
        long dataOffset = header.get(LONG, OFFSET_DATA);
        long generation = header.get(LONG, OFFSET_GENERATION);
        if (alignment < 4096 || Long.bitCount(alignment) != 1 || size <= 0 || size % alignment != 0) {
            return new Damaged("size " + size + " and alignment " + alignment + " are not a valid geometry");
        }
        Geometry geometry = new Geometry(size, alignment);
        // The generation is outside the CRC: checked here against the range starts keep to (DevdaxProvider#start).
        if (layoutId == 0 || tableOffset != TABLE_OFFSET || dataOffset != geometry.dataOffset() || !geometry.hasRoomForData()
                || generation <= 0 || generation > MAX_GENERATION) {
            return new Damaged("inconsistent header (layout id " + Long.toHexString(layoutId) + ", table at " + tableOffset
                    + ", data at " + dataOffset + ", generation " + generation + ")");
        }
        return new Valid(new Header(layoutId, geometry, generation));
    }

    /**
     * The allocation starting at {@code offset}, read as another process may be changing it:
     * {@code null} unless a whole allocation is there and stayed there while it was read.
     *
     * @param view      a mapping of the device that covers the entry
     * @param viewStart the device offset at which {@code view} starts
     */
    static Entry readEntry(MemorySegment view, long viewStart, Geometry geometry, long offset) {
        return readEntry(view, viewStart, geometry, offset, () -> { });
    }

    /**
     * {@link #readEntry(MemorySegment, long, Geometry, long)}, running {@code afterLength} between
     * the length and the second look at the id: tests free the entry there.
     */
    static Entry readEntry(MemorySegment view, long viewStart, Geometry geometry, long offset, Runnable afterLength) {
        long at = geometry.entryOffset(offset) - viewStart;
        long id = (long) LONG_HANDLE.getAcquire(view, at);
        long length = (long) LONG_HANDLE.getAcquire(view, at + 8);
        afterLength.run();
        // The length may be another allocation's, published after a free between the reads: only the same id after it vouches for it.
        long again = (long) LONG_HANDLE.getAcquire(view, at);
        return id != 0 && id == again ? new Entry(offset, id, length) : null;
    }

    /** One allocation as the table records it. */
    record Entry(long offset, long id, long length) {
    }

    /** Over the fields between the magic and the CRC: the magic is written last, after the CRC. */
    private static int crc(MemorySegment metadata) {
        CRC32C crc = new CRC32C();
        crc.update(metadata.asSlice(OFFSET_VERSION, OFFSET_CRC - OFFSET_VERSION).toArray(ValueLayout.JAVA_BYTE));
        return (int) crc.getValue();
    }

    // ---------------------------------------------------------------- writing, for the owner only

    /**
     * Writes a new, empty layout over {@code metadata} (the whole metadata region, mapped
     * read-write): invalidates the magic first, clears the table, writes the header, and the magic
     * last, so that a crash at any point leaves either the old layout or none. The invalidation is
     * followed by a store-store fence: a release store orders the stores before it, not those
     * after it, which the compiler may move above it and an aarch64 core may make visible first
     * (x86 keeps stores in order, so the fence costs no instruction there).
     */
    static void format(MemorySegment metadata, Geometry geometry, long layoutId, long generation) {
        LONG_HANDLE.setRelease(metadata, OFFSET_MAGIC, 0L);
        VarHandle.storeStoreFence();
        metadata.asSlice(OFFSET_VERSION, TABLE_OFFSET + ENTRY_SIZE * geometry.capacity() - OFFSET_VERSION).fill((byte) 0);
        metadata.set(INT, OFFSET_VERSION, VERSION);
        metadata.set(LONG, OFFSET_LAYOUT_ID, layoutId);
        metadata.set(LONG, OFFSET_SIZE, geometry.size());
        metadata.set(LONG, OFFSET_ALIGNMENT, geometry.alignment());
        metadata.set(LONG, OFFSET_TABLE, TABLE_OFFSET);
        metadata.set(LONG, OFFSET_DATA, geometry.dataOffset());
        metadata.set(INT, OFFSET_CRC, crc(metadata));
        LONG_HANDLE.setRelease(metadata, OFFSET_GENERATION, generation);
        LONG_HANDLE.setRelease(metadata, OFFSET_MAGIC, MAGIC);
    }

    /**
     * Forgets every allocation of a valid layout: its exports are refused from now on. An importer
     * reading an entry meanwhile may see a partly cleared id, which never equals the random id of
     * its handle.
     */
    static void clearTable(MemorySegment metadata, Geometry geometry) {
        metadata.asSlice(TABLE_OFFSET, ENTRY_SIZE * geometry.capacity()).fill((byte) 0);
        VarHandle.releaseFence();
    }

    static void writeGeneration(MemorySegment metadata, long generation) {
        LONG_HANDLE.setRelease(metadata, OFFSET_GENERATION, generation);
    }

    /** The generation as stored now: another provider that reached the device through another node may have moved it. */
    static long generation(MemorySegment metadata) {
        return (long) LONG_HANDLE.getAcquire(metadata, OFFSET_GENERATION);
    }

    /** The layout id as stored now: another provider that found the layout damaged may have chosen a new one. */
    static long layoutId(MemorySegment metadata) {
        return (long) LONG_HANDLE.getAcquire(metadata, OFFSET_LAYOUT_ID);
    }

    /**
     * Where the previous owner's next allocation search would have started, made valid for
     * {@code geometry}: rounded up to its alignment (a layout for another alignment may have
     * written it), and the data offset unless that lies inside the data area.
     */
    static long nextOffset(MemorySegment metadata, Geometry geometry) {
        long stored = (long) LONG_HANDLE.getAcquire(metadata, OFFSET_NEXT);
        long alignment = geometry.alignment();
        if (stored <= geometry.dataOffset() || stored > geometry.size() - alignment) return geometry.dataOffset();
        return (stored + alignment - 1) / alignment * alignment;
    }

    static void writeNextOffset(MemorySegment metadata, long offset) {
        LONG_HANDLE.setRelease(metadata, OFFSET_NEXT, offset);
    }

    /** Records an allocation: length first, then the id that makes it visible. */
    static void publish(MemorySegment metadata, Geometry geometry, long offset, long id, long length) {
        long at = geometry.entryOffset(offset);
        LONG_HANDLE.setRelease(metadata, at + 8, length);
        LONG_HANDLE.setRelease(metadata, at, id);
    }

    /** Removes an allocation: the id first, which refuses its exports from then on. */
    static void revoke(MemorySegment metadata, Geometry geometry, long offset) {
        long at = geometry.entryOffset(offset);
        LONG_HANDLE.setRelease(metadata, at, 0L);
        LONG_HANDLE.setRelease(metadata, at + 8, 0L);
    }

    /**
     * The allocations a previous owner left in a valid layout, in address order. Entries that
     * cannot be an allocation (outside the data area, misaligned, overlapping an earlier one) are
     * cleared and reported in {@code dropped}: only corruption makes them.
     */
    static List<Entry> adoptable(MemorySegment metadata, Geometry geometry, List<String> dropped) {
        List<Entry> entries = new ArrayList<>();
        long alignment = geometry.alignment();
        long end = geometry.dataOffset();
        for (long index = 0; index < geometry.capacity(); index++) {
            long offset = index * alignment;
            long at = geometry.entryOffset(offset);
            long id = metadata.get(LONG, at);
            if (id == 0) {
                if (metadata.get(LONG, at + 8) != 0) metadata.set(LONG, at + 8, 0L);
                continue;
            }
            long length = metadata.get(LONG, at + 8);
            boolean fits = length > 0 && length % alignment == 0 && offset < geometry.size() && length <= geometry.size() - offset;
            if (offset < end || !fits) {
                dropped.add("entry at offset " + offset + " (id " + Long.toHexString(id) + ", length " + length + ")");
                revoke(metadata, geometry, offset);
                continue;
            }
            entries.add(new Entry(offset, id, length));
            end = offset + length;
        }
        return entries;
    }
}
