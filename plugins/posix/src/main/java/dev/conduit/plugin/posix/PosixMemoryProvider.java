package dev.conduit.plugin.posix;

import dev.conduit.linux.PageSize;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.FileSystemSpace;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
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

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Chunks as files in the chunk directory ({@code posix.dir}, else {@code shared.dir}), which any
 * process of the same user that sees the directory can map by name.
 *
 * <p>Every chunk is a new file {@code conduit-posix-<owner>-<random>.chunk}: created {@code 0600}
 * with {@code O_EXCL|O_NOFOLLOW} (a planted file or link is refused, never reused), sized with
 * {@code ftruncate} (so it reads as zeros and takes memory only as pages are touched), mapped
 * {@code MAP_SHARED} into a shared arena of its own, and its descriptor closed at once. Its export
 * is the name, and the file's device and inode, which an importer finds under the name or refuses
 * what it finds ({@link ExportPayload}). {@link #free(Chunk)} unlinks the file and unmaps it:
 * a later import of its export fails with "export gone", while mappings that peers already hold
 * stay valid until they unmap.
 *
 * <p><b>Ownership and reclaim.</b> The provider holds an {@link OwnerLease} ({@code flock} on
 * {@code conduit-posix-<owner>.lease}) for its whole life; every chunk name carries the owner id.
 * When it opens, a provider removes the files of every owner whose lease it can lock, i.e. of
 * processes that died without closing (a crash, {@code kill -9}): the kernel dropped their lock.
 * The files of a dead producer are therefore removed by the next provider that opens on the same
 * directory, not at the moment of death. So are those a close could not remove (an unlink that
 * fails: the directory's permissions or mount changed while in use): the close then keeps the
 * lease, unlocked, and says so in a WARNING ({@link OwnerLease#close}), where removing it would
 * have left those files with no lease to name them, for good.
 *
 * <p><b>Space.</b> On a tmpfs a page is allocated when first touched; when the file system is full
 * then, the touching process gets {@code SIGBUS}. {@link #allocate(long)} therefore refuses a
 * chunk larger than the directory's free space, with a message that says how to get more. The
 * check cannot see pages that mapped but untouched chunks will take later, so it catches an
 * undersized directory (a container's 64 MiB {@code /dev/shm}), not every overcommit. A file
 * system that reports no size (ramfs; a tmpfs mounted {@code size=0}, which has no limit) has no
 * free space to check. On tmpfs
 * or ramfs it also refuses a chunk larger than what this process's memory cgroup lets it
 * take ({@link CgroupMemory}): a container's {@code /dev/shm} may be larger than its memory limit,
 * whose OOM killer, not {@code SIGBUS}, then meets the touching process. Nor can it
 * tell that the space is taken by chunks already freed: an unlinked file's pages stay while any
 * process maps it, and an importer's IPC cache keeps unused imports mapped (up to its
 * {@code ipc.cache.bytes}, each for up to twice its {@code ipc.cache.idle}), so the refusal says so ({@link #FREED_BUT_MAPPED}).
 *
 * <p><b>Huge pages.</b> A chunk directory on a hugetlbfs mount makes every chunk huge pages of the
 * mount's size: the provider's {@link #pageSize()} is then the file system's block size (the
 * mount's huge page size), the free-space check is skipped (a hugetlbfs mounted without
 * {@code size=} reports no space at all), and each chunk's pages are all taken by {@code fallocate}
 * when it is allocated, before it is mapped, so that a pool short of pages, or a cgroup's hugetlb
 * limit (charged at the first touch, past which a touch gets {@code SIGBUS}), fails the allocation
 * with {@code ENOSPC}, naming {@code vm.nr_hugepages} and the directory's key. The directory is the
 * choice: no key says it, and the transport's files cannot live there ({@link PosixPlugin#openTransport}).
 *
 * <p>Thread-safe: state changes are guarded by one lock, system calls run outside it. Allocations
 * and frees run beside each other; {@link #close()} waits for those under way, as it closes the
 * directory's descriptor they create and remove files through.
 */
final class PosixMemoryProvider implements MemoryProvider {

    /** Prefix of every file this plugin creates, and of the leases {@link OwnerLease#reclaimDead} looks at. */
    static final String FILE_PREFIX = "conduit-posix";
    static final String CHUNK_SUFFIX = ".chunk";
    /**
     * Why a directory can be full of no files: an unlinked chunk's pages stay until the last
     * mapping of it goes, and importers' IPC caches keep unused imports mapped.
     */
    static final String FREED_BUT_MAPPED = "Chunks freed here keep their space while another process still maps them: each importing "
            + "Conduit's IPC cache keeps up to ipc.cache.bytes (1 GiB by default) of unused imports mapped, each until it has been "
            + "unused for ipc.cache.idle (1m by default), so retry after that, or lower ipc.cache.bytes or ipc.cache.idle "
            + "in the importing processes where this directory is small (docs/runtime.md, \"Consumer-only import and the IPC cache\")";

    private final Libc libc;
    private final SharedDirectory directory;
    private final String directoryKeys;
    private final OwnerLease lease;
    /** File systems whose pages the memory cgroup charges: tmpfs and ramfs, not hugetlbfs (its huge pages are not). */
    private static final java.util.Set<Long> CHARGED_TO_THE_MEMORY_CGROUP = java.util.Set.of(Libc.TMPFS_MAGIC, Libc.RAMFS_MAGIC);
    /** Whether chunks are huge pages: the file system chunks are created on is a hugetlbfs mount. */
    private final boolean hugePages;
    private final long pageSize;
    /** {@link DirectoryProbe#writtenBack} of that file system; null on a memory file system. */
    private final String writtenBack;
    /** {@link DirectoryProbe#acrossKernels} of that file system; null on one no other kernel sees. */
    private final String acrossKernels;
    /** {@code conduit-posix-<owner>-}: the start of this provider's file names, which tells its chunks from others'. */
    private final String ownFilePrefix;
    /** Which directory the chunks are in, as handles carry it: an import that finds no file says whether it looked there. */
    private final DirectoryIdentity directoryIdentity;

    /**
     * Held for reading by {@link #allocate} and {@link #free} while they use the directory's
     * descriptor, for writing by {@link #close()}, which closes it. Without it a close beside an
     * allocation or a free closed the descriptor under it: that failed with "fd N is closed" and
     * left its chunk file in the directory, without a lease (and had the number been reused
     * meanwhile, the call would have created or removed a file in whatever directory had it).
     */
    private final ReentrantReadWriteLock directoryInUse = new ReentrantReadWriteLock();
    private final Object lock = new Object();
    /** Chunks allocated and not freed yet. Guarded by {@link #lock}. */
    private final Set<PosixChunk> live = new HashSet<>();
    /**
     * Chunks a close could not unmap (another thread was inside a native call on them), their files
     * removed: a later close unmaps them, as the runtime's pool tries a refused close again.
     * Guarded by {@link #lock}.
     */
    private final List<PosixChunk> unmapLater = new ArrayList<>();
    /**
     * Chunks still allocated whose free removed their file and was then refused the unmap, with that
     * refusal: an export of one names a file that is gone, so {@link #export} refuses it until a free
     * succeeds. Guarded by {@link #lock}.
     */
    private final Map<PosixChunk, RuntimeException> fileRemovedByARefusedFree = new HashMap<>();
    /** Guarded by {@link #lock}. */
    private boolean closed;

    private PosixMemoryProvider(Libc libc, SharedDirectory directory, String directoryKeys, OwnerLease lease, FileSystemSpace fileSystem) {
        this.libc = libc;
        this.directory = directory;
        this.directoryKeys = directoryKeys;
        this.lease = lease;
        this.hugePages = fileSystem.type() == Libc.HUGETLBFS_MAGIC;
        this.pageSize = hugePages ? fileSystem.blockSize() : PageSize.get();
        this.writtenBack = DirectoryProbe.writtenBack(libc, directory, fileSystem.type());
        this.acrossKernels = DirectoryProbe.acrossKernels(libc, directory, fileSystem.type(), directoryKeys);
        this.ownFilePrefix = FILE_PREFIX + "-" + lease.owner() + "-";
        this.directoryIdentity = DirectoryIdentity.of(libc, directory.fd());
    }

    /**
     * Opens the chunk directory, takes a new owner lease in it and removes the files of dead owners.
     *
     * @throws ConduitException naming the directory, the errno and the key to set; nothing stays open
     */
    static PosixMemoryProvider open(PluginContext context) {
        return open(context, Linux.libc());
    }

    /** {@link #open(PluginContext)} through {@code libc}, which tests may put a fake in front of. */
    static PosixMemoryProvider open(PluginContext context, Libc libc) {
        PosixConfig config = PosixConfig.of(context);
        SharedDirectory directory = SharedDirectory.open(libc, config.directory(), config.directoryKeys());
        try {
            OwnerLease lease = OwnerLease.acquire(libc, directory, FILE_PREFIX, context.logger());
            try {
                OwnerLease.reclaimDeadOrWarn(libc, directory, FILE_PREFIX, context.logger());
                return new PosixMemoryProvider(libc, directory, config.directoryKeys(), lease, fileSystem(libc, directory, config));
            } catch (RuntimeException | Error e) {
                Cleanup.run(e, lease::close); // a close that fails too must not take the place of the cause
                throw e;
            }
        } catch (RuntimeException | Error e) {
            Cleanup.run(e, directory::close);
            throw e;
        }
    }

    /**
     * The file system chunks are created on: of the directory's descriptor, not its path, whose kind and page size
     * are the chunks', where a file system mounted over the path since the descriptor was opened (or the directory
     * moved) has the path name another one.
     */
    private static FileSystemSpace fileSystem(Libc libc, SharedDirectory directory, PosixConfig config) {
        try {
            return libc.fileSystemSpace(directory.fd());
        } catch (ErrnoException e) {
            throw new ConduitException("cannot tell the file system of the chunk directory " + directory.path() + ", whether its "
                    + "chunks are huge pages and of what size: " + e.getMessage() + "; set " + config.directoryKeys()
                    + " to a directory on a local file system", e);
        }
    }

    /**
     * Whether a file system whose size ({@code statfs}) is {@code totalSpace} bytes has no size limit: ramfs, and a tmpfs
     * mounted {@code size=0}, report no blocks at all. They have no limit, not no room: only memory, and the memory
     * cgroup ({@link CgroupMemory}), bounds them.
     */
    static boolean hasNoSizeLimit(long totalSpace) {
        return totalSpace == 0;
    }

    /** Whether chunks are huge pages: the chunk directory is a hugetlbfs mount. */
    boolean hugePages() {
        return hugePages;
    }

    /** The chunk directory, as this process sees it. */
    Path directory() {
        return directory.path();
    }

    /** The keys that name the chunk directory, for messages. */
    String directoryKeys() {
        return directoryKeys;
    }

    /** {@link DirectoryProbe#writtenBack} of the file system chunks are created on; null on a memory file system. */
    String fileSystemWrittenBack() {
        return writtenBack;
    }

    /** {@link DirectoryProbe#acrossKernels} of the file system chunks are created on; null on one no other kernel sees. */
    String acrossKernels() {
        return acrossKernels;
    }

    @Override
    public long pageSize() {
        return pageSize;
    }

    /**
     * Creates, sizes and maps a new chunk file.
     *
     * @throws IllegalArgumentException if {@code size} is not a positive multiple of {@link #pageSize()}
     * @throws IllegalStateException    if the provider is closed
     * @throws ConduitException         naming the file, the system call, the errno and the remedy;
     *                                  no file, descriptor or mapping is left behind
     */
    @Override
    public Chunk allocate(long size) {
        if (size <= 0 || size % pageSize != 0) {
            throw new IllegalArgumentException("chunk size " + size + " is not a positive multiple of the page size " + pageSize);
        }
        directoryInUse.readLock().lock();
        try {
            ensureOpen(); // and open until this returns: close waits
            lease.warnOnceIfRemoved("posix: this process's pool", "Its chunks work on, but should this process die, no Conduit "
                    + "process reclaims the chunk files it made in " + directory.path() + ", since no lease names them (remove "
                    + ownFilePrefix + "* by hand then). Close the pool and open a new one, whose lease covers its chunks");
            checkFreeSpace(size);
            String name = lease.newFileName(CHUNK_SUFFIX);
            Path path = directory.path().resolve(name);
            FileDescriptor fd = create(name, path);
            FileMapping mapping = null;
            FileStatus status;
            try {
                try (fd) {
                    status = libc.fstat(fd);
                    size(fd, size, path);
                    mapping = FileMapping.map(libc, fd, size, true, path, directoryKeys, null);
                }
            } catch (RuntimeException | Error e) {
                if (mapping != null) Cleanup.run(e, mapping::close);
                Cleanup.run(e, () -> directory.unlink(name));
                throw e;
            }
            PosixChunk chunk = new PosixChunk(name, status.dev(), status.inode(), mapping);
            synchronized (lock) {
                live.add(chunk);
            }
            return chunk;
        } finally {
            directoryInUse.readLock().unlock();
        }
    }

    private void checkFreeSpace(long size) {
        if (hugePages()) return; // huge pages: fallocate takes them or says ENOSPC
        // Of the descriptor chunks are created through, not of the path: a file system mounted over the path since, or the
        // directory moved, would have the check measure another file system than the one the chunk lands on.
        FileSystemSpace space;
        try {
            space = libc.fileSystemSpace(directory.fd());
        } catch (ErrnoException e) {
            return; // the file system cannot say; mmap and ftruncate will report what they can
        }
        long free = space.availableBytes();
        long total = space.totalBytes();
        // Only the memory cgroup below bounds a file system without a size limit.
        if (!hasNoSizeLimit(total) && free < size) {
            // The size tells a small /dev/shm from a large one that others filled, and so which remedy fits; the keys are the
            // sizes of what Conduit itself puts there, which a small directory can take less of.
            throw new ConduitException("not enough space for a chunk of " + size + " bytes in " + directory.path() + " (a file system of "
                    + total + " bytes): " + free + " bytes free. Free space there, enlarge it (a container's /dev/shm is 64 MiB unless "
                    + "started with e.g. docker run --shm-size=1g), lower what Conduit keeps there (pool.chunk.size, posix.queue.size, "
                    + "posix.bounce.size), or set " + directoryKeys + " to a larger directory. " + FREED_BUT_MAPPED);
        }
        if (CHARGED_TO_THE_MEMORY_CGROUP.contains(space.type())) {
            CgroupMemory.check(size, "a posix chunk in " + directory.path() + " (a file system in memory)", "smaller regions; "
                    + "pool.chunk.size, posix.queue.size and posix.bounce.size size what Conduit allocates itself; or set "
                    + directoryKeys + " to a directory on disk");
        }
    }

    private FileDescriptor create(String name, Path path) {
        try {
            return directory.createExclusive(name);
        } catch (ErrnoException e) {
            String full = e.errnoName().equals("ENOSPC") ? ". " + FREED_BUT_MAPPED : "";
            throw new ConduitException("cannot create chunk file " + path + ": " + e.getMessage() + "; " + directory.creationRemedy(e) + full, e);
        }
    }

    private void size(FileDescriptor fd, long size, Path path) {
        try {
            libc.ftruncate(fd, size);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot size chunk file " + path + " to " + size + " bytes: " + e.getMessage()
                    + "; use smaller chunks (pool.chunk.size) or set " + directoryKeys + " to a file system that holds them", e);
        }
        if (!hugePages()) return;
        try {
            libc.fallocate(fd, 0, size);
        } catch (ErrnoException e) {
            HugePages pool = HugePages.read(Meminfo.PATH);
            String remedy = e.errnoName().equals("ENOSPC") || e.errnoName().equals("ENOMEM")
                    ? pool.shortage(size / pageSize) + " (a hugetlbfs mounted with size= or a page size other than the default is "
                    + "bounded by that instead); " + pool.remedy(size / pageSize, "set " + directoryKeys + " to a tmpfs directory (such as "
                    + "/dev/shm) for normal pages")
                    : "see the cause";
            throw new ConduitException("cannot take the huge pages of chunk file " + path + " (" + directoryKeys + " is a hugetlbfs "
                    + "mount): " + e.getMessage() + "; " + remedy, e);
        }
    }

    /**
     * The payload naming the chunk's file and its directory ({@link ExportPayload}).
     *
     * @throws IllegalStateException if the chunk was freed, or the provider closed; or if a free of
     *                               it removed its file and could not unmap it ({@link #free}): the
     *                               chunk is still allocated, but no importer would find the file
     *                               its export names, until a free succeeds
     * @throws IllegalArgumentException if the chunk is not this provider's
     */
    @Override
    public byte[] export(Chunk chunk) {
        PosixChunk posix = own(chunk);
        synchronized (lock) {
            ensureOpen();
            if (!live.contains(posix)) {
                throw new IllegalStateException(posix + " was freed; it cannot be exported");
            }
            RuntimeException refusedFree = fileRemovedByARefusedFree.get(posix);
            if (refusedFree != null) {
                throw new IllegalStateException("cannot export " + posix + ": a free of it removed its file, which revokes every "
                        + "export of it, and could not unmap it (" + refusedFree.getMessage() + "), so no importer would find the "
                        + "file an export names. It is still allocated here: free it again once no thread uses its memory",
                        refusedFree);
            }
        }
        return ExportPayload.encode(posix.fileName(), directoryIdentity, posix.device(), posix.inode());
    }

    /**
     * Unlinks the chunk's file, so that no new import can find it, and unmaps it here. Peers that
     * mapped it keep their mapping, and the memory, until they unmap. After {@link #close()}, which
     * freed every chunk, this does nothing.
     *
     * @throws IllegalStateException    if the chunk was freed already; or if another thread still
     *                                  uses its memory (a native call on it): its file is removed
     *                                  then, so its export is revoked, but the chunk stays allocated
     *                                  until a later free, or the close, unmaps it, and
     *                                  {@link #export} refuses it meanwhile; should the
     *                                  removal have failed too, its {@code ConduitException} is
     *                                  suppressed in this one, and the file, and its exports, stay
     *                                  until a later free removes it
     * @throws ConduitException         if the chunk's file cannot be removed (naming it, the errno and
     *                                  the remedy): the chunk is unmapped and freed all the same, but
     *                                  its export imports until the close removes the file
     * @throws IllegalArgumentException if the chunk is not this provider's
     */
    @Override
    public void free(Chunk chunk) {
        PosixChunk posix = own(chunk);
        directoryInUse.readLock().lock();
        try {
            synchronized (lock) {
                if (!live.remove(posix)) {
                    if (closed) return;
                    throw new IllegalStateException(posix + " was freed already");
                }
            }
            try {
                release(posix);
            } catch (RuntimeException | Error e) {
                // Still mapped: forgotten now, it would stay mapped for the life of the process.
                if (!posix.mapping().isClosed()) {
                    synchronized (lock) {
                        live.add(posix);
                    }
                }
                throw e;
            } finally {
                if (posix.mapping().isClosed()) {
                    synchronized (lock) {
                        fileRemovedByARefusedFree.remove(posix);
                    }
                }
            }
        } finally {
            directoryInUse.readLock().unlock();
        }
    }

    private PosixChunk own(Chunk chunk) {
        if (chunk instanceof PosixChunk posix && posix.fileName().startsWith(ownFilePrefix)) {
            return posix;
        }
        throw new IllegalArgumentException(chunk + " was not allocated by this posix provider (" + lease.owner() + " in "
                + directory.path() + ")");
    }

    /**
     * Unlinks first: revoking the export matters even if unmapping fails (a thread still inside a
     * native call on it), which {@link #fileRemovedByARefusedFree} then records for {@link #export}.
     * An unlink that fails still unmaps, and its failure goes into the unmap's refusal, which the
     * runtime retries on, rather than being lost to it.
     */
    private void release(PosixChunk chunk) {
        try {
            directory.remove(chunk.fileName());
        } catch (RuntimeException | Error removal) {
            try {
                chunk.mapping().close();
            } catch (RuntimeException | Error unmap) {
                unmap.addSuppressed(removal);
                throw unmap;
            }
            throw removal;
        }
        try {
            chunk.mapping().close();
        } catch (RuntimeException unmap) {
            synchronized (lock) {
                fileRemovedByARefusedFree.put(chunk, unmap);
            }
            throw unmap;
        }
    }

    /**
     * Waits for the allocations and frees under way, frees every chunk still allocated, then gives
     * up the owner lease and the directory. Idempotent. If some chunk cannot be released, the
     * others still are, and the first failure is thrown with the rest suppressed; a chunk that
     * could not be unmapped (another thread inside a native call on it; its file is removed) is
     * unmapped by the next close. A chunk file that could not be removed (also one whose free
     * failed to) is tried once more by the lease's close, and if it stays, so does the lease,
     * unlocked, for the next reclaim in the directory to remove both ({@link OwnerLease#close},
     * which warns naming the file and the errno).
     */
    @Override
    public void close() {
        directoryInUse.writeLock().lock();
        try {
            boolean first;
            List<PosixChunk> chunks;
            List<PosixChunk> stillMapped;
            synchronized (lock) {
                first = !closed;
                closed = true;
                chunks = new ArrayList<>(live);
                live.clear();
                stillMapped = new ArrayList<>(unmapLater);
                unmapLater.clear();
            }
            if (!first && stillMapped.isEmpty()) return;
            RuntimeException failure = null;
            for (PosixChunk chunk : chunks) {
                failure = Cleanup.collect(failure, () -> release(chunk));
            }
            for (PosixChunk chunk : stillMapped) {
                failure = Cleanup.collect(failure, chunk.mapping()::close);
            }
            if (first) {
                failure = Cleanup.collect(failure, lease::close);
                failure = Cleanup.collect(failure, directory::close);
            }
            synchronized (lock) {
                for (PosixChunk chunk : chunks) if (!chunk.mapping().isClosed()) unmapLater.add(chunk);
                for (PosixChunk chunk : stillMapped) if (!chunk.mapping().isClosed()) unmapLater.add(chunk);
                fileRemovedByARefusedFree.clear(); // a closed provider exports nothing
            }
            if (failure != null) throw failure;
        } finally {
            directoryInUse.writeLock().unlock();
        }
    }

    private void ensureOpen() {
        synchronized (lock) {
            if (closed) throw closedException();
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException("posix memory provider in " + directory.path() + " is closed");
    }

    @Override
    public String toString() {
        return "posix memory provider " + lease.owner() + " in " + directory.path();
    }
}
