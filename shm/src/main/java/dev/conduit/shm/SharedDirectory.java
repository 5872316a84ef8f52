package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.OpenFlags;
import dev.conduit.spi.ConduitException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * This process's view of the directory shared with peers ({@code shared.dir}), opened once.
 *
 * <p>Everything under it is reached with {@code openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)}
 * relative to the directory's descriptor: a name from a peer can neither leave the directory nor
 * follow a planted symlink. Files are created {@code 0600} with {@code O_EXCL | O_NOFOLLOW}, so a
 * pre-created file or link is refused rather than reused. The directory itself is this process's
 * own configuration and may be reached through symlinks (a container's bind mount).
 */
public final class SharedDirectory implements AutoCloseable {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int CREATE = OpenFlags.O_RDWR | OpenFlags.O_CREAT | OpenFlags.O_EXCL | OpenFlags.O_NOFOLLOW | OpenFlags.O_CLOEXEC;

    private final Libc libc;
    private final Path path;
    private final FileDescriptor fd;
    private final String configKey;

    private SharedDirectory(Libc libc, Path path, FileDescriptor fd, String configKey) {
        this.libc = libc;
        this.path = path;
        this.fd = fd;
        this.configKey = configKey;
    }

    /**
     * Opens {@code path}.
     *
     * @param configKey the key that configured it, named in errors ("shared.dir (CONDUIT_SHARED_DIR)")
     * @throws ConduitException naming the path, the errno and the key to fix
     */
    public static SharedDirectory open(Libc libc, Path path, String configKey) {
        try {
            FileDescriptor fd = libc.open(path.toString(), OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY | OpenFlags.O_CLOEXEC, 0);
            return new SharedDirectory(libc, path, fd, configKey);
        } catch (ErrnoException e) {
            String otherwise = "create it, make it readable and writable for this user, or set " + configKey;
            // A file where the directory should be is no directory to create or to open up: "create
            // it" sent a user whose shared.dir named a file to a step that cannot work.
            String remedy = e.errnoName().equals("ENAMETOOLONG") ? tooLong(path) + "; " + otherwise
                    : e.errno() == Errno.ENOTDIR ? "the path, or a name on it, is a file, not a directory: set " + configKey
                            + " to a directory (or remove the file and create the directory there)"
                    : Errno.remedy(e.errno(), otherwise);
            throw new ConduitException("cannot open the shared directory " + path + ": " + e.errnoName()
                    + " (" + e.getMessage() + "); " + remedy, e);
        }
    }

    /** {@code PATH_MAX}, with the terminating NUL: the longest path the kernel takes is one byte shorter. */
    private static final int PATH_MAX = 4096;

    /** Whether the kernel refuses {@code path} whole, for its length alone ({@code ENAMETOOLONG}). */
    public static boolean isPastPathMax(Path path) {
        return path.toString().getBytes(StandardCharsets.UTF_8).length >= PATH_MAX;
    }

    /**
     * Why opening the directory {@code path} failed with {@code ENAMETOOLONG}, and what to do: a path
     * past {@code PATH_MAX} ({@link #TOO_LONG_A_PATH}), or, in a path within it, a single name past
     * {@code NAME_MAX}, which no shorter way to it helps, as no directory has that name.
     */
    public static String tooLong(Path path) {
        return isPastPathMax(path) ? TOO_LONG_A_PATH : TOO_LONG_A_NAME;
    }

    /** Why a path within {@code PATH_MAX} fails with {@code ENAMETOOLONG}: a name on it, or in a link it passes, is too long. */
    static final String TOO_LONG_A_NAME = "a name on the path (or in a symbolic link it passes through) is longer than the kernel "
            + "takes (NAME_MAX: 255 bytes), so no directory is there: check the path";

    /**
     * Why a directory path of more than {@code PATH_MAX} bytes does not open, and what to do: only the
     * open of the directory itself takes its whole path (every file in it is reached through its
     * descriptor), so a shorter way to the same directory is enough.
     */
    public static final String TOO_LONG_A_PATH = "the path is longer than the kernel takes (PATH_MAX: 4,095 bytes): reach the same "
            + "directory through a shorter path, a symbolic link or a bind mount to it, and configure that";

    /**
     * What removes Conduit's files from a shared directory while their owners live, for messages
     * that say so: such cleaners are the usual cause, and keeping them off the directory the remedy.
     */
    public static final String CLEANERS = "a cleanup job such as systemd-tmpfiles, or systemd-logind with RemoveIPC=yes, which "
            + "removes a user's /dev/shm files when its last session ends";

    /**
     * Why a file whose owner and mode bits let this process in was refused, and where to look:
     * usually a security module (on SELinux hosts a container reaches a bind-mounted directory
     * only with the container's label), else an ACL, a file attribute or a network file system.
     */
    public static final String REFUSED_DESPITE_MODE = "the owner and mode bits would allow this process, so something else "
            + "refused: usually a security module (SELinux: relabel a dedicated shared directory, e.g. docker run -v DIR:DIR:z, not "
            + "/dev/shm itself, or run with --security-opt label=disable; AppArmor; the audit log names the rule: ausearch -m avc, "
            + "journalctl -k), else an ACL (getfacl), an immutable or append-only attribute (lsattr), or a network or FUSE file "
            + "system's server (NFS root_squash)";

    /**
     * What to do about {@code e}, a failure to create a file or a socket in this directory: each
     * errno has its own cause (a full file system is not a permission problem), and every remedy
     * that moves the directory names the key that configured it.
     */
    public String creationRemedy(ErrnoException e) {
        String elsewhere = "or set " + configKey + " to another directory";
        return switch (e.errnoName()) {
            case "ENOSPC", "EDQUOT" -> "the file system of " + path + " has no room left, of bytes or of inodes (df -h, df -i"
                    + (e.errnoName().equals("EDQUOT") ? "; EDQUOT: this user's quota" : "") + "): free some, enlarge it (a "
                    + "container's /dev/shm is 64 MiB unless started with e.g. docker run --shm-size=1g; a tmpfs: mount -o "
                    + "remount,size=...,nr_inodes=...), " + elsewhere;
            case "ENOENT" -> stillThere()
                    // procfs answers a create with ENOENT: the directory is there, its file system makes no files.
                    ? path + " is on a file system that makes no files of ours (procfs, for one): set " + configKey
                    + " to a directory on one that does, such as a tmpfs (/dev/shm)"
                    : "the directory " + path + " was removed while this process uses it: make it again and restart this "
                    + "process, " + elsewhere;
            case "EROFS" -> path + " is on a read-only mount: mount it read-write (a container: -v DIR:DIR without :ro), " + elsewhere;
            case "EACCES", "EPERM" -> java.nio.file.Files.isWritable(path)
                    // access(2) grants what the create was refused: sysfs refuses even root, a security module anyone.
                    ? REFUSED_DESPITE_MODE + "; or " + path + " is on a file system that makes no files of ours (sysfs, for one): "
                    + "set " + configKey + " to a directory on one that does, such as a tmpfs (/dev/shm)"
                    : "make " + path + " writable for this user, " + elsewhere;
            default -> Errno.remedy(e.errno(), "see the cause; the directory is " + path + ", set by " + configKey);
        };
    }

    /**
     * What to do about {@code e}, a failure of {@code flock} on a lease in this directory other than
     * "held" ({@link OwnerLease#acquire}): every owner is judged by the lock on its lease, so a
     * directory whose file system grants none can hold no owner. The wording of the same case for
     * a device-DAX stand-in file ({@code DevdaxProvider}'s lock remedy).
     */
    public String lockRemedy(ErrnoException e) {
        return Errno.remedy(e.errno(), "the file system of " + path + " grants no file locks (flock), by which every owner "
                + "there is judged alive: a network file system whose lock service (NFS's lockd) did not answer or that is "
                + "mounted without locks (nolock), or a FUSE one; set " + configKey + " to a directory on a local file system, "
                + "such as a tmpfs (/dev/shm)" + (e.errno() == Errno.ENOLCK
                ? "; or the kernel is out of memory for lock records: retry when memory is free" : ""));
    }

    /** Whether {@link #path()} still names the directory this object opened (same device and inode), not one removed since. */
    private boolean stillThere() {
        try {
            FileStatus opened = libc.fstat(fd);
            var named = java.nio.file.Files.readAttributes(path, "unix:dev,ino");
            return opened.dev() == (long) named.get("dev") && opened.inode() == (long) named.get("ino");
        } catch (java.io.IOException | RuntimeException e) {
            return false;
        }
    }

    /** The key that configured this directory, as errors name it ("shared.dir (CONDUIT_SHARED_DIR)"). */
    String configKey() {
        return configKey;
    }

    public Path path() {
        return path;
    }

    public FileDescriptor fd() {
        return fd;
    }

    /**
     * Creates {@code name} (a single path segment), {@code 0600} whatever the umask, failing if anything by that name
     * exists.
     */
    public FileDescriptor createExclusive(String name) {
        FileDescriptor created = libc.openBeneath(fd, name, CREATE, 0600);
        try {
            // A umask that takes the owner's bits (0277 leaves 0400) would have this user's peers refused their read-write
            // open of a chunk or queue, and its lease unjudgeable.
            libc.fchmod(created, 0600);
        } catch (ErrnoException modesNotKept) {
            // A file system without modes (vfat, say) refuses it; there the umask does not apply either.
        }
        return created;
    }

    /**
     * Opens an existing file below the directory, refusing {@code ..}, absolute paths and symlinks
     * on the way ({@code ELOOP}, {@code EXDEV}).
     */
    public FileDescriptor openExisting(String relative, int flags) {
        return libc.openBeneath(fd, relative, flags | OpenFlags.O_NOFOLLOW | OpenFlags.O_CLOEXEC, 0);
    }

    /**
     * The status of what has {@code name} below the directory — the link itself, not what it points
     * to — read without opening it for reading ({@code O_PATH}): also when it does not open for this
     * process.
     *
     * @throws ErrnoException as {@link #openExisting} ({@code ENOENT} when it is gone)
     */
    public FileStatus status(String name) {
        try (FileDescriptor file = openExisting(name, OpenFlags.O_PATH)) {
            return libc.fstat(file);
        }
    }

    /**
     * Opens a lease file (a regular file a peer may name) for reading, to lock or watch it, as
     * {@link #openRegularFile} does: never blocks on a FIFO, never opens a device node.
     *
     * @throws ErrnoException as {@link #openExisting}, and {@code EINVAL} for anything but a regular file
     */
    public FileDescriptor openLease(String name) {
        return openRegularFile(name, OpenFlags.O_RDONLY, "lease", "a lease is a regular file; something else has its name in "
                + "the shared directory");
    }

    /**
     * Opens {@code name}, which a peer may have put there, with {@code flags} ({@code O_NONBLOCK} and
     * {@code O_NOCTTY} added), once a look that opens nothing ({@code O_PATH}) found a regular file
     * under it: anything else is refused before it is opened. A device node is never opened, for
     * its driver acts on an open, whoever makes it (a watchdog's open arms it, and the machine
     * reboots unless it is fed; a tape's close rewinds it): a process that can make one in the
     * directory (a container's root, with Docker's default {@code CAP_MKNOD}, in a bind-mounted
     * directory without {@code nodev}) could have the host's processes, root's too, open any
     * device of the host through it. Before, a lease or a posix chunk was opened first and its
     * type looked at after (helper h35). What is opened is what was looked at: the {@code O_PATH}
     * descriptor is reopened through {@code /proc/self/fd}, so a name swapped in between opens
     * nothing else. Where {@code /proc} is not mounted the name is opened again and must lead to
     * the same file, so only a swap in that instant can open a device.
     *
     * @param what   what the file is, for the error ("lease")
     * @param refuse why anything but a regular file is refused, for the error
     * @throws ErrnoException as {@link #openExisting}, and {@code EINVAL} for anything but a regular file
     */
    public FileDescriptor openRegularFile(String name, int flags, String what, String refuse) {
        int open = flags | OpenFlags.O_NONBLOCK | OpenFlags.O_NOCTTY;
        try (FileDescriptor looked = openExisting(name, OpenFlags.O_PATH)) {
            FileStatus status = libc.fstat(looked);
            if (!status.isRegularFile()) throw notRegular(name, what, refuse);
            FileDescriptor opened;
            try {
                // The magic link reopens the file the descriptor holds, not what the name leads to now; O_NOFOLLOW would refuse it.
                opened = libc.open("/proc/self/fd/" + looked.fd(), open | OpenFlags.O_CLOEXEC, 0);
            } catch (ErrnoException e) {
                // Said of the file, whose name the reader knows, not of the descriptor's link.
                if (!e.errnoName().equals("ENOENT")) throw new ErrnoException("open", e.errno(), path.resolve(name).toString(), path.resolve(name) + ", a " + what);
                opened = openExisting(name, open); // no /proc here
            }
            try {
                FileStatus now = libc.fstat(opened);
                if (now.dev() != status.dev() || now.inode() != status.inode()) throw notRegular(name, what, refuse);
                return opened;
            } catch (RuntimeException e) {
                opened.close();
                throw e;
            }
        }
    }

    private ErrnoException notRegular(String name, String what, String refuse) {
        return new ErrnoException("open", Errno.EINVAL, path.resolve(name).toString(), path.resolve(name) + ", a " + what, refuse);
    }

    /**
     * Removes a file of this process's own as its owner closes it, as {@link #unlink}, failing with
     * the path, the errno and what to do: the directory's permissions or mount changed while in
     * use, say (EACCES, EROFS). What is left goes with the next reclaim once its owner's lease is
     * released.
     */
    public void remove(String name) {
        try {
            unlink(name);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot remove " + path.resolve(name) + ": " + e.errnoName() + " (" + e.getMessage() + "); "
                    + Errno.remedy(e.errno(), "restore this user's write access to " + path + " (its permissions or mount changed while in use); "
                    + "what is left there is removed by the next pool or worker opened on it once its owner has closed or died"), e);
        }
    }

    /** Removes {@code name}; a name that is already gone is not an error. */
    public void unlink(String name) {
        try {
            libc.unlinkat(fd, name, 0);
        } catch (ErrnoException e) {
            if (!"ENOENT".equals(e.errnoName())) throw e;
        }
    }

    /**
     * The names in the directory that start with {@code prefix}, sorted: the directory this
     * process holds open, as every other operation here, not whatever its path names now. Names
     * that are not UTF-8 are left out: no Conduit process makes one, and none could be named back.
     *
     * @throws ConduitException naming the errno and what to do: listing opens a descriptor, so a
     *                          process out of them fails here ({@code EMFILE}), and a directory removed
     *                          while in use is {@code ENOENT}
     */
    public List<String> list(String prefix) {
        List<String> names;
        try {
            names = libc.listDirectory(fd);
        } catch (ErrnoException e) {
            throw listFailure(e);
        }
        // A name that is not UTF-8 was decoded with replacement characters and cannot be named back to the kernel: no
        // Conduit process makes one, and a reclaim that listed it reported it removed when its unlink found nothing.
        return names.stream().filter(n -> n.startsWith(prefix) && n.indexOf('\uFFFD') < 0).sorted().toList();
    }

    private ConduitException listFailure(ErrnoException e) {
        String remedy = switch (e.errnoName()) {
            case "EACCES", "EPERM" -> "make " + path + " readable for this user (its permissions or mount changed while in use), "
                    + "or set " + configKey + " to another directory";
            default -> creationRemedy(e);
        };
        return new ConduitException("cannot list the shared directory " + path + ": " + e.errnoName() + " (" + e.getMessage()
                + "); " + remedy, e);
    }

    /**
     * A file's name, or a text that quotes one (an errno's message: {@code unlinkat(fd N (...), "<name>", 0)}), as a line
     * of output or of a log shows it: control and format characters, and the line and paragraph separators, as
     * {@code \\uXXXX}. Anyone who may write a shared directory ({@code /dev/shm} is everyone's) names its files; shown
     * as they are, a newline forged a line (a LIVE owner that is none) and an escape sequence reached the terminal of
     * whoever read it. The one rule of {@code conduit info}'s and {@code conduit reclaim}'s lines and of the reclaim's
     * WARNING ({@link OwnerLease#reclaimDead}).
     */
    public static String shown(String text) {
        StringBuilder b = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean hidden = Character.isISOControl(c) || Character.getType(c) == Character.FORMAT
                    || c == '\u2028' || c == '\u2029';
            if (hidden && b == null) b = new StringBuilder(text.substring(0, i));
            if (b != null) b.append(hidden ? String.format("\\u%04x", (int) c) : String.valueOf(c));
        }
        return b == null ? text : b.toString();
    }

    /** 128 random bits as 32 hex digits: names no peer can guess or collide with. */
    public static String randomId() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /**
     * File systems ({@code statfs}'s {@code f_type}) that other kernels may see too (another host; a VM and its host), each
     * through a page cache and a lock table of its own, and what they are.
     */
    private static final Map<Long, String> SEEN_BY_OTHER_KERNELS = Map.ofEntries(
            Map.entry(Libc.NFS_SUPER_MAGIC, "NFS"),
            Map.entry(Libc.SMB_SUPER_MAGIC, "SMB"),
            Map.entry(Libc.CIFS_SUPER_MAGIC, "SMB/CIFS"),
            Map.entry(Libc.SMB2_SUPER_MAGIC, "SMB2/3"),
            Map.entry(Libc.CEPH_SUPER_MAGIC, "CephFS"),
            Map.entry(Libc.V9FS_MAGIC, "9p"),
            Map.entry(Libc.FUSE_SUPER_MAGIC, "FUSE, virtiofs among them"),
            Map.entry(Libc.AFS_SUPER_MAGIC, "AFS"),
            Map.entry(Libc.AFS_FS_MAGIC, "AFS"),
            Map.entry(Libc.CODA_SUPER_MAGIC, "Coda"),
            Map.entry(Libc.OCFS2_SUPER_MAGIC, "OCFS2, a cluster file system"),
            Map.entry(Libc.GFS2_MAGIC, "GFS2, a cluster file system"));

    /** What the file system of {@code type} ({@code f_type}) is where other kernels may see it too ("NFS"); null for any other. */
    public static String seenByOtherKernels(long type) {
        return SEEN_BY_OTHER_KERNELS.get(type);
    }

    /**
     * {@link #seenByOtherKernels(long)} of the file system that holds this directory's descriptor; null too when its
     * {@code fstatfs} fails, which an open descriptor's does not short of an I/O error.
     */
    public String seenByOtherKernels() {
        try {
            return seenByOtherKernels(libc.fileSystemSpace(fd).type());
        } catch (ErrnoException e) {
            return null;
        }
    }

    @Override
    public void close() {
        fd.close();
    }

    @Override
    public String toString() {
        return path.toString();
    }
}
