package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;
import dev.conduit.spi.ConcurrentUseException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * {@code SERIALIZED}: many threads, never at once. An atomic in-use flag (the thread inside)
 * detects an overlapping call, which fails with {@link ConcurrentUseException} before it touches
 * the plugin. The thread inside may re-enter (a message handler that sends).
 */
public final class OverlapCheck extends ThreadGuard {

    private static final VarHandle IN_USE;

    static {
        try {
            IN_USE = MethodHandles.lookup().findVarHandle(OverlapCheck.class, "inUse", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String what;
    @SuppressWarnings("unused") // accessed through IN_USE
    private volatile Thread inUse;
    /** Re-entry depth; only the thread inside reads or writes it. */
    private int depth;

    public OverlapCheck(String what) {
        this.what = what;
    }

    @Override
    public void enter() {
        Thread current = Thread.currentThread();
        if (!IN_USE.compareAndSet(this, null, current)) {
            if ((Thread) IN_USE.getOpaque(this) == current) {
                depth++;
                return;
            }
            throw overlap(current);
        }
    }

    @Override
    public boolean tryEnter() {
        Thread current = Thread.currentThread();
        if (IN_USE.compareAndSet(this, null, current)) return true;
        if ((Thread) IN_USE.getOpaque(this) != current) return false;
        depth++;
        return true;
    }

    @Override
    public void exit() {
        if (depth > 0) {
            depth--;
        } else {
            IN_USE.setRelease(this, null);
        }
    }

    private ConcurrentUseException overlap(Thread current) {
        Thread other = (Thread) IN_USE.getOpaque(this);
        return new ConcurrentUseException(what + " is SERIALIZED: thread " + ThreadNames.of(current) + " called it while thread "
                + (other == null ? "'?'" : ThreadNames.of(other)) + " was inside. Serialize the calls, or create it with ThreadMode.MULTI.");
    }

    @Override
    public ThreadPolicy policy() {
        return ThreadPolicy.OVERLAP_CHECK;
    }
}
