package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.RecordingLogger;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static dev.conduit.plugin.verbs.TestWorker.bytes;
import static dev.conduit.plugin.verbs.TestWorker.connected;
import static dev.conduit.plugin.verbs.TestWorker.progressUntil;
import static dev.conduit.plugin.verbs.VerbsAbi.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The device's asynchronous events ({@code ibv_get_async_event}) as the transport acts on them,
 * raised on {@link LoopbackVerbs}: <b>a simulation of a device, not a device</b>. A queue pair in
 * error fails its endpoint naming the event, the port in use going down or the device failing fails
 * every connection, informational events fail nothing, and every event taken is acknowledged (the
 * simulation refuses to destroy a queue pair with an event that is not, where the library would
 * wait for ever: the closes after each test would throw).
 */
class AsyncEventTest {

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final LoopbackVerbs verbs = new LoopbackVerbs(IBV_ATOMIC_HCA);

    private TestWorker peer(String... keyValues) {
        TestWorker p = new TestWorker(verbs, keyValues);
        closing.add(p);
        return p;
    }

    /** Another worker of {@code other}'s plugin instance, so of its device context. */
    private TestWorker peerOnTheContextOf(TestWorker other) {
        TestWorker p = new TestWorker(other);
        closing.add(p);
        return p;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
        assertThat(verbs.openObjects()).as("queue pairs, regions, queues and channels left open").isZero();
        assertThat(verbs.receiverNotReady()).as("SENDs without a posted receive (credits overrun)").isZero();
        assertThat(verbs.completionQueueOverruns()).as("completions that found their queue full (CQ overrun)").isZero();
    }

    private static void delivered(TransportEndpoint e, TestWorker to, TestWorker... progress) {
        int before = to.received.size();
        progressUntil(() -> e.trySend(1, MemorySegment.NULL, bytes("m")), progress);
        progressUntil(() -> to.received.size() == before + 1, progress);
    }

    @Test
    void aQueuePairFatalEventFailsExactlyThatEndpointNamingTheEvent() {
        TestWorker a = peer();
        TestWorker b = peer();
        TestWorker c = peer();
        TransportEndpoint toB = connected(a.connect(b), a, b);
        TransportEndpoint toC = connected(a.connect(c), a, c);
        verbs.raise(IBV_EVENT_QP_FATAL, ((VerbsEndpoint) toB).queuePair());
        progressUntil(() -> !a.failures.isEmpty(), a);
        assertThat(a.failures).singleElement().satisfies(f -> assertThat(f.getMessage())
                .startsWith("verbs: peer 127.0.0.1:")
                .contains(": IBV_EVENT_QP_FATAL on the queue pair to it (qp " + ((VerbsEndpoint) toB).queuePair().number()
                        + " on device loop0 port 1): the adapter met an error it could not report in a completion")
                .contains("connect again"));
        assertThatThrownBy(() -> toB.trySend(1, MemorySegment.NULL, bytes("x"))).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("IBV_EVENT_QP_FATAL");
        delivered(toC, c, a, c);
        assertThat(a.failures).as("the other endpoint is not failed").hasSize(1);
        assertThat(verbs.pendingAsyncEvents()).isZero();
    }

    /**
     * The queue pair's error shows first as a completion (a SEND flushed), polled before the
     * liveness look reads the event: the failure names the event all the same, and what was seen
     * first after it.
     */
    @Test
    void anEndpointFailedByACompletionTheEventCausedIsReportedWithTheEvent() {
        TestWorker a = peer("verbs.liveness.interval", "1h");
        TestWorker b = peer("verbs.liveness.interval", "1h");
        TransportEndpoint e = connected(a.connect(b), a, b);
        verbs.raise(IBV_EVENT_QP_ACCESS_ERR, ((VerbsEndpoint) e).queuePair());
        assertThat(e.trySend(1, MemorySegment.NULL, bytes("x"))).isTrue(); // posted; it completes flushed
        progressUntil(() -> !a.failures.isEmpty(), a);
        assertThat(a.failures.getFirst().getMessage()).contains(": IBV_EVENT_QP_ACCESS_ERR on the queue pair to it")
                .contains("(first seen as: a work request failed: IBV_WC_WR_FLUSH_ERR");
    }

    @Test
    void aQueuePairEventOnAnInboundConnectionDropsItNamingTheEventAndTellsTheSink() {
        TestWorker a = peer();
        RecordingLogger log = new RecordingLogger();
        TestWorker b = new TestWorker(verbs, log);
        closing.add(b);
        TransportEndpoint e = connected(a.connect(b), a, b);
        delivered(e, b, a, b);
        Inbound in = b.transport.inbounds().getFirst();
        verbs.raise(IBV_EVENT_QP_REQ_ERR, in.queuePair());
        progressUntil(() -> b.sendersClosed.size() == 1, b);
        assertThat(b.sendersClosed).containsExactly(in.sender());
        assertThat(b.transport.inbounds()).isEmpty();
        assertThat(log.warnings()).singleElement().asString().startsWith("verbs: dropped the inbound connection from /127.0.0.1:")
                .contains(": IBV_EVENT_QP_REQ_ERR on the queue pair from it (qp " + in.queuePair().number() + " on device loop0 port 1)");
    }

    @Test
    void aPortErrorOnThePortInUseFailsEveryConnectionAndOnAnotherPortNone() {
        TestWorker a = peer();
        TestWorker b = peer();
        TestWorker c = peer();
        TransportEndpoint toB = connected(a.connect(b), a, b);
        TransportEndpoint toC = connected(a.connect(c), a, c);
        verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 2);
        progressUntil(() -> verbs.pendingAsyncEvents() == 0, a, b, c);
        delivered(toB, b, a, b);
        assertThat(a.failures).as("a port this worker does not use").isEmpty();

        verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 1);
        progressUntil(() -> a.failures.size() == 2 && b.sendersClosed.size() == 1 && c.sendersClosed.size() == 1, a, b, c);
        assertThat(a.failures).allSatisfy(f -> assertThat(f.getMessage())
                .contains(": IBV_EVENT_PORT_ERR on port 1 of device loop0, which this worker's connections use: its link went down")
                .contains("connect again once the port is ACTIVE"));
        assertThatThrownBy(() -> toC.trySend(1, MemorySegment.NULL, bytes("x"))).isInstanceOf(PeerFailedException.class);
    }

    /**
     * A queue pair's error can fail only its own worker's connection: until 2026-12-06 it was queued
     * for every worker of the device context, where the others logged it, and a worker not
     * progressed held each.
     */
    @Test
    void aQueuePairErrorIsHeldOnlyForTheWorkerWhoseQueuePairItIs() {
        TestWorker a = peer();
        TestWorker idle = peerOnTheContextOf(a);
        TestWorker b = peer();
        TransportEndpoint toB = connected(a.connect(b), a, b);
        verbs.raise(IBV_EVENT_QP_FATAL, ((VerbsEndpoint) toB).queuePair());
        progressUntil(() -> !a.failures.isEmpty(), a);
        assertThat(verbs.pendingAsyncEvents()).isZero();
        assertThat(idle.transport.asyncEventsQueued()).as("held for the worker of the same context whose queue pair it is not").isZero();
    }

    /**
     * The port in use going down fails the connections there are when the worker acts on it: a
     * worker not progressed while the link flapped holds one such event, not one per flap, and acts
     * on it before it connects again, so that the new connection, made over the link that came
     * back, does not fail at its next look.
     */
    @Test
    void aPortErrorSeenBeforeAConnectFailsOnlyTheConnectionsBeforeIt() {
        TestWorker a = peer();
        TestWorker idle = peerOnTheContextOf(a);
        for (int flap = 0; flap < 100; flap++) {
            verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 1);
        }
        progressUntil(() -> verbs.pendingAsyncEvents() == 0, a);
        assertThat(idle.transport.asyncEventsQueued()).as("held for the worker not progressed, however often the link flapped")
                .isEqualTo(1);
        TestWorker b = peer(); // opened after the flaps: its context never saw them
        TransportEndpoint e = idle.connect(b);
        assertThat(idle.transport.asyncEventsQueued()).as("acted on by the connect").isZero();
        delivered(connected(e, idle, b), b, idle, b);
        progressUntil(() -> idle.transport.asyncEventsQueued() == 0, idle, b);
        assertThat(idle.failures).isEmpty();
    }

    /**
     * A worker not progressed holds the port error another worker of its context read, while its
     * wire-up thread accepts connections made over the link that came back. Until 2026-12-06 the
     * worker's next progress dropped those too, though they were made after the event was read: their
     * connectors were told, but the connections were lost for nothing.
     */
    @Test
    void aHeldPortErrorDropsTheInboundConnectionsAcceptedBeforeItWasReadAndSparesThoseAcceptedAfter() {
        RecordingLogger log = new RecordingLogger();
        TestWorker busy = new TestWorker(verbs, log);
        closing.add(busy);
        TestWorker idle = peerOnTheContextOf(busy);
        TestWorker early = peer();
        TransportEndpoint fromEarly = connected(early.connect(idle), early, idle);
        delivered(fromEarly, idle, early, idle);
        long earlySender = idle.transport.inbounds().getFirst().sender();
        verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 1, idle.transport.domain.device());
        progressUntil(() -> verbs.pendingAsyncEvents() == 0, busy);
        assertThat(idle.transport.asyncEventsQueued()).as("held for the worker not progressed").isEqualTo(1);

        TestWorker late = peer();
        TransportEndpoint fromLate = connected(late.connect(idle), late); // accepted by idle's wire-up thread alone
        progressUntil(() -> idle.transport.asyncEventsQueued() == 0, idle); // the progress that acts on it drops what it fails
        assertThat(idle.sendersClosed).as("the connection accepted before the event was read").containsExactly(earlySender);
        assertThat(log.warnings()).singleElement().asString().startsWith("verbs: dropped the inbound connection from /127.0.0.1:")
                .contains(": IBV_EVENT_PORT_ERR on port 1 of device loop0, which this worker's connections use");
        progressUntil(() -> !early.failures.isEmpty(), early, idle);
        assertThat(early.failures.getFirst().getMessage()).as("its connector is told")
                .contains("the peer closed its end of the wire-up connection");

        delivered(fromLate, idle, late, idle);
        assertThat(late.failures).isEmpty();
        assertThat(idle.sendersClosed).hasSize(1);
    }

    /**
     * The port error a worker holds is the latest of a flapping link: a connection accepted between
     * two, which the second is about, is dropped by it.
     */
    @Test
    void anInboundConnectionAcceptedBetweenTwoPortErrorsIsDroppedByTheSecond() {
        TestWorker busy = peer();
        TestWorker idle = peerOnTheContextOf(busy);
        VerbsDomain context = idle.transport.domain;
        verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 1, context.device());
        progressUntil(() -> verbs.pendingAsyncEvents() == 0, busy);
        TestWorker between = peer();
        TransportEndpoint fromBetween = connected(between.connect(idle), between);
        verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 1, context.device());
        progressUntil(() -> verbs.pendingAsyncEvents() == 0, busy);
        assertThat(idle.transport.asyncEventsQueued()).as("one held, however often the link flapped").isEqualTo(1);
        progressUntil(() -> idle.transport.asyncEventsQueued() == 0, idle);
        assertThat(idle.sendersClosed).as("the connection accepted between the two").hasSize(1);
        progressUntil(() -> !between.failures.isEmpty(), between);
        assertThatThrownBy(() -> fromBetween.trySend(1, MemorySegment.NULL, bytes("x"))).isInstanceOf(PeerFailedException.class);
    }

    /**
     * No worker progressed while the port went down and came back: the event waits unread in the
     * kernel. The wire-up thread reads it before it hands a connection over, so it counts as before
     * the connection, as it does for a {@code connect}.
     */
    @Test
    void aPortErrorNotReadWhenAnInboundConnectionIsAcceptedSparesIt() {
        TestWorker idle = peer();
        verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 1, idle.transport.domain.device());
        TestWorker late = peer();
        TransportEndpoint fromLate = connected(late.connect(idle), late);
        assertThat(verbs.pendingAsyncEvents()).as("read by the wire-up thread").isZero();
        assertThat(idle.transport.asyncEventsQueued()).isEqualTo(1);
        progressUntil(() -> idle.transport.asyncEventsQueued() == 0, idle);
        assertThat(idle.sendersClosed).as("the connection accepted after the event was read").isEmpty();
        delivered(fromLate, idle, late, idle);
        assertThat(late.failures).isEmpty();
    }

    @Test
    void aDeviceFatalEventFailsEveryConnectionAndTheWorkerConnectsNoMore() {
        TestWorker a = peer();
        TestWorker b = peer();
        TestWorker c = peer();
        connected(a.connect(b), a, b);
        verbs.raisePortEvent(IBV_EVENT_DEVICE_FATAL, 0);
        progressUntil(() -> a.failures.size() == 1 && b.sendersClosed.size() == 1, a, b, c);
        assertThat(a.failures.getFirst().getMessage()).contains(": IBV_EVENT_DEVICE_FATAL on device loop0: the adapter stopped")
                .contains("close this worker and open a new one, which opens the device again");
        assertThatThrownBy(() -> a.connect(c)).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("verbs: this worker cannot connect: IBV_EVENT_DEVICE_FATAL on device loop0");
    }

    /** A new worker after a device failure opens the device again; the failed context is closed by its last user. */
    @Test
    void aDeviceContextThatFailedIsNotHandedToTheNextUser() {
        VerbsDomain.Holder domains = new VerbsDomain.Holder(library -> verbs, VerbsDomain.SYSFS);
        dev.conduit.tck.TestContext context = dev.conduit.tck.TestContext.of("verbs.wireup.address", "127.0.0.1");
        VerbsDomain failed = domains.acquire(context.config(), context.logger());
        assertThat(domains.acquire(context.config(), context.logger())).as("shared while it works").isSameAs(failed);
        verbs.raisePortEvent(IBV_EVENT_DEVICE_FATAL, 0);
        failed.takeAsyncEvents();
        VerbsDomain reopened = domains.acquire(context.config(), context.logger());
        assertThat(reopened).isNotSameAs(failed);
        domains.release(failed);
        domains.release(failed);
        domains.release(reopened);
        assertThat(verbs.openObjects()).as("both contexts' protection domains closed").isZero();
    }

    /**
     * A device removed or reset: the kernel detaches the context, drops its events not read (maybe
     * {@code IBV_EVENT_DEVICE_FATAL} with them) and answers {@code EIO} to every read. Each liveness
     * look threw that {@code EIO} out of {@code progress} (the worker's every round, every 20 ms),
     * failed no connection, and the context was handed on to the next worker as if it worked.
     */
    @Test
    void aContextTheKernelDetachedFailsEveryConnectionAndTheNextWorkerOpensTheDeviceAgain() {
        TestWorker a = peer();
        TestWorker b = peer();
        TestWorker c = peer();
        connected(a.connect(b), a, b);
        verbs.detach();
        progressUntil(() -> a.failures.size() == 1 && b.sendersClosed.size() == 1, a, b, c);
        assertThat(a.failures.getFirst().getMessage()).contains(": the asynchronous events of device loop0 cannot be read "
                + "(ibv_get_async_event: EIO): the kernel detached this process from the device (it was removed or reset")
                .contains("close this worker and open a new one, which opens the device again");
        assertThatThrownBy(() -> a.connect(c)).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("verbs: this worker cannot connect: the asynchronous events of device loop0 cannot be read");

        VerbsDomain.Holder domains = new VerbsDomain.Holder(library -> verbs, VerbsDomain.SYSFS);
        dev.conduit.tck.TestContext context = dev.conduit.tck.TestContext.of("verbs.wireup.address", "127.0.0.1");
        VerbsDomain detached = domains.acquire(context.config(), context.logger());
        verbs.detach();
        detached.takeAsyncEvents();
        VerbsDomain reopened = domains.acquire(context.config(), context.logger());
        assertThat(reopened).as("a new context, not the detached one").isNotSameAs(detached);
        domains.release(detached);
        domains.release(reopened);
    }

    /**
     * A worker that acquired the context before its device failed and subscribed to its events after
     * another worker of the context had taken {@code IBV_EVENT_DEVICE_FATAL} and handed it out never
     * got the event: it connected on a dead context.
     */
    @Test
    void aWorkerThatSubscribedAfterAnotherTookTheDeviceFailureIsToldToo() {
        VerbsDomain.Holder domains = new VerbsDomain.Holder(library -> verbs, VerbsDomain.SYSFS);
        dev.conduit.tck.TestContext context = dev.conduit.tck.TestContext.of("verbs.wireup.address", "127.0.0.1");
        VerbsDomain domain = domains.acquire(context.config(), context.logger());
        VerbsDomain other = domains.acquire(context.config(), context.logger());
        verbs.raisePortEvent(IBV_EVENT_DEVICE_FATAL, 0);
        other.takeAsyncEvents();
        VerbsTransport late = new VerbsTransport(domains, domain, context.forTransport(dev.conduit.spi.ThreadMode.SINGLE, null),
                dev.conduit.linux.Linux.libc());
        closing.add(late);
        closing.add(() -> domains.release(other));
        byte[] address = peer().transport.address();
        assertThatThrownBy(() -> late.connect(new dev.conduit.spi.PayloadReader(address, 0, address.length, "address.verbs."), f -> { }))
                .isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("verbs: this worker cannot connect: IBV_EVENT_DEVICE_FATAL on device loop0: the adapter stopped");
    }

    /**
     * A pool's provider holds the context it opened: after the device failed it went on registering
     * chunks on the dead context (on a device, {@code ibv_reg_mr} then fails with an errno that names
     * no cause), also where no transport of the plugin was there to read the event.
     */
    @Test
    void aProviderOnAFailedContextRefusesChunksNamingTheFailureAndANewOneOpensTheDeviceAgain() {
        TestWorker a = peer();
        dev.conduit.spi.MemoryProvider memory = a.memory();
        closing.add(memory::close);
        dev.conduit.spi.Chunk before = memory.allocate(memory.pageSize());
        verbs.raisePortEvent(IBV_EVENT_DEVICE_FATAL, 0);
        assertThatThrownBy(() -> memory.allocate(memory.pageSize())).isInstanceOf(ConduitException.class)
                .hasMessage("verbs: cannot allocate a chunk of 4096 bytes: IBV_EVENT_DEVICE_FATAL on device loop0: the adapter stopped (a "
                        + "firmware or hardware error, or the device was removed; see dmesg), and nothing registered on it works any more: "
                        + "close this pool and open a new one, which opens the device again");
        memory.free(before);
        try (dev.conduit.spi.MemoryProvider reopened = a.memory()) {
            reopened.free(reopened.allocate(reopened.pageSize()));
        }
    }

    /** Also held only for its worker: another worker of the device context, not progressed, does not keep it. */
    @Test
    void aCompletionQueueErrorFailsEveryConnectionOfItsWorkerOnly() {
        TestWorker a = peer();
        TestWorker idle = peerOnTheContextOf(a);
        TestWorker b = peer();
        TransportEndpoint aToB = connected(a.connect(b), a, b);
        connected(b.connect(a), a, b);
        verbs.raiseCompletionQueueEvent(a.transport.sendQueue);
        progressUntil(() -> a.failures.size() == 1 && a.sendersClosed.size() == 1, a, b);
        assertThat(a.failures.getFirst().getMessage()).contains(": IBV_EVENT_CQ_ERR on the send completion queue of this worker on device loop0")
                .contains("close this worker and open a new one");
        assertThatThrownBy(() -> aToB.trySend(1, MemorySegment.NULL, bytes("x"))).isInstanceOf(PeerFailedException.class);
        assertThat(b.failures).as("b's own queues are fine; its endpoint to a fails later, when a drops its side").allSatisfy(f ->
                assertThat(f.getMessage()).doesNotContain("IBV_EVENT_CQ_ERR"));
        assertThat(idle.transport.asyncEventsQueued()).as("held for the worker of the same context whose queue it is not").isZero();
    }

    @Test
    void informationalEventsFailNothingAndAreAllTaken() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        Verbs.QueuePair qp = ((VerbsEndpoint) e).queuePair();
        for (int type : new int[] {IBV_EVENT_COMM_EST, IBV_EVENT_SQ_DRAINED, IBV_EVENT_QP_LAST_WQE_REACHED, IBV_EVENT_PATH_MIG}) {
            verbs.raise(type, qp);
        }
        for (int type : new int[] {IBV_EVENT_PORT_ACTIVE, IBV_EVENT_LID_CHANGE, IBV_EVENT_PKEY_CHANGE, IBV_EVENT_SM_CHANGE,
                IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_GID_CHANGE}) {
            verbs.raisePortEvent(type, 1);
        }
        progressUntil(() -> verbs.pendingAsyncEvents() == 0, a, b);
        assertThat(verbs.asyncEventsTaken()).as("4 on a's queue pair, 6 on each of the two contexts").isEqualTo(4 + 2 * 6);
        delivered(e, b, a, b);
        assertThat(a.failures).isEmpty();
        assertThat(b.sendersClosed).isEmpty();
    }

    /**
     * Every event of the device was queued for every worker of the context until that worker looked
     * at its events: a worker an application keeps and never progresses held each port flap and
     * subnet-manager event for ever. Only what can fail a worker's connections is queued now; the
     * rest is logged once, at DEBUG, where it is read.
     */
    @Test
    void aWorkerNeverProgressedHoldsNoneOfTheInformationalEventsAnotherTakes() {
        RecordingLogger log = new RecordingLogger();
        VerbsPlugin plugin = new VerbsPlugin(library -> verbs);
        TestContext context = TestContext.of("verbs.wireup.address", "127.0.0.1").withLogger(log);
        VerbsTransport busy = (VerbsTransport) plugin.openTransport(context.forTransport(ThreadMode.SINGLE, null));
        closing.add(busy);
        VerbsTransport idle = (VerbsTransport) plugin.openTransport(context.forTransport(ThreadMode.SINGLE, null));
        closing.add(idle);
        int[] informational = {IBV_EVENT_PORT_ACTIVE, IBV_EVENT_LID_CHANGE, IBV_EVENT_GID_CHANGE, IBV_EVENT_SM_CHANGE,
                IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_PKEY_CHANGE};
        int flaps = 500;
        for (int i = 0; i < flaps; i++) {
            for (int type : informational) {
                verbs.raisePortEvent(type, 1);
            }
            verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 2);
        }
        int raised = flaps * (informational.length + 1);
        progress(busy, () -> verbs.pendingAsyncEvents() == 0);
        assertThat(verbs.asyncEventsTaken()).as("all taken and acknowledged").isEqualTo(raised);
        assertThat(idle.asyncEventsQueued()).as("held for the worker never progressed").isZero();
        assertThat(busy.asyncEventsQueued()).isZero();
        assertThat(log.at(System.Logger.Level.DEBUG).stream().filter(m -> m.contains("asynchronous event")).toList())
                .as("each logged once, by the context that read it").hasSize(raised)
                .startsWith("verbs: device loop0: asynchronous event IBV_EVENT_PORT_ACTIVE on port 1 (nothing of this worker fails)")
                .contains("verbs: device loop0: asynchronous event IBV_EVENT_PORT_ERR on port 2 (nothing of this worker fails)");

        verbs.raisePortEvent(IBV_EVENT_PORT_ERR, 1);
        progress(busy, () -> verbs.pendingAsyncEvents() == 0);
        assertThat(idle.asyncEventsQueued()).as("the port in use going down is kept for it: it fails its connections").isEqualTo(1);
        progress(idle, () -> idle.asyncEventsQueued() == 0);
    }

    /** Progresses {@code transport} alone until {@code done} (its liveness look reads the events), failing after a bound on time. */
    private static void progress(VerbsTransport transport, BooleanSupplier done) {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!done.getAsBoolean()) {
            transport.progress();
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not reached while progressing");
            }
        }
    }
}
