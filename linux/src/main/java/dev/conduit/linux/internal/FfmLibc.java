package dev.conduit.linux.internal;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.EventfdFlags;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.FileSystemSpace;
import dev.conduit.linux.FutexResult;
import dev.conduit.linux.Libc;
import dev.conduit.linux.LockFlags;
import dev.conduit.linux.MappingCount;
import dev.conduit.linux.MemfdFlags;
import dev.conduit.linux.MmapFlags;
import dev.conduit.linux.OpenFlags;
import dev.conduit.linux.PageSize;
import dev.conduit.linux.PeerCredentials;
import dev.conduit.linux.PollEvents;
import dev.conduit.linux.ReceivedMessage;
import dev.conduit.linux.Seals;
import dev.conduit.linux.SocketFlags;
import dev.conduit.linux.SocketPair;
import dev.conduit.linux.internal.Native.CallState;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import static dev.conduit.linux.internal.Layouts.*;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * {@link Libc} on the C library, through FFM: the only implementation, and the only class that
 * invokes downcall handles (made by {@link Native}).
 *
 * <p>Each handle lives in a holder class of its own, next to the one private wrapper that unwraps
 * its {@code invokeExact}: a function is bound at its first use, and from then on is a constant
 * the JIT can inline. Public methods add the retry, error and resource logic.
 */
public final class FfmLibc implements Libc {

    /** The process-wide instance; {@link dev.conduit.linux.Linux#libc()} hands it out once the probe passed. */
    public static final FfmLibc INSTANCE = new FfmLibc();

    private static final System.Logger LOGGER = System.getLogger(FfmLibc.class.getName());

    /** How {@link #openBeneath} tries {@code openat2}: {@link #openat2} itself, except in tests. */
    @FunctionalInterface
    interface Openat2 {
        FileDescriptor open(FileDescriptor directory, String path, int flags, int mode, long resolve);
    }

    private final Openat2 beneathAttempt;

    /** Set once {@code openat2} returned ENOSYS, so later opens go straight to the fallback. */
    private volatile boolean openat2Missing;

    private FfmLibc() {
        beneathAttempt = this::openat2;
    }

    /**
     * An instance whose {@link #openBeneath} tries {@code openat2} through {@code openat2}: for tests, to
     * answer as a kernel without it or a container that forbids it would. Everything else is the C library.
     */
    FfmLibc(Openat2 openat2) {
        beneathAttempt = Objects.requireNonNull(openat2, "openat2");
    }

    // ================================================================ memory

    @Override
    public FileDescriptor memfdCreate(String name, int flags) {
        int allFlags = flags | MemfdFlags.MFD_CLOEXEC;
        int nameLength = pathBytes(name).length;
        if (nameLength > MEMFD_NAME_MAX) {
            // The kernel answers a bare EINVAL, which names neither the name nor its limit.
            throw new ErrnoException("memfd_create", Errno.EINVAL, name, quote(name) + ", " + MemfdFlags.describe(allFlags),
                    "the name is " + nameLength + " bytes of UTF-8, and memfd_create takes at most " + MEMFD_NAME_MAX
                            + " (MFD_NAME_MAX_LEN: NAME_MAX less \"memfd:\"): give a shorter name");
        }
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            int fd = memfdCreate(state.capture, cString(arena, name), allFlags);
            if (fd < 0) {
                throw failure(state, "memfd_create", name, quote(name) + ", " + MemfdFlags.describe(allFlags));
            }
            return FileDescriptor.adopt(fd, "memfd:" + name);
        }
    }

    /** The longest name {@code memfd_create} takes, in bytes: the kernel's {@code MFD_NAME_MAX_LEN} (mm/memfd.c), in no header. */
    private static final int MEMFD_NAME_MAX = 249;

    @Override
    public void ftruncate(FileDescriptor fd, long length) {
        CallState state = Native.callState();
        int result;
        do {
            result = ftruncate(state.capture, fd.fd(), length);
        } while (result < 0 && state.errno() == Errno.EINTR);
        if (result < 0) {
            throw failure(state, "ftruncate", fd.toString(), fd + ", " + length);
        }
    }

    @Override
    public void fallocate(FileDescriptor fd, long offset, long length) {
        CallState state = Native.callState();
        int result;
        do {
            result = fallocate(state.capture, fd.fd(), offset, length);
        } while (result < 0 && state.errno() == Errno.EINTR);
        if (result < 0) {
            throw failure(state, "fallocate", fd.toString(), fd + ", 0, " + offset + ", " + length);
        }
    }

    @Override
    public void addSeals(FileDescriptor fd, int seals) {
        CallState state = Native.callState();
        if (fcntl(state.capture, fd.fd(), Abi.F_ADD_SEALS, seals) < 0) {
            throw failure(state, "fcntl", fd.toString(), fd + ", F_ADD_SEALS, " + Seals.describe(seals));
        }
    }

    @Override
    public int seals(FileDescriptor fd) {
        CallState state = Native.callState();
        int seals = fcntl(state.capture, fd.fd(), Abi.F_GET_SEALS, 0);
        if (seals < 0) {
            throw failure(state, "fcntl", fd.toString(), fd + ", F_GET_SEALS");
        }
        return seals;
    }

    @Override
    public int fileStatusFlags(FileDescriptor fd) {
        CallState state = Native.callState();
        int flags = fcntl(state.capture, fd.fd(), Abi.F_GETFL, 0);
        if (flags < 0) {
            throw failure(state, "fcntl", fd.toString(), fd + ", F_GETFL");
        }
        return flags;
    }

    @Override
    public void setFileStatusFlags(FileDescriptor fd, int flags) {
        CallState state = Native.callState();
        if (fcntl(state.capture, fd.fd(), Abi.F_SETFL, flags) < 0) {
            throw failure(state, "fcntl", fd.toString(), fd + ", F_SETFL, " + OpenFlags.describe(flags));
        }
    }

    @Override
    @SuppressWarnings("restricted") // reinterpret: giving the mapping its true size and owner is the point
    public MemorySegment mmap(FileDescriptor fd, long offset, long length, int protection, int flags, Arena arena) {
        Objects.requireNonNull(arena, "arena");
        if (length <= 0 || offset < 0) {
            throw new IllegalArgumentException("mmap of " + length + " bytes at offset " + offset + " of " + fd);
        }
        requireWholeHugePages(fd, length);
        CallState state = Native.callState();
        MemorySegment address = mmap(state.capture, MemorySegment.NULL, length, protection, flags, fd.fd(), offset);
        if (address.address() == Abi.MAP_FAILED) {
            throw mmapFailure(state, fd, "NULL, " + length + ", " + MmapFlags.describeProtection(protection)
                    + ", " + MmapFlags.describe(flags) + ", " + fd + ", " + offset);
        }
        try {
            // The cleanup gets a fresh segment with this address and length: it captures nothing,
            // so it cannot keep the arena (or anything else) reachable.
            return address.reinterpret(length, arena, FfmLibc::unmap);
        } catch (RuntimeException | Error e) {
            // The arena was closed meanwhile: nothing owns the mapping yet, so undo it here.
            munmap(state.capture, address, length);
            throw e;
        }
    }

    /** The generic Linux values (x86-64 and aarch64 alike); used only here, over address space this class reserved or mapped itself. */
    private static final int MAP_FIXED = 0x10;
    private static final int MAP_ANONYMOUS = 0x20;

    @Override
    @SuppressWarnings("restricted") // reinterpret, as in mmap: the aligned mapping gets its true size and owner
    public MemorySegment mmapAligned(FileDescriptor fd, long offset, long length, long alignment, int protection, int flags, Arena arena) {
        Objects.requireNonNull(arena, "arena");
        if (alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("mmap alignment " + alignment + " is not a power of two");
        }
        if (alignment <= PageSize.get()) return mmap(fd, offset, length, protection, flags, arena);
        if (length <= 0 || offset < 0) {
            throw new IllegalArgumentException("mmap of " + length + " bytes at offset " + offset + " of " + fd);
        }
        if (length > Long.MAX_VALUE - alignment) {
            throw new IllegalArgumentException("mmap of " + length + " bytes of " + fd + " aligned to " + alignment
                    + ": the address space to reserve, length plus alignment, is past 2^63 bytes; map less");
        }
        requireWholeHugePages(fd, length);
        CallState state = Native.callState();
        long reserved = length + alignment;
        MemorySegment reservation = mmap(state.capture, MemorySegment.NULL, reserved, MmapFlags.PROT_NONE,
                MmapFlags.MAP_PRIVATE | MAP_ANONYMOUS | MmapFlags.MAP_NORESERVE, -1, 0);
        if (reservation.address() == Abi.MAP_FAILED) {
            throw mmapFailure(state, fd, "NULL, " + reserved + ", PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0"
                    + " (reserving address space for a mapping aligned to " + alignment + ")");
        }
        long start = (reservation.address() + alignment - 1) & -alignment;
        MemorySegment address = mmap(state.capture, MemorySegment.ofAddress(start), length, protection, flags | MAP_FIXED, fd.fd(), offset);
        if (address.address() == Abi.MAP_FAILED) {
            ErrnoException e = mmapFailure(state, fd, "0x" + Long.toHexString(start) + ", " + length + ", "
                    + MmapFlags.describeProtection(protection) + ", " + MmapFlags.describe(flags) + "|MAP_FIXED, " + fd + ", " + offset);
            munmap(state.capture, reservation, reserved);
            throw e;
        }
        // Give back what the aligned mapping does not cover, before and after it.
        if (start > reservation.address()) munmap(state.capture, reservation, start - reservation.address());
        // The mapping covers whole pages: munmap from the end of its last page (an unaligned start is EINVAL, which
        // would leave the rest of the reservation mapped for good).
        long page = PageSize.get();
        long end = start + (length + page - 1) / page * page;
        long reservationEnd = reservation.address() + reserved;
        if (reservationEnd > end) munmap(state.capture, MemorySegment.ofAddress(end), reservationEnd - end);
        try {
            return address.reinterpret(length, arena, FfmLibc::unmap);
        } catch (RuntimeException | Error e) {
            munmap(state.capture, address, length);
            throw e;
        }
    }

    /**
     * Refuses to map a file on hugetlbfs in a length that ends inside a huge page. The kernel maps
     * the whole last page, but unmaps no part of one: the close's placeholder and its munmap, of
     * the length asked, would fail with EINVAL and leave the mapping, its huge page and its file
     * for the life of the process. One fstatfs tells both the file system and its huge page size.
     */
    private static void requireWholeHugePages(FileDescriptor fd, long length) {
        MemorySegment statfs = fileSystemStatus(fd);
        if (statfs.get(JAVA_LONG, Layouts.STATFS_F_TYPE) != Libc.HUGETLBFS_MAGIC) return;
        long hugePage = statfs.get(JAVA_LONG, Layouts.STATFS_F_BSIZE);
        if (length % hugePage != 0) {
            throw new IllegalArgumentException("mmap of " + length + " bytes of " + fd + ": the file is on hugetlbfs, whose huge pages of "
                    + hugePage + " bytes the kernel maps and unmaps only whole; map a multiple of " + hugePage + " bytes");
        }
    }

    /** The name of the empty memfd that a closed mapping's range maps until it is unmapped. */
    private static final MemorySegment PLACEHOLDER_NAME = Arena.global().allocateFrom(ClosedMappings.PLACEHOLDER_NAME);

    /**
     * The arena's cleanup for a mapping. One {@code mmap(MAP_FIXED)} replaces the mapping with one
     * of an empty memfd (the placeholder): the file's pages are released now, and an access that
     * the arena's close handshake missed raises {@code SIGBUS} (an {@link InternalError} in that
     * thread) rather than {@code SIGSEGV}. {@link ClosedMappings} unmaps the range a grace period
     * later. Should the placeholder fail (no descriptor, no memory for the kernel's entry), the
     * range is unmapped at once, as without it, and a DEBUG line says why.
     */
    private static void unmap(MemorySegment mapping) {
        long address = mapping.address();
        long length = mapping.byteSize();
        CallState state = Native.callState();
        int placeholder = memfdCreate(state.capture, PLACEHOLDER_NAME, MemfdFlags.MFD_CLOEXEC);
        if (placeholder < 0) {
            unmapUnprotected(address, length, "memfd_create", state.errno());
            return;
        }
        boolean placed;
        int errno;
        try {
            placed = mmap(state.capture, MemorySegment.ofAddress(address), length, MmapFlags.PROT_READ | MmapFlags.PROT_WRITE,
                    MmapFlags.MAP_SHARED | MAP_FIXED, placeholder, 0).address() != Abi.MAP_FAILED;
            errno = state.errno();
        } finally {
            close(state.capture, placeholder); // a mapping keeps its file; the descriptor is not needed
        }
        if (!placed) {
            // A failed MAP_FIXED may have left the old mapping, or part of it: unmap the range whatever it holds.
            unmapUnprotected(address, length, "mmap", errno);
            return;
        }
        ClosedMappings.PROCESS.hold(address, length);
    }

    private static void unmapUnprotected(long address, long length, String call, int errno) {
        LOGGER.log(System.Logger.Level.DEBUG, () -> "a closed mapping at 0x" + Long.toHexString(address) + " is unmapped at once, "
                + "without a placeholder for accesses that outlive the close: " + call + ": " + Errno.name(errno));
        unmapNow(address, length);
    }

    /** The only caller of {@code munmap} for a mapping a segment was handed out for. */
    static void unmapNow(long address, long length) {
        CallState state = Native.callState();
        if (munmap(state.capture, MemorySegment.ofAddress(address), length) < 0) {
            // This runs inside Arena.close() or on the unmapper thread, where an exception would
            // hide the close's outcome or reach no one; munmap fails only for arguments that mmap
            // itself produced, so this is a bug report.
            String errno = Errno.name(state.errno());
            LOGGER.log(System.Logger.Level.ERROR, () -> "munmap(0x" + Long.toHexString(address) + ", " + length + "): " + errno);
        }
    }

    // ================================================================ files

    @Override
    public FileDescriptor open(String path, int flags, int mode) {
        int allFlags = flags | OpenFlags.O_CLOEXEC;
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cPath = cString(arena, path);
            int fd;
            do {
                fd = open(state.capture, cPath, allFlags, mode);
            } while (fd < 0 && state.errno() == Errno.EINTR);
            if (fd < 0) {
                throw failure(state, "open", path, quote(path) + ", " + openArguments(allFlags, mode));
            }
            return FileDescriptor.adopt(fd, path);
        }
    }

    @Override
    public FileDescriptor openat(FileDescriptor directory, String path, int flags, int mode) {
        int allFlags = flags | OpenFlags.O_CLOEXEC;
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cPath = cString(arena, path);
            int fd;
            do {
                fd = openat(state.capture, directory.fd(), cPath, allFlags, mode);
            } while (fd < 0 && state.errno() == Errno.EINTR);
            if (fd < 0) {
                throw failure(state, "openat", path, directory + ", " + quote(path) + ", " + openArguments(allFlags, mode));
            }
            return FileDescriptor.adopt(fd, resolve(directory, path));
        }
    }

    /** The {@code RESOLVE_*} flags whose lookups check {@code ..} against renames and mounts. */
    private static final long SCOPED = OpenFlags.RESOLVE_BENEATH | OpenFlags.RESOLVE_IN_ROOT;
    /** How many times {@link #openat2} tries again after a scoped lookup's {@code EAGAIN} (each such race is rare). */
    private static final int SCOPED_RACE_RETRIES = 16;

    private static boolean hasDotDot(String path) {
        for (String name : path.split("/")) {
            if (name.equals("..")) return true;
        }
        return false;
    }

    @Override
    public FileDescriptor openat2(FileDescriptor directory, String path, int flags, int mode, long resolve) {
        int allFlags = flags | OpenFlags.O_CLOEXEC;
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cPath = cString(arena, path);
            MemorySegment how = arena.allocate(OPEN_HOW);
            how.set(JAVA_LONG, HOW_FLAGS, Integer.toUnsignedLong(allFlags));
            // openat2, unlike openat, rejects a mode where none applies (EINVAL), and applies none it is not given.
            how.set(JAVA_LONG, HOW_MODE, creates(allFlags) ? mode : 0);
            how.set(JAVA_LONG, HOW_RESOLVE, resolve);
            long fd;
            int raced = 0;
            while (true) {
                fd = syscall(state.capture, Abi.SYS_openat2, directory.fd(), cPath, how, OPEN_HOW.byteSize());
                if (fd >= 0) break;
                if (state.errno() == Errno.EINTR) continue;
                // A scoped lookup (RESOLVE_BENEATH, RESOLVE_IN_ROOT) gives EAGAIN for a '..' that a rename or mount
                // anywhere on the system raced, as it cannot tell whether the '..' left the directory: a retry is what
                // openat2(2) prescribes. Bounded, so that a storm of renames ends in an error rather than a spin.
                // Only for a path with a '..': an EAGAIN of another cause (O_NONBLOCK on a file under a conflicting lease) is
                // thrown as it came, not retried and named a race.
                if (state.errno() != Errno.EAGAIN || (resolve & SCOPED) == 0 || !hasDotDot(path) || ++raced > SCOPED_RACE_RETRIES) {
                    break;
                }
            }
            if (fd < 0) {
                String arguments = directory + ", " + quote(path) + ", {" + openArguments(allFlags, mode)
                        + ", " + OpenFlags.describeResolve(resolve) + "}";
                if (raced > SCOPED_RACE_RETRIES) {
                    throw new ErrnoException("openat2", state.errno(), path, arguments, "renames or mounts on this system raced "
                            + "the '..' of the path " + raced + " times in a row: try again, or give a path without '..'");
                }
                throw failure(state, "openat2", path, arguments);
            }
            return FileDescriptor.adopt((int) fd, resolve(directory, path));
        }
    }

    @Override
    public FileDescriptor openBeneath(FileDescriptor directory, String path, int flags, int mode) {
        if (!openat2Missing) {
            try {
                return beneathAttempt.open(directory, path, flags, mode, OpenFlags.RESOLVE_BENEATH | OpenFlags.RESOLVE_NO_SYMLINKS);
            } catch (ErrnoException e) {
                if (e.errno() == Errno.ENOSYS) {
                    openat2Missing = true;
                } else if (e.errno() != Errno.EPERM) {
                    // EPERM is also what an older container seccomp profile answers to a system call it does not know
                    // (Docker before 20.10): try the component-by-component walk, which a real EPERM fails again.
                    throw e;
                }
            }
        }
        return openBeneathByComponents(directory, path, flags, mode);
    }

    /**
     * {@link #openBeneath} for kernels without {@code openat2}: refuses {@code ..} and absolute
     * paths by inspection, then opens one component at a time with {@code O_NOFOLLOW}, checking
     * that each intermediate one is a directory and not a link. A path that ends in {@code /} or
     * {@code /.} asks for a directory: its last name is walked as one more directory and
     * {@code .} opened in it, and a create of a name that ends in {@code /} is refused with
     * {@code EISDIR} (the kernel's check before it looks the name up). The errno of each refusal
     * is the one {@code openat2} would give. Package-private so that tests can run it on any kernel.
     */
    FileDescriptor openBeneathByComponents(FileDescriptor directory, String path, int flags, int mode) {
        String arguments = directory + ", " + quote(path) + ", " + openArguments(flags | OpenFlags.O_CLOEXEC, mode);
        if (path.startsWith("/")) {
            throw new ErrnoException("openat", Errno.EXDEV, path, arguments,
                    "an absolute path is not beneath the directory");
        }
        List<String> names = new ArrayList<>();
        for (String name : path.split("/")) {
            if (name.equals("..")) {
                throw new ErrnoException("openat", Errno.EXDEV, path, arguments,
                        "'..' may leave the directory");
            }
            if (!name.isEmpty() && !name.equals(".")) {
                names.add(name);
            }
        }
        if (names.isEmpty()) {
            names.add(path.isEmpty() ? "" : ".");
        }
        String withoutTrailingSlashes = path.replaceAll("/+$", "");
        String lastName = withoutTrailingSlashes.substring(withoutTrailingSlashes.lastIndexOf('/') + 1);
        // openat2 refuses this before it looks the last name up; a '.' there is looked up, and the create then refused by the kernel.
        boolean createOfDirectory = path.endsWith("/") && (flags & OpenFlags.O_CREAT) != 0 && !lastName.equals(".");
        if ((path.endsWith("/") || path.endsWith("/.")) && !createOfDirectory && !names.getLast().equals(".")) {
            names.add("."); // the last name must then be a directory, checked as those before it are
        }
        FileDescriptor parent = null;
        try {
            for (String name : names.subList(0, names.size() - 1)) {
                FileDescriptor next = openat(parent == null ? directory : parent, name, OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW, 0);
                FileDescriptor previous = parent;
                parent = next; // before the close, which may throw: the finally below then still closes next
                if (previous != null) {
                    previous.close();
                }
                FileStatus status = fstat(next);
                if (!status.isDirectory()) {
                    boolean link = status.fileType() == FileStatus.S_IFLNK;
                    throw new ErrnoException("openat", link ? Errno.ELOOP : Errno.ENOTDIR, path, arguments,
                            (link ? "a symbolic link" : "not a directory") + " on the path: " + next.description());
                }
            }
            if (createOfDirectory) {
                throw new ErrnoException("openat", Errno.EISDIR, path, arguments,
                        "a name that ends in '/' is a directory, and O_CREAT makes only files");
            }
            return openat(parent == null ? directory : parent, names.getLast(), flags | OpenFlags.O_NOFOLLOW, mode);
        } finally {
            if (parent != null) {
                parent.close();
            }
        }
    }

    @Override
    public void fchownat(FileDescriptor directory, String path, int uid, int gid, int flags) {
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            if (fchownat(state.capture, directory.fd(), cString(arena, path), uid, gid, flags) < 0) {
                String flagNames = flags == OpenFlags.AT_EMPTY_PATH ? "AT_EMPTY_PATH" : "0x" + Integer.toHexString(flags);
                throw failure(state, "fchownat", path.isEmpty() ? directory.toString() : path,
                        directory + ", " + quote(path) + ", " + uid + ", " + gid + ", " + flagNames);
            }
        }
    }

    @Override
    public void unlinkat(FileDescriptor directory, String path, int flags) {
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            if (unlinkat(state.capture, directory.fd(), cString(arena, path), flags) < 0) {
                String flagNames = switch (flags) {
                    case 0 -> "0";
                    case OpenFlags.AT_REMOVEDIR -> "AT_REMOVEDIR";
                    default -> "0x" + Integer.toHexString(flags);
                };
                throw failure(state, "unlinkat", path, directory + ", " + quote(path) + ", " + flagNames);
            }
        }
    }

    @Override
    public void renameat(FileDescriptor directory, String from, String to) {
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            if (renameat(state.capture, directory.fd(), cString(arena, from), directory.fd(), cString(arena, to)) < 0) {
                throw failure(state, "renameat", to, directory + ", " + quote(from) + ", " + directory + ", " + quote(to));
            }
        }
    }

    @Override
    public void mkdirat(FileDescriptor directory, String path, int mode) {
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            if (mkdirat(state.capture, directory.fd(), cString(arena, path), mode) < 0) {
                throw failure(state, "mkdirat", path, directory + ", " + quote(path) + ", " + octal(mode));
            }
        }
    }

    /** The bytes {@link #listDirectory} asks {@code getdents64} to fill at a time: a shared directory's few hundred names in one or two calls. */
    private static final int DIRENT_BUFFER = 32 << 10;

    @Override
    public List<String> listDirectory(FileDescriptor directory) {
        try (FileDescriptor listing = openat(directory, ".", OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, 0);
             Arena arena = Arena.ofConfined()) {
            CallState state = Native.callState();
            MemorySegment entries = arena.allocate(DIRENT_BUFFER, Long.BYTES);
            List<String> names = new ArrayList<>();
            while (true) {
                long filled = getdents64(state.capture, listing.fd(), entries, entries.byteSize());
                if (filled < 0) {
                    if (state.errno() == Errno.EINTR) continue;
                    throw failure(state, "getdents64", directory.toString(), listing + ", " + DIRENT_BUFFER);
                }
                if (filled == 0) return names;
                for (long at = 0; at < filled; at += Short.toUnsignedInt(entries.get(JAVA_SHORT, at + D_RECLEN))) {
                    String name = entries.getString(at + D_NAME, StandardCharsets.UTF_8);
                    if (!name.equals(".") && !name.equals("..")) names.add(name);
                }
            }
        }
    }

    @Override
    public FileStatus fstat(FileDescriptor fd) {
        CallState state = Native.callState();
        MemorySegment stat = state.scratch;
        if (fstat(state.capture, fd.fd(), stat) < 0) {
            throw failure(state, "fstat", fd.toString(), fd.toString());
        }
        return new FileStatus(
                stat.get(JAVA_LONG, ST_SIZE),
                stat.get(JAVA_INT, ST_MODE),
                stat.get(JAVA_INT, ST_UID),
                stat.get(JAVA_INT, ST_GID),
                stat.get(JAVA_LONG, ST_DEV),
                stat.get(JAVA_LONG, ST_RDEV),
                stat.get(JAVA_LONG, ST_INO),
                stat.get(JAVA_LONG, ST_MTIM) * 1000 + stat.get(JAVA_LONG, ST_MTIM + 8) / 1_000_000,
                ST_NLINK_SIZE == Long.BYTES ? stat.get(JAVA_LONG, ST_NLINK) : Integer.toUnsignedLong(stat.get(JAVA_INT, ST_NLINK)));
    }

    @Override
    public long fileSystemType(FileDescriptor fd) {
        return fileSystemStatus(fd).get(JAVA_LONG, Layouts.STATFS_F_TYPE);
    }

    @Override
    public FileSystemSpace fileSystemSpace(FileDescriptor fd) {
        MemorySegment statfs = fileSystemStatus(fd);
        long fragment = statfs.get(JAVA_LONG, Layouts.STATFS_F_FRSIZE);
        return new FileSystemSpace(statfs.get(JAVA_LONG, Layouts.STATFS_F_TYPE), statfs.get(JAVA_LONG, Layouts.STATFS_F_BSIZE),
                statfs.get(JAVA_LONG, Layouts.STATFS_F_BLOCKS) * fragment,
                statfs.get(JAVA_LONG, Layouts.STATFS_F_BAVAIL) * fragment);
    }

    /** {@code fstatfs(2)} into the calling thread's scratch space, valid until its next call that uses it. */
    private static MemorySegment fileSystemStatus(FileDescriptor fd) {
        CallState state = Native.callState();
        MemorySegment statfs = state.scratch;
        int result;
        do {
            result = fstatfs(state.capture, fd.fd(), statfs);
        } while (result < 0 && state.errno() == Errno.EINTR);
        if (result < 0) {
            throw failure(state, "fstatfs", fd.toString(), fd.toString());
        }
        return statfs;
    }

    /** The path {@code ""} of an {@code AT_EMPTY_PATH} call: a NUL, never freed. */
    private static final MemorySegment EMPTY_PATH = Arena.global().allocate(1);

    @Override
    public long birthTimeNanos(FileDescriptor fd) {
        CallState state = Native.callState();
        MemorySegment statx = state.scratch;
        if (statx(state.capture, fd.fd(), EMPTY_PATH, OpenFlags.AT_EMPTY_PATH, Abi.STATX_BTIME, statx) < 0) {
            int errno = state.errno();
            // No statx, or a seccomp filter older than it: the birth time is not known, as on a file system that keeps none.
            if (errno == Errno.ENOSYS || errno == Errno.EPERM) return Libc.NO_BIRTH_TIME;
            throw failure(state, "statx", fd.toString(), fd + ", \"\", AT_EMPTY_PATH, STATX_BTIME");
        }
        if ((statx.get(JAVA_INT, STX_MASK) & Abi.STATX_BTIME) == 0) return Libc.NO_BIRTH_TIME;
        return statx.get(JAVA_LONG, STX_BTIME_SEC) * 1_000_000_000L + Integer.toUnsignedLong(statx.get(JAVA_INT, STX_BTIME_NSEC));
    }

    @Override
    public void fchmod(FileDescriptor fd, int mode) {
        CallState state = Native.callState();
        if (fchmod(state.capture, fd.fd(), mode) < 0) {
            throw failure(state, "fchmod", fd.toString(), fd + ", " + octal(mode));
        }
    }

    @Override
    public void flock(FileDescriptor fd, int operation) {
        int errno = flockOrErrno(fd, operation);
        if (errno != 0) {
            throw flockFailure(fd, operation, errno);
        }
    }

    @Override
    public boolean tryFlock(FileDescriptor fd, int operation) {
        int withNb = operation | LockFlags.LOCK_NB;
        int errno = flockOrErrno(fd, withNb);
        if (errno == Errno.EWOULDBLOCK) {
            return false;
        }
        if (errno != 0) {
            throw flockFailure(fd, withNb, errno);
        }
        return true;
    }

    private static int flockOrErrno(FileDescriptor fd, int operation) {
        CallState state = Native.callState();
        int result;
        do {
            result = flock(state.capture, fd.fd(), operation);
        } while (result < 0 && state.errno() == Errno.EINTR);
        return result < 0 ? state.errno() : 0;
    }

    /**
     * The kernel writes through a segment's address whatever the segment says: a read-only view
     * of writable memory (a consumer's view of a shared chunk) would be written into.
     */
    private static void requireWritable(MemorySegment buffer, String call, FileDescriptor fd) {
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException(call + " into a read-only segment (" + fd + "): the kernel would write into it anyway");
        }
    }

    private static ErrnoException flockFailure(FileDescriptor fd, int operation, int errno) {
        // flock(2) documents the held-lock case as EWOULDBLOCK; a reader looks for that name.
        String name = errno == Errno.EWOULDBLOCK ? "EWOULDBLOCK" : Errno.name(errno);
        String hint = errno == Errno.EWOULDBLOCK ? "another open of this file holds a conflicting lock" : null;
        return new ErrnoException("flock", errno, name, fd.toString(), fd + ", " + LockFlags.describe(operation), hint);
    }

    @Override
    public int read(FileDescriptor fd, MemorySegment buffer) {
        requireWritable(buffer, "read", fd);
        CallState state = Native.callState();
        long count;
        do {
            count = read(state.capture, fd.fd(), buffer, buffer.byteSize());
        } while (count < 0 && state.errno() == Errno.EINTR);
        return ioResult(state, count, "read", fd, buffer);
    }

    @Override
    public int write(FileDescriptor fd, MemorySegment buffer) {
        CallState state = Native.callState();
        long count;
        do {
            count = write(state.capture, fd.fd(), buffer, buffer.byteSize());
        } while (count < 0 && state.errno() == Errno.EINTR);
        return ioResult(state, count, "write", fd, buffer);
    }

    /** Linux transfers at most 0x7ffff000 bytes per call, so a successful count always fits an int. */
    private static int ioResult(CallState state, long count, String call, FileDescriptor fd, MemorySegment buffer) {
        if (count >= 0) {
            return (int) count;
        }
        if (state.errno() == Errno.EAGAIN) {
            return WOULD_BLOCK;
        }
        throw failure(state, call, fd.toString(), fd + ", " + buffer.byteSize());
    }

    // ================================================================ sockets

    @Override
    public FileDescriptor socket(int type) {
        int allType = type | SocketFlags.SOCK_CLOEXEC;
        CallState state = Native.callState();
        int fd = socket(state.capture, SocketFlags.AF_UNIX, allType, 0);
        if (fd < 0) {
            throw failure(state, "socket", "AF_UNIX", "AF_UNIX, " + SocketFlags.describeType(allType) + ", 0");
        }
        return FileDescriptor.adopt(fd, "socket");
    }

    @Override
    public SocketPair socketpair(int type) {
        int allType = type | SocketFlags.SOCK_CLOEXEC;
        CallState state = Native.callState();
        MemorySegment fds = state.scratch;
        if (socketpair(state.capture, SocketFlags.AF_UNIX, allType, 0, fds) < 0) {
            throw failure(state, "socketpair", "AF_UNIX", "AF_UNIX, " + SocketFlags.describeType(allType) + ", 0");
        }
        return new SocketPair(
                FileDescriptor.adopt(fds.getAtIndex(JAVA_INT, 0), "socketpair"),
                FileDescriptor.adopt(fds.getAtIndex(JAVA_INT, 1), "socketpair"));
    }

    @Override
    public void bind(FileDescriptor socket, String path) {
        CallState state = Native.callState();
        int length = socketAddress(state.scratch, "bind", socket, path);
        if (bind(state.capture, socket.fd(), state.scratch, length) < 0) {
            throw failure(state, "bind", path, socket + ", {AF_UNIX, " + quote(path) + "}");
        }
    }

    @Override
    public void listen(FileDescriptor socket, int backlog) {
        CallState state = Native.callState();
        if (listen(state.capture, socket.fd(), backlog) < 0) {
            throw failure(state, "listen", socket.toString(), socket + ", " + backlog);
        }
    }

    @Override
    public FileDescriptor accept(FileDescriptor listener, int flags) {
        int allFlags = flags | SocketFlags.SOCK_CLOEXEC;
        CallState state = Native.callState();
        int fd;
        do {
            fd = accept4(state.capture, listener.fd(), MemorySegment.NULL, MemorySegment.NULL, allFlags);
            // ECONNABORTED: a pending connection was reset before we took it; take the next.
        } while (fd < 0 && (state.errno() == Errno.EINTR || state.errno() == Errno.ECONNABORTED));
        if (fd < 0) {
            if (state.errno() == Errno.EAGAIN) {
                return null;
            }
            throw failure(state, "accept4", listener.toString(), listener + ", NULL, NULL, " + SocketFlags.describeAcceptFlags(allFlags));
        }
        return FileDescriptor.adopt(fd, "connection");
    }

    @Override
    public void connect(FileDescriptor socket, String path) {
        CallState state = Native.callState();
        int length = socketAddress(state.scratch, "connect", socket, path);
        int result;
        do {
            result = connect(state.capture, socket.fd(), state.scratch, length);
        } while (result < 0 && state.errno() == Errno.EINTR);
        if (result < 0) {
            throw failure(state, "connect", path, socket + ", {AF_UNIX, " + quote(path) + "}");
        }
    }

    /** Fills a {@code sockaddr_un} for {@code path} at the start of {@code address} and returns its length. */
    private static int socketAddress(MemorySegment address, String call, FileDescriptor socket, String path) {
        byte[] bytes = pathBytes(path);
        if (bytes.length == 0) {
            throw new IllegalArgumentException(call + ": empty socket path");
        }
        if (bytes.length > SocketFlags.SUN_PATH_MAX) {
            throw new ErrnoException(call, Errno.ENAMETOOLONG, path, socket + ", {AF_UNIX, " + quote(path) + "}",
                    "the socket path is " + bytes.length + " bytes of UTF-8 but sun_path holds at most "
                            + SocketFlags.SUN_PATH_MAX + ": use a shorter shared directory");
        }
        address.asSlice(0, SOCKADDR_UN.byteSize()).fill((byte) 0);
        address.set(JAVA_SHORT, SUN_FAMILY, (short) SocketFlags.AF_UNIX);
        MemorySegment.copy(bytes, 0, address, JAVA_BYTE, SUN_PATH, bytes.length);
        return (int) (SUN_PATH + bytes.length + 1);
    }

    @Override
    public int send(FileDescriptor socket, MemorySegment buffer, int flags) {
        int allFlags = flags | SocketFlags.MSG_NOSIGNAL;
        CallState state = Native.callState();
        long count;
        do {
            count = send(state.capture, socket.fd(), buffer, buffer.byteSize(), allFlags);
        } while (count < 0 && state.errno() == Errno.EINTR);
        return ioResult(state, count, "send", socket, buffer);
    }

    @Override
    public int recv(FileDescriptor socket, MemorySegment buffer, int flags) {
        requireWritable(buffer, "recv", socket);
        CallState state = Native.callState();
        long count;
        do {
            count = recv(state.capture, socket.fd(), buffer, buffer.byteSize(), flags);
        } while (count < 0 && state.errno() == Errno.EINTR);
        return ioResult(state, count, "recv", socket, buffer);
    }

    @Override
    public int sendmsg(FileDescriptor socket, MemorySegment data, FileDescriptor... fds) {
        if (fds.length > Abi.SCM_MAX_FD) {
            throw new IllegalArgumentException("sendmsg: " + fds.length + " descriptors, at most " + Abi.SCM_MAX_FD + " fit one message");
        }
        if (fds.length > 0 && data.byteSize() == 0) {
            throw new IllegalArgumentException("sendmsg: descriptors need at least one byte of data to travel with");
        }
        int flags = SocketFlags.MSG_NOSIGNAL;
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            // Pointers inside a msghdr do not keep their segments alive, so the call only ever
            // sees memory this arena owns.
            MemorySegment message = arena.allocate(MSGHDR);
            MemorySegment bytes = arena.allocate(Math.max(1, data.byteSize()));
            MemorySegment.copy(data, 0, bytes, 0, data.byteSize());
            message.set(ADDRESS, MSG_IOV, iovec(arena, bytes, data.byteSize()));
            message.set(JAVA_LONG, MSG_IOVLEN, 1);
            if (fds.length > 0) {
                long dataLength = (long) fds.length * Integer.BYTES;
                MemorySegment control = arena.allocate(cmsgSpace(dataLength), 8);
                control.set(JAVA_LONG, CMSG_LEN_FIELD, cmsgLen(dataLength));
                control.set(JAVA_INT, CMSG_LEVEL, SocketFlags.SOL_SOCKET);
                control.set(JAVA_INT, CMSG_TYPE, SocketFlags.SCM_RIGHTS);
                for (int i = 0; i < fds.length; i++) {
                    control.set(JAVA_INT, CMSG_DATA_OFFSET + (long) i * Integer.BYTES, fds[i].fd());
                }
                message.set(ADDRESS, MSG_CONTROL, control);
                message.set(JAVA_LONG, MSG_CONTROLLEN, control.byteSize());
            }
            long count;
            do {
                count = sendmsg(state.capture, socket.fd(), message, flags);
            } while (count < 0 && state.errno() == Errno.EINTR);
            if (count < 0) {
                if (state.errno() == Errno.EAGAIN) {
                    return WOULD_BLOCK;
                }
                throw failure(state, "sendmsg", socket.toString(), socket + ", {" + data.byteSize() + " bytes, "
                        + fds.length + " fds}, " + SocketFlags.describeMessageFlags(flags));
            }
            return (int) count;
        }
    }

    @Override
    public ReceivedMessage recvmsg(FileDescriptor socket, MemorySegment buffer, int maxFds) {
        if (maxFds < 0 || maxFds > Abi.SCM_MAX_FD) {
            throw new IllegalArgumentException("recvmsg: maxFds " + maxFds + " is not in [0, " + Abi.SCM_MAX_FD + "]");
        }
        requireWritable(buffer, "recvmsg", socket);
        int flags = SocketFlags.MSG_CMSG_CLOEXEC;
        CallState state = Native.callState();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment message = arena.allocate(MSGHDR);
            MemorySegment bytes = arena.allocate(Math.max(1, buffer.byteSize()));
            message.set(ADDRESS, MSG_IOV, iovec(arena, bytes, buffer.byteSize()));
            message.set(JAVA_LONG, MSG_IOVLEN, 1);
            MemorySegment control = MemorySegment.NULL;
            if (maxFds > 0) {
                control = arena.allocate(cmsgSpace((long) maxFds * Integer.BYTES), 8);
                message.set(ADDRESS, MSG_CONTROL, control);
                message.set(JAVA_LONG, MSG_CONTROLLEN, control.byteSize());
            }
            long count;
            do {
                count = recvmsg(state.capture, socket.fd(), message, flags);
            } while (count < 0 && state.errno() == Errno.EINTR);
            if (count < 0) {
                if (state.errno() == Errno.EAGAIN) {
                    return ReceivedMessage.WOULD_BLOCK;
                }
                throw failure(state, "recvmsg", socket.toString(), socket + ", {" + buffer.byteSize() + " bytes, "
                        + maxFds + " fds}, " + SocketFlags.describeMessageFlags(flags));
            }
            List<FileDescriptor> received = receivedDescriptors(control, message.get(JAVA_LONG, MSG_CONTROLLEN));
            int messageFlags = message.get(JAVA_INT, MSG_FLAGS);
            if ((messageFlags & SocketFlags.MSG_TRUNC) != 0) {
                // A datagram or seqpacket message longer than the buffer: the kernel discarded its tail, so what fit is not
                // the message, and the descriptors that came with it go with it rather than be taken for a whole one's.
                closeAll(received);
                throw new ErrnoException("recvmsg", Errno.EMSGSIZE, socket.toString(), socket + ", {" + buffer.byteSize()
                        + " bytes, " + maxFds + " fds}, " + SocketFlags.describeMessageFlags(flags), "the message was longer than "
                        + "the buffer of " + buffer.byteSize() + " bytes, and the kernel discarded the rest of it (MSG_TRUNC)"
                        + (received.isEmpty() ? "" : "; the " + received.size() + (received.size() == 1 ? " descriptor that came"
                        : " descriptors that came") + " with it " + (received.size() == 1 ? "was" : "were") + " closed")
                        + ": receive into a buffer as long as the longest message the peer sends");
            }
            boolean truncated = (messageFlags & SocketFlags.MSG_CTRUNC) != 0 || received.size() > maxFds;
            if (truncated) {
                // Some descriptors were lost, so the message's meaning is; none of the ones that
                // arrived can be trusted to be the one meant, and none may leak.
                closeAll(received);
            }
            try {
                MemorySegment.copy(bytes, 0, buffer, 0, count);
            } catch (RuntimeException | Error e) {
                // The caller's buffer cannot take the bytes (read-only, closed, another thread's): the
                // descriptors never reach the caller, so they are closed here.
                if (!truncated) closeAll(received);
                throw e;
            }
            return truncated
                    ? new ReceivedMessage((int) count, List.of(), true, received.size())
                    : new ReceivedMessage((int) count, received, false, 0);
        }
    }

    /** Walks the control messages as {@code CMSG_FIRSTHDR}/{@code CMSG_NXTHDR} do and collects {@code SCM_RIGHTS} descriptors. */
    private static List<FileDescriptor> receivedDescriptors(MemorySegment control, long controlLength) {
        List<FileDescriptor> fds = new ArrayList<>();
        long header = 0;
        while (header + CMSGHDR.byteSize() <= controlLength) {
            long length = control.get(JAVA_LONG, header + CMSG_LEN_FIELD);
            if (length < CMSGHDR.byteSize() || header + length > controlLength) {
                break;
            }
            if (control.get(JAVA_INT, header + CMSG_LEVEL) == SocketFlags.SOL_SOCKET
                    && control.get(JAVA_INT, header + CMSG_TYPE) == SocketFlags.SCM_RIGHTS) {
                long count = (length - CMSG_DATA_OFFSET) / Integer.BYTES;
                for (long i = 0; i < count; i++) {
                    fds.add(FileDescriptor.adopt(control.get(JAVA_INT, header + CMSG_DATA_OFFSET + i * Integer.BYTES), "received"));
                }
            }
            header += cmsgAlign(length);
        }
        return fds;
    }

    private static void closeAll(List<FileDescriptor> fds) {
        for (FileDescriptor fd : fds) {
            try {
                fd.close();
            } catch (ErrnoException e) {
                LOGGER.log(System.Logger.Level.WARNING, "closing a descriptor of a truncated message", e);
            }
        }
    }

    private static MemorySegment iovec(Arena arena, MemorySegment base, long length) {
        MemorySegment iov = arena.allocate(IOVEC);
        iov.set(ADDRESS, IOV_BASE, base);
        iov.set(JAVA_LONG, IOV_LEN, length);
        return iov;
    }

    @Override
    public PeerCredentials peerCredentials(FileDescriptor socket) {
        CallState state = Native.callState();
        MemorySegment credentials = state.scratch.asSlice(0, UCRED.byteSize());
        MemorySegment length = state.scratch.asSlice(UCRED.byteSize(), JAVA_INT.byteSize());
        length.set(JAVA_INT, 0, (int) UCRED.byteSize());
        if (getsockopt(state.capture, socket.fd(), SocketFlags.SOL_SOCKET, SocketFlags.SO_PEERCRED, credentials, length) < 0) {
            throw failure(state, "getsockopt", socket.toString(), socket + ", SOL_SOCKET, SO_PEERCRED");
        }
        return new PeerCredentials(
                credentials.get(JAVA_INT, UCRED_PID),
                credentials.get(JAVA_INT, UCRED_UID),
                credentials.get(JAVA_INT, UCRED_GID));
    }

    // ================================================================ waiting and waking

    @Override
    public int poll(FileDescriptor fd, int events, int timeoutMillis) {
        CallState state = Native.callState();
        MemorySegment pollfd = state.scratch;
        pollfd.set(JAVA_INT, POLLFD_FD, fd.fd());
        pollfd.set(JAVA_SHORT, POLLFD_EVENTS, (short) events);
        pollfd.set(JAVA_SHORT, POLLFD_REVENTS, (short) 0);
        int ready = pollRetrying(state, pollfd, 1, timeoutMillis);
        if (ready < 0) {
            throw failure(state, "poll", fd.toString(), "{" + fd + ", " + PollEvents.describe(events) + "}, 1, " + timeoutMillis);
        }
        return ready == 0 ? 0 : Short.toUnsignedInt(pollfd.get(JAVA_SHORT, POLLFD_REVENTS));
    }

    @Override
    public int poll(FileDescriptor[] fds, int[] events, int[] revents, int timeoutMillis) {
        int count = fds.length;
        if (events.length != count || revents.length != count) {
            throw new IllegalArgumentException("poll: " + count + " descriptors, " + events.length + " events, "
                    + revents.length + " revents");
        }
        CallState state = Native.callState();
        long size = POLLFD.byteSize() * count;
        try (Arena arena = size <= Native.SCRATCH_SIZE ? null : Arena.ofConfined()) {
            MemorySegment pollfds = arena == null ? state.scratch : arena.allocate(size, 8);
            for (int i = 0; i < count; i++) {
                long at = i * POLLFD.byteSize();
                pollfds.set(JAVA_INT, at + POLLFD_FD, fds[i].fd());
                pollfds.set(JAVA_SHORT, at + POLLFD_EVENTS, (short) events[i]);
                pollfds.set(JAVA_SHORT, at + POLLFD_REVENTS, (short) 0);
            }
            int ready = pollRetrying(state, pollfds, count, timeoutMillis);
            if (ready < 0) {
                throw failure(state, "poll", count + " fds", count + " fds, " + timeoutMillis);
            }
            for (int i = 0; i < count; i++) {
                revents[i] = Short.toUnsignedInt(pollfds.get(JAVA_SHORT, i * POLLFD.byteSize() + POLLFD_REVENTS));
            }
            return ready;
        }
    }

    /** {@code poll}, retried after {@code EINTR} with what is left of the timeout. */
    private static int pollRetrying(CallState state, MemorySegment pollfds, int count, int timeoutMillis) {
        long deadline = timeoutMillis > 0 ? System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis) : 0;
        int timeout = timeoutMillis;
        while (true) {
            int ready = poll(state.capture, pollfds, count, timeout);
            if (ready >= 0 || state.errno() != Errno.EINTR) {
                return ready;
            }
            if (timeoutMillis > 0) {
                long left = deadline - System.nanoTime();
                timeout = left <= 0 ? 0 : Libc.pollTimeoutMillis(left); // rounded up, as every wait here: never ends early
            }
        }
    }

    @Override
    public FileDescriptor eventfd(int initialValue, int flags) {
        int allFlags = flags | EventfdFlags.EFD_CLOEXEC;
        CallState state = Native.callState();
        int fd = eventfd(state.capture, initialValue, allFlags);
        if (fd < 0) {
            throw failure(state, "eventfd", "eventfd", Integer.toUnsignedString(initialValue) + ", " + EventfdFlags.describe(allFlags));
        }
        return FileDescriptor.adopt(fd, "eventfd");
    }

    @Override
    public long eventfdRead(FileDescriptor eventfd) {
        CallState state = Native.callState();
        MemorySegment counter = state.scratch;
        long count;
        do {
            count = read(state.capture, eventfd.fd(), counter, Long.BYTES);
        } while (count < 0 && state.errno() == Errno.EINTR);
        if (count < 0) {
            if (state.errno() == Errno.EAGAIN) {
                return 0;
            }
            throw failure(state, "read", eventfd.toString(), eventfd + ", 8");
        }
        return counter.get(JAVA_LONG, 0);
    }

    @Override
    public boolean eventfdWrite(FileDescriptor eventfd, long value) {
        CallState state = Native.callState();
        MemorySegment counter = state.scratch;
        counter.set(JAVA_LONG, 0, value);
        long count;
        do {
            count = write(state.capture, eventfd.fd(), counter, Long.BYTES);
        } while (count < 0 && state.errno() == Errno.EINTR);
        if (count < 0) {
            if (state.errno() == Errno.EAGAIN) {
                return false;
            }
            throw failure(state, "write", eventfd.toString(), eventfd + ", {" + Long.toUnsignedString(value) + "}, 8");
        }
        return true;
    }

    /** A futex word read as {@code FUTEX_WAIT} reads it: once, ordered with what the caller did before. */
    private static final VarHandle FUTEX_WORD = JAVA_INT.varHandle();

    @Override
    public FutexResult futexWait(MemorySegment segment, long offset, int expected, long timeoutNanos) {
        MemorySegment word = futexWord(segment, offset);
        if (timeoutNanos == 0) {
            // FUTEX_WAIT with a zero timeout does not return at once: it queues the thread and sleeps until an hrtimer
            // fires, which the thread's timer slack (50 us by default) lets the kernel defer. A context switch and tens
            // of microseconds to learn what one read of the word tells.
            return (int) FUTEX_WORD.getVolatile(word, 0L) == expected ? FutexResult.TIMED_OUT : FutexResult.VALUE_MISMATCH;
        }
        CallState state = Native.callState();
        MemorySegment timeout = MemorySegment.NULL;
        if (timeoutNanos >= 0) {
            timeout = state.scratch;
            timeout.set(JAVA_LONG, TV_SEC, timeoutNanos / 1_000_000_000L);
            timeout.set(JAVA_LONG, TV_NSEC, timeoutNanos % 1_000_000_000L);
        }
        long result = futex(state.capture, Abi.SYS_futex, word, Abi.FUTEX_WAIT, Integer.toUnsignedLong(expected),
                timeout, MemorySegment.NULL, 0);
        if (result == 0) {
            return FutexResult.WOKEN;
        }
        return switch (state.errno()) {
            case Errno.EAGAIN -> FutexResult.VALUE_MISMATCH;
            case Errno.ETIMEDOUT -> FutexResult.TIMED_OUT;
            // A signal: callers re-check the word anyway, and a retry would restart the timeout.
            case Errno.EINTR -> FutexResult.WOKEN;
            default -> throw failure(state, "futex", hex(word), hex(word) + ", FUTEX_WAIT, " + expected + ", " + (timeoutNanos >= 0 ? timeoutNanos + " ns" : "NULL"));
        };
    }

    @Override
    public int futexWake(MemorySegment segment, long offset, int count) {
        if (count <= 0) {
            // The kernel counts a waiter woken before it compares with the count: FUTEX_WAKE of 0 (or less) wakes one.
            throw new IllegalArgumentException("futex wake of " + count + " waiters: FUTEX_WAKE would wake one anyway; "
                    + "pass a positive count (Integer.MAX_VALUE for all)");
        }
        if (!segment.isNative()) {
            // Its address() is an offset into an array: the kernel would find no page there (EFAULT), read below as closed memory.
            throw new IllegalArgumentException("futex wake through a heap segment (" + segment + "): the kernel sees no Java array; "
                    + "put the futex word in native memory (a mapping, or an arena's allocation), as a wait needs too");
        }
        MemorySegment word = futexWord(segment, offset);
        CallState state = Native.callState();
        // The address, not the segment: a downcall holds a segment's arena until it returns, and a
        // woken thread may close that arena before then (Libc#futexWake).
        long woken = futex(state.capture, Abi.SYS_futex, MemorySegment.ofAddress(word.address()), Abi.FUTEX_WAKE, count,
                MemorySegment.NULL, MemorySegment.NULL, 0);
        if (woken < 0) {
            if (state.errno() == Errno.EFAULT) return 0; // the memory was unmapped meanwhile: nobody waits on it
            throw failure(state, "futex", hex(word), hex(word) + ", FUTEX_WAKE, " + count);
        }
        return (int) woken;
    }

    /**
     * The futex word as a segment of its own. Passing a segment rather than a raw address makes
     * FFM check bounds and keep the memory mapped while the call is in the kernel.
     */
    private static MemorySegment futexWord(MemorySegment segment, long offset) {
        if (((segment.address() + offset) & (Integer.BYTES - 1)) != 0) {
            throw new IllegalArgumentException("futex word at offset " + offset + " of " + segment + " is not 4-byte aligned");
        }
        return segment.asSlice(offset, Integer.BYTES);
    }

    // ================================================================ process

    @Override
    public int getuid() {
        return getuid(Native.callState().capture);
    }

    @Override
    public int geteuid() {
        return geteuid(Native.callState().capture);
    }

    @Override
    public int getpid() {
        return getpid(Native.callState().capture);
    }

    private static final class Getpagesize {
        // Called after every RMA operation on a region that may fault, and every large message of a posix ring: allocation-free.
        static final MethodHandle HANDLE = Native.infallible("getpagesize", FunctionDescriptor.of(JAVA_INT));
    }

    @Override
    public void deliverPendingFaults() {
        try {
            int ignored = (int) Getpagesize.HANDLE.invokeExact();
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    /** Closes a descriptor for {@link FileDescriptor#close()}, named as it was open; not retried after EINTR (see there). */
    public static void closeDescriptor(int fd, String name) {
        CallState state = Native.callState();
        if (close(state.capture, fd) < 0 && state.errno() != Errno.EINTR) {
            throw failure(state, "close", name, name);
        }
    }

    /** Binds the functions every plugin needs at once, so that a missing grant or symbol shows up in the probe. */
    static void bind() {
        List<String> missing = Native.missingSymbols(SYMBOLS);
        if (!missing.isEmpty()) {
            throw new UnsatisfiedLinkError(Probe.missingSymbols(missing, SYMBOLS.length));
        }
        INSTANCE.getpid();
    }

    // ================================================================ message helpers

    private static ErrnoException failure(CallState state, String call, String subject, String arguments) {
        return new ErrnoException(call, state.errno(), subject, arguments);
    }

    /**
     * A failed {@code mmap}; its {@code ENOMEM} says whether the process's mappings ran out (against
     * {@code vm.max_map_count}) or its address space did, which only {@code /proc} can tell, so
     * every mapping's caller, an import's or a provider's, reports the same.
     */
    private static ErrnoException mmapFailure(CallState state, FileDescriptor fd, String arguments) {
        int errno = state.errno();
        return new ErrnoException("mmap", errno, fd.toString(), arguments, errno == Errno.ENOMEM ? MappingCount.explainEnomem() : null);
    }

    /** Whether an open with {@code flags} creates a file, and so applies a mode: {@code O_CREAT} or {@code O_TMPFILE} ({@code open(2)}). */
    private static boolean creates(int flags) {
        return (flags & OpenFlags.O_CREAT) != 0 || (flags & OpenFlags.O_TMPFILE) == OpenFlags.O_TMPFILE;
    }

    private static String openArguments(int flags, int mode) {
        return creates(flags) ? OpenFlags.describe(flags) + ", " + octal(mode) : OpenFlags.describe(flags);
    }

    private static String octal(int mode) {
        return "0" + Integer.toOctalString(mode);
    }

    private static String hex(MemorySegment address) {
        return "0x" + Long.toHexString(address.address());
    }

    private static String quote(String text) {
        return '"' + text + '"';
    }

    /** What a descriptor opened relative to {@code directory} refers to, for its description. */
    private static String resolve(FileDescriptor directory, String path) {
        String base = directory.description();
        if (base.isEmpty() || path.startsWith("/")) {
            return path;
        }
        return base.endsWith("/") ? base + path : base + '/' + path;
    }

    private static byte[] pathBytes(String path) {
        if (path.indexOf('\0') >= 0) {
            // C would silently stop at the NUL and use a different path.
            throw new IllegalArgumentException("path contains NUL: " + path.replace("\0", "\\0"));
        }
        return path.getBytes(StandardCharsets.UTF_8);
    }

    private static MemorySegment cString(Arena arena, String path) {
        byte[] bytes = pathBytes(path);
        MemorySegment string = arena.allocate(bytes.length + 1L);
        MemorySegment.copy(bytes, 0, string, JAVA_BYTE, 0, bytes.length);
        return string;
    }

    // ================================================================ downcalls

    private static final String[] SYMBOLS = {
            "ftruncate", "fallocate", "fcntl", "fstatfs", "mmap", "munmap", "open", "openat", "close", "unlinkat", "fchownat", "renameat",
            "mkdirat", "fchmod", "flock", "read", "write", "socket", "socketpair", "bind", "listen",
            "accept4", "connect", "send", "recv", "sendmsg", "recvmsg", "getsockopt", "poll", "eventfd",
            "syscall", "getuid", "geteuid", "getpid", "getpagesize"};

    // One holder class per function, not per family: binding a handle makes the JDK generate its
    // downcall stub (hundreds of java.lang.invoke classes for a family), and a fresh JVM's
    // Conduit.open() and first worker call a few functions of each family (docs/performance.md,
    // "Cold start"), so binding a family at its first use cost them the rest of it.

    private static final class Open {
        static final MethodHandle HANDLE = Native.variadic("open", 2,
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    }

    private static int open(MemorySegment capture, MemorySegment path, int flags, int mode) {
        try {
            return (int) Open.HANDLE.invokeExact(capture, path, flags, mode);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Openat {
        static final MethodHandle HANDLE = Native.variadic("openat", 3,
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    }

    private static int openat(MemorySegment capture, int directory, MemorySegment path, int flags, int mode) {
        try {
            return (int) Openat.HANDLE.invokeExact(capture, directory, path, flags, mode);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Getdents64 {
        // syscall(SYS_getdents64, fd, buffer, length): glibc has the getdents64 wrapper only from 2.30.
        static final MethodHandle HANDLE = Native.variadic("syscall", 1,
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
    }

    private static long getdents64(MemorySegment capture, int fd, MemorySegment buffer, long length) {
        try {
            return (long) Getdents64.HANDLE.invokeExact(capture, Abi.SYS_getdents64, (long) fd, buffer, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Syscall4 {
        static final MethodHandle HANDLE = Native.variadic("syscall", 1,
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    }

    private static long syscall(MemorySegment capture, long number, long a, MemorySegment b, MemorySegment c, long d) {
        try {
            return (long) Syscall4.HANDLE.invokeExact(capture, number, a, b, c, d);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Close {
        static final MethodHandle HANDLE = Native.function("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    }

    private static int close(MemorySegment capture, int fd) {
        try {
            return (int) Close.HANDLE.invokeExact(capture, fd);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Fchownat {
        static final MethodHandle HANDLE = Native.function("fchownat",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private static int fchownat(MemorySegment capture, int directory, MemorySegment path, int uid, int gid, int flags) {
        try {
            return (int) Fchownat.HANDLE.invokeExact(capture, directory, path, uid, gid, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Unlinkat {
        static final MethodHandle HANDLE = Native.function("unlinkat",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    }

    private static int unlinkat(MemorySegment capture, int directory, MemorySegment path, int flags) {
        try {
            return (int) Unlinkat.HANDLE.invokeExact(capture, directory, path, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Renameat {
        static final MethodHandle HANDLE = Native.function("renameat",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    }

    private static int renameat(MemorySegment capture, int fromDirectory, MemorySegment from, int toDirectory, MemorySegment to) {
        try {
            return (int) Renameat.HANDLE.invokeExact(capture, fromDirectory, from, toDirectory, to);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Mkdirat {
        static final MethodHandle HANDLE = Native.function("mkdirat",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    }

    private static int mkdirat(MemorySegment capture, int directory, MemorySegment path, int mode) {
        try {
            return (int) Mkdirat.HANDLE.invokeExact(capture, directory, path, mode);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Fstat {
        // syscall(SYS_fstat, fd, buf): glibc exports fstat only from 2.33 (before, a stat() call reached __fxstat),
        // and the kernel's struct stat is glibc's on x86-64 and aarch64.
        static final MethodHandle HANDLE = Native.variadic("syscall", 1,
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
    }

    private static int fstat(MemorySegment capture, int fd, MemorySegment stat) {
        try {
            return (int) (long) Fstat.HANDLE.invokeExact(capture, Abi.SYS_fstat, (long) fd, stat);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Statx {
        // syscall(SYS_statx, dirfd, path, flags, mask, buf): glibc has the statx wrapper only from 2.28.
        static final MethodHandle HANDLE = Native.variadic("syscall", 1,
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
    }

    private static int statx(MemorySegment capture, int fd, MemorySegment path, int flags, int mask, MemorySegment statx) {
        try {
            return (int) (long) Statx.HANDLE.invokeExact(capture, Abi.SYS_statx, (long) fd, path, (long) flags, (long) mask, statx);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Fchmod {
        static final MethodHandle HANDLE = Native.function("fchmod",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private static int fchmod(MemorySegment capture, int fd, int mode) {
        try {
            return (int) Fchmod.HANDLE.invokeExact(capture, fd, mode);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Flock {
        static final MethodHandle HANDLE = Native.function("flock",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private static int flock(MemorySegment capture, int fd, int operation) {
        try {
            return (int) Flock.HANDLE.invokeExact(capture, fd, operation);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Fstatfs {
        static final MethodHandle HANDLE = Native.function("fstatfs",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    }

    private static int fstatfs(MemorySegment capture, int fd, MemorySegment statfs) {
        try {
            return (int) Fstatfs.HANDLE.invokeExact(capture, fd, statfs);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Ftruncate {
        static final MethodHandle HANDLE = Native.function("ftruncate",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
    }

    private static int ftruncate(MemorySegment capture, int fd, long length) {
        try {
            return (int) Ftruncate.HANDLE.invokeExact(capture, fd, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Fallocate {
        static final MethodHandle HANDLE = Native.function("fallocate",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    }

    private static int fallocate(MemorySegment capture, int fd, long offset, long length) {
        try {
            return (int) Fallocate.HANDLE.invokeExact(capture, fd, 0, offset, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Fcntl {
        // fcntl(int, int, ...): glibc reads the third argument as a pointer-sized value.
        static final MethodHandle HANDLE = Native.variadic("fcntl", 2,
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    }

    private static int fcntl(MemorySegment capture, int fd, int command, long argument) {
        try {
            return (int) Fcntl.HANDLE.invokeExact(capture, fd, command, argument);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Read {
        static final MethodHandle HANDLE = Native.function("read",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    }

    private static long read(MemorySegment capture, int fd, MemorySegment buffer, long length) {
        try {
            return (long) Read.HANDLE.invokeExact(capture, fd, buffer, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Write {
        static final MethodHandle HANDLE = Native.function("write",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    }

    private static long write(MemorySegment capture, int fd, MemorySegment buffer, long length) {
        try {
            return (long) Write.HANDLE.invokeExact(capture, fd, buffer, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class MemfdCreate {
        // syscall(SYS_memfd_create, name, flags): glibc has the wrapper only from 2.27.
        static final MethodHandle HANDLE = Native.variadic("syscall", 1,
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
    }

    private static int memfdCreate(MemorySegment capture, MemorySegment name, int flags) {
        try {
            return (int) (long) MemfdCreate.HANDLE.invokeExact(capture, Abi.SYS_memfd_create, name, Integer.toUnsignedLong(flags));
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Mmap {
        static final MethodHandle HANDLE = Native.function("mmap",
                FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    }

    private static MemorySegment mmap(MemorySegment capture, MemorySegment address, long length, int protection,
                                      int flags, int fd, long offset) {
        try {
            return (MemorySegment) Mmap.HANDLE.invokeExact(capture, address, length, protection, flags, fd, offset);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Munmap {
        static final MethodHandle HANDLE = Native.function("munmap",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    }

    private static int munmap(MemorySegment capture, MemorySegment address, long length) {
        try {
            return (int) Munmap.HANDLE.invokeExact(capture, address, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Socket {
        static final MethodHandle HANDLE = Native.function("socket",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private static int socket(MemorySegment capture, int domain, int type, int protocol) {
        try {
            return (int) Socket.HANDLE.invokeExact(capture, domain, type, protocol);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Socketpair {
        static final MethodHandle HANDLE = Native.function("socketpair",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    }

    private static int socketpair(MemorySegment capture, int domain, int type, int protocol, MemorySegment fds) {
        try {
            return (int) Socketpair.HANDLE.invokeExact(capture, domain, type, protocol, fds);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Bind {
        static final MethodHandle HANDLE = Native.function("bind",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    }

    private static int bind(MemorySegment capture, int fd, MemorySegment address, int length) {
        try {
            return (int) Bind.HANDLE.invokeExact(capture, fd, address, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Listen {
        static final MethodHandle HANDLE = Native.function("listen",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private static int listen(MemorySegment capture, int fd, int backlog) {
        try {
            return (int) Listen.HANDLE.invokeExact(capture, fd, backlog);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Accept4 {
        static final MethodHandle HANDLE = Native.function("accept4",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    }

    private static int accept4(MemorySegment capture, int fd, MemorySegment address, MemorySegment length, int flags) {
        try {
            return (int) Accept4.HANDLE.invokeExact(capture, fd, address, length, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Connect {
        static final MethodHandle HANDLE = Native.function("connect",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    }

    private static int connect(MemorySegment capture, int fd, MemorySegment address, int length) {
        try {
            return (int) Connect.HANDLE.invokeExact(capture, fd, address, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Send {
        static final MethodHandle HANDLE = Native.function("send",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    }

    private static long send(MemorySegment capture, int fd, MemorySegment buffer, long length, int flags) {
        try {
            return (long) Send.HANDLE.invokeExact(capture, fd, buffer, length, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Recv {
        static final MethodHandle HANDLE = Native.function("recv",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    }

    private static long recv(MemorySegment capture, int fd, MemorySegment buffer, long length, int flags) {
        try {
            return (long) Recv.HANDLE.invokeExact(capture, fd, buffer, length, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Sendmsg {
        static final MethodHandle HANDLE = Native.function("sendmsg",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    }

    private static long sendmsg(MemorySegment capture, int fd, MemorySegment message, int flags) {
        try {
            return (long) Sendmsg.HANDLE.invokeExact(capture, fd, message, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Recvmsg {
        static final MethodHandle HANDLE = Native.function("recvmsg",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    }

    private static long recvmsg(MemorySegment capture, int fd, MemorySegment message, int flags) {
        try {
            return (long) Recvmsg.HANDLE.invokeExact(capture, fd, message, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Getsockopt {
        static final MethodHandle HANDLE = Native.function("getsockopt",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    }

    private static int getsockopt(MemorySegment capture, int fd, int level, int option, MemorySegment value,
                                  MemorySegment length) {
        try {
            return (int) Getsockopt.HANDLE.invokeExact(capture, fd, level, option, value, length);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Poll {
        static final MethodHandle HANDLE = Native.function("poll",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    }

    private static int poll(MemorySegment capture, MemorySegment pollfds, long count, int timeoutMillis) {
        try {
            return (int) Poll.HANDLE.invokeExact(capture, pollfds, count, timeoutMillis);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Eventfd {
        static final MethodHandle HANDLE = Native.function("eventfd",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private static int eventfd(MemorySegment capture, int initialValue, int flags) {
        try {
            return (int) Eventfd.HANDLE.invokeExact(capture, initialValue, flags);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Futex {
        // syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3): glibc reads every argument as a long.
        static final MethodHandle HANDLE = Native.variadic("syscall", 1,
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    }

    private static long futex(MemorySegment capture, long number, MemorySegment word, long operation, long value,
                              MemorySegment timeout, MemorySegment word2, long value3) {
        try {
            return (long) Futex.HANDLE.invokeExact(capture, number, word, operation, value, timeout, word2, value3);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Getuid {
        static final MethodHandle HANDLE = Native.function("getuid", FunctionDescriptor.of(JAVA_INT));
    }

    private static int getuid(MemorySegment capture) {
        try {
            return (int) Getuid.HANDLE.invokeExact(capture);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Geteuid {
        static final MethodHandle HANDLE = Native.function("geteuid", FunctionDescriptor.of(JAVA_INT));
    }

    private static int geteuid(MemorySegment capture) {
        try {
            return (int) Geteuid.HANDLE.invokeExact(capture);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }

    private static final class Getpid {
        static final MethodHandle HANDLE = Native.function("getpid", FunctionDescriptor.of(JAVA_INT));
    }

    private static int getpid(MemorySegment capture) {
        try {
            return (int) Getpid.HANDLE.invokeExact(capture);
        } catch (Throwable t) {
            throw Native.propagate(t);
        }
    }
}
