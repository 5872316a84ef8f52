package dev.conduit.plugin.devdax;

import java.util.Map;
import java.util.TreeMap;

/**
 * The free ranges of a device's data area, in bytes, each a whole number of alignment units.
 * Next fit: a search starts where the previous allocation ended and wraps around at the end, so
 * that a range just freed is handed out again only after the rest of the device was. Device
 * memory is physical: a process still mapping a freed range (an importer that has not noticed the
 * free, a consumer across its producer's restart) sees whatever the range's next owner writes, and
 * first fit from the lowest address made that next owner the very next allocation. Next fit costs
 * some fragmentation, which pools of equal chunks hardly feel. A freed range still merges with
 * free neighbours at once. Kept in the provider's memory only: the allocation table on the device
 * is the durable record, and this is rebuilt from it on every start.
 *
 * <p>Not thread-safe; the provider guards it.
 */
final class Extents {

    /** Start of each free range to its length; ranges never touch (they would have been merged). */
    private final TreeMap<Long, Long> free = new TreeMap<>();
    private long freeBytes;
    /** Where the next search starts: the end of the last range taken, or where {@link #startAt} put it. */
    private long next;

    /** Everything in {@code [start, end)} free. */
    Extents(long start, long end) {
        if (end > start) {
            free.put(start, end - start);
            freeBytes = end - start;
        }
        next = start;
    }

    /** Makes the next search start at {@code offset}, e.g. where the device's previous owner stopped. */
    void startAt(long offset) {
        next = offset;
    }

    /** Where the next search starts. */
    long next() {
        return next;
    }

    /**
     * Takes {@code length} bytes at the first place from where the previous search stopped: from
     * there on in the free range that holds it, else at the start of the first free range beyond
     * it that is long enough, else, wrapping around, of the first one from the lowest address.
     *
     * @return its offset, or -1 if no free range is that long
     */
    long take(long length) {
        Map.Entry<Long, Long> holding = free.floorEntry(next);
        if (holding != null && holding.getKey() + holding.getValue() - next >= length) {
            return carve(holding, next, length);
        }
        for (Map.Entry<Long, Long> range : free.tailMap(next, false).entrySet()) {
            if (range.getValue() >= length) return carve(range, range.getKey(), length);
        }
        for (Map.Entry<Long, Long> range : free.headMap(next, true).entrySet()) {
            if (range.getValue() >= length) return carve(range, range.getKey(), length);
        }
        return -1;
    }

    /** Allocates {@code [offset, offset + length)} out of {@code range}, which holds it; the next search starts after it. */
    private long carve(Map.Entry<Long, Long> range, long offset, long length) {
        takeOut(range, offset, length);
        next = offset + length;
        return offset;
    }

    /** Removes {@code [offset, offset + length)} from the free {@code range} that holds it. */
    private void takeOut(Map.Entry<Long, Long> range, long offset, long length) {
        long start = range.getKey();
        long end = start + range.getValue();
        free.remove(start);
        if (start < offset) free.put(start, offset - start);
        if (offset + length < end) free.put(offset + length, end - offset - length);
        freeBytes -= length;
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
        takeOut(range, offset, length);
    }

    /**
     * Returns {@code [offset, offset + length)}, merging it with free neighbours.
     *
     * @throws IllegalArgumentException if any of it is free already; the free ranges are left as they were
     */
    void give(long offset, long length) {
        long start = offset;
        long end = offset + length;
        Map.Entry<Long, Long> before = free.floorEntry(offset);
        if (before != null && before.getKey() + before.getValue() > offset) {
            throw new IllegalArgumentException("range [" + offset + ", " + end + ") is free already");
        }
        // Both checks before any merge: a refusal after one would drop the merged neighbour from the map.
        Map.Entry<Long, Long> after = free.ceilingEntry(offset);
        if (after != null && after.getKey() < end) {
            throw new IllegalArgumentException("range [" + offset + ", " + end + ") overlaps a free range");
        }
        if (before != null && before.getKey() + before.getValue() == offset) {
            start = before.getKey();
            free.remove(start);
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
