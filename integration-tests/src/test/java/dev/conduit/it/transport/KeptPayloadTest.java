package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.KeptPayload;
import dev.conduit.Worker;
import dev.conduit.it.process.OpenResources;
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
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code Message.keepPayload()} over memfd and posix, two workers in this JVM: a large payload is
 * kept where it lies in the sender's bounce ring (zero-copy), the sender's later large messages
 * wait behind it in its local queue ({@code pending()}) and arrive in order once it is closed; a
 * payload inline in the receive queue is kept as a copy; a sender that closes while a payload is
 * kept leaves it readable, and the receiver's mapping of its ring goes once it is closed. Waits are
 * counted in progress rounds, never timed.
 */
class KeptPayloadTest {

    /** Each large payload takes a third of the 64 KiB ring (and its 64-byte rounding): three fit, a fourth does not. */
    private static final int LARGE = 20 << 10;
    private static final int ROUNDS = 200_000;

    @TempDir
    Path shared;

    private Conduit conduit(String plugin) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties()).sharedDirectory(shared).transports(plugin)
                .set(plugin + ".bounce.size", "64k").set(plugin + ".liveness.interval", "1ms").build();
    }

    private static MemorySegment payload(Arena arena, int length, long seed) {
        MemorySegment s = arena.allocate(length);
        for (int i = 0; i < length; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (seed * 31 + i));
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, seed);
        return s;
    }

    private static void progressUntil(BooleanSupplier done, Worker... workers) {
        for (int round = 0; !done.getAsBoolean(); round++) {
            assertThat(round).as("progress rounds").isLessThan(ROUNDS);
            int events = 0;
            for (Worker w : workers) events += w.progress();
            if (events == 0) LockSupport.parkNanos(20_000);
        }
    }

    private static void progressRounds(int rounds, Worker... workers) {
        for (int round = 0; round < rounds; round++) {
            for (Worker w : workers) w.progress();
            LockSupport.parkNanos(20_000);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memfd", "posix"})
    void aKeptLargePayloadHoldsTheSendersLaterLargeMessagesInOrderUntilClosedFromAnotherThread(String plugin) throws Exception {
        try (Conduit conduit = conduit(plugin); Arena arena = Arena.ofConfined()) {
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint endpoint = sender.connect(receiver.address());
            List<Long> received = new ArrayList<>();
            List<KeptPayload> kept = new ArrayList<>();
            List<Boolean> inPlace = new ArrayList<>();
            receiver.onMessage(1, m -> {
                received.add(m.payloadLong(0));
                if (kept.isEmpty()) {
                    KeptPayload k = m.keepPayload();
                    inPlace.add(k.segment().address() == m.payload().address());
                    kept.add(k);
                }
            });
            MemorySegment first = payload(arena, LARGE, 0);
            endpoint.send(1, first);
            progressUntil(() -> received.size() == 1, sender, receiver);
            assertThat(inPlace).as("kept where it lies in the sender's bounce ring").containsExactly(true);

            for (long i = 1; i <= 4; i++) endpoint.send(1, payload(arena, LARGE, i));
            progressUntil(() -> received.size() == 3, sender, receiver);
            // Rounds enough for many liveness checks (1 ms): the waiting sender must not take the kept payload for a ring
            // the receiver could not map, and fail its endpoint.
            progressRounds(2_000, sender, receiver);
            assertThat(endpoint.failure()).as("the sender's endpoint, waiting for room in its ring").isNull();
            assertThat(received).as("the two that fit beside the kept one").containsExactly(0L, 1L, 2L);
            assertThat(endpoint.pending()).as("queued by the sender's runtime while the ring has no room").isEqualTo(2);
            assertThat(kept.getFirst().segment().mismatch(first)).as("the kept payload, intact").isEqualTo(-1);

            Thread closer = new Thread(kept.getFirst()::close, "closer");
            closer.start();
            closer.join();
            progressUntil(() -> received.size() == 5, sender, receiver);
            assertThat(received).containsExactly(0L, 1L, 2L, 3L, 4L);
            assertThat(endpoint.pending()).isZero();
            kept.getFirst().close(); // again: nothing
            assertThat(endpoint.isFailed()).isFalse();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memfd", "posix"})
    void aKeptInlinePayloadIsACopyThatOutlivesTheHandler(String plugin) {
        try (Conduit conduit = conduit(plugin); Arena arena = Arena.ofConfined()) {
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint endpoint = sender.connect(receiver.address());
            List<KeptPayload> kept = new ArrayList<>();
            List<Boolean> inPlace = new ArrayList<>();
            receiver.onMessage(2, m -> {
                if (kept.isEmpty()) {
                    KeptPayload k = m.keepPayload();
                    inPlace.add(k.segment().address() == m.payload().address());
                    kept.add(k);
                }
            });
            MemorySegment small = payload(arena, 100, 7);
            endpoint.send(2, small);
            progressUntil(() -> kept.size() == 1, sender, receiver);
            // Later messages reuse the queue's records the first one lay in.
            for (int i = 0; i < 2_000; i++) endpoint.send(2, payload(arena, 100, 8));
            progressUntil(() -> endpoint.pending() == 0, sender, receiver);
            progressRounds(10, sender, receiver);

            assertThat(inPlace).as("a copy: the queue's record is released in order").containsExactly(false);
            assertThat(kept.getFirst().segment().mismatch(small)).isEqualTo(-1);
            kept.getFirst().close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memfd", "posix"})
    void aSenderThatClosesWhileAPayloadIsKeptLeavesItReadableAndItsRingMappedUntilItIsClosed(String plugin) {
        try (Conduit conduit = conduit(plugin); Arena arena = Arena.ofConfined()) {
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            long receiverAlone = OpenResources.ofThisProcess().conduitMappings();
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint endpoint = sender.connect(receiver.address());
            List<KeptPayload> kept = new ArrayList<>();
            List<Long> small = new ArrayList<>();
            receiver.onMessage(1, m -> kept.add(m.keepPayload()));
            receiver.onMessage(2, m -> small.add(m.payloadLong(0)));
            MemorySegment large = payload(arena, LARGE, 3);
            endpoint.send(1, large);
            progressUntil(() -> kept.size() == 1, sender, receiver);

            sender.close(); // frees its ring and tells the receiver CLOSE: the receiver's reading of the payload is all it waits for
            progressRounds(2_000, receiver);
            assertThat(kept.getFirst().segment().mismatch(large)).as("still readable, intact").isEqualTo(-1);
            assertThat(OpenResources.ofThisProcess().conduitMappings()).as("the receiver's mapping of the closed sender's ring")
                    .isEqualTo(receiverAlone + 1);

            kept.getFirst().close();
            // The next progress() hands the unmap to the transport's mapping thread, which unmaps it meanwhile.
            progressUntil(() -> OpenResources.ofThisProcess().conduitMappings() <= receiverAlone, receiver);
            assertThat(OpenResources.ofThisProcess().conduitMappings()).as("once the kept payload is closed").isEqualTo(receiverAlone);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memfd", "posix"})
    void closingTheReceiverInvalidatesItsKeptPayloadsAndUnmapsTheRingsTheyHeld(String plugin) {
        try (Conduit conduit = conduit(plugin); Arena arena = Arena.ofConfined()) {
            long none = OpenResources.ofThisProcess().conduitMappings();
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint endpoint = sender.connect(receiver.address());
            List<KeptPayload> kept = new ArrayList<>();
            List<Boolean> inPlace = new ArrayList<>();
            receiver.onMessage(1, m -> {
                KeptPayload k = m.keepPayload();
                inPlace.add(k.segment().address() == m.payload().address());
                kept.add(k);
            });
            endpoint.send(1, payload(arena, LARGE, 5));
            progressUntil(() -> kept.size() == 1, sender, receiver);
            assertThat(inPlace).as("kept in the sender's bounce ring").containsExactly(true);
            MemorySegment view = kept.getFirst().segment();
            sender.close();
            progressRounds(2_000, receiver); // the sender's CLOSE read: the ring is the kept payload's alone

            receiver.close();
            assertThat(OpenResources.ofThisProcess().conduitMappings()).as("mappings once both workers closed").isEqualTo(none);
            assertThatThrownBy(kept.getFirst()::segment).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> view.get(ValueLayout.JAVA_BYTE, 0)).as("a view of the unmapped ring")
                    .isInstanceOf(IllegalStateException.class);
            kept.getFirst().close(); // after the worker's close: nothing
        }
    }
}
