package dev.conduit.internal.ipc;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several threads import and close regions of the same and of different chunks through an IPC
 * cache far smaller than they use (so that hits, first releases, evictions of open and unused
 * entries and misses race), while another thread closes the Conduit.
 */
class IpcCacheConcurrencyTest {

    private static final long CHUNK = 64 << 10;
    private static final int THREADS = 4;

    @Test
    void importsClosesEvictionsAndTheConduitsCloseRaceSafely() throws Exception {
        for (int round = 0; round < 30; round++) {
            round(round, true);
        }
    }

    /** The same without the close: once every region is closed, the stats count every mapping left, and none is in use. */
    @Test
    void afterTheRaceTheStatsCountEveryMappingLeft() throws Exception {
        for (int round = 0; round < 10; round++) {
            round(round, false, "ipc.cache.bytes", Long.toString(CHUNK));
        }
    }

    /** The same races under the count bound ({@code ipc.cache.entries=1}, the bytes far from theirs), which evicts beside Caffeine's own policy. */
    @Test
    void underTheEntryBoundTheRacesAreAsSafeAndLeaveNoMoreThanItMapped() throws Exception {
        for (int round = 0; round < 10; round++) {
            round(round, round % 2 == 0, "ipc.cache.entries", "1");
        }
    }

    /**
     * A lock-free hit on a handle's bytes that another thread changes meanwhile (between two valid
     * handles of the same chunk: all of it, and its second half) hands out a view inside the chunk,
     * or misses; never an exception. Until 2026-12-07 the hit read the region's offset and length
     * from the array again after validating it, and a mix of the two (the second half's offset, the
     * whole chunk's length) threw an {@code IndexOutOfBoundsException} out of the import.
     */
    @Test
    void aHitOnHandleBytesAnotherThreadChangesMeanwhileStaysInsideTheChunkOrMisses() throws Exception {
        ArenaChunkMapper mapper = new ArenaChunkMapper();
        IpcHandle whole = new IpcHandle("inproc", 1, 2, 3, CHUNK, 0, CHUNK, new byte[] {3});
        byte[] wholeBytes = whole.encode();
        byte[] halfBytes = new IpcHandle("inproc", 1, 2, 3, CHUNK, CHUNK / 2, CHUNK / 2, new byte[] {3}).encode();
        byte[] shared = wholeBytes.clone();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        try (IpcCache cache = new IpcCache(1 << 30, IpcCacheTest.ENTRIES, IpcCacheTest.IDLE)) {
            cache.open(whole, mapper).close();
            Thread writer = Thread.ofPlatform().start(() -> {
                for (int i = 0; !stop.get(); i++) {
                    System.arraycopy((i & 1) == 0 ? halfBytes : wholeBytes, 0, shared, 0, shared.length);
                }
            });
            try {
                long chunkStart = cache.tryHit(wholeBytes).segment().address();
                for (int i = 0; i < 2_000_000; i++) {
                    IpcCache.Lease hit = cache.tryHit(shared);
                    if (hit == null) continue;
                    long start = hit.segment().address() - chunkStart;
                    assertThat(start).as("the view's offset in the chunk").isBetween(0L, CHUNK - 1);
                    assertThat(start + hit.segment().byteSize()).as("the view's end in the chunk").isBetween(1L, CHUNK);
                    hit.close();
                }
            } finally {
                stop.set(true);
                writer.join();
            }
        }
        assertThat(mapper.maps).hasValue(1);
    }

    private void round(int round, boolean closeConduit) throws Exception {
        round(round, closeConduit, "ipc.cache.bytes", Long.toString(CHUNK));
    }

    /** One round with {@code boundKey} set so that one unused chunk stays mapped at most. */
    private void round(int round, boolean closeConduit, String boundKey, String bound) throws Exception {
        InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
        Conduit conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set(boundKey, bound).set("pool.chunk.size", Long.toString(CHUNK)).build();
        Conduit producer = Conduit.builder().discoverPlugins(false).environment(Map.of()).addPlugin(plugin)
                .set("pool.chunk.size", Long.toString(CHUNK)).build();
        try (producer) {
            Pool pool = producer.pool("inproc");
            List<byte[]> handles = new ArrayList<>();
            for (int i = 0; i < 5; i++) handles.add(pool.allocate(CHUNK).exportHandle());

            Queue<String> faults = new ConcurrentLinkedQueue<>();
            Queue<ImportedRegion> left = new ConcurrentLinkedQueue<>();
            AtomicLong ops = new AtomicLong();
            java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();
            CountDownLatch start = new CountDownLatch(1);
            long closeAfter = 2_000 + ThreadLocalRandom.current().nextInt(20_000);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int seed = t;
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    List<ImportedRegion> held = new ArrayList<>();
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    try {
                        while (!closing.get() || (closeConduit && ops.get() < closeAfter + 5_000)) {
                            if (ops.incrementAndGet() > closeAfter + 50_000) break;
                            byte[] handle = handles.get(random.nextInt(handles.size()));
                            ImportedRegion a;
                            try {
                                a = conduit.importRegion(handle);
                            } catch (IllegalStateException closed) {
                                if (!closing.get() || !closeConduit) faults.add("import refused before the close: " + closed);
                                break;
                            }
                            boolean beforeClose = !closing.get();
                            try {
                                a.segment().set(ValueLayout.JAVA_LONG, 8L * seed, ops.get());
                                long value = a.segment().get(ValueLayout.JAVA_LONG, 8L * seed);
                                ImportedRegion b = conduit.importRegion(handle);
                                try {
                                    if (beforeClose && !closing.get() && b.segment().address() != a.segment().address()) {
                                        faults.add("two mappings of one chunk while a region is open on it");
                                    }
                                    if (b.segment().get(ValueLayout.JAVA_LONG, 8L * seed) != value && !closing.get()) {
                                        faults.add("a second region of the chunk reads other memory");
                                    }
                                } finally {
                                    b.close();
                                }
                            } catch (IllegalStateException unmapped) {
                                if (!closing.get()) faults.add("an open region's memory went away before the close: " + unmapped);
                            }
                            if (random.nextInt(4) == 0) {
                                held.add(a);
                            } else {
                                a.close();
                            }
                            if (held.size() > 3) held.remove(random.nextInt(held.size())).close();
                        }
                    } catch (Throwable e) {
                        faults.add("thread " + seed + ": " + e);
                    } finally {
                        left.addAll(held);
                    }
                }));
            }
            Thread closer = Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                while (ops.get() < closeAfter) Thread.onSpinWait();
                closing.set(true);
                if (closeConduit) conduit.close();
            });
            start.countDown();
            for (Thread t : threads) t.join();
            closer.join();

            assertThat(faults).as("round " + round).isEmpty();
            if (!closeConduit) {
                for (ImportedRegion r : left) {
                    assertThat(r.isOpen()).isTrue();
                    r.close();
                }
                var stats = conduit.ipcCacheStats();
                assertThat(stats.entriesInUse()).as("round %d: in use", round).isZero();
                assertThat(stats.entries()).as("round %d: entries for the chunks mapped", round)
                        .isEqualTo(plugin.maps.get() - plugin.unmaps.get());
                assertThat(stats.mappedBytes()).isEqualTo(stats.entries() * CHUNK);
                assertThat(stats.mappedBytes()).as("round %d: within the bound once nothing is open", round).isLessThanOrEqualTo(CHUNK);
                conduit.close();
                assertThat(plugin.unmaps.get()).isEqualTo(plugin.maps.get());
                return;
            }
            for (ImportedRegion r : left) {
                assertThat(r.isOpen()).as("a region held over the Conduit's close").isFalse();
                r.close();
            }
            assertThat(plugin.unmaps.get()).as("round %d: every mapping is gone with the Conduit", round).isEqualTo(plugin.maps.get());
        }
    }

    /**
     * Imports as endpoint.peerRegion makes them ({@link IpcCache#open}, no lock-free hit first) mixed
     * with lock-free hits: once every region is closed, what stays mapped is within the bound, and
     * the stats count it.
     */
    @Test
    void peerRegionOpensAndHitsLeaveNoMoreMappedThanTheBound() throws Exception {
        for (int round = 0; round < 10; round++) {
            IpcCache cache = new IpcCache(CHUNK, IpcCacheTest.ENTRIES, IpcCacheTest.IDLE);
            java.util.concurrent.atomic.AtomicInteger maps = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger unmaps = new java.util.concurrent.atomic.AtomicInteger();
            java.util.function.Function<IpcHandle, dev.conduit.spi.ChunkMapping> mapper = h -> {
                maps.incrementAndGet();
                java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
                java.lang.foreign.MemorySegment segment = arena.allocate(h.chunkLength(), 4096);
                return new dev.conduit.spi.ChunkMapping() {
                    @Override
                    public java.lang.foreign.MemorySegment segment() {
                        return segment;
                    }

                    @Override
                    public void close() {
                        unmaps.incrementAndGet();
                        arena.close();
                    }
                };
            };
            List<IpcHandle> handles = new ArrayList<>();
            for (int i = 1; i <= 4; i++) handles.add(new IpcHandle("inproc", 1, 2, i, CHUNK, 0, CHUNK, new byte[] {(byte) i}));
            Queue<String> faults = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int seed = t;
                threads.add(Thread.ofPlatform().start(() -> {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    List<IpcCache.Lease> held = new ArrayList<>();
                    try {
                        for (int i = 0; i < 20_000; i++) {
                            IpcHandle h = handles.get(random.nextInt(handles.size()));
                            IpcCache.Lease lease = random.nextBoolean() ? cache.tryHit(h.encode()) : null;
                            if (lease == null) lease = cache.open(h, mapper);
                            lease.segment().set(ValueLayout.JAVA_LONG, 8L * seed, i);
                            if (random.nextInt(3) == 0) held.add(lease);
                            else lease.close();
                            if (held.size() > 2) held.remove(random.nextInt(held.size())).close();
                        }
                    } catch (Throwable e) {
                        faults.add("thread " + seed + ": " + e);
                    } finally {
                        held.forEach(IpcCache.Lease::close);
                    }
                }));
            }
            for (Thread t : threads) t.join();
            assertThat(faults).isEmpty();
            var stats = cache.stats();
            assertThat(stats.entriesInUse()).isZero();
            assertThat(stats.entries()).as("round %d: entries for the chunks mapped", round).isEqualTo(maps.get() - unmaps.get());
            assertThat(stats.mappedBytes()).as("round %d: mapped for no open region, bound %d", round, CHUNK).isLessThanOrEqualTo(CHUNK);
            cache.close();
            assertThat(unmaps.get()).isEqualTo(maps.get());
        }
    }
}
