package dev.conduit.shm;


/**
 * A map from non-zero {@code long} keys to values, by open addressing: lookups on the receive path
 * neither box keys nor allocate. Not thread-safe; used by one progress thread.
 */
final class LongMap<V> {

    private long[] keys = new long[16];
    private Object[] values = new Object[16];
    private int size;

    @SuppressWarnings("unchecked")
    V get(long key) {
        int mask = keys.length - 1;
        for (int i = index(key, mask); ; i = (i + 1) & mask) {
            long k = keys[i];
            if (k == key) return (V) values[i];
            if (k == 0) return null;
        }
    }

    void put(long key, V value) {
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

    @SuppressWarnings("unchecked")
    V remove(long key) {
        int mask = keys.length - 1;
        for (int i = index(key, mask); ; i = (i + 1) & mask) {
            if (keys[i] == 0) return null;
            if (keys[i] == key) {
                V old = (V) values[i];
                keys[i] = 0;
                values[i] = null;
                size--;
                // Re-insert the rest of the probe run, so later lookups do not stop at the hole.
                for (int j = (i + 1) & mask; keys[j] != 0; j = (j + 1) & mask) {
                    long k = keys[j];
                    Object v = values[j];
                    keys[j] = 0;
                    values[j] = null;
                    size--;
                    put(k, (V) v);
                }
                return old;
            }
        }
    }

    int size() {
        return size;
    }

    /**
     * A snapshot of the keys in {@code into}, or in a larger array when it is too small, for
     * iteration that may remove without allocating each time: the first {@link #size()} entries,
     * counted before the iteration, are the keys.
     */
    long[] keys(long[] into) {
        long[] out = into.length >= size ? into : new long[Math.max(size, 2 * into.length)];
        int n = 0;
        for (long k : keys) if (k != 0) out[n++] = k;
        return out;
    }

    /** A snapshot of the keys, for iteration that may remove. */
    long[] keys() {
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

    private static int index(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
