package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConcurrentUseException;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.HangGuard;
import dev.conduit.testing.InterruptRefusingThread;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static dev.conduit.internal.worker.Loopbacks.longs;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Endpoints obey their worker's thread mode, handlers run on the progress thread, and await sleeps
 * until a signal or a message. Waits are bounded only so that a regression fails instead of
 * hanging; no assertion depends on timing.
 */
class EndpointThreadingTest {

    private static final long WAIT_SECONDS = 60;

    private final Loopbacks loopbacks = new Loopbacks();
    private final ExecutorService threads = Executors.newCachedThreadPool(Thread.ofPlatform().name("test-thread-", 0).daemon().factory());

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        loopbacks.close();
    }

    private <T> T onAnotherThread(Callable<T> call) throws Exception {
        try {
            return threads.submit(call).get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception ex) throw ex;
            throw e;
        }
    }

    /** A plugin's hook that, the first time it runs, closes {@code target} on another thread and waits for that close. */
    private Runnable closingOnAnotherThreadOnce(AutoCloseable target) {
        AtomicBoolean ran = new AtomicBoolean();
        return () -> {
            if (!ran.compareAndSet(false, true)) return;
            try {
                onAnotherThread(() -> {
                    target.close();
                    return null;
                });
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        };
    }

    private static void await(CountDownLatch latch) throws InterruptedException {
        assertThat(latch.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("latch released").isTrue();
    }

    // ------------------------------------------------------------------ thread modes

    /**
     * Two MULTI workers under the runtime lock, each progressed by its own thread, whose handlers
     * send on each other's endpoints: each handler holds its worker's lock and waits for the
     * other's. One of them is told so (IllegalStateException naming the cause; its send did
     * nothing), which releases the other, whose send goes through. Both threads used to wait for
     * good, and Conduit.close() did not free them.
     */
    /**
     * Worker's javadoc: every call on its endpoints goes through the guard, but transport(),
     * maxHeaderSize() and maxPayloadSize(), which answer on any thread and after the close (the
     * javadoc said every call did, and these never had).
     */
    @Test
    void anEndpointsLimitsAndTransportAnswerOnAnyThreadAndAfterTheClose() throws Exception {
        Conduit conduit = loopbacks.conduit(new LoopbackPlugin("lo", 8, false));
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint endpoint = worker.connect(conduit.newWorker(ThreadMode.SINGLE).address());

        assertThat(onAnotherThread(() -> endpoint.transport() + " " + endpoint.maxHeaderSize() + " " + endpoint.maxPayloadSize()))
                .isEqualTo("lo " + endpoint.maxHeaderSize() + " " + endpoint.maxPayloadSize());
        assertThatThrownBy(() -> onAnotherThread(endpoint::pending)).as("a guarded call").isInstanceOf(WrongThreadException.class);
        worker.close();
        assertThat(endpoint.transport()).isEqualTo("lo");
        assertThat(endpoint.maxPayloadSize()).isPositive();
    }

    @Test
    void handlersOfTwoLockedMultiWorkersSendingOnEachOthersEndpointsDoNotDeadlock() throws Exception {
        Conduit conduit = loopbacks.conduit(new LoopbackPlugin("lo", 8, false));
        Worker one = conduit.newWorker(ThreadMode.MULTI);
        Worker two = conduit.newWorker(ThreadMode.MULTI);
        assertThat(one.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
        Endpoint oneToTwo = one.connect(two.address());
        Endpoint twoToOne = two.connect(one.address());
        CountDownLatch bothInHandlers = new CountDownLatch(2);
        AtomicInteger replies = new AtomicInteger();
        // Each handler sends on the other worker's endpoint once both are inside their handlers (each holding its lock).
        one.onMessage(1, m -> {
            bothInHandlers.countDown();
            awaitQuietly(bothInHandlers);
            twoToOne.send(2, longs(1));
        });
        two.onMessage(1, m -> {
            bothInHandlers.countDown();
            awaitQuietly(bothInHandlers);
            oneToTwo.send(2, longs(2));
        });
        one.onMessage(2, m -> replies.incrementAndGet());
        two.onMessage(2, m -> replies.incrementAndGet());
        twoToOne.send(1, longs(0));
        oneToTwo.send(1, longs(0));

        List<Future<Throwable>> progressing = new ArrayList<>();
        for (Worker w : List.of(one, two)) {
            progressing.add(threads.submit(() -> {
                try {
                    while (w.progress() == 0) Thread.onSpinWait();
                    return null;
                } catch (RuntimeException e) {
                    return e;
                }
            }));
        }
        List<Throwable> outcomes = new ArrayList<>();
        for (Future<Throwable> f : progressing) outcomes.add(f.get(WAIT_SECONDS, TimeUnit.SECONDS));

        assertThat(outcomes).filteredOn(t -> t != null).singleElement().isInstanceOf(IllegalStateException.class)
                .satisfies(t -> assertThat(t).hasMessageContaining("deadlock between MULTI workers")
                        .hasMessageContaining("send only on its own worker's endpoints"));
        for (int i = 0; i < 1_000_000 && replies.get() < 1; i++) {
            one.progress();
            two.progress();
        }
        assertThat(replies.get()).as("the send of the handler that was not refused").isEqualTo(1);
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            if (!latch.await(WAIT_SECONDS, TimeUnit.SECONDS)) throw new AssertionError("latch not released");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void aSingleWorkersEndpointRefusesEveryOtherThread() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Worker peer = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint ep = worker.connect(peer.address());
        long callsBefore = plugin.transports.getFirst().calls.get();

        List<Callable<Object>> misuses = List.of(
                () -> { ep.send(1, longs(1)); return null; },
                () -> ep.send(1, MemorySegment.NULL, 8, t -> 0),
                ep::pending,
                ep::isFailed,
                ep::failure,
                () -> ep.peerRegion(new byte[0]),
                () -> { ep.put(longs(1), null, 0); return null; },
                () -> { ep.get(null, 0, longs(0)); return null; },
                () -> ep.fetchAdd(null, 0, 1),
                () -> ep.compareAndSwap(null, 0, 0, 1),
                () -> { ep.flush(); return null; },
                () -> { ep.close(); return null; },
                () -> worker.connect(peer.address()),
                worker::address,
                () -> { worker.onMessage(1, m -> { }); return null; },
                () -> worker.await(Duration.ofMillis(1)));
        for (Callable<Object> misuse : misuses) {
            assertThatThrownBy(() -> onAnotherThread(misuse))
                    .isInstanceOf(WrongThreadException.class)
                    .hasMessageContaining("SINGLE")
                    .hasMessageContaining("test-thread-");
        }
        assertThat(plugin.transports.getFirst().calls.get()).as("no refused call reached the plugin").isEqualTo(callsBefore);
        // What only reads what the worker or the endpoint was made with, or a counter, and signal: any thread.
        onAnotherThread(() -> { worker.signal(); return null; });
        assertThat(onAnotherThread(() -> List.of(worker.threadMode(), worker.threadPolicy(), worker.unhandledMessages(),
                ep.transport(), ep.maxHeaderSize(), ep.maxPayloadSize())))
                .isEqualTo(List.of(ThreadMode.SINGLE, ThreadPolicy.OWNER_CHECK, 0L, "lo", ep.maxHeaderSize(), ep.maxPayloadSize()));

        ep.send(1, longs(1));
        assertThat(ep.pending()).isZero();
    }

    @Test
    void aSerializedWorkersEndpointDetectsAnOverlapWithProgress() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SERIALIZED);
        Endpoint self = worker.connect(worker.address());
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        worker.onMessage(1, m -> {
            inside.countDown();
            try {
                release.await(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        self.send(1, longs(1));
        Future<Integer> progressing = threads.submit(worker::progress);
        await(inside);
        try {
            assertThatThrownBy(() -> self.send(1, longs(2))).isInstanceOf(ConcurrentUseException.class);
            assertThatThrownBy(self::pending).isInstanceOf(ConcurrentUseException.class);
        } finally {
            release.countDown();
        }
        assertThat(progressing.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(self.pending()).isZero();
    }

    /** Sends {@code perThread} messages from each of {@code senders} threads while this thread progresses; checks per-sender order. */
    private void hammer(Worker worker, Endpoint endpoint, int senders, int perThread) throws Exception {
        int total = senders * perThread;
        long[] next = new long[senders];
        AtomicReference<String> problem = new AtomicReference<>();
        AtomicInteger received = new AtomicInteger();
        worker.onMessage(1, m -> {
            int sender = (int) m.payloadLong(0);
            long seq = m.payloadLong(8);
            if (seq != next[sender] && problem.get() == null) problem.set("sender " + sender + ": " + seq + " arrived when " + next[sender] + " was due");
            next[sender] = seq + 1;
            received.incrementAndGet();
        });
        CyclicBarrier start = new CyclicBarrier(senders);
        List<Future<?>> sending = new ArrayList<>();
        for (int s = 0; s < senders; s++) {
            int sender = s;
            sending.add(threads.submit(() -> {
                start.await();
                MemorySegment payload = MemorySegment.ofArray(new byte[16 + sender * 8]);
                for (long i = 0; i < perThread; i++) {
                    payload.set(Loopbacks.LE_LONG, 0, sender);
                    payload.set(Loopbacks.LE_LONG, 8, i);
                    endpoint.send(1, payload);
                }
                return null;
            }));
        }
        Future<?> progressing = threads.submit(() -> {
            Loopbacks.progressUntil(() -> received.get() >= total, worker);
            return null;
        });
        for (Future<?> f : sending) f.get(WAIT_SECONDS * 2, TimeUnit.SECONDS);
        progressing.get(WAIT_SECONDS * 2, TimeUnit.SECONDS);
        worker.progress();
        assertThat(problem.get()).isNull();
        assertThat(received.get()).as("each message exactly once").isEqualTo(total);
        for (int s = 0; s < senders; s++) assertThat(next[s]).isEqualTo(perThread);
        assertThat(endpoint.pending()).isZero();
    }

    @Test
    void aMultiWorkerOverASerializedPluginNeverLetsTwoThreadsIntoThePlugin() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 32, false);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
        Endpoint self = worker.connect(worker.address());
        hammer(worker, self, 4, 25_000);
        LoopbackPlugin.LoopbackTransport t = plugin.transport();
        assertThat(t.overlaps).as("calls that found another thread inside the plugin").hasValue(0);
        assertThat(t.calls.get()).isGreaterThan(100_000);
    }

    @Test
    void aMultiWorkerOverAMultiPluginKeepsEachSendersOrderWithoutAWorkerLock() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 32, true);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        hammer(worker, worker.connect(worker.address()), 4, 25_000);
    }

    /**
     * Conduit.close(): "Called from a message or error handler ... the worker running that handler
     * ... closes as the call that ran it returns". Under PASS_THROUGH another thread's call into
     * the worker, made while the handler still runs, must not close it under the handler, whose
     * transport's progress is on the stack and whose later calls on its worker are still allowed.
     * Until 2026-12-07 the outermost call of any thread closed it: its own delivery context said
     * no handler ran, and the handler's next call threw "worker is closed".
     */
    @Test
    void aHandlerThatClosesTheConduitOfAPassThroughWorkerKeepsItsWorkerOpenUntilItsCallReturns() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        AtomicReference<Throwable> inHandler = new AtomicReference<>();
        AtomicBoolean handled = new AtomicBoolean();
        worker.onMessage(1, m -> {
            conduit.close();
            try {
                onAnotherThread(() -> {
                    worker.onMessage(2, null); // any call through the guard, made and returned meanwhile
                    return null;
                });
                worker.onMessage(3, null); // still inside the call that runs this handler
            } catch (Throwable t) {
                inHandler.set(t);
            }
            handled.set(true);
        });
        worker.connect(worker.address()).send(1, longs(1));

        while (!handled.get()) worker.progress();

        assertThat(inHandler.get()).as("what the handler's call on its worker threw after another thread's call returned").isNull();
    }

    /**
     * Under PASS_THROUGH two threads may run handlers at once: the close one of them asked for
     * ({@code Conduit.close()}) waits for the other's handler too, and is made as the last of their
     * calls returns. Until 2026-12-07 the asking handler's own call closed the worker as it
     * returned, under the other handler, whose next call on its worker threw "worker is closed".
     */
    @Test
    void aConduitClosedFromOneOfTwoPassThroughHandlersClosesItsWorkerAsTheLastOfTheirCallsReturns() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        CountDownLatch otherHandlerRuns = new CountDownLatch(1);
        CountDownLatch closingCallReturned = new CountDownLatch(1);
        AtomicReference<Throwable> inOtherHandler = new AtomicReference<>();
        AtomicBoolean closed = new AtomicBoolean();
        worker.onMessage(1, m -> {
            conduit.close();
            closed.set(true);
        });
        worker.onMessage(2, m -> {
            otherHandlerRuns.countDown();
            try {
                await(closingCallReturned);
                worker.onMessage(3, null); // a call on its worker after the closing handler's call returned
            } catch (Throwable t) {
                inOtherHandler.set(t);
            }
        });
        Endpoint self = worker.connect(worker.address());
        self.send(2, longs(2));
        Future<?> other = threads.submit(() -> {
            while (otherHandlerRuns.getCount() > 0) worker.progress();
            return null;
        });
        await(otherHandlerRuns);
        self.send(1, longs(1));

        while (!closed.get()) worker.progress();
        closingCallReturned.countDown();
        other.get(WAIT_SECONDS, TimeUnit.SECONDS);

        assertThat(inOtherHandler.get()).as("what the other handler's call on its worker threw").isNull();
        assertThatThrownBy(() -> worker.onMessage(3, null)).as("closed as the last call returned")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("its Conduit was closed");
    }

    /**
     * Under PASS_THROUGH a worker's close may run while another thread connects. A connect whose
     * transport finished after the close had closed the worker's endpoints used to register its
     * endpoint all the same: it returned an endpoint of a closed worker, whose transport endpoint
     * no close had reached (the worker's was over, and only the application's own would).
     */
    @Test
    void aConnectThatAWorkersCloseOvertookClosesWhatItOpenedAndSaysTheWorkerIsClosed() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Worker peer = conduit.newWorker(ThreadMode.MULTI);
        plugin.whileConnecting = closingOnAnotherThreadOnce(worker);

        assertThatThrownBy(() -> worker.connect(peer.address()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("worker is closed");
        LoopbackPlugin.LoopbackEndpoint opened = plugin.transports.getFirst().endpoints.getFirst();
        assertThat(opened.closed).as("the transport endpoint the connect opened").isTrue();
    }

    /**
     * A close that overtakes a connect inside the transport's own connect (Conduit.close() forced
     * past an owner that waits on a peer's fd server, ShmTransport's {@code closed} check) makes
     * the transport throw "transport is closed", an IllegalStateException, as every transport
     * call on a closed transport does. The connect says the worker is closed, with the transport's
     * failure as the cause, as the register path of the same race does. It used to take that for
     * the transport's failure to reach the peer, go on to its other transports, and throw a
     * ConduitException "every transport tried failed".
     */
    @Test
    void aConnectWhoseTransportAWorkersCloseOvertookSaysTheWorkerIsClosed() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Worker peer = conduit.newWorker(ThreadMode.MULTI);
        Runnable close = closingOnAnotherThreadOnce(worker);
        plugin.whileConnecting = () -> {
            close.run();
            throw new IllegalStateException("lo transport is closed"); // as ShmTransport.closedError() after its handOff check
        };

        assertThatThrownBy(() -> worker.connect(peer.address()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("worker is closed")
                .cause().hasMessage("lo transport is closed");
    }

    /**
     * The same race under a handler's {@code replyEndpoint()}: the connect to the sender's address
     * that a worker's close overtook inside the transport used to be "cannot answer the sender of
     * connection ...: connecting to the address it announced failed", a ConduitException that
     * blames the sender's address, though the worker is closed.
     */
    @Test
    void aReplyEndpointWhoseTransportAWorkersCloseOvertookSaysTheWorkerIsClosed() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        plugin.namesSenders = true;
        Conduit conduit = loopbacks.conduit(plugin);
        Worker server = conduit.newWorker(ThreadMode.MULTI);
        assertThat(server.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Worker client = conduit.newWorker(ThreadMode.MULTI);
        AtomicReference<Throwable> answering = new AtomicReference<>();
        server.onMessage(1, m -> answering.set(catchThrowable(m::replyEndpoint)));
        client.connect(server.address()).send(1, longs(1));
        Runnable close = closingOnAnotherThreadOnce(server);
        plugin.whileConnecting = () -> {
            close.run();
            throw new IllegalStateException("lo transport is closed"); // as ShmTransport.closedError() after its handOff check
        };

        for (long hangGuard = 0; answering.get() == null; hangGuard++) {
            assertThat(hangGuard).as("hang guard: progress() calls before the handler ran").isLessThan(1_000_000);
            server.progress();
        }
        assertThat(answering.get())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("worker is closed")
                .cause().hasMessage("lo transport is closed");
    }

    /**
     * Under PASS_THROUGH an endpoint's close may run while another thread opens a peer region on
     * it. A region opened after the close had closed the endpoint's regions used to be added to
     * them all the same: it stayed open, holding its IPC-cache entry, though the endpoint promised
     * to close the regions opened on it.
     */
    @Test
    void aPeerRegionThatItsEndpointsCloseOvertookIsReleasedAndSaysTheEndpointIsClosed() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        Conduit conduit = loopbacks.conduit(plugin, memory);
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Endpoint endpoint = worker.connect(conduit.newWorker(ThreadMode.MULTI).address());
        byte[] handle = conduit.pool("inproc").allocate(4096).exportHandle();
        memory.whileMapping = closingOnAnotherThreadOnce(endpoint);

        assertThatThrownBy(() -> endpoint.peerRegion(handle))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is closed");
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("the region the call opened was released").isZero();
    }

    /**
     * As an endpoint's close, the report of its failure may run on another thread (a PASS_THROUGH
     * progress()) while a peer region is being opened on it; that report gives the endpoint's
     * regions back and takes the endpoint from its worker. A region opened after it must be
     * released too, and the call throw the failure, as it does on an endpoint that failed before.
     */
    @Test
    void aPeerRegionThatTheReportOfItsEndpointsFailureOvertookIsReleasedAndThrowsTheFailure() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        Conduit conduit = loopbacks.conduit(plugin, memory);
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Endpoint endpoint = worker.connect(conduit.newWorker(ThreadMode.MULTI).address());
        byte[] handle = conduit.pool("inproc").allocate(4096).exportHandle();
        AtomicBoolean ran = new AtomicBoolean();
        memory.whileMapping = () -> {
            if (!ran.compareAndSet(false, true)) return;
            try {
                onAnotherThread(() -> {
                    plugin.transports.getLast().kill(); // the peer's
                    worker.progress();
                    return null;
                });
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        };

        Throwable thrown = catchThrowable(() -> endpoint.peerRegion(handle));
        PeerFailedException failure = endpoint.failure();
        assertThat(failure).as("the other thread's progress() reported the failure").isNotNull();
        worker.close(); // the endpoint is no longer the worker's: its close reaches no region the endpoint still lists
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("the region the call opened was released").isZero();
        assertThat(thrown).as("the failure, as on an endpoint that failed before the call").isInstanceOf(PeerFailedException.class)
                .hasCause(failure);
    }

    @ParameterizedTest
    @EnumSource(value = ThreadMode.class, names = {"SERIALIZED", "MULTI"})
    void handlersOfAConfinedPluginRunOnItsThreadAndMaySend(ThreadMode mode) throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).singleOnly();
        Conduit conduit = loopbacks.conduit(b -> b.threadConfinement(true), plugin);
        Worker worker = conduit.newWorker(mode);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);
        Endpoint self = worker.connect(worker.address());
        List<String> seen = new ArrayList<>();
        worker.onMessage(1, m -> {
            seen.add(Thread.currentThread().getName());
            self.send(2, longs(m.payloadLong(0) + 1)); // re-enters the worker from the confined thread
        });
        worker.onMessage(2, m -> seen.add("reply " + m.payloadLong(0)));
        self.send(1, longs(41));
        onAnotherThread(() -> {
            Loopbacks.progressUntil(() -> seen.size() == 2, worker);
            return null;
        });
        assertThat(seen).hasSize(2);
        assertThat(seen.getFirst()).contains("conduit-confined-lo");
        assertThat(seen.get(1)).isEqualTo("reply 42");
        assertThat(plugin.transport().overlaps).hasValue(0);
    }

    /**
     * A confined plugin runs on its own thread, where a segment of an arena confined to the caller
     * cannot be accessed: sends, a put's source and a get's destination from Arena.ofConfined() used
     * to fail with the JDK's WrongThreadException, "outside owning thread", thrown at the one thread
     * that owns them. They are copied across the hand-off now, and each reaches its target.
     */
    @ParameterizedTest
    @EnumSource(value = ThreadMode.class, names = {"SERIALIZED", "MULTI"})
    void aConfinedPluginTakesSegmentsConfinedToTheCallingThread(ThreadMode mode) {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).singleOnly();
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        Conduit conduit = loopbacks.conduit(b -> b.threadConfinement(true), plugin, memory);
        Worker worker = conduit.newWorker(mode);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);
        Endpoint self = worker.connect(worker.address());
        byte[] handle = conduit.pool("inproc").allocate(4096).exportHandle();
        PeerRegion region = self.peerRegion(handle);
        MemorySegment peerMemory = conduit.importRegion(handle).segment(); // the same mapping, through the IPC cache
        List<String> received = new ArrayList<>();
        worker.onMessage(1, m -> received.add(m.headerLong(0) + "/" + m.payloadLong(0) + "/" + m.payloadSize()));

        try (Arena arena = Arena.ofConfined()) {
            MemorySegment header = arena.allocate(8).fill((byte) 0);
            header.set(Loopbacks.LE_LONG, 0, 7);
            MemorySegment payload = arena.allocate(2048);
            payload.set(Loopbacks.LE_LONG, 0, 11);
            self.send(1, header, payload);
            self.send(1, header, 2048, target -> { // above 1 KiB: encoded into the runtime's buffer, sent with the caller's header
                target.set(Loopbacks.LE_LONG, 0, 13);
                return 16;
            });
            self.send(1, header, 16, target -> { // within 1 KiB: the same, through the buffer's view per length
                target.set(Loopbacks.LE_LONG, 0, 17);
                return 8;
            });
            self.put(payload.asSlice(0, 8), region, 64);
            assertThat(peerMemory.get(Loopbacks.LE_LONG, 64)).as("the word put from a confined segment").isEqualTo(11);

            peerMemory.set(Loopbacks.LE_LONG, 128, 19);
            MemorySegment destination = arena.allocate(16);
            self.get(region, 128, destination);
            assertThat(destination.get(Loopbacks.LE_LONG, 0)).as("the word got into a confined segment").isEqualTo(19);
        }
        Loopbacks.progressUntil(() -> received.size() == 3, worker);
        assertThat(received).containsExactly("7/11/2048", "7/13/16", "7/17/8");
    }

    /**
     * A segment confined to the calling thread that native memory cannot copy for a confined plugin's thread is refused
     * with a ConduitException naming its size, the limit the copy counts against (-XX:MaxDirectMemorySize) and the
     * remedy, a segment the plugin's thread can access, nothing sent. Here 1 TiB of a sparse file mapped into an
     * Arena.ofConfined(), more than the limit (by default the heap's), which refuses it before any byte is allocated.
     * Until 2026-12-07 the JDK's bare OutOfMemoryError ("Cannot reserve ... bytes of direct buffer memory") came out of
     * send, naming neither.
     */
    @Test
    void aConfinedSegmentNativeMemoryCannotCopyForAConfinedPluginIsAConduitExceptionNamingTheRemedy(@TempDir Path dir)
            throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).singleOnly();
        plugin.maxPayload = 1L << 50;
        Worker worker = loopbacks.conduit(b -> b.threadConfinement(true), plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);
        Endpoint self = worker.connect(worker.address());
        long size = 1L << 40;
        assertThat(Runtime.getRuntime().maxMemory()).as("the copy's limit, -XX:MaxDirectMemorySize, is by default the heap's")
                .isLessThan(size);
        try (FileChannel file = FileChannel.open(dir.resolve("sparse"), StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE); Arena arena = Arena.ofConfined()) {
            file.write(java.nio.ByteBuffer.allocate(1), size - 1);
            MemorySegment payload = file.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            assertThatThrownBy(() -> self.send(1, payload)).isInstanceOf(ConduitException.class)
                    .hasCauseInstanceOf(OutOfMemoryError.class)
                    .hasMessageStartingWith("cannot copy " + size + " bytes of a segment confined to thread '"
                            + Thread.currentThread().getName() + "' for the plugin's thread conduit-confined-lo (thread.confine)")
                    .hasMessageContaining("-XX:MaxDirectMemorySize")
                    .hasMessageContaining("Pass a segment the plugin's thread can access");
        }
        List<Long> received = new ArrayList<>();
        worker.onMessage(1, m -> received.add(m.payloadLong(0)));
        self.send(1, longs(3));
        Loopbacks.progressUntil(() -> received.size() == 1, worker);
        assertThat(received).as("nothing of the refused send arrived").containsExactly(3L);
    }

    /**
     * A payload over the limit of a confined plugin ({@code thread.confine}) is refused naming what raises the limit, as the
     * plugin says (TransportEndpoint.maxPayloadSizeRemedy), as it is unconfined: ConfinedTransport's endpoint forwards the
     * limits but not their remedy, so the SPI's default (null) answered for every confined plugin, and the refusal
     * pointed to docs/plugins.md instead of the key.
     */
    @Test
    void aPayloadOverTheLimitOfAConfinedPluginIsRefusedNamingWhatRaisesItAsThePluginSays() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).singleOnly();
        plugin.maxPayload = 1000;
        plugin.payloadRemedy = "lo.limit (CONDUIT_LO_LIMIT) of this process sets it";
        Worker worker = loopbacks.conduit(b -> b.threadConfinement(true), plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);
        Endpoint self = worker.connect(worker.address());

        assertThatThrownBy(() -> self.send(1, MemorySegment.ofArray(new byte[1001])))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("payload of 1001 bytes")
                .hasMessageContaining("or raise the limit: lo.limit (CONDUIT_LO_LIMIT) of this process sets it");
    }

    /**
     * Every optional method of the SPI that a confined plugin may answer is forwarded to it, on its thread: one left to
     * the SPI's default answers for every confined plugin as for a plugin that lacks it, whatever the plugin says
     * (maxPayloadSizeRemedy was, above). The zero-copy send alone is not: its encoder is the application's code, which
     * would then run on the plugin's thread, not the sending one; a confined plugin's encoded send is encoded into the
     * runtime's buffer instead, as for a plugin without it (docs/runtime.md).
     */
    @Test
    void everyOptionalMethodOfTheSpiButTheZeroCopySendIsForwardedToAConfinedPlugin() {
        Class<?> confinedEndpoint = java.util.Arrays.stream(ConfinedTransport.class.getDeclaredClasses())
                .filter(dev.conduit.spi.TransportEndpoint.class::isAssignableFrom).findFirst().orElseThrow();
        List<String> leftToTheDefault = new ArrayList<>();
        for (Class<?>[] spiAndForwarder : new Class<?>[][]{{dev.conduit.spi.Transport.class, ConfinedTransport.class},
                {dev.conduit.spi.TransportEndpoint.class, confinedEndpoint}}) {
            for (java.lang.reflect.Method m : spiAndForwarder[0].getMethods()) {
                if (!m.isDefault()) continue;
                try {
                    spiAndForwarder[1].getDeclaredMethod(m.getName(), m.getParameterTypes());
                } catch (NoSuchMethodException e) {
                    leftToTheDefault.add(spiAndForwarder[0].getSimpleName() + "." + m.getName());
                }
            }
        }

        assertThat(leftToTheDefault).containsExactly("TransportEndpoint.trySendEncoded");
    }

    /**
     * A call on a confined plugin is the caller's, made on the plugin's thread: an interrupt of the
     * caller does not end it. The caller used to stop waiting at the interrupt (at once for a thread
     * whose interrupt status was set, as await leaves it), throw IllegalStateException "interrupted
     * while waiting for the confined plugin thread" and interrupt the plugin's thread, while the call
     * went on there: a send that threw was delivered (sent again, it arrived twice), a get wrote its
     * destination after it threw, and progress and await threw instead of working and returning true;
     * a worker made by an interrupted thread was refused ("could not start confinement thread"), or
     * its transport opened on the plugin's thread and never closed. Now each call finishes, once, and
     * returns as it would unconfined; the interrupt status is kept.
     */
    @Test
    void aCallOfAnInterruptedThreadOnAConfinedPluginIsMadeOnceAndKeepsTheInterruptStatus() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).singleOnly();
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        Conduit conduit = loopbacks.conduit(b -> b.threadConfinement(true), plugin, memory);
        byte[] handle = conduit.pool("inproc").allocate(4096).exportHandle();
        MemorySegment peerMemory = conduit.importRegion(handle).segment();
        List<Long> received = new ArrayList<>();

        Thread.currentThread().interrupt();
        Worker worker;
        try {
            worker = conduit.newWorker(ThreadMode.SERIALIZED); // starts the plugin's thread, opens the transport there
            assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);
            Endpoint self = worker.connect(worker.address());
            PeerRegion region = self.peerRegion(handle);
            worker.onMessage(1, m -> received.add(m.payloadLong(0)));
            self.send(1, longs(5));
            self.put(longs(6), region, 0);
            MemorySegment got = MemorySegment.ofArray(new long[1]);
            self.get(region, 0, got);
            assertThat(got.get(Loopbacks.LE_LONG, 0)).as("the word got").isEqualTo(6);
            assertThat(self.fetchAdd(region, 0, 1)).isEqualTo(6);
            Loopbacks.progressUntil(() -> received.size() == 1, worker);
            assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).as("await of an interrupted thread").isTrue();
            assertThat(Thread.currentThread().isInterrupted()).as("the interrupt status is kept").isTrue();
        } finally {
            Thread.interrupted();
        }
        assertThat(peerMemory.get(Loopbacks.LE_LONG, 0)).isEqualTo(7);
        worker.progress();
        assertThat(received).as("the message, once").containsExactly(5L);

        // An interrupt while the plugin's thread sleeps in await for the caller: the worker's signal ends the sleep.
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread awaiting = Thread.ofPlatform().name("test-awaiting").start(() -> {
            try {
                outcome.set(worker.await(Duration.ofSeconds(WAIT_SECONDS)));
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!plugin.transport().waiting && System.nanoTime() < deadline) Thread.onSpinWait();
        assertThat(plugin.transport().waiting).as("the plugin's thread sleeps in await").isTrue();
        awaiting.interrupt();
        HangGuard.join(awaiting, "the interrupted await");
        assertThat(outcome.get()).as("what the interrupted await returned or threw").isEqualTo(true);
        assertThat(plugin.transport().overlaps).hasValue(0);
    }

    /**
     * A transport that returns no endpoint is named as such; a confined one's null used to be
     * wrapped as an endpoint, whose first call failed with a NullPointerException that the connect
     * reported instead.
     */
    @ParameterizedTest
    @EnumSource(value = ThreadMode.class, names = {"SINGLE", "SERIALIZED"})
    void aTransportThatReturnsNoEndpointIsNamedAsSuchConfinedOrNot(ThreadMode mode) {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).singleOnly();
        Conduit conduit = loopbacks.conduit(b -> b.threadConfinement(true), plugin);
        Worker worker = conduit.newWorker(mode);
        assertThat(worker.threadPolicy()).isEqualTo(mode == ThreadMode.SINGLE ? ThreadPolicy.OWNER_CHECK : ThreadPolicy.CONFINED_THREAD);
        plugin.connectReturnsNull = true;
        assertThatThrownBy(() -> worker.connect(worker.address()))
                .isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("'lo': plugin 'lo' returned null from Transport.connect, which returns an endpoint or throws: that "
                        + "is the plugin's fault (the TCK's TransportContract shows it); report it to the plugin's authors, and meanwhile "
                        + "leave it out (transports=^lo)");
    }

    /**
     * A connect that throws an unchecked exception other than a ConduitException is named as most
     * likely the plugin's fault, what it threw the cause, as a failed openTransport is; a bare
     * NullPointerException used to be listed as the transport's reason, naming nobody's fault.
     */
    @Test
    void aConnectThatThrowsABareExceptionIsNamedAsMostLikelyThePluginsFault() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
        Worker worker = loopbacks.conduit(b -> { }, plugin).newWorker(ThreadMode.SINGLE);
        NullPointerException bug = new NullPointerException("oops");
        plugin.connectFault = bug;
        assertThatThrownBy(() -> worker.connect(worker.address()))
                .isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("'lo': plugin 'lo' failed in Transport.connect: java.lang.NullPointerException: oops. That is no "
                        + "ConduitException")
                .hasMessageContaining("most likely the plugin's fault")
                .satisfies(e -> assertThat(e.getSuppressed()[0].getCause()).isSameAs(bug));
    }

    /**
     * A confined plugin's connect (a plugin that declares {@code SINGLE} alone, in a worker that
     * confines it to a thread of its own) that throws a checked exception undeclared is named as
     * most likely the plugin's fault, as an unconfined one's is. Until 2026-12-07 the confinement
     * wrapped it in an {@code IllegalStateException}, which the connect took for a transport closed
     * under the call, and listed bare as the transport's reason, naming no fault.
     */
    @ParameterizedTest
    @EnumSource(value = ThreadMode.class, names = {"SINGLE", "SERIALIZED"})
    void aConnectThatThrowsACheckedExceptionUndeclaredIsNamedAsMostLikelyThePluginsFaultConfinedOrNot(ThreadMode mode) {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).singleOnly();
        Worker worker = loopbacks.conduit(b -> b.threadConfinement(true), plugin).newWorker(mode);
        assertThat(worker.threadPolicy()).isEqualTo(mode == ThreadMode.SINGLE ? ThreadPolicy.OWNER_CHECK : ThreadPolicy.CONFINED_THREAD);
        java.io.IOException refused = new java.io.IOException("/dev/shm/lo.sock: Connection refused");
        plugin.connectFault = refused;
        assertThatThrownBy(() -> worker.connect(worker.address()))
                .isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("'lo': plugin 'lo' failed in Transport.connect: " + refused + ". That is no ConduitException")
                .satisfies(e -> assertThat(e.getSuppressed()[0].getCause()).isSameAs(refused));
    }

    // ------------------------------------------------------------------ await and signal

    @Test
    void awaitWakesOnSignalFromAnotherThread() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.SINGLE);
        Future<?> signaller = threads.submit(() -> {
            plugin.transport().awaitSleeper();
            worker.signal();
            return null;
        });
        assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
        signaller.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(worker.await(Duration.ofMillis(10))).as("a signal wakes once").isFalse();
    }

    /**
     * A transport whose await throws a checked exception it does not declare (a plugin in Kotlin
     * whose sleep polls a pipe) is named as the plugin's fault, as its progress's is, and the
     * worker goes on once the plugin does. Until 2026-12-07 the bare IOException came out of
     * {@code Worker.await}, past the catch of {@code RuntimeException}, naming no plugin.
     */
    @Test
    void aTransportsCheckedExceptionFromAwaitIsNamedAsThePluginsFault() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.SINGLE);
        java.io.IOException brokenPipe = new java.io.IOException("Broken pipe");
        plugin.transport().awaitChecked = brokenPipe;
        assertThatThrownBy(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS))).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'lo' failed in await(): java.io.IOException: Broken pipe").hasCause(brokenPipe);
        plugin.transport().awaitChecked = null;
        worker.signal();
        assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).as("the worker goes on once the plugin does").isTrue();
    }

    /**
     * A transport's await that throws an unchecked exception of its own (a
     * {@code NullPointerException}, an {@code IndexOutOfBoundsException} of its queue) is named as
     * the plugin's fault, as a checked one is; its {@code IllegalStateException} (closed under the
     * call) passes as it is. Until 2026-12-07 the bare exception came out of {@code Worker.await},
     * naming no plugin.
     */
    @Test
    void aTransportsUncheckedExceptionFromAwaitIsNamedAsThePluginsFault() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.SINGLE);
        NullPointerException sleeper = new NullPointerException("sleeper");
        plugin.transport().awaitChecked = sleeper;
        assertThatThrownBy(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS))).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'lo' failed in await(): java.lang.NullPointerException: sleeper").hasCause(sleeper);
        IllegalStateException closed = new IllegalStateException("transport closed");
        plugin.transport().awaitChecked = closed;
        assertThatThrownBy(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS))).isSameAs(closed);
        plugin.transport().awaitChecked = null;
        worker.signal();
        assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).as("the worker goes on once the plugin does").isTrue();
    }

    @Test
    void awaitWakesWhenAMessageArrivesFromAnotherThread() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
        Worker sender = conduit.newWorker(ThreadMode.MULTI);
        Endpoint ep = sender.connect(receiver.address());
        List<Long> seen = new ArrayList<>();
        receiver.onMessage(1, m -> seen.add(m.payloadLong(0)));
        LoopbackPlugin.LoopbackTransport receiving = plugin.transports.getFirst();
        Future<?> sending = threads.submit(() -> {
            receiving.awaitSleeper();
            ep.send(1, longs(7));
            return null;
        });
        assertThat(receiver.await(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
        sending.get(WAIT_SECONDS, TimeUnit.SECONDS);
        receiver.progress();
        assertThat(seen).containsExactly(7L);
    }

    @Test
    void awaitReturnsFalseWhenNothingHappens() {
        Worker worker = loopbacks.conduit(new LoopbackPlugin("lo", 8, false)).newWorker(ThreadMode.SINGLE);
        assertThat(worker.await(Duration.ofMillis(5))).isFalse();
        assertThat(worker.await(Duration.ZERO)).isFalse();
        assertThat(worker.await(Duration.ofNanos(-1))).isFalse();
    }

    /**
     * A timeout of zero or less does not sleep: await returns false at once and keeps a signal made
     * before it for the next await, whether a transport can sleep (WAKEUP) or the worker parks.
     * Without a WAKEUP transport it used to take the signal and return true, so the same call
     * answered differently by the plugins selected; and a signal was still "never lost" only over
     * WAKEUP.
     */
    @Test
    void aTimeoutOfZeroOrLessReturnsFalseAtOnceAndKeepsASignalForTheNextAwait() {
        Worker sleeps = loopbacks.conduit(new LoopbackPlugin("lo", 8, false)).newWorker(ThreadMode.SINGLE);
        Worker parks = loopbacks.conduit(new LoopbackPlugin("lo-park", 8, false).capabilities(Capability.RMA)).newWorker(ThreadMode.SINGLE);
        for (Worker worker : List.of(sleeps, parks)) {
            for (Duration none : List.of(Duration.ZERO, Duration.ofNanos(-1))) {
                worker.signal();
                assertThat(worker.await(none)).as("%s, %s", worker, none).isFalse();
                assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).as("%s: the signal was kept", worker).isTrue();
            }
        }
    }

    @Test
    void withoutAWakeupTransportAwaitParksAndASignalIsNeverLost() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).capabilities(Capability.RMA);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.SINGLE);
        assertThat(worker.await(Duration.ofMillis(3))).isFalse();

        worker.signal();
        assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).as("a signal before await is kept").isTrue();

        CountDownLatch aboutToAwait = new CountDownLatch(1);
        Future<?> signaller = threads.submit(() -> {
            aboutToAwait.await();
            worker.signal();
            return null;
        });
        aboutToAwait.countDown();
        assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
        signaller.get(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    @Test
    void withoutAWakeupTransportAwaitProgressesBetweenSlicesAndReturnsWhenAMessageWasDelivered() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).capabilities(Capability.RMA);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
        List<Long> seen = new ArrayList<>();
        receiver.onMessage(1, m -> seen.add(m.payloadLong(0)));
        conduit.newWorker(ThreadMode.SINGLE).connect(receiver.address()).send(1, longs(3));
        assertThat(receiver.await(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
        assertThat(seen).containsExactly(3L);
    }

    @Test
    void awaitSleepsInThePreferredWakeupTransportAndProgressesTheOthersBetweenSlices() {
        LoopbackPlugin waking = new LoopbackPlugin("lo-w", 8, false).priority(190);
        LoopbackPlugin polled = new LoopbackPlugin("lo-n", 8, false).capabilities(Capability.RMA).priority(110);
        Worker receiver = loopbacks.conduit(waking, polled).newWorker(ThreadMode.SINGLE);
        assertThat(receiver.address().transports()).containsExactly("lo-w", "lo-n");
        Worker sender = loopbacks.conduit(new LoopbackPlugin("lo-n", 8, false)).newWorker(ThreadMode.SINGLE);
        Endpoint ep = sender.connect(receiver.address());
        assertThat(ep.transport()).isEqualTo("lo-n");
        List<Long> seen = new ArrayList<>();
        receiver.onMessage(1, m -> seen.add(m.payloadLong(0)));
        ep.send(1, longs(5));

        assertThat(receiver.await(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
        assertThat(seen).as("delivered by the transport that cannot sleep, between slices").containsExactly(5L);
        assertThat(waking.transport().calls.get()).as("it slept in lo-w").isGreaterThanOrEqualTo(2);
    }

    @Test
    void awaitUnderTheRuntimeLockLetsOtherThreadsSendBetweenSlices() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Worker worker = multiWorkerUnderTheRuntimeLock(plugin);
        Endpoint self = worker.connect(worker.address());
        AtomicBoolean sent = new AtomicBoolean();
        Future<?> sender = threads.submit(() -> {
            plugin.transport().awaitSleeper();
            self.send(1, longs(1));
            sent.set(true);
            return null;
        });
        List<Long> seen = new ArrayList<>();
        worker.onMessage(1, m -> seen.add(m.payloadLong(0)));
        assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
        sender.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(sent).isTrue();
        worker.progress();
        assertThat(seen).containsExactly(1L);
        assertThat(plugin.transport().overlaps).hasValue(0);
    }

    /**
     * A thread that calls into a MULTI worker under the runtime lock while another sleeps in
     * {@code await} holding it wakes the sleeper, which lets go: the call used to wait until the
     * sleeper's slice ended (up to 1 ms a call over memfd and posix). Here the transport sleeps until
     * it is signalled, whatever the slice, so before the send waited for good.
     */
    @Test
    void aThreadCallingAMultiWorkerWakesTheThreadAsleepInAwaitUnderItsLock() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Worker worker = multiWorkerUnderTheRuntimeLock(plugin);
        Endpoint self = worker.connect(worker.address());
        plugin.transport().awaitIgnoresTimeout = true;
        Future<Boolean> sleeper = threads.submit(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS)));
        plugin.transport().awaitSleeper();
        assertThat(onAnotherThread(() -> {
            self.send(1, longs(1));
            return true;
        })).isTrue();
        assertThat(sleeper.get(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(plugin.transport().overlaps).hasValue(0);
    }

    /**
     * A thread that must wait for a MULTI worker's runtime lock wakes the thread asleep in
     * {@code await} under it through the transport's signal; a signal that fails (a queue's memory
     * gone bad) is the sleeper's to meet in its own sleep, which ends within its 1 ms slice. The
     * waiting thread's call (a progress, a send on another transport's endpoint, a close) threw the
     * signal's exception, having done nothing.
     */
    @Test
    void aCallWhoseWakeOfTheSleeperUnderTheLockFailsWaitsForTheLockAndDoesNotThrowTheWakesFailure() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Worker worker = multiWorkerUnderTheRuntimeLock(plugin);
        Future<Boolean> sleeper = threads.submit(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS)));
        plugin.transport().signalFault = new IllegalStateException("the signal failed");
        long signals = plugin.transport().signals.get();
        try {
            // A call that comes as the sleeper's 1 ms slice ends is handed the lock between slices, with no signal: so
            // the calls are made, each while the sleeper sleeps, until one had to signal (a bounded number: a hang guard).
            for (int call = 0; plugin.transport().signals.get() == signals; call++) {
                if (call == 1_000) throw new AssertionError("hang guard: no call ever signalled the sleeper");
                plugin.transport().awaitSleeper();
                assertThat(onAnotherThread(worker::progress)).isZero(); // threw "the signal failed" before
            }
        } finally {
            plugin.transport().signalFault = null;
        }
        worker.signal();
        assertThat(sleeper.get(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(plugin.transport().overlaps).hasValue(0);
    }

    /**
     * Two threads that await one MULTI worker under the runtime lock, with nothing to do, take
     * turns sleeping in the transport and do not wake each other: each await runs out. A thread
     * that comes to await is no call that needs the lock at once, as a send is; when it counted as
     * one, the sleeper was woken (its await returned true without work) or handed the lock over
     * without sleeping, to a thread that did the same to it, and the two spun a core each for as
     * long as they awaited.
     */
    @Test
    void twoThreadsAwaitingAMultiWorkerDoNotWakeEachOther() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Worker worker = multiWorkerUnderTheRuntimeLock(plugin);
        CyclicBarrier start = new CyclicBarrier(2);
        Callable<List<Boolean>> awaiting = () -> {
            start.await(WAIT_SECONDS, TimeUnit.SECONDS);
            List<Boolean> woken = new ArrayList<>();
            for (int i = 0; i < 10; i++) woken.add(worker.await(Duration.ofMillis(20)));
            return woken;
        };
        Future<List<Boolean>> one = threads.submit(awaiting);
        Future<List<Boolean>> two = threads.submit(awaiting);
        assertThat(one.get(WAIT_SECONDS, TimeUnit.SECONDS)).as("nothing woke the first thread's awaits").containsOnly(false);
        assertThat(two.get(WAIT_SECONDS, TimeUnit.SECONDS)).as("nothing woke the second thread's awaits").containsOnly(false);
        assertThat(plugin.transport().overlaps).hasValue(0);
    }

    /**
     * The hook that turns an interrupt of a thread in {@code await} into a signal runs inside
     * {@code Thread.interrupt()} of whichever thread interrupts (an executor's {@code shutdownNow},
     * which stops interrupting its other threads at the first exception), and, for a thread
     * interrupted before its call, inside {@code await}'s setup. A transport whose signal failed
     * threw out of the interrupter's {@code interrupt()}, and out of {@code await} before the hook
     * was taken down again: every later interrupt of that thread, long after its await, signalled
     * the worker (and threw again). Now the hook throws nothing (the sleeper meets a broken
     * transport itself, and sees its interrupt at the latest when its slice ends), an interrupted
     * thread's await returns {@code true} keeping the interrupt, and the hook is taken down.
     */
    @Test
    void anInterruptWhoseSignalFailsThrowsNothingAndLeavesNoHookOnTheThread() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.MULTI);
        plugin.transport().signalFault = new IllegalStateException("the signal failed");
        CountDownLatch awaited = new CountDownLatch(1);
        CountDownLatch reinterrupted = new CountDownLatch(1);
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread user = Thread.ofPlatform().daemon().start(() -> {
            try {
                Thread.currentThread().interrupt();
                boolean woke = worker.await(Duration.ofSeconds(WAIT_SECONDS));
                outcome.set(woke + ", interrupted " + Thread.interrupted());
            } catch (Throwable e) {
                outcome.set(e);
                Thread.interrupted();
            }
            awaited.countDown();
            try {
                reinterrupted.await(); // out of await: an interrupt here is no business of the worker's
            } catch (InterruptedException expected) {
            }
        });
        await(awaited);
        assertThat(outcome.get()).isEqualTo("true, interrupted true");
        long signals = plugin.transport().signals.get();
        while (user.getState() != Thread.State.WAITING) Thread.onSpinWait();
        user.interrupt(); // threw the transport's exception here before
        reinterrupted.countDown();
        user.join();
        assertThat(plugin.transport().signals).as("an interrupt after await signals nobody").hasValue(signals);

        // One that comes while the thread sleeps in await: interrupt() throws nothing, and await ends.
        Future<Boolean> sleeper = threads.submit(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS)));
        plugin.transport().awaitSleeper();
        threads.shutdownNow(); // interrupts the sleeper; threw the transport's exception before
        assertThat(sleeper.get(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        plugin.transport().signalFault = null;
    }

    /**
     * The two hooks that wake a thread asleep in {@code await} from another thread's call throw
     * nothing when the transport's signal fails with an Error (a plugin missing one of its
     * classes), as they throw nothing for a RuntimeException: they caught only RuntimeException and
     * InternalError, so the Error came out of {@code Thread.interrupt()} of the interrupting thread
     * (an executor's {@code shutdownNow} stops interrupting its other threads there), and out of
     * a call that had to wait for a MULTI worker's runtime lock, which did nothing.
     */
    @Test
    void aWakeOfAnAwaitingThreadWhoseSignalFailsWithAnErrorThrowsNothing() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Worker worker = multiWorkerUnderTheRuntimeLock(plugin);
        Thread user = Thread.ofPlatform().daemon().start(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS)));
        plugin.transport().awaitSleeper();
        plugin.transport().signalError = new NoClassDefFoundError("dev/example/Missing");
        try {
            assertThat(catchThrowable(() -> onAnotherThread(worker::progress))).as("a call that waits for the lock").isNull();
            plugin.transport().awaitSleeper();
            assertThat(catchThrowable(user::interrupt)).as("an interrupt of the sleeping thread").isNull();
        } finally {
            plugin.transport().signalError = null;
            worker.signal();
            HangGuard.join(user, "the thread whose await a wake left");
        }
    }

    /**
     * The three hooks that wake a thread asleep in {@code await} from another thread throw nothing
     * when the transport's signal throws a checked exception it does not declare (a plugin in
     * Kotlin whose wake writes to a pipe): they caught RuntimeException and Error only, so the
     * IOException came out of a call that had to wait for the runtime lock and out of
     * {@code Thread.interrupt()}, and a close that woke the awaiting thread threw it before it
     * closed anything, leaving the transport open (its queues, mappings and files) for good.
     */
    @Test
    void aWakeOfAnAwaitingThreadWhoseSignalThrowsACheckedExceptionThrowsNothingAndTheCloseStillClosesTheTransport() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        Worker worker = multiWorkerUnderTheRuntimeLock(plugin);
        AtomicReference<Object> awaited = new AtomicReference<>();
        Thread user = Thread.ofPlatform().daemon().start(() -> {
            try {
                while (true) {
                    worker.await(Duration.ofSeconds(WAIT_SECONDS));
                    Thread.interrupted(); // asleep again for the close, not spinning on the interrupt below
                }
            } catch (Throwable e) {
                awaited.set(e);
            }
        });
        plugin.transport().awaitSleeper();
        plugin.transport().signalChecked = new java.io.IOException("Broken pipe");
        try {
            assertThat(catchThrowable(() -> onAnotherThread(worker::progress))).as("a call that waits for the lock").isNull();
            plugin.transport().awaitSleeper();
            assertThat(catchThrowable(user::interrupt)).as("an interrupt of the sleeping thread").isNull();
            plugin.transport().awaitSleeper();
            assertThat(catchThrowable(worker::close)).as("a close while the thread awaits").isNull();
            assertThat(plugin.transport().closed).as("the transport, closed by that close").isTrue();
        } finally {
            plugin.transport().signalChecked = null;
            catchThrowable(worker::close); // ends the await loop whatever failed above
            HangGuard.join(user, "the thread looping on await");
        }
        assertThat(awaited.get()).isInstanceOf(IllegalStateException.class);
    }

    /**
     * Code that runs between an await's slices and blocks in an interruptible channel (here the
     * progress of the transport that cannot sleep, which writes to a pipe and counts no event)
     * takes the JDK's one hook per thread for interruptible blocking with it: its channel's
     * {@code end()} clears it, and the hook that turns an interrupt of the awaiting thread into a
     * signal was set only once, as await began. An interrupt in the next sleep, in a transport
     * whose sleep an interrupt does not end (a futex wait), then woke nobody until the slice ran
     * out; here the transport sleeps until woken, whatever the slice, so the await slept on for
     * good. The hook is set before every sleep. (An error handler blocking so served here until
     * 2026-12-07, when an error handler's run came to end the await.)
     */
    @Test
    void anInterruptWakesAnAwaitInWhichATransportsProgressBlockedInAChannel() throws Exception {
        LoopbackPlugin waking = new LoopbackPlugin("lo-w", 8, false).priority(190);
        LoopbackPlugin polled = new LoopbackPlugin("lo-n", 8, false).capabilities(Capability.RMA).priority(110);
        Worker receiver = multiWorkerUnderTheRuntimeLock(waking, polled);
        java.nio.channels.Pipe pipe = java.nio.channels.Pipe.open();
        CountDownLatch progressed = new CountDownLatch(1);
        AtomicBoolean blocked = new AtomicBoolean();
        polled.transport().duringProgress = () -> {
            if (!blocked.compareAndSet(false, true)) return;
            try {
                pipe.sink().write(java.nio.ByteBuffer.allocate(1)); // blocking: begin() and end() of the channel
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            waking.transport().awaitIgnoresTimeout = true; // from now on only a signal ends the sleep
            progressed.countDown();
        };
        waking.transport().awaitDeafToInterrupts = true;

        java.util.concurrent.CompletableFuture<Boolean> woke = new java.util.concurrent.CompletableFuture<>();
        Thread awaiting = Thread.ofPlatform().daemon().start(() -> {
            try {
                woke.complete(receiver.await(Duration.ofSeconds(WAIT_SECONDS)));
            } catch (Throwable e) {
                woke.completeExceptionally(e);
            }
        });
        try {
            await(progressed); // between two slices
            waking.transport().awaitSleeper(); // the next slice
            awaiting.interrupt();
            assertThat(woke.get(WAIT_SECONDS, TimeUnit.SECONDS)).as("woken by the interrupt").isTrue();
        } finally {
            receiver.signal(); // frees a thread the interrupt did not wake
            awaiting.join();
        }
        assertThat(waking.transport().overlaps).hasValue(0);
    }

    /**
     * An await of a thread interrupted before the call returns at once and leaves nothing behind:
     * it used to set the interrupt hook first, which turned the pending interrupt into a signal
     * that the transport kept, so the thread's next await, its interrupt cleared, returned at once
     * without work.
     */
    @Test
    void anAwaitOfAnInterruptedThreadLeavesNoWakeupForTheNextOne() {
        Worker worker = loopbacks.conduit(new LoopbackPlugin("lo", 64, false)).newWorker(ThreadMode.SINGLE);
        Thread.currentThread().interrupt();
        assertThat(worker.await(Duration.ofSeconds(WAIT_SECONDS))).isTrue();
        assertThat(Thread.interrupted()).as("the interrupt status is kept").isTrue();
        assertThat(worker.await(Duration.ofMillis(1))).as("no wakeup left behind").isFalse();
    }

    /**
     * An await under the runtime lock lets it go between slices and takes it again; a failure of
     * that relock other than the deadlock's, which leaves the thread without the lock, is what the
     * await throws, and the lock is free. Here the awaiting thread's {@code interrupt()} refuses its
     * own thread, so the relock throws as it restores an interrupt that came while it waited (a
     * stand-in for an Error while waiting). The await's exit used to unlock the lock it no longer
     * held, and its IllegalMonitorStateException took the failure's place.
     */
    @Test
    void anAwaitWhoseRelockFailsOtherwiseThrowsThatFailureAndLeavesTheLockFree() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).capabilities(Capability.RMA); // no wakeup: await parks
        Worker worker = multiWorkerUnderTheRuntimeLock(plugin);
        var address = worker.address();
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        AtomicReference<Thread> holder = new AtomicReference<>();
        plugin.whileConnecting = () -> {
            if (Thread.currentThread() != holder.get()) return;
            holding.countDown();
            awaitQuietly(letGo); // inside connect, under the worker's lock
        };
        AtomicReference<Throwable> awaitOutcome = new AtomicReference<>();
        Thread awaiting = new InterruptRefusingThread(() -> awaitOutcome.set(catchThrowable(() -> worker.await(Duration.ofSeconds(WAIT_SECONDS)))));
        awaiting.start();
        Future<Endpoint> connecting = threads.submit(() -> {
            holder.set(Thread.currentThread());
            return worker.connect(address);
        });
        await(holding);
        waitUntilWaitingForTheRuntimeLock(awaiting);
        awaiting.interrupt();
        letGo.countDown();
        HangGuard.join(awaiting, "the await whose relock failed");
        connecting.get(WAIT_SECONDS, TimeUnit.SECONDS);

        assertThat(awaitOutcome.get()).isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("no interrupt of itself");
        assertThat(onAnotherThread(worker::progress)).as("another thread gets the lock").isZero();
    }

    /**
     * An await that gives up to a deadlock as it takes its worker's lock back between two slices
     * says that its slices before had progressed the worker, not that it did nothing: a handler of
     * worker two awaits worker one, whose lock another thread, holding it in a connect, wants to
     * send on two with. The awaiting thread has the higher id, so it is the one that gives up.
     */
    @Test
    void anAwaitThatGivesUpItsLockBetweenSlicesToADeadlockSaysItHadProgressedTheWorker() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false).capabilities(Capability.RMA); // no wakeup: await parks
        Worker one = multiWorkerUnderTheRuntimeLock(plugin);
        Worker two = loopbacks.conduit(new LoopbackPlugin("lo", 8, false).capabilities(Capability.RMA)).newWorker(ThreadMode.MULTI);
        var twoAddress = two.address();
        Endpoint twoToOne = two.connect(one.address());
        Endpoint oneToTwo = one.connect(twoAddress);
        CountDownLatch inTwosHandler = new CountDownLatch(1);
        two.onMessage(1, m -> {
            inTwosHandler.countDown();
            one.await(Duration.ofSeconds(WAIT_SECONDS));
        });
        one.onMessage(2, m -> { });
        AtomicReference<Throwable> connectOutcome = new AtomicReference<>();
        Thread sending = new Thread(() -> connectOutcome.set(catchThrowable(() -> one.connect(twoAddress)))); // the lower id
        AtomicReference<Throwable> progressOutcome = new AtomicReference<>();
        Thread awaiting = new Thread(() -> progressOutcome.set(catchThrowable(() -> {
            while (two.progress() == 0) Thread.onSpinWait();
        })));
        plugin.whileConnecting = () -> {
            if (Thread.currentThread() == sending) twoToOne.send(2, longs(0)); // holding one's lock, wants two's
        };
        oneToTwo.send(1, longs(0));
        awaiting.start();
        await(inTwosHandler);
        waitUntilAsleepInAwait(awaiting);
        sending.start();
        HangGuard.join(awaiting, "the await that gave up its lock to a deadlock");
        HangGuard.join(sending, "the send of the deadlock's other thread");

        assertThat(connectOutcome.get()).as("the connect that was not refused").isNull();
        assertThat(progressOutcome.get()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("deadlock between MULTI workers")
                .hasMessageContaining("this await() gave up between two of its slices")
                .hasMessageNotContaining("this call did nothing");
    }

    /** Waits (hang guard) until {@code t} is parked in the runtime lock's queue. */
    private static void waitUntilWaitingForTheRuntimeLock(Thread t) {
        waitUntilParkedOn(t, b -> b instanceof dev.conduit.internal.threading.RuntimeLock, "waits for the runtime lock");
    }

    /** Waits (hang guard) until {@code t} is parked in a worker's await, under its lock. */
    private static void waitUntilAsleepInAwait(Thread t) {
        waitUntilParkedOn(t, b -> b instanceof RuntimeWorker, "sleeps in await");
    }

    private static void waitUntilParkedOn(Thread t, java.util.function.Predicate<Object> blocker, String what) {
        long hangGuard = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!(t.getState() == Thread.State.TIMED_WAITING && blocker.test(java.util.concurrent.locks.LockSupport.getBlocker(t)))) {
            if (System.nanoTime() - hangGuard > 0) throw new AssertionError("hang guard: " + t + " never " + what);
            Thread.onSpinWait();
        }
    }

    /**
     * An interrupt that comes while await runs code between its slices (here a handler of the
     * transport that cannot sleep, delivering between two sleeps in the one that can) ends the
     * await and leaves nothing behind, as one that came before the call does: the hook that turns
     * an interrupt into a signal stays set between slices, so the interrupt became a signal that
     * the sleeping transport kept, and the thread's next await, its interrupt cleared, returned at
     * once without work.
     */
    @Test
    void anInterruptBetweenTheSlicesOfAnAwaitLeavesNoWakeupForTheNextOne() {
        LoopbackPlugin waking = new LoopbackPlugin("lo-w", 8, false).priority(190);
        LoopbackPlugin polled = new LoopbackPlugin("lo-n", 8, false).capabilities(Capability.RMA).priority(110);
        Worker receiver = loopbacks.conduit(waking, polled).newWorker(ThreadMode.SINGLE);
        Endpoint ep = loopbacks.conduit(new LoopbackPlugin("lo-n", 8, false)).newWorker(ThreadMode.SINGLE).connect(receiver.address());
        assertThat(ep.transport()).isEqualTo("lo-n");
        receiver.onMessage(1, m -> interruptedByAnotherThread());
        ep.send(1, longs(1));

        assertThat(receiver.await(Duration.ofSeconds(WAIT_SECONDS))).as("woken by the message delivered between slices").isTrue();
        assertThat(Thread.interrupted()).as("the interrupt status is kept").isTrue();
        assertThat(receiver.await(Duration.ofMillis(1))).as("no wakeup left behind").isFalse();
    }

    /** Has another thread interrupt this one, and waits for it without a call that an interrupt ends (which would clear it). */
    private void interruptedByAnotherThread() {
        Thread self = Thread.currentThread();
        AtomicBoolean done = new AtomicBoolean();
        threads.submit(() -> {
            self.interrupt(); // from another thread: only then does Thread.interrupt run the await's interrupt hook
            done.set(true);
        });
        long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!done.get()) {
            if (System.nanoTime() - guard > 0) throw new AssertionError("hang guard: the interrupting thread never ran");
            Thread.onSpinWait();
        }
    }

    /**
     * Under PASS_THROUGH a worker's close may run while another thread is in its await. With no
     * transport that can sleep the await parks in slices and progresses the transports between
     * them; it looked at nothing that says the worker closed, so it went on progressing the closed
     * transports until its whole timeout passed. It throws IllegalStateException, as every other
     * call on a closed worker does.
     */
    @Test
    void anAwaitUnderPassThroughEndsWhenAnotherThreadClosesTheWorker() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true).capabilities(Capability.RMA);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        long callsBefore = plugin.transport().calls.get();
        Future<Boolean> sleeper = threads.submit(() -> worker.await(Duration.ofHours(1)));
        long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (plugin.transport().calls.get() < callsBefore + 2) { // progressed between two slices: inside the await loop
            if (System.nanoTime() - guard > 0) throw new AssertionError("hang guard: the await never progressed between slices");
            Thread.sleep(1);
        }

        worker.close();

        Throwable ended = catchThrowable(() -> sleeper.get(WAIT_SECONDS, TimeUnit.SECONDS));
        assertThat(ended).as("hang guard: the await slept on after its worker closed").isNotInstanceOf(java.util.concurrent.TimeoutException.class);
        assertThat(ended).as("it throws, as every call on a closed worker does").isInstanceOf(ExecutionException.class);
        assertThat(ended.getCause()).isInstanceOf(IllegalStateException.class).hasMessageStartingWith("worker is closed");
    }

    /**
     * The same with a transport that can sleep, and no other: the await sleeps in it for the whole
     * timeout in one slice, so only a wake from the close ends it; nothing woke it.
     */
    @Test
    void anAwaitAsleepInItsTransportUnderPassThroughIsWokenByAnotherThreadsCloseOfTheWorker() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Future<Boolean> sleeper = threads.submit(() -> worker.await(Duration.ofHours(1)));
        plugin.transport().awaitSleeper();

        worker.close();

        Throwable ended = catchThrowable(() -> sleeper.get(WAIT_SECONDS, TimeUnit.SECONDS));
        assertThat(ended).as("hang guard: the await slept on after its worker closed").isNotInstanceOf(java.util.concurrent.TimeoutException.class);
        assertThat(ended).isInstanceOf(ExecutionException.class);
        assertThat(ended.getCause()).isInstanceOf(IllegalStateException.class).hasMessageStartingWith("worker is closed");
    }

    /**
     * An await that another thread's close of the worker overtakes between its look at the close
     * and its sleep: the close's wake finds no sleep, and the transport it then closes refuses the
     * sleep, as shm's ensureOpen does. The await throws what every call on a closed worker throws,
     * as commit 6ac10d3f promises; it threw the transport's own IllegalStateException instead.
     */
    @Test
    void anAwaitThatAnotherThreadsCloseOvertakesBeforeItsSleepSaysTheWorkerIsClosed() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Worker worker = loopbacks.conduit(plugin).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        plugin.transport().awaitRefusedOnceClosed = true;
        plugin.transport().beforeAwait = closingOnAnotherThreadOnce(worker);

        Throwable thrown = catchThrowable(() -> worker.await(Duration.ofHours(1)));

        assertThat(thrown).isInstanceOf(IllegalStateException.class).hasMessageStartingWith("worker is closed");
    }

    /**
     * Under PASS_THROUGH a close asked for from a handler ({@code Conduit.close()}) waits for every
     * thread's handler, and meanwhile another thread's await has no close to serve: it must sleep,
     * to be woken by that close. It returned {@code true} at once, with no work, at every call
     * (its "a close request is served as the call returns" holds no more since 2026-12-07), so that
     * a loop of await and progress spins for as long as the handler runs.
     */
    @Test
    void anAwaitUnderPassThroughSleepsWhileAnotherThreadsHandlerThatClosedTheConduitStillRuns() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        CountDownLatch conduitClosed = new CountDownLatch(1);
        CountDownLatch handlerMayReturn = new CountDownLatch(1);
        worker.onMessage(1, m -> {
            conduit.close();
            conduitClosed.countDown();
            try {
                await(handlerMayReturn);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        worker.connect(worker.address()).send(1, longs(1));
        Future<?> handling = threads.submit(() -> {
            while (conduitClosed.getCount() > 0) worker.progress();
            return null;
        });
        await(conduitClosed);
        AtomicInteger awaitsReturned = new AtomicInteger();
        Future<?> awaitLoop = threads.submit(() -> {
            while (true) {
                worker.await(Duration.ofHours(1));
                awaitsReturned.incrementAndGet();
            }
        });

        int returnedBeforeASleep;
        try {
            long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
            while (!plugin.transport().waiting && awaitsReturned.get() < 1_000) {
                if (System.nanoTime() - guard > 0) throw new AssertionError("hang guard: the awaits neither slept nor returned");
                Thread.sleep(1);
            }
            returnedBeforeASleep = awaitsReturned.get();
        } finally {
            handlerMayReturn.countDown();
        }
        handling.get(WAIT_SECONDS, TimeUnit.SECONDS);
        Throwable ended = catchThrowable(() -> awaitLoop.get(WAIT_SECONDS, TimeUnit.SECONDS));

        assertThat(returnedBeforeASleep).as("awaits of an hour that returned, with no work, before one slept in the transport")
                .isLessThan(1_000);
        assertThat(ended).as("the worker's close, once the handler returned, ends the await").isInstanceOf(ExecutionException.class);
        assertThat(ended.getCause()).isInstanceOf(IllegalStateException.class).hasMessageStartingWith("worker is closed");
    }

    /**
     * An error handler that runs between an await's slices (here for a peer's death that the polled
     * transport reports without counting an event for it) makes the await return {@code true}, as
     * a failure left to report does: it slept on, and returned {@code false} at its timeout, though
     * the caller's handler had run.
     */
    @Test
    void anAwaitInWhichAnErrorHandlerRanReturnsTrue() {
        LoopbackPlugin waking = new LoopbackPlugin("lo-w", 8, false).priority(190);
        LoopbackPlugin polled = new LoopbackPlugin("lo-n", 8, false).capabilities(Capability.RMA).priority(110);
        polled.countsDeathReports = false;
        Worker worker = loopbacks.conduit(waking, polled).newWorker(ThreadMode.SINGLE);
        LoopbackPlugin peer = new LoopbackPlugin("lo-n", 8, false);
        Worker peerWorker = loopbacks.conduit(peer).newWorker(ThreadMode.SINGLE);
        AtomicInteger handlerRuns = new AtomicInteger();
        Endpoint ep = worker.connect(peerWorker.address(), (e, failure) -> handlerRuns.incrementAndGet());
        assertThat(ep.transport()).isEqualTo("lo-n");
        peer.transport().kill();

        boolean woke = worker.await(Duration.ofSeconds(WAIT_SECONDS));

        assertThat(handlerRuns).as("the error handler ran in the await").hasValue(1);
        assertThat(woke).as("the await says it had work").isTrue();
    }

    /** A MULTI worker over {@code plugins}, which declare SERIALIZED at most: the runtime lock guards it. */
    private Worker multiWorkerUnderTheRuntimeLock(LoopbackPlugin... plugins) {
        Worker worker = loopbacks.conduit(plugins).newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
        return worker;
    }
}
