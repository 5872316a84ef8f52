package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.ThreadStacks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import static dev.conduit.internal.worker.Loopbacks.longs;
import static dev.conduit.internal.worker.Loopbacks.progressUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The runtime's keepalive ({@code keepalive.interval}, {@link Keepalive}): every interval, a
 * worker's next progress round asks each endpoint's transport whether the peer lives
 * ({@code TransportEndpoint.checkPeer}), on the worker's own thread, and fails the endpoint of one
 * found dead as any report of the transport's would.
 */
class KeepaliveTest {

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    private Conduit conduit(LoopbackPlugin plugin) {
        return loopbacks.conduit(b -> b.set("keepalive.interval", "1ms"), plugin);
    }

    /**
     * A transport that finds a dead peer only when asked (its progress never reports one) gets its
     * endpoint failed by the runtime's keepalive: the error handler runs once, with the probe's
     * cause, on the thread that progresses the SINGLE worker, and no call of the runtime overlapped
     * the probe. Without the keepalive such a transport left the endpoint open for good.
     */
    @Test
    void aPeerThatOnlyTheProbeFindsDeadFailsItsEndpointThroughTheKeepalive() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false);
        plugin.reportsDeathInProgress = false;
        plugin.probesPeers = true;
        Conduit conduit = conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.SINGLE);
        Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
        List<PeerFailedException> reported = new CopyOnWriteArrayList<>();
        Endpoint ep = sender.connect(receiver.address(), (endpoint, cause) -> reported.add(cause));
        ep.send(1, longs(1));
        LoopbackPlugin.LoopbackEndpoint te = plugin.transports.get(0).endpoints.getFirst();
        progressUntil(() -> te.probes.get() >= 2, sender, receiver);
        assertThat(reported).as("failures reported while the peer lived").isEmpty();

        plugin.transports.get(1).kill();
        progressUntil(() -> !reported.isEmpty(), sender);

        assertThat(reported).singleElement().satisfies(cause -> assertThat(cause)
                .hasMessageContaining("endpoint over 'lo'")
                .hasRootCauseMessage("loopback peer " + plugin.transports.get(1).key + " found dead by the keepalive probe"));
        assertThat(ep.isFailed()).isTrue();
        // The transport's reason, kept by the failure the error handler got, the endpoint's, and what its calls throw.
        assertThat(reported.getFirst().reason()).isEqualTo(PeerFailedException.Reason.DIED);
        assertThat(ep.failure().reason()).isEqualTo(PeerFailedException.Reason.DIED);
        assertThat(((PeerFailedException) catchThrowable(() -> ep.send(2, longs(2)))).reason())
                .isEqualTo(PeerFailedException.Reason.DIED);
        assertThat(te.probedOn).as("the thread of the probes").isSameAs(Thread.currentThread());
        assertThat(plugin.transports.get(0).overlaps.get()).as("calls into the sender's transport that overlapped").isZero();
        long probes = te.probes.get();
        for (int i = 0; i < 1000; i++) sender.progress();
        assertThat(te.probes.get()).as("probes of a failed endpoint").isEqualTo(probes);
    }

    /** A transport without a probe ({@code NotSupportedException}, the SPI's default) is asked once per endpoint, never again. */
    @Test
    void aTransportWithoutAProbeIsAskedOncePerEndpoint() throws InterruptedException {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false);
        Conduit conduit = conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.SINGLE);
        Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
        sender.connect(receiver.address());
        LoopbackPlugin.LoopbackEndpoint te = plugin.transports.get(0).endpoints.getFirst();
        progressUntil(() -> te.probes.get() >= 1, sender);
        for (int round = 0; round < 20; round++) {
            Thread.sleep(2); // past an interval: the keepalive marks the worker again
            for (int i = 0; i < 100; i++) sender.progress();
        }
        assertThat(te.probes.get()).as("probes of an endpoint whose transport said it has none").isEqualTo(1);
    }

    /**
     * A probe that throws anything but {@code PeerFailedException} (the plugin's own failure) is
     * thrown by the progress round, as a transport's failing progress is, after the round asked
     * every other endpoint; the endpoint is not failed for it.
     */
    @Test
    void aProbesOwnFailureIsThrownByProgressAfterTheOtherEndpointsWereAsked() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false);
        plugin.probesPeers = true;
        Conduit conduit = conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint first = sender.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        Endpoint second = sender.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        List<LoopbackPlugin.LoopbackEndpoint> endpoints = plugin.transports.get(0).endpoints;
        IllegalStateException fault = new IllegalStateException("the probe's own failure");
        plugin.probeFault = fault;
        long before = endpoints.get(1).probes.get();

        Throwable thrown = null;
        for (long round = 0; thrown == null; round++) {
            if (round > Loopbacks.MAX_ROUNDS) throw new AssertionError("no progress round threw the probe's failure");
            thrown = catchThrowable(sender::progress);
        }

        assertThat(thrown).isSameAs(fault);
        assertThat(endpoints.get(1).probes.get()).as("probes of the second endpoint").isGreaterThan(before);
        assertThat(first.isFailed()).isFalse();
        assertThat(second.isFailed()).isFalse();
    }

    /**
     * A probe's {@code Error} other than a fault on mapped memory (here an {@code AssertionError},
     * a plugin's {@code assert}) is thrown by the progress round as it is and at once, as one from
     * a transport's progress is: the round does not go on to the error handlers, and a death that
     * an earlier probe of the round found is reported by the next {@code progress()}, not lost.
     */
    @Test
    void aProbesErrorIsThrownAtOnceAndADeathTheRoundFoundIsReportedByTheNextProgress() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false);
        plugin.reportsDeathInProgress = false;
        plugin.probesPeers = true;
        Conduit conduit = conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.SINGLE);
        List<PeerFailedException> reported = new CopyOnWriteArrayList<>();
        Endpoint dying = sender.connect(conduit.newWorker(ThreadMode.SINGLE).address(), (endpoint, cause) -> reported.add(cause));
        sender.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        LoopbackPlugin.LoopbackEndpoint asserting = plugin.transports.get(0).endpoints.get(1);
        AssertionError error = new AssertionError("the plugin's assert in its probe");
        plugin.transports.get(1).kill();
        asserting.probeError = error;

        Throwable thrown = null;
        for (long round = 0; thrown == null; round++) {
            if (round > Loopbacks.MAX_ROUNDS) throw new AssertionError("no progress round threw the probe's error");
            thrown = catchThrowable(sender::progress);
        }

        assertThat(thrown).isSameAs(error);
        assertThat(dying.isFailed()).as("the endpoint whose probe, asked first, found its peer dead").isTrue();
        assertThat(reported).as("error handler calls in the round that threw").isEmpty();
        asserting.probeError = null;
        sender.progress();
        assertThat(reported).singleElement().satisfies(cause -> assertThat(cause.reason()).isEqualTo(PeerFailedException.Reason.DIED));
    }

    /** A plugin confined to a thread of its own ({@code thread.confine}) is probed on that thread, as every call to it runs. */
    @Test
    void aConfinedTransportIsProbedOnItsOwnThread() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false).singleOnly();
        plugin.probesPeers = true;
        Conduit conduit = loopbacks.conduit(b -> b.set("keepalive.interval", "1ms").set("thread.confine", "true"), plugin);
        Worker sender = conduit.newWorker(ThreadMode.SERIALIZED);
        sender.connect(conduit.newWorker(ThreadMode.SERIALIZED).address());
        LoopbackPlugin.LoopbackEndpoint te = plugin.transports.get(0).endpoints.getFirst();

        progressUntil(() -> te.probes.get() >= 1, sender);

        assertThat(te.probedOn.getName()).as("the thread of the probe").isEqualTo("conduit-confined-lo");
    }

    /**
     * Under {@code PASS_THROUGH} (a {@code MULTI} worker over a {@code MULTI} plugin) two threads
     * progress one worker: one's transport progress reports a dead peer under a lock of the
     * plugin's, while the other's keepalive round probes the same endpoint, which takes that lock.
     * The report waits, holding it, until the probe has begun, so that the two meet in the order
     * that deadlocked while the runtime probed under the endpoint's lock (the report's
     * {@code peerFailed} takes that lock): both threads then stayed blocked for good.
     */
    @Test
    void aProbeUnderThePluginsLockDoesNotDeadlockWithAReportUnderItOnAMultiWorker() throws InterruptedException {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, true);
        plugin.probesPeers = true;
        plugin.probeAndReportUnderOneLock = true;
        Conduit conduit = conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.MULTI);
        List<PeerFailedException> reported = new CopyOnWriteArrayList<>();
        sender.connect(conduit.newWorker(ThreadMode.MULTI).address(), (endpoint, cause) -> reported.add(cause));
        List<Throwable> thrown = new CopyOnWriteArrayList<>();
        plugin.transports.get(1).kill();

        List<Thread> threads = new java.util.ArrayList<>();
        for (int t = 0; t < 2; t++) {
            // Daemons: a deadlocked pair must not keep the test JVM alive.
            threads.add(Thread.ofPlatform().daemon().name("progress-" + t).start(() -> {
                try {
                    for (long round = 0; reported.isEmpty() && round < Loopbacks.MAX_ROUNDS; round++) sender.progress();
                } catch (Throwable e) {
                    thrown.add(e);
                }
            }));
        }
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(1); // a hang guard: a passing run joins at once
        for (Thread thread : threads) thread.join(java.time.Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
        if (threads.stream().anyMatch(Thread::isAlive)) loopbacks.leaveOpen(conduit); // its close would wait on the deadlock

        assertThat(threads).as("threads still in progress(), deadlocked: %s", ThreadStacks.of(threads)).noneMatch(Thread::isAlive);
        assertThat(thrown).as("what progress() threw").isEmpty();
        assertThat(plugin.transports.get(0).reportMetAProbe).as("a probe began while the report held the plugin's lock").isTrue();
        assertThat(reported).singleElement().satisfies(cause -> assertThat(cause)
                .hasRootCauseMessage("loopback peer " + plugin.transports.get(1).key + " died"));
    }

    /**
     * An {@code await} that progresses the transports between its sleeps (none of them can sleep)
     * and finds a dead peer through the keepalive returns {@code true}, having called the error
     * handler: it slept on for its whole timeout, the failure counted as no work.
     */
    @Test
    void anAwaitWhoseRoundFindsADeadPeerReturnsTrue() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false).capabilities(dev.conduit.spi.Capability.RMA); // no WAKEUP
        plugin.reportsDeathInProgress = false;
        plugin.probesPeers = true;
        Conduit conduit = conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.SINGLE);
        List<PeerFailedException> reported = new CopyOnWriteArrayList<>();
        sender.connect(conduit.newWorker(ThreadMode.SINGLE).address(), (endpoint, cause) -> reported.add(cause));
        plugin.transports.get(1).kill();

        boolean work = false;
        for (int i = 0; i < 100 && reported.isEmpty(); i++) work = sender.await(java.time.Duration.ofMinutes(1)); // past the keepalive: false unless it counted

        assertThat(reported).as("failures reported").hasSize(1);
        assertThat(work).as("what the await that found the dead peer returned").isTrue();
    }

    /** A Conduit dropped without a close is not kept alive by its keepalive thread, which then ends. */
    @Test
    void aConduitDroppedUnclosedIsNotKeptAliveByItsKeepalive() throws InterruptedException {
        Set<Thread> before = keepaliveThreads();
        java.lang.ref.WeakReference<Conduit> dropped = dropAConduitWithAClosedWorker();
        Set<Thread> started = keepaliveThreads();
        started.removeAll(before);
        assertThat(started).as("keepalive threads started by the dropped Conduit").hasSize(1);
        Thread keepalive = started.iterator().next();

        for (int i = 0; i < 600 && (dropped.get() != null || keepalive.isAlive()); i++) {
            System.gc();
            keepalive.join(100);
        }

        assertThat(dropped.get()).as("the dropped Conduit, after collections").isNull();
        assertThat(keepalive.isAlive()).as("its keepalive thread alive after the Conduit was collected").isFalse();
    }

    private static java.lang.ref.WeakReference<Conduit> dropAConduitWithAClosedWorker() {
        Conduit conduit = Conduit.builder().discoverPlugins(false).environment(java.util.Map.of())
                .systemProperties(new java.util.Properties()).set("keepalive.interval", "1ms")
                .addPlugin(new LoopbackPlugin("lo", 16, false)).build();
        conduit.newWorker(ThreadMode.SINGLE).close();
        return new java.lang.ref.WeakReference<>(conduit);
    }

    /** The keepalive's thread starts with a Conduit's first worker and ends with its close. */
    @Test
    void theKeepalivesThreadStartsWithTheFirstWorkerAndEndsWithTheConduit() {
        Set<Thread> before = keepaliveThreads();
        Conduit conduit = conduit(new LoopbackPlugin("lo", 16, false));
        assertThat(keepaliveThreads()).as("keepalive threads of a Conduit with no worker").isEqualTo(before);

        conduit.newWorker(ThreadMode.SINGLE);
        conduit.newWorker(ThreadMode.SINGLE);
        Set<Thread> started = keepaliveThreads();
        started.removeAll(before);
        assertThat(started).as("keepalive threads started by the Conduit's two workers").hasSize(1);

        conduit.close();
        assertThat(started.iterator().next().isAlive()).as("the keepalive thread alive after its Conduit closed").isFalse();
    }

    private static Set<Thread> keepaliveThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("conduit-keepalive") && t.isAlive())
                .collect(Collectors.toSet());
    }
}
