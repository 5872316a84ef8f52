package dev.conduit.spi;

/**
 * A map from non-zero {@code long} keys to values, by open addressing (linear probing, a keyed
 * hash, backward-shift removal), for what a receive path looks up per message: lookups neither
 * box keys nor allocate, and keys a peer chose (connection ids its records carry) cost what random
 * ones do, since each map hashes with a random seed of its own. The shared-memory transports keep
 * their connections in one, the runtime its reply endpoints; a plugin may use it likewise.
 *
 * <p>Not thread-safe: use it from one thread (a transport's progress thread), or under a lock.
 * Key 0 is reserved ({@link #put} refuses it; {@link #get} of it finds nothing).
 */
public final class LongMap<V> {

    private static final java.security.SecureRandom SEEDS = new java.security.SecureRandom();

    private final long seed = SEEDS.nextLong();
    private long[] keys = new long[16];
    private Object[] values = new Object[16];
    private int size;

    /** The value mapped to {@code key}, or {@code null} when there is none (always for 0). */
    @SuppressWarnings("unchecked")
    public V get(long key) {
        int mask = keys.length - 1;
        for (int i = index(key, mask); ; i = (i + 1) & mask) {
            long k = keys[i];
            if (k == key) return (V) values[i];
            if (k == 0) return null;
        }
    }

    /**
     * Maps {@code key} to {@code value}, replacing what it was mapped to; grows the table when it is
     * half full (the only allocation).
     *
     * @throws IllegalArgumentException for key 0, which marks a free slot
     */
    public void put(long key, V value) {
        if (key == 0) throw new IllegalArgumentException("key 0 is reserved");
        if ((size + 1) * 2 > keys.length) grow();
        int mask = keys.length - 1;
        for (int i = index(key, mask); ; i = (i + 1) & mask) {
            if (keys[i] == key) {
                values[i] = value;
                return;
            }
            if (keys[i] == 0) {
                keys[i] = key;
                values[i] = value;
                size++;
                return;
            }
        }
    }

    /**
     * Removes {@code key}, closing the gap by shifting back the entries of the probe run behind it
     * that may move into it (no re-insertion, no tombstones).
     *
     * @return the value {@code key} was mapped to, or {@code null}
     */
    @SuppressWarnings("unchecked")
    public V remove(long key) {
        if (key == 0) return null; // never a key: the scan below would stop at the first empty slot as if it held it
        int mask = keys.length - 1;
        int i = index(key, mask);
        while (keys[i] != key) {
            if (keys[i] == 0) return null;
            i = (i + 1) & mask;
        }
        V old = (V) values[i];
        int hole = i;
        for (int j = (i + 1) & mask; keys[j] != 0; j = (j + 1) & mask) {
            // The entry at j may fill the hole when the hole lies between its home slot and j (cyclically).
            if (((j - index(keys[j], mask)) & mask) >= ((j - hole) & mask)) {
                keys[hole] = keys[j];
                values[hole] = values[j];
                hole = j;
            }
        }
        keys[hole] = 0;
        values[hole] = null;
        size--;
        return old;
    }

    /** How many keys are mapped. */
    public int size() {
        return size;
    }

    /**
     * A snapshot of the keys in {@code into}, or in a larger array when it is too small, for
     * iteration that may remove without allocating each time: the first {@link #size()} entries,
     * counted before the iteration, are the keys.
     */
    public long[] keys(long[] into) {
        long[] out = into.length >= size ? into : new long[Math.max(size, 2 * into.length)];
        int n = 0;
        for (long k : keys) if (k != 0) out[n++] = k;
        return out;
    }

    /** A snapshot of the keys, for iteration that may remove. */
    public long[] keys() {
        return keys(new long[size]);
    }

    @SuppressWarnings("unchecked")
    private void grow() {
        long[] oldKeys = keys;
        Object[] oldValues = values;
        keys = new long[oldKeys.length * 2];
        values = new Object[oldValues.length * 2];
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) if (oldKeys[i] != 0) put(oldKeys[i], (V) oldValues[i]);
    }

    /** How many slots a lookup of {@code key} probes: for tests of the hash's spread. */
    int probes(long key) {
        int mask = keys.length - 1;
        int n = 1;
        for (int i = index(key, mask); keys[i] != key && keys[i] != 0; i = (i + 1) & mask) n++;
        return n;
    }

    /**
     * The home slot of {@code key}: a mix of it with this map's random seed (murmur3's finalizer),
     * so that a peer that picks the keys (connection ids are written by senders) cannot pick ones
     * that share a slot and make every lookup and removal walk a long run.
     */
    private int index(long key, int mask) {
        long h = key ^ seed;
        h = (h ^ (h >>> 33)) * 0xFF51AFD7ED558CCDL;
        h = (h ^ (h >>> 33)) * 0xC4CEB9FE1A85EC53L;
        return (int) (h ^ (h >>> 33)) & mask;
    }
}
