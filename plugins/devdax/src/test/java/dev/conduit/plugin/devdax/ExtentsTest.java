package dev.conduit.plugin.devdax;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ExtentsTest {

    @Test
    void firstFitByAddressSplitsAndMerges() {
        Extents extents = new Extents(10, 100);
        assertThat(extents.take(20)).isEqualTo(10);
        assertThat(extents.take(20)).isEqualTo(30);
        assertThat(extents.take(20)).isEqualTo(50);
        assertThat(extents.freeBytes()).isEqualTo(30);
        extents.give(10, 20);
        extents.give(50, 20);
        assertThat(extents.ranges()).isEqualTo(2);
        assertThat(extents.largest()).isEqualTo(50);
        assertThat(extents.take(30)).as("the first range is too short").isEqualTo(50);
        extents.give(30, 20);
        assertThat(extents.ranges()).isEqualTo(2);
        assertThat(extents.take(40)).isEqualTo(10);
        assertThat(extents.take(41)).isEqualTo(-1);
        assertThat(extents.freeBytes()).isEqualTo(20);
    }

    @Test
    void reservesRangesForReadoptedAllocations() {
        Extents extents = new Extents(0, 100);
        extents.reserve(40, 20);
        assertThat(extents.ranges()).isEqualTo(2);
        assertThat(extents.take(50)).isEqualTo(-1);
        assertThat(extents.take(40)).isEqualTo(0);
        assertThat(extents.take(40)).isEqualTo(60);
        assertThatThrownBy(() -> extents.reserve(0, 10)).isInstanceOf(IllegalArgumentException.class);
        extents.give(40, 20);
        assertThatThrownBy(() -> extents.give(45, 5)).isInstanceOf(IllegalArgumentException.class);
        assertThat(new Extents(5, 5).take(1)).isEqualTo(-1);
    }
}
