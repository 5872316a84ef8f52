package dev.conduit.shm;

import dev.conduit.linux.Linux;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static dev.conduit.shm.ShmTransportLargeMessageTest.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The bounce ring of a connection the receiver forgot (its sender's CLOSE, its death, a refusal) is
 * unmapped on the transport's mapping thread, not on the thread that calls progress(): the
 * unmap of a ring the receiver read took 73-150 µs there (docs/performance.md, "A forgotten
 * connection's ring unmapped off the progress thread"), a stall for every other peer of the worker.
 * So is an endpoint's mapping of its peer's receive queue once the peer is found gone ("A gone
 * peer's queue unmapped off the progress thread"), and the endpoint's bounce ring is freed there
 * ("A released endpoint's bounce ring freed off the progress thread"). The worker's importer records which thread
 * unmapped each ring or queue, and can hold an unmap made off the test's thread. Waits are bounded by rounds, never timed.
 */
class ShmTransportForgottenRingTest {

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();
    private final Thread testThread = Thread.currentThread();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    /** A sender's CLOSE: its ring is unmapped by the thread that mapped it (it used to be by the caller of progress()). */
    @Test
    @Timeout(60)
    void aForgottenConnectionsRingIsUnmappedOnTheMappingThreadNotTheOneThatCallsProgress() {
        OneRingRead read = new OneRingRead(false, 1);
        read.forget(read.a);
        waitFor(() -> read.ring.unmappedBy.get() != null, "the ring's unmap");
        assertThat(read.ring.unmappedBy.get()).as("the thread that unmapped the forgotten connection's ring")
                .isNotSameAs(testThread).isSameAs(read.ring.mappedBy);
        waitFor(() -> read.rings.mapped.get() == 0, "the ring's unmap to end");
    }

    /**
     * A close that comes while one unmap is under way on the mapping thread and another waits
     * behind it waits for the first and runs the second itself (the thread's shutdown dropped it):
     * once close() returns, nothing of either ring is mapped.
     */
    @Test
    @Timeout(60)
    void aCloseWaitsForTheUnmapUnderWayAndRunsTheOneWaitingBehindIt() throws Exception {
        TwoRingsRead read = new TwoRingsRead(null);
        ShmTransport receiver = read.receiver;
        Received received = read.received;
        WatchedImporter rings = read.rings;
        WatchedRing ringOfA = read.ringOfA;
        WatchedRing ringOfC = read.ringOfC;

        CountDownLatch unmapMayGoOn = rings.holdUnmapsOffTheTestThread();
        forget(receiver, received, read.a);
        waitFor(() -> ringOfA.unmappedBy.get() != null, "A's ring's unmap to begin on the mapping thread");
        forget(receiver, received, read.c);
        assertThat(ringOfC.unmappedBy.get()).as("C's ring, whose unmap waits behind A's").isNull();

        Thread closer = Thread.ofPlatform().name("closer").start(receiver::close);
        for (int i = 0; i < 100_000 && closer.getState() != Thread.State.BLOCKED && closer.isAlive(); i++) Thread.sleep(1);
        assertThat(closer.isAlive()).as("the close, while A's unmap is under way").isTrue();
        unmapMayGoOn.countDown();
        closer.join();
        assertThat(rings.mapped.get()).as("rings mapped once the close returned").isZero();
        assertThat(ringOfA.unmappedBy.get()).isSameAs(ringOfA.mappedBy);
        assertThat(ringOfC.unmappedBy.get()).as("the thread that unmapped C's ring, dropped by the mapping thread's shutdown")
                .isSameAs(closer);
    }

    /**
     * A ring whose payloads the application keeps stays mapped past its connection's end until the
     * last of them is closed, and is then unmapped on the mapping thread.
     */
    @Test
    @Timeout(60)
    void aForgottenConnectionsRingIsUnmappedOnlyOnceItsLastKeptPayloadIsClosedAndOffTheProgressThread() {
        OneRingRead read = new OneRingRead(true, 2);
        read.forget(read.a);
        read.received.kept.get(1).run();
        for (int i = 0; i < 100; i++) read.receiver.progress();
        assertThat(read.ring.unmappedBy.get()).as("the ring while its first payload is still kept").isNull();
        read.received.kept.get(0).run();
        receive(read.receiver, () -> read.ring.unmappedBy.get() != null, "the ring's unmap once its last kept payload was closed");
        assertThat(read.ring.unmappedBy.get()).as("the thread that unmapped it").isNotSameAs(testThread).isSameAs(read.ring.mappedBy);
    }

    /**
     * A forgotten connection's budget under {@code inbound.bounce.max} is given back as it is
     * forgotten, while its ring's unmap may still wait on the mapping thread; the next ring is
     * mapped on that thread after it, so the rings mapped never exceed the budget. Here it holds one
     * ring: the second sender's ring is not mapped while the first one's unmap is held.
     */
    @Test
    @Timeout(60)
    void aRingWhoseUnmapWaitsIsNeverMappedBesideTheOneItsBudgetThenLetsIn() {
        Received received = new Received();
        WatchedImporter rings = new WatchedImporter();
        ShmTransport receiver = transport(received, rings, BounceRing.mappedLength(RING));
        ShmEndpoint a = connect(transport(new Received()), receiver);
        ShmEndpoint b = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        receive(receiver, () -> received.ids.size() == 1, "A's large message");

        CountDownLatch unmapMayGoOn = rings.holdUnmapsOffTheTestThread();
        forget(receiver, received, a);
        waitFor(() -> rings.all.getFirst().unmappedBy.get() != null, "A's ring's unmap to begin");
        assertThat(b.trySend(2, MemorySegment.NULL, bytes(20_000, 2))).isTrue();
        for (int i = 0; i < 1_000; i++) receiver.progress();
        assertThat(rings.all).as("rings mapped while A's unmap is held").hasSize(1);
        assertThat(received.ids).as("B's message waits for its ring").containsExactly(1);

        unmapMayGoOn.countDown();
        receive(receiver, () -> received.ids.size() == 2, "B's large message");
        assertThat(rings.mostMappedAtOnce.get()).as("rings mapped at once").isEqualTo(1);
    }

    /**
     * The mapping thread stays while a ring it mapped is still to be unmapped, however long it
     * is idle: the unmap's hand-over then finds it, where starting a thread costs the thread that
     * calls progress() about as much as the unmap (41-91 µs). It still ends once idle when no ring is
     * left to unmap. Here it idles past its second of keep-alive with the ring mapped.
     */
    @Test
    @Timeout(60)
    void theRingMappingThreadStaysWhileARingItMappedIsStillToBeUnmapped() throws Exception {
        OneRingRead read = new OneRingRead(false, 1);
        Thread.sleep(1_500); // past the idle thread's second: not a duration asserted, the thread's being there
        assertThat(read.ring.mappedBy.isAlive()).as("the mapping thread, idle with a ring to unmap").isTrue();
        read.forget(read.a);
        waitFor(() -> read.ring.unmappedBy.get() != null, "the ring's unmap");
        assertThat(read.ring.unmappedBy.get()).isSameAs(read.ring.mappedBy);
        read.ring.mappedBy.join(); // ends once idle, no ring being left to unmap (the test's timeout bounds it)
    }

    /**
     * A ring whose unmap fails on the mapping thread is said in a WARNING naming the cause,
     * as before on the thread that called progress() (a CLOSE's unmap failing was thrown out of
     * that progress(), and a kept ring's was a WARNING already); the thread goes on with the next
     * unmap, and progress() throws nothing.
     */
    @Test
    @Timeout(60)
    void aRingThatCannotBeUnmappedIsSaidInAWarningAndTheNextUnmapStillRuns() {
        List<String> warnings = new CopyOnWriteArrayList<>();
        TwoRingsRead read = new TwoRingsRead(warnings);
        read.ringOfA.failure = new IllegalStateException("Session is acquired by 1 clients");

        forget(read.receiver, read.received, read.a);
        forget(read.receiver, read.received, read.c);
        waitFor(() -> read.rings.mapped.get() == 1, "C's ring's unmap");
        assertThat(read.ringOfC.unmappedBy.get()).as("the thread that unmapped C's ring, after A's failed").isSameAs(read.ringOfC.mappedBy);
        assertThat(warnings).as("WARNINGs").containsExactly(
                "test: could not unmap a forgotten connection's bounce ring: Session is acquired by 1 clients | thrown java.lang.IllegalStateException: Session is acquired by 1 clients");
    }

    /**
     * A peer found gone (here its worker closed) releases the endpoint's mapping of its receive
     * queue on the mapping thread, not on the thread that calls progress(): that unmap took
     * 221-7526 µs there (docs/performance.md, "A gone peer's queue unmapped off the progress
     * thread"), a stall for every other peer of the worker.
     */
    @Test
    @Timeout(60)
    void aGonePeersQueueIsUnmappedOffTheThreadThatCallsProgress() {
        PeersOfOneWorker peers = new PeersOfOneWorker(null, 1);
        peers.loseAll();
        receive(peers.worker, () -> peers.queues.mapped.get() == 0, "the gone peer's queue's unmap to end");
        assertThat(peers.queues.only().unmappedBy.get()).as("the thread that unmapped the gone peer's queue")
                .isNotSameAs(testThread);
    }

    /**
     * A close that comes while the unmap of one gone peer's queue is under way on the ring-mapping
     * thread and another's waits behind it waits for the first and runs the second itself: once
     * close() returns, neither queue is mapped.
     */
    @Test
    @Timeout(60)
    void aCloseWaitsForAGonePeersQueueBeingUnmappedAndUnmapsTheOneWaiting() throws Exception {
        PeersOfOneWorker peers = new PeersOfOneWorker(null, 2);
        CountDownLatch unmapMayGoOn = peers.queues.holdUnmapsOffTheTestThread();
        peers.loseAll();
        WatchedRing first = peers.queues.all.get(0);
        WatchedRing second = peers.queues.all.get(1);
        receive(peers.worker, () -> first.unmappedBy.get() != null || second.unmappedBy.get() != null, "a queue's unmap to begin");
        WatchedRing underWay = first.unmappedBy.get() != null ? first : second;
        WatchedRing waiting = underWay == first ? second : first;
        assertThat(waiting.unmappedBy.get()).as("the queue whose unmap waits behind the held one").isNull();

        Thread closer = Thread.ofPlatform().name("closer").start(peers.worker::close);
        for (int i = 0; i < 100_000 && closer.getState() != Thread.State.BLOCKED && closer.isAlive(); i++) Thread.sleep(1);
        assertThat(closer.isAlive()).as("the close, while a queue's unmap is under way").isTrue();
        unmapMayGoOn.countDown();
        closer.join();
        assertThat(peers.queues.mapped.get()).as("peers' queues mapped once the close returned").isZero();
        assertThat(underWay.unmappedBy.get()).isNotSameAs(closer).isNotSameAs(testThread);
        assertThat(waiting.unmappedBy.get()).as("the thread that unmapped the queue the mapping thread's shutdown dropped")
                .isSameAs(closer);
    }

    /** A gone peer's queue that cannot be unmapped is said in a WARNING naming the cause; progress() throws nothing. */
    @Test
    @Timeout(60)
    void aGonePeersQueueThatCannotBeUnmappedIsSaidInAWarning() {
        List<String> warnings = new CopyOnWriteArrayList<>();
        PeersOfOneWorker peers = new PeersOfOneWorker(warnings, 1);
        peers.queues.only().failure = new IllegalStateException("Session is acquired by 1 clients");
        peers.loseAll();
        receive(peers.worker, () -> !warnings.isEmpty(), "the failed unmap's WARNING");
        assertThat(warnings).as("WARNINGs").containsExactly(
                "test: could not unmap the mapping of a peer's receive queue: Session is acquired by 1 clients | thrown java.lang.IllegalStateException: Session is acquired by 1 clients");
        for (int i = 0; i < 100; i++) peers.worker.progress();
    }

    /**
     * An endpoint whose peer is found gone frees its bounce ring (for posix an unmap and the file's
     * removal, for memfd an unmap and a close) off the thread that calls progress(): on it, the
     * free of a 4 MiB ring the endpoint had written took 441-492 µs at the median (docs/performance.md,
     * "A released endpoint's bounce ring freed off the progress thread").
     */
    @Test
    @Timeout(60)
    void aReleasedEndpointsBounceRingIsFreedOffTheThreadThatCallsProgress() {
        PeersOfOneWorker peers = new PeersOfOneWorker(null, 1, 20_000);
        peers.loseAll();
        receive(peers.worker, () -> peers.memory.freedBy.containsKey(peers.memory.onlyRing()), "the bounce ring's free");
        assertThat(peers.memory.freedBy.get(peers.memory.onlyRing())).as("the thread that freed the released endpoint's bounce ring")
                .isNotSameAs(testThread);
        receive(peers.worker, () -> peers.queues.mapped.get() == 0, "the gone peer's queue's unmap, after the ring's free");
    }

    /**
     * A close that comes while the free of one released endpoint's bounce ring is under way on the
     * mapping thread and another's waits behind it waits for the first and frees the second
     * itself: once close() returns, no chunk of the provider is left and no peer's queue is mapped.
     */
    @Test
    @Timeout(60)
    void aCloseWaitsForABounceRingBeingFreedAndFreesTheOneWaiting() throws Exception {
        PeersOfOneWorker peers = new PeersOfOneWorker(null, 2, 20_000);
        CountDownLatch freeMayGoOn = peers.memory.holdFreesOffTheTestThread();
        peers.loseAll();
        List<Chunk> rings = peers.memory.rings();
        assertThat(rings).as("bounce rings made").hasSize(2);
        receive(peers.worker, () -> rings.stream().anyMatch(peers.memory.freedBy::containsKey), "a ring's free to begin");
        Chunk underWay = peers.memory.freedBy.containsKey(rings.get(0)) ? rings.get(0) : rings.get(1);
        Chunk waiting = underWay == rings.get(0) ? rings.get(1) : rings.get(0);
        assertThat(peers.memory.freedBy.get(waiting)).as("the ring whose free waits behind the held one").isNull();

        Thread closer = Thread.ofPlatform().name("closer").start(peers.worker::close);
        for (int i = 0; i < 100_000 && closer.getState() != Thread.State.BLOCKED && closer.isAlive(); i++) Thread.sleep(1);
        assertThat(closer.isAlive()).as("the close, while a ring's free is under way").isTrue();
        freeMayGoOn.countDown();
        closer.join();
        assertThat(peers.memory.live()).as("chunks of the provider not freed once the close returned").isEmpty();
        assertThat(peers.queues.mapped.get()).as("peers' queues mapped once the close returned").isZero();
        assertThat(peers.memory.freedBy.get(underWay)).isNotSameAs(closer).isNotSameAs(testThread);
        assertThat(peers.memory.freedBy.get(waiting)).as("the thread that freed the ring the mapping thread's shutdown dropped")
                .isSameAs(closer);
    }

    /**
     * A released endpoint's bounce ring that cannot be freed is said in a WARNING naming the cause;
     * the peer's queue is unmapped all the same, and progress() throws nothing.
     */
    @Test
    @Timeout(60)
    void aBounceRingThatCannotBeFreedIsSaidInAWarningAndThePeersQueueIsStillUnmapped() {
        List<String> warnings = new CopyOnWriteArrayList<>();
        PeersOfOneWorker peers = new PeersOfOneWorker(warnings, 1, 20_000);
        peers.memory.failure = new IllegalStateException("Session is acquired by 1 clients");
        peers.loseAll();
        receive(peers.worker, () -> !warnings.isEmpty() && peers.queues.mapped.get() == 0, "the failed free's WARNING and the queue's unmap");
        assertThat(warnings).as("WARNINGs").containsExactly(
                "test: could not free a released connection's bounce ring: Session is acquired by 1 clients | thrown java.lang.IllegalStateException: Session is acquired by 1 clients");
        for (int i = 0; i < 100; i++) peers.worker.progress();
        peers.memory.failure = null;
    }

    /**
     * A released endpoint's bounce ring whose free throws an Error (the posix provider's own free
     * rethrows one from its release, and a provider of another JVM language may throw anything)
     * still has the peer's queue unmapped: the close path frees and unmaps in a try-finally, so must
     * the hand-over to the mapping thread, or the queue stays mapped for the process's life (the
     * close finds nothing left to unmap).
     */
    @Test
    @Timeout(60)
    void aBounceRingWhoseFreeThrowsAnErrorStillHasThePeersQueueUnmappedByTheClose() {
        PeersOfOneWorker peers = new PeersOfOneWorker(new CopyOnWriteArrayList<>(), 1, 20_000);
        peers.memory.error = new InternalError("a fault in the provider's free");
        peers.loseAll();
        receive(peers.worker, () -> peers.memory.errorThrown, "the failing free");
        peers.worker.close();
        assertThat(peers.queues.mapped.get()).as("peers' queues mapped once the close returned").isZero();
        peers.memory.error = null;
    }

    /**
     * A worker's close whose free of its own queue throws an Error (out of descriptors, a provider
     * misses a class; the posix provider rethrows one from its release) still closes the provider,
     * releases the lease and closes the directory, and reports the Error as the close's failure.
     * Until 2026-12-07 the close caught RuntimeExceptions alone: the Error left every later step
     * undone, and the lease held for the process's life kept the worker's files from any cleaner.
     */
    @Test
    void aWorkersCloseWhoseQueueFreeThrowsAnErrorStillReleasesItsLease() {
        WatchedProvider memory = new WatchedProvider();
        ShmTransport worker = transport(new Received(), memory, new InProcessMemory(), Long.MAX_VALUE, null);
        Path lease = worker.ownLease().path();
        assertThat(lease).as("the worker's lease, before its close").exists();
        NoClassDefFoundError missing = new NoClassDefFoundError("Could not initialize class dev.example.Release");
        memory.queueError = missing;
        Throwable thrown = catchThrowable(worker::close);
        memory.queueError = null;
        assertThat(lease).as("the lease, once the close returned").doesNotExist();
        assertThat(thrown).as("the close's failure").isInstanceOf(ConduitException.class).hasCause(missing);
    }

    /**
     * A worker connected to {@code peers} peers, whose queues its importer maps (watched), each
     * after a message sent; {@link #loseAll} closes the peers' workers.
     */
    private final class PeersOfOneWorker {
        final WatchedImporter queues = new WatchedImporter();
        final ShmTransport worker;
        final List<ShmTransport> others = new ArrayList<>();
        final List<PeerFailedException> failures = new CopyOnWriteArrayList<>();

        final WatchedProvider memory = new WatchedProvider();

        PeersOfOneWorker(List<String> warnings, int peers) {
            this(warnings, peers, 1_000);
        }

        /** {@code messageBytes}: the size of each peer's message; larger than 8 KiB, the endpoint makes its bounce ring. */
        PeersOfOneWorker(List<String> warnings, int peers, int messageBytes) {
            worker = transport(new Received(), memory, queues, Long.MAX_VALUE, warnings);
            for (int i = 0; i < peers; i++) {
                ShmTransport peer = transport(new Received());
                others.add(peer);
                ShmEndpoint endpoint = (ShmEndpoint) worker.connect(new PayloadReader(peer.address()), failures::add);
                assertThat(endpoint.trySend(1, MemorySegment.NULL, bytes(messageBytes, 1))).isTrue();
            }
            assertThat(queues.all).as("peers' queues mapped").hasSize(peers);
        }

        /** Closes every peer's worker, and progresses until each endpoint failed. */
        void loseAll() {
            for (ShmTransport peer : others) peer.close();
            receive(worker, () -> failures.size() == others.size(), "the peers' failures");
        }
    }

    private static final long RING = 64 << 10;

    /** A receiver that read {@code messages} large messages of sender {@link #a}, its only ring mapped; keeping them if asked. */
    private final class OneRingRead {
        final Received received = new Received();
        final WatchedImporter rings = new WatchedImporter();
        final ShmTransport receiver = transport(received, rings, Long.MAX_VALUE);
        final ShmEndpoint a = connect(transport(new Received()), receiver);
        final WatchedRing ring;

        OneRingRead(boolean keep, int messages) {
            if (keep) received.keeping = receiver;
            for (int id = 1; id <= messages; id++) assertThat(a.trySend(id, MemorySegment.NULL, bytes(20_000, id))).isTrue();
            receive(receiver, () -> received.ids.size() == messages, "the large messages");
            ring = rings.only();
        }

        void forget(ShmEndpoint sender) {
            ShmTransportForgottenRingTest.forget(receiver, received, sender);
        }
    }

    /** A receiver that read one large message of each of two senders, A and C, whose rings are mapped in that order. */
    private final class TwoRingsRead {
        final Received received = new Received();
        final WatchedImporter rings = new WatchedImporter();
        final ShmTransport receiver;
        final ShmEndpoint a;
        final ShmEndpoint c;
        final WatchedRing ringOfA;
        final WatchedRing ringOfC;

        /** {@code warnings}: where the receiver's WARNINGs go, or null for the default logger. */
        TwoRingsRead(List<String> warnings) {
            receiver = transport(received, rings, Long.MAX_VALUE, warnings);
            a = connect(transport(new Received()), receiver);
            c = connect(transport(new Received()), receiver);
            assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
            assertThat(c.trySend(2, MemorySegment.NULL, bytes(20_000, 2))).isTrue();
            receive(receiver, () -> received.ids.size() == 2, "both large messages");
            ringOfA = rings.all.get(0);
            ringOfC = rings.all.get(1);
        }
    }

    /** Closes {@code sender}'s endpoint, and progresses the receiver until it forgot the connection and told its sink. */
    private static void forget(ShmTransport receiver, Received received, ShmEndpoint sender) {
        sender.close();
        receive(receiver, () -> received.closed.contains(sender.connection()), "the sender's CLOSE");
    }

    /** Each message's id, the senders told closed, and, when {@link #keeping} is set, each large payload kept. */
    private static final class Received implements KeyedMessageSink {
        final List<Integer> ids = new ArrayList<>();
        final List<Long> closed = new ArrayList<>();
        final List<Runnable> kept = new ArrayList<>();
        ShmTransport keeping;

        @Override
        public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                              MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
            ids.add(id);
            if (keeping != null) kept.add(keeping.keepDelivered());
        }

        @Override
        public void onSenderClosed(long sender) {
            closed.add(sender);
        }
    }

    /**
     * The receiver's importer: {@link InProcessMemory}'s mappings, each recording the thread that
     * mapped and the one that unmapped it, and how many are mapped at once.
     */
    private final class WatchedImporter implements IpcImporter {
        private final InProcessMemory memory = new InProcessMemory();
        final List<WatchedRing> all = new CopyOnWriteArrayList<>();
        final AtomicInteger mapped = new AtomicInteger();
        final AtomicInteger mostMappedAtOnce = new AtomicInteger();
        /** While set, an unmap made off the test's thread waits for it (ignoring interrupts, as munmap does). */
        volatile CountDownLatch held;

        CountDownLatch holdUnmapsOffTheTestThread() {
            held = new CountDownLatch(1);
            return held;
        }

        WatchedRing only() {
            assertThat(all).as("rings mapped").hasSize(1);
            return all.getFirst();
        }

        @Override
        public ChunkMapping map(PayloadReader payload, long chunkLength) {
            WatchedRing ring = new WatchedRing(this, memory.map(payload, chunkLength));
            mostMappedAtOnce.accumulateAndGet(mapped.incrementAndGet(), Math::max);
            all.add(ring);
            return ring;
        }
    }

    private final class WatchedRing implements ChunkMapping {
        private final WatchedImporter importer;
        private final ChunkMapping mapping;
        final Thread mappedBy = Thread.currentThread();
        final AtomicReference<Thread> unmappedBy = new AtomicReference<>();
        /** Thrown by the unmap instead of unmapping, when set. */
        volatile RuntimeException failure;

        WatchedRing(WatchedImporter importer, ChunkMapping mapping) {
            this.importer = importer;
            this.mapping = mapping;
        }

        @Override
        public MemorySegment segment() {
            return mapping.segment();
        }

        @Override
        public boolean mayFault() {
            return false;
        }

        @Override
        public void close() {
            if (failure != null) throw failure;
            if (!unmappedBy.compareAndSet(null, Thread.currentThread())) return;
            waitOffTheTestThread(importer.held);
            mapping.close();
            importer.mapped.decrementAndGet();
        }
    }

    /**
     * The worker's provider: {@link InProcessMemory}'s chunks, the first its receive queue and the
     * others bounce rings, each free recording its thread; it can hold a free made off the test's
     * thread, or fail a ring's free.
     */
    private final class WatchedProvider implements MemoryProvider {
        private final InProcessMemory memory = new InProcessMemory();
        final List<Chunk> allocated = new CopyOnWriteArrayList<>();
        final Map<Chunk, Thread> freedBy = new ConcurrentHashMap<>();
        /** While set, a free made off the test's thread waits for it (ignoring interrupts, as munmap does). */
        volatile CountDownLatch held;
        /** Thrown by a ring's free instead of freeing it, when set. */
        volatile RuntimeException failure;
        /** Thrown by a ring's free instead of freeing it, when set; {@link #errorThrown} once it was. */
        volatile Error error;
        volatile boolean errorThrown;
        /** Thrown by the free of the worker's own queue (the first chunk) instead of freeing it, when set. */
        volatile Error queueError;

        CountDownLatch holdFreesOffTheTestThread() {
            held = new CountDownLatch(1);
            return held;
        }

        List<Chunk> rings() {
            return allocated.subList(1, allocated.size());
        }

        Chunk onlyRing() {
            assertThat(rings()).as("bounce rings made").hasSize(1);
            return rings().getFirst();
        }

        List<Chunk> live() {
            return allocated.stream().filter(chunk -> !freedBy.containsKey(chunk)).toList();
        }

        @Override
        public long pageSize() {
            return memory.pageSize();
        }

        @Override
        public Chunk allocate(long size) {
            Chunk chunk = memory.allocate(size);
            allocated.add(chunk);
            return chunk;
        }

        @Override
        public byte[] export(Chunk chunk) {
            return memory.export(chunk);
        }

        @Override
        public void free(Chunk chunk) {
            Error queueErring = queueError;
            if (queueErring != null && chunk == allocated.getFirst()) throw queueErring;
            RuntimeException failing = failure;
            if (failing != null && chunk != allocated.getFirst()) throw failing;
            Error erring = error;
            if (erring != null && chunk != allocated.getFirst()) {
                errorThrown = true;
                throw erring;
            }
            if (freedBy.putIfAbsent(chunk, Thread.currentThread()) != null) throw new IllegalStateException(chunk + " freed twice");
            waitOffTheTestThread(held);
            memory.free(chunk);
        }

        @Override
        public void close() {
            memory.close();
        }
    }

    /**
     * Waits for {@code held}, when set, unless on the test's thread, ignoring interrupts (the close's
     * shutdown of the mapping thread) as munmap does.
     */
    private void waitOffTheTestThread(CountDownLatch held) {
        if (held == null || Thread.currentThread() == testThread) return;
        boolean interrupted = false;
        while (true) {
            try {
                held.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /**
     * Keeps the messages of WARNINGs, and of nothing below; a WARNING given a throwable is kept as
     * its message, " | thrown " and the throwable, so that a test sees the record carries it (an
     * operator's log then shows its stack and causes).
     */
    private record WarningsKept(List<String> warnings) implements System.Logger {
        @Override
        public String getName() {
            return "warnings kept";
        }

        @Override
        public boolean isLoggable(Level level) {
            return level.getSeverity() >= Level.WARNING.getSeverity();
        }

        @Override
        public void log(Level level, java.util.ResourceBundle bundle, String message, Throwable thrown) {
            if (isLoggable(level)) warnings.add(thrown == null ? message : message + " | thrown " + thrown);
        }

        @Override
        public void log(Level level, java.util.ResourceBundle bundle, String format, Object... params) {
            if (isLoggable(level)) warnings.add(params == null || params.length == 0 ? format : java.text.MessageFormat.format(format, params));
        }
    }

    /** Progress rounds a wait takes at most. */
    private static final int ROUNDS = 20_000;

    /** Progresses until {@code done}; bounded by rounds, not timed (rings are mapped and unmapped on another thread). */
    private static void receive(ShmTransport receiver, BooleanSupplier done, String what) {
        for (int i = 0; i < ROUNDS; i++) {
            if (done.getAsBoolean()) return;
            if (receiver.progress() == 0) java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        }
        throw new AssertionError("gave up waiting for " + what + " after " + ROUNDS + " progress rounds");
    }

    /** Waits for what another thread does; bounded by rounds, not timed. */
    private static void waitFor(BooleanSupplier done, String what) {
        for (int i = 0; i < ROUNDS; i++) {
            if (done.getAsBoolean()) return;
            java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        }
        throw new AssertionError("gave up waiting for " + what + " after " + ROUNDS + " rounds");
    }

    private static ShmEndpoint connect(ShmTransport from, ShmTransport to) {
        return (ShmEndpoint) from.connect(new PayloadReader(to.address()), cause -> { });
    }

    /** A sender of plugin "test": 64 KiB queue and bounce ring, 8 KiB inline. */
    private ShmTransport transport(MessageSink sink) {
        InProcessMemory memory = new InProcessMemory();
        return transport(sink, memory, memory, Long.MAX_VALUE, null);
    }

    private ShmTransport transport(MessageSink sink, IpcImporter importer, long inboundBounceMaximum) {
        return transport(sink, new InProcessMemory(), importer, inboundBounceMaximum, null);
    }

    /** A receiver whose WARNINGs go to {@code warnings}. */
    private ShmTransport transport(MessageSink sink, IpcImporter importer, long inboundBounceMaximum, List<String> warnings) {
        return transport(sink, new InProcessMemory(), importer, inboundBounceMaximum, warnings);
    }

    private ShmTransport transport(MessageSink sink, MemoryProvider provider, IpcImporter importer, long inboundBounceMaximum,
                                   List<String> warnings) {
        ShmTransportConfig config = new ShmTransportConfig(64 << 10, 8 << 10, RING, Duration.ofMillis(1), Duration.ofSeconds(10),
                Duration.ofMillis(50), 1024, inboundBounceMaximum);
        InProcessContext context = warnings == null ? new InProcessContext(shared, sink)
                : new InProcessContext(shared, sink, new WarningsKept(warnings));
        ShmTransport t = new ShmTransport("test", Linux.libc(), context, config, provider, importer);
        open.add(t);
        return t;
    }
}
