package dev.conduit.internal.ipc;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.internal.CloseFailures;
import dev.conduit.internal.Periodic;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.threading.PlatformHandOff;
import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ExporterState;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * The central IPC-handle cache, the same for every plugin: one mapping per exported chunk, keyed
 * by {@code (origin id, export id)}, counted by the regions open on it.
 *
 * <ul>
 *   <li>Opening a handle whose chunk is cached is a hit: no system call, and no lock — the handle
 *       is validated in place, the entry found in a read-only index and its count raised with a
 *       CAS ({@link #tryHit}).</li>
 *   <li>Closing a region lowers the count; nothing is unmapped then.</li>
 *   <li>An entry is unmapped only when it leaves the cache uncounted (Caffeine's eviction for
 *       the bytes, inside its {@code evictionListener}; the trim to {@code ipc.cache.entries}; the
 *       sweep of idle ones), at the last release of one that left while counted, or with the cache's
 *       close; never while counted. A plugin's unmap that fails on an eviction is logged, and the
 *       entry leaves all the same ({@link #unmapEvicted}). An entry made by a miss weighs 0
 *       (Caffeine never evicts it for size) until its count first drops to 0; from then on it weighs
 *       its length, so the bound ({@code ipc.cache.bytes}) limits what stays mapped for no open
 *       region, least recently used first. The entries that weigh are also counted, and
 *       {@code ipc.cache.entries} bounds their number the same way ({@link #trimToEntryBound}):
 *       every mapping is one of the process's {@code vm.max_map_count}, which a burst of imports
 *       of small chunks would otherwise spend long before their bytes reach the bound. A hit does
 *       not re-weigh an entry (that would take
 *       Caffeine's lock), so one counted again by a hit after its count dropped to 0 weighs its
 *       length while open and may be picked: it leaves the cache but stays mapped and in the
 *       index until its last region closes, counted by the stats and unmapped by {@link #close()};
 *       {@link #open} (a peer region's, or an import whose look-up ran before the entry was
 *       made) finds it there too, rather than mapping its chunk a second time.</li>
 *   <li>Export ids are never reused by their origin, so a key never names another chunk than the
 *       one cached (UMF's stale-key unmap of an in-use entry cannot happen); and a hit must carry
 *       the plugin, chunk length and payload that the importer validated on the miss. A handle
 *       under a cached key that carries others is mapped on its own, beside the cache
 *       ({@link #openBeside}).</li>
 * </ul>
 *
 * <p>Misses and the count's first drop to 0 go through Caffeine ({@code compute}); maintenance
 * runs on the calling thread, so evictions and their unmaps happen during the open or close that
 * caused them. A miss maps its chunk outside the compute, which holds the lock of the key's bin in
 * Caffeine's map and so of every key there: it reserves the key ({@link #missesUnderWay}), and
 * only the imports of the same chunk wait for its importer, then find the entry it made, or map
 * the chunk themselves after its failure: one mapping per chunk.
 *
 * <p>The bound alone would keep unused chunks mapped for as long as nothing new pushes them out:
 * chunks a producer freed, or a dead producer's, whose pages then stay taken in the producer's
 * directory or shared memory (a container's 64 MiB {@code /dev/shm} fills) for the life of the
 * importer. So a sweep ({@code ipc.cache.idle}, on a {@link Periodic} thread started when an entry
 * first becomes unused) unmaps every entry that no region used between two of its rounds, the
 * second-chance clock of page replacement: an import or an open region marks its entry used, a
 * round clears the mark of each unused entry and unmaps those it found unmarked. An entry unused
 * for a whole interval goes at the next round, between one and two intervals after its last
 * region closed. The mark is one plain write beside the count's CAS, so a hit still takes no lock
 * and reads no clock.
 */
public final class IpcCache implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("dev.conduit");
    private static final VarHandle REFS;
    private static final VarHandle USED;
    /** The count of an entry whose mapping is gone; no CAS can raise it. */
    private static final int DEAD = Integer.MIN_VALUE;

    static {
        try {
            REFS = MethodHandles.lookup().findVarHandle(Entry.class, "refs", int.class);
            USED = MethodHandles.lookup().findVarHandle(Entry.class, "used", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Cache<Key, Entry> cache;
    /** Set first by {@link #close()}: no import maps anything after it. */
    private volatile boolean closed;
    private final HitIndex index = new HitIndex();
    /**
     * The misses mapping their chunk now, by key: put, and looked up, under the cache's lock for the
     * key where an import found no live entry ({@link #open}); taken, and completed, once the entry
     * is in the cache (never before: an import finds one or the other) or the importer failed
     * ({@link #mapReserved}). An import of the key that finds one waits for it rather than map the
     * chunk a second time. The importer runs outside the lock, which is that of the key's bin in
     * Caffeine's map, shared by the keys that hash there: an importer may wait for a frozen exporter
     * ({@code memfd.connect.timeout}; another plugin's, for ever), and under the lock it held up
     * their misses, releases to 0 and the cache's close too.
     */
    private final Map<Key, MissUnderWay> missesUnderWay = new ConcurrentHashMap<>();

    /**
     * A miss mapping its chunk now ({@link #missesUnderWay}), and the thread whose import runs its
     * importer (a virtual thread's runs on a platform thread that acts for it:
     * {@link PlatformHandOff#actingFor}).
     */
    private static final class MissUnderWay extends CompletableFuture<Void> {
        final Thread mapper = PlatformHandOff.actingFor();
    }
    /**
     * Entries out of the cache while regions are open on them, until their last release unmaps
     * them: those the policy evicted while counted, still in the index (imports of them are hits),
     * and those mapped beside the cache for a contradicting handle ({@link #openBeside}), never in
     * it. The cache's close unmaps them with the rest, and the stats count them.
     */
    private final Set<Entry> uncachedInUse = ConcurrentHashMap.newKeySet();
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final AtomicLong mappedBytes = new AtomicLong();
    private final long maximumBytes;
    /** {@code ipc.cache.entries}: the most entries that weigh (that Caffeine may evict) kept at once. */
    private final long maximumEntries;
    /**
     * The entries in the cache that weigh ({@code pinned} false), which {@link #maximumEntries} bounds: changed where
     * {@code pinned} changes and where such an entry leaves the cache, under the cache's lock for its key.
     */
    private final AtomicLong weighing = new AtomicLong();
    /** {@code ipc.cache.idle}: the interval of the sweep of unused entries. */
    private final Duration idle;
    /** The context class loader the sweep's thread runs with. */
    private final ClassLoader contextLoader;
    /** The sweep's thread, once an entry became unused; guarded by {@code this} for its start and stop. */
    private Periodic sweeper;
    /** Set when no thread could be had for the sweep: the bound alone limits what stays mapped. */
    private boolean sweeperRefused;
    /**
     * Run by {@link #trimToEntryBound} after each entry it took out of the cache for
     * {@code ipc.cache.entries}: for tests of what happens meanwhile.
     */
    volatile Runnable whileTrimming = () -> { };
    /**
     * Run by an entry's first release to 0 once the count is 0 and before the entry weighs, under
     * the cache's lock for its key: for tests of what happens meanwhile.
     */
    volatile Runnable whileUnpinning = () -> { };
    /**
     * Run by {@link #sweepIdle} after it killed an entry and took it out of the cache, before it takes
     * it from the hit index: for tests of what happens meanwhile.
     */
    volatile Runnable whileSweeping = () -> { };
    /**
     * Run by an open whose handle contradicts the cached export after it counted the cached entry and
     * before it lowers the count again, under the cache's lock for the key: for tests of what happens
     * meanwhile.
     */
    volatile Runnable whileContradicting = () -> { };
    /**
     * Run by an open that found another miss of its key mapping the chunk, before it waits for that
     * one's end, with no lock held: for tests of what happens meanwhile.
     */
    volatile Runnable whileAwaitingMiss = () -> { };
    /**
     * Run by an import after it counted the entry and before it hands out the lease, and by a miss
     * after it put the entry it mapped in the hit index and before the cache holds it: for tests of
     * an {@link Error} there (an {@link OutOfMemoryError} allocating the lease or the cache's node).
     */
    volatile Runnable whileCounted = () -> { };
    /**
     * Run by a lease's close after it read the entry it releases and before it marks itself closed:
     * for tests of what happens meanwhile.
     */
    volatile Runnable whileClosingLease = () -> { };

    record Key(long originHigh, long originLow, long exportId) {
    }

    /** One mapped chunk. */
    static final class Entry {
        final Key key;
        final String plugin;
        final byte[] pluginBytes;
        final long exportId;
        final ChunkMapping mapping;
        /** {@link ChunkMapping#segment()}, asked once ({@link IpcCache#map}): a plugin's may make a new view per call. */
        final MemorySegment chunk;
        /** {@link ChunkMapping#mayFault()}, asked once: RMA reads it per operation. */
        final boolean mayFault;
        final long length;
        /** The payload the importer validated and mapped; a hit must carry the same. */
        final byte[] payload;
        /** Open regions; {@link #DEAD} once unmapped. Changed by CAS only. */
        @SuppressWarnings("unused") // through REFS
        volatile int refs;
        /** Weighs 0 for Caffeine: made by a miss and not yet released to 0. Written under the cache's lock for the key. */
        volatile boolean pinned = true;
        /**
         * Counted or imported since the sweep's last round looked ({@link #sweepIdle}); written
         * opaquely, only ever read by the sweep, for which a late look costs a round at most.
         */
        @SuppressWarnings("unused") // through USED
        private boolean used;
        /** Left the cache while counted: the last release unmaps. */
        volatile boolean detached;
        /** Mapped beside the cache for a handle that contradicts the cached export ({@link #openBeside}): never in the cache. */
        boolean beside;
        /**
         * The view of the region last opened on this chunk, handed to the next open of the same region
         * rather than a new one: a view is immutable and lives as long as the mapping, not the lease,
         * so sharing it changes nothing a region's user can see. A race between opens of two regions
         * only costs one of them a new view.
         */
        private MemorySegment lastView;

        Entry(Key key, String plugin, long exportId, ChunkMapping mapping, MemorySegment chunk, boolean mayFault, byte[] payload) {
            this.key = key;
            this.plugin = plugin;
            this.pluginBytes = plugin.getBytes(StandardCharsets.US_ASCII);
            this.exportId = exportId;
            this.mapping = mapping;
            this.chunk = chunk;
            this.mayFault = mayFault;
            this.length = chunk.byteSize();
            this.payload = payload;
            this.used = true; // mapped for an import, as a count raised by acquire() marks it
        }

        /** The view of {@code length} bytes at {@code offset} of the chunk. */
        MemorySegment view(long offset, long length) {
            MemorySegment last = lastView;
            if (last != null && last.byteSize() == length && last.address() - chunk.address() == offset) return last;
            MemorySegment view = chunk.asSlice(offset, length);
            lastView = view;
            return view;
        }

        /** Raises the count unless the mapping is gone. */
        boolean acquire() {
            int n;
            do {
                n = refs;
                if (n == DEAD) return false;
            } while (!REFS.weakCompareAndSet(this, n, n + 1));
            USED.setOpaque(this, true);
            return true;
        }

        /** Lowers the count while it stays positive; {@code false} when this release would bring it to 0. */
        boolean releaseAboveZero() {
            int n;
            do {
                n = refs;
                if (n <= 1) return false;
            } while (!REFS.weakCompareAndSet(this, n, n - 1));
            return true;
        }

        /**
         * Lowers the count; a dead entry stays dead. (A lease whose close saw the entry alive may
         * release it after the cache's close marked it dead: a plain decrement would wrap the mark
         * around, and the entry's other leases would report themselves open.)
         */
        int decrement() {
            int n;
            do {
                n = refs;
                if (n == DEAD) return DEAD;
            } while (!REFS.weakCompareAndSet(this, n, n - 1));
            return n - 1;
        }

        /** Marks the mapping gone if nothing counts it; the winner of this CAS unmaps. */
        boolean kill() {
            return REFS.compareAndSet(this, 0, DEAD);
        }
    }

    /** A cache whose sweep runs with the calling thread's context class loader: for tests, which build no {@code Conduit}. */
    IpcCache(long maximumBytes, long maximumEntries, Duration idle) {
        this(maximumBytes, maximumEntries, idle, Thread.currentThread().getContextClassLoader());
    }

    /**
     * @param maximumBytes   {@code ipc.cache.bytes}
     * @param maximumEntries {@code ipc.cache.entries}
     * @param idle           {@code ipc.cache.idle}: entries no region used for this long are unmapped
     * @param contextLoader  the context class loader of the thread that built the {@code Conduit}, which the sweep's
     *                       unmaps run with ({@link Periodic}), whichever thread's release starts it
     */
    public IpcCache(long maximumBytes, long maximumEntries, Duration idle, ClassLoader contextLoader) {
        this.maximumBytes = maximumBytes;
        this.maximumEntries = maximumEntries;
        this.idle = idle;
        this.contextLoader = contextLoader;
        // Caffeine weighs an entry with an int: in bytes, every chunk over 2 GiB would count as 2 GiB, and a bound above that
        // would keep more than it says mapped. So weights are in units of 2^shift bytes, few enough that the bound is under
        // 2^30 of them: a chunk's weight rounds up and the bound down, so what the weights allow never exceeds the bound's
        // bytes, and a chunk longer than the bound (its weight capped at Integer.MAX_VALUE) still outweighs it.
        int shift = Math.max(0, 64 - Long.numberOfLeadingZeros(maximumBytes) - 30);
        long unit = 1L << shift;
        this.cache = Caffeine.newBuilder()
                .maximumWeight(maximumBytes >>> shift)
                .weigher((Key k, Entry e) -> {
                    if (e.pinned) return 0;
                    long units = (e.length >>> shift) + ((e.length & unit - 1) == 0 ? 0 : 1);
                    return (int) Math.min(Integer.MAX_VALUE, units);
                })
                .evictionListener((Key k, Entry e, RemovalCause cause) -> {
                    if (e == null) return;
                    leaving(e);
                    evicted(e, cause.name());
                })
                .executor(Runnable::run)
                .build();
    }

    /**
     * The hit path: when {@code bytes} are a valid handle of a cached, mapped export with the same
     * plugin, chunk length and payload, counts a region on it and returns the lease; otherwise
     * {@code null}, and the caller decodes the handle (which reports what is wrong) and calls
     * {@link #open}. Allocates only the lease (the region's view is the entry's, {@link Entry#view}).
     */
    public Lease tryHit(byte[] bytes) {
        return tryHit(bytes, null);
    }

    /**
     * {@link #tryHit(byte[])} into {@code reuse}, a lease {@link #claimForReopen claimed} for it (or
     * {@code null}): a hit then allocates nothing. On a miss {@code reuse} stays claimed.
     */
    public Lease tryHit(byte[] bytes, Lease reuse) {
        int at = closed ? -1 : IpcHandle.fieldsAt(bytes);
        if (at < 0) return null;
        // Each field read once, and the region checked again as read: another thread may write the array after its check,
        // and a region read then, beyond the chunk, threw from the view's slice
        // (IpcCacheConcurrencyTest#aHitOnHandleBytesAnotherThreadChangesMeanwhileStaysInsideTheChunkOrMisses).
        long chunkLength = IpcHandle.chunkLength(bytes, at);
        long offset = IpcHandle.regionOffset(bytes, at);
        long length = IpcHandle.regionLength(bytes, at);
        if (!IpcHandle.regionFits(chunkLength, offset, length)) return null;
        Entry e = index.find(IpcHandle.originHigh(bytes, at), IpcHandle.originLow(bytes, at), IpcHandle.exportId(bytes, at));
        if (e == null || e.length != chunkLength) return null;
        if (!Arrays.equals(e.pluginBytes, 0, e.pluginBytes.length, bytes, IpcHandle.PLUGIN_NAME, at)
                || !Arrays.equals(e.payload, 0, e.payload.length, bytes, IpcHandle.payloadStart(at), bytes.length - 4)) {
            return null;
        }
        if (!e.acquire()) return null;
        try {
            cache.getIfPresent(e.key); // tells the eviction policy the entry is used
        } catch (Throwable failed) {
            Cleanup.run(failed, () -> release(e));
            throw failed;
        }
        return handOut(e, true, reuse, offset, length);
    }

    /**
     * The lease of an import that counted {@code counted}. An {@link Error} on the way (an
     * {@link OutOfMemoryError} allocating the lease or its view) gives the count back: the import
     * failed, and a count no lease holds would keep the chunk mapped, weighing nothing against the
     * bounds, until the Conduit closes
     * (IpcCacheTest#anImportThatRunsOutOfMemoryAfterCountingTheEntryGivesTheCountBack).
     */
    private Lease handOut(Entry counted, boolean hit, Lease reuse, long offset, long length) {
        try {
            whileCounted.run();
            (hit ? hits : misses).increment();
            importEvent(counted.plugin, counted.exportId, counted.length, hit);
            return lease(reuse, counted, counted.view(offset, length));
        } catch (Throwable failed) {
            Cleanup.run(failed, () -> release(counted));
            throw failed;
        }
    }

    /**
     * Opens the region {@code handle} describes, mapping its chunk with {@code mapper} on a miss; a
     * handle that disagrees with the export cached under its key (plugin, chunk length or payload)
     * is mapped beside the cache ({@link #openBeside}). While another miss maps the same chunk, this
     * waits for it, uninterruptibly (an interrupt stays set), and then opens the entry it made, or
     * maps the chunk itself if that one failed; imports of other chunks do not wait for it.
     *
     * @throws ConduitException when the mapper fails; nothing is cached then
     */
    public Lease open(IpcHandle handle, Function<IpcHandle, ChunkMapping> mapper) {
        return open(handle, mapper, null);
    }

    /** {@link #open(IpcHandle, Function)} into {@code reuse}, as {@link #tryHit(byte[], Lease)}. */
    public Lease open(IpcHandle handle, Function<IpcHandle, ChunkMapping> mapper, Lease reuse) {
        Key key = new Key(handle.originHigh(), handle.originLow(), handle.exportId());
        boolean[] contradicts = new boolean[1];
        boolean[] releasedToZero = new boolean[1];
        Entry[] evictedOpen = new Entry[1];
        MissUnderWay[] reserved = new MissUnderWay[1];
        MissUnderWay[] underWay = new MissUnderWay[1];
        Entry computed;
        do {
            underWay[0] = null;
            computed = cache.asMap().compute(key, (k, cached) -> {
                if (cached == null || !cached.acquire()) {
                    if (closed) throw closedException();
                    if (cached == null) {
                        // One the policy evicted while open is still mapped and in the index: its mapping serves this open too,
                        // as a lock-free hit's would; mapping the chunk again would give it two mappings (and the new entry
                        // would take the open one's place in the index). A dead one is on its way out: map afresh.
                        Entry open = index.find(key.originHigh(), key.originLow(), key.exportId());
                        if (open != null && open.refs != DEAD) {
                            if (open.length != handle.chunkLength() || !open.plugin.equals(handle.plugin())
                                    || !Arrays.equals(open.payload, handle.payload())) {
                                contradicts[0] = true;
                                return null;
                            }
                            if (open.acquire()) {
                                evictedOpen[0] = open;
                                return null;
                            }
                        }
                    }
                    // The importer runs after this returns, outside the lock, which is the lock of the key's bin in the map and
                    // so also every other key's there: the reservation makes only imports of this chunk wait for it.
                    underWay[0] = missesUnderWay.get(key);
                    if (underWay[0] == null) {
                        reserved[0] = new MissUnderWay();
                        missesUnderWay.put(key, reserved[0]);
                    }
                    return cached;
                }
                if (cached.length != handle.chunkLength() || !cached.plugin.equals(handle.plugin())
                        || !Arrays.equals(cached.payload, handle.payload())) {
                    whileContradicting.run();
                    // The entry's last region may have closed meanwhile, its release finding this count above 0: then this is
                    // the drop to 0, and the entry must weigh again, or neither bound would ever unmap it.
                    releasedToZero[0] = releaseUnderLock(cached);
                    contradicts[0] = true;
                    return cached;
                }
                if (!cached.pinned) {
                    cached.pinned = true; // counted again: weigh 0 until the count drops to 0
                    weighing.decrementAndGet();
                }
                return cached;
            });
            if (underWay[0] != null) {
                if (underWay[0].mapper == PlatformHandOff.actingFor()) {
                    // Its own importer, importing the chunk it maps: the wait would never end (the compute it replaces
                    // refused this as a recursive update). Until 2026-12-07 an import made on a virtual thread, whose
                    // importer runs on a platform thread, waited for itself for ever
                    // (IpcCacheTest#anImporterThatImportsItsOwnChunkAgainFailsAlsoWhenTheImportIsMadeOnAVirtualThread).
                    throw new IllegalStateException("the importer of plugin '" + handle.plugin() + "' imports the chunk it is "
                            + "mapping (export " + handle.exportId() + ") again, on the same thread: an importer must map the chunk "
                            + "itself, not import it through the runtime");
                }
                whileAwaitingMiss.run();
                // Uninterruptible, as the wait for the lock it replaces was; the interrupt status stays set. Then look again:
                // the entry it made is a hit, and after its failure this import maps the chunk itself.
                underWay[0].join();
            }
        } while (underWay[0] != null);
        if (contradicts[0]) {
            if (releasedToZero[0]) {
                trimToEntryBound();
                startSweeper();
            }
            return openBeside(key, handle, mapper, reuse);
        }
        boolean missed = reserved[0] != null;
        Entry entry = missed ? mapReserved(key, handle, mapper, reserved[0]) : computed != null ? computed : evictedOpen[0];
        if (closed) {
            // close() may have listed the entries before this one went in: take it out here, if it is still there.
            cache.asMap().computeIfPresent(key, (k, cached) -> {
                if (cached != entry) return cached;
                leaving(cached);
                return null;
            });
            throw unmappedForTheClose(entry);
        }
        return handOut(entry, !missed, reuse, handle.regionOffset(), handle.regionLength());
    }

    /**
     * The miss that reserved {@code key} ({@code reservation}, in {@link #missesUnderWay}): maps the
     * chunk, with no lock held, and caches the entry, counted for this import; then, made or not,
     * ends the reservation, which lets the imports of the key waiting for it look again.
     */
    private Entry mapReserved(Key key, IpcHandle handle, Function<IpcHandle, ChunkMapping> mapper, CompletableFuture<Void> reservation) {
        try {
            Entry fresh = map(key, handle, mapper);
            fresh.refs = 1;
            try {
                cache.asMap().compute(key, (k, cached) -> {
                    if (cached != null) leaving(cached); // a dead one, replaced: the reservation kept out any other
                    index.put(fresh);
                    whileCounted.run();
                    return fresh;
                });
            } catch (Throwable failed) {
                // An OutOfMemoryError of the map's node: a mapping neither cached nor indexed would be unmapped by nobody, not
                // even the cache's close (IpcCacheTest#aMissThatRunsOutOfMemoryAsItCachesTheEntryUnmapsWhatItMapped).
                if (cache.asMap().get(key) == fresh) {
                    Cleanup.run(failed, () -> release(fresh));
                } else {
                    // A lock-free hit may have counted it in the index: its last release unmaps it then, as it does one evicted
                    // while open. Marked before the count drops, so that whichever of the two brings it to 0 sees the mark
                    // (IpcCacheTest#aMissThatRunsOutOfMemoryAsItCachesTheEntryAHitCountedLeavesItToTheHitsClose).
                    fresh.detached = true;
                    if (fresh.decrement() == 0 && fresh.kill()) {
                        index.remove(fresh);
                        Cleanup.run(failed, () -> unmap(fresh, "the import failed"));
                    }
                }
                throw failed;
            }
            return fresh;
        } finally {
            missesUnderWay.remove(key, reservation);
            reservation.complete(null);
        }
    }

    /** The JFR {@code dev.conduit.Import} event of one import, when a recording wants it. */
    private static void importEvent(String plugin, long exportId, long chunkLength, boolean hit) {
        IpcEvents.Import event = new IpcEvents.Import();
        if (event.shouldCommit()) {
            event.plugin = plugin;
            event.exportId = exportId;
            event.chunkLength = chunkLength;
            event.hit = hit;
            event.commit();
        }
    }

    private Lease lease(Lease reuse, Entry counted, MemorySegment view) {
        return reuse == null ? new Lease(this, counted, view) : reuse.reopen(counted, view);
    }

    /**
     * Claims {@code reuse}, an {@link ImportedRegion} the application hands back to be reopened by
     * the next import, for this cache ({@code null} stays {@code null}); the caller must
     * {@link Lease#abandonReopen} it if that import fails.
     *
     * @throws IllegalArgumentException when it is not a region this cache's imports returned
     * @throws IllegalStateException    when it is open, or being reopened by another thread
     */
    public Lease claimForReopen(ImportedRegion reuse) {
        if (reuse == null) return null;
        if (!(reuse instanceof Lease lease)) {
            throw new IllegalArgumentException("the ImportedRegion to reuse (" + reuse.getClass().getName()
                    + ") was not returned by Conduit.importRegion; reuse only regions it returned");
        }
        lease.claimForReopen(this);
        return lease;
    }

    /**
     * Opens {@code handle}, which contradicts the export cached under its key (another chunk length,
     * plugin or payload), on a mapping of its own beside the cache: a miss, validated by its
     * importer as any miss is, never cached, unmapped at its last region's close. The cached entry
     * stays as it is. A handle's key is its own word, which no importer checks against the
     * producer, so of two handles under one key neither can be told the genuine one: refusing the
     * later one let whoever may hand this process handles deny it another producer's export, by
     * having a handle under that key with a payload of its own imported first. A different payload
     * must not ride on the mapping made for the other, and here it does not.
     */
    private Lease openBeside(Key key, IpcHandle handle, Function<IpcHandle, ChunkMapping> mapper, Lease reuse) {
        if (closed) throw closedException();
        Entry beside = map(key, handle, mapper);
        beside.beside = true;
        beside.pinned = false;
        beside.detached = true;
        beside.refs = 1;
        uncachedInUse.add(beside);
        if (closed) {
            // close() may have listed the entries before this one went in: unmapped here, or by close, once.
            uncachedInUse.remove(beside);
            throw unmappedForTheClose(beside);
        }
        misses.increment();
        importEvent(handle.plugin(), handle.exportId(), handle.chunkLength(), false);
        return lease(reuse, beside, beside.view(handle.regionOffset(), handle.regionLength()));
    }

    private Entry map(Key key, IpcHandle handle, Function<IpcHandle, ChunkMapping> mapper) {
        ChunkMapping mapping = mapper.apply(handle);
        if (mapping == null) {
            throw new ConduitException("plugin '" + handle.plugin() + "' importer returned no mapping for export " + handle.exportId());
        }
        String asking = "segment()";
        Entry entry;
        try {
            MemorySegment chunk = mapping.segment();
            if (chunk == null) {
                throw new ConduitException("plugin '" + handle.plugin() + "' importer's mapping of export " + handle.exportId()
                        + " has no segment (null): the importer is broken");
            }
            long length = chunk.byteSize();
            if (length != handle.chunkLength()) {
                throw new ConduitException("plugin '" + handle.plugin() + "' mapped " + length + " bytes for export " + handle.exportId()
                        + ", the handle's chunk has " + handle.chunkLength() + ": the importer is broken");
            }
            asking = "mayFault()";
            entry = new Entry(key, handle.plugin(), handle.exportId(), mapping, chunk, mapping.mayFault(), handle.payload());
        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): the mapping is still to unmap
            RuntimeException failed = mappingFailed(handle.plugin(), asking, e);
            Cleanup.run(failed, mapping::close);
            throw failed;
        } catch (Error e) {
            Cleanup.run(e, mapping::close);
            throw e;
        }
        mappedBytes.addAndGet(entry.length);
        return entry;
    }

    /**
     * What an import throws for a mapping whose {@code asking} ({@code segment()}, {@code mayFault()})
     * threw {@code thrown} as the runtime first asked it: an {@code IllegalStateException} as it
     * is, the mapping's word that it is closed (an exporter's revocation under the import), as a
     * transport's is where the runtime calls it; anything else as the plugin's fault
     * ({@link PluginRecord#failed}, which passes its {@code ConduitException}). Until 2026-12-07
     * the bare exception reached the application naming no plugin, and a checked one thrown
     * undeclared left the mapping mapped
     * (IpcCacheTest#aMappingWhoseSegmentThrowsOrIsNullNamesThePluginAndIsUnmapped).
     */
    private static RuntimeException mappingFailed(String plugin, String asking, Exception thrown) {
        if (thrown instanceof IllegalStateException closed) return closed;
        return PluginRecord.failed(plugin, "its mapping's " + asking, thrown);
    }

    void release(Entry entry) {
        if (entry.releaseAboveZero()) return;
        if (entry.pinned && !entry.detached) {
            // The first drop to 0: Caffeine re-weighs the entry to its length, which may evict it now.
            boolean[] released = new boolean[1];
            cache.asMap().computeIfPresent(entry.key, (k, cached) -> {
                if (cached != entry) return cached;
                released[0] = true;
                releaseUnderLock(cached);
                return cached;
            });
            if (released[0]) {
                trimToEntryBound();
                startSweeper();
                return;
            }
        }
        if (entry.decrement() == 0 && entry.detached && entry.kill()) {
            index.remove(entry);
            uncachedInUse.remove(entry);
            unmapEvicted(entry, entry.beside ? "released, mapped beside the cache" : "released after eviction");
        }
    }

    /**
     * Lowers the count of {@code cached}, a cached entry, under the cache's lock for its key; a drop
     * to 0 makes it weigh (Caffeine re-weighs it to its length when the computation returns, which
     * may evict it).
     *
     * @return whether the count dropped to 0
     */
    private boolean releaseUnderLock(Entry cached) {
        if (cached.decrement() != 0) return false;
        whileUnpinning.run();
        // A hit may have counted the entry again meanwhile, and its release, reading it still pinned, waits for this lock to
        // bring the count to 0 once more: that one must not count it among those that weigh twice.
        if (cached.pinned) {
            cached.pinned = false;
            weighing.incrementAndGet();
        }
        return true;
    }

    /**
     * Starts the sweep of unused entries, once: its thread exists only in a {@code Conduit} whose
     * cache has held an unused entry (one with {@code ipc.cache.bytes=0} or {@code ipc.cache.entries=0}
     * keeps none). It holds the cache weakly, so that a {@code Conduit} dropped unclosed is not kept
     * alive by it.
     */
    private void startSweeper() {
        if (maximumBytes == 0 || maximumEntries == 0) return;
        synchronized (this) {
            if (sweeper != null || sweeperRefused || closed) return;
            try {
                sweeper = new Periodic("conduit-ipc-cache-sweep", LOG, idle, contextLoader, sweep(new WeakReference<>(this)));
            } catch (ConduitException e) { // no thread could be started (Periodic): the cache works on without the sweep
                sweeperRefused = true;
                LOG.log(System.Logger.Level.WARNING, "IPC cache: no thread could be started to unmap imports unused for ipc.cache.idle ("
                        + ConfigKey.durationText(idle) + "): unused imports stay mapped up to ipc.cache.bytes (" + maximumBytes
                        + " bytes); lower that key to bound them, or raise the process's thread limit (ulimit -u)", e);
            }
        }
    }

    private static BooleanSupplier sweep(WeakReference<IpcCache> cache) {
        return () -> {
            IpcCache c = cache.get();
            if (c == null) return false;
            c.sweepIdle();
            return true;
        };
    }

    /**
     * One round of the sweep: unmaps each cached entry that was neither counted nor imported since
     * the round before, and clears the mark of the others. An entry counted now is marked, so that
     * it is given a whole interval after its last region closes. The entry's count is the guard, as
     * for an eviction: one that a hit counts between the look and the removal is not killed, and
     * stays.
     */
    void sweepIdle() {
        for (Entry e : cache.asMap().values()) {
            if (e.refs != 0) {
                USED.setOpaque(e, true);
                continue;
            }
            if ((boolean) USED.getOpaque(e)) {
                USED.setOpaque(e, false);
                continue;
            }
            boolean[] killed = new boolean[1];
            cache.asMap().computeIfPresent(e.key, (k, cached) -> {
                if (cached != e || !e.kill()) return cached;
                killed[0] = true;
                leaving(e);
                return null;
            });
            if (!killed[0]) continue;
            whileSweeping.run();
            index.remove(e);
            e.detached = true;
            evictions.increment();
            unmapEvicted(e, "IDLE");
        }
    }

    /**
     * Evicts entries that weigh, coldest first in Caffeine's order, until no more than
     * {@code ipc.cache.entries} are left: Caffeine bounds one measure only, the bytes. Called where
     * an entry starts to weigh, its first release to 0, which is where the bytes bound's own
     * eviction runs, so both bounds hold at the same moments. An entry is taken as Caffeine takes
     * one for size: one counted again by a hit since (it still weighs) leaves the cache and stays
     * mapped until its last region closes ({@link #evicted}). Entries that weigh 0, in use since
     * their last import by {@link #open}, are never picked: when every entry is in use the count
     * passes the bound, as the bytes do, and nothing is refused.
     */
    private void trimToEntryBound() {
        long excess = weighing.get() - maximumEntries;
        if (excess <= 0) return;
        List<Entry> coldest = cache.policy().eviction().orElseThrow().coldest(entries -> entries
                .map(Map.Entry::getValue)
                .filter(entry -> !entry.pinned)
                .limit(excess)
                .toList());
        for (Entry e : coldest) {
            cache.asMap().computeIfPresent(e.key, (k, cached) -> {
                if (cached != e || cached.pinned || weighing.get() <= maximumEntries) return cached;
                leaving(e);
                // Inside the removal, as Caffeine calls its eviction listener: one in use is among uncachedInUse before it
                // leaves the map, never in neither (for the stats, and for a close before the index's look).
                evicted(e, "ENTRIES");
                return null;
            });
            whileTrimming.run();
        }
    }

    /** Called as {@code e} leaves the cache, under its key's lock: one that weighs no longer counts against ipc.cache.entries. */
    private void leaving(Entry e) {
        if (!e.pinned) weighing.decrementAndGet();
    }

    /** @param cause the JFR eviction's: Caffeine's ({@code SIZE}, for the bytes), or {@code ENTRIES} for the count */
    private void evicted(Entry e, String cause) {
        evictions.increment();
        e.detached = true;
        if (e.kill()) {
            index.remove(e);
            unmapEvicted(e, cause);
            return;
        }
        // Counted: a hit takes no lock to re-weigh an entry, so one counted again after its count dropped to 0 still weighs
        // its length and may be picked while open. It stays mapped and in the index, so that imports of it are hits rather
        // than a second mapping of the chunk, until its last release unmaps it. Kept here for the stats and the cache's close,
        // which must unmap it too; a release that killed it before it was added is seen by the check after.
        uncachedInUse.add(e);
        if (e.refs == DEAD) uncachedInUse.remove(e);
    }

    /**
     * {@link #unmap} of an entry the cache evicted (by a bound, or idle), which no caller asked for:
     * a plugin's unmap that fails is logged, not thrown into the call that happened to make room
     * (another region's close, an import) or out of the sweep's round, and the entry leaves the
     * cache all the same, as Caffeine's own eviction takes it out whatever its listener throws.
     * Until 2026-12-07 the failure, under the entries bound, came out of the unrelated call and left
     * the dead entry cached, its weight counted again at its next removal, so that the bound kept
     * one more chunk mapped for each
     * (IpcCacheEntryBoundTest#anUnmapThatFailsWhenTheCountEvictsLeavesTheBoundHolding); and an
     * {@code Error} out of a round of the sweep ended its thread for the Conduit's life
     * (IpcCacheIdleTest#aRoundWhoseUnmapThrowsAnErrorLeavesTheSweepRunning). So is the unmap at the
     * last release of an entry evicted while open, or mapped beside the cache: the region's close
     * that made it is done, as a release's eviction under a bound of 0 is, and until 2026-12-07 the
     * plugin's bare exception came out of it, naming no plugin
     * (IpcCacheEntryBoundTest#anUnmapThatFailsAtTheLastCloseOfARegionEvictedWhileOpenIsLoggedNotThrown).
     * A checked exception the unmap threw undeclared (Kotlin, {@code @SneakyThrows}) is logged too:
     * until 2026-12-07 it passed bare
     * (IpcCacheEntryBoundTest#anUnmapThatThrowsACheckedExceptionUndeclaredWhenTheCountEvictsIsLoggedNotThrown).
     * The JVM's own errors go on.
     */
    private void unmapEvicted(Entry e, String cause) {
        try {
            unmap(e, cause);
        } catch (Throwable failure) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
            BestEffortLog.warnUnlessTheJvmsOwn(LOG, () -> "IPC cache: " + e.plugin + " could not unmap export " + Long.toHexString(e.exportId)
                    + " (" + e.length + " bytes) that the cache evicted (" + cause + "): " + failure
                    + "; the plugin's mapping may stay until the process exits", failure);
        }
    }

    private void unmap(Entry e, String cause) {
        mappedBytes.addAndGet(-e.length);
        e.mapping.close();
        IpcEvents.Eviction event = new IpcEvents.Eviction();
        if (event.shouldCommit()) {
            event.plugin = e.plugin;
            event.exportId = e.exportId;
            event.chunkLength = e.length;
            event.cause = cause;
            event.commit();
        }
    }

    /** Takes {@code e} out of the index and marks it dead; whether this call did (and must unmap it). */
    private boolean detachAndKill(Entry e) {
        index.remove(e);
        e.detached = true;
        return (int) REFS.getAndSet(e, DEAD) != DEAD;
    }

    /**
     * Unmaps {@code e}, which an open made while the cache's close ran, unless the close did: the
     * open then fails saying the Conduit is closed, a plugin's unmap failure suppressed in that.
     * Until 2026-12-07 such a failure came out in its place, naming neither the close nor the plugin
     * (IpcCacheTest#aMissWhoseCacheClosedMeanwhileSaysSoAlsoWhenItsUnmapFails).
     */
    private IllegalStateException unmappedForTheClose(Entry e) {
        IllegalStateException closedMeanwhile = closedException();
        if (detachAndKill(e)) Cleanup.run(closedMeanwhile, () -> unmap(e, "conduit closed"));
        return closedMeanwhile;
    }

    private static IllegalStateException closedException() {
        return new IllegalStateException("Conduit is closed: its IPC cache maps nothing more; open another Conduit to go on");
    }

    /** Runs pending maintenance now (evictions due to the bound). */
    public void cleanUp() {
        cache.cleanUp();
    }

    public IpcCacheStats stats() {
        cache.cleanUp();
        long inUse = cache.asMap().values().stream().filter(e -> e.refs > 0).count();
        long evictedOpen = uncachedInUse.stream().filter(e -> e.refs > 0).count();
        return new IpcCacheStats(hits.sum(), misses.sum(), evictions.sum(), mappedBytes.get(), cache.estimatedSize() + evictedOpen,
                inUse + evictedOpen, maximumBytes, maximumEntries, idle);
    }

    /**
     * Unmaps every entry, in use or not: closing the {@code Conduit} invalidates the regions imported
     * through it. Their segments then throw {@link IllegalStateException} on access; none can reach
     * unmapped memory. A mapping that fails to close (a thread still inside a native call with its
     * segment, say) does not keep the others mapped: every entry is tried, the failures are thrown
     * together, and a failed entry is dead all the same (its region reports itself closed). So does
     * a mapping whose close throws a checked exception undeclared (Kotlin, {@code @SneakyThrows}):
     * until 2026-12-07 it left the loop, bare, and the entries after it stayed mapped for good
     * (IpcCacheTest#aMappingWhoseCloseThrowsACheckedExceptionUndeclaredKeepsNoOtherMapped). The
     * entries are also taken from the hit index, which holds each one a region can be open on from
     * before its first region opens until it is dead, wherever it is on its way from the cache to
     * the entries evicted while open.
     */
    @Override
    public void close() {
        closed = true;
        Periodic s;
        synchronized (this) {
            s = sweeper;
            sweeper = null;
        }
        if (s != null) s.close(); // its round in progress ends first: it unmaps what it took, close the rest
        List<Entry> entries = new ArrayList<>();
        for (Key k : List.copyOf(cache.asMap().keySet())) {
            cache.asMap().computeIfPresent(k, (key, e) -> {
                entries.add(e);
                leaving(e);
                return null;
            });
        }
        entries.addAll(uncachedInUse);
        uncachedInUse.clear();
        // Every entry a region can be open on is in the index from before its first region opens (a hit finds it there,
        // an open puts or finds it there) until it is dead, wherever it is on its way out of the cache (the trim took one
        // out before it put it in uncachedInUse, and a close in between found it in neither). An open that puts an entry
        // in the index after this look reads closed after it and kills that entry itself. (One found twice dies once.)
        entries.addAll(index.takeAll());
        ConduitException failure = null;
        for (Entry e : entries) {
            if (!detachAndKill(e)) continue;
            try {
                unmap(e, "conduit closed");
            } catch (Throwable unmapFailed) { // a plugin's Error too, or a checked one thrown undeclared: the others are still unmapped
                if (failure == null) failure = new ConduitException("unmapping imported regions failed; the causes are suppressed");
                failure.addSuppressed(unmapFailed);
            }
        }
        CloseFailures.throwCollected(failure);
    }

    /**
     * One open of a cached chunk: a region of it, counted until closed. It is also the application's
     * {@link ImportedRegion}, so that a hit allocates only this, or nothing when the caller hands a
     * closed one back to be reopened ({@link #reopen}).
     *
     * <p>States of {@code closed}, its low two bits: 0 open; 1 closed; 2 being reopened by one
     * thread, which alone may change {@code entry} and {@code region} then. Both are plain fields
     * written before the volatile write that opens the lease again, so a thread that sees it open
     * sees them. The bits above count the reopens: a close that read the entry of one opening
     * marks closed only that opening, never the next one on another entry. Until 2026-12-07 a
     * close overtaken by another close and a reopen of the lease released the old entry a second
     * time (unmapping it under the regions still open on it) and left the new one counted for good
     * (IpcCacheTest#aCloseOvertakenByAnotherCloseAndAReopenReleasesNeitherEntryTwice).
     */
    public static final class Lease implements ImportedRegion {
        private static final VarHandle CLOSED;
        private static final int OPEN = 0;
        private static final int SHUT = 1;
        private static final int REOPENING = 2;
        /** The state's bits of {@code closed}. */
        private static final int STATE = 3;
        /** One reopen, in the bits of {@code closed} above the state's (they wrap around, harmlessly). */
        private static final int REOPENED = 4;

        static {
            try {
                CLOSED = MethodHandles.lookup().findVarHandle(Lease.class, "closed", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final IpcCache cache;
        private Entry entry;
        private MemorySegment region;
        @SuppressWarnings("unused") // through CLOSED
        private volatile int closed;

        Lease(IpcCache cache, Entry entry, MemorySegment region) {
            this.cache = cache;
            this.entry = entry;
            this.region = region;
        }

        public MemorySegment region() {
            return region;
        }

        /** {@link ChunkMapping#mayFault()} of the cached mapping, as it said when it was mapped. */
        public boolean mayFault() {
            return entry.mayFault;
        }

        @Override
        public MemorySegment segment() {
            return region;
        }

        @Override
        public long size() {
            return region.byteSize();
        }

        @Override
        public String plugin() {
            return entry.plugin;
        }

        @Override
        public boolean isOpen() {
            return (closed & STATE) == OPEN && entry.refs != DEAD;
        }

        /** Says the exporting plugin and the length, and whether it is closed, for logs; never throws. */
        @Override
        public String toString() {
            return "ImportedRegion[" + plugin() + ", " + size() + " B" + (isOpen() ? "" : ", closed") + "]";
        }

        @Override
        public ExporterState exporterState() {
            if (!isOpen()) {
                throw new IllegalStateException("the ImportedRegion is closed" + ((closed & STATE) == OPEN ? " (its Conduit closed)" : "")
                        + ": ask exporterState() of an open one (import the handle again)");
            }
            return exporterStateEvenIfClosed();
        }

        /**
         * The cached mapping's {@link ChunkMapping#exporterState()}, also after this lease's close (which
         * a mapping answers as before): for a transport's region that its endpoint's failure closed.
         * Anything but a {@code ConduitException} out of it, an {@code IllegalStateException} too (the
         * SPI has the mapping answer after its close), and a {@code null}, is named as the plugin's
         * fault. Until 2026-12-07 the plugin's bare exception reached the application, its
         * {@code IllegalStateException} reading as the region closed, and a {@code null} was handed
         * on as the answer
         * (IpcCacheTest#aMappingWhoseExporterStateThrowsOrIsNullIsNamedAsThePluginsFault).
         */
        public ExporterState exporterStateEvenIfClosed() {
            String operation = "its mapping's exporterState()";
            ExporterState state;
            try {
                state = entry.mapping.exporterState();
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw PluginRecord.failed(entry.plugin, operation, e);
            }
            if (state == null) throw PluginRecord.returnedNull(entry.plugin, operation, "an ExporterState", "MemoryProviderContract");
            return state;
        }

        /** Releases the count, once. */
        @Override
        public void close() {
            int opening = closed;
            if ((opening & STATE) != OPEN) return;
            // Read before the CAS: once this lease is shut, another thread may claim it and reopen it on another entry. The
            // CAS expects this opening's count of reopens, so that it fails once another close and a reopen came between.
            Entry counted = entry;
            cache.whileClosingLease.run();
            if (CLOSED.compareAndSet(this, opening, opening | SHUT) && counted.refs != DEAD) cache.release(counted);
        }

        /**
         * Claims this closed lease for {@code cache} to reopen, or says why it cannot be: it is open,
         * another thread is reopening it, or another {@code Conduit}'s cache made it.
         */
        private void claimForReopen(IpcCache by) {
            if (by != cache) {
                throw new IllegalArgumentException("the ImportedRegion to reuse was imported through another Conduit; "
                        + "reuse only regions this Conduit's importRegion returned");
            }
            int shut = closed;
            if ((shut & STATE) != SHUT || !CLOSED.compareAndSet(this, shut, shut - SHUT + REOPENING)) {
                throw new IllegalStateException((closed & STATE) == OPEN
                        ? "the ImportedRegion to reuse is still open: close it first (reopening it would leave its use counted)"
                        : "the ImportedRegion to reuse is being reopened by another thread: reuse one region on one thread at a time");
            }
        }

        /** Opens the claimed lease on {@code counted} (whose count the caller took for it). */
        private Lease reopen(Entry counted, MemorySegment view) {
            entry = counted;
            region = view;
            closed = (closed & ~STATE) + REOPENED; // OPEN
            return this;
        }

        /** Gives up a claim whose import failed: closed as before, its old region unchanged. */
        public void abandonReopen() {
            closed = (closed & ~STATE) | SHUT;
        }
    }

    /**
     * The entries by key, for the hit path: an open-addressing table replaced whole (copy on write)
     * on every insert and removal — which happen on misses and evictions, far rarer than hits — so
     * that a lookup reads one volatile array and nothing else.
     *
     * <p>A key's slot is a hash keyed by a random seed of this index's own ({@link #slot}): every
     * field of a key is the exporter's to choose (a hostile one wraps one valid payload in handles
     * of any origin and export id, each a miss that maps and is kept), and under a fixed hash it
     * could choose keys that all share a slot, so that every lookup, another exporter's hits
     * included, walks a run as long as the entries it made (up to {@code ipc.cache.entries}).
     * Until 2026-12-07 the hash was fixed, and its fields were combined before anything mixed
     * them: keys with the same {@code originHigh ^ originLow * 31 ^ exportId}, or export ids that
     * differ only in their high bits, shared a slot whatever a seed xored in
     * (IpcCacheTest#keysThatShareASlotUnderAFixedHashSpreadOverACachesIndex).
     */
    static final class HitIndex {
        private static final java.security.SecureRandom SEEDS = new java.security.SecureRandom();

        private final long seed = SEEDS.nextLong();
        private volatile Entry[] table = new Entry[16];
        private int size;

        Entry find(long originHigh, long originLow, long exportId) {
            Entry[] t = table;
            int mask = t.length - 1;
            for (int i = slot(originHigh, originLow, exportId, mask); ; i = (i + 1) & mask) {
                Entry e = t[i];
                if (e == null) return null;
                Key k = e.key;
                if (k.exportId() == exportId && k.originLow() == originLow && k.originHigh() == originHigh) return e;
            }
        }

        synchronized void put(Entry entry) {
            Entry[] old = table;
            int capacity = old.length;
            while ((size + 1) * 2 > capacity) capacity *= 2;
            Entry[] t = new Entry[capacity];
            for (Entry e : old) {
                if (e != null && e.key != entry.key && !e.key.equals(entry.key)) insert(t, e);
            }
            insert(t, entry);
            size = count(t);
            table = t;
        }

        /** Empties the index; what it held. */
        synchronized List<Entry> takeAll() {
            List<Entry> all = new ArrayList<>(size);
            for (Entry e : table) if (e != null) all.add(e);
            table = new Entry[16];
            size = 0;
            return all;
        }

        synchronized void remove(Entry entry) {
            Entry[] old = table;
            Entry[] t = new Entry[old.length];
            boolean found = false;
            for (Entry e : old) {
                if (e == null) continue;
                if (e == entry) {
                    found = true;
                } else {
                    insert(t, e);
                }
            }
            if (!found) return;
            size = count(t);
            table = t;
        }

        private void insert(Entry[] t, Entry e) {
            int mask = t.length - 1;
            int i = slot(e.key.originHigh(), e.key.originLow(), e.key.exportId(), mask);
            while (t[i] != null) i = (i + 1) & mask;
            t[i] = e;
        }

        private static int count(Entry[] t) {
            int n = 0;
            for (Entry e : t) if (e != null) n++;
            return n;
        }

        /**
         * Each field goes into the seeded state through murmur3's finalizer ({@link #mix}), one
         * after another, so that which keys share a slot depends on the seed: a seed xored into
         * fields combined first leaves the keys that collided colliding, and so did, for a day, a
         * fold and one multiply per field, which are linear or carry a difference only upwards
         * (export ids differing by {@code h << 32 | h}, {@code h} in bits 17 to 31, shared a slot
         * under every seed: IpcCacheTest#exportIdsThatDifferOnlyInTheBitsTheFirstFoldCancelsSpreadOverACachesIndex).
         * Six multiplies where there was one, on the hit path (docs/performance.md, "The IPC
         * cache's hit index, seeded").
         */
        int slot(long originHigh, long originLow, long exportId, int mask) {
            long h = mix(seed ^ originHigh);
            h = mix(h ^ originLow);
            h = mix(h ^ exportId);
            return (int) h & mask;
        }

        /** murmur3's 64-bit finalizer: every bit of {@code x} reaches every bit of the result, through the multiplies' carries. */
        private static long mix(long x) {
            x = (x ^ (x >>> 33)) * 0xFF51AFD7ED558CCDL;
            x = (x ^ (x >>> 33)) * 0xC4CEB9FE1A85EC53L;
            return x ^ (x >>> 33);
        }
    }
}
