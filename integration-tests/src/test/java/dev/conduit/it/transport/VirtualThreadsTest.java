package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.LoadTest;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.RemotePeer;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Workers used from virtual threads, as a Java 25 service that handles each request on one: a
 * worker's {@code await} sleeps in its transport's futex wait, a native call that pins the virtual
 * thread's carrier for the whole sleep, and the runtime hands that sleep to a platform thread so
 * that the virtual thread unmounts. Nothing is timed: every wait is a hang guard.
 */
@LoadTest
class VirtualThreadsTest {

    /** How long a virtual thread may take to run, or a call to come back: a hang guard, not a speed check. */
    private static final Duration GUARD = Duration.ofSeconds(60);
    /** Longer than any guard: an await that returns before it was woken. */
    private static final Duration LONG = Duration.ofMinutes(5);

    /** The carriers of the default virtual-thread scheduler, as the JDK counts them. */
    private static int carriers() {
        return Integer.getInteger("jdk.virtualThreadScheduler.parallelism", Runtime.getRuntime().availableProcessors());
    }

    /** A virtual thread started now runs within the hang guard, while {@code busy} hold as many virtual threads as there are carriers. */
    private static void assertAnUnrelatedVirtualThreadRuns(String busy) throws Exception {
        CompletableFuture<String> unrelated = new CompletableFuture<>();
        Thread.ofVirtual().name("unrelated").start(() -> unrelated.complete("ran"));
        String ran;
        try {
            ran = unrelated.get(GUARD.toSeconds(), TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            ran = "did not run within the hang guard of " + GUARD + ": the " + busy + " pin every carrier";
        }
        assertThat(ran).isEqualTo("ran");
    }

    private static boolean inImportersPoll(Thread t) {
        StackTraceElement[] stack = t.getStackTrace();
        return Arrays.stream(stack).anyMatch(f -> f.getClassName().endsWith("MemfdImporter"))
                && Arrays.stream(stack).anyMatch(f -> f.getMethodName().equals("poll"));
    }

    private static boolean inTransportSleep(Thread t) {
        return Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getMethodName().contains("futexWait"));
    }

    /**
     * As many virtual threads as the scheduler has carriers, each in {@code await} on a {@code SINGLE}
     * worker of its own, leave every other virtual thread of the JVM free to run: an unrelated virtual
     * thread runs while they sleep, and each await still returns {@code true} when its worker is
     * signalled. Before the sleep was handed to a platform thread, each await pinned its carrier
     * in the futex wait and the unrelated thread did not run until the awaits returned: the service
     * starved (this test's guard ran out).
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void virtualThreadsAsleepInAwaitOnEveryCarrierLeaveTheOthersRunning(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        int n = carriers();
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h")) {
            List<CompletableFuture<Worker>> workers = new ArrayList<>();
            List<CompletableFuture<Boolean>> woke = new ArrayList<>();
            List<Thread> sleepers = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                CompletableFuture<Worker> worker = new CompletableFuture<>();
                CompletableFuture<Boolean> result = new CompletableFuture<>();
                workers.add(worker);
                woke.add(result);
                sleepers.add(Thread.ofVirtual().name("awaiting-" + i).start(() -> {
                    try (Worker w = conduit.newWorker(ThreadMode.SINGLE)) {
                        worker.complete(w);
                        result.complete(w.await(LONG));
                    } catch (Throwable e) {
                        worker.completeExceptionally(e);
                        result.completeExceptionally(e);
                    }
                }));
            }
            try {
                for (CompletableFuture<Worker> w : workers) w.get(GUARD.toSeconds(), TimeUnit.SECONDS);
                // Every sleeper is in its transport's futex wait (on a platform thread of the runtime's once handed over):
                // the await's own wait is what pins or not.
                Setup.waitUntil(() -> sleepers.stream().allMatch(t -> t.getState() == Thread.State.WAITING || inTransportSleep(t)),
                        GUARD, () -> "every awaiting virtual thread asleep");
                assertAnUnrelatedVirtualThreadRuns(n + " virtual threads in await");
            } finally {
                for (CompletableFuture<Worker> w : workers) if (w.isDone() && !w.isCompletedExceptionally()) w.get().signal();
            }
            for (CompletableFuture<Boolean> r : woke) assertThat(r.get(GUARD.toSeconds(), TimeUnit.SECONDS)).as("a signalled await").isTrue();
            for (Thread t : sleepers) assertThat(t.join(GUARD)).isTrue();
        }
    }

    /**
     * An interrupt ends the await of a virtual thread whose sleep was handed to a platform thread,
     * as it ends a platform thread's (AwaitInterruptTest): {@code true}, the interrupt status kept.
     * The interrupt reaches the parked virtual thread, not the platform thread asleep in the futex
     * wait, and the worker's signal, which the interrupt sends, wakes that one.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anInterruptWakesAVirtualThreadAsleepInAwait(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h")) {
            CompletableFuture<boolean[]> outcome = new CompletableFuture<>();
            Thread t = Thread.ofVirtual().start(() -> {
                try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                    boolean woke = worker.await(LONG);
                    outcome.complete(new boolean[] {woke, Thread.interrupted()});
                } catch (Throwable e) {
                    outcome.completeExceptionally(e);
                }
            });
            Setup.waitUntil(() -> t.getState() == Thread.State.WAITING && Thread.getAllStackTraces().entrySet().stream()
                            .anyMatch(e -> e.getKey().getName().startsWith("conduit-await-") && inTransportSleep(e.getKey())),
                    GUARD, () -> "the virtual thread parked while a platform thread sleeps in the futex wait for it");
            t.interrupt();
            boolean[] o = outcome.get(GUARD.toSeconds(), TimeUnit.SECONDS);
            assertThat(o[0]).as("await interrupted in its sleep returned true").isTrue();
            assertThat(o[1]).as("the interrupt status is kept").isTrue();
            assertThat(t.join(GUARD)).isTrue();
        }
    }

    /**
     * A virtual thread's await, handed to a platform thread, is still woken by every message from
     * another process: a ping-pong of 2 000 messages with a child, each echo awaited on a virtual
     * thread with {@code await(10 s)} then {@code progress()}. A lost wake-up leaves the await asleep
     * its whole 10 s with the echo there, and it returns {@code false}: none may. The same on a
     * platform thread, in the same run, for the report's mean round trip of each (what the hand-off
     * costs; reported, not asserted).
     */
    @ParameterizedTest
    @CsvSource({"memfd, virtual", "posix, virtual", "memfd, platform", "posix, platform"})
    void aVirtualThreadsAwaitWakesForEveryEchoFromAnotherProcess(String plugin, String kind, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        long rounds = 2_000;
        int stream = 4;
        Traffic.Receiver echoes = new Traffic.Receiver();
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h")) {
            WorkerAddress remote = child.worker("w", plugin, "SINGLE");
            CompletableFuture<WorkerAddress> address = new CompletableFuture<>();
            CompletableFuture<Boolean> connectedBack = new CompletableFuture<>();
            CompletableFuture<long[]> outcome = new CompletableFuture<>();
            Thread.Builder builder = kind.equals("virtual") ? Thread.ofVirtual() : Thread.ofPlatform();
            builder.name("ping-pong").start(() -> {
                try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                    worker.onMessage(Traffic.ECHO, echoes);
                    address.complete(worker.address());
                    connectedBack.get();
                    Endpoint ep = worker.connect(remote);
                    MemorySegment header = Traffic.newHeader();
                    long awaits = 0;
                    long ranOut = 0;
                    long start = System.nanoTime();
                    for (long i = 0; i < rounds && ranOut == 0 && !ep.isFailed(); i++) {
                        ep.send(Traffic.DATA, Traffic.header(header, stream, Traffic.Profile.SMALL, i),
                                Traffic.payload(stream, Traffic.Profile.SMALL, i));
                        long waitingSince = System.nanoTime();
                        while (echoes.received(stream) <= i && ranOut == 0 && !ep.isFailed()) {
                            awaits++;
                            boolean woke = worker.await(Duration.ofSeconds(10));
                            worker.progress();
                            if (!woke && echoes.received(stream) > i) ranOut++;
                            if (System.nanoTime() - waitingSince > GUARD.toNanos()) {
                                throw new AssertionError("no echo of round trip " + i + " for the hang guard of " + GUARD);
                            }
                        }
                    }
                    outcome.complete(new long[] {awaits, ranOut, ep.isFailed() ? 1 : 0, System.nanoTime() - start});
                } catch (Throwable e) {
                    outcome.completeExceptionally(e);
                }
            });
            child.connect("w", "back", address.get(GUARD.toSeconds(), TimeUnit.SECONDS));
            child.echo("w", "back");
            connectedBack.complete(true);
            long[] o;
            try {
                o = outcome.get(GUARD.toSeconds() * 5, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                throw new AssertionError("the virtual thread's ping-pong failed", e.getCause());
            }
            Setup.report("%s await on a %s thread in a ping-pong: %d round trips, %d awaits, %d ran out (false), %.1f us a round trip",
                    plugin, kind, echoes.received(stream), o[0], o[1], o[3] / 1e3 / Math.max(1, echoes.received(stream)));
            assertThat(o[1]).as("awaits that slept their whole 10 s with the echo waiting: lost wake-ups").isZero();
            assertThat(o[2]).as("endpoint failed").isZero();
            assertThat(echoes.errors()).isEmpty();
            assertThat(echoes.received(stream)).isEqualTo(rounds);
        }
    }
    /**
     * A request/response service's hop: a {@code MULTI} worker (the runtime's lock, as memfd and
     * posix declare {@code SINGLE} and {@code SERIALIZED}) shared by 1 000 requests, each on a fresh
     * virtual thread that sends 20 messages of its own stream, while one platform thread progresses
     * it; a child receives. Every message arrives, each request's in order: a virtual thread that
     * waits for the lock parks (it spins first, at most 20 µs), and nothing holds it across a call
     * that blocks.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aMultiWorkerSharedByVirtualThreadRequestsDeliversEachInOrder(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        int requests = 1_000;
        int perRequest = 20;
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.MULTI)) {
            assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
            WorkerAddress r = child.worker("r", plugin, "SINGLE");
            child.receive("r");
            Endpoint ep = worker.connect(r);
            AtomicBoolean stop = new AtomicBoolean();
            CompletableFuture<Long> progress = new CompletableFuture<>();
            Thread.ofPlatform().name("progress").start(() -> {
                try {
                    long rounds = 0;
                    while (!stop.get()) {
                        if (worker.progress() == 0) Thread.onSpinWait();
                        rounds++;
                    }
                    progress.complete(rounds);
                } catch (Throwable e) {
                    progress.completeExceptionally(e);
                }
            });
            List<Future<?>> sent = new ArrayList<>();
            try (ExecutorService service = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int q = 0; q < requests; q++) {
                    int stream = q;
                    sent.add(service.submit(() -> {
                        MemorySegment h = Traffic.newHeader();
                        for (long n = 0; n < perRequest; n++) {
                            ep.send(Traffic.DATA, Traffic.header(h, stream, Traffic.Profile.SMALL, n), Traffic.payload(stream, Traffic.Profile.SMALL, n));
                        }
                        return null;
                    }));
                }
                for (Future<?> f : sent) f.get(GUARD.toSeconds(), TimeUnit.SECONDS);
            }
            Setup.waitWhileProgressing(() -> child.messages("r"), (long) requests * perRequest, progress::isDone, GUARD,
                    () -> "messages the child took: " + child.messages("r") + ", pending " + ep.pending(), Setup.pause(Duration.ofMillis(20)));
            Setup.waitUntil(() -> ep.pending() == 0, GUARD, () -> "pending " + ep.pending());
            stop.set(true);
            long rounds = progress.get(GUARD.toSeconds(), TimeUnit.SECONDS);
            assertThat(child.stats("r")).containsEntry("errors", "0").containsEntry("messages", Long.toString((long) requests * perRequest));
            assertThat(ep.isFailed()).isFalse();
            Setup.report("%s MULTI worker: %d virtual-thread requests x %d messages, %d progress rounds", plugin, requests, perRequest, rounds);
        }
    }
    /**
     * Under the runtime lock ({@code MULTI} over memfd or posix) a virtual thread asleep in
     * {@code await} holds the lock while a platform thread sleeps in the transport for it; a virtual
     * thread that comes to send wakes it and gets the lock, as with a platform sleeper: its send goes
     * through long before the await's 5 minutes, and the await returns {@code true}.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aVirtualThreadThatComesToSendWakesAVirtualThreadAsleepInAwaitUnderTheRuntimeLock(String plugin,
                                                                                         @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h");
             Worker worker = conduit.newWorker(ThreadMode.MULTI)) {
            assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
            Endpoint self = worker.connect(worker.address());
            CompletableFuture<Boolean> woke = new CompletableFuture<>();
            Thread sleeper = Thread.ofVirtual().start(() -> {
                try {
                    woke.complete(worker.await(LONG));
                } catch (Throwable e) {
                    woke.completeExceptionally(e);
                }
            });
            Setup.waitUntil(() -> sleeper.getState() == Thread.State.WAITING && Thread.getAllStackTraces().keySet().stream()
                            .anyMatch(t -> t.getName().startsWith("conduit-await-") && inTransportSleep(t)),
                    GUARD, () -> "the virtual thread parked while a platform thread sleeps for it");
            CompletableFuture<Void> sent = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                try {
                    self.send(1, MemorySegment.ofArray(new byte[8]));
                    sent.complete(null);
                } catch (Throwable e) {
                    sent.completeExceptionally(e);
                }
            });
            sent.get(GUARD.toSeconds(), TimeUnit.SECONDS);
            assertThat(woke.get(GUARD.toSeconds(), TimeUnit.SECONDS)).as("the await, woken by the thread that came for the lock").isTrue();
            assertThat(sleeper.join(GUARD)).isTrue();
        }
    }
    /**
     * An import that misses the IPC cache waits for the exporter: over memfd it asks the exporter's
     * descriptor server and {@code poll}s for the answer, a native call. As many virtual threads as
     * carriers importing, each a chunk of its own, from an exporter frozen with {@code SIGSTOP}
     * (its server answers nobody; {@code memfd.connect.timeout} is an hour here) leave the other
     * virtual threads running: an unrelated one runs while they wait, and once the exporter goes on
     * every import completes. Before the importer's call was handed to
     * a platform thread, the unrelated thread did not run until the imports gave up.
     */
    @org.junit.jupiter.api.Test
    void virtualThreadsImportingFromAFrozenExporterLeaveTheOthersRunning(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        int n = carriers();
        try (RemotePeer exporter = RemotePeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, "memfd", "memfd.connect.timeout=1h")) {
            exporter.open();
            exporter.pool("memfd");
            List<byte[]> handles = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                exporter.allocate("r" + i, "memfd", 1 << 20); // above a quarter of the 2 MiB chunk: a chunk of its own
                exporter.fill("r" + i, i);
                handles.add(exporter.export("r" + i));
            }
            long pid = exporter.child().process().pid();
            ChildJvm.stop(pid);
            List<CompletableFuture<Long>> imported = new ArrayList<>();
            List<Thread> importers = new ArrayList<>();
            try {
                for (byte[] handle : handles) {
                    CompletableFuture<Long> size = new CompletableFuture<>();
                    imported.add(size);
                    importers.add(Thread.ofVirtual().start(() -> {
                        try (ImportedRegion region = conduit.importRegion(handle)) {
                            size.complete(region.segment().byteSize());
                        } catch (Throwable e) {
                            size.completeExceptionally(e);
                        }
                    }));
                }
                // Each import waits in its poll for the frozen server's answer, on its virtual thread or on a platform thread for it.
                Setup.waitUntil(() -> java.util.stream.Stream.concat(importers.stream(), Thread.getAllStackTraces().keySet().stream())
                                .filter(VirtualThreadsTest::inImportersPoll).count() == n,
                        GUARD, () -> "every import waiting in its poll for the exporter's answer");
                assertAnUnrelatedVirtualThreadRuns(n + " virtual threads importing");
                assertThat(imported).as("no import completed while the exporter was frozen").noneMatch(CompletableFuture::isDone);
            } finally {
                ChildJvm.signal(pid, "-CONT");
            }
            for (CompletableFuture<Long> size : imported) assertThat(size.get(GUARD.toSeconds(), TimeUnit.SECONDS)).isEqualTo(1L << 20);
        }
    }

    /**
     * {@code worker.connect} over memfd maps the peer's receive queue through the importer, which
     * asks the peer's descriptor server and {@code poll}s for its answer: a native call. As many
     * virtual threads as carriers, each connecting a worker of its own to a peer frozen with
     * {@code SIGSTOP} (its server answers nobody; {@code memfd.connect.timeout} is an hour here),
     * leave the other virtual threads running: an unrelated one runs while they wait, and once the
     * peer goes on every connect completes. Before the plugin made that exchange through
     * {@code PluginContext.blockingCall}, the unrelated thread did not run until the connects gave up.
     */
    @org.junit.jupiter.api.Test
    void virtualThreadsConnectingToAFrozenPeerLeaveTheOthersRunning(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        int n = carriers();
        try (RemoteTransportPeer peer = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, "memfd", "memfd.connect.timeout=1h", "memfd.liveness.interval=1h")) {
            WorkerAddress frozen = peer.worker("w", "memfd", "SINGLE");
            peer.stop();
            List<CompletableFuture<Boolean>> connected = new ArrayList<>();
            List<Thread> connecting = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    CompletableFuture<Boolean> failed = new CompletableFuture<>();
                    connected.add(failed);
                    connecting.add(Thread.ofVirtual().name("connecting-" + i).start(() -> {
                        try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                            failed.complete(worker.connect(frozen).isFailed());
                        } catch (Throwable e) {
                            failed.completeExceptionally(e);
                        }
                    }));
                }
                // Each connect waits in its poll for the frozen server's answer, on its virtual thread or on a platform thread for it.
                Setup.waitUntil(() -> java.util.stream.Stream.concat(connecting.stream(), Thread.getAllStackTraces().keySet().stream())
                                .filter(VirtualThreadsTest::inImportersPoll).count() == n,
                        GUARD, () -> "every connect waiting in its poll for the peer's answer");
                assertAnUnrelatedVirtualThreadRuns(n + " virtual threads connecting");
                assertThat(connected).as("no connect completed while the peer was frozen").noneMatch(CompletableFuture::isDone);
            } finally {
                peer.resume();
            }
            for (CompletableFuture<Boolean> failed : connected) {
                assertThat(failed.get(GUARD.toSeconds(), TimeUnit.SECONDS)).as("endpoint failed").isFalse();
            }
        }
    }

    /**
     * posix's connect waits on nothing of the peer's: it opens and maps the peer's queue file
     * ({@code O_NONBLOCK}, a lease looked at with {@code LOCK_NB}), so virtual threads connecting
     * to a peer frozen with {@code SIGSTOP} all complete while it is frozen, on as many virtual
     * threads as carriers: no native call of its connect waits long enough to pin a carrier.
     */
    @org.junit.jupiter.api.Test
    void posixConnectsToAFrozenPeerCompleteWhileItIsFrozen(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        int n = carriers();
        try (RemoteTransportPeer peer = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, "posix", "posix.liveness.interval=1h")) {
            WorkerAddress frozen = peer.worker("w", "posix", "SINGLE");
            peer.stop();
            try {
                List<CompletableFuture<Boolean>> connected = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    CompletableFuture<Boolean> failed = new CompletableFuture<>();
                    connected.add(failed);
                    Thread.ofVirtual().start(() -> {
                        try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                            failed.complete(worker.connect(frozen).isFailed());
                        } catch (Throwable e) {
                            failed.completeExceptionally(e);
                        }
                    });
                }
                for (CompletableFuture<Boolean> failed : connected) {
                    assertThat(failed.get(GUARD.toSeconds(), TimeUnit.SECONDS)).as("endpoint failed").isFalse();
                }
            } finally {
                peer.resume();
            }
        }
    }

    /**
     * An interrupt of a virtual thread whose memfd connect waits for a frozen peer's answer, on a
     * platform thread for it, does not end the wait, as it did not on the virtual thread itself
     * (the {@code poll} sees no interrupt): the connect fails at {@code memfd.connect.timeout} with
     * the importer's {@code ConduitException} naming that key, the interrupt status kept, and no
     * descriptor, mapping or file of the attempt is left behind.
     */
    @org.junit.jupiter.api.Test
    void anInterruptedVirtualThreadsConnectToAFrozenPeerEndsAtTheTimeoutLeavingNothing(@TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemoteTransportPeer peer = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, "memfd", "memfd.connect.timeout=5s", "memfd.liveness.interval=1h")) {
            WorkerAddress frozen = peer.worker("w", "memfd", "SINGLE");
            peer.stop();
            try {
                CompletableFuture<Worker> worker = new CompletableFuture<>();
                CompletableFuture<Void> go = new CompletableFuture<>();
                CompletableFuture<Object[]> outcome = new CompletableFuture<>();
                Thread t = Thread.ofVirtual().name("connecting").start(() -> {
                    try (Worker w = conduit.newWorker(ThreadMode.SINGLE)) {
                        worker.complete(w);
                        go.get();
                        Throwable failure = null;
                        try {
                            w.connect(frozen);
                        } catch (Throwable e) {
                            failure = e;
                        }
                        // Taken before the worker's close, which closes its own descriptor server and removes its files.
                        outcome.complete(new Object[] {failure, Thread.interrupted(), OpenResources.ofThisProcess(), Setup.files(shared)});
                    } catch (Throwable e) {
                        worker.completeExceptionally(e);
                        outcome.completeExceptionally(e);
                    }
                });
                worker.get(GUARD.toSeconds(), TimeUnit.SECONDS);
                List<String> files = Setup.files(shared);
                OpenResources before = OpenResources.ofThisProcess();
                go.complete(null);
                Setup.waitUntil(() -> java.util.stream.Stream.concat(java.util.stream.Stream.of(t), Thread.getAllStackTraces().keySet().stream())
                        .anyMatch(VirtualThreadsTest::inImportersPoll), GUARD, () -> "the connect waiting in its poll for the peer's answer");
                t.interrupt();
                Object[] o = outcome.get(GUARD.toSeconds(), TimeUnit.SECONDS);
                assertThat((Throwable) o[0]).isInstanceOf(ConduitException.class).hasMessageContaining("did not answer within")
                        .hasMessageContaining("memfd.connect.timeout");
                assertThat(o[1]).as("the interrupt status is kept").isEqualTo(true);
                OpenResources after = (OpenResources) o[2];
                assertThat(after.socketFds()).as("sockets open").isEqualTo(before.socketFds());
                assertThat(after.conduitFds()).as("descriptors on Conduit's files").isEqualTo(before.conduitFds());
                assertThat(after.conduitMappings()).as("mappings of Conduit's chunks").isEqualTo(before.conduitMappings());
                assertThat(o[3]).as("the shared directory").isEqualTo(files);
                assertThat(t.join(GUARD)).isTrue();
            } finally {
                peer.resume();
            }
        }
    }

    /**
     * What the hand-off adds to a memfd connect that is answered: rounds of 200 connects (each
     * endpoint closed) from a worker to a child's, alternately on a virtual and on a platform
     * thread after a round of each to warm up, in the same run; the means are reported, not
     * asserted. Every endpoint connects.
     */
    @org.junit.jupiter.api.Test
    void aMemfdConnectOnAVirtualThreadIsAnsweredAsOnAPlatformThread(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        int connects = 200;
        int rounds = 3;
        try (RemoteTransportPeer peer = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, "memfd", "memfd.liveness.interval=1h")) {
            WorkerAddress remote = peer.worker("w", "memfd", "SINGLE");
            peer.receive("w");
            long[] nanos = new long[2]; // virtual, platform
            for (int round = 0; round <= rounds; round++) {
                for (int kind = 0; kind < 2; kind++) {
                    CompletableFuture<long[]> outcome = new CompletableFuture<>();
                    (kind == 0 ? Thread.ofVirtual() : Thread.ofPlatform()).start(() -> {
                        try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                            long failed = 0;
                            long start = System.nanoTime();
                            for (int i = 0; i < connects; i++) {
                                Endpoint ep = worker.connect(remote);
                                if (ep.isFailed()) failed++;
                                ep.close();
                                worker.progress();
                            }
                            outcome.complete(new long[] {failed, System.nanoTime() - start});
                        } catch (Throwable e) {
                            outcome.completeExceptionally(e);
                        }
                    });
                    long[] o = outcome.get(GUARD.toSeconds() * 5, TimeUnit.SECONDS);
                    assertThat(o[0]).as("endpoints failed").isZero();
                    if (round > 0) nanos[kind] += o[1];
                }
            }
            Setup.report("memfd connect (with its close), %d rounds of %d alternated: %.1f us on a virtual thread, %.1f us on a platform thread",
                    rounds, connects, nanos[0] / 1e3 / rounds / connects, nanos[1] / 1e3 / rounds / connects);
        }
    }
}
