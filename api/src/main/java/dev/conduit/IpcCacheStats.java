package dev.conduit;

import java.time.Duration;

/**
 * A snapshot of the IPC-handle cache ({@link Conduit#ipcCacheStats()}, {@code conduit info}).
 *
 * @param hits         opens served from the cache, with no system call
 * @param misses       opens that mapped a chunk
 * @param evictions    entries evicted because of a bound: unmapped then, or, if regions were open on one (opened again
 *                     by a hit after it was unused), when the last of them closes; and entries unmapped because no
 *                     region used them for {@code ipc.cache.idle}
 * @param mappedBytes  bytes currently mapped by the cache, in use or not
 * @param entries      chunks currently mapped
 * @param entriesInUse chunks with at least one open {@link ImportedRegion} or {@link PeerRegion} (a peer region of
 *                     a worker of this {@code Conduit} is mapped through the same cache)
 * @param maximumBytes the bound on bytes kept mapped for no open region ({@code ipc.cache.bytes})
 * @param maximumEntries the bound on chunks kept mapped for no open region ({@code ipc.cache.entries})
 * @param idle         how long a chunk no region uses stays mapped, at most twice this ({@code ipc.cache.idle})
 */
public record IpcCacheStats(long hits, long misses, long evictions, long mappedBytes, long entries, long entriesInUse,
                            long maximumBytes, long maximumEntries, Duration idle) {
}
