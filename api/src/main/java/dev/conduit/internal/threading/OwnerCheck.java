package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;

/**
 * {@code SINGLE}: every call must come from the thread that created the worker. The plugin's
 * objects were created on that thread, so a thread-confined plugin stays safe. One comparison per
 * call, no memory barrier.
 */
public final class OwnerCheck extends ThreadGuard {

    private final Thread owner;
    private final String what;

    public OwnerCheck(Thread owner, String what) {
        this.owner = owner;
        this.what = what;
    }

    /** The thread the worker belongs to. */
    public Thread owner() {
        return owner;
    }

    @Override
    public void enter() {
        if (Thread.currentThread() != owner) {
            throw wrongThread();
        }
    }

    @Override
    public boolean tryEnter() {
        return Thread.currentThread() == owner;
    }

    @Override
    public void exit() {
    }

    private WrongThreadException wrongThread() {
        return new WrongThreadException(what + " is SINGLE-threaded and belongs to thread " + ThreadNames.of(owner)
                + ", which created it; called from thread " + ThreadNames.of(Thread.currentThread())
                + ". Create it with ThreadMode.SERIALIZED or MULTI to share it between threads.");
    }

    @Override
    public ThreadPolicy policy() {
        return ThreadPolicy.OWNER_CHECK;
    }
}
