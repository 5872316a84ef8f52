package dev.conduit.internal.memory;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.internal.ipc.IpcHandle;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntUnaryOperator;

import static dev.conduit.internal.ThreadAllocation.allocatedBytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

class RuntimePoolTest {

    private static final long CHUNK = 256 << 10;
    private final InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
    private Conduit conduit;
    private Pool pool;

    private Pool pool() {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", Long.toString(CHUNK)).build();
        pool = conduit.pool("inproc");
        return pool;
    }

    @AfterEach
    void close() {
        if (conduit != null) conduit.close();
    }

    /**
     * {@code pool.max.size} bounds the bytes of chunks a pool holds: an allocation that needs a
     * chunk past it fails naming the key, what the pool holds and the remedy, and takes nothing; a
     * region of a chunk of its own gives its bytes back at its close. There was no bound but the
     * provider's own (helper h5: a UMF user looked for one).
     */
    @Test
    void poolMaxSizeBoundsTheChunksAPoolHoldsAndAClosedOwnChunkGivesItsBytesBack() {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", Long.toString(CHUNK)).set("pool.max.size", Long.toString(3 * CHUNK)).build();
        Pool bounded = conduit.pool("inproc");
        bounded.allocate(64); // a shared chunk: CHUNK held
        Region own = bounded.allocate(2 * CHUNK); // 3 * CHUNK held
        assertThatThrownBy(() -> bounded.allocate(CHUNK)).isInstanceOf(ConduitException.class)
                .hasMessage("pool of plugin 'inproc' holds " + 3 * CHUNK + " bytes of chunks; a chunk of " + CHUNK + " bytes more (a "
                        + "region of its own) would take it past pool.max.size (" + 3 * CHUNK + " bytes). Close regions you no longer "
                        + "need (a region of a chunk of its own gives it back at once; a region of a shared chunk frees its slot for "
                        + "the next of its size), or raise pool.max.size (CONDUIT_POOL_MAX_SIZE)");
        assertThatThrownBy(() -> bounded.allocate(CHUNK / 4)).as("a chunk of another size class").isInstanceOf(ConduitException.class)
                .hasMessageContaining("(pool.chunk.size, shared by allocations up to a quarter of it)");
        for (int i = 0; i < 100; i++) bounded.allocate(64); // the shared chunk it holds serves these
        own.close();
        assertThat(bounded.allocate(2 * CHUNK).size()).as("the closed region's chunk given back").isEqualTo(2 * CHUNK);
    }

    /**
     * Two threads close a region with a chunk of its own while its memory is in use, the provider
     * refusing each free. The close that came second, while the first was in the provider's free,
     * returned as if the chunk were freed: the first had marked the region closed before the free
     * and marked it open again at the refusal. It now waits for the first and tries the free
     * itself, refused too, and the region is open, the chunk allocated, until a close frees it.
     */
    @Test
    void aCloseOverlappingOneTheProviderRefusesTriesTheFreeItselfAndNeverReturnsAsIfFreed() throws Exception {
        pool();
        Region own = pool.allocate(2 * CHUNK);
        CountDownLatch firstFreeing = new CountDownLatch(1);
        CountDownLatch letFirstFreeEnd = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        plugin.whileFreeing = () -> {
            if (!first.getAndSet(false)) return;
            firstFreeing.countDown();
            awaitUninterruptibly(letFirstFreeEnd);
        };
        plugin.failingFrees.set(2);
        AtomicReference<Throwable> firstClose = new AtomicReference<>();
        AtomicReference<Throwable> secondClose = new AtomicReference<>();

        Thread firstCloser = Thread.ofPlatform().start(() -> firstClose.set(catchThrowable(own::close)));
        firstFreeing.await();
        Thread secondCloser = Thread.ofPlatform().start(() -> secondClose.set(catchThrowable(own::close)));
        // Either it returned already, or it waits for the first: the lock the provider's free is called under.
        while (secondCloser.isAlive() && secondCloser.getState() != Thread.State.WAITING) Thread.onSpinWait();
        letFirstFreeEnd.countDown();
        firstCloser.join();
        secondCloser.join();

        assertThat(firstClose.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("free failed on purpose");
        assertThat(secondClose.get()).as("the overlapping close, the chunk still allocated").isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("free failed on purpose");
        assertThat(own.isOpen()).isTrue();
        assertThat(plugin.chunksFreed).hasValue(0);

        own.close();
        assertThat(own.isOpen()).isFalse();
        assertThat(plugin.chunksFreed).hasValue(1);
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * A provider may refuse to free a chunk still in use (memfd's free, while another thread is in a
     * native call on its memory: "the chunk is then still allocated ... and can be freed again
     * later"), as it may refuse its close, which the pool's next close tries again. The close of a
     * region with a chunk of its own then throws, and a later close must give the chunk back, to the
     * provider and to pool.max.size's count, not leave it allocated until the pool closes.
     */
    @Test
    void aRegionWhoseOwnChunkTheProviderRefusedToFreeGivesItBackAtItsNextClose() {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", Long.toString(CHUNK)).set("pool.max.size", Long.toString(2 * CHUNK)).build();
        Pool bounded = conduit.pool("inproc");
        Region own = bounded.allocate(2 * CHUNK);
        plugin.failingFrees.set(1);
        assertThatThrownBy(own::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("free failed on purpose");
        assertThat(own.isOpen()).as("still allocated, as the provider keeps it").isTrue();

        own.close();
        assertThat(plugin.chunksFreed).as("the chunk given back to the provider").hasValue(1);
        assertThat(own.isOpen()).isFalse();
        assertThat(bounded.allocate(2 * CHUNK).size()).as("its bytes given back to pool.max.size's count").isEqualTo(2 * CHUNK);
    }

    /**
     * A free the provider refuses for a busy chunk revokes the chunk's export (memfd's and devdax's
     * do), and the region, open again, exports it anew: the pool used to keep the export it made
     * before and hand it out again, a handle whose payload no importer could map any more ("export
     * ... is gone: its producer freed the chunk") while the region lived on.
     */
    @Test
    void aRegionWhoseOwnChunkTheProviderRefusedToFreeExportsItAnewAndTheNewHandleImports() {
        pool();
        Region own = pool.allocate(2 * CHUNK);
        byte[] revoked = own.exportHandle();
        plugin.failingFrees.set(1);
        assertThatThrownBy(own::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("free failed on purpose");

        byte[] handle = own.exportHandle();

        assertThat(handle).as("the handle exported after the refused free").isNotEqualTo(revoked);
        assertThatThrownBy(() -> conduit.importRegion(revoked)).as("the revoked export").hasMessageContaining("is gone");
        try (var imported = conduit.importRegion(handle)) {
            assertThat(imported.size()).isEqualTo(2 * CHUNK);
        }
    }

    /**
     * A provider may export no chunk whose free it refused (devdax: its table entry, which importers
     * check, is cleared). The region's next export then says so, naming the refused free and what to
     * do; it used to say that the plugin failed in its export(), "most likely the plugin's fault".
     */
    @Test
    void aRegionWhoseChunkTheProviderExportsNoMoreAfterARefusedFreeSaysSoNotThatThePluginFailed() {
        pool();
        plugin.refusesExportAfterRefusedFree = true;
        Region own = pool.allocate(2 * CHUNK);
        own.exportHandle();
        plugin.failingFrees.set(1);
        assertThatThrownBy(own::close).isInstanceOf(IllegalStateException.class);

        assertThatThrownBy(own::exportHandle).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("cannot export this region: plugin 'inproc' refused to free its chunk at the region's close "
                        + "(free failed on purpose: chunk still in use)")
                .hasMessageContaining("Close the region again once no thread is in a native call on its memory")
                .hasMessageNotContaining("plugin's fault");
        own.close();
    }

    /**
     * A free that fails otherwise leaves the chunk no more the provider's (verbs, whose
     * deregistration failed, keeps the memory for good): the region is closed, and its next close
     * does nothing, where a retry would ask the provider to free a chunk it no longer has.
     */
    @Test
    void aRegionWhoseOwnChunkTheProviderGaveUpWhileFreeingItIsClosedAndNotFreedAgain() {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", Long.toString(CHUNK)).build();
        Region own = conduit.pool("inproc").allocate(2 * CHUNK);
        plugin.abandoningFrees.set(1);
        assertThatThrownBy(own::close).isInstanceOf(ConduitException.class).hasMessageContaining("kept for good");
        assertThat(own.isOpen()).isFalse();

        own.close();
        assertThat(plugin.chunksFreed).as("never freed: the provider gave it up").hasValue(0);
    }

    @Test
    void regionsHaveTheAskedSizeAndDoNotOverlap() {
        pool();
        List<Region> regions = new ArrayList<>();
        long[] sizes = {1, 7, 64, 65, 100, 4096, 5000, 65536, CHUNK / 4, CHUNK / 4 + 1, CHUNK * 3};
        for (int round = 0; round < 20; round++) {
            for (long size : sizes) regions.add(pool.allocate(size));
        }
        for (int i = 0; i < regions.size(); i++) {
            Region r = regions.get(i);
            assertThat(r.size()).isEqualTo(sizes[i % sizes.length]);
            r.segment().fill((byte) i);
        }
        for (int i = 0; i < regions.size(); i++) {
            Region r = regions.get(i);
            assertThat(r.segment().get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) i);
            assertThat(r.segment().get(ValueLayout.JAVA_BYTE, r.size() - 1)).isEqualTo((byte) i);
        }
    }

    @Test
    void alignmentUpToThePageSizeIsHonoured() {
        pool();
        for (long alignment = 1; alignment <= pool.pageSize(); alignment <<= 1) {
            for (long size : new long[]{1, 100, 3000, 70_000, CHUNK}) {
                Region r = pool.allocate(size, alignment);
                assertThat(r.segment().address() % alignment).as("size %d alignment %d", size, alignment).isZero();
            }
        }
        assertThatThrownBy(() -> pool.allocate(64, pool.pageSize() * 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("page size");
        assertThatThrownBy(() -> pool.allocate(64, 3)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> pool.allocate(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void freedMemoryIsReused() {
        pool();
        Region first = pool.allocate(100);
        long address = first.segment().address();
        assertThat(first.isOpen()).isTrue();
        first.close();
        assertThat(first.isOpen()).isFalse();
        first.close();
        assertThat(pool.allocate(100).segment().address()).isEqualTo(address);
        assertThat(plugin.chunksAllocated).hasValue(1);
    }

    /**
     * Thousands of freed slots, of four chunks, taken back twice: each comes back once, the last
     * freed first, without a new chunk.
     */
    @Test
    void everyFreedSlotIsTakenBackOnceLastFreedFirst() {
        pool();
        int count = (int) (CHUNK / 64) * 4; // four chunks of 64-byte slots: 16,384 slots
        List<Region> regions = new ArrayList<>();
        for (int i = 0; i < count; i++) regions.add(pool.allocate(64));
        int chunks = plugin.chunksAllocated.get();
        for (int round = 0; round < 2; round++) {
            List<Long> freed = new ArrayList<>();
            for (Region r : regions) {
                freed.add(r.segment().address());
                r.close();
            }
            regions.clear();
            for (int i = 0; i < count; i++) regions.add(pool.allocate(64));
            List<Long> taken = regions.stream().map(r -> r.segment().address()).toList();
            assertThat(taken).as("round %d", round).isEqualTo(freed.reversed());
        }
        assertThat(plugin.chunksAllocated).hasValue(chunks);
    }

    @Test
    void aLargeRegionHasAChunkOfItsOwnThatFreeingReturns() {
        pool();
        Region big = pool.allocate(CHUNK * 2 + 1);
        assertThat(plugin.chunksAllocated).hasValue(1);
        big.close();
        assertThat(plugin.chunksFreed).hasValue(1);
    }

    /**
     * Region: a freed region exports no handle (IllegalStateException), and one with a chunk of its
     * own is unmapped as it closes, so that an access then throws IllegalStateException instead of
     * reaching unmapped memory; a size-class region stays mapped until the pool closes.
     */
    @Test
    void aFreedRegionExportsNoHandleAndTheMemoryOfALargeOneIsGone() {
        pool();
        Region small = pool.allocate(128);
        Region big = pool.allocate(CHUNK * 2);
        small.close();
        big.close();
        for (Region r : List.of(small, big)) {
            assertThat(r.isOpen()).isFalse();
            assertThatThrownBy(r::exportHandle).isInstanceOf(IllegalStateException.class)
                    .hasMessage("region is closed: export a region before freeing it");
        }
        assertThatThrownBy(() -> big.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        small.segment().get(ValueLayout.JAVA_BYTE, 0);
    }

    /**
     * A region with a chunk of its own closed by another thread while its first export is under
     * way, after the export's look at the region: the export says the region is closed, as one
     * made after the close does. The provider was asked to export the chunk it had just freed,
     * which memfd refuses ("not a live chunk"), and the pool called that the plugin's fault.
     */
    @Test
    void anExportThatARegionsCloseOvertakesSaysTheRegionIsClosedNotThatThePluginFailed() {
        pool();
        PoolRegion own = (PoolRegion) pool.allocate(CHUNK * 2);

        assertThatThrownBy(() -> own.exportHandle(own::close)).isInstanceOf(IllegalStateException.class)
                .hasMessage("region is closed: export a region before freeing it");
        assertThat(plugin.chunksFreed).as("the close freed the chunk").hasValue(1);
    }

    /**
     * The same once the region was exported before, its chunk's export made: the close frees the
     * chunk (or a size class's slot, handed to the next allocation of its size) whatever export the
     * pool still holds for it. Until 2026-12-07 such an export returned that handle, naming memory
     * the close had freed, where the first export threw.
     */
    @Test
    void anExportThatARegionsCloseOvertakesSaysTheRegionIsClosedAlsoOnceTheChunkWasExported() {
        pool();
        PoolRegion own = (PoolRegion) pool.allocate(CHUNK * 2);
        own.exportHandle();
        assertThatThrownBy(() -> own.exportHandle(own::close)).isInstanceOf(IllegalStateException.class)
                .hasMessage("region is closed: export a region before freeing it");
        assertThat(plugin.chunksFreed).as("the close freed the chunk").hasValue(1);

        PoolRegion slot = (PoolRegion) pool.allocate(64);
        slot.exportHandle();
        assertThatThrownBy(() -> slot.exportHandle(slot::close)).isInstanceOf(IllegalStateException.class)
                .hasMessage("region is closed: export a region before freeing it");
        PoolRegion first = (PoolRegion) pool.allocate(64);
        assertThatThrownBy(() -> first.exportHandle(first::close)).as("a slot exported for the first time")
                .isInstanceOf(IllegalStateException.class).hasMessage("region is closed: export a region before freeing it");
    }

    @Test
    void aChunkIsExportedOnceForAllItsRegions() {
        pool();
        Region a = pool.allocate(64);
        Region b = pool.allocate(64);
        IpcHandle ha = IpcHandle.decode(a.exportHandle());
        IpcHandle hb = IpcHandle.decode(b.exportHandle());
        assertThat(hb.exportId()).isEqualTo(ha.exportId());
        assertThat(hb.originHigh()).isEqualTo(ha.originHigh());
        assertThat(hb.regionOffset()).isNotEqualTo(ha.regionOffset());
        assertThat(ha.regionLength()).isEqualTo(64);
        assertThat(ha.chunkLength()).isEqualTo(CHUNK);
        Region own = pool.allocate(CHUNK);
        assertThat(IpcHandle.decode(own.exportHandle()).exportId()).isGreaterThan(ha.exportId());
    }

    /** A small allocation that fails for want of room for a whole shared chunk: the size that failed is a setting's, so say which. */
    @Test
    void aSharedChunkTheProviderRefusesNamesPoolChunkSize() {
        pool();
        plugin.largestChunk = CHUNK - 1;
        assertThatThrownBy(() -> pool.allocate(64)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("could not take a chunk of " + CHUNK + " bytes (pool.chunk.size;")
                .hasMessageContaining("no room for a chunk of " + CHUNK + " bytes")
                .hasMessageContaining("Lower pool.chunk.size");
        // A chunk of its own is the size asked for, not the setting's.
        plugin.largestChunk = CHUNK * 2;
        assertThatThrownBy(() -> pool.allocate(CHUNK * 3)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("no room for a chunk of " + CHUNK * 3 + " bytes")
                .hasMessageNotContaining("pool.chunk.size");
        // The runtime's own refusal of what the provider made is no matter of the setting.
        plugin.largestChunk = Long.MAX_VALUE;
        plugin.shortChunks = true;
        assertThatThrownBy(() -> pool.allocate(64)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("returned a chunk of " + (CHUNK - InProcessMemoryPlugin.PAGE) + " bytes from allocate(" + CHUNK + "), which gives a chunk "
                        + "exactly as long as asked: that is the plugin's fault")
                .hasMessageNotContaining("pool.chunk.size");
    }

    /**
     * A chunk of the wrong size is given back to the provider before the pool says so; when that
     * free failed, its exception replaced the one naming the plugin's fault.
     */
    @Test
    void aChunkOfTheWrongSizeIsNamedAlsoWhenGivingItBackFails() {
        pool();
        plugin.shortChunks = true;
        plugin.failingFrees.set(1);
        assertThatThrownBy(() -> pool.allocate(64)).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' returned a chunk of " + (CHUNK - InProcessMemoryPlugin.PAGE) + " bytes from allocate(" + CHUNK + ")")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().extracting(Throwable::getMessage).asString()
                        .contains("free failed on purpose"));
    }

    /**
     * A region whose pool closed (by its close, or its Conduit's) exports nothing, and says that the pool's close freed
     * it: the message used to be allocate's, "allocate from another pool (Conduit.pool)", which is no remedy for an
     * export, and none at all once the Conduit is closed.
     */
    @Test
    void aRegionOfAClosedPoolExportsNothingSayingThePoolsCloseFreedIt() {
        pool();
        Region small = pool.allocate(128);
        Region big = pool.allocate(CHUNK * 2);
        pool.close();
        for (Region r : List.of(small, big)) {
            assertThatThrownBy(r::exportHandle).isInstanceOf(IllegalStateException.class)
                    .hasMessage("region's pool of plugin 'inproc' is closed, which freed the region: export a region while its"
                            + " pool, and its Conduit, are open, and keep them open while it is shared");
        }
    }

    @Test
    void aPoolWhoseProviderFailedToCloseTriesAgainAtTheNextCloseAndAllocatesNothingMeanwhile() {
        pool();
        pool.allocate(128);
        plugin.failingProviderCloses.set(1);

        assertThatThrownBy(pool::close).isInstanceOf(ConduitException.class).hasMessageContaining("on purpose");
        assertThat(plugin.providersClosed).hasValue(0);
        assertThatThrownBy(() -> pool.allocate(8)).isInstanceOf(IllegalStateException.class)
                .hasMessage("pool of plugin 'inproc' is closed (by its own close or its Conduit's): allocate from another pool of an open Conduit (Conduit.pool)");

        pool.close();
        assertThat(plugin.providersClosed).hasValue(1);
        assertThat(plugin.chunksFreed.get()).isEqualTo(plugin.chunksAllocated.get());
        pool.close();
        assertThat(plugin.providersClosed).as("closed once it succeeded").hasValue(1);
    }

    /**
     * A pool that cannot be made over its provider (here: a page size that is no power of two)
     * closes the provider again; when that close failed too, its exception replaced the one that
     * says why there is no pool, and the user read only "provider close failed".
     */
    @Test
    void aPoolThatCannotBeMadeSaysWhyAlsoWhenClosingItsProviderFails() {
        plugin.pageSize = 3000;
        plugin.failingProviderCloses.set(1);
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin).build();
        assertThatThrownBy(() -> conduit.pool("inproc")).isInstanceOf(ConduitException.class)
                .hasMessage("plugin 'inproc' reports page size 3000, not a power of two")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().extracting(Throwable::getMessage).asString()
                        .contains("provider close failed on purpose"));
    }

    /**
     * A pool made while its Conduit closes is refused by the Conduit and closed; when its
     * provider's close failed, that exception replaced the refusal's IllegalStateException.
     */
    @Test
    void aPoolRefusedByItsClosingConduitSaysSoAlsoWhenClosingItsProviderFails() {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin).build();
        plugin.whileOpeningProvider = () -> {
            plugin.failingProviderCloses.set(1);
            conduit.close();
        };
        assertThatThrownBy(() -> conduit.pool("inproc")).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Conduit is closed")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().extracting(Throwable::getMessage).asString()
                        .contains("provider close failed on purpose"));
    }

    /** The pool used to leave its Conduit at its failed close, so the Conduit's close never tried the provider again. */
    @Test
    void aPoolWhoseProviderFailedToCloseIsClosedByItsConduitsClose() {
        pool();
        pool.allocate(128);
        plugin.failingProviderCloses.set(1);
        assertThatThrownBy(pool::close).isInstanceOf(ConduitException.class);

        conduit.close();

        assertThat(plugin.providersClosed).hasValue(1);
        assertThat(plugin.chunksFreed.get()).isEqualTo(plugin.chunksAllocated.get());
    }

    @Test
    void closingThePoolFreesEveryChunkAndInvalidatesItsRegions() {
        pool();
        Region r = pool.allocate(128);
        pool.allocate(CHUNK * 2);
        pool.close();
        assertThat(plugin.chunksFreed.get()).isEqualTo(plugin.chunksAllocated.get());
        assertThat(plugin.providersClosed).hasValue(1);
        assertThatThrownBy(() -> r.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> pool.allocate(8)).isInstanceOf(IllegalStateException.class);
        r.close();
    }

    /**
     * A region of a closed pool is freed with it: it used to say it was open, so a Chronicle view
     * over it passed its open check, and to export a handle whenever its chunk had been exported
     * before, which no importer could open (the chunk was gone).
     */
    @Test
    void aRegionOfAClosedPoolIsNotOpenAndExportsNothing() {
        pool();
        Region small = pool.allocate(128);
        Region big = pool.allocate(CHUNK * 2);
        small.exportHandle();
        big.exportHandle();
        pool.close();

        assertThat(small.isOpen()).isFalse();
        assertThat(big.isOpen()).isFalse();
        assertThatThrownBy(small::exportHandle).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("pool of plugin 'inproc' is closed");
        assertThatThrownBy(big::exportHandle).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("pool of plugin 'inproc' is closed");
        small.close();
        big.close();
    }

    /**
     * A provider that exports nothing (a plugin with MEMORY and no IPC, which keeps the SPI's
     * default export) is named with the capability, as NotSupportedException promises of the
     * runtime: the region's exportHandle threw the provider's bare "this memory provider cannot
     * export chunks", which says neither which plugin nor what to use instead.
     */
    @Test
    void aRegionOfAPluginThatExportsNothingIsRefusedNamingThePluginAndTheCapability() {
        try (RuntimePool local = new RuntimePool("local-only", arenaProvider(null), CHUNK, p -> { })) {
            Region small = local.allocate(64);
            Region big = local.allocate(CHUNK * 2);
            for (Region r : List.of(small, big)) {
                assertThatThrownBy(r::exportHandle).isInstanceOf(NotSupportedException.class)
                        .hasMessageContaining("plugin 'local-only' exports no IPC handles (capability IPC)")
                        .hasMessageContaining("this memory provider cannot export chunks")
                        .hasMessageContaining("a plugin that declares IPC");
            }
            assertThat(small.segment().byteSize()).as("the region itself is usable").isEqualTo(64);
        }
    }

    /**
     * A plugin that declares IPC and whose provider refuses an export all the same breaks its word:
     * the refusal says so and to report it, rather than to allocate from "a plugin that declares
     * IPC", which this one does (what it said before).
     */
    @Test
    void aRefusedExportOfAPluginThatDeclaresIpcIsCalledThePluginsFault() {
        try (RuntimePool local = new RuntimePool("broken", arenaProvider(null), true, null, CHUNK, 0, p -> { })) {
            assertThatThrownBy(local.allocate(64)::exportHandle).isInstanceOf(NotSupportedException.class)
                    .hasMessageContaining("plugin 'broken' declares IPC, but its memory provider refused to export a chunk: ")
                    .hasMessageContaining("this memory provider cannot export chunks")
                    .hasMessageContaining("report it to the plugin's authors")
                    .hasMessageNotContaining("a plugin that declares IPC");
        }
    }

    /** MemoryProvider.MAX_EXPORT_LENGTH: an export payload longer than an IPC handle carries is the plugin's fault, named so. */
    @Test
    void anExportLongerThanAHandleCarriesIsRefusedNamingThePluginAndTheLimit() {
        byte[] tooLong = new byte[MemoryProvider.MAX_EXPORT_LENGTH + 1];
        try (RuntimePool local = new RuntimePool("verbose", arenaProvider(tooLong), CHUNK, p -> { })) {
            Region r = local.allocate(64);
            assertThatThrownBy(r::exportHandle).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("plugin 'verbose' made an export payload of 3073 bytes; at most 3072 allowed "
                            + "(MemoryProvider.MAX_EXPORT_LENGTH): that is the plugin's fault");
        }
        byte[] longest = new byte[MemoryProvider.MAX_EXPORT_LENGTH];
        try (RuntimePool local = new RuntimePool("verbose", arenaProvider(longest), CHUNK, p -> { })) {
            assertThat(local.allocate(64).exportHandle().length).as("the longest payload fits in a handle of at most 4 KiB")
                    .isLessThanOrEqualTo(4096);
        }
    }

    /**
     * An empty export payload names nothing for an importer to map: the pool refuses it as the
     * plugin's fault (the TCK requires 1 to MAX_EXPORT_LENGTH bytes). The handle was made before,
     * and every importer failed on it in turn, saying nothing of the plugin.
     */
    @Test
    void anEmptyExportIsCalledThePluginsFault() {
        try (RuntimePool local = new RuntimePool("terse", arenaProvider(new byte[0]), CHUNK, p -> { })) {
            assertThatThrownBy(local.allocate(64)::exportHandle).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("plugin 'terse' made an empty export payload, which names nothing for an importer to "
                            + "map; an export payload has 1 to 3072 bytes (MemoryProvider.MAX_EXPORT_LENGTH): that is the "
                            + "plugin's fault")
                    .hasMessageContaining("report it to the plugin's authors");
        }
    }

    /**
     * A provider whose allocate or export throws an unchecked exception that is no
     * ConduitException (the SPI's way to fail): the pool names the plugin, the operation and whose
     * fault it most likely is, with what it threw as the cause, where the bare exception reached
     * the application before; a ConduitException of the provider's passes as it is.
     */
    @Test
    void aProvidersBareExceptionIsNamedAsThePluginsFaultAndItsConduitExceptionPassesAsItIs() {
        Arena arena = Arena.ofShared();
        RuntimeException[] allocateThrows = {new IllegalStateException("free list corrupt")};
        RuntimeException[] exportThrows = {new NullPointerException("token")};
        MemoryProvider throwing = new MemoryProvider() {
            @Override public long pageSize() { return 4096; }
            @Override public Chunk allocate(long size) {
                if (allocateThrows[0] != null) throw allocateThrows[0];
                MemorySegment m = arena.allocate(size, 4096);
                return () -> m;
            }
            @Override public byte[] export(Chunk chunk) { throw exportThrows[0]; }
            @Override public void free(Chunk chunk) { }
            @Override public void close() { arena.close(); }
        };
        try (RuntimePool local = new RuntimePool("flaky", throwing, CHUNK, p -> { })) {
            assertThatThrownBy(() -> local.allocate(64)).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("plugin 'flaky' failed in its memory provider's allocate(" + CHUNK + "): "
                            + "java.lang.IllegalStateException: free list corrupt. That is no ConduitException")
                    .hasMessageContaining("report it to the plugin's authors").hasCause(allocateThrows[0]);
            allocateThrows[0] = null;
            Region region = local.allocate(64);
            assertThatThrownBy(region::exportHandle).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("plugin 'flaky' failed in its memory provider's export(): java.lang.NullPointerException: token")
                    .hasCause(exportThrows[0]);
            ConduitException gone = new ConduitException("socket gone");
            exportThrows[0] = gone;
            assertThatThrownBy(region::exportHandle).isSameAs(gone);
        }
    }

    /**
     * A provider in Kotlin, or with {@code @SneakyThrows}, may throw a checked exception its
     * methods do not declare: each is named as the plugin's fault, as an unchecked one is. Until
     * 2026-12-07 each passed bare, past the pool's catches of {@code RuntimeException}: from
     * {@code pageSize()} past the clean-up of {@code Conduit.pool}, too, which left the provider
     * open for good; a free's kept the chunk among the pool's own chunks.
     */
    @Test
    void aProviderThatThrowsACheckedExceptionUndeclaredIsNamedAsThePluginsFaultAndClosedWhenNoPoolIsMade() {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", Long.toString(CHUNK)).build();
        plugin.providerThrows.put("pageSize", new IOException("pageSize: Input/output error"));
        assertThatThrownBy(() -> conduit.pool("inproc")).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its memory provider's pageSize(): java.io.IOException: "
                        + "pageSize: Input/output error. That is no ConduitException").hasCauseInstanceOf(IOException.class);
        assertThat(plugin.providersClosed).as("the provider of the pool never made is closed").hasValue(1);

        Pool local = conduit.pool("inproc");
        for (String operation : List.of("allocate", "export", "free", "close")) {
            plugin.providerThrows.put(operation, new IOException(operation + ": Input/output error"));
        }
        assertThatThrownBy(() -> local.allocate(64)).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its memory provider's allocate(" + CHUNK + "): java.io.IOException")
                .hasCauseInstanceOf(IOException.class);
        Region shared = local.allocate(64);
        assertThatThrownBy(shared::exportHandle).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its memory provider's export(): java.io.IOException")
                .hasCauseInstanceOf(IOException.class);
        Region own = local.allocate(2 * CHUNK);
        assertThatThrownBy(own::close).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its memory provider's free(): java.io.IOException")
                .hasCauseInstanceOf(IOException.class);
        assertThat(own.isOpen()).as("a failed free is not tried again").isFalse();

        assertThatThrownBy(local::close).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its memory provider's close(): java.io.IOException")
                .hasCauseInstanceOf(IOException.class);
        local.close();
        assertThat(plugin.providersClosed).as("the pool's next close closed it").hasValue(2);
    }

    /**
     * A provider's free or close that throws an unchecked exception of its own (a
     * {@code NullPointerException} of its chunk table) is named as the plugin's fault, as its
     * allocate's and export's are; a {@code ConduitException} passes as it is, a refusal while in
     * use ({@code IllegalStateException}) keeps its meaning, and an {@code Error} stays itself.
     * Until 2026-12-07 the bare exception came out of {@code Region.close} and {@code Pool.close},
     * naming no plugin.
     */
    @Test
    void aProvidersUncheckedExceptionFromFreeOrCloseIsNamedAsThePluginsFault() {
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", Long.toString(CHUNK)).build();
        Pool local = conduit.pool("inproc");
        NullPointerException table = new NullPointerException("chunk table");
        plugin.providerThrows.put("free", table);
        Region own = local.allocate(2 * CHUNK);
        assertThatThrownBy(own::close).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its memory provider's free(): java.lang.NullPointerException: chunk table")
                .hasCause(table);
        assertThat(own.isOpen()).as("a failed free is not tried again").isFalse();

        ConduitException gone = new ConduitException("munmap: EINVAL");
        plugin.providerThrows.put("free", gone);
        Region another = local.allocate(2 * CHUNK);
        assertThatThrownBy(another::close).isSameAs(gone);

        OutOfMemoryError outOfMemory = new OutOfMemoryError("Java heap space");
        plugin.providerThrows.put("free", outOfMemory);
        Region third = local.allocate(2 * CHUNK);
        assertThatThrownBy(third::close).isSameAs(outOfMemory);

        IllegalArgumentException argument = new IllegalArgumentException("arena");
        plugin.providerThrows.put("close", argument);
        assertThatThrownBy(local::close).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inproc' failed in its memory provider's close(): java.lang.IllegalArgumentException: arena")
                .hasCause(argument);
        local.close();
        assertThat(plugin.providersClosed).as("the pool's next close closed it").hasValue(1);
    }

    /** An export that returns null, which MemoryProvider.export never does, is named as the plugin's fault, not as a length. */
    @Test
    void anExportThatReturnsNullIsCalledThePluginsFault() {
        Arena arena = Arena.ofShared();
        MemoryProvider returnsNull = new MemoryProvider() {
            @Override public long pageSize() { return 4096; }
            @Override public Chunk allocate(long size) { MemorySegment m = arena.allocate(size, 4096); return () -> m; }
            @Override public byte[] export(Chunk chunk) { return null; }
            @Override public void free(Chunk chunk) { }
            @Override public void close() { arena.close(); }
        };
        try (RuntimePool local = new RuntimePool("careless", returnsNull, CHUNK, p -> { })) {
            assertThatThrownBy(local.allocate(64)::exportHandle).isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("plugin 'careless' returned null from its memory provider's export(), which returns the "
                            + "chunk's payload or throws: that is the plugin's fault")
                    .hasMessageContaining("report it to the plugin's authors");
        }
    }

    /**
     * Pool.allocate(size, alignment) promises any alignment up to pageSize(), which holds only while
     * the provider's chunks are page-aligned, as Chunk.segment() says they are. A plugin that takes
     * its chunks from an Arena without asking for the page alignment ({@code arena.allocate(size)},
     * 16-byte aligned) breaks that word as surely as one that returns a chunk of the wrong size; the
     * pool names the wrong size as the plugin's fault, and must not hand out a region misaligned by
     * the plugin's slip with no word either. Until 2026-12-07 it handed out {@code page + 16}.
     */
    @Test
    void aChunkThatIsNotPageAlignedIsCalledThePluginsFaultNotHandedOutAsAMisalignedRegion() {
        Arena arena = Arena.ofShared();
        List<Chunk> freed = new ArrayList<>();
        MemoryProvider crooked = new MemoryProvider() {
            @Override public long pageSize() { return 4096; }
            @Override public Chunk allocate(long size) {
                MemorySegment m = arena.allocate(size + 4096, 4096).asSlice(16, size);
                return () -> m;
            }
            @Override public void free(Chunk chunk) { freed.add(chunk); }
            @Override public void close() { arena.close(); }
        };
        try (RuntimePool local = new RuntimePool("crooked", crooked, CHUNK, p -> { })) {
            Throwable thrown = catchThrowable(() -> local.allocate(64, 4096));

            assertThat(thrown).isInstanceOf(ConduitException.class).hasMessageContaining("plugin 'crooked'")
                    .hasMessageContaining("the plugin's fault").hasMessageContaining("not a multiple of its page size (4096 bytes)");
            assertThat(freed).as("chunks given back to the plugin").hasSize(1);
            assertThat(thrown).hasMessageContaining("0x" + Long.toHexString(freed.getFirst().segment().address()));
        }
    }

    /** A provider of arena memory whose export returns {@code export}, or keeps the SPI's default (none) when it is null. */
    private static MemoryProvider arenaProvider(byte[] export) {
        Arena arena = Arena.ofShared();
        if (export == null) {
            return new MemoryProvider() {
                @Override public long pageSize() { return 4096; }
                @Override public Chunk allocate(long size) { MemorySegment m = arena.allocate(size, 4096); return () -> m; }
                @Override public void free(Chunk chunk) { }
                @Override public void close() { arena.close(); }
            };
        }
        return new MemoryProvider() {
            @Override public long pageSize() { return 4096; }
            @Override public Chunk allocate(long size) { MemorySegment m = arena.allocate(size, 4096); return () -> m; }
            @Override public byte[] export(Chunk chunk) { return export.clone(); }
            @Override public void free(Chunk chunk) { }
            @Override public void close() { arena.close(); }
        };
    }

    /**
     * A size of 0 or less said "size must be positive: 0", naming neither the call nor the pool; it now names both, the
     * value and the sizes allowed.
     */
    @Test
    void aSizeNotPositiveNamesTheValueThePoolAndTheSizesAllowed() {
        pool();
        for (long size : new long[]{0, -5}) {
            assertThatThrownBy(() -> pool.allocate(size, 8)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("cannot allocate " + size + " bytes from the pool of plugin '" + pool.plugin() + "': a region has 1 byte "
                            + "or more; pass Pool.allocate a positive size");
        }
        assertThat(plugin.chunksAllocated).hasValue(0);
    }

    /** A size that cannot be rounded up to a page used to fail with a bare ArithmeticException ("long overflow"). */
    @Test
    void aSizeTooLargeForAnyChunkIsAnIllegalArgumentNamingIt() {
        pool();
        assertThatThrownBy(() -> pool.allocate(Long.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Long.toString(Long.MAX_VALUE)).hasMessageContaining("page size");
        assertThatThrownBy(() -> pool.allocate(Long.MAX_VALUE - 1, 8)).isInstanceOf(IllegalArgumentException.class);
        assertThat(plugin.chunksAllocated).hasValue(0);
    }

    /**
     * A size class takes a whole chunk for its slots. It used to list every slot of a new chunk on
     * the heap at once, 8 bytes per slot: a 64-byte region out of a 4 GiB chunk made a long[] of
     * 512 MiB (with pool.chunk.size=64g, an OutOfMemoryError), and a chunk of 2^32 or more slots
     * counted them in an int that overflowed (ArrayIndexOutOfBoundsException: Index -1). Both threw
     * after the chunk was taken, and every later try took another. The chunks here are sparse
     * files, never touched.
     */
    @Test
    void aSmallRegionOutOfAHugeSharedChunkTakesLittleHeapUpToTheLargestChunk(@TempDir Path dir) {
        for (long chunkSize : new long[]{4L << 30, RuntimePool.MAX_CHUNK_SIZE}) {
            SparseFileProvider provider = new SparseFileProvider(dir);
            try (RuntimePool huge = new RuntimePool("sparse", provider, chunkSize, p -> { })) {
                long before = allocatedBytes();
                Region first = huge.allocate(64);
                Region second = huge.allocate(64);
                assertThat(allocatedBytes() - before).as("heap taken by two 64-byte regions of a chunk of %d bytes", chunkSize)
                        .isLessThan(1 << 20);
                assertThat(provider.chunks).isEqualTo(1);
                assertThat(second.segment().address() - first.segment().address()).isEqualTo(64);
                long firstAddress = first.segment().address();
                first.close();
                assertThat(huge.allocate(64).segment().address()).isEqualTo(firstAddress);
                assertThat(huge.allocate(64).segment().address()).isEqualTo(firstAddress + 128);
            }
        }
        assertThatThrownBy(() -> new RuntimePool("sparse", new SparseFileProvider(dir), RuntimePool.MAX_CHUNK_SIZE + 1, p -> { }))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pool.chunk.size");
    }

    /** pool.chunk.size had no maximum: one past what a slot's index can name was taken, and failed at the first small allocation. */
    @Test
    void aPoolChunkSizeAboveTheLargestChunkIsRefusedWhenTheConduitIsBuiltNamingTheRange() {
        assertThatThrownBy(() -> Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", "257g").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("'257g'").hasMessageContaining("pool.chunk.size")
                .hasMessageContaining("from 65536 to " + RuntimePool.MAX_CHUNK_SIZE);
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin).set("pool.chunk.size", "256g").build();
    }

    /** Chunks that are sparse files mapped whole: as large as the address space allows, taking no memory untouched. */
    private static final class SparseFileProvider implements MemoryProvider {
        private final Path dir;
        private final Map<Chunk, Arena> arenas = new java.util.HashMap<>();
        int chunks;

        SparseFileProvider(Path dir) {
            this.dir = dir;
        }

        @Override
        public long pageSize() {
            return 4096;
        }

        @Override
        public Chunk allocate(long size) {
            try {
                Path file = Files.createTempFile(dir, "chunk", ".sparse");
                Arena arena = Arena.ofShared();
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.SPARSE)) {
                    MemorySegment segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                    Chunk chunk = () -> segment;
                    arenas.put(chunk, arena);
                    chunks++;
                    return chunk;
                } finally {
                    Files.delete(file);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void free(Chunk chunk) {
            arenas.remove(chunk).close();
        }

        @Override
        public void close() {
            arenas.values().forEach(Arena::close);
            arenas.clear();
        }
    }

    @Test
    void concurrentAllocationNeverHandsOutOneSlotTwice() throws Exception {
        pool();
        try (ExecutorService threads = Executors.newFixedThreadPool(4)) {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                byte id = (byte) (t + 1);
                futures.add(threads.submit(() -> {
                    for (int i = 0; i < 20_000; i++) {
                        try (Region r = pool.allocate(64 << (i % 6))) {
                            r.segment().fill(id);
                            Thread.onSpinWait();
                            assertThat(r.segment().get(ValueLayout.JAVA_BYTE, r.size() - 1)).isEqualTo(id);
                            assertThat(r.segment().get(ValueLayout.JAVA_BYTE, 0)).isEqualTo(id);
                        }
                    }
                }));
            }
            for (Future<?> f : futures) f.get();
        }
    }

    /**
     * Regions allocated by one thread are freed by another, each closed by two threads at once, on
     * the size classes' lock-free free lists: no slot is held by two regions at a time, and none is
     * listed twice, which a second push of one close would do (the slots taken back afterwards,
     * more than were ever listed, are all distinct).
     */
    @Test
    void regionsFreedByOtherThreadsAndClosedTwiceAtOnceAreHandedOutOnceEach() throws Exception {
        pool();
        int threads = 4;
        int perThread = 50_000;
        Map<Long, Region> holders = new ConcurrentHashMap<>();
        Queue<Region> toClose = new ConcurrentLinkedQueue<>();
        try (ExecutorService executor = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                futures.add(executor.submit(() -> {
                    for (int i = 0; i < perThread; i++) {
                        Region r = pool.allocate(64L << (i % 3));
                        Region holder = holders.putIfAbsent(r.segment().address(), r);
                        assertThat(holder).as("the slot at %x is still held by another region", r.segment().address()).isNull();
                        // Twice on the queue: two threads close it, perhaps at once.
                        toClose.add(r);
                        toClose.add(r);
                        for (int k = 0; k < 2; k++) closeNext(toClose, holders);
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) f.get();
        }
        assertThat(toClose).isEmpty();
        assertThat(holders).isEmpty();

        long listedAtMost = (long) plugin.chunksAllocated.get() * CHUNK / 64;
        for (long size : new long[]{64, 128, 256}) {
            Set<Long> addresses = new HashSet<>();
            for (long i = 0; i < listedAtMost; i++) {
                assertThat(addresses.add(pool.allocate(size).segment().address())).as("a slot of %d bytes taken back twice", size).isTrue();
            }
        }
    }

    /** Closes the next region of {@code toClose}, no longer its slot's holder once it is closed. */
    private static void closeNext(Queue<Region> toClose, Map<Long, Region> holders) {
        Region r = toClose.poll();
        if (r == null) return;
        holders.remove(r.segment().address(), r);
        r.close();
        assertThat(r.isOpen()).isFalse();
    }

    /**
     * Threads allocating and freeing, and closing regions allocated by others, while the pool
     * closes: an allocation fails only as one from a closed pool does, a close never fails, every
     * region is closed once its pool is, and no chunk is taken after the provider closed.
     */
    @Test
    void allocationsAndFreesRacingThePoolsCloseFailOnlyAsAClosedPoolSays() throws Exception {
        for (int round = 0; round < 20; round++) {
            InProcessMemoryPlugin inproc = new InProcessMemoryPlugin();
            try (Conduit c = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(inproc)
                    .set("pool.chunk.size", Long.toString(CHUNK)).build()) {
                Pool racing = c.pool("inproc");
                int threads = 3;
                Queue<Region> kept = new ConcurrentLinkedQueue<>();
                CountDownLatch started = new CountDownLatch(threads);
                List<Future<?>> futures = new ArrayList<>();
                try (ExecutorService executor = Executors.newFixedThreadPool(threads)) {
                    for (int t = 0; t < threads; t++) {
                        futures.add(executor.submit(() -> {
                            for (int i = 0; ; i++) {
                                if (i == 1_000) started.countDown();
                                Region r;
                                try {
                                    r = racing.allocate(64L << (i % 3));
                                } catch (IllegalStateException e) {
                                    assertThat(e).hasMessage("pool of plugin 'inproc' is closed (by its own close or its Conduit's): allocate from another pool of an open Conduit (Conduit.pool)");
                                    return null;
                                }
                                if (i % 2 == 0) {
                                    kept.add(r); // for another thread to close
                                } else {
                                    r.close();
                                }
                                Region other = kept.poll();
                                if (other != null) other.close();
                            }
                        }));
                    }
                    started.await();
                    racing.close();
                    for (Future<?> f : futures) f.get();
                }
                assertThat(kept).allSatisfy(r -> assertThat(r.isOpen()).isFalse());
                kept.forEach(Region::close);
                assertThat(inproc.providersClosed).hasValue(1);
                assertThat(inproc.chunksFreed.get()).as("round %d", round).isEqualTo(inproc.chunksAllocated.get());
                assertThatThrownBy(() -> racing.allocate(64)).isInstanceOf(IllegalStateException.class);
            }
        }
    }

    /**
     * allocate + free of a slot allocates the region and nothing more: a slot taken back keeps the
     * segment it had when the size asked is the same (it allocated a new slice of the chunk each
     * time too, 88 bytes per cycle), and gets its own when the size differs. Weighed against cycles
     * whose size changes, which do make a segment, rather than against a number of bytes: a region's
     * own size depends on the JVM's object layout (64 bytes without compressed references, as under
     * ZGC or on a heap of 32 GiB or more, against 40 with them).
     */
    @Test
    void aSlotTakenBackKeepsItsSegmentForTheSameSizeAndAllocatesOnlyTheRegion() {
        pool();
        Region first = pool.allocate(100);
        first.close();
        Region second = pool.allocate(100);
        assertThat(second).isNotSameAs(first);
        assertThat(second.segment()).isSameAs(first.segment());
        assertThat(first.isOpen()).isFalse();
        assertThat(second.isOpen()).isTrue();
        second.close();
        Region longer = pool.allocate(120);
        assertThat(longer.segment().address()).isEqualTo(first.segment().address());
        assertThat(longer.size()).isEqualTo(120);
        longer.close();

        long sameSize = bytesPerCycle(i -> 100);
        long changingSize = bytesPerCycle(i -> i % 2 == 0 ? 100 : 120);
        // A segment is an object of its own, of two longs, a reference and a flag besides its header: at least 32 bytes.
        assertThat(sameSize).as("bytes allocated per allocate + free of one size, against %d when each cycle's size differs "
                + "from the last", changingSize).isLessThanOrEqualTo(changingSize - 32);
    }

    /** The bytes this thread allocates per allocate + free of the size {@code sizeOfCycle} gives, after as many cycles to warm up. */
    private long bytesPerCycle(IntUnaryOperator sizeOfCycle) {
        int cycles = 10_000;
        for (int i = 0; i < cycles; i++) pool.allocate(sizeOfCycle.applyAsInt(i)).close();
        long before = allocatedBytes();
        for (int i = 0; i < cycles; i++) pool.allocate(sizeOfCycle.applyAsInt(i)).close();
        return (allocatedBytes() - before) / cycles;
    }

    @Test
    void aPoolNeedsAPluginThatProvidesMemoryAndMaySerializeCalls() {
        InProcessMemoryPlugin confined = new InProcessMemoryPlugin("confined", EnumSet.of(ThreadMode.SINGLE));
        conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(confined).build();
        assertThatThrownBy(() -> conduit.pool("confined")).isInstanceOf(ConduitException.class).hasMessageContaining("SERIALIZED");
        assertThatThrownBy(() -> conduit.pool("nope")).isInstanceOf(ConduitException.class).hasMessageContaining("not found");
    }
}
