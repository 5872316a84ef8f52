package dev.conduit;

import dev.conduit.testing.HangGuard;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

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

    /**
     * Two closes at once, the worker's and the application's: the one that finds the other's
     * release under way waits for its outcome and, when the JDK refused it, tries the release
     * itself, so that a close that returns has given the payload back. Until 2026-12-07 it
     * returned at once, as if the payload were closed: when the other's release was then refused,
     * the worker's close reported the refusal and ended, the application's had returned, and the
     * copy's arena stayed open for the life of the JVM, closed by nobody.
     */
    @Test
    void aCloseOverlappingARefusedOneReleasesThePayloadItselfBeforeItReturns() throws InterruptedException {
        Arena arena = Arena.ofShared();
        MemorySegment copy = arena.allocate(16, 64);
        AtomicInteger releases = new AtomicInteger();
        AtomicInteger forgotten = new AtomicInteger();
        CountDownLatch firstReleasing = new CountDownLatch(1);
        CountDownLatch refuseFirst = new CountDownLatch(1);
        KeptPayload kept = new KeptPayload(copy.asReadOnly(), () -> {
            if (releases.incrementAndGet() == 1) {
                firstReleasing.countDown();
                HangGuard.until(() -> refuseFirst.getCount() == 0, "the test letting the first release be refused");
                throw new IllegalStateException("Session is acquired by 1 clients"); // the JDK's
            }
            arena.close();
        }, payload -> forgotten.incrementAndGet());
        AtomicReference<Throwable> workersClose = new AtomicReference<>();
        AtomicReference<Throwable> applicationsClose = new AtomicReference<>();
        Thread worker = Thread.ofPlatform().start(() -> closeNoting(kept, workersClose));

        try {
            HangGuard.until(() -> firstReleasing.getCount() == 0, "the worker's close releasing the payload");
            Thread application = Thread.ofPlatform().start(() -> closeNoting(kept, applicationsClose));
            HangGuard.until(() -> application.getState() == Thread.State.BLOCKED || application.getState() == Thread.State.TERMINATED,
                    "the application's close waiting for the worker's, or returning");
            refuseFirst.countDown();
            HangGuard.join(worker, "the worker's close");
            HangGuard.join(application, "the application's close");

            assertThat(workersClose.get()).as("the worker's close, refused").isInstanceOf(IllegalStateException.class);
            assertThat(applicationsClose.get()).as("the application's close").isNull();
            assertThat(arena.scope().isAlive()).as("the copy's arena closed by the application's close, which returned").isFalse();
            assertThat(forgotten).hasValue(1);
            assertThatThrownBy(kept::segment).isInstanceOf(IllegalStateException.class);
        } finally {
            refuseFirst.countDown();
            if (arena.scope().isAlive()) arena.close();
        }
    }

    private static void closeNoting(KeptPayload kept, AtomicReference<Throwable> thrown) {
        try {
            kept.close();
        } catch (RuntimeException | Error e) {
            thrown.set(e);
        }
    }
}
