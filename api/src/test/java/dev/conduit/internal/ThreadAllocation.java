package dev.conduit.internal;

/** What the calling thread has allocated on the heap, for tests that check a path allocates nothing. */
public final class ThreadAllocation {

    /** How long {@link #onceCompiled} runs rounds that allocate: a hang guard for a path that always does, not a speed check. */
    private static final long COMPILE_GUARD_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(1);

    private ThreadAllocation() {
    }

    /**
     * What one round of a path allocates once the JIT's code for it runs: runs {@code round} at least three times (two
     * rounds to warm up, as the tests did), then again until a round allocates less than {@code bound} bytes, and returns
     * what the last round allocated; a path that allocates in every round is run for a minute, then its last round's bytes
     * are returned for the test to fail on. The tests measured the third round: a path made allocation-free by C2's escape
     * analysis allocates until C2 has compiled it, which a loaded machine's compiler threads (or a long queue of methods
     * that earlier tests of the JVM made hot) did not do within three rounds: IpcCacheTest's cached imports measured 56
     * bytes an import in one run of api's tests beside other builds, and exactly that with C2 held back past the third
     * round (-XX:Tier4InvocationThreshold=700000 and the like).
     *
     * @param round one round of the path, returning the bytes this thread allocated in it ({@link #allocatedBytes()} around it)
     */
    public static long onceCompiled(long bound, java.util.function.LongSupplier round) {
        long deadline = System.nanoTime() + COMPILE_GUARD_NANOS;
        long allocated;
        int rounds = 0;
        do {
            allocated = round.getAsLong();
            rounds++;
        } while (rounds < 3 || allocated >= bound && System.nanoTime() - deadline < 0);
        return allocated;
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
