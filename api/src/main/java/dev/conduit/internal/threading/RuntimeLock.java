package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * {@code MULTI} over a plugin that declares only {@code SERIALIZED}: the runtime's own lock
 * serializes calls, as UCP's worker lock does for UCT, so the plugin never sees concurrency it did
 * not declare. Re-entrant, for handlers that send.
 *
 * <p>A handler runs under its worker's lock, so one that sends on another such worker holds two.
 * Two workers whose handlers send on each other's endpoints, each progressed by its own thread,
 * would wait for each other for good. A thread that does not get the lock at once looks, every
 * millisecond while it waits, for a cycle of threads each waiting for a lock the next one holds;
 * of the threads in a cycle, the one with the highest id gives up with an
 * {@link IllegalStateException} naming the cause, which releases the others. The uncontended
 * path is one {@code tryLock}.
 */
public final class RuntimeLock extends ThreadGuard {

    /** The lock each thread blocked in {@link #enter()} waits for: the graph a cycle is looked for in. */
    private static final ConcurrentHashMap<Thread, RuntimeLock> WAITING = new ConcurrentHashMap<>();
    private static final long RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** Longer chains than this are not followed: more workers than that in one cycle is not a case to serve. */
    private static final int MAX_CHAIN = 64;

    private final OwnedLock lock = new OwnedLock();

    @Override
    public void enter() {
        if (lock.tryLock()) return;
        Thread self = Thread.currentThread();
        boolean interrupted = false;
        WAITING.put(self, this);
        try {
            while (true) {
                try {
                    if (lock.tryLock(RECHECK_NANOS, TimeUnit.NANOSECONDS)) return;
                } catch (InterruptedException e) {
                    interrupted = true; // lock() ignores interrupts too; kept for the caller
                }
                List<Thread> cycle = cycleThrough(self);
                if (cycle != null && self.threadId() == cycle.stream().mapToLong(Thread::threadId).max().orElseThrow()) {
                    throw new IllegalStateException("deadlock between MULTI workers: this thread (" + self.getName() + ") holds one's "
                            + "runtime lock and waits for another's, whose holder waits, through " + (cycle.size() - 1)
                            + " thread(s), for this one: their handlers send on each other's endpoints. Let a handler send only on its "
                            + "own worker's endpoints, or hand the message to the thread that progresses the other worker "
                            + "(docs/runtime.md, \"Thread modes\"); this call did nothing");
                }
            }
        } finally {
            WAITING.remove(self);
            if (interrupted) self.interrupt();
        }
    }

    /** The threads of a cycle of waits that leads from this lock back to {@code self}, or null. */
    private List<Thread> cycleThrough(Thread self) {
        List<Thread> threads = new ArrayList<>();
        threads.add(self);
        RuntimeLock next = this;
        for (int i = 0; i < MAX_CHAIN && next != null; i++) {
            Thread holder = next.lock.holder();
            if (holder == null) return null;
            if (holder == self) return threads;
            threads.add(holder);
            next = WAITING.get(holder);
        }
        return null;
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

    /** A lock that says who holds it, for the cycle check. */
    private static final class OwnedLock extends ReentrantLock {
        Thread holder() {
            return getOwner();
        }
    }
}
