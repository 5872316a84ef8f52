package dev.conduit.internal.threading;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Makes a blocking native call for a virtual thread on a platform thread, while the virtual thread
 * parks. A native call (an FFM downcall: a futex wait, a {@code poll}) pins a virtual thread to its
 * carrier for as long as it blocks, and the JDK adds no carrier for it as it does for its own
 * blocking I/O: as many virtual threads asleep in a worker's {@code await}, or importing from an
 * exporter whose descriptor server does not answer, as the scheduler has carriers
 * ({@code jdk.virtualThreadScheduler.parallelism}, the number of processors by default) stopped
 * every other virtual thread of the JVM until one went on (VirtualThreadsTest). A parked virtual
 * thread leaves its carrier. The platform threads are daemons, made as calls need them (one per
 * call under way) and kept a minute once idle.
 */
public final class PlatformHandOff {

    private static final ExecutorService THREADS = Executors.newCachedThreadPool(
            Thread.ofPlatform().daemon().name("conduit-await-", 0).inheritInheritableThreadLocals(false).factory());

    private PlatformHandOff() {
    }

    /**
     * Runs {@code call} on a platform thread and returns its result; its exceptions propagate
     * unchanged. As for a confined plugin's call ({@link ThreadConfinement#call}), an interrupt of
     * the caller does not end the wait, and its status is kept: the call must be woken its own way
     * (a worker's signal, which an interrupt of a thread in {@code await} sends).
     */
    public static <T> T call(Callable<T> call) {
        return ThreadConfinement.resultOf(THREADS.submit(call));
    }
}
