package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Processes of one host coordinated through atomics on one region, the recipe of docs/runtime.md,
 * "Coordinating processes with atomics": a coordinator exports the region; clients fetch-add a
 * global sequence number, take a spin lock whose word holds the holder's identity, and claim slots
 * of a table, each by compare-and-swap.
 *
 * <p>An identity is a <b>session number</b> the coordinator gives a client in answer to its HELLO,
 * never reused and never 0, never a pid (pids repeat, and a container's are of another namespace).
 * The HELLO carries the client's worker address, so that the coordinator connects back with an error
 * handler (the first news of a death), and the handle of a small region the client exported for no
 * other purpose than this: {@link PeerRegion#exporterState()} of it, opened on the endpoint back, is the
 * proof, and still answers once that endpoint's failure closed it.
 * {@code DEAD} (the client's pool lease is gone: its process exited, and with it every store it
 * could make) lets the coordinator take back what that session holds; anything else (a hung client,
 * alive) does not, as its stores could still land in what it holds.
 *
 * <p>The region's words (8 bytes each, native byte order, as the CPU's atomics and
 * {@code ValueLayout.JAVA_LONG} read them):
 * <pre>
 * 0     SEQUENCE    the global sequence number: fetch-add only
 * 64    LOCK        the spin lock's owner: 0 free, else the holder's session
 * 72    EPOCH       how many times the coordinator took the lock back from a dead holder
 * 128   FIRST       the data the lock guards: a holder adds 1 to FIRST, then to SECOND;
 * 136   SECOND      FIRST != SECOND when a holder died between the two
 * 256   SLOTS       SLOT_COUNT words: 0 free, else the session that claimed it
 * 1016  NUMBERED    the publication test's count of records numbered
 * 1024  DATA        the publication test's records (a put each), announced by SEQUENCE, up to the end (4 MiB)
 * </pre>
 * Each group sits on a cache line of its own, so that the lock's traffic does not slow the sequence.
 */
final class AtomicsCoordination {

    static final long SEQUENCE = 0;
    static final long LOCK = 64;
    static final long EPOCH = 72;
    static final long FIRST = 128;
    static final long SECOND = 136;
    static final long SLOTS = 256;
    static final int SLOT_COUNT = 16;
    static final long NUMBERED = 1016;
    static final long DATA = 1024;
    static final long REGION_SIZE = 4 << 20;

    static final int HELLO = 1;
    static final int WELCOME = 2;

    /** A hang guard for each wait, never a speed check. */
    static final Duration GUARD = Duration.ofSeconds(60);

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private AtomicsCoordination() {
    }

    /**
     * The coordinator: exports the region, and on a thread of its own progresses a {@code SINGLE}
     * worker that answers HELLOs and watches the clients. A client's endpoint failing makes its
     * session a suspect; each turn of the loop asks each suspect's identity region whether its
     * exporter is {@code DEAD}, and only then takes back its lock and slots.
     */
    static final class Coordinator implements AutoCloseable {

        private record Session(Endpoint endpoint, PeerRegion identity) {
        }

        private final Conduit conduit;
        private final Region region;
        private final Thread thread;
        private final CountDownLatch started = new CountDownLatch(1);
        private final Map<Long, Session> sessions = new ConcurrentHashMap<>();
        private final Map<Long, Session> suspects = new ConcurrentHashMap<>();
        /** Sessions whose lock and slots were taken back, with the failure that made them suspects. */
        private final Map<Long, PeerFailedException> recovered = new ConcurrentHashMap<>();
        private final Map<Long, PeerFailedException> causes = new ConcurrentHashMap<>();
        private final AtomicLong slotsTakenBack = new AtomicLong();
        /** How many turns the coordinator's loop made. */
        private final AtomicLong turns = new AtomicLong();
        private volatile WorkerAddress address;
        private volatile Throwable failed;
        private volatile boolean stopping;
        private volatile Worker worker;
        private long nextSession = 1;

        Coordinator(Conduit conduit, String plugin) {
            this.conduit = conduit;
            Pool pool = conduit.pool(plugin);
            this.region = pool.allocate(REGION_SIZE);
            region.segment().fill((byte) 0);
            this.thread = Thread.ofPlatform().daemon().name("coordinator").start(this::run);
            try {
                if (!started.await(GUARD.toSeconds(), TimeUnit.SECONDS)) throw new AssertionError("the coordinator did not start");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
            if (failed != null) throw new AssertionError("the coordinator failed to start", failed);
        }

        private void run() {
            try (Worker w = conduit.newWorker(ThreadMode.SINGLE)) {
                worker = w;
                w.onMessage(HELLO, m -> hello(w, m));
                address = w.address();
                started.countDown();
                while (!stopping) {
                    if (w.progress() == 0) w.await(Duration.ofMillis(5));
                    if (!suspects.isEmpty()) judgeSuspects();
                    turns.incrementAndGet();
                }
            } catch (Throwable t) {
                failed = t;
                started.countDown();
            }
        }

        private void hello(Worker w, Message m) {
            long session = nextSession++;
            int addressLength = m.headerInt(0);
            byte[] clientAddress = new byte[addressLength];
            m.copyPayload(0, clientAddress, 0, addressLength);
            byte[] identityHandle = new byte[(int) m.payloadSize() - addressLength];
            m.copyPayload(addressLength, identityHandle, 0, identityHandle.length);
            Endpoint ep = w.connect(WorkerAddress.fromBytes(clientAddress), (failedEndpoint, cause) -> suspect(session, cause));
            // Its endpoint's failure or close releases it: nothing to close here.
            sessions.put(session, new Session(ep, ep.peerRegion(identityHandle)));
            MemorySegment header = MemorySegment.ofArray(new long[]{session});
            ep.send(WELCOME, header, MemorySegment.ofArray(region.exportHandle()));
        }

        /** The error handler: the client's endpoint failed (died, closed or hung: cause.reason() says which). Judged by its lease. */
        private void suspect(long session, PeerFailedException cause) {
            Session s = sessions.remove(session);
            if (s == null) return;
            s.endpoint().close();
            suspects.put(session, s);
            causes.put(session, cause);
        }

        /** Takes back what each suspect whose identity region's exporter is DEAD holds; an ALIVE one stays a suspect. */
        private void judgeSuspects() {
            for (var e : suspects.entrySet()) {
                if (e.getValue().identity().exporterState() != ExporterState.DEAD) continue;
                long session = e.getKey();
                MemorySegment words = region.segment();
                // A lock the dead session holds stays its own (only its holder gives a lock back), so it is
                // read, the epoch bumped (a holder that takes the freed lock sees it moved and repairs the data),
                // then freed by a CAS from that session; a lock it no longer held is someone else's.
                if ((long) WORD.getAcquire(words, LOCK) == session) {
                    WORD.getAndAdd(words, EPOCH, 1L);
                    WORD.compareAndExchange(words, LOCK, session, 0L);
                }
                for (int i = 0; i < SLOT_COUNT; i++) {
                    if ((long) WORD.compareAndExchange(words, SLOTS + 8L * i, session, 0L) == session) slotsTakenBack.incrementAndGet();
                }
                suspects.remove(session);
                recovered.put(session, causes.get(session));
            }
        }

        WorkerAddress address() {
            return address;
        }

        /** The coordinator's own view of the region: it updates words here with VarHandle atomics. */
        MemorySegment words() {
            return region.segment();
        }

        byte[] handle() {
            return region.exportHandle();
        }

        int sessions() {
            return sessions.size();
        }

        Map<Long, PeerFailedException> recovered() {
            return Map.copyOf(recovered);
        }

        long slotsTakenBack() {
            return slotsTakenBack.get();
        }

        long turns() {
            return turns.get();
        }

        /** The sessions ever made suspects, with the failure that made each one. */
        Map<Long, PeerFailedException> suspected() {
            return Map.copyOf(causes);
        }

        @Override
        public void close() throws InterruptedException {
            stopping = true;
            Worker w = worker;
            if (w != null) w.signal();
            thread.join(GUARD.toMillis());
            if (thread.isAlive()) throw new AssertionError("the coordinator's thread did not end");
            region.close();
        }
    }

    /**
     * A client: a {@code MULTI} worker whose own thread progresses it (the only way it learns that
     * the coordinator died), a session from the coordinator, and the coordinator's region opened on
     * the endpoint, on which any number of the application's threads make atomics at once.
     */
    static final class Client implements AutoCloseable {

        private final Worker worker;
        private final Region identity;
        private final Endpoint coordinator;
        private final PeerRegion words;
        private final long session;
        private final Thread progress;
        private volatile long welcomed;
        private volatile byte[] regionHandle;
        private volatile PeerFailedException coordinatorFailure;
        private volatile boolean closing;

        Client(Conduit conduit, String plugin, WorkerAddress coordinatorAddress) {
            this.worker = conduit.newWorker(ThreadMode.MULTI);
            this.identity = conduit.pool(plugin).allocate(64);
            worker.onMessage(WELCOME, m -> {
                regionHandle = m.payloadToArray();
                welcomed = m.headerLong(0);
            });
            this.coordinator = worker.connect(coordinatorAddress, (ep, cause) -> coordinatorFailure = cause);
            byte[] address = worker.address().toBytes();
            byte[] handle = identity.exportHandle();
            MemorySegment payload = MemorySegment.ofArray(new byte[address.length + handle.length]);
            MemorySegment.copy(address, 0, payload, ValueLayout.JAVA_BYTE, 0, address.length);
            MemorySegment.copy(handle, 0, payload, ValueLayout.JAVA_BYTE, address.length, handle.length);
            coordinator.send(HELLO, MemorySegment.ofArray(new int[]{address.length}), payload);
            long deadline = System.nanoTime() + GUARD.toNanos();
            while (welcomed == 0) {
                worker.progress();
                if (System.nanoTime() - deadline > 0) throw new AssertionError("no WELCOME from the coordinator within " + GUARD);
            }
            this.session = welcomed;
            this.words = coordinator.peerRegion(regionHandle);
            this.progress = Thread.ofPlatform().daemon().name("client-progress").start(() -> {
                while (!closing && coordinatorFailure == null) {
                    if (worker.progress() == 0) worker.await(Duration.ofMillis(1));
                }
            });
        }

        long session() {
            return session;
        }

        Endpoint endpoint() {
            return coordinator;
        }

        PeerRegion words() {
            return words;
        }

        byte[] regionHandle() {
            return regionHandle.clone();
        }

        PeerFailedException coordinatorFailure() {
            return coordinatorFailure;
        }

        /** Takes the lock: a CAS from 0 to this session, spinning while another holds it; fails after the guard. */
        void lock() {
            long deadline = System.nanoTime() + GUARD.toNanos();
            while (coordinator.compareAndSwap(words, LOCK, 0, session) != 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("the lock stayed held (owner session " + coordinator.fetchAdd(words, LOCK, 0) + ") for " + GUARD);
                }
                Thread.onSpinWait();
            }
        }

        /** Gives the lock back: the witness says whether this session still held it (the coordinator took it back otherwise). */
        void unlock() {
            long witness = coordinator.compareAndSwap(words, LOCK, session, 0);
            if (witness != session) throw new IllegalStateException("session " + session + " unlocked a lock held by " + witness);
        }

        /** The guarded data's two words, read by one get. */
        long[] data() {
            MemorySegment both = MemorySegment.ofArray(new long[2]);
            coordinator.get(words, FIRST, both);
            return both.toArray(ValueLayout.JAVA_LONG);
        }

        void putWord(long offset, long value) {
            coordinator.put(MemorySegment.ofArray(new long[]{value}), words, offset);
        }

        /** Claims a free slot (a CAS from 0 to this session); returns its index, or -1 when every slot is taken. */
        int claimSlot() {
            for (int i = 0; i < SLOT_COUNT; i++) {
                if (coordinator.compareAndSwap(words, SLOTS + 8L * i, 0, session) == 0) return i;
            }
            return -1;
        }

        void releaseSlot(int slot) {
            long witness = coordinator.compareAndSwap(words, SLOTS + 8L * slot, session, 0);
            if (witness != session) throw new IllegalStateException("slot " + slot + " held by " + witness + ", not by session " + session);
        }

        /** Closes the worker (its endpoint to the coordinator fails, "closed"), keeping the identity region: the process lives on. */
        void closeWorker() throws InterruptedException {
            closing = true;
            worker.signal();
            progress.join(GUARD.toMillis());
            if (progress.isAlive()) throw new AssertionError("the client's progress thread did not end");
            worker.close();
        }

        @Override
        public void close() throws InterruptedException {
            closeWorker();
            identity.close();
        }
    }

    static long word(MemorySegment words, long offset) {
        return (long) WORD.getAcquire(words, offset);
    }

    static long addLocally(MemorySegment words, long offset, long delta) {
        return (long) WORD.getAndAdd(words, offset, delta);
    }
}
