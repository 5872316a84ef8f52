package dev.conduit.internal.memory;

import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.ipc.IpcEvents;
import dev.conduit.internal.ipc.IpcHandle;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;

import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * A pool over one memory provider: power-of-two size classes from 64 B to a quarter of the chunk
 * size, each taking whole chunks from the provider; larger allocations get a chunk of their own,
 * returned to the provider when freed. Class chunks stay with the pool until it closes.
 *
 * <p>The provider is only ever called under {@link #providerLock}, so a provider that declares
 * {@code SERIALIZED} is safe under a pool used by many threads. Freeing a size-class region, and
 * taking a freed slot back, take no lock: the class's free list is lock-free ({@link SizeClass}).
 * The pool is the producer side of the IPC-handle format: it owns the origin id (128 random bits,
 * per provider instance) and the export ids (a counter, never reused), and exports each chunk once.
 */
public final class RuntimePool implements Pool {

    static final int MIN_CLASS_SHIFT = 6;
    /**
     * The largest chunk: 2^32 slots of the smallest class, as many as a slot's 32-bit index
     * ({@link SizeClass}) can name. {@code pool.chunk.size} is bounded by it.
     */
    public static final long MAX_CHUNK_SIZE = 1L << (32 + MIN_CLASS_SHIFT);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String plugin;
    private final MemoryProvider provider;
    private final long pageSize;
    private final long chunkSize;
    private final SizeClass[] classes;
    private final long originHigh;
    private final long originLow;
    private final Consumer<AutoCloseable> onClose;
    private final ReentrantLock providerLock = new ReentrantLock();
    private final Map<PooledChunk, Boolean> dedicated = new IdentityHashMap<>();
    /** {@code pool.max.size}: the most bytes of chunks this pool holds at once; 0 for no bound. */
    private final long maxBytes;
    /** Bytes of the chunks this pool holds from its provider; under {@link #providerLock}. */
    private long heldBytes;
    private long lastExportId;
    private volatile boolean closed;
    private final Object closeLock = new Object();
    private boolean providerClosed;
    private final String exportRefusal;
    private final boolean declaresIpc;

    /** A pool of a plugin that does not declare {@code IPC}. */
    public RuntimePool(String plugin, MemoryProvider provider, long requestedChunkSize, Consumer<AutoCloseable> onClose) {
        this(plugin, provider, false, null, requestedChunkSize, 0, onClose);
    }

    /**
     * @param declaresIpc   whether its plugin declares {@code IPC}: a provider that then refuses an
     *                      export breaks the plugin's word, which a refusal says rather than advise
     *                      another plugin
     * @param exportRefusal why its plugin's probe ruled {@code IPC} out here, so that no region of
     *                      this pool is exported; null when it exports
     * @param maxBytes      {@code pool.max.size}: the most bytes of chunks the pool holds at once; 0 for no bound
     */
    public RuntimePool(String plugin, MemoryProvider provider, boolean declaresIpc, String exportRefusal, long requestedChunkSize,
                       long maxBytes, Consumer<AutoCloseable> onClose) {
        this.plugin = plugin;
        this.declaresIpc = declaresIpc;
        this.exportRefusal = exportRefusal;
        this.provider = provider;
        try {
            this.pageSize = provider.pageSize();
        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): past Conduit.pool's close of the provider
            throw PluginRecord.failed(plugin, "its memory provider's pageSize()", e);
        }
        if (pageSize <= 0 || Long.bitCount(pageSize) != 1) {
            throw new ConduitException("plugin '" + plugin + "' reports page size " + pageSize + ", not a power of two");
        }
        if (requestedChunkSize <= 0 || requestedChunkSize > MAX_CHUNK_SIZE) {
            throw new IllegalArgumentException("chunk size " + requestedChunkSize + " is outside 1.." + MAX_CHUNK_SIZE + " (pool.chunk.size)");
        }
        this.chunkSize = Math.min(MAX_CHUNK_SIZE, Math.max(pageSize, (requestedChunkSize + pageSize - 1) & -pageSize));
        int count = Math.max(0, 63 - Long.numberOfLeadingZeros(chunkSize / 4) - MIN_CLASS_SHIFT + 1);
        this.classes = new SizeClass[count];
        for (int i = 0; i < count; i++) classes[i] = new SizeClass(this, 1L << (MIN_CLASS_SHIFT + i));
        long hi, lo;
        do {
            hi = RANDOM.nextLong();
            lo = RANDOM.nextLong();
        } while (hi == 0 && lo == 0);
        this.originHigh = hi;
        this.originLow = lo;
        this.onClose = onClose;
        this.maxBytes = maxBytes;
    }

    @Override
    public String plugin() {
        return plugin;
    }

    @Override
    public long pageSize() {
        return pageSize;
    }

    long chunkSize() {
        return chunkSize;
    }

    @Override
    public Region allocate(long size) {
        return allocate(size, 8);
    }

    @Override
    public Region allocate(long size, long alignment) {
        if (size <= 0) {
            throw new IllegalArgumentException("cannot allocate " + size + " bytes from the pool of plugin '" + plugin + "': a region has "
                    + "1 byte or more; pass Pool.allocate a positive size");
        }
        if (alignment <= 0 || Long.bitCount(alignment) != 1 || alignment > pageSize) {
            throw new IllegalArgumentException("alignment " + alignment + " must be a power of two no larger than the page size "
                    + pageSize + " of plugin '" + plugin + "'");
        }
        ensureOpen();
        long need = Math.max(size, alignment);
        int index = need <= (1L << MIN_CLASS_SHIFT) ? 0 : 64 - Long.numberOfLeadingZeros(need - 1) - MIN_CLASS_SHIFT;
        if (index < classes.length) {
            return classes[index].allocate(size);
        }
        if (size > Long.MAX_VALUE - (pageSize - 1)) {
            throw new IllegalArgumentException("size " + size + " cannot be rounded up to the page size " + pageSize
                    + " of plugin '" + plugin + "': no chunk is that large");
        }
        long length = (size + pageSize - 1) & -pageSize;
        PooledChunk chunk = newChunk(length, false);
        return new PoolRegion(this, null, 0, chunk, chunk.segment.asSlice(0, size));
    }

    /** A chunk of {@code pool.chunk.size} for the size classes. */
    PooledChunk newSharedChunk() {
        return newChunk(chunkSize, true);
    }

    /**
     * A chunk of {@code length} bytes from the provider. A shared chunk's size is a setting, not
     * what the caller asked for, so the provider's refusal of one (no room for it) names the
     * setting as well. A chunk of a region's own is the pool's ({@code dedicated}) before the lock
     * that took it is let go: until 2026-12-06 it became so under a second hold, and a
     * {@link #close()} between the two freed it, the allocation then returning a region over freed
     * memory where it should have thrown (found by a review; no test: the window lies between two
     * holds of one lock).
     */
    private PooledChunk newChunk(long length, boolean shared) {
        providerLock.lock();
        try {
            ensureOpen();
            if (maxBytes > 0 && length > maxBytes - heldBytes) throw beyondMaximum(length, shared);
            Chunk chunk;
            try {
                chunk = provider.allocate(length);
            } catch (NotSupportedException e) {
                throw e;
            } catch (ConduitException e) {
                if (!shared) throw e;
                throw new ConduitException("pool of plugin '" + plugin + "': could not take a chunk of " + length + " bytes (pool.chunk.size; "
                        + "allocations up to a quarter of it share chunks of that size): " + e.getMessage() + ". Lower pool.chunk.size if "
                        + "chunks of that size cannot fit where the plugin allocates", e);
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw PluginRecord.failed(plugin, "its memory provider's allocate(" + length + ")", e);
            }
            MemorySegment segment = chunk == null ? null : segmentOf(chunk);
            if (segment == null || segment.byteSize() != length) {
                // Both sizes, and whose fault it is: "the wrong size" alone sent the plugin's author looking for which.
                String returned = chunk == null ? "no chunk (null)"
                        : segment == null ? "a chunk whose segment() is null" : "a chunk of " + segment.byteSize() + " bytes";
                throw refusedChunk(chunk, returned + " from allocate(" + length + "), which gives a chunk exactly as long as asked");
            }
            long address = segment.address();
            if ((address & (pageSize - 1)) != 0) {
                // Pool.allocate's alignments up to the page size hold only on page-aligned chunks: a region of this one would be
                // misaligned with no word (until 2026-12-07 it was, from a provider taking arena.allocate(size), 16-byte aligned).
                throw refusedChunk(chunk, "a chunk at address 0x" + Long.toHexString(address) + " from allocate(" + length
                        + "), which is not a multiple of its page size (" + pageSize + " bytes): a chunk is page-aligned");
            }
            heldBytes += length;
            PooledChunk pooled = new PooledChunk(chunk, segment);
            // Under the lock that took it: a close between the two would free it and leave the region over freed memory.
            if (!shared) dedicated.put(pooled, Boolean.TRUE);
            return pooled;
        } finally {
            providerLock.unlock();
        }
    }

    /**
     * The memory of a chunk the provider just returned, asked once: a chunk whose {@code segment()}
     * throws (a checked exception undeclared too, Kotlin's or {@code @SneakyThrows}') is named as
     * the plugin's fault, as its {@code allocate} would be, and given back to it. Until 2026-12-07
     * the plugin's bare exception reached the application as it was, naming no plugin, and the
     * chunk was never freed.
     */
    private MemorySegment segmentOf(Chunk chunk) {
        try {
            return chunk.segment();
        } catch (Exception e) {
            RuntimeException failed = PluginRecord.failed(plugin, "its chunk's segment()", e);
            Cleanup.run(failed, () -> provider.free(chunk));
            throw failed;
        }
    }

    /**
     * The refusal of a chunk the provider returned against the SPI's word ({@code wrong} says how),
     * named as the plugin's fault, the chunk given back to it.
     */
    private ConduitException refusedChunk(Chunk chunk, String wrong) {
        ConduitException refused = new ConduitException("plugin '" + plugin + "' returned " + wrong + ": that is the plugin's fault "
                + "(the TCK's MemoryProviderContract shows it); report it to the plugin's authors, and meanwhile allocate from another "
                + "plugin's pool");
        // The plugin's fault is what the caller must read: a free that fails too is added to it.
        if (chunk != null) Cleanup.run(refused, () -> provider.free(chunk));
        return refused;
    }

    /**
     * A chunk of {@code length} bytes that would take the pool past {@code pool.max.size}. What the
     * pool holds goes back to the provider only as regions of a chunk of their own close (a size
     * class keeps its shared chunks for the next regions of its size until the pool closes), which
     * the remedy says.
     */
    private ConduitException beyondMaximum(long length, boolean shared) {
        return new ConduitException("pool of plugin '" + plugin + "' holds " + heldBytes + " bytes of chunks; a chunk of " + length
                + " bytes more (" + (shared ? "pool.chunk.size, shared by allocations up to a quarter of it" : "a region of its own")
                + ") would take it past pool.max.size (" + maxBytes + " bytes). Close regions you no longer need (a region of a "
                + "chunk of its own gives it back at once; a region of a shared chunk frees its slot for the next of its size), or "
                + "raise pool.max.size (CONDUIT_POOL_MAX_SIZE)");
    }

    void free(SizeClass c, PoolRegion region) {
        if (!closed) c.free(region);
    }

    /**
     * Gives a region's chunk of its own back to the provider. A provider refuses while the chunk is
     * in use ({@link IllegalStateException}: memfd, posix and devdax, while another thread is in a
     * native call on its memory; the chunk stays allocated, to be freed again later): the pool then
     * keeps the chunk, and counts it, for the region's next close to try again, as every close of
     * the pool tries again a provider's close it refused. Such a refusal revokes the chunk's export
     * (memfd's and devdax's do), so the pool forgets it, and the region's next export asks the
     * provider for a new one: until 2026-12-07 it handed out the revoked one again, which no importer
     * could map (RuntimePoolTest#aRegionWhoseOwnChunkTheProviderRefusedToFreeExportsItAnewAndTheNewHandleImports).
     * Any other failure leaves the chunk no more
     * the provider's to free ({@link dev.conduit.spi.MemoryProvider#free}): it is not tried again,
     * and stays counted until the pool closes, as its memory may be kept.
     */
    void freeDedicated(PooledChunk chunk) {
        providerLock.lock();
        try {
            if (closed || !dedicated.containsKey(chunk)) return;
            try {
                provider.free(chunk.chunk);
            } catch (IllegalStateException inUse) {
                chunk.export = null; // revoked by the refusal all the same (memfd, devdax): the region's next export asks anew
                chunk.freeRefused = inUse;
                throw inUse;
            } catch (Error e) {
                dedicated.remove(chunk);
                throw e;
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): named, as Region.close declares none
                dedicated.remove(chunk);
                throw PluginRecord.failed(plugin, "its memory provider's free()", e);
            }
            dedicated.remove(chunk);
            heldBytes -= chunk.segment.byteSize();
        } finally {
            providerLock.unlock();
        }
    }

    /** @param own whether {@code chunk} is a region's own, which that region's close gives back to the provider */
    byte[] exportHandle(PooledChunk chunk, boolean own, long offset, long length) {
        if (exportRefusal != null) throw new NotSupportedException("plugin '" + plugin + "' exports no IPC handles here: " + exportRefusal);
        PooledChunk.ChunkExport export = chunk.export;
        boolean first = false;
        // A chunk of its own is looked up under the lock whatever export it has: its region's close frees it there, and
        // the export it had made would otherwise be handed out after that, naming a chunk the provider no longer has.
        if (export == null || own) {
            providerLock.lock();
            try {
                ensureOpenToExport();
                // A close since the region looked at its state freed the chunk: the provider is not asked to export a chunk it
                // no longer has, which memfd refuses as the caller's bug and which was then named the plugin's fault, and an
                // export made before is not handed out (until 2026-12-07 it was:
                // RuntimePoolTest#anExportThatARegionsCloseOvertakesSaysTheRegionIsClosedAlsoOnceTheChunkWasExported).
                if (own && !dedicated.containsKey(chunk)) throw PoolRegion.closed();
                export = chunk.export;
                if (export == null) {
                    byte[] payload;
                    try {
                        payload = provider.export(chunk.chunk);
                    } catch (NotSupportedException e) {
                        // The SPI's default says only "this memory provider": name the plugin, and what to use instead.
                        NotSupportedException named = new NotSupportedException(declaresIpc
                                ? "plugin '" + plugin + "' declares IPC, but its memory provider refused to export a chunk: "
                                        + e.getMessage() + ". That is the plugin's fault (the TCK's MemoryProviderContract "
                                        + "shows it): report it to the plugin's authors; meanwhile allocate shared regions from "
                                        + "another plugin's pool"
                                : "plugin '" + plugin + "' exports no IPC handles "
                                + "(capability IPC): " + e.getMessage() + ". Its regions serve this process only; to share memory "
                                + "with another process, allocate from the pool of a plugin that declares IPC ('conduit info' lists "
                                + "each plugin's capabilities)");
                        named.initCause(e);
                        throw named;
                    } catch (IllegalStateException e) {
                        IllegalStateException refused = chunk.freeRefused;
                        if (refused == null) throw PluginRecord.failed(plugin, "its memory provider's export()", e);
                        // devdax exports no chunk whose free it refused: its table entry, which importers check, is cleared.
                        throw new IllegalStateException("cannot export this region: plugin '" + plugin + "' refused to free its chunk "
                                + "at the region's close (" + refused.getMessage() + "), which revoked the chunk's export, and it "
                                + "exports the chunk no more: " + e.getMessage() + ". Close the region again once no thread is in "
                                + "a native call on its memory, and share a region allocated afresh", e);
                    } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                        throw PluginRecord.failed(plugin, "its memory provider's export()", e);
                    }
                    if (payload == null || payload.length == 0 || payload.length > IpcHandle.MAX_PAYLOAD) {
                        // Whose fault it is, as for a chunk of the wrong size: "an export payload of null" read as a matter of length.
                        // An empty one names no chunk: each importer would fail on it in turn, never saying whose fault it is.
                        throw new ConduitException("plugin '" + plugin + "' " + (payload == null
                                ? "returned null from its memory provider's export(), which returns the chunk's payload or throws"
                                : payload.length == 0
                                ? "made an empty export payload, which names nothing for an importer to map; an export payload "
                                        + "has 1 to " + IpcHandle.MAX_PAYLOAD + " bytes (MemoryProvider.MAX_EXPORT_LENGTH)"
                                : "made an export payload of " + payload.length + " bytes; at most " + IpcHandle.MAX_PAYLOAD
                                        + " allowed (MemoryProvider.MAX_EXPORT_LENGTH)")
                                + ": that is the plugin's fault (the TCK's MemoryProviderContract shows it); report it to the plugin's "
                                + "authors, and meanwhile allocate shared regions from another plugin's pool");
                    }
                    export = new PooledChunk.ChunkExport(++lastExportId, payload.clone());
                    chunk.export = export;
                    first = true;
                }
            } finally {
                providerLock.unlock();
            }
        }
        IpcEvents.Export event = new IpcEvents.Export();
        if (event.shouldCommit()) {
            event.plugin = plugin;
            event.exportId = export.exportId();
            event.chunkLength = chunk.segment.byteSize();
            event.firstExport = first;
            event.commit();
        }
        return new IpcHandle(plugin, originHigh, originLow, export.exportId(), chunk.segment.byteSize(), offset, length,
                export.payload()).encode();
    }

    void ensureOpen() {
        if (closed) throw new IllegalStateException("pool of plugin '" + plugin + "' is closed (by its own close or its Conduit's): "
                + "allocate from another pool of an open Conduit (Conduit.pool)");
    }

    /**
     * For an export of a region of this pool: a closed pool freed the region, so the remedy is not another pool's
     * allocation (the message {@link #ensureOpen()} gives) but an export made while the pool is open.
     */
    void ensureOpenToExport() {
        if (closed) {
            throw new IllegalStateException("region's pool of plugin '" + plugin + "' is closed, which freed the region: export a "
                    + "region while its pool, and its Conduit, are open, and keep them open while it is shared");
        }
    }

    boolean isOpen() {
        return !closed;
    }

    /** Says the plugin, and whether it is closed, for logs; never throws. */
    @Override
    public String toString() {
        return "Pool[" + plugin + (closed ? ", closed" : "") + "]";
    }

    @Override
    public void close() {
        // One close at a time, and until the provider's close succeeded, every close tries it again: a provider whose
        // memory is still in use (another thread inside a native call on it) refuses to close, and may keep a resource
        // that others must not take meanwhile (devdax keeps its device locked).
        synchronized (closeLock) {
            providerLock.lock();
            try {
                if (providerClosed) return;
                closed = true;
                dedicated.clear();
            } finally {
                providerLock.unlock();
            }
            try {
                provider.close();
            } catch (IllegalStateException refused) { // in use: every close tries again
                throw refused;
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): named, as Pool.close declares none
                throw PluginRecord.failed(plugin, "its memory provider's close()", e);
            }
            providerClosed = true;
            // Only now: a pool whose provider refused to close stays with its Conduit, whose close tries it again.
            onClose.accept(this);
        }
    }
}
