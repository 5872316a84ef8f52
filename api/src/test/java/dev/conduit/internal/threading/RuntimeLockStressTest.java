package dev.conduit.internal.threading;

import dev.conduit.testing.ThreadStacks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RuntimeLock} under threads that use it every way the runtime does at once: {@code enter}
 * (its uncontended path, its spin, its queue; re-entered), {@code enterToSleep} and a sleep under
 * the lock that a waiter's wake ends, an {@code await}'s let-go and take-again between slices,
 * {@code tryEnter} (the closer's). Half the threads only call (enter, tryEnter), so that threads
 * race for a free lock by the spin and the barging try. A count kept in a plain field under the
 * lock must come out exact, and no thread may find another inside: that is the mutual exclusion
 * (a take of the lock by a read and a write instead of its CAS fails it). Every thread
 * must keep finishing operations: a guard counted from each thread's last one fails the test with
 * the threads' stacks. In the first test waiters pause an hour between their looks for a deadlock,
 * so a lost wake-up (a waiter parked with the lock free and nobody coming) is a hang the guard
 * sees, not a delay of up to 50 ms (an unlock that wakes the first waiter before it clears the
 * owner fails it). The second nests two locks in either order, with the runtime's
 * pauses, so that real cycles form and are broken: the thread that gives up keeps its first lock
 * and leaves the second's queue, and both locks go on to their next waiters. No duration is
 * asserted; the guard is generous for a loaded CI machine of 2 cores.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class RuntimeLockStressTest {

    private static final int THREADS = 4;
    private static final long RUN_NANOS = TimeUnit.MILLISECONDS.toNanos(1500);
    /** A thread that has finished no operation for this long since its last is taken for hung. */
    private static final long HANG_GUARD_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** State guarded by one lock: plain fields but for {@link #inside}, which a second holder would find set. */
    private static final class Guarded {
        final RuntimeLock lock;
        /** Who is in a critical section: volatile, so that a second holder's look at it is a real one. */
        volatile Thread inside;
        long count;
        /** The thread asleep under the lock, for the wake a waiter runs (as RuntimeWorker.wakeSleeperUnderLock). */
        volatile Thread sleeper;
        final AtomicLong overlaps = new AtomicLong();
        final AtomicLong entries = new AtomicLong();

        Guarded(RuntimeLock lock) {
            this.lock = lock;
            lock.wakeHolderWith(() -> {
                Thread s = sleeper;
                if (s != null) LockSupport.unpark(s);
            });
        }

        /** A critical section: a read, a pause, and a write of {@link #count}, lost if another thread got in. */
        void critical(SplittableRandom rnd) {
            Thread me = Thread.currentThread();
            if (inside != null) overlaps.incrementAndGet();
            inside = me;
            long c = count;
            for (int i = rnd.nextInt(16); i > 0; i--) Thread.onSpinWait();
            count = c + 1;
            if (inside != me) overlaps.incrementAndGet();
            inside = null;
            entries.incrementAndGet();
        }

        /** Sleeps holding the lock, as an await does under it, unless a waiter is counted; a waiter's wake ends it. */
        void sleepUnderLock(SplittableRandom rnd) {
            sleeper = Thread.currentThread();
            try {
                if (!lock.contended()) LockSupport.parkNanos(this, TimeUnit.MICROSECONDS.toNanos(1 + rnd.nextInt(50)));
            } finally {
                sleeper = null;
            }
        }
    }

    /**
     * Four threads on one lock through every entry: the count comes out exact, nobody finds another
     * inside, and every thread keeps getting the lock.
     */
    @Test
    void threadsEnteringEveryWayAtOnceAreExcludedAndAllGetTheLock() throws Exception {
        // Waiters that pause an hour between looks: one that no unlock wakes waits for good, and the guard sees it.
        long hour = TimeUnit.HOURS.toNanos(1);
        Guarded g = new Guarded(new RuntimeLock(hour, hour, holder -> { }));
        run(THREADS, (rnd, index) -> oneOperation(g, rnd, index % 2 == 0));
        assertThat(g.overlaps).as("critical sections that overlapped").hasValue(0);
        assertThat(g.count).as("the count kept under the lock").isEqualTo(g.entries.get());
        assertFree(g);
        System.out.println("threadsEnteringEveryWayAtOnce: " + g.entries.get() + " critical sections");
    }

    /**
     * Four threads nesting two locks in either order: cycles form, the cycle check breaks them
     * (the thread that gives up still holds its first lock, and leaves the second's queue), and
     * every thread keeps getting both locks.
     */
    @Test
    void threadsNestingTwoLocksInEitherOrderAreExcludedAndAllGetTheLocks() throws Exception {
        Guarded a = new Guarded(new RuntimeLock());
        Guarded b = new Guarded(new RuntimeLock());
        AtomicLong gaveUp = new AtomicLong();
        run(THREADS, (rnd, index) -> {
            Guarded first = rnd.nextBoolean() ? a : b;
            Guarded second = first == a ? b : a;
            if (rnd.nextInt(4) != 0) {
                oneOperation(first, rnd, index % 2 == 0);
                return;
            }
            first.lock.enter();
            try {
                first.critical(rnd);
                boolean toSleep = rnd.nextBoolean();
                try {
                    if (toSleep) second.lock.enterToSleep();
                    else second.lock.enter();
                } catch (IllegalStateException deadlock) {
                    assertThat(deadlock).hasMessageContaining("deadlock");
                    gaveUp.incrementAndGet();
                    first.critical(rnd); // still held: giving up the second lock let go of nothing
                    return;
                }
                try {
                    second.critical(rnd);
                } finally {
                    second.lock.exit();
                }
                first.critical(rnd);
            } finally {
                first.lock.exit();
            }
        });
        for (Guarded g : List.of(a, b)) {
            assertThat(g.overlaps).as("critical sections that overlapped").hasValue(0);
            assertThat(g.count).as("the count kept under the lock").isEqualTo(g.entries.get());
            assertFree(g);
        }
        System.out.println("threadsNestingTwoLocksInEitherOrder: " + gaveUp.get() + " cycles broken, "
                + (a.entries.get() + b.entries.get()) + " critical sections");
    }

    /**
     * The operations the runtime makes on its lock, one picked at random: a caller's alone (a call,
     * the closer's try, re-entered calls: the threads that race for a free lock by its spin and
     * its barging try) or an awaiting thread's too.
     */
    private static void oneOperation(Guarded g, SplittableRandom rnd, boolean callerOnly) {
        RuntimeLock lock = g.lock;
        int op = rnd.nextInt(8);
        if (callerOnly && (op == 3 || op == 4 || op == 5)) op = rnd.nextInt(2) == 0 ? 0 : 6;
        switch (op) {
            case 0, 1, 2 -> { // a call: enter, sometimes re-entered (a handler that sends)
                lock.enter();
                try {
                    g.critical(rnd);
                    if (rnd.nextInt(4) == 0) {
                        lock.enter();
                        try {
                            g.critical(rnd);
                        } finally {
                            lock.exit();
                        }
                        g.critical(rnd); // still held after the inner exit
                    }
                } finally {
                    lock.exit();
                }
            }
            case 3, 4 -> { // an await of one slice
                lock.enterToSleep();
                try {
                    g.critical(rnd);
                    g.sleepUnderLock(rnd);
                    g.critical(rnd);
                } finally {
                    lock.exit();
                }
            }
            case 5 -> { // an await of a few slices, letting go between them
                lock.enterToSleep();
                try {
                    for (int slice = 1 + rnd.nextInt(3); slice > 0; slice--) {
                        g.critical(rnd);
                        g.sleepUnderLock(rnd);
                        lock.exit();
                        lock.enterToSleep();
                    }
                    g.critical(rnd);
                } finally {
                    lock.exit();
                }
            }
            case 6 -> { // the closer's barging try
                if (lock.tryEnter()) {
                    try {
                        g.critical(rnd);
                    } finally {
                        lock.exit();
                    }
                }
            }
            default -> { // every entry re-entered by the holder, which must not wait
                lock.enter();
                try {
                    assertThat(lock.tryEnter()).as("tryEnter by the holder").isTrue();
                    try {
                        lock.enterToSleep();
                        try {
                            g.critical(rnd);
                        } finally {
                            lock.exit();
                        }
                    } finally {
                        lock.exit();
                    }
                    g.critical(rnd);
                } finally {
                    lock.exit();
                }
            }
        }
    }

    /** The lock is free and nobody waits for it once the threads are done. */
    private static void assertFree(Guarded g) {
        assertThat(g.lock.contended()).as("a thread still counted").isFalse();
        assertThat(g.lock.tryEnter()).as("the lock is free").isTrue();
        g.lock.exit();
    }

    private interface Operation {
        void run(SplittableRandom rnd, int index) throws Exception;
    }

    /**
     * Runs {@code op} in a loop on {@code threads} threads for {@link #RUN_NANOS}, then lets each
     * finish the one under way. Fails with every thread's stack when a thread finishes no operation
     * for {@link #HANG_GUARD_NANOS} from its last, or when an operation throws.
     */
    private static void run(int threads, Operation op) throws Exception {
        AtomicLongArray lastProgress = new AtomicLongArray(threads);
        AtomicLongArray operations = new AtomicLongArray(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long seed = System.nanoTime();
        class Stop {
            volatile boolean now;
        }
        Stop stopping = new Stop();
        List<Thread> workers = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < threads; i++) {
            int index = i;
            lastProgress.set(i, start);
            SplittableRandom rnd = new SplittableRandom(seed + i);
            workers.add(Thread.ofPlatform().name("stress-" + i).daemon(true).unstarted(() -> {
                try {
                    while (!stopping.now) {
                        op.run(rnd, index);
                        operations.incrementAndGet(index);
                        lastProgress.set(index, System.nanoTime());
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }));
        }
        workers.forEach(Thread::start);
        try {
            while (true) {
                Thread.sleep(10);
                long now = System.nanoTime();
                if (failure.get() != null) break;
                if (now - start >= RUN_NANOS) stopping.now = true;
                for (int i = 0; i < threads; i++) {
                    if (workers.get(i).isAlive() && now - lastProgress.get(i) > HANG_GUARD_NANOS) {
                        throw new AssertionError(workers.get(i).getName() + " finished no operation for "
                                + TimeUnit.NANOSECONDS.toSeconds(HANG_GUARD_NANOS) + " s (seed " + seed + ")\n" + ThreadStacks.of(workers));
                    }
                }
                if (stopping.now && workers.stream().noneMatch(Thread::isAlive)) break;
            }
        } finally {
            stopping.now = true;
        }
        for (Thread t : workers) t.join(TimeUnit.NANOSECONDS.toMillis(HANG_GUARD_NANOS));
        if (failure.get() != null) throw new AssertionError("an operation failed (seed " + seed + ")", failure.get());
        for (int i = 0; i < threads; i++) {
            assertThat(operations.get(i)).as("operations of stress-%d (seed %d)", i, seed).isPositive();
        }
    }
}
