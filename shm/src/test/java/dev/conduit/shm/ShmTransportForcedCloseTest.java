package dev.conduit.shm;

import dev.conduit.linux.Linux;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.PayloadReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker closed from another thread ({@code Conduit.close()} closes a worker whose owner is
 * still inside a call, after a second) while that call hands something over to it: here, where
 * the owner's thread can be held at the point that matters ({@link ShmTransport#beforeRingMapping});
 * the posix and memfd tests hold it inside a native call. The transports share this JVM's memory
 * ({@link InProcessMemory}).
 */
class ShmTransportForcedCloseTest {

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    /**
     * A close that runs while progress() has read a large message and not yet started mapping its
     * sender's ring, the worker's first (so there is no ring mapper for the close to shut down):
     * the progress then made a mapper and started the mapping, which nobody took, so the ring
     * stayed mapped for the life of the process. It now sees the close and starts nothing.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aCloseBeforeProgressStartsMappingARingLeavesNoMapping() throws Exception {
        CountDownLatch starting = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        CountDownLatch progressReturned = new CountDownLatch(1);
        AtomicInteger mapped = new AtomicInteger();
        InProcessMemory memory = new InProcessMemory();
        // A mapping started by that progress is made once it returned: not one that progress itself could still adopt.
        ShmTransport receiver = transport(memory, (payload, length) -> {
            awaitUninterruptibly(progressReturned);
            return counted(memory.map(payload, length), mapped);
        });
        ShmTransport sender = transport(new InProcessMemory(), new InProcessMemory());
        AtomicBoolean reached = new AtomicBoolean();
        receiver.beforeRingMapping = () -> {
            reached.set(true);
            starting.countDown();
            awaitUninterruptibly(closed);
        };
        ShmEndpoint endpoint = (ShmEndpoint) sender.connect(new PayloadReader(receiver.address()), cause -> { });
        assertThat(endpoint.trySend(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[20_000]))).as("a large message sent").isTrue();
        AtomicReference<RuntimeException> failure = new AtomicReference<>();
        Thread progress = Thread.ofPlatform().start(() -> {
            try {
                while (!reached.get()) receiver.progress();
            } catch (RuntimeException e) {
                failure.set(e); // after the close, the call under way fails: that is what a forced close's call may do
            } finally {
                starting.countDown();
            }
        });
        starting.await();
        assertThat(reached).as("progress reached the start of the ring's mapping (it failed with %s)", failure.get()).isTrue();
        receiver.close();
        closed.countDown();
        progress.join();
        progressReturned.countDown();
        // A mapping started is done once its thread ends (a second after its last task).
        for (Thread mapper : Thread.getAllStackTraces().keySet()) {
            if (mapper.getName().equals("conduit-test-mapper")) mapper.join();
        }
        sender.close();
        assertThat(mapped).as("rings the closed receiver mapped and never unmapped").hasValue(0);
        assertThat(failure.get()).as("the call under way, past the close").isInstanceOf(IllegalStateException.class)
                .hasMessage("test transport is closed");
    }

    /**
     * A close gives the connections back where they lie in the map and never takes one out: the
     * owner's message path looks connections up unlocked, and a removal's backward shift, run by a
     * close on another thread, moves a key before its value, so that such a lookup could return the
     * entry being removed for another connection's. The close used to remove each.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aCloseGivesTheConnectionsBackWithoutTakingThemOutOfTheMap() {
        ShmTransport receiver = transport(new InProcessMemory(), new InProcessMemory());
        ShmTransport sender = transport(new InProcessMemory(), new InProcessMemory());
        for (int i = 0; i < 3; i++) {
            ShmEndpoint endpoint = (ShmEndpoint) sender.connect(new PayloadReader(receiver.address()), cause -> { });
            assertThat(endpoint.trySend(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[8]))).as("message %d sent", i).isTrue();
        }
        for (int i = 0; i < 1000 && receiver.connectionsInMap() < 3; i++) receiver.progress();
        assertThat(receiver.connectionsInMap()).as("connections the receiver keeps").isEqualTo(3);
        receiver.close();
        assertThat(receiver.connectionsInMap()).as("connections left where they lie by the close").isEqualTo(3);
    }

    private static ChunkMapping counted(ChunkMapping mapping, AtomicInteger mapped) {
        mapped.incrementAndGet();
        AtomicBoolean unmapped = new AtomicBoolean();
        return new ChunkMapping() {
            @Override
            public MemorySegment segment() {
                return mapping.segment();
            }

            @Override
            public boolean mayFault() {
                return mapping.mayFault();
            }

            @Override
            public void close() {
                if (unmapped.compareAndSet(false, true)) mapped.decrementAndGet();
                mapping.close();
            }
        };
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true; // the close interrupts the ring mapper: the mapping is still made, as an importer may
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /** A transport of plugin "test": 64 KiB queue and bounce ring, 8 KiB inline. */
    private ShmTransport transport(InProcessMemory memory, IpcImporter importer) {
        ShmTransportConfig config = new ShmTransportConfig(64 << 10, 8 << 10, 64 << 10, Duration.ofMillis(20), Duration.ofSeconds(10),
                Duration.ofMillis(50), 1024, 64L << 30);
        ShmTransport t = new ShmTransport("test", Linux.libc(), new InProcessContext(shared, (id, h, ho, hl, p, po, pl) -> { }), config,
                memory, importer);
        open.add(t);
        return t;
    }
}
