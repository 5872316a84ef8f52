package dev.conduit.shm;

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
    }
}
