package dev.conduit.tools;

/**
 * The heap bytes the calling thread has allocated so far, which both sides of {@code conduit perf}
 * read around what they measure: the transports' message paths are meant to allocate nothing.
 */
final class ThreadAllocation {

    private ThreadAllocation() {
    }

    /** Bytes this thread allocated so far, or -1 when the JVM does not say. */
    static long bytes() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        if (threads instanceof com.sun.management.ThreadMXBean t && t.isThreadAllocatedMemorySupported() && t.isThreadAllocatedMemoryEnabled()) {
            return t.getCurrentThreadAllocatedBytes();
        }
        return -1;
    }

    /**
     * Bytes this thread allocated since {@code before}, a reading of {@link #bytes()}, or -1 when the
     * JVM did not say then or does not now: -1 read twice made 0, a loop that allocated nothing.
     */
    static long since(long before) {
        long now = bytes();
        return before < 0 || now < 0 ? -1 : now - before;
    }
}
