package dev.conduit.internal.ipc;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import dev.conduit.IpcCacheStats;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.InvalidHandleException;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * The central IPC-handle cache, the same for every plugin: one mapping per exported chunk, keyed
 * by {@code (origin id, export id)}, counted by the regions open on it.
 *
 * <ul>
 *   <li>Opening a handle whose chunk is cached is a hit: no system call, the count goes up.</li>
 *   <li>Closing a region lowers the count; nothing is unmapped then.</li>
 *   <li>An entry is unmapped only when Caffeine evicts it, inside the eviction
 *       ({@code evictionListener}), and never while counted: a counted entry weighs 0, which
 *       Caffeine never evicts for size. Its weight becomes its length when the count drops to 0, so
 *       the bound ({@code ipc.cache.bytes}) limits the bytes that stay mapped for no open region,
 *       least recently used first.</li>
 *   <li>Export ids are never reused by their origin, so a key never names a different chunk than
 *       the one cached (UMF's stale-key unmap of an in-use entry cannot happen).</li>
 * </ul>
 *
 * <p>Cache maintenance runs on the calling thread, so evictions (and their unmaps) happen during
 * the open or close that caused them, not later on a pool thread.
 */
public final class IpcCache implements AutoCloseable {

    private final Cache<Key, Entry> cache;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final AtomicLong mappedBytes = new AtomicLong();
    private final long maximumBytes;

    record Key(long originHigh, long originLow, long exportId) {
    }

    /** One mapped chunk. {@code refs} is only read or written under the cache's lock for its key. */
    static final class Entry {
        final String plugin;
        final long exportId;
        final ChunkMapping mapping;
        final long length;
        /** The payload the importer validated and mapped; a hit must carry the same. */
        final byte[] payload;
        int refs;
        /** Evicted while counted, which weight 0 prevents; kept so that the last release, not the eviction, unmaps. */
        boolean detached;
        /** Guarded by the entry's monitor: unmapping happens once. */
        boolean unmapped;

        Entry(String plugin, long exportId, ChunkMapping mapping, long length, byte[] payload) {
            this.plugin = plugin;
            this.exportId = exportId;
            this.mapping = mapping;
            this.length = length;
            this.payload = payload;
        }
    }

    public IpcCache(long maximumBytes) {
        this.maximumBytes = maximumBytes;
        this.cache = Caffeine.newBuilder()
                .maximumWeight(maximumBytes)
                .weigher((Key k, Entry e) -> e.refs > 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, e.length))
                .evictionListener((Key k, Entry e, RemovalCause cause) -> {
                    if (e != null) evicted(e, cause);
                })
                .executor(Runnable::run)
                .build();
    }

    /**
     * Opens the region {@code handle} describes, mapping its chunk with {@code mapper} on a miss.
     *
     * @throws InvalidHandleException when the handle disagrees with the cached export (chunk length)
     * @throws ConduitException       when the mapper fails; nothing is cached then
     */
    public Lease open(IpcHandle handle, Function<IpcHandle, ChunkMapping> mapper) {
        Key key = new Key(handle.originHigh(), handle.originLow(), handle.exportId());
        boolean[] missed = new boolean[1];
        Entry entry = cache.asMap().compute(key, (k, cached) -> {
            if (cached == null) {
                missed[0] = true;
                cached = map(handle, mapper);
            } else if (cached.length != handle.chunkLength() || !cached.plugin.equals(handle.plugin())) {
                throw new InvalidHandleException("chunk.length", "export " + handle.exportId() + " was cached as a " + cached.length
                        + "-byte chunk of plugin '" + cached.plugin + "', the handle says " + handle.chunkLength()
                        + " bytes of plugin '" + handle.plugin() + "': the handle is forged or corrupted");
            } else if (!Arrays.equals(cached.payload, handle.payload())) {
                // The importer validated the payload that was mapped; a different one must not ride on that mapping.
                throw new InvalidHandleException("payload", "export " + handle.exportId() + " was cached with another payload "
                        + "than this handle carries: the handle is forged or corrupted");
            }
            cached.refs++;
            return cached;
        });
        (missed[0] ? misses : hits).increment();
        IpcEvents.Import event = new IpcEvents.Import();
        if (event.shouldCommit()) {
            event.plugin = handle.plugin();
            event.exportId = handle.exportId();
            event.chunkLength = handle.chunkLength();
            event.hit = !missed[0];
            event.commit();
        }
        MemorySegment region = entry.mapping.segment().asSlice(handle.regionOffset(), handle.regionLength());
        return new Lease(this, key, entry, region);
    }

    private Entry map(IpcHandle handle, Function<IpcHandle, ChunkMapping> mapper) {
        ChunkMapping mapping = mapper.apply(handle);
        if (mapping == null) {
            throw new ConduitException("plugin '" + handle.plugin() + "' importer returned no mapping for export " + handle.exportId());
        }
        long length = mapping.segment().byteSize();
        if (length != handle.chunkLength()) {
            mapping.close();
            throw new ConduitException("plugin '" + handle.plugin() + "' mapped " + length + " bytes for export " + handle.exportId()
                    + ", the handle's chunk has " + handle.chunkLength() + ": the importer is broken");
        }
        mappedBytes.addAndGet(length);
        return new Entry(handle.plugin(), handle.exportId(), mapping, length, handle.payload());
    }

    void release(Key key, Entry entry) {
        boolean[] found = new boolean[1];
        cache.asMap().computeIfPresent(key, (k, cached) -> {
            if (cached != entry) return cached;
            found[0] = true;
            cached.refs--;
            return cached; // re-weighed: 0 while counted, its length once unused
        });
        if (!found[0]) {
            boolean last;
            synchronized (entry) {
                last = --entry.refs == 0 && entry.detached;
            }
            if (last) unmap(entry, "released after eviction");
        }
    }

    private void evicted(Entry e, RemovalCause cause) {
        evictions.increment();
        synchronized (e) {
            if (e.refs > 0) {
                // Cannot happen for size (weight 0); kept so that no path ever unmaps a counted mapping.
                e.detached = true;
                return;
            }
        }
        unmap(e, cause.name());
    }

    private void unmap(Entry e, String cause) {
        synchronized (e) {
            if (e.unmapped) return;
            e.unmapped = true;
        }
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

    /** Runs pending maintenance now (evictions due to the bound). */
    public void cleanUp() {
        cache.cleanUp();
    }

    public IpcCacheStats stats() {
        long inUse = cache.asMap().values().stream().filter(e -> e.refs > 0).count();
        return new IpcCacheStats(hits.sum(), misses.sum(), evictions.sum(), mappedBytes.get(), cache.estimatedSize(), inUse, maximumBytes);
    }

    /**
     * Unmaps every entry, in use or not: closing the {@code Conduit} invalidates the regions imported
     * through it. Their segments then throw {@link IllegalStateException} on access; none can reach
     * unmapped memory.
     */
    @Override
    public void close() {
        List<Entry> entries = new ArrayList<>();
        for (Key k : List.copyOf(cache.asMap().keySet())) {
            cache.asMap().computeIfPresent(k, (key, e) -> {
                entries.add(e);
                return null;
            });
        }
        for (Entry e : entries) unmap(e, "conduit closed");
    }

    /** One open of a cached chunk: a region of it, counted until closed. */
    public static final class Lease {
        private final IpcCache cache;
        private final Key key;
        private final Entry entry;
        private final MemorySegment region;

        Lease(IpcCache cache, Key key, Entry entry, MemorySegment region) {
            this.cache = cache;
            this.key = key;
            this.entry = entry;
            this.region = region;
        }

        public MemorySegment region() {
            return region;
        }

        public String plugin() {
            return entry.plugin;
        }

        /** Releases the count; call once. */
        public void release() {
            cache.release(key, entry);
        }
    }
}
