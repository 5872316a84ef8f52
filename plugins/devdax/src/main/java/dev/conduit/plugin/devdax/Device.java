package dev.conduit.plugin.devdax;

import dev.conduit.spi.Cleanup;
import dev.conduit.linux.PageSize;
import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.OpenFlags;
import dev.conduit.spi.ConduitException;

import java.nio.file.Path;

/**
 * One open device as an alias of the device table names it: a device-DAX character device, or a
 * regular file that stands in for one. Everything the provider and the importer do afterwards is
 * the same code for both; only how {@link #size()} and {@link #mapUnit()} are learnt differs:
 *
 * <table class="striped">
 * <caption>Shape of a device</caption>
 * <tr><th>kind</th><th>{@link #size()}</th><th>{@link #mapUnit()}: what {@code mmap} requires offsets and lengths to be multiples of</th></tr>
 * <tr><td>device DAX ({@code S_IFCHR})</td><td>sysfs {@code size}</td><td>sysfs {@code align} (4 KiB, 2 MiB or 1 GiB)</td></tr>
 * <tr><td>regular file ({@code S_IFREG})</td><td>{@code st_size}</td><td>the page size</td></tr>
 * </table>
 *
 * <p>The path is the consumer's or the provider's own configuration, so it may be (or pass
 * through) a symbolic link, as {@code /dev/dax} names often are; what it resolves to is checked
 * with {@code fstat}. Owns its descriptor; {@link #close()} closes it, which also drops any
 * {@code flock} taken on it.
 */
final class Device implements AutoCloseable {

    /** What the alias resolves to. */
    enum Kind {
        DEVICE_DAX("device-DAX"),
        REGULAR_FILE("regular file");

        private final String text;

        Kind(String text) {
            this.text = text;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    private final String alias;
    private final Path path;
    private final FileDescriptor fd;
    private final FileStatus status;
    private final Kind kind;
    private final long size;
    private final long mapUnit;

    private Device(String alias, Path path, FileDescriptor fd, FileStatus status, Kind kind, long size, long mapUnit) {
        this.alias = alias;
        this.path = path;
        this.fd = fd;
        this.status = status;
        this.kind = kind;
        this.size = size;
        this.mapUnit = mapUnit;
    }

    /**
     * Opens {@code path}, read-write or read-only, and learns its shape.
     *
     * @throws ConduitException naming the alias, the path, the system call and errno, and the remedy;
     *                          nothing stays open
     */
    static Device open(Libc libc, String alias, Path path, boolean writable, Sysfs sysfs) {
        // O_NONBLOCK and O_NOCTTY: a misconfigured path to a FIFO or a terminal must be refused, not block or take over.
        int flags = (writable ? OpenFlags.O_RDWR : OpenFlags.O_RDONLY) | OpenFlags.O_NONBLOCK | OpenFlags.O_NOCTTY;
        FileDescriptor fd;
        try {
            fd = libc.open(path.toString(), flags, 0);
        } catch (ErrnoException e) {
            throw openFailure(libc, alias, path, writable, e);
        }
        try {
            FileStatus status;
            try {
                status = libc.fstat(fd);
            } catch (ErrnoException e) {
                throw new ConduitException("cannot learn what device " + path + " (alias '" + alias + "') is: " + e.getMessage()
                        + "; it was opened, so the file system or driver behind it failed: check dmesg, or point the alias in "
                        + DevdaxConfig.DEVICES.nameAndVariable() + " elsewhere", e);
            }
            return switch (status.fileType()) {
                case FileStatus.S_IFCHR -> {
                    Sysfs.DaxAttributes dax = sysfs.daxAttributes(status.rdevMajor(), status.rdevMinor(), path);
                    yield new Device(alias, path, fd, status, Kind.DEVICE_DAX, dax.size(), dax.alignment());
                }
                case FileStatus.S_IFREG -> {
                    if (status.size() <= 0) {
                        throw new ConduitException("device file " + path + " (alias '" + alias + "') is empty: a regular file "
                                + "that stands in for a device must be sized first, e.g. truncate -s 1G " + path);
                    }
                    yield new Device(alias, path, fd, status, Kind.REGULAR_FILE, status.size(), PageSize.get());
                }
                default -> throw notADevice(alias, path, status.fileType());
            };
        } catch (RuntimeException | Error e) {
            Cleanup.run(e, fd::close);
            throw e;
        }
    }

    /** The refusal of a path that is neither a device-DAX device nor a regular file, naming what it is. */
    private static ConduitException notADevice(String alias, Path path, int fileType) {
        return new ConduitException(path + " (alias '" + alias + "') is " + describeType(fileType)
                + ": the devdax plugin maps device-DAX character devices (/dev/daxX.Y) or regular files. "
                + (fileType == FileStatus.S_IFBLK
                ? "A /dev/pmemN block device is fsdax: reconfigure the namespace as devdax (ndctl create-namespace "
                + "--mode=devdax), or put a file on a DAX file system and name that. "
                : "") + "Fix the alias in " + DevdaxConfig.DEVICES.nameAndVariable());
    }

    private static ConduitException openFailure(Libc libc, String alias, Path path, boolean writable, ErrnoException e) {
        // open(2) of a Unix socket fails with ENXIO, as does a device node without a device: only the file's type tells them apart.
        if (e.errno() == Errno.ENXIO && isSocket(libc, path)) {
            ConduitException socket = notADevice(alias, path, FileStatus.S_IFSOCK);
            socket.addSuppressed(e);
            return socket;
        }
        return new ConduitException("cannot open device " + path + " (alias '" + alias + "'): " + e.getMessage() + "; "
                + openRemedy(libc, path, writable, e), e);
    }

    /** Whether {@code path} leads to a Unix socket; {@code false} when that cannot be told, so that the errno speaks for itself. */
    private static boolean isSocket(Libc libc, Path path) {
        // O_PATH opens a socket, and anything else, without touching what is behind it.
        try (FileDescriptor fd = libc.open(path.toString(), OpenFlags.O_PATH, 0)) {
            return libc.fstat(fd).fileType() == FileStatus.S_IFSOCK;
        } catch (ErrnoException unknown) {
            return false;
        }
    }

    /**
     * The cause and the remedy of a failed {@code open}, where the errno tells them, as {@link #mapRemedy}
     * does for {@code mmap}. Only a path that leads nowhere usable is the alias's fault; a shortage of
     * descriptors ({@code EMFILE}, {@code ENFILE}) or memory ({@code ENOMEM}), or a device held open
     * exclusively ({@code EBUSY}), is not, and "check the alias" sent the user the wrong way. Any other
     * errno is left to speak for itself, with the key that names the path.
     */
    static String openRemedy(Libc libc, Path path, boolean writable, ErrnoException e) {
        String key = DevdaxConfig.DEVICES.nameAndVariable();
        return switch (e.errno()) {
            case Errno.ENOENT -> "it does not exist here: fix the alias in " + key + " (each process names the path where it sees the device)";
            // Only an open for writing meets it, and no permission of the device's makes the mount writable.
            case Errno.EROFS -> "it lies on a read-only mount: remount it read-write (in a container, bind-mount it with :rw), "
                    + "or fix the alias in " + key;
            case Errno.EACCES, Errno.EPERM -> "this process (uid " + Integer.toUnsignedString(libc.geteuid()) + ") may not open it "
                    + (writable ? "for reading and writing" : "for reading")
                    + ": grant access to the device (its group, a udev rule, or the container's device cgroup), or fix " + key;
            case Errno.ENXIO, Errno.ENODEV -> UNBOUND;
            case Errno.EMFILE, Errno.ENFILE -> "whatever the alias, " + Errno.shortageRemedy(e.errno());
            case Errno.ENOMEM -> "the kernel had no memory for the open, whatever the alias: free memory (see /proc/meminfo, dmesg) "
                    + "and retry";
            case Errno.EBUSY -> "the device is held open exclusively by another user (a file system mounted on it, or a driver that "
                    + "claimed it): see lsof " + path + " and daxctl list, and release it, or point the alias in " + key + " at another device";
            case Errno.ENOTDIR, Errno.ELOOP, Errno.ENAMETOOLONG -> "the path cannot be resolved: fix the alias in " + key;
            default -> "see the errno; the path comes from the alias in " + key;
        };
    }

    /**
     * Why a device node that opens (or opened) can have no device behind it. {@code mmap} of a
     * device-DAX instance that was disabled after it was opened fails with {@code ENXIO}, and an
     * existing mapping of it raises {@code SIGBUS} on its next fault: only an administrator does
     * this, never a peer without root.
     */
    static final String UNBOUND = "the device node has no device behind it: the device was disabled or its driver unbound "
            + "(daxctl disable-device, ndctl disable-namespace, a reconfiguration); see daxctl list, and enable it again "
            + "(daxctl enable-device) before retrying";

    /**
     * What to append to a failed {@code mmap}'s message: the cause and the remedy, where the errno
     * tells them. {@code ENXIO} is what device DAX returns for a disabled device; {@code ENODEV}
     * means something else, that the file cannot be mapped at all; {@code ENOMEM}, that the process
     * has no address space or mapping left. The alias cannot be at fault for the others: it led to
     * a device that opened. {@code EACCES} and {@code EPERM} come from a security module or a
     * seccomp filter here (the descriptor has the access the mapping asks for); {@code EAGAIN}, from
     * a process that locks its future mappings ({@code mlockall(MCL_FUTURE)}) reaching its
     * locked-memory limit; {@code EINVAL}, from a device that maps in larger units than it had when
     * the caller learnt its alignment. Any other errno is left to speak for itself.
     *
     * @param fewerMappings how the caller's process can hold fewer mappings, offered for {@code ENOMEM}
     *                      and {@code EAGAIN} besides raising the limits; {@code null} if there is no such way
     */
    static String mapRemedy(ErrnoException e, String fewerMappings) {
        String orFewer = fewerMappings == null ? "" : ", or " + fewerMappings;
        return switch (e.errno()) {
            case Errno.ENXIO -> "; " + UNBOUND;
            case Errno.ENOMEM -> "; the process is out of address space or mappings: raise the address-space limit (ulimit -v, "
                    + "RLIMIT_AS) or vm.max_map_count" + orFewer;
            case Errno.ENODEV -> "; the path is neither a device-DAX device nor a file that can be mapped (its file system or driver "
                    + "does not support mmap): point the alias in " + DevdaxConfig.DEVICES.nameAndVariable() + " at a /dev/daxX.Y "
                    + "device, or at a regular file on a file system that maps files, such as tmpfs (/dev/shm), ext4 or xfs";
            case Errno.EACCES, Errno.EPERM -> "; the device opened with the access the mapping needs, so a security module (SELinux, "
                    + "AppArmor) or a seccomp filter refused the mapping: see the audit log (ausearch -m avc, dmesg) and allow this "
                    + "process to map the device";
            case Errno.EAGAIN -> "; the process locks the memory it maps (mlockall) and this mapping would pass its locked-memory "
                    + "limit: raise it (ulimit -l, RLIMIT_MEMLOCK)" + orFewer;
            case Errno.EINVAL -> "; the device refused the range: a device-DAX device maps only whole units of its alignment "
                    + "(sysfs align), which may have been changed (daxctl reconfigure-device --align) since this process opened it; "
                    + "see daxctl list, and reopen what maps the device";
            default -> "";
        };
    }

    static String describeType(int fileType) {
        return switch (fileType) {
            case FileStatus.S_IFDIR -> "a directory";
            case FileStatus.S_IFIFO -> "a FIFO";
            case FileStatus.S_IFSOCK -> "a socket";
            case FileStatus.S_IFBLK -> "a block device";
            case FileStatus.S_IFCHR -> "a character device";
            case FileStatus.S_IFREG -> "a regular file";
            default -> "a file of type 0" + Integer.toOctalString(fileType);
        };
    }

    String alias() {
        return alias;
    }

    Path path() {
        return path;
    }

    FileDescriptor fd() {
        return fd;
    }

    /** From {@code fstat}: {@link FileStatus#dev()} and {@link FileStatus#inode()} identify the node for {@code /proc/locks}. */
    FileStatus status() {
        return status;
    }

    Kind kind() {
        return kind;
    }

    /** The device's size in bytes as the device reports it (not rounded to any alignment). */
    long size() {
        return size;
    }

    /** The unit {@code mmap} offsets and lengths must be multiples of. */
    long mapUnit() {
        return mapUnit;
    }

    /** {@code /dev/dax0.0 (alias 'pmem0')}: how messages name the device. */
    String describe() {
        return path + " (alias '" + alias + "')";
    }

    @Override
    public void close() {
        fd.close();
    }

    @Override
    public String toString() {
        return kind + " " + describe();
    }
}
