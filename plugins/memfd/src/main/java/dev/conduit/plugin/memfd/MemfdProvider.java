package dev.conduit.plugin.memfd;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Seals;
import dev.conduit.shm.CgroupMemory;
import dev.conduit.shm.DirectoryIdentity;
import dev.conduit.shm.HugePages;
import dev.conduit.shm.Meminfo;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static dev.conduit.linux.MemfdFlags.MFD_ALLOW_SEALING;
import static dev.conduit.linux.MemfdFlags.MFD_HUGETLB;
import static dev.conduit.linux.MmapFlags.MAP_SHARED;
import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;

/**
 * The memfd plugin's memory provider. Each chunk is a {@code memfd_create} file, sized with
 * {@code ftruncate} and sealed with {@code F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL} before anyone
 * else can see it, so no process that receives it can change its size and make other mappings
 * fault with {@code SIGBUS}. It is mapped {@code MAP_SHARED} into a shared arena of its own, and
 * its descriptor stays open for the {@link FdServer} to pass on.
 *
 * <p>With {@code memfd.hugepages} {@code try} or {@code yes} (a pool's provider only, never the
 * transport's) a chunk is a {@code MFD_HUGETLB} memfd of the kernel's default huge page size,
 * which is then the provider's {@link #pageSize()}. Its pages are all taken at allocation with
 * {@code fallocate}: a hugetlb {@code MAP_SHARED} mapping reserves pages from the pool at
 * {@code mmap}, but a cgroup's {@code hugetlb} limit is charged at the first touch and answers a
 * page past it with {@code SIGBUS}; {@code fallocate} fails with {@code ENOSPC} instead, and
 * nothing is ever mapped {@code MAP_NORESERVE}. A chunk that gets no huge pages fails, naming the
 * errno, the key and the remedy ({@code yes}), or is made of normal pages, said once at
 * {@code INFO} ({@code try}). Importers map the passed descriptor as any other: the file's size
 * is a multiple of the huge page size, so the handle carries nothing more.
 *
 * <p>Nothing is published in the shared directory but the provider's lease
 * ({@code conduit-memfd-<owner>.lease}) and, from the first export on, the fd server's socket.
 * Opening reclaims the sockets and leases of providers that died without closing.
 *
 * <p>Thread-safe: every operation holds the provider's monitor (the runtime serializes calls
 * anyway; the monitor makes the {@code MULTI} claim true). The fd server runs on its own thread
 * and coordinates with {@link #free} through {@link FdServer#revoke}.
 */
final class MemfdProvider implements MemoryProvider {

    /**
     * The smallest page size of the supported architectures (x86-64 always, aarch64 at least).
     * The kernel aligns every mapping to its own page size, which is a multiple of this, so the
     * contract holds on kernels with larger pages too; chunks there just round up internally.
     */
    static final long PAGE_SIZE = 4096;
    /** Shown in {@code /proc/<pid>/maps} and {@code /proc/<pid>/fd} as {@code memfd:conduit-memfd-chunk}. */
    static final String MEMFD_NAME = "conduit-memfd-chunk";
    /** Where the kernel says how much memory is available ({@link #checkAvailableMemory}). */
    private static final Path MEMINFO = Meminfo.PATH;
    /** Where ZFS says how large its ARC is, and how far it shrinks, on a host that has it. */
    private static final Path ARCSTATS = Path.of("/proc/spl/kstat/zfs/arcstats");

    private final Libc libc;
    /** {@code memfd.hugepages} as it applies here: {@code NO} also where {@code try} found no huge pages at all. */
    private final HugePages.Mode hugePages;
    /** {@link #PAGE_SIZE}, or the huge page size when {@link #hugePages} is not {@code NO}. */
    private final long pageSize;
    /** Whether {@code try} said that a chunk fell back to normal pages: once per provider. */
    private boolean fallbackSaid;
    private final SharedDirectory directory;
    /** Which directory that is, as handles carry it: an import that finds no socket says whether it looked there. */
    private final DirectoryIdentity directoryIdentity;
    private final OwnerLease lease;
    private final Set<Integer> allowedUids;
    private final long serverTimeoutNanos;
    private final System.Logger logger;
    /**
     * Whether this is a transport's provider, whose chunks are workers' receive queues and
     * connections' bounce rings: a failed allocation names the keys that size those, not the pool's.
     */
    private final boolean transports;
    private final Set<MemfdChunk> chunks = new HashSet<>();
    /**
     * Chunks a close could not unmap (another thread was inside a native call on them), their
     * tokens revoked and memfds closed: a later close unmaps them, as the runtime's pool tries a
     * refused close again.
     */
    private final List<MemfdChunk> unmapLater = new ArrayList<>();
    private FdServer server;
    private boolean closed;

    private MemfdProvider(Libc libc, HugePages.Mode hugePages, long pageSize, SharedDirectory directory, OwnerLease lease,
                          Set<Integer> allowedUids, long serverTimeoutNanos, System.Logger logger, boolean transports) {
        this.libc = libc;
        this.hugePages = hugePages;
        this.pageSize = pageSize;
        this.directory = directory;
        this.directoryIdentity = DirectoryIdentity.of(libc, directory.fd());
        this.lease = lease;
        this.allowedUids = allowedUids;
        this.serverTimeoutNanos = serverTimeoutNanos;
        this.logger = logger;
        this.transports = transports;
    }

    /**
     * A pool's provider: opens the shared directory, removes what dead providers left in it, and
     * takes a lease. The fd server starts with the first export. Its chunks are huge pages as
     * {@code memfd.hugepages} says.
     *
     * @throws ConduitException with {@code memfd.hugepages=yes} on a kernel without huge pages
     */
    static MemfdProvider open(Libc libc, PluginContext context) {
        return open(libc, context, context.config().get(MemfdConfig.HUGEPAGES), false);
    }

    /**
     * A transport's provider, for its workers' receive queues and connections' bounce rings: as
     * {@link #open(Libc, PluginContext)}, of normal pages whatever {@code memfd.hugepages} says.
     */
    static MemfdProvider openForTransport(Libc libc, PluginContext context) {
        return open(libc, context, HugePages.Mode.NO, true);
    }

    private static MemfdProvider open(Libc libc, PluginContext context, HugePages.Mode hugePages, boolean transports) {
        // Configuration first: a bad value fails before anything is opened.
        HugePages.Mode mode = hugePages;
        long pageSize = PAGE_SIZE;
        if (mode != HugePages.Mode.NO) {
            HugePages pool = HugePages.read(MEMINFO);
            String refused = refusalOfHugePages(mode, pool);
            if (refused != null) throw new ConduitException(refused);
            if (pool.supported()) {
                pageSize = pool.pageSize();
            } else {
                context.logger().log(System.Logger.Level.INFO, "memfd.hugepages=try: this pool's chunks take normal pages, as "
                        + "this kernel has no huge pages (" + pool.describe() + ")");
                mode = HugePages.Mode.NO;
            }
        }
        Set<Integer> allowedUids = MemfdConfig.allowedUids(context.config());
        long serverTimeoutNanos = MemfdConfig.serverTimeoutNanos(context.config());
        SharedDirectory directory = SharedDirectory.open(libc, context.sharedDirectory(), MemfdConfig.SHARED_DIR_KEY);
        try {
            OwnerLease.reclaimDeadOrWarn(libc, directory, FdProtocol.FILE_PREFIX, context.logger());
            OwnerLease lease = OwnerLease.acquire(libc, directory, FdProtocol.FILE_PREFIX, context.logger());
            try {
                return new MemfdProvider(libc, mode, pageSize, directory, lease, allowedUids, serverTimeoutNanos, context.logger(),
                        transports);
            } catch (RuntimeException | Error e) {
                // Left locked, the lease would pass for a live owner's to every reclaim and conduit info.
                Cleanup.run(e, lease::close);
                throw e;
            }
        } catch (RuntimeException | Error e) {
            try {
                directory.close();
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /**
     * Why a pool with {@code mode} cannot open on a kernel whose huge pages are {@code pool}, with
     * the key and the remedy; null when it can. Only {@code yes} on a kernel without huge pages:
     * the pool's opening throws it, and the probe rules memory out with it.
     */
    static String refusalOfHugePages(HugePages.Mode mode, HugePages pool) {
        if (mode != HugePages.Mode.YES || pool.supported()) return null;
        return "memfd.hugepages=yes, but this kernel has no huge pages: " + pool.describe()
                + "; set memfd.hugepages=try to fall back to normal pages, or no";
    }

    /** 4 KiB, or with {@code memfd.hugepages} {@code try} or {@code yes} the kernel's default huge page size. */
    @Override
    public long pageSize() {
        return pageSize;
    }

    @Override
    public synchronized Chunk allocate(long size) {
        ensureOpen();
        if (size <= 0 || size % pageSize != 0) {
            throw new IllegalArgumentException("chunk size " + size + " is not a positive multiple of the page size " + pageSize);
        }
        MemfdChunk chunk = hugePages == HugePages.Mode.NO ? null : allocateHuge(size);
        if (chunk == null) {
            checkAvailableMemory(size);
            FileDescriptor memfd = create(size);
            Arena arena = Arena.ofShared();
            try {
                // At the pool's page size, which is the huge page's when huge pages were asked for: a chunk of normal pages that
                // memfd.hugepages=try fell back to is aligned as a huge-page chunk would be, or Pool.allocate's alignments up to
                // that size would not hold (the runtime refuses such a chunk; until 2026-12-07 every allocation of such a pool failed).
                MemorySegment mapped = pageSize > PAGE_SIZE
                        ? libc.mmapAligned(memfd, 0, size, pageSize, PROT_READ | PROT_WRITE, MAP_SHARED, arena)
                        : libc.mmap(memfd, 0, size, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
                chunk = new MemfdChunk(this, memfd, arena, mapped);
            } catch (ErrnoException e) {
                arena.close();
                memfd.closeAfter(e);
                throw allocationFailure(size, e);
            } catch (RuntimeException | Error e) {
                arena.close();
                memfd.closeAfter(e);
                throw e;
            }
        }
        chunks.add(chunk);
        return chunk;
    }

    /**
     * A chunk of huge pages, every one taken now ({@code fallocate}) so that no touch can fault
     * with {@code SIGBUS}; with {@code try}, null when the kernel or the pool refuses huge pages
     * ({@link #refusesHugePages}), said once. Any other failure (out of descriptors, a mapping
     * that finds no address space) is thrown as a chunk of normal pages throws it, in either
     * mode: normal pages would meet it too, and no huge page ran short. The memory and cgroup
     * checks of normal pages do not apply: huge pages are reserved apart from free memory, and
     * the memory cgroup does not charge them.
     */
    private MemfdChunk allocateHuge(long size) {
        FileDescriptor memfd = null;
        Arena arena = null;
        try {
            memfd = libc.memfdCreate(MEMFD_NAME, MFD_ALLOW_SEALING | MFD_HUGETLB);
            libc.ftruncate(memfd, size);
            libc.addSeals(memfd, Seals.FIXED_SIZE);
            libc.fallocate(memfd, 0, size);
            arena = Arena.ofShared();
            return new MemfdChunk(this, memfd, arena, libc.mmap(memfd, 0, size, PROT_READ | PROT_WRITE, MAP_SHARED, arena));
        } catch (ErrnoException e) {
            if (arena != null) arena.close();
            if (memfd != null) memfd.closeAfter(e);
            if (!refusesHugePages(e)) throw allocationFailure(size, e);
            return hugePagesRefused(size, e);
        } catch (RuntimeException | Error e) {
            if (arena != null) arena.close();
            if (memfd != null) memfd.closeAfter(e);
            throw e;
        }
    }

    /**
     * Whether {@code e} is the kernel or the pool refusing huge pages: the pool short, or a
     * cgroup's hugetlb limit, at {@code fallocate} ({@code ENOSPC}, {@code ENOMEM}); a kernel that
     * cannot make a hugetlb memfd ({@code EINVAL}; {@code ENOSYS} without hugetlbfs, {@code ENODEV}
     * or {@code ENOENT} without the default size's pool or mount) or size or seal one
     * ({@code EINVAL}). Until 2026-12-07 every errno was taken for such a refusal: an {@code mmap}
     * without address space was said to lack huge pages, naming a sysctl that changes nothing
     * ({@code MemfdHugePagesTest#withYesAChunkWhoseMappingFindsNoAddressSpaceIsNotSaidToLackHugePages}), and
     * with {@code try} a {@code memfd_create} out of descriptors logged, and spent, the INFO that
     * chunks take normal pages
     * ({@code MemfdHugePagesTest#withTryAChunkRefusedForWantOfDescriptorsIsNotSaidToTakeNormalPages}).
     */
    private static boolean refusesHugePages(ErrnoException e) {
        return switch (e.call()) {
            case "fallocate" -> e.errno() == Errno.ENOSPC || e.errno() == Errno.ENOMEM;
            case "memfd_create" -> e.errno() == Errno.EINVAL || e.errno() == Errno.ENOSYS || e.errno() == Errno.ENODEV
                    || e.errno() == Errno.ENOENT;
            case "ftruncate", "fcntl" -> e.errno() == Errno.EINVAL;
            default -> false;
        };
    }

    /** Throws, with {@code yes}, the failure of a chunk of huge pages; says it once, with {@code try}, and returns null. */
    private MemfdChunk hugePagesRefused(long size, ErrnoException e) {
        String why = hugePagesFailure(size, e);
        if (hugePages == HugePages.Mode.YES) {
            throw new ConduitException("cannot allocate a memfd chunk of " + size + " bytes in huge pages (memfd.hugepages=yes): " + why, e);
        }
        if (!fallbackSaid) {
            fallbackSaid = true;
            logger.log(System.Logger.Level.INFO, "memfd.hugepages=try: a chunk of " + size + " bytes takes normal pages, as will "
                    + "later ones that find no huge pages (said once): " + why);
        }
        return null;
    }

    /** The errno of a chunk of huge pages the kernel refused, what it means there, and the remedy. */
    private String hugePagesFailure(long size, ErrnoException e) {
        HugePages pool = HugePages.read(MEMINFO);
        String what = switch (e.errno()) {
            case Errno.ENOSPC, Errno.ENOMEM -> pool.shortage(size / pageSize) + "; " + pool.remedy(size / pageSize, "set memfd.hugepages=try to fall back to normal pages, or memfd.hugepages=no");
            case Errno.EINVAL -> e.call().equals("fcntl")
                    ? "this kernel cannot seal a hugetlb memfd (Linux 4.16 or later can); set memfd.hugepages=no"
                    : "this kernel refuses a hugetlb memfd of this size (MFD_HUGETLB needs Linux 4.14 or later and hugetlbfs); "
                    + "set memfd.hugepages=no";
            default -> Errno.remedy(e.errno(), "see the cause");
        };
        return e.getMessage() + "; " + what;
    }

    /**
     * Refuses a chunk larger than the memory and swap available now ({@code MemAvailable} plus
     * {@code SwapFree}, plus what ZFS's ARC would give back): a memfd takes its pages as they are
     * first written, and a write past what memory holds fails nothing but has the kernel's OOM
     * killer end a process, often this one (ftruncate and mmap reserve nothing; fallocate would,
     * but takes every page at once, also those of a chunk written sparsely). Like posix's
     * free-space check, it catches a chunk that cannot fit, not every overcommit: it cannot see the
     * pages that chunks already mapped take later. The same goes for this process's memory cgroup
     * (a container's limit, which meminfo does not show), whose OOM killer ends a process of the
     * container: a chunk larger than what it lets the process take now is refused too. Where the
     * kernel does not say, nothing is checked.
     */
    private static void checkAvailableMemory(long size) {
        Meminfo meminfo = Meminfo.read(MEMINFO);
        long available = availableMemory(meminfo, ARCSTATS);
        if (available >= 0 && size > available) {
            throw new ConduitException("cannot allocate a memfd chunk of " + size + " bytes: only " + available + " bytes of memory "
                    + "available (MemAvailable plus SwapFree in " + MEMINFO + ", and what a ZFS ARC would give back). A memfd takes "
                    + "its pages from memory as they are first written, and past what memory holds the kernel's OOM killer ends a "
                    + "process rather than fail the write: free memory or add swap, or allocate less (smaller regions; "
                    + "pool.chunk.size, memfd.queue.size and memfd.bounce.size size what Conduit allocates itself)");
        }
        CgroupMemory.check(size, "a memfd chunk", "smaller regions; pool.chunk.size, memfd.queue.size and memfd.bounce.size size what "
                + "Conduit allocates itself", meminfo::swapFree);
    }

    /**
     * {@code MemAvailable} plus {@code SwapFree} in bytes, as {@code meminfo} gives them, plus the
     * part of a ZFS ARC above its minimum ({@code size - c_min} in {@code arcstats}, when there is
     * one): the kernel does not count the ARC as available (openzfs/zfs#10255), though ZFS shrinks
     * it under memory pressure, and on a host whose ARC held most of the memory a chunk that fit
     * was refused. -1 when {@code meminfo} does not say.
     */
    static long availableMemory(Meminfo meminfo, Path arcstats) {
        return meminfo.available() < 0 ? -1 : meminfo.available() + Math.max(0, meminfo.swapFree()) + reclaimableArc(arcstats);
    }

    /** What a ZFS ARC holds above its minimum, from {@code arcstats} ("size 4 N", "c_min 4 N"); 0 without one. */
    private static long reclaimableArc(Path arcstats) {
        if (!Files.isReadable(arcstats)) return 0;
        long size = -1;
        long minimum = -1;
        try {
            for (String line : Files.readAllLines(arcstats)) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length != 3) continue;
                if (fields[0].equals("size")) size = Long.parseLong(fields[2]);
                else if (fields[0].equals("c_min")) minimum = Long.parseLong(fields[2]);
            }
        } catch (IOException | NumberFormatException e) {
            return 0; // not as ZFS writes it: the check then counts what the kernel says, as without ZFS
        }
        return size < 0 || minimum < 0 ? 0 : Math.max(0, size - minimum);
    }

    /** A sealed memfd of {@code size} bytes, of normal pages. */
    private FileDescriptor create(long size) {
        FileDescriptor memfd;
        try {
            memfd = libc.memfdCreate(MEMFD_NAME, MFD_ALLOW_SEALING);
        } catch (ErrnoException e) {
            throw allocationFailure(size, e);
        }
        try {
            libc.ftruncate(memfd, size);
            libc.addSeals(memfd, Seals.FIXED_SIZE);
            return memfd;
        } catch (ErrnoException e) {
            memfd.closeAfter(e);
            throw allocationFailure(size, e);
        } catch (RuntimeException | Error e) {
            memfd.closeAfter(e);
            throw e;
        }
    }

    private ConduitException allocationFailure(long size, ErrnoException e) {
        String remedy = switch (e.errno()) {
            // A transport's chunk is one per worker (its queue) or per connection (its ring), whatever its size: no key
            // makes fewer of them, and pool.chunk.size, which the pool's remedy names, sizes none of them.
            case Errno.EMFILE, Errno.ENFILE -> ": " + Errno.shortageRemedy(e.errno()) + (transports
                    ? "; every worker's receive queue and every connection's bounce ring keeps a descriptor open"
                    : "; every memfd chunk keeps a descriptor open, so larger chunks (pool.chunk.size) need fewer");
            case Errno.ENOMEM -> ": not enough memory, address space or mappings; " + (transports
                    ? "raise the address-space limit (ulimit -v, RLIMIT_AS) or vm.max_map_count, or make memfd.bounce.size and "
                    + "memfd.queue.size smaller"
                    : "free chunks, or raise the address-space limit (ulimit -v, RLIMIT_AS) or vm.max_map_count");
            default -> "";
        };
        return new ConduitException("cannot allocate a memfd chunk of " + size + " bytes: " + e.getMessage() + remedy, e);
    }

    @Override
    public synchronized byte[] export(Chunk chunk) {
        ensureOpen();
        MemfdChunk memfdChunk = live(chunk, "export");
        byte[] payload = memfdChunk.payload();
        if (payload == null) {
            lease.warnOnceIfRemoved("memfd: this process's pool", "Its exports work on while its fd server's socket is there, but "
                    + "should this process die, no Conduit process reclaims that socket in " + directory.path() + ", since no lease "
                    + "names it. Close the pool and open a new one, whose lease covers its socket");
            if (server == null) {
                server = FdServer.start(libc, directory, lease, allowedUids, serverTimeoutNanos, logger);
            }
            byte[] token = server.publish(memfdChunk);
            payload = new MemfdPayload(server.socketName(), token, directoryIdentity).encode();
            memfdChunk.payload(payload);
        }
        return payload.clone();
    }

    /**
     * Revokes the chunk's token, unmaps it here and closes its memfd. Importers that already hold
     * the descriptor or a mapping keep them; new imports get "export gone". After {@link #close()},
     * which freed every chunk, this does nothing for a chunk of this provider, as posix's and
     * devdax's free.
     *
     * @throws IllegalArgumentException if {@code chunk} is not a live chunk of this provider (before its close: freed
     *                                  already; at any time: another provider's)
     * @throws IllegalStateException    if another thread still uses the chunk's memory (a futex wait on
     *                                  it, say): the chunk is then still allocated, its exports
     *                                  revoked (a later {@link #export} publishes it under a new token)
     */
    @Override
    public synchronized void free(Chunk chunk) {
        if (closed && chunk instanceof MemfdChunk own && own.provider() == this) return;
        MemfdChunk memfdChunk = live(chunk, "free");
        try {
            release(memfdChunk);
        } finally {
            // Unmapped, the chunk is gone whatever the memfd's close said (the descriptor is closed all the same): kept, every
            // later free and the close met its closed arena ("Already closed"), which the runtime takes for a busy chunk.
            if (!memfdChunk.arena().scope().isAlive()) chunks.remove(memfdChunk);
        }
    }

    private void release(MemfdChunk chunk) {
        if (server != null) {
            server.revoke(chunk);
        }
        chunk.payload(null);
        // Unmap before closing the descriptor: if the arena cannot close yet, the chunk stays
        // whole and can be freed again later.
        chunk.arena().close();
        chunk.memfd().close();
    }

    private MemfdChunk live(Chunk chunk, String operation) {
        if (chunk instanceof MemfdChunk memfdChunk && chunks.contains(memfdChunk)) {
            return memfdChunk;
        }
        throw new IllegalArgumentException("cannot " + operation + " " + chunk + ": not a live chunk of this memfd provider"
                + " (freed already, or allocated by another provider)");
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("this memfd provider is closed");
        }
    }

    /**
     * Stops the fd server and removes its socket, frees every chunk, then releases the lease.
     * Every step runs even if an earlier one fails; the first failure is thrown with the others
     * suppressed. A chunk that could not be unmapped (another thread inside a native call on it)
     * is unmapped by the next close. A socket that could not be removed keeps the lease, unlocked,
     * for the next reclaim in the directory to remove both ({@link OwnerLease#close}, which warns
     * naming the socket and the errno). Idempotent.
     */
    @Override
    public synchronized void close() {
        RuntimeException failure = null;
        if (closed) {
            if (unmapLater.isEmpty()) {
                return;
            }
            for (MemfdChunk chunk : unmapLater) {
                failure = Cleanup.collect(failure, chunk.arena()::close);
            }
            unmapLater.removeIf(chunk -> !chunk.arena().scope().isAlive());
            if (failure != null) throw failure;
            return;
        }
        closed = true;
        if (server != null) {
            failure = Cleanup.collect(failure, server::close);
        }
        for (MemfdChunk chunk : chunks) {
            failure = Cleanup.collect(failure, () -> release(chunk));
            // If the mapping could not be closed, the descriptor still must be: the lease goes, and no token reaches it.
            failure = Cleanup.collect(failure, chunk.memfd()::close);
            if (chunk.arena().scope().isAlive()) {
                unmapLater.add(chunk);
            }
        }
        chunks.clear();
        failure = Cleanup.collect(failure, lease::close);
        failure = Cleanup.collect(failure, directory::close);
        if (failure != null) throw failure;
    }


    /** The fd server once started, for tests; {@code null} before the first export. */
    synchronized FdServer server() {
        return server;
    }
}
