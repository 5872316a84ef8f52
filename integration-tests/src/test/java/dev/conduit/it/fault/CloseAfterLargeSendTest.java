package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A sender that closes at once after sending large messages (which travel in its bounce ring,
 * freed at close): every message still arrives, intact, and the receiver's {@code progress()}
 * throws nothing. Found by {@link RandomKillTest}: the ring used to be freed before the receiver
 * had mapped it, losing the messages and failing the receiver's progress with "export gone" or
 * "large message before its bounce ring was announced".
 */
class CloseAfterLargeSendTest {

    private static final int ROUNDS = 50;
    private static final int LARGE = 64 << 10;

    @TempDir
    Path shared;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "memfd"})
    void largeMessagesSentJustBeforeCloseArriveIntact(String plugin) throws Exception {
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build()) {
            List<Long> received = new ArrayList<>();
            AtomicBoolean stop = new AtomicBoolean();
            Worker receiver = conduit.newWorker(ThreadMode.SERIALIZED);
            receiver.onMessage(1, m -> {
                assertThat(m.payloadSize()).isEqualTo(LARGE);
                received.add(m.payloadLong(0) + m.payloadLong(LARGE - 8));
            });
            dev.conduit.WorkerAddress address = receiver.address();
            // The receiver progresses on a thread of its own; any exception of progress() fails the test.
            CompletableFuture<Void> receiving = CompletableFuture.runAsync(() -> {
                while (!stop.get()) receiver.progress();
            });
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment payload = arena.allocate(LARGE);
                for (long round = 0; round < ROUNDS; round++) {
                    try (Worker sender = conduit.newWorker(ThreadMode.SINGLE);
                         Endpoint endpoint = sender.connect(address)) {
                        payload.set(ValueLayout.JAVA_LONG, 0, round);
                        payload.set(ValueLayout.JAVA_LONG, LARGE - 8, round);
                        endpoint.send(1, payload);
                    }
                }
                long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (size(received) < ROUNDS && !receiving.isDone() && System.nanoTime() < guard) Thread.sleep(1);
            } finally {
                stop.set(true);
            }
            receiving.get(60, TimeUnit.SECONDS); // rethrows what progress() threw
            List<Long> expected = new ArrayList<>();
            for (long round = 0; round < ROUNDS; round++) expected.add(2 * round);
            synchronized (received) {
                assertThat(received).isEqualTo(expected);
            }
            receiver.close();
        }
    }

    private static int size(List<Long> list) {
        synchronized (list) {
            return list.size();
        }
    }
}
