package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * {@code MULTI} over a plugin that declares only {@code SERIALIZED}: the runtime's own lock
 * serializes calls, as UCP's worker lock does for UCT, so the plugin never sees concurrency it did
 * not declare. Re-entrant, for handlers that send.
 *
 * <p>A handler runs under its worker's lock, so one that sends on another such worker holds two.
 * Two workers whose handlers send on each other's endpoints, each progressed by its own thread,
 * would wait for each other for good. A thread that does not get the lock at once looks, while it
 * waits (after 1 ms, then at doubling pauses up to 50 ms, as long as it finds none), for a cycle of
 * threads each waiting in this class for a lock the next one holds. The walk reads one thread's
 * state after another, not all at once, so a cycle counts only when the next look finds the very
 * same waits again (each wait is an object of its own: a thread that got a lock and waits anew is
 * another wait); of the threads in it, the one with the highest id then gives up with an
 * {@link IllegalStateException} naming the cause, which releases the others. Only cycles made of
 * waits in this class, of at most {@value #MAX_CHAIN} threads, are found: not one through an
 * endpoint's own lock or a confined plugin's thread.
 *
 * <p>Threads queued for the lock get it in the order they queued: a thread that calls in again and
 * again (one that busy-polls {@code progress()}) queues behind those already waiting, where a lock
 * that let it take the lock first whenever it was free kept a sending thread waiting for tens of
 * milliseconds. A queued thread keeps its place while it looks for a cycle between its pauses
 * ({@link OwnedLock}: the timed {@code tryLock} of a fair {@code ReentrantLock} used before left the
 * queue at every pause and queued again behind every thread that had come meanwhile). A thread that has to wait first runs the holder's wake ({@link #wakeHolderWith}):
 * the worker's holder may be asleep in {@code await}, inside its transport, for as long as a slice.
 * It then spins for the lock a while ({@link #spinForLock}) before it queues and parks, and a
 * holder that comes back while such a waiter is counted does not take the uncontended path but
 * spins beside it: a race the waiter usually wins, not a turn; the order of arrival holds from the
 * queue on. A thread that comes back to sleep under the lock ({@link #enterToSleep}) does not race:
 * it lets the spinners have the lock first. The uncontended path is a read of the count, the
 * owner and the queue, and one CAS.
 */
public final class RuntimeLock extends ThreadGuard {

    /**
     * What each thread blocked in {@link #enter()} waits for, by thread id: the graph a cycle is
     * looked for in. Not by {@code Thread}: a subclass's {@code equals} could make two threads one
     * (a deadlock reported that does not exist), and its {@code hashCode} would run inside the wait.
     */
    private static final ConcurrentHashMap<Long, Wait> WAITING = new ConcurrentHashMap<>();
    private static final long FIRST_LOOK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** How long a thread spins for the lock before it queues and parks. */
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    /** Whether waiters spin at all: not on a single processor, where the holder needs the one there is. */
    private static final boolean SPIN = Runtime.getRuntime().availableProcessors() > 1;
    private static final long LONGEST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** Longer chains than this are not followed: more workers than that in one cycle is not a case to serve. */
    private static final int MAX_CHAIN = 64;
    /** What a call that gave up before it took the lock did: the end of the deadlock's message. */
    private static final String DID_NOTHING = "this call did nothing";

    private final OwnedLock lock = new OwnedLock();
    /** A waiter's first look for a deadlock comes this long after it queued, and again this long after a look that found one. */
    private final long firstLookNanos;
    /** The longest pause between a waiter's looks, reached by doubling while they find no deadlock. */
    private final long longestPauseNanos;
    /**
     * Given each holder of this lock whose wait the deadlock walk is about to look up, between its
     * two reads; nothing but in tests, where it stands for a preemption there.
     */
    private final Consumer<Thread> beforeLookingUpWaitOf;
    /** Run by a thread that must wait for the lock: wakes a holder asleep under it. */
    private volatile Runnable wakeHolder = () -> { };
    /** Threads in {@link #enter()} that did not get the lock at once. */
    private final java.util.concurrent.atomic.AtomicInteger contenders = new java.util.concurrent.atomic.AtomicInteger();

    /** The runtime's: a waiter looks first after 1 ms, then at pauses doubling up to 50 ms. */
    public RuntimeLock() {
        this(FIRST_LOOK_NANOS, LONGEST_PAUSE_NANOS, holder -> { });
    }

    /**
     * A lock whose waiters pause as given between their looks for a deadlock, for tests: a waiter
     * parks for its pause and relies on an unlock to wake it sooner, so with pauses longer than a
     * test a wake-up that an unlock failed to make is a hang the test sees, not a delay of up to
     * {@link #LONGEST_PAUSE_NANOS} (RuntimeLockStressTest). {@code beforeLookingUpWaitOf} lets a
     * test hold a deadlock walk between reading this lock's holder and looking up what it waits for.
     */
    RuntimeLock(long firstLookNanos, long longestPauseNanos, Consumer<Thread> beforeLookingUpWaitOf) {
        if (firstLookNanos <= 0 || longestPauseNanos < firstLookNanos) {
            throw new IllegalArgumentException("pauses " + firstLookNanos + " and " + longestPauseNanos + " ns");
        }
        this.firstLookNanos = firstLookNanos;
        this.longestPauseNanos = longestPauseNanos;
        this.beforeLookingUpWaitOf = java.util.Objects.requireNonNull(beforeLookingUpWaitOf, "beforeLookingUpWaitOf");
    }

    /**
     * One thread's wait for one lock; identity tells a wait that went on from a new one. It is also
     * the thread's place in the lock's queue, found by identity: a thread's own {@code equals} (a
     * subclass may compare names) must not take another thread's place out.
     */
    private static final class Wait {
        final RuntimeLock lock;
        final Thread thread;
        final long threadId;

        Wait(RuntimeLock lock, Thread thread) {
            this.lock = lock;
            this.thread = thread;
            this.threadId = thread.threadId();
        }
    }

    /**
     * What a thread that must wait for the lock runs first, on its own thread: {@code wake} must
     * neither block nor throw, and wakes the holder if it sleeps holding the lock (a worker's
     * {@code await}).
     */
    public void wakeHolderWith(Runnable wake) {
        this.wakeHolder = java.util.Objects.requireNonNull(wake, "wake");
    }

    /**
     * Whether a thread waits for the lock, or is about to: a holder that would sleep holding it
     * hands it over instead. Read after the holder says it sleeps, as each waiter counts itself
     * before it looks whether to wake the holder: one of the two sees the other.
     */
    public boolean contended() {
        return contenders.get() > 0;
    }

    @Override
    public void enter() {
        if ((contenders.get() == 0 || lock.isHeldByCurrentThread()) && lock.tryLockBehindWaiters()) return;
        contenders.incrementAndGet();
        try {
            wakeHolder.run();
            if (spinForLock()) return;
            waitForLock(DID_NOTHING);
        } finally {
            contenders.decrementAndGet();
        }
    }

    /**
     * {@link #enter()} for a thread that comes to sleep holding the lock (a worker's {@code await},
     * also between its slices): it waits its turn without waking a holder asleep under the lock
     * and without counting as {@link #contended()}. It has nothing to do but sleep, which it does
     * once it holds the lock; counted as a caller that needs the lock at once, as a send does, two
     * threads awaiting one worker woke each other (their awaits returned {@code true} without work)
     * or handed the lock to each other without sleeping, spinning a core each for as long as they
     * awaited.
     */
    public void enterToSleep() {
        enterToSleep(DID_NOTHING);
    }

    /**
     * {@link #enterToSleep()} for a call that did something before it came back for the lock (an
     * {@code await} between two slices, which progressed the worker): {@code whatTheCallDid} ends
     * the deadlock's message in place of "this call did nothing", which was false there.
     */
    public void enterToSleep(String whatTheCallDid) {
        yieldToSpinners();
        if (lock.tryLockBehindWaiters()) return;
        waitForLock(whatTheCallDid);
    }

    /**
     * Waits, while the lock is free and nobody is queued, until no thread is counted in
     * {@link #enter()}: such a thread spins for the lock ({@link #spinForLock}) and needs it at once,
     * where one that comes to sleep does not. Taking the free lock first, as it used to, the thread
     * of an {@code await} loop beat the spinner every time (it calls {@code tryLock} an instant
     * after it let go, between two slices or two awaits), found it counted, did not sleep, let go,
     * and took the lock back again, until the spinner gave up its spin and queued: each call that
     * woke an awaiting thread paid for a spin and a park, and the awaiting thread spun beside it.
     * Bounded by the counted thread: it runs the holder's wake ({@link #wakeHolderWith}), which
     * must not block, then takes the lock or queues within its spin (at once on a single
     * processor, where it does not spin); this thread yields the processor now and then, for a
     * counted thread that is not running.
     */
    private void yieldToSpinners() {
        for (int i = 1; contenders.get() > 0 && lock.holder() == null && !lock.hasQueuedThreads(); i++) {
            if ((i & 63) == 0) Thread.yield();
            else Thread.onSpinWait();
        }
    }

    /**
     * Spins for the lock for up to {@link #SPIN_NANOS}, while nobody is queued for it: a holder
     * inside a short call (a {@code progress()} that found nothing, a send) lets go within that,
     * and a park and unpark would cost the hand-over tens of microseconds. The holder's next
     * {@link #enter()} sees this thread counted and spins too, rather than take the free lock by the
     * uncontended path; which of the spinners gets it is a race. No spin on a single processor,
     * where it would only keep the holder from running, nor once a thread is queued, which a
     * spinner may not pass.
     */
    private boolean spinForLock() {
        if (!SPIN) return false;
        long deadline = System.nanoTime() + SPIN_NANOS;
        for (int i = 1; ; i++) {
            Thread.onSpinWait();
            if (lock.hasQueuedThreads()) return false;
            if (lock.tryLock()) return true;
            if ((i & 15) == 0 && System.nanoTime() - deadline > 0) return false;
        }
    }

    /**
     * Queues this thread and waits its turn. It keeps its place for as long as it waits, also while
     * it looks for a deadlock between pauses: a timed {@code tryLock} of a fair
     * {@code ReentrantLock}, as before, left the queue at each pause and queued again at its end,
     * behind every thread that had come meanwhile. Whatever it throws, this thread does not hold the
     * lock, so a caller that catches it has nothing to let go: a restore of the interrupt that
     * throws once it has the lock (a {@code Thread} subclass's {@code interrupt()}) lets it go first,
     * where until 2026-12-07 it kept it, and its caller, told it had not entered, never let it go
     * (RuntimeLockTest#aWaiterWhoseInterruptCannotBeRestoredDoesNotKeepTheLock).
     */
    private void waitForLock(String whatTheCallDid) {
        Thread self = Thread.currentThread();
        Wait wait = new Wait(this, self);
        boolean interrupted = false;
        boolean got = false;
        WAITING.put(wait.threadId, wait);
        lock.enqueue(wait);
        try {
            long pause = firstLookNanos;
            long lookAt = System.nanoTime() + pause;
            List<Wait> suspected = null;
            while (true) {
                if (lock.tryLockFirstInQueue(wait)) {
                    got = true;
                    return;
                }
                long left = lookAt - System.nanoTime();
                if (left > 0) {
                    LockSupport.parkNanos(this, left);
                    if (Thread.interrupted()) interrupted = true; // lock() ignores interrupts too; kept for the caller
                    continue;
                }
                List<Wait> cycle = cycleThrough(self, wait);
                if (cycle != null && cycle.equals(suspected) && self.threadId() == highestThreadId(cycle)) {
                    throw new IllegalStateException("deadlock between MULTI workers: this thread (" + ThreadNames.of(self) + ") holds one's "
                            + "runtime lock and waits for another's, whose holder waits, through " + (cycle.size() - 1)
                            + " thread(s), for this one: their handlers send on each other's endpoints. Let a handler send only on its "
                            + "own worker's endpoints, or hand the message to the thread that progresses the other worker "
                            + "(docs/runtime.md, \"Thread modes\"); " + whatTheCallDid);
                }
                suspected = cycle;
                pause = cycle != null ? firstLookNanos : Math.min(pause * 2, longestPauseNanos);
                lookAt = System.nanoTime() + pause;
            }
        } finally {
            if (!got) lock.leaveQueue(wait);
            WAITING.remove(wait.threadId, wait);
            if (interrupted) restoreInterrupt(self, got);
        }
    }

    /** Sets {@code self}'s interrupt again; should that throw, lets go of the lock first if {@code held}. */
    private void restoreInterrupt(Thread self, boolean held) {
        try {
            self.interrupt();
        } catch (RuntimeException | Error e) {
            if (held) lock.unlock();
            throw e;
        }
    }

    /** The waits of a cycle that leads from this lock back to {@code self}, {@code self}'s first; or null. */
    private List<Wait> cycleThrough(Thread self, Wait own) {
        List<Wait> waits = null;
        RuntimeLock next = this;
        for (int i = 0; i < MAX_CHAIN; i++) {
            Thread holder = next.lock.holder();
            if (holder == null) return null;
            if (holder == self) {
                if (waits == null) waits = new ArrayList<>();
                waits.addFirst(own);
                return waits;
            }
            next.beforeLookingUpWaitOf.accept(holder);
            Wait theirs = WAITING.get(holder.threadId());
            if (theirs == null) return null;
            if (waits == null) waits = new ArrayList<>();
            waits.add(theirs);
            next = theirs.lock;
        }
        return null;
    }

    /**
     * The highest id of the threads whose waits are {@code cycle}, from the waits themselves: looked
     * up in {@link #WAITING}, it missed a thread that had just given up and left, and the thread it
     * had freed took itself for the highest and gave up too (seen once in CI).
     */
    private static long highestThreadId(List<Wait> cycle) {
        long highest = -1;
        for (Wait w : cycle) highest = Math.max(highest, w.threadId);
        return highest;
    }

    @Override
    public boolean tryEnter() {
        return lock.tryLock();
    }

    @Override
    public void exit() {
        lock.unlock();
    }

    @Override
    public ThreadPolicy policy() {
        return ThreadPolicy.RUNTIME_LOCK;
    }

    /**
     * A fair re-entrant lock that says who holds it, for the cycle check, and whose queued threads
     * keep their place for as long as they wait: a thread leaves the queue only when it has the lock
     * or gives up (a deadlock). {@link #tryLock()} takes a free lock whoever is queued, as
     * {@code ReentrantLock.tryLock()} does; {@link #tryLockBehindWaiters()} only when nobody is.
     */
    private static final class OwnedLock {
        private static final VarHandle OWNER;

        static {
            try {
                OWNER = MethodHandles.lookup().findVarHandle(OwnedLock.class, "owner", Thread.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        /** The thread that holds the lock, or null: set by a CAS from null, cleared by the holder's last unlock. */
        private volatile Thread owner;
        /** How many times the owner holds the lock; read and written by the owner only. */
        private int holds;
        /**
         * The waits of the threads waiting for the lock, in the order they queued; the first is the
         * next to take it. Waits, not threads: {@code Wait} keeps {@code Object}'s {@code equals}, so
         * {@code remove} takes out the very entry, where a thread's own {@code equals} could match
         * another thread's.
         */
        private final ConcurrentLinkedQueue<Wait> queue = new ConcurrentLinkedQueue<>();

        /**
         * Takes the lock if this thread holds it or nobody waits for it: a free lock taken even from a
         * fair queue ({@link #tryLock()}) would let a thread that calls in a loop take it again
         * before the waiter it was handed to had woken.
         */
        boolean tryLockBehindWaiters() {
            Thread me = Thread.currentThread();
            Thread o = owner;
            if (o == me) {
                holds++;
                return true;
            }
            return o == null && queue.isEmpty() && take(me);
        }

        /** Takes the lock if this thread holds it or it is free, whoever is queued. */
        boolean tryLock() {
            Thread me = Thread.currentThread();
            Thread o = owner;
            if (o == me) {
                holds++;
                return true;
            }
            return o == null && take(me);
        }

        private boolean take(Thread me) {
            if (!OWNER.compareAndSet(this, null, me)) return false;
            holds = 1;
            return true;
        }

        /** Queues {@code me}, whose thread does not hold the lock: from now on it is passed by nobody but {@link #tryLock()}. */
        void enqueue(Wait me) {
            queue.add(me);
        }

        /**
         * Takes the lock for {@code me}, queued, if it is first in the queue and the lock is free; it
         * then leaves the queue. The holder's last unlock clears the owner before it looks at the
         * queue, and {@code me} queued before it looks at the owner: one of the two sees the other,
         * so either this finds the lock free, or the unlock wakes {@code me}.
         */
        boolean tryLockFirstInQueue(Wait me) {
            if (queue.peek() != me || owner != null || !take(me.thread)) return false;
            queue.poll(); // me: only a thread itself takes its entry out
            return true;
        }

        /** Takes {@code me}, which gave up, out of the queue, and wakes the next one should the lock be free. */
        void leaveQueue(Wait me) {
            queue.remove(me);
            if (owner == null) wakeFirst();
        }

        void unlock() {
            if (owner != Thread.currentThread()) throw new IllegalMonitorStateException("the runtime lock is not held by this thread");
            if (--holds > 0) return;
            owner = null;
            wakeFirst();
        }

        private void wakeFirst() {
            Wait first = queue.peek();
            if (first != null) LockSupport.unpark(first.thread);
        }

        boolean isHeldByCurrentThread() {
            return owner == Thread.currentThread();
        }

        boolean hasQueuedThreads() {
            return !queue.isEmpty();
        }

        Thread holder() {
            return owner;
        }
    }
}
