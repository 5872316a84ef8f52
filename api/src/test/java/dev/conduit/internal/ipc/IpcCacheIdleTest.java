package dev.conduit.internal.ipc;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import dev.conduit.testing.HangGuard;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The sweep of unused entries ({@code ipc.cache.idle}): without it, chunks a producer freed, or a
 * dead producer's, stayed mapped by every importer up to {@code ipc.cache.bytes} (1 GiB) for as long
 * as nothing new pushed them out, their pages taken in the producer's directory (found in a soak:
 * an importer's RSS went from 160 MB to 1.1 GB and stayed).
 */
class IpcCacheIdleTest {

    private static final long CHUNK = 64 << 10;
    private static final String SWEEP_THREAD = "conduit-ipc-cache-sweep";

    private final ArenaChunkMapper mapper = new ArenaChunkMapper();
    private final AtomicInteger maps = mapper.maps;
    private final AtomicInteger unmaps = mapper.unmaps;

    private static IpcHandle handle(int exportId) {
        return new IpcHandle("inproc", 1, 2, exportId, CHUNK, 0, CHUNK, new byte[] {(byte) exportId});
    }

    @Test
    void anEntryUnusedForAWholeRoundIsUnmappedByTheNextRound() {
        try (IpcCache cache = new IpcCache(1 << 30, IpcCacheTest.ENTRIES, IpcCacheTest.IDLE)) {
            IpcCache.Lease imported = cache.open(handle(1), mapper);
            imported.close();

            cache.sweepIdle();
            assertThat(unmaps).as("unmapped by the round after its last use").hasValue(0);
            cache.sweepIdle();

            assertThat(unmaps).as("unmapped by the round after a whole round unused").hasValue(1);
            assertThat(cache.stats().entries()).isZero();
            assertThat(cache.stats().mappedBytes()).isZero();
            assertThat(cache.stats().evictions()).isEqualTo(1);
            assertThat(cache.tryHit(handle(1).encode())).as("a hit on the unmapped entry").isNull();
            assertThatThrownBy(() -> imported.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
            cache.open(handle(1), mapper).close();
            assertThat(maps).as("imported again: mapped again").hasValue(2);
        }
    }

    /**
     * An import while a round unmaps the entry of its chunk (the entry dead, not yet out of the hit
     * index) is no hit on that entry: it maps the chunk afresh, into the cache, also when its handle
     * contradicts the dying entry, which nothing can be open on any more.
     */
    @Test
    void anImportWhileARoundUnmapsItsChunksEntryMapsTheChunkAfreshIntoTheCache() {
        IpcHandle contradicting = new IpcHandle("inproc", 1, 2, 1, CHUNK, 0, CHUNK, new byte[] {9}); // export 1's key, another payload
        try (IpcCache cache = new IpcCache(1 << 30, IpcCacheTest.ENTRIES, IpcCacheTest.IDLE)) {
            cache.open(handle(1), mapper).close();
            cache.sweepIdle();
            List<IpcCache.Lease> meanwhile = new ArrayList<>();
            cache.whileSweeping = () -> {
                meanwhile.add(cache.tryHit(handle(1).encode()));
                meanwhile.add(cache.open(contradicting, mapper));
                meanwhile.add(cache.tryHit(contradicting.encode())); // the index answers with the fresh entry, not the dying one
            };

            cache.sweepIdle();

            assertThat(meanwhile.get(0)).as("a hit on the dying entry").isNull();
            try (IpcCache.Lease imported = meanwhile.get(1)) {
                imported.segment().set(ValueLayout.JAVA_LONG, 0, 42);
                assertThat(imported.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(42);
            }
            assertThat(meanwhile.get(2)).as("a hit on the chunk mapped afresh, while the dying entry is still indexed").isNotNull();
            meanwhile.get(2).close();
            IpcCache.Lease hit = cache.tryHit(contradicting.encode());
            assertThat(hit).as("a hit on the chunk mapped afresh, cached").isNotNull();
            hit.close();
            assertThat(maps).hasValue(2);
            assertThat(unmaps).as("the dying entry's mapping only").hasValue(1);
        }
    }

    @Test
    void anEntryImportedBetweenRoundsStaysForAnotherWholeRound() {
        try (IpcCache cache = new IpcCache(1 << 30, IpcCacheTest.ENTRIES, IpcCacheTest.IDLE)) {
            cache.open(handle(1), mapper).close();
            cache.sweepIdle();

            IpcCache.Lease hit = cache.tryHit(handle(1).encode());
            assertThat(hit).as("a hit").isNotNull();
            hit.close();
            cache.sweepIdle();
            assertThat(unmaps).as("unmapped though imported since the round before").hasValue(0);

            cache.sweepIdle();
            assertThat(unmaps).hasValue(1);
            assertThat(maps).hasValue(1);
        }
    }

    @Test
    void anOpenRegionsEntryIsNeverSweptAndIsGivenAWholeRoundAfterItsLastClose() {
        try (IpcCache cache = new IpcCache(1 << 30, IpcCacheTest.ENTRIES, IpcCacheTest.IDLE)) {
            cache.open(handle(1), mapper).close();
            IpcCache.Lease open = cache.tryHit(handle(1).encode());
            for (int round = 0; round < 3; round++) cache.sweepIdle();
            open.segment().set(ValueLayout.JAVA_LONG, 0, 42);
            assertThat(open.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(42);
            assertThat(unmaps).as("unmapped while a region was open on it").hasValue(0);

            open.close();
            cache.sweepIdle();
            assertThat(unmaps).as("unmapped by the first round after its close").hasValue(0);
            cache.sweepIdle();
            assertThat(unmaps).hasValue(1);
        }
    }

    @Test
    void roundsRacingWithImportsNeverUnmapAMappingInUse() throws Exception {
        IpcCache cache = new IpcCache(1 << 30, IpcCacheTest.ENTRIES, IpcCacheTest.IDLE);
        List<IpcHandle> handles = new ArrayList<>();
        for (int i = 1; i <= 16; i++) handles.add(handle(i));
        AtomicBoolean failed = new AtomicBoolean();
        AtomicBoolean importing = new AtomicBoolean(true);
        long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); // against hanging, not a speed check
        try (cache; ExecutorService threads = Executors.newFixedThreadPool(4)) {
            List<Future<?>> importers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                int seed = t;
                importers.add(threads.submit(() -> {
                    // Past 20,000 imports, on until a round has unmapped (the race is what the test is for: on a loaded
                    // machine the importers could finish before the sweep got a turn), looked at every 1,000.
                    for (int i = 0; !failed.get() && (i < 20_000 || i % 1_000 != 0 || cache.stats().evictions() == 0)
                            && System.nanoTime() - guard < 0; i++) {
                        // Phases of 2,000 imports over one half of the handles, then the other: the half left goes
                        // unused, for the rounds to unmap while the other is in use.
                        int half = (i / 2_000) % 2;
                        IpcHandle h = handles.get(half * 8 + (i * 7 + seed) % 8);
                        IpcCache.Lease hit = cache.tryHit(h.encode());
                        try (IpcCache.Lease lease = hit != null ? hit : cache.open(h, mapper)) {
                            // Any access to an unmapped segment would throw IllegalStateException here.
                            lease.segment().set(ValueLayout.JAVA_LONG, 8L * seed, i);
                            if (lease.segment().get(ValueLayout.JAVA_LONG, 8L * seed) != i) failed.set(true);
                        }
                    }
                }));
            }
            Future<?> sweeping = threads.submit(() -> {
                while (importing.get()) cache.sweepIdle();
            });
            try {
                for (Future<?> f : importers) f.get();
            } finally {
                importing.set(false);
            }
            sweeping.get();
            assertThat(failed).isFalse();
            assertThat(cache.stats().evictions()).as("rounds that unmapped").isPositive();
            assertThat(maps.get() - unmaps.get()).as("mappings left").isEqualTo(cache.stats().entries());
        }
        assertThat(unmaps.get()).as("unmapped by the close").isEqualTo(maps.get());
    }

    @Test
    void theSweepsThreadUnmapsUnusedImportsByItselfAndEndsWithTheConduit() throws InterruptedException {
        Set<Thread> before = sweepThreads();
        InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
        try (Conduit conduit = conduit(plugin, "1g", "10ms")) {
            Pool pool = conduit.pool("inproc");
            ImportedRegion open = conduit.importRegion(pool.allocate(CHUNK).exportHandle());
            assertThat(started(before)).as("sweep threads of a Conduit whose imports are all open").isEmpty();

            open.close();
            Set<Thread> started = started(before);
            assertThat(started).as("sweep threads started when an import became unused").hasSize(1);
            for (int i = 0; i < 3000 && conduit.ipcCacheStats().entries() > 0; i++) Thread.sleep(10);

            assertThat(conduit.ipcCacheStats().entries()).as("entries left after the sweep ran").isZero();
            assertThat(plugin.unmaps).hasValue(1);
            conduit.close();
            assertThat(started.iterator().next().isAlive()).as("the sweep thread alive after its Conduit closed").isFalse();
        }
    }

    /**
     * A plugin's unmap that throws an Error in a round (as the Conduit's close is tested to survive:
     * IpcCacheTest#aMappingWhoseCloseThrowsAnErrorKeepsNoOtherMapped) leaves the sweep running.
     * Until 2026-12-07 Periodic's loop caught RuntimeException only, so the Error ended the sweep's
     * thread, and startSweeper() never started another (its field still named the dead one): every
     * later unused import stayed mapped up to the bounds, with no WARNING of the runtime's.
     */
    @Test
    void aRoundWhoseUnmapThrowsAnErrorLeavesTheSweepRunning() {
        InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
        try (Conduit conduit = conduit(plugin, "1g", "10ms")) {
            Pool pool = conduit.pool("inproc");
            plugin.unmapError.set(new InternalError("a fault occurred in an unsafe memory access"));
            conduit.importRegion(pool.allocate(CHUNK).exportHandle()).close();
            awaitUnmaps(plugin, 1, "the first unused import's unmap tried (and thrown)");
            assertThat(plugin.unmaps).as("the first unused import's unmap tried (and thrown)").hasValue(1);

            conduit.importRegion(pool.allocate(CHUNK).exportHandle()).close();
            awaitUnmaps(plugin, 2, "the next unused import unmapped by a later round");

            assertThat(plugin.unmaps).as("the next unused import unmapped by a later round").hasValue(2);
        }
    }

    /**
     * The sweep's thread unmaps with the context class loader of the thread that built the
     * Conduit, not that of the thread whose close first left an import unused, nor the system
     * class loader: a plugin's unmap that looks something up through it ({@code ServiceLoader.load},
     * a logging bridge) in a fat jar or an application server sees the application's classes, as
     * its calls on the application's threads do. Until 2026-12-07 the thread inherited nothing and
     * so had the system class loader.
     */
    @Test
    void theSweepUnmapsWithTheContextClassLoaderOfTheThreadThatBuiltTheConduit() {
        InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
        ClassLoader original = Thread.currentThread().getContextClassLoader();
        ClassLoader builders = new ClassLoader(original) { };
        Thread.currentThread().setContextClassLoader(builders);
        Conduit built;
        try {
            built = conduit(plugin, "1g", "10ms");
        } finally {
            Thread.currentThread().setContextClassLoader(original);
        }
        ClassLoader importers = new ClassLoader(original) { };
        Thread.currentThread().setContextClassLoader(importers);
        try (Conduit conduit = built) {
            conduit.importRegion(conduit.pool("inproc").allocate(CHUNK).exportHandle()).close(); // starts the sweep
            awaitUnmaps(plugin, 1, "the unused import unmapped by the sweep");
            assertThat(plugin.unmapContextLoader.get()).as("the context class loader the sweep's unmap ran with").isSameAs(builders);
        } finally {
            Thread.currentThread().setContextClassLoader(original);
        }
    }

    /** Waits until {@code plugin} was asked {@code count} unmaps (a sweep that died never asks). */
    private static void awaitUnmaps(InProcessMemoryPlugin plugin, int count, String what) {
        HangGuard.until(() -> plugin.unmaps.get() >= count, what);
    }

    @Test
    void aConduitThatKeepsNoUnusedImportHasNoSweepThread() {
        Set<Thread> before = sweepThreads();
        try (Conduit conduit = conduit(new InProcessMemoryPlugin(), "0", "10ms")) {
            conduit.importRegion(conduit.pool("inproc").allocate(CHUNK).exportHandle()).close();
            assertThat(started(before)).as("sweep threads of a Conduit with ipc.cache.bytes=0").isEmpty();
        }
        try (Conduit conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new java.util.Properties())
                .addPlugin(new InProcessMemoryPlugin()).set("ipc.cache.entries", "0").set("ipc.cache.idle", "10ms")
                .set("pool.chunk.size", Long.toString(CHUNK)).build()) {
            conduit.importRegion(conduit.pool("inproc").allocate(CHUNK).exportHandle()).close();
            assertThat(started(before)).as("sweep threads of a Conduit with ipc.cache.entries=0").isEmpty();
        }
    }

    /** A Conduit dropped without a close is not kept alive by its sweep's thread, which then ends. */
    @Test
    void aConduitDroppedUnclosedIsNotKeptAliveByItsSweep() throws InterruptedException {
        Set<Thread> before = sweepThreads();
        WeakReference<Conduit> dropped = dropAConduitWithAnUnusedImport();
        Set<Thread> started = started(before);
        assertThat(started).as("sweep threads started by the dropped Conduit").hasSize(1);
        Thread sweep = started.iterator().next();

        for (int i = 0; i < 600 && (dropped.get() != null || sweep.isAlive()); i++) {
            System.gc();
            sweep.join(100);
        }

        assertThat(dropped.get()).as("the dropped Conduit, after collections").isNull();
        assertThat(sweep.isAlive()).as("its sweep thread alive after the Conduit was collected").isFalse();
    }

    private static WeakReference<Conduit> dropAConduitWithAnUnusedImport() {
        Conduit conduit = conduit(new InProcessMemoryPlugin(), "1g", "10ms");
        conduit.importRegion(conduit.pool("inproc").allocate(CHUNK).exportHandle()).close();
        return new WeakReference<>(conduit);
    }

    private static Conduit conduit(InProcessMemoryPlugin plugin, String cacheBytes, String idle) {
        return Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new java.util.Properties())
                .addPlugin(plugin)
                .set("ipc.cache.bytes", cacheBytes)
                .set("ipc.cache.idle", idle)
                .set("pool.chunk.size", Long.toString(CHUNK))
                .build();
    }

    private static Set<Thread> started(Set<Thread> before) {
        Set<Thread> now = sweepThreads();
        now.removeAll(before);
        return now;
    }

    private static Set<Thread> sweepThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(SWEEP_THREAD) && t.isAlive())
                .collect(Collectors.toSet());
    }
}
