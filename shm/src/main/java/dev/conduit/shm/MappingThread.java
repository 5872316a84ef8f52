package dev.conduit.shm;

import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.PayloadReader;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The transport's mapping thread ({@code conduit-<plugin>-mapper}), which maps, unmaps and frees
 * shared memory and removes dead peers' files for the transport wherever the thread that calls
 * progress() would stall on it. It maps the bounce rings of senders, unmaps those of the
 * connections it forgot ({@link #unmap}) and the endpoints' mappings of their peers' receive
 * queues once given back, with the free of the endpoints' own bounce rings
 * ({@link #unmapMadeElsewhere}: a peer found gone, an endpoint closed),
 * and runs the transport's other work that must not stall that thread ({@link #run}: the reclaim
 * of dead peers' files). Importing a ring may wait on its
 * sender: a memfd ring comes from the sender's fd server, which may take up to
 * {@code memfd.connect.timeout} to answer when the sender is paused, frozen or hostile. On the
 * progress thread that wait held the whole worker: the liveness checks that fail dead peers'
 * endpoints, the worker's other transports, its error handlers. Unmapping a ring the receiver
 * read costs the page tables' teardown and a TLB shootdown (an interrupt to every CPU the process
 * runs on) besides the JDK's handshake of a shared arena's close: the progress() that forgot a
 * connection whose 4 MiB ring it had read took 374-428 µs at the median on the project's 2-core
 * VM, 65-92 µs with the unmap handed over here (docs/performance.md, "A forgotten connection's ring
 * unmapped off the progress thread"), time in which the worker served none of its other peers. The
 * unmap of a gone peer's 2 MiB queue the endpoint had written took 420-695 µs at the median
 * there ("A gone peer's queue unmapped off the progress thread"), the free of its 4 MiB bounce
 * ring 441-492 µs ("A released endpoint's bounce ring freed off the progress thread").
 *
 * <p>One daemon thread per transport, started by the first mapping, unmap or reclaim. It ends after
 * a second idle, but not while a ring it mapped is still to be unmapped (a peer's queue, which it
 * did not map, keeps it only while the unmap runs): the unmap's hand-over then finds it, where
 * starting a thread would cost the progress thread about as much as the unmap (41-91 µs). The
 * transport starts a mapping only for the large message at the head of its queue,
 * which waits for it, so there is one at a time, but for the cancelled ones of connections it
 * forgot meanwhile (a process that writes the queue wrote over the record that waited).
 *
 * <p>Mappings and unmaps run in the order handed over, on one thread, so an unmap handed over
 * before a mapping starts is done before it is made: the rings mapped at any time are among those
 * the transport's budget ({@code inbound.bounce.max}) counted when the oldest unmap still waiting
 * was handed over, and the transport gives a forgotten ring's budget back as it hands its unmap
 * over, without mapping more than the budget.
 */
final class MappingThread {

    /** How long a retry's delay parks at a time before it looks whether it was cancelled. */
    private static final long DELAY_SLICE_NANOS = 1_000_000;

    private final ThreadPoolExecutor executor;
    /** Unmaps one mapping, saying a failure where it cannot be thrown (the transport's best-effort WARNING). */
    private final Consumer<ChunkMapping> unmapper;
    /** Unmaps handed over ({@link #unmap}, {@link #unmapMadeElsewhere}) and not yet taken, oldest first; whoever takes one runs it. */
    private final ConcurrentLinkedQueue<Runnable> toUnmap = new ConcurrentLinkedQueue<>();
    /** Held while the unmaps taken from {@link #toUnmap} run: {@link #unmapHandedOver} waits for one under way. */
    private final Object unmapping = new Object();
    /** Rings this thread mapped and handed out that are not yet handed back to be unmapped: the thread stays while any is. */
    private int ringsOut;

    MappingThread(String plugin, Consumer<ChunkMapping> unmapper) {
        this(unmapper, task -> {
            Thread thread = new Thread(task, "conduit-" + plugin + "-mapper");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** With {@code threads} making the thread: a test's may make one whose start() throws what Thread.start throws. */
    MappingThread(Consumer<ChunkMapping> unmapper, ThreadFactory threads) {
        this.unmapper = unmapper;
        executor = new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), threads);
        executor.allowCoreThreadTimeOut(true);
    }

    /**
     * Starts mapping the ring of {@code ringLength} bytes exported as {@code export}, after
     * {@code delayNanos} (a retry after a shortage of descriptors waits a while). The future
     * completes with the mapping, or with what {@link IpcImporter#map} threw, or with a
     * {@link CancellationException} when the worker closed during the wait. Cancelling it drops
     * the mapping: not started, or waiting out its delay, it is never made; under way, it is
     * unmapped once made.
     */
    CompletableFuture<ChunkMapping> map(IpcImporter importer, byte[] export, long ringLength, long delayNanos) {
        CompletableFuture<ChunkMapping> ring = new CompletableFuture<>();
        Runnable task = () -> {
            try {
                // In slices, looking whether it was cancelled meanwhile: a cancelled retry ends its delay within one, so that
                // the next mapping does not wait behind it.
                for (long until = System.nanoTime() + delayNanos; delayNanos > 0 && until - System.nanoTime() > 0 && !ring.isDone(); ) {
                    LockSupport.parkNanos(Math.min(until - System.nanoTime(), DELAY_SLICE_NANOS));
                    if (Thread.interrupted()) throw new CancellationException("the worker closed");
                }
                if (ring.isDone()) return; // cancelled before or during its delay: never made
                ChunkMapping mapping = importer.map(new PayloadReader(export, 0, export.length, "bounce.payload."), ringLength);
                if (ring.complete(mapping)) {
                    countRingsOut(1);
                } else {
                    mapping.close(); // cancelled meanwhile: nobody takes it
                }
            } catch (Throwable e) {
                // Wrapped as supplyAsync would: join() then throws it as a CompletionException, which the transport handles,
                // a CancellationException (the worker closed) included, which join() would otherwise throw bare. Every
                // Throwable: a checked one (an importer in another JVM language) would otherwise end the thread and leave
                // the future, and the large message waiting at the head for it, for ever.
                ring.completeExceptionally(new CompletionException(e));
            }
        };
        // A process that writes the queue can have the ring a large message waits for forgotten (a CLOSE written over
        // it) and another one started, as often as it likes: a cancelled mapping leaves the queue, with its announcement.
        ring.whenComplete((mapping, failure) -> {
            if (ring.isCancelled()) executor.remove(task);
        });
        executor.execute(task);
        return ring;
    }

    /**
     * Unmaps {@code mapping}, a ring this thread mapped ({@link #map}), on this thread after what
     * was asked of it before, saying a failure through the transport's unmapper. Not after
     * {@link #shutdown}: the caller then unmaps it itself.
     */
    void unmap(ChunkMapping mapping) {
        handOverUnmap(() -> unmapper.accept(mapping), true);
    }

    /**
     * Runs {@code unmap}, the unmap of a mapping another thread made (an endpoint's mapping of its
     * peer's receive queue, after the free of the endpoint's bounce ring), on this thread in order with the ring unmaps and mappings, as
     * {@link #unmap} does; it says its own failure. Not after {@link #shutdown}: the caller then
     * unmaps itself.
     */
    void unmapMadeElsewhere(Runnable unmap) {
        handOverUnmap(unmap, false);
    }

    private void handOverUnmap(Runnable unmap, boolean ringMappedHere) {
        toUnmap.add(unmap);
        // One task per unmap, each running the oldest left: the n-th ends with the first n unmapped, before whatever was
        // asked after it.
        try {
            executor.execute(() -> {
                try {
                    synchronized (unmapping) {
                        Runnable oldest = toUnmap.poll();
                        if (oldest != null) oldest.run(); // else the close took it
                    }
                } finally {
                    // Here, not in the hand-over: letting the thread time out interrupts it if idle, a second wake-up the
                    // progress thread would pay (14 µs on the project's VM).
                    if (ringMappedHere) countRingsOut(-1);
                }
            });
        } catch (OutOfMemoryError noThread) {
            // No thread could be started (Thread.start: the process's or its cgroup's limit of threads, ThreadStart), and
            // nothing waits on this thread: so the caller unmaps, with every unmap handed over before (a task left for one finds
            // it done), as it did before the hand-over, and the ring is counted back. Thrown, the error reached an
            // endpoint's release or progress() bare, the unmap waited for the next hand-over or the close, and a ring
            // mapped here stayed counted out, so that this thread never ended again.
            unmapHandedOver();
            if (ringMappedHere) countRingsOut(-1);
        }
    }

    /**
     * Unmaps here every mapping handed over and not yet unmapped, once an unmap under way on this
     * thread is done: when it returns, nothing handed over before is still mapped. The transport's
     * close calls it after {@link #shutdown}, which drops the unmaps not begun.
     */
    void unmapHandedOver() {
        synchronized (unmapping) {
            for (Runnable unmap; (unmap = toUnmap.poll()) != null; ) unmap.run();
        }
    }

    /** Keeps the thread while rings it mapped are out, and lets it end after a second idle once none is. */
    private synchronized void countRingsOut(int change) {
        boolean wereOut = ringsOut > 0;
        ringsOut += change;
        if (wereOut != ringsOut > 0) executor.allowCoreThreadTimeOut(ringsOut == 0);
    }

    /**
     * Runs {@code work} on this thread, after what was asked of it before. {@link #shutdown} drops
     * it if it has not begun, and interrupts it if it has: the caller finishes what was dropped.
     */
    void run(Runnable work) {
        executor.execute(work);
    }

    /**
     * Drops a mapping not yet started (its future never completes, and nothing of it is mapped)
     * and interrupts the one under way: a retry waiting for its turn ends; an import in progress
     * ends within its importer's own bound (memfd's connect pause fails at the interrupt). Drops
     * the unmaps not begun too, which {@link #unmapHandedOver} then runs.
     */
    void shutdown() {
        executor.shutdownNow();
    }

    /**
     * Waits until no mapping is under way any more.
     *
     * @return whether none was, within {@code timeoutNanos}
     */
    boolean awaitIdle(long timeoutNanos) {
        try {
            // The idle thread may still be on its way out: that is no mapping.
            return executor.awaitTermination(timeoutNanos, TimeUnit.NANOSECONDS) || executor.getActiveCount() == 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return executor.getActiveCount() == 0;
        }
    }
}
