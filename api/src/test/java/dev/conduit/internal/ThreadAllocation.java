package dev.conduit.internal;

/** What the calling thread has allocated on the heap, for tests that check a path allocates nothing. */
public final class ThreadAllocation {

    private ThreadAllocation() {
    }

    /**
     * The bytes this thread has allocated so far ({@code com.sun.management.ThreadMXBean}), through
     * reflection: the tests run inside module dev.conduit, which does not read java.management, and
     * core reflection needs no read edge. Looked up on every call, not cached in fields: the small
     * method a cached lookup makes is inlined into the loop being measured, and changes what C2
     * makes of it (SteadyStateAllocationTest's zero-copy sends then kept about 34 KB of views in
     * half the runs).
     */
    public static long allocatedBytes() {
        try {
            Object bean = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
            return (Long) Class.forName("com.sun.management.ThreadMXBean").getMethod("getCurrentThreadAllocatedBytes").invoke(bean);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("cannot read this thread's allocated bytes", e);
        }
    }
}
