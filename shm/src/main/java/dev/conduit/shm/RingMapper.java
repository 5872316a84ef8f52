package dev.conduit.shm;

import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.PayloadReader;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Maps the bounce rings senders announce, off the receiver's progress thread. Importing a ring
 * may wait on its sender: a memfd ring comes from the sender's fd server, which may take up to
 * {@code memfd.connect.timeout} to answer when the sender is paused, frozen or hostile. On the
 * progress thread that wait held the whole worker: every other peer's messages, the liveness
 * checks that fail dead peers' endpoints, the error handlers.
 *
 * <p>One daemon thread per transport, started by the first announcement and ended after a
 * second without one. Rings are mapped one at a time, in the order they were announced.
 */
final class RingMapper implements AutoCloseable {

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
     * Starts mapping the ring of {@code ringLength} bytes exported as {@code export}. The future
     * completes with the mapping, or with what {@link IpcImporter#map} threw.
     */
    CompletableFuture<ChunkMapping> map(IpcImporter importer, byte[] export, long ringLength) {
        return CompletableFuture.supplyAsync(
                () -> importer.map(new PayloadReader(export, 0, export.length, "bounce.payload."), ringLength), executor);
    }

    /**
     * Drops the rings not yet started (their futures never complete, and nothing of them is
     * mapped) and waits for the one under way, which its importer bounds in time, so that no
     * mapping is made after this returns.
     *
     * @return whether the mapping under way finished within {@code timeoutNanos}
     */
    boolean close(long timeoutNanos) {
        executor.shutdownNow();
        try {
            return executor.awaitTermination(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public void close() {
        close(Long.MAX_VALUE);
    }
}
