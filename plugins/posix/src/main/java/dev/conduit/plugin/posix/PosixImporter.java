package dev.conduit.plugin.posix;

import dev.conduit.spi.Cleanup;
import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.OpenFlags;
import dev.conduit.shm.DirectoryIdentity;
import dev.conduit.shm.ExporterLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.PayloadReader;

import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * Maps chunk files that a posix provider, in this or another process, exported. Stateless apart
 * from this process's configuration, thread-safe, and independent of any provider.
 *
 * <p>For each handle (the runtime's IPC cache calls this only on a miss) it:
 * <ol>
 *   <li>decodes the payload ({@link ExportPayload}): the name of a chunk file directly in this
 *       process's chunk directory, of the form a posix provider creates, refusing any other;</li>
 *   <li>opens it with {@link SharedDirectory#openRegularFile} ({@code openat2} with
 *       {@code RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS}, {@code O_NOFOLLOW}), which looks at it first
 *       without opening it ({@code O_PATH}) and refuses anything but a regular file, so that a
 *       planted FIFO, terminal or device node is never opened (a device's driver acts on an open);</li>
 *   <li>checks with {@code fstat} that it is a regular file, the very file the producer exported
 *       (the payload's device and inode: another renamed over the name is refused), owned by this
 *       process's user or one listed in {@code posix.trusted.uids} (where this process runs as the
 *       overflow uid of its user namespace, which every user the namespace does not map shows as
 *       too, its own only once setting {@code O_NOATIME}, which only the owner may, proves it), and exactly as
 *       long as the handle's chunk length (mapping beyond the end of a shorter file would crash
 *       the consumer with {@code SIGBUS} on access);</li>
 *   <li>maps it {@code MAP_SHARED} into a shared arena of its own and closes the descriptor.</li>
 * </ol>
 *
 * <p>It opens and maps for reading and writing. Where that fails with {@code EROFS} (the directory
 * is a read-only mount: a container's {@code -v DIR:DIR:ro}), the runtime's importer opens and
 * maps for reading only (a transport's refuses: what it maps, it writes),
 * and the mapping's segment is read-only: a consumer that only reads (model weights, reference
 * data) works there, and a write through it throws {@code IllegalArgumentException} instead of
 * reaching memory it may not write. Any other refusal is reported as before, never read-only.</p>
 *
 * <p>The directory is opened per call rather than kept open: the importer has no close, so a kept
 * descriptor would live as long as the JVM and pin a directory that may be unmounted; a miss
 * already costs an {@code open} and an {@code mmap}.
 *
 * <p><b>Trust.</b> The checks are made once, at map time. A peer with write access to the file can
 * still truncate it while it is mapped, and this process then gets {@code SIGBUS} on access, which
 * the JDK reports as {@code InternalError} (memfd seals its chunks against that; posix cannot).
 * Map only files of peers you trust.
 */
final class PosixImporter implements IpcImporter {

    private static final String CHUNKS_ARE_REGULAR_FILES = "chunk files are regular files";
    /** {@code O_RDWR} for a shared writable mapping; the others keep a planted special file harmless until fstat refuses it. */
    private static final int OPEN_FLAGS = OpenFlags.O_RDWR | OpenFlags.O_NONBLOCK | OpenFlags.O_NOCTTY;
    /** Through a read-only mount, where {@link #OPEN_FLAGS} fail with {@code EROFS}. */
    private static final int READ_ONLY_OPEN_FLAGS = OpenFlags.O_RDONLY | OpenFlags.O_NONBLOCK | OpenFlags.O_NOCTTY;

    private final Libc libc;
    private final PosixConfig config;
    private final boolean readOnlyThroughReadOnlyMounts;
    /** This process's user namespace, as {@code /proc} shows it when asked: what its uids stand for. */
    private final Supplier<UserNamespace> namespace;

    /**
     * @param readOnlyThroughReadOnlyMounts whether a chunk that opens only for reading ({@code EROFS})
     *                                      is mapped read-only (imports) or refused (what a
     *                                      transport maps, it writes: peers' queues, bounce rings)
     */
    PosixImporter(Libc libc, PosixConfig config, boolean readOnlyThroughReadOnlyMounts) {
        this(libc, config, readOnlyThroughReadOnlyMounts, UserNamespace::current);
    }

    /** With {@code namespace} in place of this process's user namespace: for tests of other namespaces. */
    PosixImporter(Libc libc, PosixConfig config, boolean readOnlyThroughReadOnlyMounts, Supplier<UserNamespace> namespace) {
        this.libc = libc;
        this.config = config;
        this.readOnlyThroughReadOnlyMounts = readOnlyThroughReadOnlyMounts;
        this.namespace = namespace;
    }

    /**
     * @throws InvalidHandleException if the payload is malformed or names a path or file type that is refused
     * @throws ConduitException       if the file is gone ("export gone"), belongs to an untrusted user, has
     *                                the wrong size or cannot be mapped; nothing stays open
     */
    @Override
    public ChunkMapping map(PayloadReader payload, long chunkLength) {
        ExportPayload export = ExportPayload.decode(payload);
        String name = export.path();
        if (chunkLength <= 0) {
            throw new InvalidHandleException("chunk.length", chunkLength + " is not a positive length");
        }
        Path path = config.directory().resolve(name);
        FileMapping mapping = null;
        // The directory's close comes last and may fail (EIO; EBADF): what the steps before it took is undone then too.
        try (SharedDirectory directory = SharedDirectory.open(libc, config.directory(), config.directoryKeys())) {
            FileDescriptor opened;
            boolean writable = true;
            try {
                opened = directory.openRegularFile(name, OPEN_FLAGS, "chunk", CHUNKS_ARE_REGULAR_FILES);
            } catch (ErrnoException e) {
                if (!readOnlyThroughReadOnlyMounts || !"EROFS".equals(e.errnoName())) throw refused(e, directory, export, path, payload);
                // A read-only mount (a container's -v DIR:DIR:ro): the chunk can still be read, so it is mapped for reading only.
                try {
                    opened = directory.openRegularFile(name, READ_ONLY_OPEN_FLAGS, "chunk", CHUNKS_ARE_REGULAR_FILES);
                    writable = false;
                } catch (ErrnoException readOnly) {
                    throw refused(readOnly, directory, export, path, payload);
                }
            }
            try (FileDescriptor fd = opened) {
                FileStatus status = libc.fstat(fd);
                check(fd, status, export, path, chunkLength, payload);
                // The chunk's own user: a lease of another one, planted under the name, is none.
                ExporterLease exporter = ExporterLease.of(libc, config.directory(), config.directoryKeys(),
                        PosixMemoryProvider.FILE_PREFIX, name, status.uid());
                mapping = FileMapping.map(libc, fd, chunkLength, writable, path, config.directoryKeys(), exporter);
            }
        } catch (RuntimeException | Error e) {
            if (mapping == null) throw e;
            Cleanup.run(e, mapping::close);
            if (e instanceof ErrnoException closing) {
                throw new ConduitException("cannot map " + path + ": mapped, but closing a descriptor afterwards failed: "
                        + closing.getMessage() + "; the mapping is undone. " + Errno.remedy(closing.errno(),
                        "Check the directory set by " + config.directoryKeys() + " (EIO: its file system)"), closing);
            }
            throw e;
        }
        return mapping;
    }

    /** Why {@code path} could not be opened ({@code e}), as the exception to throw. */
    private RuntimeException refused(ErrnoException e, SharedDirectory directory, ExportPayload export, Path path, PayloadReader payload) {
        String name = export.path();
        return switch (e.errnoName()) {
            case "ENOENT" -> notFound(e, directory, export, path);
            case "ELOOP" -> payload.invalid("path", "'" + name + "' is a symbolic link in " + config.directory()
                    + "; refused: handles name chunk files, and a link could point anywhere");
            case "EISDIR" -> payload.invalid("path", path + " is a directory; refused: chunk files are regular files");
            case "EACCES", "EPERM" -> new ConduitException("cannot open " + path + ": " + e.getMessage() + ". "
                    + permissionRemedy(directory, name), e);
            // Only a transport's importer gets here (the runtime's maps read-only instead): another directory would reach no peer.
            case "EROFS" -> new ConduitException("cannot open " + path + " for writing: " + e.getMessage() + "; " + directory.path()
                    + " is mounted read-only in this process (a container's -v DIR:DIR:ro, a read-only bind mount over it, or "
                    + "mount -o remount,ro since this process opened it), and the transport writes what it maps of its peers (their "
                    + "receive queues, bounce rings): mount it read-write here", e);
            // Refused before it was opened (SharedDirectory.openRegularFile), or it did not open at all: tell what it is.
            case "EINVAL", "ENXIO" -> notRegularFile(directory, name, path, payload)
                    .orElseGet(() -> new ConduitException("cannot open " + path + ": " + e.getMessage() + "; "
                            + Errno.remedy(e.errno(), "check the directory set by " + config.directoryKeys()), e));
            default -> new ConduitException("cannot open " + path + ": " + e.getMessage() + "; "
                    + Errno.remedy(e.errno(), "check the directory set by " + config.directoryKeys()), e);
        };
    }

    /**
     * The chunk file is not in this process's chunk directory: freed there (its producer freed it or
     * died), or this process looks in another directory than the producer, which the handle's
     * directory tells where it can ({@link DirectoryIdentity}).
     */
    private ConduitException notFound(ErrnoException e, SharedDirectory directory, ExportPayload export, Path path) {
        DirectoryIdentity here = DirectoryIdentity.of(libc, directory.fd());
        DirectoryIdentity.Match where = here.compare(export.directory());
        String freed = "Its producer freed the chunk or died (a dead producer's files are removed by the next posix provider that opens "
                + "on the directory)";
        return switch (where) {
            case SAME -> new ConduitException("export gone: " + path + " does not exist, in the very directory the handle names ("
                    + here.describe() + "). " + freed + ", or something removed the file while the producer lives (a cleanup job)", e);
            case OTHER -> new ConduitException("cannot import: the handle names a chunk of another directory than this process's "
                    + directory.path() + " (" + config.directoryKeys() + "), where " + export.path() + " is not found (ENOENT): the "
                    + "producer's directory is " + export.directory().describe() + ", this one " + here.describe() + ". "
                    + DirectoryIdentity.oneDirectoryRemedy(config.directoryKeys()), e);
            case UNKNOWN -> new ConduitException("export gone: " + path + " does not exist. " + freed + ". If the producer is alive, "
                    + "check that " + config.directoryKeys() + " shows this process the same directory as the producer's", e);
        };
    }

    /** The refusal of what has {@code name}, looked at without opening it for I/O, if it is not a regular file. */
    private static java.util.Optional<RuntimeException> notRegularFile(SharedDirectory directory, String name, Path path,
                                                                        PayloadReader payload) {
        FileStatus status;
        try {
            status = directory.status(name);
        } catch (ErrnoException unknown) {
            return java.util.Optional.empty();
        }
        return status.isRegularFile() ? java.util.Optional.empty() : java.util.Optional.of(notRegularFile(status, path, payload));
    }

    private static InvalidHandleException notRegularFile(FileStatus status, Path path, PayloadReader payload) {
        return payload.invalid("path", path + " is not a regular file (" + status.typeName() + "); refused: " + CHUNKS_ARE_REGULAR_FILES);
    }

    private void check(FileDescriptor fd, FileStatus status, ExportPayload export, Path path, long chunkLength, PayloadReader payload) {
        if (!status.isRegularFile()) {
            throw notRegularFile(status, path, payload);
        }
        if (!export.isOf(status)) {
            // Type, owner and size would all pass for another chunk of this user renamed over the name.
            throw new ConduitException("refusing to map " + path + ": the file there is not the one the handle's producer exported "
                    + "(it is " + identity(status.dev(), status.inode()) + "; the export's is " + identity(export.device(), export.inode())
                    + "): it was replaced since, by a user who may write " + config.directory() + " (where a directory is not sticky, "
                    + "any user who may write it may rename a file over another's name). Keep " + config.directory() + " writable by "
                    + "this user alone, or make it sticky (chmod +t, as /dev/shm is)");
        }
        int self = libc.geteuid();
        UserNamespace here = namespace.get();
        if (status.uid() == self) {
            if (here.mayBeUnmapped(Integer.toUnsignedLong(self))) proveOwn(fd, path, here, self);
        } else {
            long owner = Integer.toUnsignedLong(status.uid());
            String ours = here.describe(Integer.toUnsignedLong(self));
            if (here.mayBeUnmapped(owner)) {
                // Whatever posix.trusted.uids says: in a user namespace, this uid is every user the namespace does not map.
                throw new ConduitException("refusing to map " + path + ": it shows as uid " + owner + ", which in this process's "
                        + "user namespace stands for every user the namespace does not map (and for its own " + owner + ", if it "
                        + "maps one), not for this process's " + ours + ". Trusting " + owner + " here would trust all of them: "
                        + "run the producer as a user this namespace maps (for a rootless container, the user who runs it), or use "
                        + "memfd");
            }
            if (!config.trusts(status.uid(), self)) {
                throw new ConduitException("refusing to map " + path + ": it belongs to uid " + owner + ", not to this process's "
                        + ours + " nor to a trusted one (" + config.trustedUidsText() + "). A peer that can write the file could "
                        + "truncate it under this process. If you trust that user, add the uid to "
                        + PosixConfig.TRUSTED_UIDS.nameAndVariable());
            }
        }
        if (status.size() != chunkLength) {
            String consequence = status.size() < chunkLength
                    ? "mapping " + chunkLength + " bytes of it would crash this process with SIGBUS on access past byte " + status.size()
                    : "the handle does not describe this file";
            throw new ConduitException("refusing to map " + path + ": the file is " + status.size() + " bytes long but the handle's "
                    + "chunk.length is " + chunkLength + ", and " + consequence + ". The producer truncated or replaced the file, "
                    + "or the handle was altered");
        }
    }

    private static String identity(long device, long inode) {
        return "device " + FileStatus.major(device) + ":" + FileStatus.minor(device) + ", inode " + Long.toUnsignedString(inode);
    }

    /**
     * This process runs as the overflow uid of its user namespace (a container run as nobody), so
     * a file showing its own uid may be its own or any unmapped user's: it proves the file its own
     * ({@link UserNamespace#ownsFile}, {@code O_NOATIME}) or refuses it (why not {@code fchown}:
     * docs/decisions.md, "A process that runs as the overflow uid proves nothing by its own uid").
     */
    private void proveOwn(FileDescriptor fd, Path path, UserNamespace here, int self) {
        String uid = Integer.toUnsignedString(self);
        String ambiguous = "refusing to map " + path + ": it shows as uid " + uid + ", this process's own, but this process runs as "
                + "the overflow uid of its user namespace (" + here.describe(Integer.toUnsignedLong(self)) + "), which also "
                + "stands for every user the namespace does not map, ";
        String otherwise = "run this process as a uid other than " + uid + " (kernel.overflowuid), or use memfd, whose importer "
                + "here needs " + uid + " in memfd.trusted.uids, which trusts every one of those users";
        boolean owned;
        try {
            owned = UserNamespace.ownsFile(libc, fd);
        } catch (ErrnoException e) {
            throw new ConduitException(ambiguous + "and setting O_NOATIME on the file, which proves a file its own there, failed: "
                    + e.getMessage() + ". " + Errno.remedy(e.errno(), "see the cause") + "; or " + otherwise, e);
        }
        if (!owned) {
            throw new ConduitException(ambiguous + "and it may not set O_NOATIME on the file (fcntl: EPERM), which only the "
                    + "file's owner may: the file belongs to one of those users. Run the producer as this process's user, or "
                    + otherwise);
        }
    }

    /** Why this user may not open its chunk file, and what to do, as far as the file's owner tells. */
    private String permissionRemedy(SharedDirectory directory, String name) {
        Integer owner;
        Integer mode;
        try {
            FileStatus status = directory.status(name);
            owner = status.uid();
            mode = status.mode();
        } catch (ErrnoException unknown) {
            owner = null;
            mode = null;
        }
        int self = libc.geteuid();
        UserNamespace here = namespace.get();
        String ours = here.describe(Integer.toUnsignedLong(self));
        if (owner != null && here.mayBeUnmapped(Integer.toUnsignedLong(owner))) {
            return "Chunk files are created 0600 and this one shows as uid " + Integer.toUnsignedString(owner) + ", which in this "
                    + "process's user namespace stands for every user the namespace does not map: it most likely belongs to one of "
                    + "them. This process runs as " + ours + ": run the producer as a user this namespace maps (for a rootless "
                    + "container, the user who runs it), or use the memfd plugin";
        }
        if (owner != null && owner == self) {
            if ((mode & 0600) == 0600) {
                return "The file is this user's and its mode is 0" + Integer.toOctalString(mode & 07777) + ": "
                        + SharedDirectory.REFUSED_DESPITE_MODE;
            }
            return "The file is this user's, but its permissions deny it reading and writing: producers create chunk files 0600, "
                    + "so something changed them since";
        }
        return "Chunk files are created 0600" + (owner == null ? "" : " and this one belongs to uid " + Integer.toUnsignedString(owner))
                + ", this process runs as " + ours + ": run producer and consumer as the same user "
                + "(the posix plugin shares memory within one user), or use the memfd plugin";
    }

    @Override
    public String toString() {
        return "posix importer of " + config.directory();
    }
}
