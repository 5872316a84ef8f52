package dev.conduit.plugin.devdax;

import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * The free ranges of a device's data area, in bytes, each a whole number of alignment units.
 * First fit by address, so that allocations pack towards the start of the device and a freed
 * range merges with free neighbours at once. Kept in the provider's memory only: the allocation
 * table on the device is the durable record, and this is rebuilt from it on every start.
 *
 * <p>Not thread-safe; the provider guards it.
 */
final class Extents {

    /** Start of each free range to its length; ranges never touch (they would have been merged). */
    private final TreeMap<Long, Long> free = new TreeMap<>();
    private long freeBytes;

    /** Everything in {@code [start, end)} free. */
    Extents(long start, long end) {
        if (end > start) {
            free.put(start, end - start);
            freeBytes = end - start;
        }
    }

    /**
     * Takes the lowest free range of {@code length} bytes.
     *
     * @return its offset, or -1 if no free range is that long
     */
    long take(long length) {
        Iterator<Map.Entry<Long, Long>> ranges = free.entrySet().iterator();
        while (ranges.hasNext()) {
            Map.Entry<Long, Long> range = ranges.next();
            long rangeLength = range.getValue();
            if (rangeLength < length) continue;
            long offset = range.getKey();
            ranges.remove();
            if (rangeLength > length) free.put(offset + length, rangeLength - length);
            freeBytes -= length;
            return offset;
        }
        return -1;
    }

    /**
     * Marks {@code [offset, offset + length)} used, for allocations re-adopted from the table.
     *
     * @throws IllegalArgumentException if any of it is not free
     */
    void reserve(long offset, long length) {
        Map.Entry<Long, Long> range = free.floorEntry(offset);
        if (range == null || range.getKey() + range.getValue() < offset + length) {
            throw new IllegalArgumentException("range [" + offset + ", " + (offset + length) + ") is not free");
        }
        long start = range.getKey();
        long end = start + range.getValue();
        free.remove(start);
        if (start < offset) free.put(start, offset - start);
        if (offset + length < end) free.put(offset + length, end - offset - length);
        freeBytes -= length;
    }

    /** Returns {@code [offset, offset + length)}, merging it with free neighbours. */
    void give(long offset, long length) {
        long start = offset;
        long end = offset + length;
        Map.Entry<Long, Long> before = free.floorEntry(offset);
        if (before != null && before.getKey() + before.getValue() > offset) {
            throw new IllegalArgumentException("range [" + offset + ", " + end + ") is free already");
        }
        if (before != null && before.getKey() + before.getValue() == offset) {
            start = before.getKey();
            free.remove(start);
        }
        Map.Entry<Long, Long> after = free.ceilingEntry(offset);
        if (after != null && after.getKey() < end) {
            throw new IllegalArgumentException("range [" + offset + ", " + end + ") overlaps a free range");
        }
        if (after != null && after.getKey() == end) {
            end += after.getValue();
            free.remove(after.getKey());
        }
        free.put(start, end - start);
        freeBytes += length;
    }

    long freeBytes() {
        return freeBytes;
    }

    /** The longest free range, 0 if none. */
    long largest() {
        long largest = 0;
        for (long length : free.values()) largest = Math.max(largest, length);
        return largest;
    }

    /** Free ranges, for tests and messages. */
    int ranges() {
        return free.size();
    }
}
