package dev.conduit.linux;

import dev.conduit.linux.internal.Abi;
import dev.conduit.linux.internal.FlagNames;

/**
 * Flags of {@code open(2)}, {@code openat(2)}, {@code openat2(2)} ({@code O_*}, {@code RESOLVE_*})
 * and of the {@code *at} calls ({@code AT_*}), with their Linux values.
 *
 * <p>Used by plugins to open shared files and device nodes through {@link Libc}. Names are the
 * C names so that code reads like the man pages. {@code O_DIRECTORY} and {@code O_NOFOLLOW}
 * differ between x86-64 and aarch64 and are therefore not compile-time constants.
 * {@link Libc} adds {@code O_CLOEXEC} to every open itself.
 */
public final class OpenFlags {

    public static final int O_RDONLY = 0;
    public static final int O_WRONLY = 01;
    public static final int O_RDWR = 02;
    /** Mask of the access mode ({@code O_RDONLY}, {@code O_WRONLY} or {@code O_RDWR}). */
    public static final int O_ACCMODE = 03;
    public static final int O_CREAT = 0100;
    public static final int O_EXCL = 0200;
    public static final int O_NOCTTY = 0400;
    public static final int O_TRUNC = 01000;
    public static final int O_APPEND = 02000;
    public static final int O_NONBLOCK = 04000;
    public static final int O_DIRECTORY = Abi.O_DIRECTORY;
    public static final int O_NOFOLLOW = Abi.O_NOFOLLOW;
    public static final int O_CLOEXEC = 02000000;
    /**
     * Reads through the descriptor leave the access time as it is. Only the file's owner may set it
     * ({@code open}, or {@code fcntl(F_SETFL)} on an open descriptor), or a process with
     * {@code CAP_FOWNER} in its user namespace where that namespace maps the owner: setting it
     * proves a file this user's where the owner's uid alone cannot ({@code UserNamespace.ownsFile}
     * in the shm module), changing nothing of the file, also on a read-only mount.
     */
    public static final int O_NOATIME = 01000000;
    /** A descriptor that only names a file (for {@code *at} calls, {@code fstat}), without opening it for I/O. */
    public static final int O_PATH = 010000000;
    /**
     * An unnamed file in the directory the path names, which takes the mode as {@code O_CREAT}
     * does ({@code open(2)}); {@code O_DIRECTORY} is part of it.
     */
    public static final int O_TMPFILE = 020000000 | O_DIRECTORY;

    /** {@code unlinkat}: remove a directory. */
    public static final int AT_REMOVEDIR = 0x200;
    /** For {@code fchownat}: {@code path} is empty and the call acts on the file the descriptor itself names (an {@code O_PATH} one too). */
    public static final int AT_EMPTY_PATH = 0x1000;

    /** {@code openat2}: refuse to cross a mount point. */
    public static final int RESOLVE_NO_XDEV = 0x01;
    /** {@code openat2}: refuse {@code /proc/<pid>/fd}-style magic links. */
    public static final int RESOLVE_NO_MAGICLINKS = 0x02;
    /** {@code openat2}: refuse every symbolic link on the path, not only the last ({@code ELOOP}). */
    public static final int RESOLVE_NO_SYMLINKS = 0x04;
    /** {@code openat2}: refuse any path that leaves the directory, by {@code ..} or absolute path ({@code EXDEV}). */
    public static final int RESOLVE_BENEATH = 0x08;
    /** {@code openat2}: treat the directory as the root ({@code /} and {@code ..} stop there). */
    public static final int RESOLVE_IN_ROOT = 0x10;

    private static final FlagNames OPEN = FlagNames.builder()
            .flag("O_CREAT", O_CREAT)
            .flag("O_EXCL", O_EXCL)
            .flag("O_NOCTTY", O_NOCTTY)
            .flag("O_TRUNC", O_TRUNC)
            .flag("O_APPEND", O_APPEND)
            .flag("O_NONBLOCK", O_NONBLOCK)
            .flag("O_TMPFILE", O_TMPFILE)
            .flag("O_DIRECTORY", O_DIRECTORY)
            .flag("O_NOFOLLOW", O_NOFOLLOW)
            .flag("O_CLOEXEC", O_CLOEXEC)
            .flag("O_NOATIME", O_NOATIME)
            .flag("O_PATH", O_PATH)
            .build();

    private static final FlagNames RESOLVE = FlagNames.builder()
            .flag("RESOLVE_NO_XDEV", RESOLVE_NO_XDEV)
            .flag("RESOLVE_NO_MAGICLINKS", RESOLVE_NO_MAGICLINKS)
            .flag("RESOLVE_NO_SYMLINKS", RESOLVE_NO_SYMLINKS)
            .flag("RESOLVE_BENEATH", RESOLVE_BENEATH)
            .flag("RESOLVE_IN_ROOT", RESOLVE_IN_ROOT)
            .build();

    private OpenFlags() {}

    /** Renders {@code O_*} flags as C would spell them, access mode first: {@code O_RDWR|O_CREAT|O_EXCL}. */
    public static String describe(int flags) {
        String access = switch (flags & O_ACCMODE) {
            case O_RDONLY -> "O_RDONLY";
            case O_WRONLY -> "O_WRONLY";
            case O_RDWR -> "O_RDWR";
            default -> "O_ACCMODE";
        };
        int rest = flags & ~O_ACCMODE;
        return rest == 0 ? access : access + '|' + OPEN.describe(rest);
    }

    /** Renders {@code RESOLVE_*} flags: {@code RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH}. */
    public static String describeResolve(long resolve) {
        return RESOLVE.describe((int) resolve);
    }
}
