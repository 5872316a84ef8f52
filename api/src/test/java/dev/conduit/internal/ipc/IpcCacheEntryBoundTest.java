package dev.conduit.internal.ipc;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.Pool;
import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.AfterEach;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code ipc.cache.entries}: the count of chunks kept mapped for no open region, bounded as
 * {@code ipc.cache.bytes} bounds their bytes. Without it a burst of imports of small chunks kept up
 * to 1 GiB of them mapped until the sweep, 16384 mappings at 64 KiB, a quarter of the process's
 * {@code vm.max_map_count}.
 */
class IpcCacheEntryBoundTest {

    private static final long CHUNK = 64 << 10;

    private final InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
    private Conduit conduit;

    private Conduit open(String entries) {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new java.util.Properties())
                .addPlugin(plugin)
                .set("ipc.cache.entries", entries)
                .set("pool.chunk.size", Long.toString(CHUNK))
                .build();
        return conduit;
    }

    @AfterEach
    void close() {
        if (conduit != null) conduit.close();
    }

    @Test
    void theEntryBoundLimitsHowManyChunksStayMappedForNoOpenRegionWellUnderTheByteBound() {
        Pool pool = open("3").pool("inproc");
        for (int i = 0; i < 20; i++) {
            conduit.importRegion(pool.allocate(CHUNK).exportHandle()).close();
        }
        IpcCacheStats stats = conduit.ipcCacheStats();
        assertThat(stats.entries()).as("chunks mapped, with 20 * 64 KiB far under ipc.cache.bytes").isEqualTo(3);
        assertThat(stats.evictions()).isEqualTo(17);
        assertThat(plugin.maps.get() - plugin.unmaps.get()).isEqualTo(3);
        assertThat(stats.mappedBytes()).isEqualTo(3 * CHUNK);
    }

    /** The most recently used chunks stay: importing them again maps nothing. */
    @Test
    void theChunksEvictedForTheEntryBoundAreTheLeastRecentlyUsed() {
        Pool pool = open("2").pool("inproc");
        List<byte[]> handles = new ArrayList<>();
        for (int i = 0; i < 4; i++) handles.add(pool.allocate(CHUNK).exportHandle());
        for (byte[] handle : handles) conduit.importRegion(handle).close();
        int maps = plugin.maps.get();
        conduit.importRegion(handles.get(3)).close();
        conduit.importRegion(handles.get(2)).close();
        assertThat(plugin.maps).as("the last two imported are hits").hasValue(maps);
    }

    /**
     * Regions in use are never unmapped for the count, and an import is not refused when every
     * entry is in use: the count passes the bound, as the bytes pass theirs, and falls back to it
     * as the regions close.
     */
    @Test
    void chunksInUseAreNeitherEvictedNorRefusedPastTheBoundAndTheCountFallsBackToItAsTheyClose() {
        Pool pool = open("2").pool("inproc");
        List<ImportedRegion> held = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ImportedRegion region = conduit.importRegion(pool.allocate(CHUNK).exportHandle());
            region.segment().set(ValueLayout.JAVA_INT, 0, i);
            held.add(region);
        }
        assertThat(plugin.unmaps).hasValue(0);
        assertThat(conduit.ipcCacheStats().entriesInUse()).isEqualTo(5);
        for (int i = 0; i < 5; i++) {
            assertThat(held.get(i).segment().get(ValueLayout.JAVA_INT, 0)).isEqualTo(i);
        }

        held.forEach(ImportedRegion::close);
        IpcCacheStats stats = conduit.ipcCacheStats();
        assertThat(stats.entries()).isEqualTo(2);
        assertThat(plugin.unmaps).hasValue(3);
    }

    /** {@code ipc.cache.entries=0} keeps nothing, as {@code ipc.cache.bytes=0} does: a chunk is unmapped as its last region closes. */
    @Test
    void zeroKeepsNoChunkMappedForNoOpenRegion() {
        Pool pool = open("0").pool("inproc");
        ImportedRegion imported = conduit.importRegion(pool.allocate(CHUNK).exportHandle());
        try (ImportedRegion second = conduit.importRegion(pool.allocate(CHUNK).exportHandle())) {
            imported.close();
            assertThat(plugin.unmaps).hasValue(1);
            assertThat(second.segment().get(ValueLayout.JAVA_BYTE, 0)).isZero();
        }
        assertThat(plugin.unmaps).hasValue(2);
        assertThat(conduit.ipcCacheStats().entries()).isZero();
        assertThatThrownBy(() -> imported.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    /** A JFR recording tells the count's evictions from the bytes' (SIZE) and the sweep's (IDLE). */
    @Test
    void anEvictionForTheCountIsRecordedAsEntries(@TempDir Path dir) throws Exception {
        Pool pool = open("1").pool("inproc");
        Path file = dir.resolve("evictions.jfr");
        try (Recording recording = new Recording()) {
            recording.enable("dev.conduit.Eviction");
            recording.start();
            for (int i = 0; i < 3; i++) conduit.importRegion(pool.allocate(CHUNK).exportHandle()).close();
            recording.stop();
            recording.dump(file);
        }
        assertThat(RecordingFile.readAllEvents(file)).filteredOn(e -> e.getEventType().getName().equals("dev.conduit.Eviction"))
                .extracting(e -> e.getString("plugin") + "|" + e.getLong("chunkLength") + "|" + e.getString("cause"))
                .containsExactly("inproc|" + CHUNK + "|ENTRIES", "inproc|" + CHUNK + "|ENTRIES");
    }

    /**
     * A region open on an entry the count takes out of the cache, as the Conduit closes, is closed
     * with it: the trim took the entry out of the cache and only afterwards put it among those
     * evicted while open, so a close in between found it in neither, and it stayed mapped, its
     * region open, after the close (found by random pauses at the cache's steps).
     */
    @Test
    void aRegionOpenOnAnEntryTheCountTakesOutAsTheCacheClosesIsClosedWithIt() {
        IpcCache cache = new IpcCache(1L << 30, 1, IpcCacheTest.IDLE);
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        cache.open(handle(1), mapper).close();
        IpcCache.Lease held = cache.tryHit(handle(1).encode()); // counted again by a hit: it still weighs, and may be taken while open
        assertThat(held).as("a hit").isNotNull();
        cache.whileTrimming = cache::close;

        weighAsHotterEntry(cache, mapper, handle(2)); // ipc.cache.entries=1: the colder, the held one, goes

        assertThat(held.isOpen()).as("the region held over the close").isFalse();
        assertThatThrownBy(() -> held.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        held.close();
        assertThat(mapper.unmaps).as("every mapping is gone with the cache").hasValue(mapper.maps.get());
    }

    /**
     * A handle that contradicts an entry the count took out while a region was open on it (another
     * payload under its key) is mapped beside it, as one that contradicts a cached entry is: an open
     * that finds the entry in the index must not let another payload ride on its mapping.
     */
    @Test
    void aHandleThatContradictsAnEntryTakenOutWhileOpenIsMappedBesideIt() {
        IpcCache cache = new IpcCache(1L << 30, 1, IpcCacheTest.IDLE);
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle contradicting = new IpcHandle("inproc", 1, 2, 1, CHUNK, 0, CHUNK, new byte[] {9}); // export 1's key, another payload
        try (cache) {
            cache.open(handle(1), mapper).close();
            IpcCache.Lease held = cache.tryHit(handle(1).encode());
            weighAsHotterEntry(cache, mapper, handle(2)); // ipc.cache.entries=1: the held one goes, and stays mapped
            held.segment().set(ValueLayout.JAVA_LONG, 0, 42);

            try (IpcCache.Lease beside = cache.open(contradicting, mapper)) {
                assertThat(beside.segment().get(ValueLayout.JAVA_LONG, 0)).as("read through the contradicting handle").isZero();
                assertThat(mapper.maps).as("handle 1, handle 2, the contradicting one").hasValue(3);
            }
            held.close();
        }
    }

    /**
     * While the count takes out an entry a region is open on, the stats still count it in use: the
     * trim left it in neither the cache nor the entries evicted while open until it had taken it out.
     */
    @Test
    void anEntryInUseIsCountedInUseWhileTheCountTakesItOut() {
        IpcCache cache = new IpcCache(1L << 30, 1, IpcCacheTest.IDLE);
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (cache) {
            cache.open(handle(1), mapper).close();
            IpcCache.Lease held = cache.tryHit(handle(1).encode());
            List<IpcCacheStats> seen = new ArrayList<>();
            cache.whileTrimming = () -> seen.add(cache.stats());

            weighAsHotterEntry(cache, mapper, handle(2));

            assertThat(seen).singleElement().satisfies(stats -> {
                assertThat(stats.entriesInUse()).as("the held region's entry").isEqualTo(1);
                assertThat(stats.entries()).isEqualTo(2);
            });
            assertThat(held.isOpen()).isTrue();
            held.close();
            assertThat(mapper.unmaps).as("unmapped at its last region's close").hasValue(1);
        }
    }

    /**
     * An entry counted by a hit as its first release to 0 is under way, and released again at once,
     * counts once among the entries that weigh: the second release, seeing it still weigh 0, counted
     * it a second time, and every such race left the count one higher for the life of the cache, so
     * that ipc.cache.entries then evicted chunks it allows to stay (found by random pauses).
     */
    @Test
    void aHitAndReleaseDuringAFirstReleaseCountTheEntryOnceAgainstTheBound() throws Exception {
        IpcCache cache = new IpcCache(1L << 30, 2, IpcCacheTest.IDLE);
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (cache) {
            IpcCache.Lease first = cache.open(handle(1), mapper);
            List<Thread> hits = new ArrayList<>();
            java.util.concurrent.atomic.AtomicBoolean raced = new java.util.concurrent.atomic.AtomicBoolean();
            cache.whileUnpinning = () -> {
                if (!hits.isEmpty()) return; // the hit's own release
                Thread hit = Thread.ofPlatform().start(() -> cache.tryHit(handle(1).encode()).close());
                hits.add(hit);
                while (hit.isAlive() && !raced.get()) raced.set(waitsForTheLockIn(hit, "release")); // its release waits for this one
            };

            first.close();
            for (Thread hit : hits) hit.join();
            assertThat(raced).as("the hit's release came while the first one was under way").isTrue();
            cache.open(handle(2), mapper).close();

            assertThat(mapper.unmaps).as("two unused chunks, within ipc.cache.entries=2").hasValue(0);
            assertThat(cache.stats().entries()).isEqualTo(2);
        }
    }

    /**
     * An unused entry opened again through {@link IpcCache#open} (as a transport's RMA opens a peer's
     * region), and released, counts once against the bound: the open must take it out of the count of
     * entries that weigh as it pins it, or its release counts it a second time and the bound evicts a
     * chunk it allows to stay.
     */
    @Test
    void anUnusedEntryOpenedAgainAndReleasedCountsOnceAgainstTheBound() {
        IpcCache cache = new IpcCache(1L << 30, 2, IpcCacheTest.IDLE);
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        try (cache) {
            cache.open(handle(1), mapper).close();
            cache.open(handle(2), mapper).close();

            cache.open(handle(1), mapper).close();

            assertThat(mapper.maps).as("the second open of export 1 is a hit").hasValue(2);
            assertThat(mapper.unmaps).as("two unused chunks, within ipc.cache.entries=2").hasValue(0);
            assertThat(cache.stats().entries()).isEqualTo(2);
        }
    }

    /**
     * An unmap that fails as the count evicts leaves the bound holding, and is not thrown into the
     * release that made room. The trim unmapped inside its {@code computeIfPresent}: until 2026-12-07
     * a plugin's close that threw there (a mapping still acquired: "Session is acquired by 1
     * clients") aborted the removal after the entry had left the count, so the dead entry stayed in
     * Caffeine's map and its later eviction took it out of the count a second time (from then on one
     * more unused chunk stayed mapped than {@code ipc.cache.entries} allows), and the release that ran
     * the trim, region B's close, threw region A's failure. Now the failure is logged, as Caffeine's
     * own eviction for {@code ipc.cache.bytes} logs its listener's.
     */
    @Test
    void anUnmapThatFailsWhenTheCountEvictsLeavesTheBoundHolding() {
        Pool pool = open("1").pool("inproc");
        conduit.importRegion(pool.allocate(CHUNK).exportHandle()).close(); // A: unused, weighs
        ImportedRegion b = conduit.importRegion(pool.allocate(CHUNK).exportHandle());
        plugin.failingUnmaps.set(1);
        Throwable bClose = org.assertj.core.api.Assertions.catchThrowable(b::close); // B's drop to 0 trims A, whose unmap fails
        for (int i = 0; i < 4; i++) conduit.importRegion(pool.allocate(CHUNK).exportHandle()).close();

        IpcCacheStats stats = conduit.ipcCacheStats();
        assertThat(stats.entries()).as("unused chunks kept under ipc.cache.entries=1 (B's close threw: %s)", bClose).isEqualTo(1);
        assertThat(stats.mappedBytes()).isEqualTo(CHUNK);
        assertThat(bClose).as("B's close, which made room").isNull();
    }

    /**
     * The same for an unmap that throws a checked exception it does not declare (a plugin in
     * Kotlin, or with {@code @SneakyThrows}): until 2026-12-07 it passed the catch of the eviction's
     * unmap, bare, out of the release that made room, region B's close.
     */
    @Test
    void anUnmapThatThrowsACheckedExceptionUndeclaredWhenTheCountEvictsIsLoggedNotThrown() {
        Pool pool = open("1").pool("inproc");
        conduit.importRegion(pool.allocate(CHUNK).exportHandle()).close(); // A: unused, weighs
        ImportedRegion b = conduit.importRegion(pool.allocate(CHUNK).exportHandle());
        plugin.unmapError.set(new java.io.IOException("munmap: Input/output error"));

        Throwable bClose = org.assertj.core.api.Assertions.catchThrowable(b::close); // B's drop to 0 trims A, whose unmap throws

        assertThat(bClose).as("B's close, which made room").isNull();
        assertThat(plugin.unmaps).as("A's unmap, tried").hasValue(1);
        assertThat(conduit.ipcCacheStats().entries()).as("B, cached").isEqualTo(1);
    }

    /**
     * A region whose chunk the bound took out of the cache while it was open unmaps the chunk at its
     * close; a plugin's unmap that fails there is logged, as on any eviction, and the close returns:
     * the region's release is done, and the failure is the plugin's. Until 2026-12-07 the plugin's
     * bare exception came out of {@code ImportedRegion.close()} ("Session is acquired by 1
     * clients"), naming no plugin and reading as the application's misuse, where the same failure
     * under {@code ipc.cache.bytes=0} (the eviction at the release) was logged.
     */
    @Test
    void anUnmapThatFailsAtTheLastCloseOfARegionEvictedWhileOpenIsLoggedNotThrown() {
        Pool pool = open("1").pool("inproc");
        byte[] a = pool.allocate(CHUNK).exportHandle();
        conduit.importRegion(a).close(); // A: unused, weighs
        ImportedRegion held = conduit.importRegion(a); // a hit: counted again, still weighing
        byte[] b = pool.allocate(CHUNK).exportHandle();
        List<ImportedRegion> hotter = new ArrayList<>();
        for (int i = 0; i < 5; i++) hotter.add(conduit.importRegion(b));
        hotter.forEach(ImportedRegion::close); // B weighs, hotter than A: ipc.cache.entries=1 takes A out, held open
        plugin.failingUnmaps.set(1);

        Throwable[] heldClose = new Throwable[1];
        List<java.util.logging.LogRecord> warnings = dev.conduit.testing.LoggedWarnings.loggedWhile("dev.conduit",
                () -> heldClose[0] = org.assertj.core.api.Assertions.catchThrowable(held::close));

        assertThat(heldClose[0]).as("the close of the region evicted while open, whose unmap failed").isNull();
        assertThat(warnings).as("the failure, logged: the close that met it says nothing").singleElement()
                .satisfies(w -> assertThat(w.getMessage()).contains("IPC cache: inproc could not unmap export",
                        "released after eviction", "the plugin's mapping may stay until the process exits"));
        assertThat(plugin.unmaps).as("A's unmap, tried").hasValue(1);
        assertThat(held.isOpen()).isFalse();
        assertThat(conduit.ipcCacheStats().entries()).as("B, cached").isEqualTo(1);
    }

    /** Imports {@code handle} and uses it more often than one import and one hit before its first release to 0, where it starts to weigh. */
    private static void weighAsHotterEntry(IpcCache cache, ArenaChunkMapper mapper, IpcHandle handle) {
        IpcCache.Lease first = cache.open(handle, mapper);
        for (int i = 0; i < 4; i++) cache.tryHit(handle.encode()).close();
        first.close();
    }

    private static boolean waitsForTheLockIn(Thread thread, String method) {
        return thread.getState() == Thread.State.BLOCKED && java.util.Arrays.stream(thread.getStackTrace())
                .anyMatch(frame -> frame.getClassName().equals(IpcCache.class.getName()) && frame.getMethodName().equals(method));
    }

    private static IpcHandle handle(int exportId) {
        return new IpcHandle("inproc", 1, 2, exportId, CHUNK, 0, CHUNK, new byte[] {(byte) exportId});
    }

    @Test
    void theStatsReportBothBoundsAndTheIdleTime() {
        open("100");
        IpcCacheStats stats = conduit.ipcCacheStats();
        assertThat(stats.maximumEntries()).isEqualTo(100);
        assertThat(stats.maximumBytes()).isEqualTo(1L << 30);
        assertThat(stats.idle()).isEqualTo(Duration.ofMinutes(1));
        conduit.close();
        open("4096").close();
        conduit = null;
        try (Conduit defaults = Conduit.builder().discoverPlugins(false).environment(Map.of())
                .systemProperties(new java.util.Properties()).build()) {
            assertThat(defaults.ipcCacheStats().maximumEntries()).isEqualTo(4096);
        }
    }

    @Test
    void aBadCountIsRefusedNamingTheKey() {
        for (String bad : List.of("-1", "many", "4k", "2147483648")) {
            assertThatThrownBy(() -> open(bad)).as(bad).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("ipc.cache.entries")
                    .hasMessageContaining("a whole number from 0 to 2147483647");
        }
        conduit = null;
    }
}
