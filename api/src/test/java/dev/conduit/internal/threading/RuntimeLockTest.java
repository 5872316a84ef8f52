package dev.conduit.internal.threading;

import dev.conduit.testing.InterruptRefusingThread;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cycle check of {@link RuntimeLock}: a real cycle of waits is broken, one that the walk
 * stitched together from states that never existed at once is not reported. (Thread-level; the
 * workers' case is {@code EndpointThreadingTest#handlersOfTwoLockedMultiWorkersSendingOnEachOthersEndpointsDoNotDeadlock}.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RuntimeLockTest {

    /**
     * Two threads each holding one lock and waiting for the other's: the one with the higher id
     * gives up, and only it. Repeated: the other used to give up too, now and then, when it looked
     * up the threads of the cycle after the higher one had given up and left (seen once in CI).
     */
    @org.junit.jupiter.api.RepeatedTest(200)
    void aCycleOfTwoIsBrokenByTheThreadWithTheHigherId() throws Exception {
        RuntimeLock a = new RuntimeLock();
        RuntimeLock b = new RuntimeLock();
        CountDownLatch bothHold = new CountDownLatch(2);
        AtomicReference<Throwable> first = new AtomicReference<>();
        AtomicReference<Throwable> second = new AtomicReference<>();
        Thread t1 = Thread.ofPlatform().unstarted(() -> holdThenTake(a, b, bothHold, first));
        Thread t2 = Thread.ofPlatform().unstarted(() -> holdThenTake(b, a, bothHold, second));
        t1.start();
        t2.start();
        t1.join();
        t2.join();

        Thread higher = t1.threadId() > t2.threadId() ? t1 : t2;
        Throwable refused = higher == t1 ? first.get() : second.get();
        Throwable other = higher == t1 ? second.get() : first.get();
        assertThat(refused).isInstanceOf(IllegalStateException.class).hasMessageContaining("deadlock between MULTI workers");
        assertThat(other).as("the other thread got both locks").isNull();
    }

    private static void holdThenTake(RuntimeLock held, RuntimeLock wanted, CountDownLatch bothHold, AtomicReference<Throwable> outcome) {
        held.enter();
        try {
            bothHold.countDown();
            bothHold.await();
            wanted.enter();
            wanted.exit();
        } catch (IllegalStateException | InterruptedException e) {
            outcome.set(e);
        } finally {
            held.exit();
        }
    }

    /**
     * The walk reads a lock's holder, then that holder's wait, at two moments. Here, between the two
     * (a pause in the lock's hook before the lookup stands for a preemption), the
     * holder lets the lock go and waits for one this thread holds: a "cycle" that never existed. It
     * used to be reported, and the call refused with the lock free (found by review).
     */
    @Test
    void aCycleTheWalkStitchedFromStatesThatNeverCoexistedIsNotReported() throws Exception {
        RuntimeLock a = withLookHook(holder -> {
            if (holder instanceof PausingThread p) p.lookedUp();
        });
        RuntimeLock b = new RuntimeLock();
        CountDownLatch lowHoldsA = new CountDownLatch(1);
        PausingThread[] low = new PausingThread[1];
        low[0] = new PausingThread(() -> {
            a.enter();
            lowHoldsA.countDown();
            try {
                low[0].paused.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            a.exit(); // holds nothing now, and waits for b, which the other thread holds
            b.enter();
            b.exit();
        });
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        low[0].start();
        lowHoldsA.await();
        Thread high = Thread.ofPlatform().start(() -> {
            b.enter();
            try {
                low[0].pauseFor = Thread.currentThread();
                a.enter();
                a.exit();
            } catch (IllegalStateException e) {
                outcome.set(e);
            } finally {
                b.exit();
            }
        });
        high.join();
        low[0].join();

        assertThat(high.threadId()).as("the thread that would be the one to give up").isGreaterThan(low[0].threadId());
        assertThat(outcome.get()).as("no deadlock existed").isNull();
    }

    /** A thread whose wait, looked up from {@link #pauseFor}, pauses that thread once. */
    private static final class PausingThread extends Thread {
        volatile Thread pauseFor;
        final CountDownLatch paused = new CountDownLatch(1);

        PausingThread(Runnable r) {
            super(r, "pausing");
        }

        void lookedUp() {
            if (Thread.currentThread() == pauseFor) {
                pauseFor = null;
                paused.countDown();
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** A lock with the runtime's pauses whose deadlock walk calls {@code hook} with each holder it looks up. */
    private static RuntimeLock withLookHook(java.util.function.Consumer<Thread> hook) {
        return new RuntimeLock(TimeUnit.MILLISECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(50), hook);
    }

    /**
     * A thread that takes the lock again and again (one that busy-polls {@code progress()}) queues
     * behind a thread already waiting for it: the lock used to let it in first whenever it was
     * free, and a waiter, woken by each release, found it taken again (a MULTI worker's sending
     * thread waited tens of milliseconds a send behind a progress loop).
     */
    @org.junit.jupiter.api.RepeatedTest(20)
    void aThreadTakingTheLockAgainQueuesBehindOneAlreadyWaiting() throws Exception {
        RuntimeLock lock = new RuntimeLock();
        java.util.List<String> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        lock.enter();
        Thread waiter = enterAndRecord(lock, order, "waiter");
        while (waiter.getState() != Thread.State.WAITING && waiter.getState() != Thread.State.TIMED_WAITING) Thread.onSpinWait();
        lock.exit();
        lock.enter();
        order.add("again");
        lock.exit();
        waiter.join();
        assertThat(order).containsExactly("waiter", "again");
    }

    /**
     * A queued thread keeps its place while it looks for a deadlock between its pauses. Here the
     * first waiter's look is held (in the lock's hook, before it looks up the holder's wait) while
     * the holder lets go: the lock is the first waiter's, not the second's, which
     * queued after it. The fair {@code ReentrantLock}'s timed {@code tryLock} took the waiter out
     * of the queue at each pause, so the second waiter, still queued, got the lock first.
     */
    @org.junit.jupiter.api.RepeatedTest(5)
    void aWaiterKeepsItsPlaceInTheQueueWhileItLooksForADeadlock() throws Exception {
        RuntimeLock lock = withLookHook(holder -> {
            if (holder instanceof LookHoldingThread h) h.lookedUp();
        });
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        LookHoldingThread holder = new LookHoldingThread(() -> {
            lock.enter();
            holding.countDown();
            awaitQuietly(letGo);
            lock.exit();
        });
        holder.start();
        assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();
        java.util.List<String> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        Thread first = enterAndRecord(lock, order, "first");
        waitUntilParked(first);
        Thread second = enterAndRecord(lock, order, "second");
        waitUntilParked(second);
        holder.holdLooksOf = first; // the first waiter's next look stops in the lock's hook
        assertThat(holder.looking.await(60, TimeUnit.SECONDS)).as("the first waiter looks for a deadlock").isTrue();
        letGo.countDown();
        holder.join(); // the lock is free, the first waiter still in its look
        holder.lookGoesOn.countDown();
        first.join();
        second.join();
        assertThat(order).containsExactly("first", "second");
    }

    /**
     * A thread that comes back to sleep under the lock (an await between slices, or the next await
     * of a loop) lets a thread counted in {@code enter()}, spinning for the lock, have it first: that
     * one needs it at once. Here the caller is held in the holder's wake until the sleeper has let
     * go. The sleeper's {@code enterToSleep} took the free lock at once, ahead of the spinner.
     */
    @org.junit.jupiter.api.RepeatedTest(5)
    void aThreadComingBackToSleepLetsAThreadSpinningForTheLockHaveItFirst() throws Exception {
        RuntimeLock lock = new RuntimeLock();
        CountDownLatch counted = new CountDownLatch(1);
        CountDownLatch goOn = new CountDownLatch(1);
        lock.wakeHolderWith(() -> {
            counted.countDown();
            awaitQuietly(goOn);
        });
        java.util.List<String> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        lock.enterToSleep();
        Thread caller = enterAndRecord(lock, order, "caller");
        assertThat(counted.await(60, TimeUnit.SECONDS)).as("the caller waits for the lock").isTrue();
        lock.exit(); // between two slices
        goOn.countDown(); // the caller goes on to spin for the lock
        lock.enterToSleep();
        order.add("sleeper");
        lock.exit();
        caller.join();
        assertThat(order).containsExactly("caller", "sleeper");
    }

    /**
     * An interrupt neither ends a wait for the lock nor costs the waiter its place, and the waiter
     * has it when it gets the lock: interrupted before it came, and again while queued, the first
     * waiter still gets the lock before the second. Waiters here pause an hour between looks, so
     * each gets the lock only by an unlock's wake.
     */
    @Test
    void anInterruptedWaiterWaitsOnInItsPlaceAndKeepsItsInterrupt() throws Exception {
        long hour = TimeUnit.HOURS.toNanos(1);
        RuntimeLock lock = new RuntimeLock(hour, hour, holder -> { });
        java.util.List<String> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        java.util.concurrent.atomic.AtomicBoolean keptInterrupt = new java.util.concurrent.atomic.AtomicBoolean();
        lock.enter();
        Thread first = Thread.ofPlatform().start(() -> {
            Thread.currentThread().interrupt();
            lock.enter();
            keptInterrupt.set(Thread.interrupted());
            order.add("first");
            lock.exit();
        });
        waitUntilParked(first);
        Thread second = enterAndRecord(lock, order, "second");
        waitUntilParked(second);
        first.interrupt();
        waitUntilParked(first);
        lock.exit();
        first.join();
        second.join();
        assertThat(order).containsExactly("first", "second");
        assertThat(keptInterrupt).as("the waiter's interrupt status when it got the lock").isTrue();
    }

    /**
     * A waiter interrupted while it waits sets its interrupt again once it has the lock; should that
     * throw (here a {@code Thread} subclass whose {@code interrupt()} refuses its own thread), the
     * exception leaves it without the lock. It kept the lock: its caller, told by the exception that
     * it had not entered, never let go, and nobody else got the lock.
     */
    @Test
    void aWaiterWhoseInterruptCannotBeRestoredDoesNotKeepTheLock() throws Exception {
        long hour = TimeUnit.HOURS.toNanos(1);
        RuntimeLock lock = new RuntimeLock(hour, hour, holder -> { });
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        lock.enter();
        Thread waiter = new InterruptRefusingThread(() -> {
            try {
                lock.enterToSleep();
            } catch (RuntimeException e) {
                outcome.set(e);
            }
        });
        waiter.start();
        waitUntilParked(waiter);
        waiter.interrupt();
        lock.exit();
        waiter.join();

        assertThat(outcome.get()).isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("no interrupt of itself");
        assertThat(lock.tryEnter()).as("the lock is free once the waiter's enterToSleep threw").isTrue();
        lock.exit();
    }

    /**
     * A waiter that gives up (the deadlock's exception) takes its own place out of the queue, not
     * one that its thread's {@code equals} matches. Here the thread that gives up equals any thread
     * of its name (equals and hashCode by name), and a thread of that name is queued ahead of it for
     * the same lock. The queue held threads and took out the first that {@code equals} matched: the
     * thread ahead lost its place and never got the lock, and the place of the one that had given
     * up stayed first, so nobody did.
     */
    @Test
    void aWaiterThatGivesUpLeavesItsOwnPlaceWhateverItsThreadsEquals() throws Exception {
        RuntimeLock first = new RuntimeLock();
        RuntimeLock second = new RuntimeLock();
        CountDownLatch lowHolds = new CountDownLatch(1);
        CountDownLatch lowGoesOn = new CountDownLatch(1);
        CountDownLatch quitterHolds = new CountDownLatch(1);
        CountDownLatch quitterGoesOn = new CountDownLatch(1);
        AtomicReference<Throwable> quitterOutcome = new AtomicReference<>();
        Thread low = Thread.ofPlatform().name("low").unstarted(() -> {
            first.enter();
            try {
                lowHolds.countDown();
                awaitQuietly(lowGoesOn);
                second.enter(); // the cycle: the quitter holds it and waits for the first
                second.exit();
            } finally {
                first.exit();
            }
        });
        // Made after low, so of the two in the cycle it has the higher id: it gives up.
        Thread quitter = new EqualByName("pool-worker", () -> {
            second.enter();
            try {
                quitterHolds.countDown();
                awaitQuietly(quitterGoesOn);
                first.enter();
                first.exit();
                quitterOutcome.set(new AssertionError("got the first lock"));
            } catch (IllegalStateException deadlock) {
                quitterOutcome.set(deadlock);
            } finally {
                second.exit();
            }
        });
        Thread ahead = Thread.ofPlatform().name("pool-worker").unstarted(() -> {
            first.enter();
            first.exit();
        });
        low.start();
        assertThat(lowHolds.await(60, TimeUnit.SECONDS)).isTrue();
        quitter.start();
        assertThat(quitterHolds.await(60, TimeUnit.SECONDS)).isTrue();
        ahead.start();
        waitUntilParked(ahead); // queued for the first lock
        quitterGoesOn.countDown(); // queues behind it
        lowGoesOn.countDown(); // and the cycle closes
        quitter.join();
        assertThat(quitterOutcome.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("deadlock");
        low.join();
        ahead.join(TimeUnit.SECONDS.toMillis(30)); // a guard: it gets the lock as soon as low lets go
        assertThat(ahead.isAlive()).as("the thread queued ahead of the one that gave up got the lock").isFalse();
        assertThat(first.tryEnter()).as("the first lock is free").isTrue();
        first.exit();
    }

    /**
     * The deadlock walk looks a holder's wait up by thread id, not by the thread's {@code equals}.
     * Here the holder of the lock this thread waits for is not waiting at all, but it equals, by
     * name, a thread that waits for a lock this thread holds: looked up by {@code Thread}, that
     * thread's wait stood for the holder's, the walk closed a cycle that does not exist, and this
     * thread, the higher id of the two, gave up with a deadlock.
     */
    @Test
    void aHoldersWaitIsLookedUpByIdNotByItsThreadsEquals() throws Exception {
        CountDownLatch holderHolds = new CountDownLatch(1);
        CountDownLatch holderLetsGo = new CountDownLatch(1);
        CountDownLatch selfHolds = new CountDownLatch(1);
        CountDownLatch selfGoesOn = new CountDownLatch(1);
        CountDownLatch looksAtHolder = new CountDownLatch(4);
        Thread[] holder = new Thread[1];
        RuntimeLock wanted = withLookHook(h -> {
            if (h == holder[0]) looksAtHolder.countDown();
        });
        RuntimeLock held = new RuntimeLock();
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        holder[0] = new EqualByName("twin", () -> {
            wanted.enter();
            holderHolds.countDown();
            awaitQuietly(holderLetsGo);
            wanted.exit();
        });
        Thread twin = new EqualByName("twin", () -> {
            held.enter();
            held.exit();
        });
        Thread self = Thread.ofPlatform().unstarted(() -> { // made after its twin: the higher id
            held.enter();
            try {
                selfHolds.countDown();
                awaitQuietly(selfGoesOn);
                wanted.enter();
                wanted.exit();
            } catch (IllegalStateException e) {
                outcome.set(e);
            } finally {
                held.exit();
            }
        });
        assertThat(self.threadId()).isGreaterThan(twin.threadId());
        holder[0].start();
        assertThat(holderHolds.await(60, TimeUnit.SECONDS)).isTrue();
        self.start();
        assertThat(selfHolds.await(60, TimeUnit.SECONDS)).isTrue();
        twin.start();
        waitUntilParked(twin); // waits for the lock self holds
        selfGoesOn.countDown(); // self waits for the holder's lock and looks for a cycle
        while (looksAtHolder.getCount() > 0 && self.isAlive()) Thread.sleep(1);
        holderLetsGo.countDown();
        self.join();
        twin.join();
        holder[0].join();
        assertThat(outcome.get()).as("no deadlock existed").isNull();
    }

    /** A thread equal to any thread of its name, as a subclass may make it. */
    private static final class EqualByName extends Thread {
        EqualByName(String name, Runnable r) {
            super(r, name);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Thread t && t.getName().equals(getName());
        }

        @Override
        public int hashCode() {
            return getName().hashCode();
        }
    }

    /** A thread that enters {@code lock}, adds {@code name} to {@code order} and leaves: who got the lock when. */
    private static Thread enterAndRecord(RuntimeLock lock, java.util.List<String> order, String name) {
        return Thread.ofPlatform().start(() -> {
            lock.enter();
            order.add(name);
            lock.exit();
        });
    }

    /** Waits until {@code t} is parked: a thread waiting for the runtime lock parks with a timeout. */
    private static void waitUntilParked(Thread t) {
        while (t.getState() != Thread.State.TIMED_WAITING) {
            assertThat(t.isAlive()).as("%s waits for the lock", t).isTrue();
            Thread.onSpinWait();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) throw new AssertionError("latch not released");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** A thread whose wait, looked up from {@link #holdLooksOf}, stops that thread once until {@link #lookGoesOn}. */
    private static final class LookHoldingThread extends Thread {
        volatile Thread holdLooksOf;
        final CountDownLatch looking = new CountDownLatch(1);
        final CountDownLatch lookGoesOn = new CountDownLatch(1);

        LookHoldingThread(Runnable r) {
            super(r, "holder");
        }

        void lookedUp() {
            if (Thread.currentThread() == holdLooksOf) {
                holdLooksOf = null;
                looking.countDown();
                awaitQuietly(lookGoesOn);
            }
        }
    }

    /**
     * A thread that cannot take the lock at once runs the holder's wake before it waits, so that
     * a holder asleep under the lock (a worker's await) lets go; one that takes it at once does not.
     */
    @Test
    void aThreadThatMustWaitRunsTheHoldersWakeFirst() throws Exception {
        RuntimeLock lock = new RuntimeLock();
        java.util.concurrent.atomic.AtomicInteger wakes = new java.util.concurrent.atomic.AtomicInteger();
        CountDownLatch woken = new CountDownLatch(1);
        lock.wakeHolderWith(() -> {
            wakes.incrementAndGet();
            woken.countDown();
        });
        lock.enter();
        lock.exit();
        assertThat(wakes).as("uncontended").hasValue(0);
        lock.enter();
        Thread waiter = Thread.ofPlatform().start(() -> {
            lock.enter();
            lock.exit();
        });
        assertThat(woken.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(lock.contended()).as("the waiter counts itself before it wakes the holder").isTrue();
        lock.exit();
        waiter.join();
        assertThat(wakes).hasValue(1);
        assertThat(lock.contended()).isFalse();
    }
}
