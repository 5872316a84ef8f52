package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;

/**
 * The runtime's enforcement of a worker's thread mode, entered and exited around every call the
 * application makes on the worker or its endpoints. Subclasses are final and small so that the
 * JIT inlines the one a call site sees.
 */
public abstract sealed class ThreadGuard permits OwnerCheck, OverlapCheck, RuntimeLock, PassThrough {

    /** Before a call; throws if the call may not proceed. Re-entrant on the same thread. */
    public abstract void enter();

    /**
     * Enters if no other thread is inside, without waiting or throwing: for a thread that is not
     * the application's (closing the worker for its {@code Conduit}). Pair a {@code true} with
     * {@link #exit()}.
     */
    public abstract boolean tryEnter();

    /** After the call, in a {@code finally}. */
    public abstract void exit();

    /** What this guard enforces. */
    public abstract ThreadPolicy policy();
}
