package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.PeerRegion;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.HangGuard;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static dev.conduit.internal.worker.Loopbacks.LE_LONG;
import static dev.conduit.internal.worker.Loopbacks.longs;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** RMA on a peer's exported region: opened through the IPC cache, bounds-checked by the runtime, delegated to the transport. */
class EndpointRmaTest {

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    private LoopbackPlugin transport;
    private Conduit conduit;
    private Endpoint endpoint;
    private byte[] handle;

    private void open(LoopbackPlugin plugin) {
        open(plugin, new InProcessMemoryPlugin());
    }

    private void open(LoopbackPlugin plugin, InProcessMemoryPlugin memory) {
        transport = plugin;
        conduit = loopbacks.conduit(plugin, memory);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Worker peer = conduit.newWorker(ThreadMode.SINGLE);
        Region region = conduit.pool("inproc").allocate(4096);
        handle = region.exportHandle();
        endpoint = worker.connect(peer.address());
    }

    private long rmaCalls() {
        return transport.transports.getFirst().endpoints.getFirst().rmaCalls.get();
    }

    /**
     * A transport learns from the region whether an access to its mapping may fault (and so whether
     * RMA must make a fault come out inside the operation): what the importing plugin's mapping
     * says, passed through the IPC cache.
     */
    @Test
    void aTransportLearnsFromTheRegionWhetherItsMappingMayFault() {
        open(new LoopbackPlugin("lo", 8, false));
        endpoint.put(longs(1), endpoint.peerRegion(handle), 0);
        assertThat(transport.transports.getFirst().endpoints.getFirst().lastRegionMayFault).as("unless said otherwise").isTrue();

        InProcessMemoryPlugin sealed = new InProcessMemoryPlugin();
        sealed.sealedImports = true;
        open(new LoopbackPlugin("lo", 8, false), sealed);
        endpoint.put(longs(1), endpoint.peerRegion(handle), 0);
        assertThat(transport.transports.getFirst().endpoints.getFirst().lastRegionMayFault).as("a sealed mapping").isFalse();
    }

    @Test
    void putGetAndAtomicsReachThePeersRegionThroughTheIpcCache() {
        open(new LoopbackPlugin("lo", 8, false));
        PeerRegion region = endpoint.peerRegion(handle);
        assertThat(region.size()).isEqualTo(4096);
        assertThat(region.plugin()).isEqualTo("inproc");

        endpoint.put(longs(1, 2, 3), region, 8);
        MemorySegment back = MemorySegment.ofArray(new byte[24]);
        endpoint.get(region, 8, back);
        assertThat(back.get(LE_LONG, 0)).isEqualTo(1);
        assertThat(back.get(LE_LONG, 16)).isEqualTo(3);
        try (ImportedRegion same = conduit.importRegion(handle)) {
            assertThat(same.segment().get(LE_LONG, 24)).as("the cached mapping").isEqualTo(3);
        }

        assertThat(endpoint.fetchAdd(region, 4088, 5)).isZero();
        assertThat(endpoint.fetchAdd(region, 4088, 5)).isEqualTo(5);
        assertThat(endpoint.compareAndSwap(region, 4088, 10, 7)).isEqualTo(10);
        assertThat(endpoint.compareAndSwap(region, 4088, 10, 8)).as("failed swap returns the current value").isEqualTo(7);
        endpoint.flush();
        assertThat(rmaCalls()).isEqualTo(7);

        assertThat(conduit.ipcCacheStats().entriesInUse()).isEqualTo(1);
        region.close();
        region.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).isZero();
        assertThatThrownBy(() -> endpoint.put(longs(1), region, 0)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    /** A peer region this process could map only for reading (posix through a read-only mount) takes gets; puts and atomics say why not. */
    @Test
    void aPeerRegionMappedReadOnlyHereTakesGetsButNoPutsOrAtomics() {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        memory.readOnlyImports = true;
        open(new LoopbackPlugin("lo", 8, false), memory);
        PeerRegion region = endpoint.peerRegion(handle);

        endpoint.get(region, 0, MemorySegment.ofArray(new byte[8]));
        String why = "into a peer region that plugin 'inproc' could map only for reading in this process (posix does so through a "
                + "read-only mount); mount the directory read-write to write to it";
        assertThatThrownBy(() -> endpoint.put(longs(1), region, 0)).isInstanceOf(IllegalArgumentException.class).hasMessage("put " + why);
        assertThatThrownBy(() -> endpoint.fetchAdd(region, 0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessage("fetchAdd " + why);
        assertThatThrownBy(() -> endpoint.compareAndSwap(region, 0, 0, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("compareAndSwap " + why);
        assertThat(rmaCalls()).as("calls that reached the transport: the get").isEqualTo(1);
    }

    @Test
    void offsetsLengthsAndAlignmentAreCheckedBeforeTheTransportIsCalled() {
        open(new LoopbackPlugin("lo", 8, false));
        PeerRegion region = endpoint.peerRegion(handle);
        assertThatThrownBy(() -> endpoint.put(MemorySegment.ofArray(new byte[16]), region, 4090))
                .isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("put of 16 bytes at offset 4090 is outside the peer region of 4096 bytes");
        assertThatThrownBy(() -> endpoint.put(MemorySegment.ofArray(new byte[1]), region, 4096)).isInstanceOf(IndexOutOfBoundsException.class)
                .as("one byte, said so: it read \"put of 1 bytes\"")
                .hasMessage("put of 1 byte at offset 4096 is outside the peer region of 4096 bytes");
        assertThatThrownBy(() -> endpoint.put(MemorySegment.ofArray(new byte[1]), region, -1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> endpoint.put(MemorySegment.ofArray(new byte[1]), region, Long.MAX_VALUE)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> endpoint.get(region, 4000, MemorySegment.ofArray(new byte[97])))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("get of 97 bytes at offset 4000");
        assertThatThrownBy(() -> endpoint.get(region, 0, MemorySegment.ofArray(new byte[8]).asReadOnly()))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("get into a read-only destination segment: get writes the "
                        + "bytes it reads into it; pass a writable segment (a Message's payload(), a region mapped read-only and an "
                        + "asReadOnly() view are not)");
        assertThatThrownBy(() -> endpoint.fetchAdd(region, 4, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("multiple of 8");
        assertThatThrownBy(() -> endpoint.compareAndSwap(region, 4089, 0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> endpoint.fetchAdd(region, 4096, 1))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("fetchAdd of 8 bytes at offset 4096");
        assertThatThrownBy(() -> endpoint.compareAndSwap(region, -8, 0, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(rmaCalls()).as("nothing reached the transport").isZero();

        endpoint.put(MemorySegment.ofArray(new byte[16]), region, 4080); // the last bytes are fine
        endpoint.get(region, 0, MemorySegment.ofArray(new byte[4096]));
        endpoint.put(MemorySegment.NULL, region, 4096); // empty at the end
        assertThat(rmaCalls()).isEqualTo(3);
    }

    /** A null region was named "region" whatever the parameter: put's and the atomics' is target, get's is source. */
    @Test
    void aNullArgumentIsNamedByItsParameter() {
        open(new LoopbackPlugin("lo", 8, false));
        PeerRegion region = endpoint.peerRegion(handle);
        assertThatThrownBy(() -> endpoint.put(null, region, 0)).isInstanceOf(NullPointerException.class).hasMessage("source");
        assertThatThrownBy(() -> endpoint.put(longs(1), null, 0)).isInstanceOf(NullPointerException.class).hasMessage("target");
        assertThatThrownBy(() -> endpoint.get(null, 0, MemorySegment.ofArray(new byte[8])))
                .isInstanceOf(NullPointerException.class).hasMessage("source");
        assertThatThrownBy(() -> endpoint.get(region, 0, null)).isInstanceOf(NullPointerException.class).hasMessage("destination");
        assertThatThrownBy(() -> endpoint.fetchAdd(null, 0, 1)).isInstanceOf(NullPointerException.class).hasMessage("target");
        assertThatThrownBy(() -> endpoint.compareAndSwap(null, 0, 0, 1)).isInstanceOf(NullPointerException.class).hasMessage("target");
        assertThatThrownBy(() -> endpoint.peerRegion(null)).isInstanceOf(NullPointerException.class).hasMessage("handle");
        assertThat(rmaCalls()).as("nothing reached the transport").isZero();
    }

    @Test
    void aRegionIsUsedWithTheEndpointThatOpenedItAndClosedWithIt() {
        open(new LoopbackPlugin("lo", 8, false));
        Worker other = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint second = other.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        PeerRegion region = endpoint.peerRegion(handle);
        assertThatThrownBy(() -> second.put(longs(1), region, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not opened through this endpoint");
        PeerRegion another = endpoint.peerRegion(handle);
        assertThat(conduit.ipcCacheStats().entriesInUse()).isEqualTo(1);
        assertThat(conduit.ipcCacheStats().hits()).as("the second open was a cache hit").isEqualTo(1);
        endpoint.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("closing the endpoint released its regions").isZero();
        assertThatThrownBy(() -> endpoint.fetchAdd(another, 0, 1)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> second.peerRegion(new byte[10])).isInstanceOf(InvalidHandleException.class);
    }

    /**
     * A peer region of a chunk whose IPC-cache entry the policy evicted while an imported region was
     * open on it (import, close, import again, others imported) takes that open mapping, as an import
     * does: it mapped the chunk a second time.
     */
    @Test
    void aPeerRegionOfAChunkWhoseOpenEntryThePolicyPickedUsesItsMapping() {
        long chunk = 64 << 10;
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        transport = new LoopbackPlugin("lo", 8, false);
        conduit = loopbacks.conduit(b -> b.set("ipc.cache.bytes", Long.toString(2 * chunk)).set("pool.chunk.size", Long.toString(chunk)),
                transport, memory);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        endpoint = worker.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        java.util.List<byte[]> handles = new java.util.ArrayList<>();
        for (int i = 0; i < 6; i++) handles.add(conduit.pool("inproc").allocate(chunk).exportHandle());
        conduit.importRegion(handles.get(0)).close();
        try (ImportedRegion held = conduit.importRegion(handles.get(0))) {
            for (int i = 1; i < 6; i++) conduit.importRegion(handles.get(i)).close();
            int maps = memory.maps.get();

            try (PeerRegion region = endpoint.peerRegion(handles.get(0))) {
                assertThat(memory.maps).as("the open mapping serves it").hasValue(maps);
                endpoint.put(longs(42), region, 8);
                assertThat(held.segment().get(LE_LONG, 8)).isEqualTo(42);
            }
        }
    }

    /**
     * Endpoint's javadoc: once failed, "every later operation throws PeerFailedException". The
     * progress() that reports the failure gives the endpoint's peer regions back, and RMA on one of
     * them threw the region's IllegalStateException ("its endpoint was closed (or its worker)"),
     * which named neither the peer's failure nor anything the application did: a reducer whose
     * mapper died mid-fetch got it from its next get (it JucxStyleShuffleTest). A region the
     * application closed itself before the failure says the failure too, as every call does.
     */
    @Test
    void rmaOnARegionOfAnEndpointWhoseFailureWasReportedThrowsTheFailure() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
        open(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Worker peer = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint ep = worker.connect(peer.address());
        PeerRegion region = ep.peerRegion(handle);
        PeerRegion closedBefore = ep.peerRegion(handle);
        closedBefore.close();
        plugin.transports.getLast().kill(); // the peer's
        worker.progress();
        assertThat(ep.isFailed()).isTrue();
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("the region, given back by the reporting progress()").isZero();

        List<Runnable> onItsRegions = List.of(
                () -> ep.put(longs(1), region, 0),
                () -> ep.get(region, 0, MemorySegment.ofArray(new byte[8])),
                () -> ep.fetchAdd(region, 0, 1),
                () -> ep.compareAndSwap(region, 0, 0, 1),
                () -> ep.get(closedBefore, 0, MemorySegment.ofArray(new byte[8])));
        for (Runnable call : onItsRegions) {
            assertThatThrownBy(call::run).isInstanceOf(PeerFailedException.class).hasCause(ep.failure());
        }
        assertThatThrownBy(() -> endpoint.get(region, 0, MemorySegment.ofArray(new byte[8])))
                .as("another endpoint's region is still refused as such").isInstanceOf(IllegalArgumentException.class);
    }

    /**
     * A peer region mapped here tells its exporter's life as its mapping does (the IPC cache's, as an
     * import's), each call asking again; also once its endpoint's failure closed it, where every RMA
     * operation throws the failure, since that is when a coordinator asks. One the application closed,
     * or whose endpoint closed without a failure, refuses to be asked.
     */
    @Test
    void aMappedPeerRegionTellsItsExportersLifeAsItsMappingDoesAlsoOnceItsEndpointFailed() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        open(plugin, memory);
        PeerRegion region = endpoint.peerRegion(handle);
        assertThat(region.exporterState()).as("a mapping that cannot tell").isEqualTo(ExporterState.UNKNOWN);
        memory.exporterState = ExporterState.ALIVE;
        assertThat(region.exporterState()).isEqualTo(ExporterState.ALIVE);

        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint ep = worker.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        PeerRegion ofTheFailed = ep.peerRegion(handle);
        plugin.transports.getLast().kill();
        worker.progress();
        assertThat(ep.isFailed()).isTrue();
        assertThatThrownBy(() -> ep.get(ofTheFailed, 0, longs(0))).isInstanceOf(PeerFailedException.class);
        assertThat(ofTheFailed.exporterState()).as("the mapping's answer, not the endpoint's DIED").isEqualTo(ExporterState.ALIVE);
        memory.exporterState = ExporterState.DEAD;
        assertThat(ofTheFailed.exporterState()).isEqualTo(ExporterState.DEAD);
        ep.close();
        assertThat(ofTheFailed.exporterState()).as("the failed endpoint closed too").isEqualTo(ExporterState.DEAD);

        region.close();
        assertThatThrownBy(region::exporterState).isInstanceOf(IllegalStateException.class)
                .hasMessage("this PeerRegion is closed: open the region again with Endpoint.peerRegion(handle) to use it");
        PeerRegion closedWithEndpoint = endpoint.peerRegion(handle);
        endpoint.close();
        assertThatThrownBy(closedWithEndpoint::exporterState).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("its endpoint was closed (or its worker)");
    }

    /**
     * A peer region not mapped here (as verbs' of another host) is judged by its endpoint: UNKNOWN while
     * it lives, DEAD once it failed because its peer died, and UNKNOWN after a failure of another reason
     * (a transport that cannot tell a death from a closed worker, whose process may write on).
     */
    @Test
    void anUnmappedPeerRegionIsDeadOnceItsEndpointsPeerDiedAndUnknownOtherwise() {
        for (PeerFailedException.Reason reason : PeerFailedException.Reason.values()) {
            InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
            memory.exporterState = ExporterState.ALIVE;
            byte[] unmappedHandle = loopbacks.conduit(memory).pool("inproc").allocate(4096).exportHandle();
            LoopbackPlugin plugin = new LoopbackPlugin("lo", 8, false);
            conduit = loopbacks.conduit(b -> b.transports("lo"), plugin, memory);
            Worker worker = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint ep = worker.connect(conduit.newWorker(ThreadMode.SINGLE).address());
            PeerRegion region = ep.peerRegion(unmappedHandle);
            assertThat(region.exporterState()).as("its endpoint lives").isEqualTo(ExporterState.UNKNOWN);
            plugin.transports.getLast().deathReason = reason;
            plugin.transports.getLast().kill();
            worker.progress();
            assertThat(ep.failure().reason()).isEqualTo(reason);
            assertThat(region.exporterState()).as("its endpoint failed: %s", reason)
                    .isEqualTo(reason == PeerFailedException.Reason.DIED ? ExporterState.DEAD : ExporterState.UNKNOWN);
        }
    }

    /**
     * PeerRegion's javadoc: exporterState() "needs no thread-mode guard", so a coordinator may ask it
     * from a thread of its own while the worker's owner progresses (an error handler made the peer a
     * suspect, and another thread watches for its death). Until 2026-12-07 it read its endpoint's
     * failure through Endpoint.failure(), which enters the guard: on a SINGLE worker, from any thread
     * but the owner, it threw WrongThreadException.
     */
    @Test
    void aPeerRegionsExporterStateIsAnsweredOnAThreadOtherThanItsSingleWorkersOwner() throws Exception {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        memory.exporterState = ExporterState.ALIVE;
        open(new LoopbackPlugin("lo", 8, false), memory);
        PeerRegion region = endpoint.peerRegion(handle);
        AtomicReference<Object> answer = new AtomicReference<>();
        Thread asker = Thread.ofPlatform().start(() -> {
            try {
                answer.set(region.exporterState());
            } catch (RuntimeException e) {
                answer.set(e);
            }
        });
        HangGuard.join(asker, "the other thread's exporterState()");
        assertThat(answer.get()).isEqualTo(ExporterState.ALIVE);
    }

    /**
     * A put whose source segment is already closed (its arena closed), or a get into a destination
     * that is, says that segment is closed. Until 2026-12-07 it threw the JDK's bare
     * IllegalStateException "Already closed" from inside the transport, while Endpoint's javadoc
     * named only the region, the endpoint and the worker as what a closed-state failure means: the
     * application was sent looking at the wrong three.
     */
    @Test
    void aPutFromOrAGetIntoAClosedSegmentSaysThatSegmentIsClosed() {
        open(new LoopbackPlugin("lo", 8, false));
        PeerRegion region = endpoint.peerRegion(handle);
        MemorySegment closed;
        try (Arena arena = Arena.ofConfined()) {
            closed = arena.allocate(8);
        }
        assertThatThrownBy(() -> endpoint.put(closed, region, 0)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the source segment is closed");
        assertThatThrownBy(() -> endpoint.get(region, 0, closed)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the destination segment is closed");
    }

    /**
     * A region its application never closed is said to have closed with its endpoint, and one it
     * closed is not; once the endpoint is closed too, an operation on the one it closed says the
     * endpoint is closed (connect again). Until 2026-12-07 it said to open the region again with
     * Endpoint.peerRegion(handle), which the closed endpoint refuses.
     */
    @Test
    void aRegionClosedWithItsEndpointSaysSo() {
        open(new LoopbackPlugin("lo", 8, false));
        PeerRegion closedHere = endpoint.peerRegion(handle);
        PeerRegion closedWithEndpoint = endpoint.peerRegion(handle);
        closedHere.close();
        assertThatThrownBy(() -> endpoint.put(longs(1), closedHere, 0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("this PeerRegion is closed: open the region again with Endpoint.peerRegion(handle) to use it");
        endpoint.close();
        assertThatThrownBy(() -> endpoint.put(longs(1), closedWithEndpoint, 0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("its endpoint was closed (or its worker), which closes the peer regions opened on it");
        String endpointClosed = "is closed: it takes no more calls; connect again (Worker.connect) to reach that peer";
        assertThatThrownBy(() -> endpoint.put(longs(1), closedHere, 0)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(endpointClosed);
        assertThatThrownBy(() -> endpoint.peerRegion(handle)).as("what the region's remedy would meet")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(endpointClosed);
    }

    /**
     * Endpoint's javadoc: an operation on a closed endpoint, or on one whose worker closed, throws
     * IllegalStateException (peerRegion and flush said nothing of it); closing it again does
     * nothing, and pending() and isFailed() still answer. Each says its most specific cause with the
     * remedy that works: an RMA operation on a region of a closed endpoint says the region was
     * closed with its endpoint (open it again on a live endpoint); of a closed worker, or of a
     * worker of a closed Conduit, what the endpoint's other calls say (another worker, another
     * Conduit). Until 2026-12-07 the region's message came first for all three, its remedy (a live
     * endpoint) wrong once the worker or the Conduit was closed, which it never named.
     */
    @Test
    void everyOperationOnAClosedEndpointOrOneOfAClosedWorkerOrConduitThrowsIllegalStateExceptionNamingIt() {
        open(new LoopbackPlugin("lo", 8, false));
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint ofClosedWorker = worker.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        Endpoint ofClosedConduit = conduit.newWorker(ThreadMode.SINGLE).connect(conduit.newWorker(ThreadMode.SINGLE).address());
        PeerRegion region = endpoint.peerRegion(handle);
        PeerRegion regionOfClosedWorker = ofClosedWorker.peerRegion(handle);
        PeerRegion regionOfClosedConduit = ofClosedConduit.peerRegion(handle);
        endpoint.close();
        worker.close();

        refusesEveryCall(endpoint, region, "is closed: it takes no more calls; connect again (Worker.connect) to reach that peer",
                "this PeerRegion is closed: its endpoint was closed (or its worker), which closes the peer regions opened on it; "
                        + "open the region again on a live endpoint to the peer");
        String workerClosed = "worker is closed: it takes no more calls; make another with Conduit.newWorker to go on";
        refusesEveryCall(ofClosedWorker, regionOfClosedWorker, workerClosed, workerClosed);
        assertThat(rmaCalls()).as("nothing reached the transport").isZero();

        conduit.close();
        String conduitClosed = "worker is closed: its Conduit was closed (Conduit.close() on thread '" + Thread.currentThread().getName()
                + "'); open another Conduit and make a worker of it to go on";
        refusesEveryCall(ofClosedConduit, regionOfClosedConduit, conduitClosed, conduitClosed);
    }

    private void refusesEveryCall(Endpoint ep, PeerRegion r, String closed, String closedForRma) {
        List<Runnable> refused = List.of(
                () -> ep.send(1, longs(1)),
                () -> ep.send(1, MemorySegment.NULL, longs(1)),
                () -> ep.send(1, MemorySegment.NULL, 8, target -> 0),
                () -> ep.peerRegion(handle),
                ep::flush);
        for (Runnable call : refused) {
            assertThatThrownBy(call::run).isInstanceOf(IllegalStateException.class).hasMessageContaining(closed);
        }
        List<Runnable> onItsRegion = List.of(
                () -> ep.put(longs(1), r, 0),
                () -> ep.get(r, 0, MemorySegment.ofArray(new byte[8])),
                () -> ep.fetchAdd(r, 0, 1),
                () -> ep.compareAndSwap(r, 0, 0, 1));
        for (Runnable call : onItsRegion) {
            assertThatThrownBy(call::run).isInstanceOf(IllegalStateException.class).hasMessageContaining(closedForRma);
        }
        ep.close();
        assertThat(ep.pending()).isZero();
        assertThat(ep.isFailed()).isFalse();
    }

    /**
     * Endpoint.peerRegion: "ConduitException when the region cannot be opened here" (RemoteMemory.open
     * for the transport): an export its producer freed is gone, named so, and nothing is cached.
     */
    @Test
    void aPeerRegionOfAnExportItsProducerFreedIsRefusedAsGone() {
        open(new LoopbackPlugin("lo", 8, false));
        Region freed = conduit.pool("inproc").allocate(1 << 20); // a chunk of its own, freed with it
        byte[] stale = freed.exportHandle();
        freed.close();
        assertThatThrownBy(() -> endpoint.peerRegion(stale)).isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("is gone");
        assertThat(conduit.ipcCacheStats().entries()).isZero();
        assertThat(endpoint.peerRegion(handle).size()).as("the endpoint goes on").isEqualTo(4096);
    }

    /** PeerRegion's javadoc: closing the worker closes the regions opened through its endpoints, as closing an endpoint does. */
    @Test
    void closingTheWorkerReleasesThePeerRegionsOfItsEndpoints() {
        open(new LoopbackPlugin("lo", 8, false));
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint ep = worker.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        ep.peerRegion(handle);
        ep.peerRegion(handle);
        assertThat(conduit.ipcCacheStats().entriesInUse()).isEqualTo(1);
        worker.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("the worker's close released both").isZero();
    }

    @Test
    void aTransportWithoutRmaOrAtomicsIsNamedWithTheMissingCapability() {
        open(new LoopbackPlugin("lo", 8, false).capabilities(Capability.WAKEUP));
        PeerRegion region = endpoint.peerRegion(handle);
        assertThatThrownBy(() -> endpoint.put(longs(1), region, 0))
                .isInstanceOf(NotSupportedException.class).hasMessageContaining("'lo'").hasMessageContaining("capability RMA");
        assertThatThrownBy(() -> endpoint.fetchAdd(region, 0, 1))
                .isInstanceOf(NotSupportedException.class).hasMessageContaining("'lo'").hasMessageContaining("capability ATOMICS");
        assertThat(rmaCalls()).isZero();
    }

    @Test
    void rmaAndAtomicsThatTheProbeRuledOutHereAreRefusedNamingWhy() {
        open(new LoopbackPlugin("lo", 8, false).ruledOut(Capability.RMA, "no RMA on this device").ruledOut(Capability.ATOMICS, "no atomics"));
        PeerRegion region = endpoint.peerRegion(handle);
        assertThatThrownBy(() -> endpoint.get(region, 0, longs(0)))
                .isInstanceOf(NotSupportedException.class).hasMessage("get: transport 'lo' of this endpoint offers no capability RMA here: "
                        + "no RMA on this device; connect through a transport that does");
        assertThatThrownBy(() -> endpoint.compareAndSwap(region, 0, 0, 1))
                .isInstanceOf(NotSupportedException.class).hasMessageContaining("offers no capability ATOMICS here: no atomics");
        assertThat(rmaCalls()).as("calls that reached the transport").isZero();
    }

    /**
     * A handle of a plugin this {@code Conduit} does not select is opened unmapped (a cross-host
     * transport needs no mapping). On a transport that needs one, every operation used to say
     * that the endpoint's transport "does not support it (capability ATOMICS)", which it declares,
     * without naming why the region was not mapped (its plugin left out by {@code transports}) or
     * the remedy (found with memfd and posix: {@code transports=memfd} and a posix region).
     */
    @Test
    void rmaOnARegionOfAPluginNotSelectedHereNamesThePluginAndTheRemedy() {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        byte[] excludedHandle = loopbacks.conduit(memory).pool("inproc").allocate(4096).exportHandle();
        transport = new LoopbackPlugin("lo", 8, false);
        conduit = loopbacks.conduit(b -> b.transports("lo"), transport, memory);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        endpoint = worker.connect(conduit.newWorker(ThreadMode.SINGLE).address());
        PeerRegion region = endpoint.peerRegion(excludedHandle);

        assertThatThrownBy(() -> endpoint.fetchAdd(region, 0, 1)).isInstanceOf(NotSupportedException.class)
                .hasMessageStartingWith("fetchAdd: the peer region is not mapped in this process")
                .hasMessageContaining("plugin 'inproc'").hasMessageContaining("transports=lo").hasMessageContaining("name it there")
                .hasMessageNotContaining("does not support");
        assertThatThrownBy(() -> endpoint.put(longs(1), region, 0)).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("transports=lo");
        assertThatThrownBy(() -> endpoint.get(region, 0, longs(0))).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("transports=lo");
    }

    /**
     * A handle of a plugin that reaches memory of other hosts is opened unmapped though the plugin
     * imports IPC handles: what it names need not be memory of this host. An operation through a
     * transport that needs a mapping says why the region has none, naming the plugin.
     */
    @Test
    void aRegionOfAPluginThatReachesOtherHostsIsNotMappedHereAndAnOperationSaysWhy() {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        memory.crossHost = true;
        open(new LoopbackPlugin("lo", 8, false), memory);
        PeerRegion region = endpoint.peerRegion(handle);

        assertThatThrownBy(() -> endpoint.fetchAdd(region, 0, 1)).isInstanceOf(NotSupportedException.class)
                .hasMessageStartingWith("fetchAdd: the peer region is not mapped in this process")
                .hasMessageContaining("plugin 'inproc' reaches memory of other hosts and maps none here");
        assertThat(memory.maps).as("imports of the handle").hasValue(0);
    }

    /**
     * A transport that reaches other hosts maps no region here, and needs none: its refusal of an
     * operation on a region of such a plugin (verbs: atomics on a device without them) is its own
     * reason. Until 2026-12-07 it was said as "the peer region is not mapped in this process, and
     * transport 'verbs' of this endpoint reaches it only through a mapping", which only a transport
     * of shared memory does.
     */
    @Test
    void aRefusalOfATransportThatReachesOtherHostsIsItsReasonNotAMissingMapping() {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        memory.crossHost = true;
        open(new LoopbackPlugin("lo", 8, false).capabilities(Capability.RMA, Capability.ATOMICS, Capability.CROSS_HOST), memory);
        transport.refusesRegions = "the device does no atomics";
        PeerRegion region = endpoint.peerRegion(handle);

        assertThatThrownBy(() -> endpoint.fetchAdd(region, 0, 1)).isInstanceOf(NotSupportedException.class)
                .hasMessage("fetchAdd: transport 'lo' of this endpoint declares capability ATOMICS but refused fetchAdd on this peer "
                        + "region (exported by plugin 'inproc'): the device does no atomics");
    }

    /**
     * A transport that declares RMA and ATOMICS may still refuse an operation on a region (verbs
     * refuses a region of another plugin than verbs, which the runtime maps here all the same, and
     * atomics on a device without them). The refusal used to be said as "transport 'lo' of this
     * endpoint does not support it (capability RMA)", which it declares, pointing to a transport
     * with that capability as the remedy: it names the region's plugin now, and gives the
     * transport's reason.
     */
    @Test
    void aRegionThatATransportWithTheCapabilityRefusesIsNamedWithItsReasonNotAsAMissingCapability() {
        open(new LoopbackPlugin("lo", 8, false));
        transport.refusesRegions = "lo reaches regions of its own memory only";
        PeerRegion region = endpoint.peerRegion(handle);
        String refused = " on this peer region (exported by plugin 'inproc'): lo reaches regions of its own memory only";
        assertThatThrownBy(() -> endpoint.put(longs(1), region, 0)).isInstanceOf(NotSupportedException.class)
                .hasMessage("put: transport 'lo' of this endpoint declares capability RMA but refused put" + refused);
        assertThatThrownBy(() -> endpoint.get(region, 0, longs(0))).isInstanceOf(NotSupportedException.class)
                .hasMessage("get: transport 'lo' of this endpoint declares capability RMA but refused get" + refused);
        assertThatThrownBy(() -> endpoint.fetchAdd(region, 0, 1)).isInstanceOf(NotSupportedException.class)
                .hasMessage("fetchAdd: transport 'lo' of this endpoint declares capability ATOMICS but refused fetchAdd" + refused);
        assertThatThrownBy(() -> endpoint.compareAndSwap(region, 0, 0, 1)).isInstanceOf(NotSupportedException.class)
                .hasMessage("compareAndSwap: transport 'lo' of this endpoint declares capability ATOMICS but refused compareAndSwap" + refused);
    }

    /**
     * PeerRegion is thread-safe, and its close takes no worker guard: another thread may close it
     * while an operation on it is inside the transport. When that close drops the last count of a
     * chunk the IPC cache does not keep (over ipc.cache.bytes), the mapping is unmapped under the
     * operation, whose access then fails (FFM's close handshake: never the JVM). It used to throw the
     * JDK's bare IllegalStateException "Already closed"; it says that the region was closed during
     * the operation now, with the JDK's exception as the cause, and so does one that an endpoint's
     * close overtook (a PASS_THROUGH worker's close runs beside the operation).
     */
    @Test
    void anOperationWhoseRegionAnotherThreadClosesUnderItSaysSo() throws Exception {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        transport = new LoopbackPlugin("lo", 8, false);
        conduit = loopbacks.conduit(b -> b.set("ipc.cache.bytes", "4096"), transport, memory); // a released chunk is not kept
        Worker worker = conduit.newWorker(ThreadMode.SERIALIZED);
        endpoint = worker.connect(conduit.newWorker(ThreadMode.SERIALIZED).address());
        handle = conduit.pool("inproc").allocate(4096).exportHandle();
        java.util.concurrent.ExecutorService closer = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            List<Runnable> operations = new java.util.ArrayList<>();
            PeerRegion[] region = new PeerRegion[1];
            operations.add(() -> endpoint.put(longs(1), region[0], 0));
            operations.add(() -> endpoint.get(region[0], 0, MemorySegment.ofArray(new byte[8])));
            operations.add(() -> endpoint.fetchAdd(region[0], 0, 1));
            operations.add(() -> endpoint.compareAndSwap(region[0], 0, 0, 1));
            for (Runnable operation : operations) {
                region[0] = endpoint.peerRegion(handle);
                java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
                transport.whileRma = () -> {
                    if (!once.compareAndSet(false, true)) return;
                    try {
                        closer.submit(region[0]::close).get();
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                };
                assertThatThrownBy(operation::run).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("this PeerRegion was closed during this operation, by another thread")
                        .hasRootCauseMessage("Already closed");
                assertThat(conduit.ipcCacheStats().mappedBytes()).as("the chunk was unmapped under the operation").isZero();
            }

            LoopbackPlugin multi = new LoopbackPlugin("lo", 8, true);
            Conduit passThrough = loopbacks.conduit(b -> b.set("ipc.cache.bytes", "4096"), multi, memory);
            Worker shared = passThrough.newWorker(ThreadMode.MULTI);
            assertThat(shared.threadPolicy()).isEqualTo(dev.conduit.ThreadPolicy.PASS_THROUGH);
            Endpoint closedUnder = shared.connect(passThrough.newWorker(ThreadMode.MULTI).address());
            PeerRegion itsRegion = closedUnder.peerRegion(passThrough.pool("inproc").allocate(4096).exportHandle());
            java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
            multi.whileRma = () -> {
                if (!once.compareAndSet(false, true)) return;
                try {
                    closer.submit(closedUnder::close).get();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            };
            assertThatThrownBy(() -> closedUnder.put(longs(1), itsRegion, 0)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("this PeerRegion was closed during this operation, by another thread closing its endpoint")
                    .hasRootCauseMessage("Already closed");
        } finally {
            closer.shutdownNow();
            transport.whileRma = () -> { };
        }
    }

    /**
     * Under PASS_THROUGH a thread in progress() that reports the peer's death gives the endpoint's
     * regions back while another thread's operation on one of them is inside the transport (a
     * client's worker threads use the coordinator's region while a thread of its own progresses).
     * When the IPC cache keeps no unused mapping (ipc.cache.bytes below the chunk) the access then
     * fails on the unmapped chunk: that operation throws the endpoint's failure, as every later
     * call does. It said that another thread had closed the region or its endpoint while in use,
     * blaming the application for the peer's death.
     */
    @Test
    void anOperationWhoseRegionTheReportOfThePeersDeathGaveBackUnderItThrowsTheFailure() throws Exception {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        LoopbackPlugin multi = new LoopbackPlugin("lo", 8, true);
        transport = multi;
        conduit = loopbacks.conduit(b -> b.set("ipc.cache.bytes", "4096"), multi, memory); // a released chunk is not kept
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(dev.conduit.ThreadPolicy.PASS_THROUGH);
        Worker peer = conduit.newWorker(ThreadMode.MULTI);
        Endpoint ep = worker.connect(peer.address());
        PeerRegion region = ep.peerRegion(conduit.pool("inproc").allocate(4096).exportHandle());
        java.util.concurrent.ExecutorService progressing = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
            multi.whileRma = () -> {
                if (!once.compareAndSet(false, true)) return;
                try {
                    progressing.submit(() -> {
                        multi.transports.getLast().kill(); // the peer's
                        worker.progress();
                    }).get();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            };
            assertThatThrownBy(() -> ep.put(longs(1), region, 0)).isInstanceOf(PeerFailedException.class)
                    .hasCause(ep.failure())
                    .satisfies(e -> assertThat(e.getSuppressed()).as("the access that met the unmapped chunk")
                            .singleElement().isInstanceOf(IllegalStateException.class));
            assertThat(conduit.ipcCacheStats().mappedBytes()).as("the chunk was unmapped under the operation").isZero();
        } finally {
            progressing.shutdownNow();
            multi.whileRma = () -> { };
        }
    }

    /** As a send's (EndpointMessagingTest): a plugin's bare exception from an RMA operation is named as its fault. */
    @Test
    void aTransportsBareExceptionFromAnRmaOperationIsNamedAsThePluginsFault() {
        open(new LoopbackPlugin("lo", 8, false));
        PeerRegion region = endpoint.peerRegion(handle);
        ArithmeticException bug = new ArithmeticException("/ by zero");
        transport.whileRma = () -> {
            throw bug;
        };
        try {
            assertThatThrownBy(() -> endpoint.put(longs(1), region, 0)).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageStartingWith("plugin 'lo' failed in put(): java.lang.ArithmeticException: / by zero").hasCause(bug);
            assertThatThrownBy(() -> endpoint.fetchAdd(region, 0, 1)).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageStartingWith("plugin 'lo' failed in fetchAdd(): ").hasCause(bug);
            // A checked one thrown undeclared (Kotlin, @SneakyThrows) too: until 2026-12-07 it passed bare.
            java.io.IOException unreachable = new java.io.IOException("/dev/infiniband/uverbs0: No such device");
            transport.whileRma = () -> {
                throw EndpointRmaTest.<RuntimeException>sneaky(unreachable);
            };
            assertThatThrownBy(() -> endpoint.get(region, 0, longs(1))).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageStartingWith("plugin 'lo' failed in get(): " + unreachable).hasCause(unreachable);
            assertThatThrownBy(() -> endpoint.compareAndSwap(region, 0, 0, 1)).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageStartingWith("plugin 'lo' failed in compareAndSwap(): " + unreachable).hasCause(unreachable);
        } finally {
            transport.whileRma = () -> { };
        }
        endpoint.put(longs(5), region, 0);
        assertThat(endpoint.fetchAdd(region, 0, 1)).isEqualTo(5);
    }

    /** Throws {@code e}, checked or not, where the compiler would not let a checked one through: as Kotlin does. */
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
        throw (E) e;
    }

    @Test
    void rmaOnAFailedEndpointThrowsPeerFailedException() {
        open(new LoopbackPlugin("lo", 8, false));
        PeerRegion region = endpoint.peerRegion(handle);
        transport.transports.get(1).kill();
        assertThatThrownBy(() -> endpoint.put(longs(1), region, 0)).isInstanceOf(dev.conduit.spi.PeerFailedException.class);
        assertThat(endpoint.isFailed()).isTrue();
        assertThatThrownBy(() -> endpoint.get(region, 0, MemorySegment.ofArray(new byte[8]))).isInstanceOf(dev.conduit.spi.PeerFailedException.class);
        assertThatThrownBy(() -> endpoint.peerRegion(handle)).isInstanceOf(dev.conduit.spi.PeerFailedException.class);
    }
}
