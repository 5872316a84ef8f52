package dev.conduit.plugin.devdax;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ExtentsTest {

    @Test
    void nextFitGoesOnAfterTheLastRangeTakenSplitsAndMerges() {
        Extents extents = new Extents(10, 100);
        assertThat(extents.take(20)).isEqualTo(10);
        assertThat(extents.take(20)).isEqualTo(30);
        assertThat(extents.take(20)).isEqualTo(50);
        assertThat(extents.freeBytes()).isEqualTo(30);
        extents.give(10, 20);
        assertThat(extents.ranges()).isEqualTo(2);
        assertThat(extents.take(20)).as("the range just freed waits; the search goes on after the last range taken").isEqualTo(70);
        assertThat(extents.take(20)).as("[90, 100) is too short: wrapped around").isEqualTo(10);
        extents.give(30, 20);
        extents.give(50, 20);
        assertThat(extents.ranges()).as("[30, 70) merged, and [90, 100)").isEqualTo(2);
        assertThat(extents.largest()).isEqualTo(40);
        assertThat(extents.take(41)).isEqualTo(-1);
        assertThat(extents.take(40)).isEqualTo(30);
        assertThat(extents.freeBytes()).isEqualTo(10);
    }

    /** First fit handed a freed range out again at once, to a new owner whose data a peer still mapping it then saw. */
    @Test
    void aFreedRangeIsTakenAgainOnlyAfterEveryOtherFreeRange() {
        Extents extents = new Extents(0, 40);
        assertThat(extents.take(10)).isZero();
        extents.give(0, 10);
        assertThat(extents.take(10)).as("from where the search stands inside the merged range, not from its start").isEqualTo(10);
        assertThat(extents.take(10)).isEqualTo(20);
        assertThat(extents.take(10)).isEqualTo(30);
        assertThat(extents.take(10)).as("the end reached: around to the freed range").isZero();
        assertThat(extents.take(10)).isEqualTo(-1);
    }

    @Test
    void theSearchCanStartWhereAPreviousOwnerStopped() {
        Extents extents = new Extents(0, 100);
        extents.startAt(60);
        assertThat(extents.take(30)).isEqualTo(60);
        assertThat(extents.next()).isEqualTo(90);
        assertThat(extents.take(30)).as("[90, 100) is too short").isZero();
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

    /**
     * A range that is only partly free is neither reserved nor given back: either would leave free
     * ranges that overlap, whose bytes the next searches hand out twice.
     */
    @Test
    void aRangeOnlyPartlyFreeIsNeitherReservedNorGivenBack() {
        Extents extents = new Extents(0, 100);
        extents.reserve(40, 20);
        assertThatThrownBy(() -> extents.reserve(30, 20)).as("runs past the end of [0, 40)")
                .isInstanceOf(IllegalArgumentException.class).hasMessage("range [30, 50) is not free");
        assertThatThrownBy(() -> extents.give(50, 20)).as("runs into [60, 100)")
                .isInstanceOf(IllegalArgumentException.class).hasMessage("range [50, 70) overlaps a free range");
        assertThat(extents.freeBytes()).isEqualTo(80);
        assertThat(extents.ranges()).isEqualTo(2);
    }

    /**
     * A give refused for running into the free range after it must leave the free range before it,
     * which it touches, as it was: the merge took that one out of the map before the overlap was
     * found, so the refusal dropped [0, 40) for good (never handed out again) while freeBytes still
     * counted it.
     */
    @Test
    void aGiveRefusedForOverlappingTheNextFreeRangeKeepsThePreviousOneItTouches() {
        Extents extents = new Extents(0, 100);
        extents.reserve(40, 20);
        assertThatThrownBy(() -> extents.give(40, 30)).as("[40, 70) runs into [60, 100)")
                .isInstanceOf(IllegalArgumentException.class).hasMessage("range [40, 70) overlaps a free range");
        assertThat(extents.ranges()).as("[0, 40) and [60, 100), as before").isEqualTo(2);
        assertThat(extents.largest()).isEqualTo(40);
        assertThat(extents.freeBytes()).isEqualTo(80);
        extents.startAt(0);
        assertThat(extents.take(40)).as("[0, 40) is still free").isZero();
    }
}
