package dev.conduit.internal.threading;

import dev.conduit.spi.ThreadStart;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * Makes a blocking native call for a virtual thread on a platform thread, while the virtual thread
 * parks. A native call (an FFM downcall: a futex wait, a {@code poll}) pins a virtual thread to its
 * carrier for as long as it blocks, and the JDK adds no carrier for it as it does for its own
 * blocking I/O: as many virtual threads asleep in a worker's {@code await}, or importing from an
 * exporter whose descriptor server does not answer, as the scheduler has carriers
 * ({@code jdk.virtualThreadScheduler.parallelism}, the number of processors by default) stopped
 * every other virtual thread of the JVM until one went on (VirtualThreadsTest), and so did as
 * many connecting over memfd to a peer that does not answer. A parked virtual thread leaves its
 * carrier. The platform threads are daemons, made as calls need them (one per
 * call under way) and kept a minute once idle. They inherit nothing of the thread that made them,
 * which gives them the system class loader as their context loader: each call runs with its
 * caller's instead ({@link #withContextLoader}).
 */
public final class PlatformHandOff {

    private static final ExecutorService THREADS = Executors.newCachedThreadPool(
            Thread.ofPlatform().daemon().name("conduit-await-", 0).inheritInheritableThreadLocals(false).factory());

    /** On a platform thread making a call for a virtual one ({@link #blockingCall}), that virtual thread. */
    private static final ThreadLocal<Thread> MADE_FOR = new ThreadLocal<>();

    private PlatformHandOff() {
    }

    /**
     * The thread the calling thread acts for: the virtual thread whose {@link #blockingCall} it
     * makes, else itself. A check that a call comes back through the runtime on the thread that
     * made it (an importer that imports the chunk it is mapping) asks this, so that it holds for a
     * virtual caller too.
     */
    public static Thread actingFor() {
        Thread caller = MADE_FOR.get();
        return caller != null ? caller : Thread.currentThread();
    }

    /**
     * Runs {@code call} on a platform thread and returns its result; its exceptions propagate
     * unchanged, and it runs with the caller's context class loader. As for a confined plugin's
     * call ({@link ThreadConfinement#call}), an interrupt of the caller does not end the wait, and
     * its status is kept: the call must be woken its own way (a worker's signal, which an interrupt
     * of a thread in {@code await} sends).
     */
    public static <T> T call(Callable<T> call) {
        return call(call, THREADS);
    }

    /** As {@link #call(Callable)}, on {@code threads}: a test's may be unable to start one. */
    static <T> T call(Callable<T> call, ExecutorService threads) {
        ClassLoader callers = Thread.currentThread().getContextClassLoader();
        return ThreadConfinement.resultOf(submit(threads, () -> withContextLoader(callers, call)));
    }

    /**
     * Hands {@code task} to {@code threads}, which starts a thread when none is idle: at the
     * process's or its cgroup's limit of threads the JVM's bare OutOfMemoryError came out of a
     * virtual thread's await, import or memfd connect, with no remedy (ThreadStart).
     */
    private static <T> Future<T> submit(ExecutorService threads, Callable<T> task) {
        try {
            return threads.submit(task);
        } catch (OutOfMemoryError noThread) {
            throw ThreadStart.failed("conduit: cannot start a platform thread (conduit-await-) to make a virtual thread's "
                    + "blocking call (a worker's await, an import, a plugin's blockingCall) while the virtual thread parks", noThread);
        }
    }

    /**
     * Makes {@code call} on this platform thread with {@code loader} as its context class loader,
     * as the caller would have made it, and gives the thread back its own after: an idle thread
     * must not keep an application's loader (a web application's, undeployed). Until 2026-12-07 a
     * virtual thread's call ran with the system class loader, where a platform thread's, made by
     * itself, had its own: a plugin's lookup through it (ServiceLoader.load, a logging bridge)
     * saw neither the plugin nor the application in a fat jar or an application server
     * (PlatformHandOffTest#aVirtualThreadsCallRunsWithTheCallersContextClassLoaderAndLeavesItNotOnThePlatformThread).
     */
    private static <T> T withContextLoader(ClassLoader loader, Callable<T> call) throws Exception {
        Thread self = Thread.currentThread();
        ClassLoader own = self.getContextClassLoader();
        self.setContextClassLoader(loader);
        try {
            return call.call();
        } finally {
            self.setContextClassLoader(own);
        }
    }

    /**
     * A plugin's blocking call ({@link dev.conduit.spi.PluginContext#blockingCall}): made by the
     * calling thread itself when it is a platform thread, as it always was; for a virtual thread,
     * on a platform thread while the virtual thread parks, as if made by the caller: its result
     * and its exceptions come back unchanged, it runs with the caller's context class loader, and
     * an interrupt of the caller, before or during the
     * call, interrupts the thread making it while it does (a {@code Thread.sleep} or a JDK blocking
     * call of the plugin's then ends as it would on the caller; a native call does not see it on
     * either). The caller's interrupt status is kept. An interrupt meant for a call ends with it:
     * the platform thread's next call does not see it.
     */
    public static <T> T blockingCall(Supplier<T> call) {
        return blockingCall(call, THREADS);
    }

    /** As {@link #blockingCall(Supplier)}, on {@code threads}: a test's may be unable to start one. */
    static <T> T blockingCall(Supplier<T> call, ExecutorService threads) {
        if (!Thread.currentThread().isVirtual()) return call.get();
        ForCaller<T> forCaller = new ForCaller<>(call, Thread.currentThread());
        // Passed on before the submit, not left to the wait below: a call that ends before the caller waits for it is
        // collected without a look at the caller's status, and would never have seen an interrupt set before it.
        if (Thread.currentThread().isInterrupted()) forCaller.interrupt();
        return ThreadConfinement.resultOf(submit(threads, forCaller), forCaller::interrupt);
    }

    /** A call made for a virtual thread, which passes its interrupts on to the platform thread while that makes it. */
    private static final class ForCaller<T> implements Callable<T> {

        private final Supplier<T> call;
        private final Thread caller;
        private final ClassLoader callersLoader;
        /** The platform thread making the call, while it does; guarded by this. */
        private Thread maker;
        /** Whether the caller was interrupted; guarded by this. */
        private boolean interrupted;

        ForCaller(Supplier<T> call, Thread caller) {
            this.call = call;
            this.caller = caller;
            this.callersLoader = caller.getContextClassLoader();
        }

        @Override
        public T call() throws Exception {
            synchronized (this) {
                maker = Thread.currentThread();
                if (interrupted) maker.interrupt();
            }
            MADE_FOR.set(caller);
            try {
                return withContextLoader(callersLoader, call::get);
            } finally {
                MADE_FOR.remove();
                synchronized (this) {
                    maker = null;
                }
                Thread.interrupted(); // the caller's, or the call's own: this pool thread's next call must not see it
            }
        }

        synchronized void interrupt() {
            interrupted = true;
            if (maker != null) maker.interrupt();
        }
    }
}
