package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Thread modes on a real connection to another process: a {@code MULTI} worker hammered by four
 * sending threads while a fifth progresses it, and a {@code SINGLE} worker used from a thread that
 * does not own it, whose connect then connects nothing on either side.
 */
class ThreadModesAcrossProcessesTest {

    /**
     * How long no message may arrive, or a call or a sender's tail may take: a hang guard, not a
     * speed check. No {@code @Timeout} bounds a whole test: the waits for the streams run from the
     * last message the child took ({@link Setup#waitWhileProgressing}), and every call to the
     * child has its own reply timeout.
     */
    private static final Duration GUARD = Duration.ofSeconds(120);
    /** How often a wait asks the child how far its receiver got. */
    private static final Duration CHILD_POLL = Duration.ofMillis(20);

    /**
     * Four threads send 50 000 mixed messages each on one endpoint of a {@code MULTI} worker (the
     * shared-memory plugins declare {@code SINGLE} and {@code SERIALIZED}, so the runtime's lock is
     * in force) while one thread progresses it, which is what drains the endpoint's local queue.
     * A child receives: every message arrives, each thread's in the order it sent them, and its
     * {@code progress()} never throws.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aMultiWorkerHammeredByFourSendingThreadsDeliversEverythingInPerThreadOrder(String plugin,
                                                                                    @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        int threads = 4;
        long perThread = 50_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.MULTI)) {
            assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
            WorkerAddress r = child.worker("r", plugin, "SINGLE");
            child.receive("r");
            Endpoint ep = worker.connect(r);

            AtomicBoolean stop = new AtomicBoolean();
            Future<Long> progress = pool.submit(() -> {
                long rounds = 0;
                while (!stop.get()) {
                    if (worker.progress() == 0) Thread.onSpinWait();
                    rounds++;
                }
                return rounds;
            });
            List<Future<Long>> senders = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int stream = t;
                senders.add(pool.submit(() -> {
                    MemorySegment h = Traffic.newHeader();
                    long maxPending = 0;
                    for (long n = 0; n < perThread; n++) {
                        ep.send(Traffic.DATA, Traffic.header(h, stream, Traffic.Profile.MIXED, n), Traffic.payload(stream, Traffic.Profile.MIXED, n));
                        if ((n & 63) == 0) {
                            long p = ep.pending();
                            maxPending = Math.max(maxPending, p);
                            while (p > 8192) { // the progress thread drains; a sender only waits
                                Thread.yield();
                                p = ep.pending();
                            }
                        }
                    }
                    return maxPending;
                }));
            }
            Setup.waitWhileProgressing(() -> child.messages("r"), threads * perThread,
                    () -> senders.stream().anyMatch(f -> f.state() == Future.State.FAILED) || progress.isDone() || child.progressErrors("r") > 0,
                    GUARD, () -> "messages the child took of " + threads + " threads' streams: " + child.stats("r") + "; senders "
                            + senders.stream().map(Future::state).toList() + ", pending " + ep.pending() + ", progress thread "
                            + progress.state(),
                    Setup.pause(CHILD_POLL));
            child.assertNoFailures("r"); // a receiving thread whose progress() throws may deliver on, or stop: either fails here at once
            assertStillProgressing(progress);
            // The senders' tails and the local queue drain only while the progress thread runs: a throw there ends the wait.
            Setup.waitUntil(() -> progress.isDone() || senders.stream().allMatch(Future::isDone) && ep.pending() == 0, GUARD,
                    () -> "senders " + senders.stream().map(Future::state).toList() + ", pending " + ep.pending());
            assertStillProgressing(progress);
            List<Long> maxPending = new ArrayList<>();
            for (Future<Long> f : senders) maxPending.add(f.get(GUARD.toSeconds(), TimeUnit.SECONDS));
            stop.set(true);
            long rounds = progress.get(GUARD.toSeconds(), TimeUnit.SECONDS);

            assertThat(child.stats("r")).containsEntry("errors", "0").containsEntry("streams", "0:50000,1:50000,2:50000,3:50000");
            assertThat(ep.isFailed()).isFalse();
            Setup.report("%s MULTI worker: %d threads x %d messages on one endpoint, %d progress rounds; largest pending() seen per thread %s",
                    plugin, threads, perThread, rounds, maxPending);
        } finally {
            pool.shutdownNow();
        }
    }

    /** Fails at once, with its exception, if the thread that progresses the worker ended before it was told to stop. */
    private static void assertStillProgressing(Future<Long> progress) {
        if (progress.state() == Future.State.FAILED) throw new AssertionError("the progress thread threw", progress.exceptionNow());
        assertThat(progress.isDone()).as("the progress thread ended before it was told to stop").isFalse();
    }

    /**
     * A {@code SINGLE} worker belongs to the thread that created it: every call from another
     * thread — on the worker and on its endpoint — throws {@code WrongThreadException} and does
     * nothing: the child receives only what the owner sent, and the handler the other thread tried
     * to install never runs. {@code signal()} is the one call any thread may make.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aSingleWorkerRejectsEveryCallFromAnotherThread(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.OWNER_CHECK);
            WorkerAddress r = child.worker("r", plugin, "SINGLE");
            child.receive("r");
            Endpoint ep = worker.connect(r);
            MemorySegment h = Traffic.newHeader();
            AtomicInteger misusedHandlerCalls = new AtomicInteger();

            List<String> misuses = List.of("send", "pending", "progress", "await", "connect", "onMessage", "address", "flush", "close");
            for (String call : misuses) {
                Consumer<Void> attempt = v -> {
                    switch (call) {
                        case "send" -> ep.send(Traffic.DATA, Traffic.header(h, 0, Traffic.Profile.SMALL, 0), Traffic.payload(0, Traffic.Profile.SMALL, 0));
                        case "pending" -> ep.pending();
                        case "progress" -> worker.progress();
                        case "await" -> worker.await(Duration.ofMillis(1));
                        case "connect" -> worker.connect(r);
                        case "onMessage" -> worker.onMessage(9, m -> misusedHandlerCalls.incrementAndGet());
                        case "address" -> worker.address();
                        case "flush" -> ep.flush();
                        case "close" -> worker.close();
                        default -> throw new IllegalArgumentException(call);
                    }
                };
                CompletableFuture<Throwable> thrown = CompletableFuture.supplyAsync(() -> {
                    try {
                        attempt.accept(null);
                        return null;
                    } catch (Throwable t) {
                        return t;
                    }
                });
                assertThat(thrown.get(GUARD.toSeconds(), TimeUnit.SECONDS)).as("%s from another thread", call)
                        .isInstanceOf(WrongThreadException.class);
            }
            CompletableFuture.runAsync(worker::signal).get(GUARD.toSeconds(), TimeUnit.SECONDS);

            // The owner still works, and nothing the other thread tried went out.
            for (long n = 0; n < 100; n++) {
                ep.send(Traffic.DATA, Traffic.header(h, 0, Traffic.Profile.MIXED, n), Traffic.payload(0, Traffic.Profile.MIXED, n));
            }
            Setup.waitWhileProgressing(() -> 100 - ep.pending(), 100, () -> false, GUARD, () -> "sends of 100 handed on, pending " + ep.pending(),
                    worker::progress);
            Setup.waitWhileProgressing(() -> child.messages("r"), 100, () -> false, GUARD, () -> "messages the child took: " + child.stats("r"),
                    Setup.pause(CHILD_POLL));
            assertThat(child.stats("r")).containsEntry("errors", "0").containsEntry("streams", "0:100");

            // A message of the id the other thread tried to install a handler for arrives unhandled.
            long unhandled = worker.unhandledMessages();
            Endpoint self = worker.connect(worker.address());
            self.send(9, MemorySegment.NULL, MemorySegment.NULL);
            Setup.waitWhileProgressing(() -> worker.unhandledMessages() - unhandled + misusedHandlerCalls.get(), 1, () -> false, GUARD,
                    () -> "the message of id 9 to this worker", worker::progress);
            assertThat(misusedHandlerCalls).as("calls of the handler installed from another thread").hasValue(0);
            assertThat(worker.unhandledMessages()).isEqualTo(unhandled + 1);
        }
    }

    /**
     * A {@code SINGLE} worker's {@code connect} from a thread that does not own it throws
     * {@code WrongThreadException} and connects nothing, on either side. A connect's traces are
     * its own process's: the peer's receive queue mapped (memfd: after an exchange with the peer's
     * fd server), the peer's lease watched; the peer hears of a connection only at its first
     * message (CONNECT), which an endpoint never handed out cannot send. So this process maps
     * nothing more and opens no Conduit file or socket, the peer holds what it held, and the same
     * counts see the owner's next connect (one more mapping of the peer's queue), whose messages
     * then arrive beside the first endpoint's.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aSingleWorkersConnectFromAnotherThreadConnectsNothingOnEitherSide(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            WorkerAddress r = child.worker("r", plugin, "SINGLE");
            child.receive("r");
            Endpoint ep = worker.connect(r);
            MemorySegment h = Traffic.newHeader();
            ep.send(Traffic.DATA, Traffic.header(h, 0, Traffic.Profile.SMALL, 0), Traffic.payload(0, Traffic.Profile.SMALL, 0));
            Setup.waitWhileProgressing(() -> child.messages("r"), 1, () -> false, GUARD, () -> "the first message: " + child.stats("r"),
                    worker::progress);
            OpenResources here = OpenResources.ofThisProcess();
            OpenResources there = child.resources();

            Throwable thrown = CompletableFuture.supplyAsync(() -> {
                try {
                    worker.connect(r);
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            }).get(GUARD.toSeconds(), TimeUnit.SECONDS);
            assertThat(thrown).as("connect from another thread").isInstanceOf(WrongThreadException.class);
            assertThat(conduitHeld(OpenResources.ofThisProcess())).as("what this process holds of Conduit's after it")
                    .isEqualTo(conduitHeld(here));
            assertThat(conduitHeld(child.resources())).as("what the peer holds of Conduit's after it").isEqualTo(conduitHeld(there));

            // The counts see a connect that is made: the owner's.
            Endpoint second = worker.connect(r);
            assertThat(OpenResources.ofThisProcess().conduitMappings()).as("mappings after the owner's connect")
                    .isEqualTo(here.conduitMappings() + 1);
            second.send(Traffic.DATA, Traffic.header(h, 1, Traffic.Profile.SMALL, 0), Traffic.payload(1, Traffic.Profile.SMALL, 0));
            ep.send(Traffic.DATA, Traffic.header(h, 0, Traffic.Profile.SMALL, 1), Traffic.payload(0, Traffic.Profile.SMALL, 1));
            Setup.waitWhileProgressing(() -> child.messages("r"), 3, () -> false, GUARD, () -> "messages the child took: " + child.stats("r"),
                    worker::progress);
            child.assertNoFailures("r");
            assertThat(child.stats("r")).containsEntry("errors", "0").containsEntry("streams", "0:2,1:1");
        }
    }

    /** What {@code r} counts of Conduit's (descriptors on its files, sockets, mappings), not the JVM's other descriptors. */
    private static String conduitHeld(OpenResources r) {
        return "conduitFds=" + r.conduitFds() + " socketFds=" + r.socketFds() + " conduitMappings=" + r.conduitMappings();
    }
}
