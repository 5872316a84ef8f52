package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.PeerRegion;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The calls a trading loop makes besides plain sends allocate nothing per call in steady state over
 * memfd and posix, two workers in this JVM: RMA on a {@code PeerRegion} ({@code put}, {@code get},
 * {@code fetchAdd}, {@code compareAndSwap}, {@code flush}), an idle {@code progress()}, a
 * {@code MULTI} and a {@code SERIALIZED} worker's send and delivery, an answer through
 * {@code Message.replyEndpoint()}, {@code await} with a message ready and after a {@code signal()},
 * {@code pending()} and {@code pendingBytes()}, and {@code segment()} of a region and of an import.
 * Counts the bytes this thread allocates (com.sun.management.ThreadMXBean), never time.
 * {@code exporterState()} and {@code keepPayload()} allocate, as docs/performance.md says.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class SteadyStateAllocationOverShmTest {

    private static final int CALLS = 20_000;
    /**
     * How long a path may take to be compiled allocation-free: a hang guard for a path that always allocates, not a speed
     * check. A time, not a count of rounds, as api's ThreadAllocation has it: a loaded machine's compiler threads may reach
     * the path's methods late (C2's escape analysis is what makes its views vanish).
     */
    private static final long COMPILE_GUARD_NANOS = TimeUnit.MINUTES.toNanos(1);

    @TempDir
    Path shared;

    private final long[] sum = new long[1];

    private Conduit conduit(String plugin) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties()).sharedDirectory(shared).transports(plugin).build();
    }

    private static long allocatedBytes() {
        // Reflection: this module does not read java.management, and core reflection needs no read edge.
        try {
            Object bean = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
            return (Long) Class.forName("com.sun.management.ThreadMXBean").getMethod("getCurrentThreadAllocatedBytes").invoke(bean);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("cannot read this thread's allocated bytes", e);
        }
    }

    /**
     * What {@link #CALLS} calls of {@code call} allocate once compiled: rounds until one allocates less than a byte a call,
     * at least three, for at most {@link #COMPILE_GUARD_NANOS}.
     */
    private static long allocated(IntConsumer call) {
        long deadline = System.nanoTime() + COMPILE_GUARD_NANOS;
        long allocated;
        int rounds = 0;
        do {
            long before = allocatedBytes();
            for (int i = 0; i < CALLS; i++) call.accept(i);
            allocated = allocatedBytes() - before;
            rounds++;
        } while (rounds < 3 || allocated >= CALLS && System.nanoTime() - deadline < 0);
        return allocated;
    }

    private static void assertAllocatesNothing(String what, IntConsumer call) {
        assertThat(allocated(call)).as("bytes allocated by %d calls of %s", CALLS, what).isLessThan(CALLS);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memfd", "posix"})
    void rmaIdleProgressPendingAndSegmentsAllocateNothingPerCall(String plugin) {
        try (Conduit conduit = conduit(plugin); Arena arena = Arena.ofConfined()) {
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint endpoint = sender.connect(receiver.address());
            Region region = conduit.pool(plugin).allocate(4096);
            PeerRegion peer = endpoint.peerRegion(region.exportHandle());
            ImportedRegion imported = conduit.importRegion(region.exportHandle());
            MemorySegment source = arena.allocate(64);
            MemorySegment destination = arena.allocate(64);

            assertAllocatesNothing("put", i -> endpoint.put(source, peer, 0));
            assertAllocatesNothing("get", i -> endpoint.get(peer, 0, destination));
            assertAllocatesNothing("fetchAdd", i -> sum[0] += endpoint.fetchAdd(peer, 64, 1));
            assertAllocatesNothing("compareAndSwap", i -> sum[0] += endpoint.compareAndSwap(peer, 128, i, i + 1));
            assertAllocatesNothing("flush", i -> endpoint.flush());
            assertAllocatesNothing("an idle progress()", i -> sum[0] += receiver.progress() + sender.progress());
            assertAllocatesNothing("pending() and pendingBytes()", i -> sum[0] += endpoint.pending() + endpoint.pendingBytes());
            assertAllocatesNothing("segment()", i -> sum[0] += region.segment().byteSize() + imported.segment().byteSize());
            assertThat(region.segment().get(ValueLayout.JAVA_LONG, 64)).as("the fetch-adds, in the exporter's memory").isGreaterThanOrEqualTo(3L * CALLS);
            imported.close();
            peer.close();
            region.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memfd", "posix"})
    void sendingAnsweringAndAwaitingAllocateNothingPerMessageInEveryThreadMode(String plugin) {
        for (ThreadMode mode : ThreadMode.values()) {
            try (Conduit conduit = conduit(plugin); Arena arena = Arena.ofConfined()) {
                Worker receiver = conduit.newWorker(mode);
                Worker sender = conduit.newWorker(mode);
                Endpoint endpoint = sender.connect(receiver.address());
                MemorySegment payload = arena.allocate(64);
                long[] answered = new long[1];
                receiver.onMessage(1, m -> sum[0] += m.payloadLong(0));
                receiver.onMessage(2, m -> m.replyEndpoint().send(3, payload));
                sender.onMessage(3, m -> answered[0]++);
                Duration timeout = Duration.ofSeconds(1);

                assertAllocatesNothing(mode + " send and delivery", i -> {
                    endpoint.send(1, payload);
                    sender.progress();
                    receiver.progress();
                });
                long before = answered[0];
                assertAllocatesNothing(mode + " request and answer through replyEndpoint()", i -> {
                    endpoint.send(2, payload);
                    receiver.progress();
                    sender.progress();
                });
                assertThat(answered[0] - before).as("answers").isGreaterThanOrEqualTo(3L * CALLS);
                assertAllocatesNothing(mode + " await with a message ready", i -> {
                    endpoint.send(1, payload);
                    receiver.await(timeout);
                    receiver.progress();
                });
                assertAllocatesNothing(mode + " signal() and the await it ends", i -> {
                    receiver.signal();
                    receiver.await(timeout);
                });
            }
        }
    }
}
