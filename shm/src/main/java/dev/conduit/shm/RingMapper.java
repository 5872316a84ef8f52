package dev.conduit.shm;

import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.PayloadReader;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Maps the bounce rings of senders off the receiver's progress thread, and runs the transport's
 * other work that must not stall that thread ({@link #run}: the reclaim of dead peers' files). Importing a ring may wait
 * on its sender: a memfd ring comes from the sender's fd server, which may take up to
 * {@code memfd.connect.timeout} to answer when the sender is paused, frozen or hostile. On the
 * progress thread that wait held the whole worker: the liveness checks that fail dead peers'
 * endpoints, the worker's other transports, its error handlers.
 *
 * <p>One daemon thread per transport, started by the first mapping or reclaim and ended after a
 * second idle. The transport starts a mapping only for the large message at the head of its queue,
 * which waits for it, so there is one at a time, but for the cancelled ones of connections it
 * forgot meanwhile (a process that writes the queue wrote over the record that waited).
 */
final class RingMapper {

    /** How long a retry's delay parks at a time before it looks whether it was cancelled. */
    private static final long DELAY_SLICE_NANOS = 1_000_000;

    private final ThreadPoolExecutor executor;

    RingMapper(String plugin) {
        executor = new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(task, "conduit-" + plugin + "-ring-mapper");
            thread.setDaemon(true);
            return thread;
        });
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
                if (!ring.complete(mapping)) mapping.close(); // cancelled meanwhile: nobody takes it
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
     * Runs {@code work} on this thread, after what was asked of it before. {@link #shutdown} drops
     * it if it has not begun, and interrupts it if it has: the caller finishes what was dropped.
     */
    void run(Runnable work) {
        executor.execute(work);
    }

    /**
     * Drops a mapping not yet started (its future never completes, and nothing of it is mapped)
     * and interrupts the one under way: a retry waiting for its turn ends; an import in progress
     * ends within its importer's own bound (memfd's connect pause fails at the interrupt).
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
