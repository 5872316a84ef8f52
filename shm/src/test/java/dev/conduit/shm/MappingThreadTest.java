package dev.conduit.shm;

import dev.conduit.spi.ChunkMapping;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The mapping thread when no thread can be started (the process's or its cgroup's limit of
 * threads): the test's thread factory throws then what Thread.start throws. Waits are bounded, never timed.
 */
class MappingThreadTest {

    private static final long HANG_GUARD_MILLIS = 30_000;

    /** The threads the test's factory made, oldest first. */
    private final List<Thread> made = new CopyOnWriteArrayList<>();
    /** While set, a thread made cannot start. */
    private volatile boolean noThread;
    private final List<ChunkMapping> unmapped = new CopyOnWriteArrayList<>();

    private MappingThread mappingThread() {
        return new MappingThread(unmapped::add, task -> {
            // From the factory: the pool starts its thread through its container (Thread.start's package-private twin), not
            // through an overridable start(); what that throws at the limit comes out of the pool's execute all the same.
            if (noThread) {
                throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits "
                        + "reached (injected by the test)");
            }
            Thread thread = new Thread(task, "conduit-test-mapper");
            thread.setDaemon(true);
            thread.setUncaughtExceptionHandler((t, e) -> { }); // the Error the test ends a thread with
            made.add(thread);
            return thread;
        });
    }

    /**
     * An endpoint's release hands its unmap over while the idle thread has ended and none can start:
     * the caller unmaps, and nothing is thrown (the JVM's bare error reached the release or
     * progress(), and the unmap waited for the next hand-over, or the worker's close).
     */
    @Test
    @Timeout(60)
    void anUnmapMadeElsewhereWhoseThreadCannotStartIsDoneByTheCaller() {
        MappingThread mapper = mappingThread();
        noThread = true;
        List<Thread> ranOn = new CopyOnWriteArrayList<>();

        Throwable thrown = catchThrowable(() -> mapper.unmapMadeElsewhere(() -> ranOn.add(Thread.currentThread())));

        assertThat(thrown).isNull();
        assertThat(ranOn).containsExactly(Thread.currentThread());
    }

    /**
     * A ring the thread mapped is handed back while no thread can start (the one that mapped it
     * ended on an Error of the JVM's own, and none could take its place): the caller unmaps it and
     * the ring is counted back, so the thread started later ends when idle. The count stayed up,
     * and the thread never ended again.
     */
    @Test
    @Timeout(120)
    void aRingWhoseUnmapFindsNoThreadIsUnmappedByTheCallerAndTheThreadStillEndsWhenIdle() throws InterruptedException {
        MappingThread mapper = mappingThread();
        ChunkMapping ring = new ChunkMapping() {
            @Override
            public MemorySegment segment() {
                return MemorySegment.NULL;
            }

            @Override
            public void close() {
            }
        };
        ChunkMapping mapped = mapper.map((payload, length) -> ring, new byte[0], 64, 0).join();
        // Threads stop starting inside the task, on the pool's thread, once this run() has returned: the pool's execute looks
        // at its thread count again after it queued the task, and a thread that had ended on the task by then had it start
        // another, which threw the injected error out of this run() into JUnit, which aborts the whole fork on an
        // OutOfMemoryError (seen when the shm module's tests ran together).
        AtomicReference<Thread> ended = new AtomicReference<>();
        CountDownLatch handedOver = new CountDownLatch(1);
        CountDownLatch ending = new CountDownLatch(1);
        mapper.run(() -> {
            try {
                if (!handedOver.await(HANG_GUARD_MILLIS, TimeUnit.MILLISECONDS)) return;
            } catch (InterruptedException e) {
                return;
            }
            noThread = true;
            ended.set(Thread.currentThread());
            ending.countDown();
            throw new StackOverflowError("injected by the test");
        });
        handedOver.countDown();
        assertThat(ending.await(HANG_GUARD_MILLIS, TimeUnit.MILLISECONDS)).isTrue();
        ended.get().join(HANG_GUARD_MILLIS);
        assertThat(ended.get().isAlive()).as("the thread that ended on the Error").isFalse();

        Throwable thrown = catchThrowable(() -> mapper.unmap(mapped));
        noThread = false;
        CountDownLatch ran = new CountDownLatch(1);
        mapper.run(ran::countDown);
        assertThat(ran.await(HANG_GUARD_MILLIS, TimeUnit.MILLISECONDS)).isTrue();
        Thread later = made.getLast();
        later.join(HANG_GUARD_MILLIS);

        assertThat(later.isAlive()).as("the thread started later, idle: it ends").isFalse();
        assertThat(unmapped).containsExactly(ring);
        assertThat(thrown).isNull();
    }
}
