package dev.conduit.plugin.verbs;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The verbs transport allocates nothing per call in steady state on a message's path, as the
 * shared-memory transports do ({@code SteadyStateAllocationOverShmTest}, docs/performance.md): an
 * idle {@code progress()} of both ends of a connection, a send of 64 bytes and its delivery,
 * {@code await} with a message ready, {@code put} and {@code get} of 64 bytes and
 * {@code fetchAdd}; two transports in this JVM over {@link LoopbackVerbs}. Counts the bytes this
 * thread allocates (com.sun.management.ThreadMXBean), never time, less what the simulation's own
 * polls and posts allocate ({@link LoopbackVerbs#accountAllocationOf}: its completions and posted
 * receives are objects, a device's are not). What {@link FfmVerbs}' calls into a provider
 * allocate is not measured here.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class SteadyStateAllocationOverVerbsTest {

    private static final int CALLS = 20_000;
    /** How long a path may take to be compiled allocation-free: a hang guard for a path that always allocates, as in api's ThreadAllocation. */
    private static final long COMPILE_GUARD_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final LoopbackVerbs verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);
    private final List<AutoCloseable> closing = new ArrayList<>();
    private long delivered;
    private long sum;

    /** Counts what it is given, and keeps nothing: TestWorker's sink copies every message. */
    private final MessageSink sink = new MessageSink() {
        @Override
        public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl) {
            delivered++;
            sum += pb.get(ValueLayout.JAVA_BYTE, po + pl - 1);
        }
    };

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
        assertThat(verbs.openObjects()).as("queue pairs, regions, queues and channels left open").isZero();
    }

    private VerbsTransport transport(VerbsPlugin plugin) {
        VerbsTransport t = (VerbsTransport) plugin.openTransport(
                TestContext.of("verbs.wireup.address", "127.0.0.1").forTransport(ThreadMode.SINGLE, sink));
        closing.add(t);
        return t;
    }

    private static TransportEndpoint connected(VerbsTransport from, VerbsTransport to) {
        byte[] address = to.address();
        TransportEndpoint e = from.connect(new PayloadReader(address, 0, address.length, "address.verbs."), failure -> {
            throw new AssertionError("the connection failed", failure);
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20); // a hang guard
        while (((VerbsEndpoint) e).isConnecting() || to.inbounds().isEmpty()) {
            from.progress();
            to.progress();
            assertThat(System.nanoTime() - deadline).as("still connecting").isNegative();
        }
        return e;
    }

    /**
     * What {@link #CALLS} calls of {@code call} allocate once compiled, less the simulation's share: rounds until one
     * allocates less than a byte a call, at least three, for at most {@link #COMPILE_GUARD_NANOS}.
     */
    private long allocated(IntConsumer call) {
        long deadline = System.nanoTime() + COMPILE_GUARD_NANOS;
        long allocated;
        int rounds = 0;
        do {
            verbs.accountAllocationOf(Thread.currentThread());
            long before = LoopbackVerbs.threadAllocatedBytes();
            for (int i = 0; i < CALLS; i++) call.accept(i);
            allocated = LoopbackVerbs.threadAllocatedBytes() - before - verbs.simulationBytes();
            verbs.accountAllocationOf(null);
            rounds++;
        } while (rounds < 3 || allocated >= CALLS && System.nanoTime() - deadline < 0);
        return allocated;
    }

    private void assertAllocatesNothing(String what, IntConsumer call) {
        assertThat(allocated(call)).as("bytes allocated by %d calls of %s, less the simulation's", CALLS, what).isLessThan(CALLS);
    }

    @Test
    void idleProgressSendingDeliveringAwaitingAndRmaAllocateNothingPerCall() {
        VerbsPlugin plugin = new VerbsPlugin(library -> verbs);
        VerbsTransport sender = transport(plugin);
        VerbsTransport receiver = transport(plugin);
        TransportEndpoint endpoint = connected(sender, receiver);
        MemoryProvider memory = plugin.openMemoryProvider(TestContext.of());
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment payload = arena.allocate(64);
            MemorySegment source = arena.allocate(64);
            MemorySegment destination = arena.allocate(64);
            long awaitNanos = TimeUnit.SECONDS.toNanos(1);

            assertAllocatesNothing("an idle progress() of both ends", i -> sum += sender.progress() + receiver.progress());
            long before = delivered;
            assertAllocatesNothing("send and delivery of 64 B", i -> {
                while (!endpoint.trySend(1, payload, 0, 0, payload, 0, 64)) {
                    sender.progress();
                    receiver.progress();
                }
                receiver.progress();
                sender.progress();
            });
            assertThat(delivered - before).as("messages delivered").isGreaterThanOrEqualTo(3L * CALLS);
            assertAllocatesNothing("await with a message ready", i -> {
                while (!endpoint.trySend(1, payload, 0, 0, payload, 0, 64)) {
                    sender.progress();
                    receiver.progress();
                }
                if (receiver.await(awaitNanos)) {
                    sum++;
                }
                receiver.progress();
                sender.progress();
            });
            assertAllocatesNothing("an idle await(0) of both ends", i -> {
                if (sender.await(0) | receiver.await(0)) {
                    sum++;
                }
            });
            assertAllocatesNothing("signal() and the await it ends", i -> {
                receiver.signal();
                if (receiver.await(awaitNanos)) {
                    sum++;
                }
            });
            assertAllocatesNothing("put of 64 B", i -> endpoint.put(source, region, 0));
            assertAllocatesNothing("get of 64 B", i -> endpoint.get(region, 0, destination));
            assertAllocatesNothing("fetchAdd", i -> sum += endpoint.fetchAdd(region, 64, 1));
            assertThat(chunk.segment().get(ValueLayout.JAVA_LONG, 64)).as("the fetch-adds, in the exporter's memory").isGreaterThanOrEqualTo(3L * CALLS);
            endpoint.flush();
        }
        memory.free(chunk);
    }
}
