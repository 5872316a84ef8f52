package dev.conduit.linux.internal;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * Address ranges of closed mappings, held for {@link #GRACE_NANOS} and then unmapped by one daemon
 * thread ({@value #THREAD_NAME}), which starts with the first range held and ends when none is left.
 *
 * <p>Why a closed mapping is not unmapped at once: {@code Arena.close()} keeps other threads off
 * the memory it frees by a handshake with every thread, and JDK 25 can miss a thread that is in the
 * middle of an access (JDK-8364167). That thread then completes its access after the close. Were
 * the range unmapped, the access would kill the JVM with {@code SIGSEGV}, or, once something else
 * is mapped there, read or write that other mapping. While the range is held, it maps an empty
 * file ({@link FfmLibc}'s placeholder), so the access raises {@code SIGBUS}, which the JVM turns
 * into an {@link InternalError} in the accessing thread (for every access but a compare-and-set
 * the interpreter runs). The file's own pages are released at the
 * close; a held range costs address space and one kernel mapping entry, no memory.
 *
 * <p>An access the handshake missed lasts from the arena's liveness check to the memory
 * instruction: nanoseconds, unless its thread is preempted in between. A second covers a thread
 * descheduled on a loaded machine. At most {@link #MAX_HELD} ranges are held (the kernel's
 * default {@code vm.max_map_count} is 65530): past that, the oldest is unmapped at once.
 */
final class ClosedMappings {

    static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);
    static final int MAX_HELD = 4096;
    static final String THREAD_NAME = "conduit-unmapper";
    /** The empty memfd a held range maps: {@code memfd:conduit-closed-mapping} in {@code /proc/self/maps}. */
    static final String PLACEHOLDER_NAME = "conduit-closed-mapping";

    /** The ranges of this process's closed mappings. */
    static final ClosedMappings PROCESS = new ClosedMappings(GRACE_NANOS, MAX_HELD, FfmLibc::unmapNow);

    /** What ends a range: {@code munmap}. */
    @FunctionalInterface
    interface Unmap {
        void unmap(long address, long length);
    }

    private record Held(long address, long length, long dueNanos) {}

    private final long graceNanos;
    private final int maxHeld;
    private final Unmap unmap;
    private final ArrayDeque<Held> held = new ArrayDeque<>();
    /** Guarded by {@link #held}. */
    private boolean unmapperRunning;

    ClosedMappings(long graceNanos, int maxHeld, Unmap unmap) {
        this.graceNanos = graceNanos;
        this.maxHeld = maxHeld;
        this.unmap = unmap;
    }

    /** Unmaps {@code [address, address + length)} after the grace period; the range must map the placeholder. */
    void hold(long address, long length) {
        synchronized (held) {
            held.addLast(new Held(address, length, System.nanoTime() + graceNanos));
            if (held.size() > maxHeld) {
                Held oldest = held.pollFirst();
                unmap.unmap(oldest.address(), oldest.length());
            }
            if (!unmapperRunning) {
                try {
                    Thread.ofPlatform().daemon().name(THREAD_NAME).inheritInheritableThreadLocals(false)
                            .start(this::unmapWhenDue);
                    unmapperRunning = true;
                } catch (OutOfMemoryError | RuntimeException e) {
                    // No thread to be had: give the range back now, unprotected, rather than never.
                    held.pollLast();
                    unmap.unmap(address, length);
                }
            }
        }
    }

    /** How many ranges are held now. */
    int heldCount() {
        synchronized (held) {
            return held.size();
        }
    }

    /** Whether a thread is running to unmap what is held. */
    boolean unmapperRunning() {
        synchronized (held) {
            return unmapperRunning;
        }
    }

    private void unmapWhenDue() {
        boolean emptied = false;
        try {
            while (true) {
                Held due;
                synchronized (held) {
                    while (true) {
                        due = held.peekFirst();
                        if (due == null) {
                            unmapperRunning = false;
                            emptied = true;
                            return;
                        }
                        long wait = due.dueNanos() - System.nanoTime();
                        if (wait <= 0) {
                            held.pollFirst();
                            break;
                        }
                        try {
                            TimeUnit.NANOSECONDS.timedWait(held, wait);
                        } catch (InterruptedException e) {
                            // Nobody owns this thread to stop it; the ranges still have to go.
                        }
                    }
                }
                unmap.unmap(due.address(), due.length());
            }
        } finally {
            if (!emptied) {
                // Ended by an error (out of memory, a logger's exception): the next hold starts another thread.
                synchronized (held) {
                    unmapperRunning = false;
                }
            }
        }
    }
}
