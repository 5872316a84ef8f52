package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

import static dev.conduit.internal.worker.Loopbacks.longs;
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
     * A transport's blocking call ({@code PluginContext.blockingCall}, through the context the
     * runtime gave it) made inside a virtual thread's {@code connect} runs on a platform thread of
     * the runtime's and gives its result back; a platform thread's is made by that thread. Fails
     * if the worker's transport context does not pass the call on to the runtime (the SPI's default
     * then made it on the virtual thread).
     */
    @Test
    void aTransportsBlockingCallInAVirtualThreadsConnectIsMadeOnAPlatformThread() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Conduit conduit = loopbacks.conduit(plugin);
        List<Thread> makers = new java.util.concurrent.CopyOnWriteArrayList<>();
        plugin.whileConnecting = () -> makers.add(plugin.transports.getLast().context.blockingCall(Thread::currentThread));
        Thread caller = onVirtualThread(() -> {
            try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                assertThat(worker.connect(worker.address()).isFailed()).isFalse();
                return Thread.currentThread();
            }
        });
        assertThat(makers).hasSize(1);
        assertThat(makers.getFirst()).as("the blocking call of " + caller).isNotSameAs(caller);
        assertThat(makers.getFirst().isVirtual()).isFalse();
        assertThat(makers.getFirst().getName()).startsWith("conduit-await-");

        try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            worker.connect(worker.address());
            assertThat(makers.getLast()).as("a platform thread's blocking call").isSameAs(Thread.currentThread());
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
        plugin.transport().awaitSleeper();
        t.interrupt();
        boolean[] o = outcome.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(o[0]).as("await returned true").isTrue();
        assertThat(o[1]).as("the interrupt status is kept").isTrue();
    }
    /** The carrier a virtual thread is mounted on now, as its toString says ("VirtualThread[#27]/runnable@ForkJoinPool-1-worker-2"). */
    private static String carrier() {
        String s = Thread.currentThread().toString();
        return s.substring(s.indexOf('@') + 1);
    }

    /**
     * A {@code SINGLE} worker made on a virtual thread belongs to that virtual thread, not to the
     * carrier it was mounted on: 200 rounds of send and progress, with a park between each that may
     * move it to another carrier, all pass; a call from another virtual thread throws
     * {@code WrongThreadException}, which names both threads by id (they have no names: a message
     * said "belongs to thread '', which created it; called from thread ''" before).
     */
    @Test
    void aSingleWorkerMadeOnAVirtualThreadBelongsToItWhicheverItsCarrier() throws Exception {
        Conduit conduit = loopbacks.conduit(new LoopbackPlugin("lo", 64, false));
        CompletableFuture<Worker> made = new CompletableFuture<>();
        CompletableFuture<Void> done = new CompletableFuture<>();
        Set<String> carriers = new HashSet<>();
        long[] delivered = {0};
        Thread owner = Thread.ofVirtual().start(() -> {
            try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.OWNER_CHECK);
                worker.onMessage(1, m -> delivered[0]++);
                Endpoint self = worker.connect(worker.address());
                for (int i = 0; i < 200; i++) {
                    carriers.add(carrier());
                    self.send(1, longs(i));
                    Thread.sleep(0, 1000); // unmounts: the next round may run on another carrier
                    worker.progress();
                }
                made.complete(worker);
                done.get(); // keeps the worker open, and its owner alive, for the other thread's call
            } catch (Throwable e) {
                made.completeExceptionally(e);
            }
        });
        Worker worker = made.get(WAIT_SECONDS, TimeUnit.SECONDS);
        try {
            System.out.printf("[virtual threads] a SINGLE worker's owner ran on %d carrier(s): %s%n", carriers.size(), carriers);
            assertThat(delivered[0]).isEqualTo(200);
            assertThatThrownBy(() -> onVirtualThread(worker::progress))
                    .isInstanceOf(WrongThreadException.class)
                    .hasMessageContaining("belongs to thread #" + owner.threadId() + " (an unnamed virtual thread), which created it")
                    .hasMessageMatching("(?s).*called from thread #\\d+ \\(an unnamed virtual thread\\).*");
        } finally {
            done.complete(null);
        }
        assertThat(owner.join(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
    }

    /**
     * A {@code SERIALIZED} worker used from virtual threads in turn, which an application lock
     * ({@code ReentrantLock}, which parks a virtual thread that waits for it) serializes: eight
     * virtual threads, 200 rounds of send and progress each, none refused, every message delivered,
     * and the plugin never saw two calls at once.
     */
    @Test
    void aSerializedWorkerTakesVirtualThreadsInTurn() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 4096, false);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.SERIALIZED);
        Endpoint self = worker.connect(worker.address());
        AtomicLong delivered = new AtomicLong();
        worker.onMessage(1, m -> delivered.incrementAndGet());
        ReentrantLock inTurn = new ReentrantLock();
        int threads = 8;
        int rounds = 200;
        try (ExecutorService service = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                calls.add(service.submit(() -> {
                    for (int i = 0; i < rounds; i++) {
                        inTurn.lock();
                        try {
                            self.send(1, longs(i));
                            worker.progress();
                        } finally {
                            inTurn.unlock();
                        }
                        Thread.yield();
                    }
                    return null;
                }));
            }
            for (Future<?> f : calls) f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }
        Loopbacks.progressUntil(() -> delivered.get() == (long) threads * rounds, worker);
        assertThat(plugin.transport().overlaps).hasValue(0);
    }

    /**
     * A plugin that declares only {@code SINGLE}, confined to a runtime-owned thread
     * ({@code thread.confine=true}), serves a {@code MULTI} worker called from many virtual threads:
     * each call waits for the plugin's thread parked (a virtual thread leaves its carrier), every
     * message is delivered, the plugin never sees two calls at once, and a virtual thread's await
     * sleeps in the plugin on the plugin's thread.
     */
    @Test
    void aConfinedPluginServesVirtualThreads() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 4096, false).singleOnly();
        Worker worker = loopbacks.conduit(b -> b.threadConfinement(true), plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);
        Endpoint self = worker.connect(worker.address());
        AtomicLong delivered = new AtomicLong();
        worker.onMessage(1, m -> delivered.incrementAndGet());
        int threads = 16;
        int rounds = 50;
        try (ExecutorService service = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                calls.add(service.submit(() -> {
                    for (int i = 0; i < rounds; i++) {
                        self.send(1, longs(i));
                        worker.progress();
                    }
                    return null;
                }));
            }
            for (Future<?> f : calls) f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }
        Loopbacks.progressUntil(() -> delivered.get() == (long) threads * rounds, worker);
        assertThat(plugin.transport().overlaps).hasValue(0);
        onVirtualThread(() -> {
            worker.signal();
            return worker.await(Duration.ofSeconds(WAIT_SECONDS));
        });
        assertThat(plugin.transport().awaitThreads.getLast().getName()).contains("conduit-confined-lo");
    }

    /**
     * A {@code MULTI} worker whose plugins all declare {@code MULTI} ({@code PASS_THROUGH}) keeps a
     * delivery context per thread that progresses, awaits or encodes a send on it: a fresh virtual
     * thread per request makes one each. It dies with the thread, as any thread-local: 2 000 fresh
     * virtual threads encode a send each while a platform thread progresses, every message arrives,
     * and the context of one that ended is collected (it would leak if anything but the thread held it).
     */
    @Test
    void aPassThroughWorkersDeliveryContextOfAVirtualThreadDiesWithIt() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 4096, true);
        RuntimeWorker worker = (RuntimeWorker) loopbacks.conduit(plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Endpoint self = worker.connect(worker.address());
        AtomicLong delivered = new AtomicLong();
        worker.onMessage(1, m -> delivered.incrementAndGet());
        int requests = 2_000;
        List<WeakReference<Object>> contexts = new ArrayList<>();
        try (ExecutorService service = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int r = 0; r < requests; r++) {
                calls.add(service.submit(() -> {
                    self.send(1, java.lang.foreign.MemorySegment.NULL, 8, (dev.conduit.spi.PayloadEncoder.Ranged) (memory, offset, max) -> {
                        memory.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, offset, 42L);
                        return 8;
                    });
                    synchronized (contexts) {
                        if (contexts.isEmpty()) contexts.add(new WeakReference<>(worker.delivery()));
                    }
                    return null;
                }));
                worker.progress();
            }
            for (Future<?> f : calls) f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }
        Loopbacks.progressUntil(() -> delivered.get() == requests, worker);
        // What a fresh thread's first encoded send costs beyond the next one: its context. Measured on a platform thread,
        // as the JDK counts no allocation of a virtual thread (getCurrentThreadAllocatedBytes is -1 there); the code is the same.
        for (int round = 0; round < 3; round++) {
            long[] bytes = new long[2];
            Thread t = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 2; i++) {
                    long before = dev.conduit.internal.ThreadAllocation.allocatedBytes();
                    self.send(1, java.lang.foreign.MemorySegment.NULL, 8, (dev.conduit.spi.PayloadEncoder.Ranged) (memory, offset, max) -> 8);
                    bytes[i] = dev.conduit.internal.ThreadAllocation.allocatedBytes() - before;
                }
            });
            t.join();
            worker.progress();
            System.out.printf("[virtual threads] PASS_THROUGH: a fresh thread's first encoded send allocated %d bytes, its second %d%n",
                    bytes[0], bytes[1]);
        }
        WeakReference<Object> first = contexts.getFirst();
        for (int i = 0; i < 100 && first.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertThat(first.get()).as("the delivery context of a virtual thread that ended").isNull();
    }
}
