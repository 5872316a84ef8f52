package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Workers used from virtual threads, as a Java 25 service that handles each request on one
 * (docs/runtime.md, "Virtual threads"). Waits are bounded only as hang guards; nothing is timed.
 */
class VirtualThreadWorkersTest {

    private static final long WAIT_SECONDS = 30;

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    private static <T> T onVirtualThread(Callable<T> call) throws Exception {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                result.complete(call.call());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        try {
            return result.get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception ex) throw ex;
            throw e;
        }
    }

    /**
     * A virtual thread's await sleeps in its transport on a platform thread of the runtime's
     * ({@code conduit-await-…}): a transport's sleep is a native call, which would pin the virtual
     * thread's carrier. A platform thread sleeps itself, as before. Fails without the hand-off (the
     * transport's await ran on the virtual thread).
     */
    @Test
    void aVirtualThreadsAwaitSleepsInTheTransportOnAPlatformThread() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Conduit conduit = loopbacks.conduit(plugin);
        Thread sleeper = onVirtualThread(() -> {
            try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                worker.signal();
                assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).as("a signalled await").isTrue();
                assertThat(worker.await(Duration.ofMillis(1))).as("an await that ran out").isFalse();
                return plugin.transport().awaitThreads.getLast();
            }
        });
        assertThat(sleeper.isVirtual()).as("the transport's await ran on " + sleeper).isFalse();
        assertThat(sleeper.getName()).startsWith("conduit-await-");

        try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            worker.await(Duration.ofMillis(1));
            assertThat(plugin.transports.getLast().awaitThreads).as("a platform thread sleeps itself").containsOnly(Thread.currentThread());
        }
    }

    /**
     * A plugin that declares only {@code SINGLE} may hold what only its creating thread can touch (a
     * confined arena): its await is made on the virtual thread itself, as before, which stays pinned
     * while it sleeps (docs/runtime.md says so and what to do).
     */
    @Test
    void aSingleOnlyPluginsAwaitIsMadeOnTheVirtualThreadItself() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false).singleOnly();
        Conduit conduit = loopbacks.conduit(plugin);
        Thread[] threads = onVirtualThread(() -> {
            try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                worker.await(Duration.ofMillis(1));
                return new Thread[] {Thread.currentThread(), plugin.transport().awaitThreads.getLast()};
            }
        });
        assertThat(threads[1]).isSameAs(threads[0]);
    }

    /**
     * An interrupt of a virtual thread whose sleep was handed off ends its await at once, {@code true},
     * the interrupt status kept, as on a platform thread (AwaitInterruptTest): the transport here,
     * as a futex wait, does not see interrupts; the worker's signal, which the interrupt sends, wakes it.
     */
    @Test
    void anInterruptEndsAVirtualThreadsHandedOffAwait() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Conduit conduit = loopbacks.conduit(plugin);
        CompletableFuture<boolean[]> outcome = new CompletableFuture<>();
        CompletableFuture<Worker> made = new CompletableFuture<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                plugin.transport().awaitDeafToInterrupts = true;
                made.complete(worker);
                boolean woke = worker.await(Duration.ofMinutes(5));
                outcome.complete(new boolean[] {woke, Thread.interrupted()});
            } catch (Throwable e) {
                outcome.completeExceptionally(e);
            }
        });
        made.get(WAIT_SECONDS, TimeUnit.SECONDS);
        LoopbackPlugin.LoopbackTransport transport = plugin.transport();
        long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!transport.waiting) {
            assertThat(System.nanoTime() - guard).as("the transport asleep within the hang guard").isNegative();
            Thread.sleep(1);
        }
        t.interrupt();
        boolean[] o = outcome.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(o[0]).as("await returned true").isTrue();
        assertThat(o[1]).as("the interrupt status is kept").isTrue();
    }
}
