package dev.conduit.plugin.memfd;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFlags;
import dev.conduit.linux.Seals;
import dev.conduit.shm.HugePages;
import dev.conduit.shm.Meminfo;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.shm.ShmPlugins;
import dev.conduit.shm.ShmTransport;
import dev.conduit.shm.ShmTransportConfig;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.Version;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import static dev.conduit.linux.MemfdFlags.MFD_ALLOW_SEALING;

/**
 * The memfd plugin: chunks are sealed {@code memfd_create} files, exported as a capability token
 * and handed to importers as descriptors ({@code SCM_RIGHTS}) by an fd server on a Unix socket
 * in the shared directory. Preferred over posix (priority {@value #PRIORITY}) because a sealed
 * chunk cannot be truncated by a peer, and because it needs nothing but the shared directory in
 * common: it works across PID, IPC, UTS and mount namespaces without a peer's {@code /proc/<pid>}.
 *
 * <p>See {@link MemfdProvider} (chunks), {@link FdServer} and {@link FdProtocol} (passing them),
 * {@link MemfdPayload} (the handle's payload), {@link MemfdImporter} (mapping them elsewhere) and
 * {@link MemfdConfig} (keys).
 */
public final class MemfdPlugin implements ConduitPlugin {

    static final String NAME = "memfd";
    /** What a process that cannot write the shared directory cannot do: all but importing. */
    private static final Set<Capability> NEED_A_WRITABLE_DIRECTORY = EnumSet.of(Capability.MEMORY, Capability.AM, Capability.RMA,
            Capability.ATOMICS, Capability.WAKEUP);
    static final int PRIORITY = 110;
    private static final Version VERSION = Version.parse("0.1.0");

    public MemfdPlugin() {}

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Version version() {
        return VERSION;
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public String description() {
        return "sealed memfd chunks, passed as file descriptors over a Unix socket in the shared directory to holders of "
                + "a capability token; works across PID, IPC, UTS and mount namespaces";
    }

    /**
     * Available when Linux system calls work, {@code memfd_create} and sealing work, and the
     * shared directory exists, can be read and searched, and its sockets can be reached: by path,
     * or, when that is too long for a socket address, through {@code /proc/self/fd}. A directory
     * this process cannot write (a container's read-only mount, or another user's directory) is
     * enough to import, which only connects to a producer's socket: the plugin is then available
     * for imports only, and rules every other capability out here ({@link Availability#without}),
     * saying why; {@link #openMemoryProvider} and {@link #openTransport} throw
     * {@link NotSupportedException} with the same reason. With {@code memfd.hugepages=yes} on a
     * kernel without huge pages it rules memory out, with the reason a pool's opening would throw.
     * Creates and closes one memfd, and where
     * {@code access(2)} says the directory is not writable, tries to create a file in it (removed
     * at once); leaves nothing behind.
     */
    @Override
    public Availability probe(PluginContext context) {
        Availability linux = Linux.availability();
        if (!linux.isAvailable()) {
            return linux;
        }
        return probe(context, Linux.libc(), linux, Meminfo.PATH);
    }

    /**
     * {@link #probe(PluginContext)} through {@code libc}, which tests may put a fake in front of, once
     * Linux is available, with the kernel's huge pages as {@code meminfo} says.
     */
    static Availability probe(PluginContext context, Libc libc, Availability linux, Path meminfo) {
        Map<String, String> details = new LinkedHashMap<>(linux.details());
        details.put("formats", ShmPlugins.formats("handle payload " + MemfdPayload.VERSION + ", fd protocol " + FdProtocol.VERSION));
        HugePages.Mode hugePagesMode = context.config().get(MemfdConfig.HUGEPAGES);
        HugePages hugePages = HugePages.read(meminfo);
        try (FileDescriptor probe = libc.memfdCreate("conduit-memfd-probe", MFD_ALLOW_SEALING)) {
            libc.addSeals(probe, Seals.FIXED_SIZE);
            details.put("seals", Seals.describe(libc.seals(probe)));
            details.put("hugepages", "memfd.hugepages=" + hugePagesMode.name().toLowerCase(Locale.ROOT) + "; " + hugePages.describe());
        } catch (ErrnoException e) {
            return Availability.unavailable("memfd with seals does not work here: " + e.getMessage() + "; " + probeRemedy(e), details);
        }
        Path directory = context.sharedDirectory();
        details.put("shared.dir", String.valueOf(directory));
        String remedy = "create it, or set " + MemfdConfig.SHARED_DIR_KEY + " to a directory shared with your peers";
        if (directory == null) {
            return Availability.unavailable("no shared directory is configured: set " + MemfdConfig.SHARED_DIR_KEY, details);
        }
        if (SharedDirectory.isPastPathMax(directory)) {
            // The JDK's check below says only false for it.
            return Availability.unavailable("the shared directory " + directory + " cannot be opened: " + SharedDirectory.TOO_LONG_A_PATH
                    + " (" + MemfdConfig.SHARED_DIR_KEY + ")", details);
        }
        if (!Files.isDirectory(directory)) {
            return Availability.unavailable("the shared directory " + directory + " does not exist or is not a directory: " + remedy, details);
        }
        if (!readableAndSearchable(libc, directory)) {
            return Availability.unavailable("the shared directory " + directory + " cannot be read and searched by this user ("
                    + ourUid(libc) + "), so no socket in it can be reached: give it the read and search (r-x) "
                    + "permissions, or set " + MemfdConfig.SHARED_DIR_KEY, details);
        }
        countOwners(libc, directory, details);
        Availability reachable = socketReachability(directory, FdProtocol.PROC_SELF_FD, details);
        // Before the directory's reason, which rules memory out too and is the one to fix first.
        String noHugePages = MemfdProvider.refusalOfHugePages(hugePagesMode, hugePages);
        if (noHugePages != null) reachable = reachable.without(Capability.MEMORY, noHugePages);
        String notWritable = notWritable(libc, directory);
        if (!reachable.isAvailable() || notWritable == null) return reachable;
        // Importing only connects to a producer's socket; everything else puts a lease or a socket in the directory.
        for (Capability c : NEED_A_WRITABLE_DIRECTORY) reachable = reachable.without(c, notWritable);
        return reachable;
    }

    /**
     * What to do when the probe's memfd could not be made or sealed. A shortage (of descriptors, of
     * memory) is this process's state, not the kernel's support: "needs Linux 3.17 or later" would
     * send the operator after the wrong thing (a service that probed with every descriptor taken,
     * ulimit -n, was told to use posix instead).
     */
    private static String probeRemedy(ErrnoException e) {
        return switch (e.errno()) {
            case Errno.EMFILE, Errno.ENFILE -> Errno.shortageRemedy(e.errno()) + ", then open a new Conduit (the probe runs once, "
                    + "as it is built)";
            case Errno.ENOMEM -> "not enough memory for the probe's memfd: free memory, or raise the memory limit of this process "
                    + "or its cgroup, then open a new Conduit (the probe runs once, as it is built)";
            default -> "memfd_create with sealing needs Linux 3.17 or later and must not be blocked by a seccomp filter; "
                    + "use the posix plugin instead";
        };
    }

    /**
     * Puts the counts of live and dead memfd owners (providers and workers) in the shared directory
     * into {@code details}, as posix's probe does for its own; a directory that cannot be listed
     * says why there instead of failing the probe (an import may still work).
     */
    private static void countOwners(Libc libc, Path directory, Map<String, String> details) {
        try (SharedDirectory opened = SharedDirectory.open(libc, directory, MemfdConfig.SHARED_DIR_KEY)) {
            OwnerLease.countOwners(libc, opened, FdProtocol.FILE_PREFIX, details);
        } catch (RuntimeException e) {
            details.put("owners", "unknown: " + e.getMessage());
        }
    }

    /** Whether this process can open {@code directory} and reach names in it, as an import does. */
    private static boolean readableAndSearchable(Libc libc, Path directory) {
        if (Files.isReadable(directory) && Files.isExecutable(directory)) return true;
        // A name no file has: ENOENT says the search reached it.
        int refused = attemptIn(libc, directory, (opened, name) -> opened.openExisting(name, OpenFlags.O_RDONLY).close());
        return refused == 0 || refused == Errno.ENOENT;
    }

    /**
     * Why this process cannot make pools or workers over {@code directory}, with the remedy; null
     * when it can.
     */
    static String notWritable(Libc libc, Path directory) {
        if (Files.isWritable(directory)) return null;
        int refused = attemptIn(libc, directory, (opened, name) -> {
            FileDescriptor created = opened.createExclusive(name);
            try {
                created.close();
            } finally {
                opened.unlink(name);
            }
        });
        if (refused == 0) return null;
        String where = refused == Errno.EROFS
                ? "the shared directory " + directory + " is on a read-only mount: mount it read-write (for a container, "
                + "-v DIR:DIR without :ro)"
                : "the shared directory " + directory + " is not writable by this user (" + ourUid(libc)
                + "): make it writable";
        return where + ", or set " + MemfdConfig.SHARED_DIR_KEY + " to a writable directory, for pools and workers over memfd, "
                + "whose lease and sockets live there; memfd imports, which only connect to a producer's socket, work here";
    }

    /** {@code uid 1000}; in a user namespace also its uid in the parent one, which the directory's owner sees. */
    private static String ourUid(Libc libc) {
        return UserNamespace.current().describe(Integer.toUnsignedLong(libc.geteuid()));
    }

    /** Refuses an operation that writes in the shared directory when this process cannot (the runtime asks the probe first). */
    private static void requireWritable(PluginContext context, String operation) {
        Path directory = context.sharedDirectory();
        if (directory == null || !Files.isDirectory(directory)) return; // the operation names the missing key or directory itself
        String notWritable = notWritable(Linux.libc(), directory);
        if (notWritable != null) throw new NotSupportedException("memfd offers no " + operation + " here, only imports: " + notWritable);
    }

    /**
     * Does {@code attempt} in {@code directory} with a name no file has, and returns the errno it
     * failed with, or 0 when it worked (-1 when the directory itself cannot be opened). Where
     * {@code access(2)} says no, this decides: {@code access(2)} judges by the real uid and without
     * capabilities. A create that fails with {@code EROFS} is a read-only mount, which
     * {@code FileStore.isReadOnly} misses for a bind mount: it looks at the whole file system's mount.
     */
    private static int attemptIn(Libc libc, Path directory, java.util.function.BiConsumer<SharedDirectory, String> attempt) {
        SharedDirectory opened;
        try {
            opened = SharedDirectory.open(libc, directory, MemfdConfig.SHARED_DIR_KEY);
        } catch (RuntimeException e) {
            return -1;
        }
        try (opened) {
            attempt.accept(opened, OwnerLease.newProbeName(FdProtocol.FILE_PREFIX));
            return 0;
        } catch (ErrnoException e) {
            return e.errno();
        }
    }

    /** The probe's last step: whether the fd server's socket in {@code directory} can be bound and reached, given {@code procSelfFd}. */
    static Availability socketReachability(Path directory, Path procSelfFd, Map<String, String> details) {
        String unreachable = FdProtocol.unreachableReason(directory, procSelfFd);
        if (unreachable != null) {
            return Availability.unavailable(unreachable, details);
        }
        if (directory.toString().getBytes(StandardCharsets.UTF_8).length > FdProtocol.maxDirectoryLength()) {
            details.put("socket.address", "through " + procSelfFd + " (the shared directory's path is longer than "
                    + FdProtocol.maxDirectoryLength() + " bytes)");
        }
        return Availability.available(details);
    }

    @Override
    public Set<Capability> capabilities() {
        return ShmPlugins.CAPABILITIES;
    }

    /** See {@link ShmPlugins#THREAD_MODES}. */
    @Override
    public Set<ThreadMode> threadModes() {
        return ShmPlugins.THREAD_MODES;
    }

    @Override
    public List<ConfigKey<?>> configKeys() {
        return ShmPlugins.configKeys(name(), MemfdConfig.KEYS);
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    @Override
    public MemoryProvider openMemoryProvider(PluginContext context) {
        requireWritable(context, "memory provider (pool)");
        return MemfdProvider.open(Linux.libc(), context);
    }

    @Override
    public IpcImporter ipcImporter(PluginContext context) {
        if (context.sharedDirectory() == null) {
            throw new ConduitException("the memfd importer needs a shared directory: set " + MemfdConfig.SHARED_DIR_KEY);
        }
        return new MemfdImporter(Linux.libc(), context.sharedDirectory(), MemfdConfig.connectTimeoutNanos(context.config()),
                MemfdConfig.trustedUids(context.config()), context::blockingCall);
    }

    /**
     * The shared-memory transport over sealed chunks: a worker's receive queue and each
     * connection's bounce ring are memfds, handed to a connecting peer by the fd server once it
     * presents the token from the worker's address; no peer can shrink them under the receiver.
     */
    @Override
    public Transport openTransport(TransportContext context) {
        requireWritable(context, "transport");
        return new ShmTransport(name(), Linux.libc(), context, ShmTransportConfig.read(context.config(), name()),
                MemfdProvider.openForTransport(Linux.libc(), context), ipcImporter(context));
    }
}
