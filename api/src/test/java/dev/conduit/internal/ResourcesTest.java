package dev.conduit.internal;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ResourcesTest {

    /**
     * A close that asks the users of what is open first seals the set: what registers after the
     * seal is refused (its maker closes it), so what the close asked is all it closes. Before, a
     * worker made between the close's start and its snapshot was closed unasked, under its user.
     */
    @Test
    void afterTheSealNothingMoreIsTrackedAndWhatWasIsStillClosed() {
        Resources resources = new Resources();
        List<String> closed = new ArrayList<>();
        resources.register(() -> closed.add("first"));
        resources.seal();

        assertThatThrownBy(() -> resources.register(() -> closed.add("late"))).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Conduit is closed");
        List<AutoCloseable> seen = new ArrayList<>();
        resources.forEachOpen(AutoCloseable.class, seen::add);
        assertThat(seen).hasSize(1);
        resources.closeAll("Conduit");
        assertThat(closed).containsExactly("first");
    }
}
