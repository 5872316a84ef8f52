package dev.conduit.chronicle;

import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesIn;
import net.openhft.chronicle.bytes.BytesMarshallable;
import net.openhft.chronicle.bytes.BytesOut;
import net.openhft.chronicle.bytes.BytesStore;

/**
 * A database's log and index in one shared region, read and written through Chronicle views
 * ({@link ChronicleViews}) by a writer process and reader processes that map the same pages: the
 * record pattern of Aeron's and Agrona's logs (the length word, written last with release
 * semantics, commits a record) and an open-addressing index updated by compare-and-swap.
 *
 * <pre>
 * offset                 size           field
 * 0                      8              a barrier for the test's race: each process adds 1 (addAndGetLong) per batch
 * 8                      56             0
 * INDEX_START = 64       SLOTS * 16     the index: SLOTS slots of 16 bytes, slot i at INDEX_START + i * 16
 *   slot + 0             8              key: 0 = empty; claimed once by CAS 0 -> key, never changed after
 *   slot + 8             8              value: the log offset of the key's record, written with writeOrderedLong once
 *                                       the key is claimed; 0 = the insert is under way, or its inserter died
 * LOG_START              to the end     the log: records one after another, each 8-aligned
 *   record + 0           4              committed length L of the body: 0 = not committed (the reader waits),
 *                                       written last, with writeOrderedInt, once the body is in place
 *   record + 4           4              0 (so that the body is 8-aligned)
 *   record + 8           L              the body: a {@link Entry} written by its writeMarshallable
 *   record + align8(8+L)                the next record
  * </pre>
 *
 * <p>The region starts zeroed (a new chunk of memfd or posix is; {@link #format} zeroes a reused
 * one), so every length word a reader can reach is 0 until its record is committed. Native byte
 * order (Chronicle's). Keys are not 0. A reader that sees a length word not 0 sees the whole body
 * (the release of {@code writeOrderedInt} pairs with the acquire of {@code readVolatileInt}); a
 * writer that dies before the length word leaves a record no reader ever reads, and one that dies
 * between claiming a key and writing its value leaves the key with value 0, which a lookup reports
 * rather than waits on.
 */
final class SharedLog {

    static final long BARRIER = 0;
    static final int BATCH = 8;
    static final long INDEX_START = 64;
    static final int SLOTS = 16384;
    static final long SLOT_BYTES = 16;
    static final long LOG_START = INDEX_START + SLOTS * SLOT_BYTES;
    private static final long HEADER = 8;

    private SharedLog() {
    }

    /** Zeroes the region's index and log, before it is shared. */
    static void format(BytesStore<?, Void> region) {
        region.zeroOut(0, region.capacity());
    }

    /** Where the record after the one at {@code record} of body length {@code length} starts. */
    static long next(long record, int length) {
        return (record + HEADER + length + 7) & ~7L;
    }

    /**
     * Appends {@code entry} at {@code record} (where the last append ended) and, when
     * {@code commit}, commits it; returns where the next record starts.
     *
     * @throws IllegalStateException when it does not fit in the log (the next length word included)
     */
    static long append(Bytes<Void> log, long record, Entry entry, boolean commit) {
        long body = record + HEADER;
        if (body > log.writeLimit()) throw new IllegalStateException("the log is full at " + record);
        log.writePosition(body);
        entry.writeMarshallable(log);
        int length = Math.toIntExact(log.writePosition() - body);
        long next = next(record, length);
        if (next + 4 > log.capacity()) throw new IllegalStateException("the log is full at " + record);
        if (commit) log.bytesStore().writeOrderedInt(record, length);
        return next;
    }

    /** The committed body length of the record at {@code record}, or 0 when it is not committed (or is past the end). */
    static int committedLength(BytesStore<?, Void> log, long record) {
        return record + 4 > log.capacity() ? 0 : log.readVolatileInt(record);
    }

    /** Reads the committed record at {@code record}, of body length {@code length}, into {@code into}. */
    static Entry read(Bytes<Void> log, long record, int length, Entry into) {
        log.readPositionRemaining(record + HEADER, length);
        into.readMarshallable(log);
        if (log.readRemaining() != 0) throw new IllegalStateException("record at " + record + " has " + log.readRemaining() + " bytes more than its entry");
        return into;
    }

    /**
     * Inserts {@code key} with {@code value} (not 0) by CAS: returns {@code true} when this call
     * claimed the key's slot, {@code false} when the key was there already (another insert, in
     * this process or another, won it).
     *
     * @throws IllegalStateException when every slot holds another key
     */
    static boolean insert(BytesStore<?, Void> index, long key, long value) {
        long slot = claim(index, key);
        if (slot < 0) return false;
        index.writeOrderedLong(slot + 8, value);
        return true;
    }

    /**
     * Claims a slot for {@code key} by CAS and returns where it is, its value still 0, or -1 when
     * the key was there already. An inserter that dies here leaves the key with value 0 for good.
     */
    static long claim(BytesStore<?, Void> index, long key) {
        for (int probe = 0, slot = home(key); probe < SLOTS; probe++, slot = (slot + 1) & (SLOTS - 1)) {
            long at = INDEX_START + slot * SLOT_BYTES;
            long found = index.readVolatileLong(at);
            if (found == 0 && index.compareAndSwapLong(at, 0, key)) return at;
            if (found == 0) found = index.readVolatileLong(at); // another insert claimed it first: whose key?
            if (found == key) return -1;
        }
        throw new IllegalStateException("the index is full: " + SLOTS + " slots");
    }

    /**
     * The value of {@code key}, -1 when the key is absent, or 0 when its slot is claimed but its
     * value not yet written: an insert under way, or one whose inserter died (a reader must not wait
     * for it).
     */
    static long lookup(BytesStore<?, Void> index, long key) {
        for (int probe = 0, slot = home(key); probe < SLOTS; probe++, slot = (slot + 1) & (SLOTS - 1)) {
            long at = INDEX_START + slot * SLOT_BYTES;
            long found = index.readVolatileLong(at);
            if (found == 0) return -1;
            if (found == key) return index.readVolatileLong(at + 8);
        }
        return -1;
    }

    /** How many slots hold a key. */
    static int occupied(BytesStore<?, Void> index) {
        int n = 0;
        for (int slot = 0; slot < SLOTS; slot++) if (index.readVolatileLong(INDEX_START + slot * SLOT_BYTES) != 0) n++;
        return n;
    }

    private static int home(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & (SLOTS - 1);
    }

    /** The key the writer inserts for record {@code sequence}. */
    static long writerKey(long sequence) {
        return 2 * sequence + 2;
    }

    /** The key a reader inserts for record {@code sequence}. */
    static long readerKey(long sequence) {
        return 2 * sequence + 1;
    }

    /** A key both insert for every {@code sharedEvery}-th record: one of the two wins it. */
    static long sharedKey(long sequence) {
        return -1 - sequence;
    }

    /** The keys of a race: both processes insert each of them, in the same order, at once. */
    static long raceKey(int i) {
        return (1L << 40) + i;
    }

    /**
     * Inserts the {@code count} race keys (each with the value i + 1), {@link #BATCH} at a time,
     * from each of the two processes of a race: both start each batch together, after a barrier
     * ({@link #BARRIER}), so that they keep meeting at the same slots whichever is faster. Returns
     * how many of the keys this process inserted. Each process first inserts as many keys into a
     * private copy of the region, so that both race with compiled code.
     */
    static long race(BytesStore<?, Void> region, int count) {
        BytesStore<?, Void> warmUp = region.copy();
        format(warmUp);
        for (int i = 0; i < SLOTS / 2; i++) insert(warmUp, raceKey(i), i + 1);
        long inserted = 0;
        for (int batch = 0; batch * BATCH < count; batch++) {
            region.addAndGetLong(BARRIER, 1);
            while (region.readVolatileLong(BARRIER) < 2L * (batch + 1)) Thread.onSpinWait();
            for (int i = batch * BATCH; i < Math.min(count, (batch + 1) * BATCH); i++) if (insert(region, raceKey(i), i + 1)) inserted++;
        }
        return inserted;
    }

    /**
     * A log entry, marshalled by Chronicle: sequence (8), key (8), text (Chronicle's 8-bit string:
     * stop-bit length, bytes), of a length that varies with the sequence, so records are of many
     * sizes and alignments.
     */
    static final class Entry implements BytesMarshallable {
        long sequence;
        long key;
        String text = "";

        static Entry of(long sequence) {
            Entry e = new Entry();
            e.sequence = sequence;
            e.key = writerKey(sequence);
            e.text = "entry " + sequence + " " + "x".repeat((int) (sequence * 37 % 300));
            return e;
        }

        @Override
        public void writeMarshallable(BytesOut<?> bytes) {
            bytes.writeLong(sequence);
            bytes.writeLong(key);
            bytes.write8bit(text);
        }

        @Override
        public void readMarshallable(BytesIn<?> bytes) {
            sequence = bytes.readLong();
            key = bytes.readLong();
            text = bytes.read8bit();
        }

        /** Whether this is exactly the entry the writer made for {@code expected}. */
        boolean is(long expected) {
            Entry e = of(expected);
            return sequence == e.sequence && key == e.key && text.equals(e.text);
        }

        @Override
        public String toString() {
            return sequence + "/" + key + "/" + text.length() + " chars";
        }
    }
}
