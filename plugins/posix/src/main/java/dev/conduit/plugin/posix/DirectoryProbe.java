package dev.conduit.plugin.posix;

import dev.conduit.linux.PageSize;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileSystemSpace;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.shm.HugePages;
import dev.conduit.shm.Meminfo;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.shm.ShmPlugins;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PluginContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The posix plugin's probe: it is available when Linux system calls work and the chunk directory
 * exists, is a directory, and this user can create files in it. The probe proves the last point
 * by creating and unlinking a file with a random name, so it leaves nothing behind. A read-only
 * mount (a container's {@code -v DIR:DIR:ro}: the create fails with {@code EROFS}) is enough to
 * import, which only opens chunk files, and maps them read-only there (PosixImporter): the plugin
 * is then available for imports only, and rules every other capability out here
 * ({@link Availability#without}), saying why. So does a file system with no room for a file
 * ({@code ENOSPC}: no inode or byte left; {@code EDQUOT}): an import makes no file. Any other
 * refusal to create (the user's permissions) leaves it unavailable: chunk files are {@code 0600}, so a user who may not
 * create files there can rarely open its producer's, and the importer does not map them read-only
 * then. ({@code EROFS} also means the directory could be searched: the name's lookup came first.)
 *
 * <table class="striped">
 * <caption>Details shown by {@code conduit info}</caption>
 * <tr><th>key</th><th>value</th></tr>
 * <tr><td>{@code arch}, {@code kernel}</td><td>from {@link Linux#availability()}</td></tr>
 * <tr><td>{@code directory}</td><td>the chunk directory as this process sees it</td></tr>
 * <tr><td>{@code directory set by}</td><td>{@code posix.dir}, or {@code shared.dir} when it is unset</td></tr>
 * <tr><td>{@code free bytes}</td><td>space an unprivileged user may still fill there; on a file system that reports no
 * size (ramfs, a tmpfs mounted {@code size=0}), that it has no size limit; on a hugetlbfs mounted without
 * {@code size=}, which reports none either, that the kernel's pool of huge pages bounds it</td></tr>
 * <tr><td>{@code page size}</td><td>chunk size and alignment unit: the huge page size on a hugetlbfs mount</td></tr>
 * <tr><td>{@code hugepages}</td><td>on a hugetlbfs mount only: the kernel's pool of huge pages ({@link HugePages#describe})</td></tr>
 * <tr><td>{@code across kernels}</td><td>on a file system other kernels may see too (NFS, SMB, CephFS, 9p, FUSE and virtiofs,
 * AFS, Coda, OCFS2, GFS2) only: that memory through it is shared only among processes of one kernel
 * ({@link #acrossKernels}), also logged as a WARNING</td></tr>
 * <tr><td>{@code live owners}</td><td>posix providers (of any process) whose lease is held</td></tr>
 * <tr><td>{@code dead owners}</td><td>leases nobody holds: files the next provider to open reclaims</td></tr>
 * <tr><td>{@code unreadable leases}</td><td>leases of other users, which this user cannot check (only when there are any)</td></tr>
 * </table>
 */
final class DirectoryProbe {

    /** What the shared-memory transport offers, whose queues and rings cannot live on a hugetlbfs mount. */
    private static final Set<Capability> TRANSPORT = EnumSet.of(Capability.AM, Capability.RMA, Capability.ATOMICS, Capability.WAKEUP);

    /** What puts files in the chunk directory: everything but imports. */
    private static final Set<Capability> NEED_A_WRITABLE_DIRECTORY = EnumSet.of(Capability.MEMORY, Capability.AM, Capability.RMA,
            Capability.ATOMICS, Capability.WAKEUP);

    private DirectoryProbe() {
    }

    /** Chunk directories whose {@code across kernels} WARNING this process logged. */
    private static final Set<Path> WARNED_ACROSS_KERNELS = java.util.concurrent.ConcurrentHashMap.newKeySet();

    static Availability probe(PluginContext context) {
        return probe(context, Linux.libc());
    }

    /** {@link #probe(PluginContext)} through {@code libc}, which tests may put a fake in front of. */
    static Availability probe(PluginContext context, Libc libc) {
        Availability linux = Linux.availability();
        if (!linux.isAvailable()) return linux;
        Map<String, String> details = new LinkedHashMap<>(linux.details());
        details.put("formats", ShmPlugins.formats("handle payload " + ExportPayload.VERSION));
        PosixConfig config;
        try {
            config = PosixConfig.of(context);
        } catch (ConduitException e) {
            return Availability.unavailable(e.getMessage(), details);
        }
        Path path = config.directory();
        details.put("directory", path.toString());
        details.put("directory set by", config.directorySetBy());
        SharedDirectory directory;
        try {
            directory = SharedDirectory.open(libc, path, config.directoryKeys());
        } catch (ConduitException e) {
            return Availability.unavailable(e.getMessage(), details);
        }
        try (directory) {
            // Of the descriptor, as the provider asks it: the file system chunks would be created on.
            FileSystemSpace fileSystem;
            try {
                fileSystem = libc.fileSystemSpace(directory.fd());
            } catch (ErrnoException e) {
                return Availability.unavailable("cannot tell the file system of " + directory.path() + ": " + e.getMessage()
                        + "; set " + config.directoryKeys() + " to a directory on a local file system", details);
            }
            String name = OwnerLease.newProbeName(PosixMemoryProvider.FILE_PREFIX);
            String importsOnly = null; // why only imports work here; null where everything does
            try {
                directory.createExclusive(name).close();
            } catch (ErrnoException e) {
                importsOnly = switch (e.errnoName()) {
                    case "EROFS" -> readOnlyMount(e, directory.path(), config.directoryKeys());
                    // No inode or byte left for a file, or this user's quota of them: an import opens files, makes none.
                    case "ENOSPC", "EDQUOT" -> noRoomForAFile(e, directory);
                    default -> null;
                };
                if (importsOnly == null) {
                    return Availability.unavailable("cannot create files in " + directory.path() + ": " + e.getMessage() + "; "
                            + directory.creationRemedy(e), details);
                }
                // A read-only mount's free bytes are no one's to fill; a full file system's say how full it is.
                if (!"EROFS".equals(e.errnoName())) details.put("free bytes", freeBytes(libc, directory, fileSystem));
            }
            if (importsOnly == null) {
                try {
                    directory.unlink(name);
                } catch (ErrnoException e) {
                    return Availability.unavailable("cannot remove files from " + directory.path() + ": " + e.getMessage() + "; probe file "
                            + name + " is left there. Make the directory writable for this user, or set " + config.directoryKeys(), details);
                }
                details.put("free bytes", freeBytes(libc, directory, fileSystem));
            }
            details.put("file system", fileSystem(libc, directory, fileSystem.type()));
            String acrossKernels = acrossKernels(libc, directory, fileSystem.type(), config.directoryKeys());
            if (acrossKernels != null) {
                // Not ruled out: processes of one kernel share these pages (two of a host on its NFS mount, two containers of
                // one VM on its virtiofs share), and nothing here can tell whether the peers will be of one (docs/decisions.md).
                details.put("across kernels", acrossKernels);
                // Once per directory: every Conduit built probes, and so does each worker's requireOffered.
                if (WARNED_ACROSS_KERNELS.add(path)) context.logger().log(System.Logger.Level.WARNING, acrossKernels);
            }
            boolean hugetlbfs = fileSystem.type() == Libc.HUGETLBFS_MAGIC;
            details.put("page size", Long.toString(hugetlbfs ? fileSystem.blockSize() : PageSize.get()));
            if (hugetlbfs) details.put("hugepages", HugePages.read(Meminfo.PATH).describe());
            OwnerLease.countOwners(libc, directory, PosixMemoryProvider.FILE_PREFIX, details);
            Availability available = Availability.available(details);
            if (importsOnly != null) {
                for (Capability c : NEED_A_WRITABLE_DIRECTORY) available = available.without(c, importsOnly);
            } else if (hugetlbfs) {
                String why = hugetlbfsTransport(directory.path(), config.directoryKeys());
                for (Capability c : TRANSPORT) available = available.without(c, why);
            }
            return available;
        }
    }

    /** Why the transport cannot work over a chunk directory on a hugetlbfs mount, and the remedy. */
    private static String hugetlbfsTransport(Path directory, String directoryKeys) {
        return "the chunk directory " + directory + " is a hugetlbfs mount, whose files are sized in whole huge pages, and the "
                + "transport's receive queues and bounce rings are a header past a power of two: set " + directoryKeys + " to a "
                + "tmpfs directory (such as /dev/shm) for the posix transport, or use memfd's (transports=memfd) beside posix "
                + "pools of huge pages";
    }

    /** Whether the file system at {@code path} is a hugetlbfs mount, by the JDK's look at the path; false when it cannot tell. */
    private static boolean isHugetlbfs(Path path) {
        try {
            return Files.getFileStore(path).type().equals("hugetlbfs");
        } catch (IOException | SecurityException e) {
            return false;
        }
    }

    /**
     * Refuses an operation of {@code capability} where the probe rules it out (a read-only mount;
     * the transport on a hugetlbfs mount), with the probe's reason: the runtime asks the probe
     * first, a direct caller (the TCK) gets the same answer. Probes only where {@code access(2)}
     * says the directory cannot be written, or where it is a hugetlbfs mount.
     */
    static void requireOffered(PluginContext context, Capability capability, String operation) {
        Path path;
        try {
            path = PosixConfig.of(context).directory();
        } catch (ConduitException e) {
            return; // the operation reports the configuration itself
        }
        boolean hugetlbfs = isHugetlbfs(path);
        if (!hugetlbfs && (Files.isWritable(path) || !Files.isDirectory(path))) return;
        String why = probe(context).unsupportedHere().get(capability);
        if (why != null) throw new NotSupportedException("posix offers no " + operation + " here" + (hugetlbfs ? "" : ", only imports") + ": " + why);
    }

    /** Why pools and workers cannot be made over a directory on a read-only mount ({@code e}: {@code EROFS}), and the remedy. */
    private static String readOnlyMount(ErrnoException e, Path directory, String directoryKeys) {
        return "the chunk directory " + directory + " is on a read-only mount (" + e.getMessage() + "): mount it read-write (for a "
                + "container, -v DIR:DIR without :ro), or set " + directoryKeys + " to a writable directory, for pools and workers "
                + "over posix, whose chunk files and leases live there; posix imports, which only open chunk files, work here and "
                + "map them read-only";
    }

    /**
     * Why pools and workers cannot be made in {@code directory}, whose file system has no room for a file ({@code e}:
     * {@code ENOSPC}, of inodes or of bytes; {@code EDQUOT}, this user's quota of them), and the remedy.
     */
    private static String noRoomForAFile(ErrnoException e, SharedDirectory directory) {
        return "the chunk directory " + directory.path() + " has no room for a file (" + e.getMessage() + "): "
                + directory.creationRemedy(e) + ", for pools and workers over posix, whose chunk files and leases live there; "
                + "posix imports, which only open chunk files, work here";
    }

    /** File systems that keep files in memory only ({@code statfs}'s {@code f_type}): a chunk there costs no disk writes. */
    private static final Set<Long> MEMORY_FILE_SYSTEMS = Set.of(Libc.TMPFS_MAGIC, Libc.RAMFS_MAGIC, Libc.HUGETLBFS_MAGIC);

    /**
     * Where the file system of {@code type} ({@code f_type}) that holds {@code directory}'s descriptor is one other kernels may
     * see too (another host; a VM and its host), that memory through it is shared only among processes of one kernel, what a
     * peer under another kernel meets, and what to set ({@code directoryKeys}); null on any other file system. The probe warns
     * of it, and the transport adds it to the failures such a peer meets (ShmTransport's {@code acrossKernels}).
     */
    static String acrossKernels(Libc libc, SharedDirectory directory, long type, String directoryKeys) {
        String kind = SharedDirectory.seenByOtherKernels(type);
        if (kind == null) return null;
        return "the chunk directory " + directory.path() + " is on " + name(libc, directory, type) + " (" + kind + "), which other "
                + "kernels may see too (another host's, a VM's and its host's), each through a page cache of its own: memory mapped "
                + "through it is shared only among processes of one kernel (a virtiofs share mounted with dax excepted). A peer "
                + "under another kernel maps a copy: a connect to it is refused as an altered address, or its messages go nowhere "
                + "until its endpoint fails as hung, and a region imported there is not the producer's memory. For peers under two "
                + "kernels set " + directoryKeys + " to a tmpfs directory one kernel shares with both, or reach the peer through a "
                + "transport that crosses hosts (verbs)";
    }

    private static final String WRITTEN_BACK = ": chunk pages are written back to its storage; a tmpfs such as /dev/shm keeps them in memory";

    /**
     * The name of the file system of {@code type} ({@code f_type}) that holds {@code directory}'s descriptor, and, when it is not
     * a memory file system, that chunk pages are written back to its storage.
     */
    static String fileSystem(Libc libc, SharedDirectory directory, long type) {
        String writtenBack = writtenBack(libc, directory, type);
        return writtenBack == null ? name(libc, directory, type) : writtenBack;
    }

    /**
     * The file system of {@code type} ({@code f_type}) that holds {@code directory}'s descriptor and that chunk pages are written
     * back to its storage; null for a memory file system.
     */
    static String writtenBack(Libc libc, SharedDirectory directory, long type) {
        return MEMORY_FILE_SYSTEMS.contains(type) ? null : name(libc, directory, type) + WRITTEN_BACK;
    }

    /**
     * The name of the file system of {@code type} that holds {@code directory}'s descriptor: the JDK's, where the directory's
     * path still names a directory on it (statfs tells a number, not a name), else the number.
     */
    private static String name(Libc libc, SharedDirectory directory, long type) {
        try {
            Path path = directory.path();
            if (Files.getAttribute(path, "unix:dev") instanceof Long device && device == libc.fstat(directory.fd()).dev()) {
                return Files.getFileStore(path).type();
            }
        } catch (IOException | RuntimeException e) {
            // named by its number below
        }
        return "a file system of statfs type 0x" + Long.toHexString(type);
    }

    /**
     * The bytes an unprivileged user may still fill on {@code fileSystem}, or that it has no size limit (ramfs), or that the pool
     * of huge pages bounds it (a hugetlbfs mounted without {@code size=}).
     */
    private static String freeBytes(Libc libc, SharedDirectory directory, FileSystemSpace fileSystem) {
        if (PosixMemoryProvider.hasNoSizeLimit(fileSystem.totalBytes())) {
            // A hugetlbfs mounted without size= reports no blocks too, yet holds only what the pool of huge pages has.
            if (fileSystem.type() == Libc.HUGETLBFS_MAGIC) {
                return "no size of its own (hugetlbfs mounted without size=): the kernel's pool of huge pages bounds it (the "
                        + "hugepages line)";
            }
            return "no size limit (" + name(libc, directory, fileSystem.type()) + " reports no blocks)";
        }
        return Long.toString(fileSystem.availableBytes());
    }
}
