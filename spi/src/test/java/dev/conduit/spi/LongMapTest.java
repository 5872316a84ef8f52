package dev.conduit.spi;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

class LongMapTest {

    @Test
    void keysIntoAReusedArrayAreTheKeysAndItGrowsOnlyWhenTooSmall() {
        LongMap<String> map = new LongMap<>();
        for (long k = 1; k <= 20; k++) map.put(k, "v" + k);
        long[] small = new long[4];
        long[] grown = map.keys(small);
        assertThat(grown).isNotSameAs(small).hasSizeGreaterThanOrEqualTo(20);
        assertThat(Arrays.stream(grown, 0, map.size()).sorted().toArray()).isEqualTo(java.util.stream.LongStream.rangeClosed(1, 20).toArray());

        for (long k = 1; k <= 10; k++) map.remove(k);
        long[] reused = map.keys(grown);
        assertThat(reused).as("large enough: reused").isSameAs(grown);
        assertThat(Arrays.stream(reused, 0, map.size()).sorted().toArray()).isEqualTo(java.util.stream.LongStream.rangeClosed(11, 20).toArray());
        long[] exact = new long[map.size()];
        assertThat(map.keys(exact)).as("exactly as long as the keys are many: reused").isSameAs(exact);
    }

    /** put, get and remove against a HashMap, with few keys so that probe runs wrap and removals shift entries back. */
    @Test
    void behavesAsAMapUnderRandomPutsAndRemovals() {
        java.util.SplittableRandom random = new java.util.SplittableRandom(42);
        LongMap<Long> map = new LongMap<>();
        java.util.Map<Long, Long> model = new java.util.HashMap<>();
        for (int op = 0; op < 200_000; op++) {
            long key = 1 + random.nextInt(64) * 0x1_0000_0001L; // non-zero
            switch (random.nextInt(3)) {
                case 0 -> {
                    map.put(key, (long) op);
                    model.put(key, (long) op);
                }
                case 1 -> assertThat(map.remove(key)).isEqualTo(model.remove(key));
                default -> assertThat(map.get(key)).isEqualTo(model.get(key));
            }
            assertThat(map.size()).isEqualTo(model.size());
        }
        for (long key : model.keySet()) assertThat(map.get(key)).isEqualTo(model.get(key));
    }

    /**
     * Connection ids are written by senders: 4,096 keys that all shared one slot under the fixed
     * multiplicative hash this map used to have (each a multiple of its inverse) spread like random
     * ones under its keyed hash, so a lookup probes a slot or two, not thousands.
     */
    @Test
    void keysCraftedAgainstAFixedHashDoNotShareASlot() {
        long inverse = 0x9E3779B97F4A7C15L;
        for (int i = 0; i < 6; i++) inverse *= 2 - 0x9E3779B97F4A7C15L * inverse; // Newton: the multiplier's inverse mod 2^64
        LongMap<Boolean> map = new LongMap<>();
        long[] keys = new long[4096];
        for (int j = 1; j <= keys.length; j++) {
            keys[j - 1] = (((long) j << 32) | j) * inverse;
            map.put(keys[j - 1], true);
        }
        long probes = 0;
        int longest = 0;
        for (long key : keys) {
            int p = map.probes(key);
            probes += p;
            longest = Math.max(longest, p);
        }
        assertThat((double) probes / keys.length).as("mean probes of a lookup").isLessThan(3);
        assertThat(longest).as("the longest lookup").isLessThan(64);
    }

    /** 0 is never a key: removing it changes nothing (it used to count one entry less). */
    @Test
    void removingTheReservedKeyChangesNothing() {
        LongMap<String> map = new LongMap<>();
        map.put(5, "five");
        assertThat(map.remove(0)).isNull();
        assertThat(map.size()).isEqualTo(1);
        assertThat(map.get(5)).isEqualTo("five");
    }
}
