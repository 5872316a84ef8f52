package dev.conduit;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A {@link KeptPayload} whose release is refused once, as the JDK refuses a shared arena's close.
 * Here, not in the worker's {@code KeptPayloadTest}: the refusal needs another thread's downcall
 * holding the copy, which this package fakes through the package-private constructor.
 */
class KeptPayloadReleaseRefusedTest {

    /**
     * A copy's release is the close of its shared arena ({@code Message.keepPayload()}), which the JDK
     * refuses while another thread's downcall holds a segment of it ({@link Arena#close()}: "if a
     * segment associated with this arena is being accessed concurrently, e.g. by a downcall method
     * handle"). The close then throws; the payload stays open and the worker's, and a later close
     * tries the release again. It used to return at the closed flag, with the payload forgotten by
     * the worker: the copy's native memory stayed allocated for the life of the JVM, and a view
     * taken before still read it.
     */
    @Test
    void aPayloadWhoseReleaseWasRefusedIsReleasedByTheNextClose() {
        Arena arena = Arena.ofShared();
        MemorySegment copy = arena.allocate(16, 64);
        AtomicInteger refusals = new AtomicInteger(1);
        AtomicInteger forgotten = new AtomicInteger();
        KeptPayload kept = new KeptPayload(copy.asReadOnly(), () -> {
            if (refusals.getAndDecrement() > 0) throw new IllegalStateException("Session is acquired by 1 clients"); // the JDK's
            arena.close();
        }, payload -> forgotten.incrementAndGet());

        try {
            assertThatThrownBy(kept::close).isInstanceOf(IllegalStateException.class).hasMessage("Session is acquired by 1 clients");
            assertThat(kept.segment().byteSize()).as("still open: its memory is held").isEqualTo(16);
            assertThat(forgotten).as("still the worker's, whose close tries again").hasValue(0);

            kept.close();
            assertThat(arena.scope().isAlive()).as("the copy's arena closed by the second close").isFalse();
            assertThat(forgotten).as("forgotten once given back").hasValue(1);
            assertThatThrownBy(kept::segment).isInstanceOf(IllegalStateException.class);
        } finally {
            if (arena.scope().isAlive()) arena.close();
        }
    }
}
