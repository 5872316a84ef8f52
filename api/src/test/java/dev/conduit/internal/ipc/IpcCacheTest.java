package dev.conduit.internal.ipc;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.internal.RuntimeKeys;
import dev.conduit.internal.ThreadAllocation;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.testing.HangGuard;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

class IpcCacheTest {

    private static final long CHUNK = 64 << 10;
    /** The default {@code ipc.cache.idle}: no round of the sweep comes during a test. */
    static final Duration IDLE = RuntimeKeys.IPC_CACHE_IDLE.defaultValue();
    /** The default {@code ipc.cache.entries}, far above what a test here keeps. */
    static final long ENTRIES = RuntimeKeys.IPC_CACHE_ENTRIES.defaultValue();

    private final InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
    private Conduit conduit;

    private Conduit open(long cacheBytes) {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of())
                .addPlugin(plugin)
                .set("ipc.cache.bytes", Long.toString(cacheBytes))
                .set("pool.chunk.size", Long.toString(CHUNK))
                .build();
        return conduit;
    }

    @AfterEach
    void close() {
        if (conduit != null) conduit.close();
    }

    /** A region in a chunk of its own (larger than a quarter chunk), so every handle names a distinct export. */
    private static Region ownChunk(Pool pool) {
        return pool.allocate(CHUNK);
    }

    /**
     * The hit index's slot is keyed by a seed of the cache's own: keys an exporter chooses to share
     * one slot under a fixed hash (the same {@code originHigh ^ originLow * 31 ^ exportId}, or export
     * ids that differ only above bit 47) spread over the index. Under the fixed hash each family
     * took one slot, so that a lookup walked all of them. No timing: where the keys land.
     */
    @Test
    void keysThatShareASlotUnderAFixedHashSpreadOverACachesIndex() {
        IpcCache.HitIndex index = new IpcCache.HitIndex();
        int mask = 127;
        java.util.Set<Integer> sameCombination = new java.util.HashSet<>();
        java.util.Set<Integer> highBitsOnly = new java.util.HashSet<>();
        for (long i = 0; i < 64; i++) {
            long exportId = i + 1;
            sameCombination.add(index.slot(0x5EEDL ^ 31 ^ exportId, 1, exportId, mask));
            highBitsOnly.add(index.slot(1, 1, 1 | i << 48, mask));
        }
        assertThat(sameCombination).as("slots of 64 keys of one combination").hasSizeGreaterThan(16);
        assertThat(highBitsOnly).as("slots of 64 export ids differing above bit 47").hasSizeGreaterThan(16);
    }

    /**
     * Export ids that differ by {@code h << 32 | h}, {@code h} of bits 17 to 31 only, spread over
     * the index. For a day (2026-12-07) the seeded slot folded each field ({@code x ^ x >>> 32},
     * linear) and multiplied it (which carries a difference only upwards): such ids then differed
     * in bits 49 and above alone, and every seed sent them to one slot of any index of up to 2^17
     * slots, so an exporter choosing its export ids still made one run of as many entries as the
     * cache keeps. No timing: where the keys land.
     */
    @Test
    void exportIdsThatDifferOnlyInTheBitsTheFirstFoldCancelsSpreadOverACachesIndex() {
        int mask = 127;
        for (int cache = 0; cache < 8; cache++) {
            IpcCache.HitIndex index = new IpcCache.HitIndex();
            java.util.Set<Integer> slots = new java.util.HashSet<>();
            for (long i = 0; i < 64; i++) {
                long h = i << 17;
                slots.add(index.slot(0x1234L, 0x5678L, 42 ^ (h << 32 | h), mask));
            }
            assertThat(slots).as("slots of 64 export ids of one family, in a cache of its own seed").hasSizeGreaterThan(16);
        }
    }

    /** A plugin whose mapping has no {@code exporterState} of its own cannot tell; a closed region refuses to be asked. */
    @Test
    void anImportOfAPluginThatCannotTellItsExportersLifeSaysUnknownAndAClosedOneRefusesToBeAsked() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        ImportedRegion region = conduit.importRegion(handle);
        assertThat(region.exporterState()).isEqualTo(dev.conduit.spi.ExporterState.UNKNOWN);
        region.close();
        assertThatThrownBy(region::exporterState).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the ImportedRegion is closed");
        ImportedRegion open = conduit.importRegion(handle);
        conduit.close();
        assertThatThrownBy(open::exporterState).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("its Conduit closed");
    }

    /**
     * A mapping whose {@code exporterState()} throws (but for a {@code ConduitException}, which
     * passes as it is) or returns {@code null} is the plugin's fault, which the region's
     * {@code exporterState()} names: its javadoc promises one of three states, or a
     * {@code ConduitException} naming the cause, or an {@code IllegalStateException} for a closed
     * region. Until 2026-12-07 the plugin's {@code NullPointerException} reached the application
     * bare, its {@code IllegalStateException} read as the region closed, and a {@code null} was
     * handed on as the answer, for the application's {@code switch} to fail on.
     */
    @Test
    void aMappingWhoseExporterStateThrowsOrIsNullIsNamedAsThePluginsFault() {
        RuntimeException bug = new NullPointerException("the plugin's own bug");
        RuntimeException closedInItsView = new IllegalStateException("already closed");
        ConduitException looked = new ConduitException("the lease could not be read (EACCES): grant read access");
        RuntimeException[] thrown = new RuntimeException[1];
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            IpcCache.Lease region = cache.open(new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3}), h -> {
                ChunkMapping made = mapper.apply(h);
                return new ChunkMapping() {
                    @Override
                    public MemorySegment segment() {
                        return made.segment();
                    }

                    @Override
                    public dev.conduit.spi.ExporterState exporterState() {
                        if (thrown[0] != null) throw thrown[0];
                        return null;
                    }

                    @Override
                    public void close() {
                        made.close();
                    }
                };
            });
            assertThatThrownBy(region::exporterState).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("plugin 'inproc' returned null from its mapping's exporterState()");
            for (RuntimeException fault : new RuntimeException[] {bug, closedInItsView}) {
                thrown[0] = fault;
                assertThatThrownBy(region::exporterState).as("what the region's exporterState() throws for %s", fault)
                        .isInstanceOf(ConduitException.class)
                        .hasMessageStartingWith("plugin 'inproc' failed in its mapping's exporterState(): " + fault).hasCause(fault);
            }
            thrown[0] = looked;
            assertThatThrownBy(region::exporterState).isSameAs(looked);
            region.close();
        }
    }

    @Test
    void aHandleOfAPluginThatIsMissingOrLeftOutIsRefusedSayingWhy() {
        Pool pool = open(1 << 30).pool("inproc");
        var handle = ownChunk(pool).exportHandle();
        try (Conduit without = Conduit.builder().discoverPlugins(false).environment(Map.of()).build()) {
            assertThatThrownBy(() -> without.importRegion(handle)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("plugin 'inproc', which is not installed here");
        }
        try (Conduit excluding = Conduit.builder().discoverPlugins(false).environment(Map.of())
                .addPlugin(new InProcessMemoryPlugin()).set("transports", "^inproc").build()) {
            assertThatThrownBy(() -> excluding.importRegion(handle)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("plugin 'inproc', which cannot be used here: excluded by transports=^inproc")
                    .hasMessageContaining("transports=^inproc (from the builder)");
        }
    }

    @Test
    void aRepeatedImportIsAHitThatMapsNothing() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        try (ImportedRegion first = conduit.importRegion(handle)) {
            first.segment().set(ValueLayout.JAVA_LONG, 0, 42);
            for (int i = 0; i < 1000; i++) {
                try (ImportedRegion again = conduit.importRegion(handle)) {
                    assertThat(again.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(42);
                }
            }
        }
        IpcCacheStats stats = conduit.ipcCacheStats();
        assertThat(plugin.maps).hasValue(1);
        assertThat(stats.misses()).isEqualTo(1);
        assertThat(stats.hits()).isEqualTo(1000);
        assertThat(stats.entries()).isEqualTo(1);
    }

    /**
     * A hit hands out the view the last open of the same region made (a view lives as long as the
     * mapping, so sharing it is invisible), and regions of one chunk taking turns each get their own.
     */
    @Test
    void aRepeatedImportOfARegionReusesItsViewAndRegionsOfOneChunkKeepTheirOwn() {
        Pool pool = open(1 << 30).pool("inproc");
        Region a = pool.allocate(1024);
        Region b = pool.allocate(1024);
        byte[] handleA = a.exportHandle();
        byte[] handleB = b.exportHandle();
        try (ImportedRegion first = conduit.importRegion(handleA); ImportedRegion again = conduit.importRegion(handleA)) {
            assertThat(again.segment()).isSameAs(first.segment());
            first.segment().set(ValueLayout.JAVA_LONG, 0, 1);
        }
        try (ImportedRegion ofB = conduit.importRegion(handleB)) {
            ofB.segment().set(ValueLayout.JAVA_LONG, 0, 2);
        }
        for (int i = 0; i < 3; i++) {
            try (ImportedRegion ofB = conduit.importRegion(handleB); ImportedRegion ofA = conduit.importRegion(handleA)) {
                assertThat(ofB.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(2);
                assertThat(ofA.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(1);
                assertThat(ofA.size()).isEqualTo(1024);
                assertThat(ofA.segment().address() - ofB.segment().address()).isEqualTo(a.segment().address() - b.segment().address());
            }
        }
        assertThat(conduit.ipcCacheStats().entries()).isEqualTo(1);
    }

    @Test
    void closingARegionUnmapsNothingWhileTheBoundAllowsKeepingIt() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        conduit.importRegion(handle).close();
        assertThat(plugin.unmaps).hasValue(0);
        assertThat(conduit.ipcCacheStats().mappedBytes()).isEqualTo(CHUNK);
    }

    /**
     * ImportedRegion.close is idempotent: a second close of one region must not release another
     * region's use of the mapping (here the cache keeps nothing unused, so such a release would
     * unmap the chunk under the region still open).
     */
    @Test
    void closingAnImportedRegionTwiceReleasesItsUseOnce() {
        Pool pool = open(0).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        ImportedRegion closedTwice = conduit.importRegion(handle);
        ImportedRegion stillOpen = conduit.importRegion(handle);
        stillOpen.segment().set(ValueLayout.JAVA_LONG, 0, 42);
        closedTwice.close();
        closedTwice.close();
        assertThat(closedTwice.isOpen()).isFalse();
        assertThat(plugin.unmaps).as("the other region still uses the mapping").hasValue(0);
        assertThat(conduit.ipcCacheStats().entriesInUse()).isEqualTo(1);
        assertThat(stillOpen.isOpen()).isTrue();
        assertThat(stillOpen.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(42);
        assertThat(stillOpen.plugin()).isEqualTo("inproc");
        assertThat(stillOpen.size()).as("as long as the handle says").isEqualTo(CHUNK);
        stillOpen.close();
        assertThat(plugin.unmaps).hasValue(1);
    }

    @Test
    void aClosedRegionHandedBackIsReopenedOnTheNextImportHitOrMiss() {
        Pool pool = open(CHUNK).pool("inproc");
        Region a = pool.allocate(64);
        Region b = ownChunk(pool);
        ImportedRegion region = conduit.importRegion(a.exportHandle());
        region.close();
        assertThat(plugin.maps).hasValue(1);
        // A miss: b's chunk is not mapped yet, and the bound keeps one chunk, so a's is evicted for it.
        assertThat(conduit.importRegion(b.exportHandle(), region)).isSameAs(region);
        assertThat(region.isOpen()).isTrue();
        assertThat(region.size()).as("b's region, not a's").isEqualTo(CHUNK);
        assertThat(plugin.maps).hasValue(2);
        region.segment().set(ValueLayout.JAVA_LONG, 0, 8);
        assertThat(conduit.ipcCacheStats().entriesInUse()).isEqualTo(1);
        region.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).isZero();
        // A hit: b's chunk stays mapped while the bound allows.
        long misses = conduit.ipcCacheStats().misses();
        assertThat(conduit.importRegion(b.exportHandle(), region)).isSameAs(region);
        assertThat(conduit.ipcCacheStats().misses()).isEqualTo(misses);
        assertThat(region.segment().get(ValueLayout.JAVA_LONG, 0)).as("the same mapping of b's chunk").isEqualTo(8);
        region.close();
        region.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("closing the reopened region twice released it once").isZero();
    }

    @Test
    void reopeningAClosedRegionForEachCachedImportAllocatesNothing() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = pool.allocate(64).exportHandle();
        int imports = 200_000;
        ImportedRegion[] region = {null};
        long[] sum = {0};
        // Once compiled: the JIT removes the unused JFR event object.
        long allocated = ThreadAllocation.onceCompiled(imports, () -> {
            long before = ThreadAllocation.allocatedBytes();
            for (int i = 0; i < imports; i++) {
                region[0] = conduit.importRegion(handle, region[0]);
                sum[0] += region[0].segment().get(ValueLayout.JAVA_BYTE, 0);
                region[0].close();
            }
            return ThreadAllocation.allocatedBytes() - before;
        });
        assertThat(sum[0]).isZero();
        assertThat(allocated).as("bytes allocated by %d cached imports into one region", imports).isLessThan(imports);
        assertThat(conduit.ipcCacheStats().misses()).isEqualTo(1);
    }

    @Test
    void aRegionHandedBackWhileOpenOrFromElsewhereIsRefusedAndLeftAsItWas() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = pool.allocate(64).exportHandle();
        ImportedRegion open = conduit.importRegion(handle);
        assertThatThrownBy(() -> conduit.importRegion(handle, open)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("still open: close it first");
        assertThat(open.isOpen()).isTrue();
        open.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("counted once, released once").isZero();

        try (Conduit other = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin).build()) {
            ImportedRegion foreign = other.importRegion(handle);
            foreign.close();
            assertThatThrownBy(() -> conduit.importRegion(handle, foreign)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("imported through another Conduit");
            assertThat(foreign.isOpen()).isFalse();
        }
        ImportedRegion madeUp = new ImportedRegion() {
            public MemorySegment segment() { return MemorySegment.NULL; }
            public long size() { return 0; }
            public String plugin() { return "inproc"; }
            public boolean isOpen() { return false; }
            public dev.conduit.spi.ExporterState exporterState() { return dev.conduit.spi.ExporterState.UNKNOWN; }
            public void close() { }
        };
        assertThatThrownBy(() -> conduit.importRegion(handle, madeUp)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("was not returned by Conduit.importRegion");
    }

    /** Misuse, but it must not leave a use counted: each reopen is claimed by one thread, and counted once. */
    @Test
    void twoThreadsHandingBackOneRegionNeverLeaveAUseCounted() throws Exception {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = pool.allocate(64).exportHandle();
        ImportedRegion shared = conduit.importRegion(handle);
        shared.close();
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> refusals = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                refusals.add(threads.submit(() -> {
                    int refused = 0;
                    for (int i = 0; i < 50_000; i++) {
                        try {
                            conduit.importRegion(handle, shared).close();
                        } catch (IllegalStateException open) {
                            refused++;
                        }
                    }
                    return refused;
                }));
            }
            for (Future<Integer> f : refusals) f.get();
        } finally {
            threads.shutdownNow();
        }
        assertThat(shared.isOpen()).isFalse();
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("every reopen's use released").isZero();
        assertThat(conduit.importRegion(handle, shared)).isSameAs(shared);
        shared.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).isZero();
    }

    /**
     * An importer that waits, as one for a frozen exporter does (memfd: up to memfd.connect.timeout;
     * a third party's, for ever), until the test thaws it (each one's end does), then maps the chunk,
     * or fails as told.
     */
    private static final class FrozenExporterImporter implements Function<IpcHandle, ChunkMapping> {
        final CountDownLatch inImporter = new CountDownLatch(1);
        final CountDownLatch thawed = new CountDownLatch(1);
        final ArenaChunkMapper mapper;
        final ConduitException failure;

        FrozenExporterImporter(ArenaChunkMapper mapper, ConduitException failure) {
            this.mapper = mapper;
            this.failure = failure;
        }

        @Override
        public ChunkMapping apply(IpcHandle handle) {
            inImporter.countDown();
            try {
                thawed.await(); // no guard of its own: the test's guards fail first, and its end thaws it
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (failure != null) throw failure;
            return mapper.apply(handle);
        }
    }

    /** Awaits {@code latch}, a minute at most: a hang guard, which fails the test saying what never happened. */
    private static void hangGuard(CountDownLatch latch, String what) throws InterruptedException {
        if (!latch.await(1, TimeUnit.MINUTES)) throw new AssertionError("hang guard: waited a minute for this: " + what);
    }

    /** {@code future}'s result, a minute at most: a hang guard, which fails the test saying what never ended. */
    private static <T> T hangGuard(Future<T> future, String what) throws InterruptedException, ExecutionException {
        try {
            return future.get(1, TimeUnit.MINUTES);
        } catch (TimeoutException e) {
            throw new AssertionError("hang guard: waited a minute for this to end: " + what, e);
        }
    }

    /**
     * A miss waits only for its own chunk's importer, which may wait for a frozen exporter up to its
     * timeout (memfd: memfd.connect.timeout) or, a third party's, for ever: an import and a release
     * of another exporter's chunk go on meanwhile. The two keys here hash alike ((1, 2, 1) and (1, 2,
     * 2^32): Long.hashCode folds a long's halves), so they always share a bin of the map under the
     * cache, whose lock the importer ran under until 2026-12-07: both waited for it (two random keys
     * share a bin as often as the bins are few, and a peer may pick its keys to).
     */
    @Test
    void importsAndReleasesOfOneChunkDoNotWaitForAMissOfAnotherStuckInItsImporter() throws Exception {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        FrozenExporterImporter frozenExporter = new FrozenExporterImporter(mapper, null);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            IpcHandle frozen = new IpcHandle("inproc", 1, 2, 1, CHUNK, 0, 64, new byte[] {1});
            IpcHandle other = new IpcHandle("inproc", 1, 2, 1L << 32, CHUNK, 0, 64, new byte[] {2});
            assertThat(new IpcCache.Key(1, 2, 1L << 32).hashCode()).isEqualTo(new IpcCache.Key(1, 2, 1).hashCode());
            IpcCache.Lease openBefore = cache.open(other, mapper);
            Future<?> stuck = threads.submit(() -> cache.open(frozen, frozenExporter).close());
            try {
                hangGuard(frozenExporter.inImporter, "the stuck import started");
                hangGuard(threads.submit(() -> {
                    openBefore.close(); // its count's first drop to 0, which re-weighs the entry under the bin's lock
                    cache.open(other, mapper).close();
                    return null;
                }), "a release and an import of another exporter's chunk, while a frozen one's importer waits");
            } finally {
                frozenExporter.thawed.countDown();
                hangGuard(stuck, "the import from the thawed exporter");
            }
            assertThat(mapper.maps).as("one mapping per chunk").hasValue(2);
        } finally {
            threads.shutdownNow();
        }
    }

    /**
     * An importer that imports the same handle again on its own thread (a plugin whose map() goes
     * back through the runtime) is refused with IllegalStateException, as ConcurrentHashMap.compute
     * refused the recursive update before a miss reserved its key outside the map's lock; with the
     * reservation alone (2026-12-07, found by a review the same day) it waited for itself for ever,
     * uninterruptibly.
     */
    @Test
    void anImporterThatImportsItsOwnChunkAgainFailsInsteadOfWaitingForItselfForEver() throws Exception {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE);
        IpcHandle handle = new IpcHandle("inproc", 1, 2, 7, CHUNK, 0, 64, new byte[] {7});
        Throwable[] thrown = new Throwable[1];
        Thread importer = Thread.ofPlatform().daemon().start(() -> {
            try {
                cache.open(handle, h -> {
                    cache.open(h, mapper).close();
                    return mapper.apply(h);
                }).close();
            } catch (Throwable t) {
                thrown[0] = t;
            }
        });
        HangGuard.join(importer, "the import that waits for its own reservation");
        assertThat(thrown[0]).isNotNull();
    }

    /**
     * The same importer, its import made from a virtual thread, fails as it does from a platform
     * thread. A virtual thread's miss runs the importer on a {@code conduit-await-N} thread
     * (IpcImports.map, PlatformHandOff.blockingCall): until 2026-12-07 the reservation named the
     * virtual thread as its mapper, so the importer's import of its own chunk, on the await thread,
     * was not recognized as the mapper's and waited for the reservation for ever, uninterruptibly,
     * and the virtual thread waited for it. Now the platform thread says whom it acts for
     * ({@code PlatformHandOff.actingFor}).
     */
    @Test
    void anImporterThatImportsItsOwnChunkAgainFailsAlsoWhenTheImportIsMadeOnAVirtualThread() throws Exception {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        AtomicBoolean once = new AtomicBoolean();
        plugin.whileMapping = () -> {
            if (once.compareAndSet(false, true)) conduit.importRegion(handle).close(); // the importer goes back through the runtime
        };
        Throwable[] thrown = new Throwable[1];
        Thread importer = Thread.ofVirtual().start(() -> {
            try {
                conduit.importRegion(handle).close();
            } catch (Throwable t) {
                thrown[0] = t;
            }
        });
        HangGuard.join(importer, "the virtual thread's import, its importer waiting for its own reservation");
        // From a platform thread: ConduitException "plugin 'inproc' failed in its importer's map(): ... imports the chunk it is mapping".
        assertThat(thrown[0]).hasMessageContaining("imports the chunk it is mapping");
    }

    /**
     * An import of a chunk that another import is mapping waits for that one and opens its mapping:
     * the importer runs outside the cache's lock, and the key stays reserved for the miss meanwhile,
     * so that the cache still maps a chunk once.
     */
    @Test
    void anImportOfAChunkAnotherIsMappingWaitsForItAndOpensItsMapping() throws Exception {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        FrozenExporterImporter frozenExporter = new FrozenExporterImporter(mapper, null);
        CountDownLatch secondWaitsOrMaps = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 64, new byte[] {3});
            Future<IpcCache.Lease> first = threads.submit(() -> cache.open(handle, frozenExporter));
            hangGuard(frozenExporter.inImporter, "the first import is in its importer");
            cache.whileAwaitingMiss = secondWaitsOrMaps::countDown;
            Future<IpcCache.Lease> second = threads.submit(() -> cache.open(handle, h -> {
                secondWaitsOrMaps.countDown();
                return mapper.apply(h);
            }));
            hangGuard(secondWaitsOrMaps, "the second import waits for the first, or maps the chunk itself");
            assertThat(mapper.maps).as("mappings while the first import's importer works").hasValue(0);
            frozenExporter.thawed.countDown();

            IpcCache.Lease firstLease = hangGuard(first, "the first import");
            IpcCache.Lease secondLease = hangGuard(second, "the second import");
            assertThat(secondLease.region().address()).isEqualTo(firstLease.region().address());
            assertThat(mapper.maps).as("one mapping for both").hasValue(1);
            IpcCacheStats stats = cache.stats();
            assertThat(stats.misses()).isEqualTo(1);
            assertThat(stats.hits()).isEqualTo(1);
            assertThat(stats.entriesInUse()).isEqualTo(1);
            firstLease.close();
            secondLease.close();
        } finally {
            frozenExporter.thawed.countDown();
            threads.shutdownNow();
        }
    }

    /**
     * An import waiting for another import's miss of its chunk maps the chunk itself when that one's
     * importer fails: the failure is that import's own (its handle's payload, say, which a peer may
     * choose under a genuine export's key), and reaches no other.
     */
    @Test
    void anImportWaitingForAMissOfItsChunkThatFailsMapsTheChunkItself() throws Exception {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        FrozenExporterImporter failing = new FrozenExporterImporter(mapper, new ConduitException("the exporter refused the import"));
        CountDownLatch secondWaits = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 64, new byte[] {3});
            Future<IpcCache.Lease> first = threads.submit(() -> cache.open(handle, failing));
            hangGuard(failing.inImporter, "the first import is in its importer");
            cache.whileAwaitingMiss = secondWaits::countDown;
            Future<IpcCache.Lease> second = threads.submit(() -> cache.open(handle, mapper));
            hangGuard(secondWaits, "the second import waits for the first");
            failing.thawed.countDown();

            assertThat(catchThrowable(() -> hangGuard(first, "the failing import"))).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(ConduitException.class).hasMessage("the exporter refused the import");
            IpcCache.Lease lease = hangGuard(second, "the import after the failed one");
            assertThat(lease.isOpen()).isTrue();
            assertThat(mapper.maps).as("the second import's own mapping").hasValue(1);
            IpcCacheStats stats = cache.stats();
            assertThat(stats.misses()).isEqualTo(1);
            assertThat(stats.entries()).isEqualTo(1);
            lease.close();
        } finally {
            failing.thawed.countDown();
            threads.shutdownNow();
        }
    }

    /**
     * The cache's close does not wait for a miss stuck in its importer, also when the cached chunks
     * it unmaps share that key's bin (it waited for the importer until 2026-12-07); the miss, once
     * its importer returns, unmaps what it mapped, caches nothing and says the Conduit is closed, and
     * so does an import of the same chunk that was waiting for it.
     */
    /**
     * A miss whose cache closed while its importer mapped the chunk unmaps what it mapped and fails
     * saying the Conduit is closed, also when the plugin's unmap fails then: that failure is
     * suppressed into it. Until 2026-12-07 the plugin's bare exception took its place, and the
     * import failed naming neither the close nor the plugin; so did an open beside the cache.
     */
    @Test
    void aMissWhoseCacheClosedMeanwhileSaysSoAlsoWhenItsUnmapFails() {
        RuntimeException unmapFailed = new IllegalStateException("Session is acquired by 1 clients");
        for (boolean beside : new boolean[] {false, true}) {
            ArenaChunkMapper mapper = new ArenaChunkMapper();
            IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE);
            IpcHandle cached = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {1});
            if (beside) cache.open(cached, mapper).close();
            IpcHandle handle = beside ? new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {2}) : cached;
            Throwable failure = catchThrowable(() -> cache.open(handle, h -> {
                ChunkMapping made = mapper.apply(h);
                cache.close(); // another thread's close, while the importer maps
                return new ChunkMapping() {
                    @Override
                    public MemorySegment segment() {
                        return made.segment();
                    }

                    @Override
                    public void close() {
                        made.close();
                        throw unmapFailed;
                    }
                };
            }));
            assertThat(failure).as("what a miss %s the cache fails with", beside ? "beside" : "in").isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("Conduit is closed").hasSuppressedException(unmapFailed);
            assertThat(mapper.unmaps).as("every mapping made, unmapped").hasValue(mapper.maps.get());
        }
    }

    @Test
    void theCachesCloseDoesNotWaitForAStuckMissWhichThenUnmapsWhatItMapped() throws Exception {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        FrozenExporterImporter frozenExporter = new FrozenExporterImporter(mapper, null);
        CountDownLatch waiting = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(3);
        IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE);
        try {
            IpcHandle frozen = new IpcHandle("inproc", 1, 2, 1, CHUNK, 0, 64, new byte[] {1});
            IpcHandle other = new IpcHandle("inproc", 1, 2, 1L << 32, CHUNK, 0, 64, new byte[] {2});
            IpcCache.Lease cached = cache.open(other, mapper);
            Future<IpcCache.Lease> stuck = threads.submit(() -> cache.open(frozen, frozenExporter));
            hangGuard(frozenExporter.inImporter, "the stuck import started");
            cache.whileAwaitingMiss = waiting::countDown;
            Future<IpcCache.Lease> waiter = threads.submit(() -> cache.open(frozen, mapper));
            hangGuard(waiting, "the second import of the stuck chunk waits for the first");

            hangGuard(threads.submit(cache::close), "the cache's close, while a frozen exporter's importer waits");
            assertThat(cached.isOpen()).as("the cached chunk's region, once the cache closed").isFalse();
            frozenExporter.thawed.countDown();

            for (Future<IpcCache.Lease> open : List.of(stuck, waiter)) {
                assertThat(catchThrowable(() -> hangGuard(open, "an import of the stuck chunk"))).isInstanceOf(ExecutionException.class)
                        .cause().isInstanceOf(IllegalStateException.class).hasMessageContaining("Conduit is closed");
            }
            assertThat(mapper.maps).as("the cached chunk and the stuck one").hasValue(2);
            assertThat(mapper.unmaps).as("both unmapped").hasValue(2);
            assertThat(cache.stats().mappedBytes()).isZero();
            assertThat(cache.stats().entries()).isZero();
        } finally {
            frozenExporter.thawed.countDown();
            threads.shutdownNow();
            cache.close();
        }
    }

    /**
     * A region handed back while another import is reopening it (here: from inside that import's
     * mapping of its chunk) is refused, saying so: the reopen's claim holds until it opens the
     * lease again, and the lease ends up counted once, by the import that claimed it.
     */
    @Test
    void aRegionHandedBackWhileAnotherImportReopensItIsRefusedAndCountedOnceByThatImport() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            IpcCache.Lease region = cache.open(new IpcHandle("inproc", 1, 2, 1, CHUNK, 0, 64, new byte[] {1}), mapper);
            region.close();
            IpcCache.Lease claimed = cache.claimForReopen(region);
            List<Throwable> refused = new ArrayList<>();

            IpcCache.Lease reopened = cache.open(new IpcHandle("inproc", 1, 2, 2, CHUNK, 0, 64, new byte[] {2}), h -> {
                refused.add(catchThrowable(() -> cache.claimForReopen(region)));
                return mapper.apply(h);
            }, claimed);

            assertThat(refused).singleElement().isInstanceOf(IllegalStateException.class).extracting(Throwable::getMessage)
                    .isEqualTo("the ImportedRegion to reuse is being reopened by another thread: reuse one region on one thread at a time");
            assertThat(reopened).isSameAs(region);
            assertThat(cache.stats().entriesInUse()).isEqualTo(1);
            reopened.close();
            assertThat(cache.stats().entriesInUse()).as("its one use released").isZero();
        }
    }

    /**
     * A close that read the region's entry, then was overtaken by another close of it and by a reopen
     * of it onto another chunk, closes nothing: that opening was closed already. Until 2026-12-07 its
     * CAS found the lease open again and released the old entry a second time, which unmapped the
     * chunk under the other region still open on it (under {@code ipc.cache.bytes=0}), and the new
     * entry stayed counted for good.
     */
    @Test
    void aCloseOvertakenByAnotherCloseAndAReopenReleasesNeitherEntryTwice() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle first = new IpcHandle("inproc", 1, 2, 1, CHUNK, 0, 64, new byte[] {1});
        IpcHandle second = new IpcHandle("inproc", 1, 2, 2, CHUNK, 0, 64, new byte[] {2});
        try (IpcCache cache = new IpcCache(0, ENTRIES, IDLE)) {
            IpcCache.Lease other = cache.open(first, mapper);
            IpcCache.Lease region = cache.open(first, mapper);
            AtomicBoolean overtaken = new AtomicBoolean();
            cache.whileClosingLease = () -> {
                if (!overtaken.compareAndSet(false, true)) return;
                region.close(); // another thread's close, then its reopen of the region onto the second chunk
                cache.open(second, mapper, cache.claimForReopen(region));
            };

            region.close();

            cache.whileClosingLease = () -> { };
            assertThat(overtaken).isTrue();
            assertThat(other.isOpen()).as("the other region on the first chunk").isTrue();
            assertThat(other.segment().get(ValueLayout.JAVA_BYTE, 0)).isZero();
            assertThat(mapper.unmaps).as("neither chunk unmapped").hasValue(0);
            assertThat(region.isOpen()).as("reopened on the second chunk").isTrue();
            assertThat(cache.stats().entriesInUse()).isEqualTo(2);
            region.close();
            other.close();
            assertThat(mapper.unmaps).as("each chunk at its last region's close, under a bound of 0").hasValue(2);
            assertThat(cache.stats().entries()).isZero();
        }
    }

    /**
     * A mapping beside the cache, once its last region closed and it was unmapped, is held by the
     * cache no more: a long-lived Conduit that keeps being handed contradicting handles would
     * otherwise keep every such entry (its payload, its views) until its close.
     */
    @Test
    void aMappingBesideTheCacheIsNotKeptReachableAfterItsLastRegionClosed() throws InterruptedException {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            IpcCache.Lease cached = cache.open(new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 64, new byte[] {1}), mapper);
            WeakReference<ChunkMapping> beside = openAndCloseBeside(cache, mapper);
            assertThat(mapper.unmaps).as("the mapping beside, at its region's close").hasValue(1);

            for (int i = 0; i < 600 && beside.get() != null; i++) { // a hang guard: 600 collections
                System.gc();
                Thread.sleep(10);
            }

            assertThat(beside.get()).as("the unmapped mapping beside, after collections").isNull();
            cached.close();
        }
    }

    private static WeakReference<ChunkMapping> openAndCloseBeside(IpcCache cache, ArenaChunkMapper mapper) {
        List<ChunkMapping> mapped = new ArrayList<>();
        cache.open(new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 64, new byte[] {2}), h -> {
            mapped.add(mapper.apply(h));
            return mapped.getFirst();
        }).close();
        return new WeakReference<>(mapped.getFirst());
    }

    /**
     * An importer that maps a length other than the handle's chunk, or nothing, is refused naming the
     * plugin and the export, and what it mapped is unmapped: a shorter mapping kept would serve views
     * of bytes it does not map, and its bytes would be counted as the chunk's.
     */
    @Test
    void anImporterThatMapsAnotherLengthOrNothingIsRefusedAndWhatItMappedIsUnmapped() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3});
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            assertThatThrownBy(() -> cache.open(handle, h -> mapper.apply(new IpcHandle(h.plugin(), h.originHigh(), h.originLow(),
                    h.exportId(), h.chunkLength() / 2, 0, 4096, h.payload()))))
                    .isInstanceOf(ConduitException.class)
                    .hasMessage("plugin 'inproc' mapped " + CHUNK / 2 + " bytes for export 3, the handle's chunk has " + CHUNK
                            + ": the importer is broken");
            assertThat(mapper.unmaps).as("the mapping of the wrong length").hasValue(1);
            assertThatThrownBy(() -> cache.open(handle, h -> null)).isInstanceOf(ConduitException.class)
                    .hasMessage("plugin 'inproc' importer returned no mapping for export 3");
            IpcCacheStats stats = cache.stats();
            assertThat(stats.entries()).isZero();
            assertThat(stats.mappedBytes()).isZero();

            cache.open(handle, mapper).close();
            assertThat(cache.stats().entries()).as("the export still imports through a working importer").isEqualTo(1);
        }
    }

    /**
     * A miss whose caching of the entry fails ({@link OutOfMemoryError} allocating the map's node)
     * unmaps what it mapped. The mapping was in neither the cache nor its index, so that nothing,
     * not even the cache's close, ever unmapped it.
     */
    @Test
    void aMissThatRunsOutOfMemoryAsItCachesTheEntryUnmapsWhatItMapped() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3});
        OutOfMemoryError outOfMemory = new OutOfMemoryError("Java heap space");
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            cache.whileCounted = () -> { throw outOfMemory; };
            assertThatThrownBy(() -> cache.open(handle, mapper)).isSameAs(outOfMemory);
            assertThat(mapper.unmaps).as("the failed miss's mapping, unmapped").hasValue(1);
            cache.whileCounted = () -> { };
            cache.open(handle, mapper).close();
        }
        assertThat(mapper.maps).hasValue(2);
        assertThat(mapper.unmaps).as("every mapping made, unmapped").hasValue(2);
    }

    /**
     * A miss whose caching of the entry fails once the entry is in the hit index, a lock-free hit
     * having counted it there, gives back its own count: the hit's close, the last, unmaps the
     * chunk. Until 2026-12-07 the miss, finding the count above its own, left it as it was: the
     * chunk, in neither the cache nor its bounds, stayed mapped until the cache closed.
     */
    @Test
    void aMissThatRunsOutOfMemoryAsItCachesTheEntryAHitCountedLeavesItToTheHitsClose() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3});
        OutOfMemoryError outOfMemory = new OutOfMemoryError("Java heap space");
        IpcCache.Lease[] hit = new IpcCache.Lease[1];
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            cache.whileCounted = () -> {
                cache.whileCounted = () -> { };
                hit[0] = cache.tryHit(handle.encode());
                throw outOfMemory;
            };
            assertThatThrownBy(() -> cache.open(handle, mapper)).isSameAs(outOfMemory);
            assertThat(hit[0]).as("the hit on the entry in the index").isNotNull();
            assertThat(mapper.unmaps).as("mapped while the hit's region is open").hasValue(0);
            hit[0].close();
            assertThat(mapper.unmaps).as("unmapped at the close of the hit's region").hasValue(1);
            cache.open(handle, mapper).close();
            assertThat(cache.stats().entries()).as("the export imports and caches afresh").isEqualTo(1);
        }
        assertThat(mapper.maps).hasValue(2);
        assertThat(mapper.unmaps).as("every mapping made, unmapped").hasValue(2);
    }

    /**
     * An import that fails after it counted the cached entry ({@link OutOfMemoryError} allocating
     * the lease), by a lock-free hit or by an open, gives the count back: with no room kept
     * ({@code ipc.cache.bytes=0}) the close of the only region unmaps the chunk. The count stayed,
     * held by no lease, and the chunk stayed mapped, weighing nothing, until the cache closed.
     */
    @Test
    void anImportThatRunsOutOfMemoryAfterCountingTheEntryGivesTheCountBack() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3});
        OutOfMemoryError outOfMemory = new OutOfMemoryError("Java heap space");
        try (IpcCache cache = new IpcCache(0, ENTRIES, IDLE)) {
            IpcCache.Lease region = cache.open(handle, mapper);
            cache.whileCounted = () -> { throw outOfMemory; };
            assertThatThrownBy(() -> cache.tryHit(handle.encode())).as("a lock-free hit").isSameAs(outOfMemory);
            assertThatThrownBy(() -> cache.open(handle, mapper)).as("an open's hit").isSameAs(outOfMemory);
            cache.whileCounted = () -> { };
            region.close();
            assertThat(mapper.unmaps).as("unmapped at the close of its only region").hasValue(1);
        }
        assertThat(mapper.maps).hasValue(1);
    }

    /**
     * A mapping whose {@code segment()} or {@code mayFault()} throws once it is made (the plugin's
     * fault) is unmapped, and its bytes are not counted: it used to stay mapped, and with
     * {@code mayFault()} its bytes counted as mapped for good.
     */
    @Test
    void aMappingThatFailsOnceMadeIsUnmappedAndNotCounted() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3});
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            assertThatThrownBy(() -> cache.open(handle, h -> {
                ChunkMapping made = mapper.apply(h);
                return new ChunkMapping() {
                    @Override
                    public MemorySegment segment() {
                        return made.segment();
                    }

                    @Override
                    public boolean mayFault() {
                        throw new IllegalStateException("the plugin's own fault");
                    }

                    @Override
                    public void close() {
                        made.close();
                    }
                };
            })).isInstanceOf(IllegalStateException.class).hasMessage("the plugin's own fault");
            assertThat(mapper.unmaps).as("the one mapping made").hasValue(1);
            assertThat(cache.stats().mappedBytes()).isZero();
            assertThat(cache.stats().entries()).isZero();
        }
    }

    /**
     * A mapping whose {@code segment()} throws anything but an {@code IllegalStateException} (a
     * plugin's bug), a checked exception thrown undeclared (Kotlin, {@code @SneakyThrows}) included,
     * or gives {@code null}, fails the import with a {@code ConduitException} naming the plugin and
     * the call, its cause what was thrown, and the mapping is unmapped, as a chunk's
     * {@code segment()} out of a pool is; so does one whose {@code mayFault()} throws. Until
     * 2026-12-07 the bare exception reached the application naming no plugin (a
     * {@code NullPointerException} for a null segment), and a checked one left the mapping mapped
     * for good, as the cleanup caught unchecked ones only.
     */
    @Test
    void aMappingWhoseSegmentThrowsOrIsNullNamesThePluginAndIsUnmapped() {
        RuntimeException bug = new NullPointerException("the plugin's own bug");
        Exception checked = new java.io.IOException("thrown undeclared");
        assertNamedAndUnmapped("segment()", bug, null);
        assertNamedAndUnmapped("segment()", checked, null);
        assertNamedAndUnmapped("mayFault()", null, bug);
        assertNamedAndUnmapped("mayFault()", null, checked);

        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            assertThatThrownBy(() -> cache.open(new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3}),
                    h -> mappingOf(mapper.apply(h), null, null, false)))
                    .isInstanceOf(ConduitException.class)
                    .hasMessage("plugin 'inproc' importer's mapping of export 3 has no segment (null): the importer is broken");
            assertThat(mapper.unmaps).as("the mapping without a segment").hasValue(1);
            assertThat(cache.stats().mappedBytes()).isZero();
        }
    }

    /** Opens a handle through a mapping whose {@code segment()} or {@code mayFault()} throws, and checks the failure and the unmap. */
    private static void assertNamedAndUnmapped(String call, Exception fromSegment, Exception fromMayFault) {
        Exception thrown = fromSegment != null ? fromSegment : fromMayFault;
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            assertThatThrownBy(() -> cache.open(new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3}),
                    h -> mappingOf(mapper.apply(h), fromSegment, fromMayFault, true)))
                    .as("what %s that threw %s fails the import with", call, thrown)
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("plugin 'inproc' failed in its mapping's " + call + ": " + thrown)
                    .hasCause(thrown);
            assertThat(mapper.unmaps).as("the one mapping made, whose %s threw %s", call, thrown).hasValue(1);
            assertThat(cache.stats().mappedBytes()).isZero();
            assertThat(cache.stats().entries()).isZero();
        }
    }

    /** {@code made}, whose {@code segment()} and {@code mayFault()} throw what they are given, or give a null segment. */
    private static ChunkMapping mappingOf(ChunkMapping made, Exception fromSegment, Exception fromMayFault, boolean hasSegment) {
        return new ChunkMapping() {
            @Override
            public MemorySegment segment() {
                if (fromSegment != null) throw IpcCacheTest.<RuntimeException>sneaky(fromSegment);
                return hasSegment ? made.segment() : null;
            }

            @Override
            public boolean mayFault() {
                if (fromMayFault != null) throw IpcCacheTest.<RuntimeException>sneaky(fromMayFault);
                return true;
            }

            @Override
            public void close() {
                made.close();
            }
        };
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E sneaky(Throwable thrown) throws E {
        throw (E) thrown;
    }

    /**
     * A mapping that keeps its first failure and throws it again from every later call, its close
     * among them (a plugin's "broken" state): the open throws that failure, the mapping unmapped.
     * Until 2026-12-07 the open suppressed the failure into itself, and threw "Self-suppression not
     * permitted" in its place.
     */
    @Test
    void aMappingWhoseCloseThrowsItsFailureAgainIsUnmappedAndTheFailureThrownAsItIs() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle handle = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {3});
        RuntimeException broken = new IllegalStateException("mapping broken");
        try (IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE)) {
            assertThatThrownBy(() -> cache.open(handle, h -> {
                ChunkMapping made = mapper.apply(h);
                return new ChunkMapping() {
                    @Override
                    public MemorySegment segment() {
                        return made.segment();
                    }

                    @Override
                    public boolean mayFault() {
                        throw broken;
                    }

                    @Override
                    public void close() {
                        made.close();
                        throw broken;
                    }
                };
            })).isSameAs(broken);
            assertThat(broken.getSuppressed()).isEmpty();
            assertThat(mapper.unmaps).as("the one mapping made").hasValue(1);
            assertThat(cache.stats().mappedBytes()).isZero();
        }
    }

    /**
     * An open whose handle contradicts the cached export counts the cached entry while it compares
     * them; when the entry's last region closes meanwhile, the open's drop of the count is the drop to
     * 0, and the entry weighs again: under {@code ipc.cache.bytes=0} it is unmapped. That drop used to
     * leave it weighing nothing, mapped for no region until the Conduit closed, out of both bounds'
     * reach.
     */
    @Test
    void anEntryWhoseLastRegionClosesWhileAContradictingOpenCountsItIsUnmappedUnderABoundOfZero() {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (IpcCache cache = new IpcCache(0, ENTRIES, IDLE)) {
            IpcCache.Lease only = cache.open(new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {1}), mapper);
            cache.whileContradicting = only::close;
            IpcCache.Lease beside = cache.open(new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, 4096, new byte[] {2}), mapper);
            cache.whileContradicting = () -> { };
            beside.close();
            assertThat(mapper.unmaps).as("the cached mapping and the one beside").hasValue(2);
            assertThat(cache.stats().mappedBytes()).as("bytes mapped for no region under a bound of 0").isZero();
        }
    }

    @Test
    void aFailedImportLeavesTheRegionHandedBackClosedAndReusable() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = pool.allocate(64).exportHandle();
        ImportedRegion region = conduit.importRegion(handle);
        MemorySegment before = region.segment();
        region.close();
        byte[] corrupted = handle.clone();
        corrupted[corrupted.length - 1] ^= 1; // the CRC
        assertThatThrownBy(() -> conduit.importRegion(corrupted, region)).isInstanceOf(InvalidHandleException.class);
        assertThat(region.isOpen()).isFalse();
        assertThat(region.segment()).isSameAs(before);
        assertThat(conduit.importRegion(handle, region)).isSameAs(region);
        assertThat(region.isOpen()).isTrue();
        region.close();
        assertThat(conduit.ipcCacheStats().entriesInUse()).isZero();

        conduit.close();
        assertThatThrownBy(() -> conduit.importRegion(handle, region)).isInstanceOf(IllegalStateException.class);
        assertThat(region.isOpen()).isFalse();
    }

    /**
     * An importer whose {@code map} throws a checked exception undeclared (Kotlin,
     * {@code @SneakyThrows}) fails the import with a {@code ConduitException} naming the plugin and
     * the call, as an unchecked one does, and the region handed back to be reopened stays closed and
     * reusable. Until 2026-12-07 the bare exception passed the import's catches of unchecked ones:
     * it reached the application naming no plugin, and left the region claimed for a reopen for
     * good, every later reuse of it refused as "being reopened by another thread".
     */
    @Test
    void anImporterThatThrowsACheckedExceptionUndeclaredIsNamedAndLeavesTheRegionHandedBackReusable() {
        Pool pool = open(1 << 30).pool("inproc");
        ImportedRegion region = conduit.importRegion(pool.allocate(CHUNK).exportHandle());
        region.close();
        byte[] other = pool.allocate(CHUNK).exportHandle();
        Exception checked = new java.io.IOException("the exporter's socket closed");
        plugin.whileMapping = () -> {
            throw IpcCacheTest.<RuntimeException>sneaky(checked);
        };

        assertThatThrownBy(() -> conduit.importRegion(other, region)).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its importer's map(): " + checked).hasCause(checked);

        plugin.whileMapping = () -> { };
        assertThat(region.isOpen()).isFalse();
        assertThat(conduit.importRegion(other, region)).as("the region reused by the next import").isSameAs(region);
        region.close();
    }

    /**
     * ImportedRegion: a region the plugin could map only for reading here (posix through a read-only
     * mount) has a read-only segment, through which a write throws IllegalArgumentException.
     */
    @Test
    void aRegionThePluginCouldMapOnlyForReadingHasAReadOnlySegment() {
        plugin.readOnlyImports = true;
        Pool pool = open(1 << 30).pool("inproc");
        Region region = ownChunk(pool);
        region.segment().set(ValueLayout.JAVA_LONG, 0, 7);
        try (ImportedRegion imported = conduit.importRegion(region.exportHandle())) {
            assertThat(imported.segment().isReadOnly()).isTrue();
            assertThatThrownBy(() -> imported.segment().set(ValueLayout.JAVA_LONG, 0, 1)).isInstanceOf(IllegalArgumentException.class);
            imported.segment().get(ValueLayout.JAVA_LONG, 0);
        }
    }

    @Test
    void anUnusedEntryIsUnmappedByEvictionAndItsSegmentThenThrows() {
        Pool pool = open(0).pool("inproc");
        ImportedRegion imported = conduit.importRegion(ownChunk(pool).exportHandle());
        assertThat(imported.isOpen()).isTrue();
        imported.close();
        assertThat(imported.isOpen()).isFalse();
        assertThat(plugin.unmaps).hasValue(1);
        assertThat(conduit.ipcCacheStats().evictions()).isEqualTo(1);
        assertThatThrownBy(() -> imported.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aReferencedEntryIsNeverEvictedWhateverTheBound() {
        Pool pool = open(0).pool("inproc");
        try (ImportedRegion held = conduit.importRegion(ownChunk(pool).exportHandle())) {
            for (int i = 0; i < 50; i++) {
                conduit.importRegion(ownChunk(pool).exportHandle()).close();
            }
            held.segment().set(ValueLayout.JAVA_INT, 0, 7);
            assertThat(held.segment().get(ValueLayout.JAVA_INT, 0)).isEqualTo(7);
            assertThat(plugin.unmaps).hasValue(50);
        }
        assertThat(plugin.unmaps).hasValue(51);
    }

    @Test
    void theByteBoundLimitsWhatStaysMappedForNoOpenRegion() {
        Pool pool = open(3 * CHUNK).pool("inproc");
        for (int i = 0; i < 20; i++) {
            conduit.importRegion(ownChunk(pool).exportHandle()).close();
        }
        IpcCacheStats stats = conduit.ipcCacheStats();
        assertThat(stats.mappedBytes()).isLessThanOrEqualTo(3 * CHUNK);
        assertThat(stats.evictions()).isGreaterThanOrEqualTo(17);
        assertThat(plugin.maps.get() - plugin.unmaps.get()).isEqualTo(stats.entries());
    }

    /**
     * Caffeine weighs an entry with an {@code int}, and the cache weighed a chunk in bytes capped at
     * {@code Integer.MAX_VALUE}: every chunk over 2 GiB (a {@code pool.chunk.size} up to 256g, a
     * large region's chunk of its own) counted as 2 GiB, so a bound of 4 GiB kept two unused 3 GiB
     * chunks, 6 GiB, mapped. The chunks here are one sparse file's mapping, taking no memory.
     */
    @Test
    void theByteBoundHoldsForChunksLargerThanAnIntCanWeigh(@TempDir Path dir) throws IOException {
        long chunk = 3L << 30;
        long bound = 4L << 30;
        java.util.concurrent.atomic.AtomicInteger unmapped = new java.util.concurrent.atomic.AtomicInteger();
        try (Arena arena = Arena.ofShared();
             FileChannel channel = FileChannel.open(dir.resolve("chunk"), StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                     StandardOpenOption.WRITE, StandardOpenOption.SPARSE);
             IpcCache cache = new IpcCache(bound, ENTRIES, IDLE)) {
            MemorySegment sparse = channel.map(FileChannel.MapMode.READ_WRITE, 0, chunk, arena);
            java.util.function.Function<IpcHandle, ChunkMapping> mapper = h -> new ChunkMapping() {
                @Override
                public MemorySegment segment() {
                    return sparse;
                }

                @Override
                public void close() {
                    unmapped.incrementAndGet();
                }
            };
            for (int i = 1; i <= 3; i++) {
                cache.open(new IpcHandle("inproc", 1, 2, i, chunk, 0, chunk, new byte[] {(byte) i}), mapper).close();
            }
            cache.cleanUp();
            IpcCacheStats stats = cache.stats();
            assertThat(stats.mappedBytes()).as("bytes mapped for no open region").isLessThanOrEqualTo(bound);
            assertThat(stats.entries()).isEqualTo(1);
            assertThat(unmapped).hasValue(2);
        }
    }

    @Test
    void evictionRacingWithUseNeverUnmapsAMappingInUse() throws Exception {
        Pool pool = open(CHUNK).pool("inproc");
        List<byte[]> handles = new ArrayList<>();
        for (int i = 0; i < 8; i++) handles.add(ownChunk(pool).exportHandle());
        AtomicBoolean failed = new AtomicBoolean();
        try (ExecutorService threads = Executors.newFixedThreadPool(4)) {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                futures.add(threads.submit(() -> {
                    for (int i = 0; i < 5_000 && !failed.get(); i++) {
                        byte[] handle = handles.get((i * 7 + seed) % handles.size());
                        try (ImportedRegion r = conduit.importRegion(handle)) {
                            // Any access to an unmapped segment would throw IllegalStateException here.
                            r.segment().set(ValueLayout.JAVA_LONG, 8L * seed, i);
                            if (r.segment().get(ValueLayout.JAVA_LONG, 8L * seed) != i) failed.set(true);
                        }
                    }
                }));
            }
            for (Future<?> f : futures) f.get();
        }
        assertThat(failed).isFalse();
        assertThat(conduit.ipcCacheStats().evictions()).isPositive();
    }

    /**
     * A hit on an entry whose count once dropped to 0 takes no lock, so the entry keeps weighing its
     * length while it is open, and the policy may pick it: it leaves the cache and stays mapped. Such
     * an entry was forgotten: the stats left it out of entries and entriesInUse, an import of it
     * mapped the chunk a second time, and the Conduit's close left it mapped, its region open and
     * readable (found with memfd and posix: ipc.cache.bytes=2m, six 1 MiB chunks).
     */
    @Test
    void anOpenEntryThePolicyPickedStaysKnownUntilItsLastRegionClosesAndTheConduitsCloseUnmapsIt() {
        Pool pool = open(2 * CHUNK).pool("inproc");
        List<byte[]> handles = new ArrayList<>();
        for (int i = 0; i < 6; i++) handles.add(ownChunk(pool).exportHandle());
        conduit.importRegion(handles.get(0)).close();
        ImportedRegion held = conduit.importRegion(handles.get(0));
        for (int i = 1; i < 6; i++) conduit.importRegion(handles.get(i)).close();
        assertThat(plugin.unmaps.get()).as("others were evicted").isPositive();

        IpcCacheStats stats = conduit.ipcCacheStats();
        assertThat(stats.entries()).as("chunks mapped").isEqualTo(plugin.maps.get() - plugin.unmaps.get());
        assertThat(stats.entriesInUse()).isEqualTo(1);
        assertThat(stats.mappedBytes()).isEqualTo(stats.entries() * CHUNK);
        int maps = plugin.maps.get();
        try (ImportedRegion again = conduit.importRegion(handles.get(0))) {
            assertThat(plugin.maps).as("the open mapping serves it").hasValue(maps);
            assertThat(again.segment().address()).isEqualTo(held.segment().address());
        }

        conduit.close();
        assertThat(held.isOpen()).isFalse();
        assertThat(plugin.unmaps.get()).as("every mapping is gone with the conduit").isEqualTo(plugin.maps.get());
        assertThatThrownBy(() -> held.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        held.close();
        conduit = null;
    }

    /**
     * An entry the policy evicted while open stays in the hit index, so that importing its chunk
     * again reuses its mapping; but {@link IpcCache#open} (a peer region's open for RMA, and an
     * import whose lock-free look-up ran before the entry was made) consulted only Caffeine's map,
     * found nothing and mapped the chunk a second time, and the new entry took the old one's place
     * in the index.
     */
    @Test
    void openingAChunkWhoseEntryThePolicyPickedWhileOpenReusesItsMapping() {
        IpcCache cache = new IpcCache(2 * CHUNK, ENTRIES, IDLE);
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        java.util.concurrent.atomic.AtomicInteger mapped = mapper.maps;
        List<IpcHandle> handles = new ArrayList<>();
        for (int i = 1; i <= 6; i++) handles.add(new IpcHandle("inproc", 1, 2, i, CHUNK, 0, CHUNK, new byte[] {(byte) i}));
        try (cache) {
            cache.open(handles.get(0), mapper).close();
            IpcCache.Lease held = cache.tryHit(handles.get(0).encode());
            assertThat(held).as("a hit").isNotNull();
            for (int i = 1; i < 6; i++) cache.open(handles.get(i), mapper).close();
            cache.cleanUp();
            assertThat(held.isOpen()).isTrue();
            int before = mapped.get();

            try (IpcCache.Lease again = cache.open(handles.get(0), mapper)) {
                assertThat(mapped).as("the open mapping serves it").hasValue(before);
                assertThat(again.segment().address()).isEqualTo(held.segment().address());
            }
            held.close();
        }
    }

    @Test
    void manyImportCloseCyclesKeepTheMappingCountFlat() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        for (int i = 0; i < 100_000; i++) {
            conduit.importRegion(handle).close();
        }
        assertThat(plugin.maps).hasValue(1);
        assertThat(conduit.ipcCacheStats().entries()).isEqualTo(1);
    }

    @Test
    void aStaleExportFailsCleanlyAndCachesNothing() {
        Pool pool = open(1 << 30).pool("inproc");
        Region region = ownChunk(pool);
        byte[] handle = region.exportHandle();
        region.close();
        assertThatThrownBy(() -> conduit.importRegion(handle)).isInstanceOf(ConduitException.class).hasMessageContaining("gone");
        assertThat(conduit.ipcCacheStats().entries()).isZero();
        assertThat(plugin.maps).hasValue(0);
    }

    /**
     * Conduit.importRegion's warning: "A hit asks the producer nothing": a handle imported before its
     * producer freed the chunk opens again, from the cache, on the old memory (which the producer no
     * longer shares), while the cache holds it; only a miss finds the export gone.
     */
    @Test
    void aHitAfterTheProducerFreedTheChunkOpensTheCachedMappingWithoutAskingTheProducer() {
        Pool pool = open(1 << 30).pool("inproc");
        Region region = ownChunk(pool);
        byte[] handle = region.exportHandle();
        try (ImportedRegion first = conduit.importRegion(handle)) {
            first.segment().set(ValueLayout.JAVA_LONG, 0, 42);
        }
        region.close();
        try (ImportedRegion again = conduit.importRegion(handle)) {
            assertThat(again.segment().get(ValueLayout.JAVA_LONG, 0)).as("the old memory, still mapped here").isEqualTo(42);
        }
        assertThat(plugin.maps).as("no miss: the producer was not asked").hasValue(1);
        assertThat(conduit.ipcCacheStats().hits()).isEqualTo(1);
    }

    /**
     * A handle under a cached export's key with another chunk length is opened on a mapping of its
     * own, beside the cache, by its importer as any miss; the cached entry stays, and serves the
     * genuine handle's hits; the mapping beside goes at its region's close, and at the Conduit's.
     * Such a handle used to be refused: whichever came first owned the key (see the next test).
     */
    @Test
    void aHandleThatContradictsTheCachedExportIsMappedBesideItAndTheCachedOneStays() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        conduit.importRegion(handle).close();
        IpcHandle h = IpcHandle.decode(handle);
        byte[] longer = new IpcHandle(h.plugin(), h.originHigh(), h.originLow(), h.exportId(), h.chunkLength() * 2,
                0, h.chunkLength() * 2, h.payload()).encode();

        ImportedRegion beside = conduit.importRegion(longer);
        assertThat(beside.segment().byteSize()).isEqualTo(2 * CHUNK);
        assertThat(plugin.maps).as("mapped by its importer").hasValue(2);
        assertThat(conduit.ipcCacheStats().mappedBytes()).isEqualTo(3 * CHUNK);
        assertThat(conduit.ipcCacheStats().entries()).as("the cached one and the one beside").isEqualTo(2);
        conduit.importRegion(handle).close();
        assertThat(conduit.ipcCacheStats().hits()).as("the cached entry still serves its handle").isEqualTo(1);
        beside.close();
        assertThat(plugin.unmaps).as("the mapping beside goes with its region").hasValue(1);
        assertThat(conduit.ipcCacheStats().entriesInUse()).as("the contradicting import left the cached entry's count as it found it")
                .isZero();
        assertThat(conduit.ipcCacheStats().mappedBytes()).isEqualTo(CHUNK);

        ImportedRegion open = conduit.importRegion(longer);
        conduit.close();
        assertThat(plugin.unmaps).as("and with the Conduit").hasValue(3);
        assertThatThrownBy(() -> open.segment().get(ValueLayout.JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * The key is the handle's own word, which no importer checks against the producer: a handle
     * made with another producer's origin and export id but a payload this process can import
     * (another export it may map) was cached under that key, and the genuine handle was then
     * refused as forged or corrupted for as long as the entry stayed (found by helper h5: a denial
     * of another producer's export by whoever may hand this process handles). The genuine handle
     * now opens beside it.
     */
    @Test
    void aHandleCachedUnderAnotherExportsKeyDoesNotDenyTheGenuineHandle() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] genuine = ownChunk(pool).exportHandle();
        IpcHandle g = IpcHandle.decode(genuine);
        IpcHandle other = IpcHandle.decode(ownChunk(pool).exportHandle());
        byte[] forged = new IpcHandle(g.plugin(), g.originHigh(), g.originLow(), g.exportId(), g.chunkLength(),
                g.regionOffset(), g.regionLength(), other.payload()).encode();
        conduit.importRegion(forged).close(); // cached under the genuine export's key

        try (ImportedRegion region = conduit.importRegion(genuine)) {
            assertThat(region.segment().byteSize()).isEqualTo(g.regionLength());
        }
        assertThat(plugin.maps).hasValue(2);
        conduit.importRegion(forged).close();
        assertThat(conduit.ipcCacheStats().hits()).as("the forged handle's entry is still the cached one").isEqualTo(1);
    }

    /**
     * A handle that names another installed plugin for a cached export goes to that plugin's
     * importer, which judges its payload as on any miss (here: no export of its own by that token).
     */
    @Test
    void aHandleThatNamesAnotherPluginForTheCachedExportGoesToThatPluginsImporter() {
        InProcessMemoryPlugin otherPlugin = new InProcessMemoryPlugin("other", java.util.EnumSet.of(dev.conduit.spi.ThreadMode.SERIALIZED));
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of())
                .addPlugin(plugin)
                .addPlugin(otherPlugin)
                .set("pool.chunk.size", Long.toString(CHUNK))
                .build();
        byte[] handle = ownChunk(conduit.pool("inproc")).exportHandle();
        conduit.importRegion(handle).close();
        IpcHandle h = IpcHandle.decode(handle);
        byte[] forged = new IpcHandle("other", h.originHigh(), h.originLow(), h.exportId(), h.chunkLength(),
                h.regionOffset(), h.regionLength(), h.payload()).encode();
        assertThatThrownBy(() -> conduit.importRegion(forged)).isInstanceOf(ConduitException.class).hasMessageContaining("is gone");
        assertThat(conduit.ipcCacheStats().entries()).as("nothing beside: the import failed").isEqualTo(1);
        conduit.importRegion(handle).close();
        assertThat(conduit.ipcCacheStats().hits()).isEqualTo(1);
    }

    /** A hit must carry the payload the importer validated: another one is a miss, judged by the importer. */
    @Test
    void aHitMustCarryThePayloadTheImporterValidated() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        conduit.importRegion(handle).close();
        IpcHandle h = IpcHandle.decode(handle);
        byte[] otherPayload = h.payload().clone();
        otherPayload[0] ^= 1;
        byte[] forged = new IpcHandle(h.plugin(), h.originHigh(), h.originLow(), h.exportId(), h.chunkLength(),
                h.regionOffset(), h.regionLength(), otherPayload).encode();
        assertThatThrownBy(() -> conduit.importRegion(forged)).isInstanceOf(ConduitException.class).hasMessageContaining("is gone");
        assertThat(conduit.ipcCacheStats().hits()).isZero();
    }

    @Test
    void aHandleOfAPluginThatIsNotHereNamesIt() {
        open(1 << 30);
        byte[] foreign = new IpcHandle("devdax", 1, 2, 3, 4096, 0, 4096, new byte[0]).encode();
        assertThatThrownBy(() -> conduit.importRegion(foreign)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("devdax").hasMessageContaining("not installed");
    }

    @Test
    void closingTheConduitUnmapsEverythingAndImportedSegmentsThenThrow() {
        Pool pool = open(1 << 30).pool("inproc");
        ImportedRegion imported = conduit.importRegion(ownChunk(pool).exportHandle());
        conduit.close();
        assertThat(imported.isOpen()).as("its mapping is gone with the conduit").isFalse();
        assertThat(plugin.unmaps).hasValue(1);
        assertThat(plugin.providersClosed).hasValue(1);
        assertThatThrownBy(() -> imported.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        imported.close();
        conduit = null;
    }

    /** One mapping that cannot be closed keeps neither the others mapped nor its own region usable. */
    @Test
    void aMappingThatFailsToCloseKeepsNoOtherMappedAndTheFailureIsThrown() {
        closeWithOneUnmapFailing(() -> plugin.failingUnmaps.set(1),
                suppressed -> assertThat(suppressed).hasMessage("Session is acquired by 1 clients"));
    }

    /** The same when the plugin's unmap throws an Error: it used to leave the loop, and the other region mapped. */
    @Test
    void aMappingWhoseCloseThrowsAnErrorKeepsNoOtherMapped() {
        closeWithOneUnmapFailing(() -> plugin.unmapError.set(new InternalError("a fault occurred in an unsafe memory access")),
                suppressed -> assertThat(suppressed).isInstanceOf(InternalError.class));
    }

    /**
     * The same when the plugin's unmap throws a checked exception it does not declare (a plugin in
     * Kotlin, or with {@code @SneakyThrows}): until 2026-12-07 it left the loop, bare, the other
     * region mapped for good, and came out of the Conduit's close in place of the ConduitException.
     */
    @Test
    void aMappingWhoseCloseThrowsACheckedExceptionUndeclaredKeepsNoOtherMapped() {
        closeWithOneUnmapFailing(() -> plugin.unmapError.set(new java.io.IOException("munmap: Input/output error")),
                suppressed -> assertThat(suppressed).isInstanceOf(java.io.IOException.class));
    }

    /** Imports two regions, arms one unmap to fail, closes the Conduit: both are tried, both dead, the failure thrown. */
    private void closeWithOneUnmapFailing(Runnable armFailure, java.util.function.Consumer<Throwable> checkFailure) {
        Pool pool = open(1 << 30).pool("inproc");
        ImportedRegion first = conduit.importRegion(ownChunk(pool).exportHandle());
        ImportedRegion second = conduit.importRegion(ownChunk(pool).exportHandle());
        armFailure.run();

        assertThatThrownBy(conduit::close).isInstanceOf(ConduitException.class).hasMessageContaining("unmapping imported regions failed")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().satisfies(checkFailure::accept));
        assertThat(plugin.unmaps).as("both tried").hasValue(2);
        assertThat(first.isOpen()).isFalse();
        assertThat(second.isOpen()).isFalse();
        first.close();
        second.close();
        conduit = null;
    }

    /** After the Conduit closed, an import maps nothing (a handler may still run, and import, while it closes). */
    @Test
    void aClosedCacheMapsNothingMore() {
        Pool pool = open(1 << 30).pool("inproc");
        byte[] handle = ownChunk(pool).exportHandle();
        IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE);
        cache.close();
        assertThat(cache.tryHit(handle)).isNull();
        assertThatThrownBy(() -> cache.open(IpcHandle.decode(handle), h -> {
            throw new AssertionError("mapped after close");
        })).isInstanceOf(IllegalStateException.class).hasMessageContaining("Conduit is closed");
    }

    /**
     * A lease whose close saw its entry alive, and releases it after the cache's close marked it
     * dead, leaves it dead: the entry's other leases still report themselves closed. The release
     * used to wrap the mark around (a decrement of Integer.MIN_VALUE).
     */
    @Test
    void aReleaseAfterTheCacheMarkedAnEntryDeadLeavesItDead() {
        IpcCache cache = new IpcCache(1 << 30, ENTRIES, IDLE);
        MemorySegment chunk = Arena.ofAuto().allocate(4096);
        IpcCache.Entry entry = new IpcCache.Entry(new IpcCache.Key(1, 2, 3), "inproc", 3, new ChunkMapping() {
            @Override
            public MemorySegment segment() {
                return chunk;
            }

            @Override
            public void close() {
            }
        }, chunk, true, new byte[0]);
        entry.detached = true;
        assertThat(entry.kill()).as("dead, as the cache's close leaves it").isTrue();
        IpcCache.Lease other = new IpcCache.Lease(cache, entry, chunk);

        cache.release(entry); // the late release of a lease that saw the entry alive

        assertThat(other.isOpen()).isFalse();
    }
}
