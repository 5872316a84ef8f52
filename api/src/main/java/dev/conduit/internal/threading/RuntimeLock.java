package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;

import java.util.concurrent.locks.ReentrantLock;

/**
 * {@code MULTI} over a plugin that declares only {@code SERIALIZED}: the runtime's own lock
 * serializes calls, as UCP's worker lock does for UCT, so the plugin never sees concurrency it did
 * not declare. Re-entrant, for handlers that send.
 */
public final class RuntimeLock extends ThreadGuard {

    private final ReentrantLock lock = new ReentrantLock();

    @Override
    public void enter() {
        lock.lock();
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
}
