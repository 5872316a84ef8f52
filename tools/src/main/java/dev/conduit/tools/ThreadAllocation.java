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
}
