package dev.conduit.linux;

/**
 * Linux error numbers: their symbolic names and the text {@code strerror(3)} gives them.
 *
 * <p>Used by {@link ErrnoException} to render a failure the way a C programmer would read it
 * ({@code EEXIST (File exists)}), and by callers that branch on a specific errno
 * ({@code e.errno() == Errno.EWOULDBLOCK}). The numbers are those of {@code asm-generic/errno.h},
 * which x86-64 and aarch64 share; names and texts match glibc's {@code strerrorname_np} and
 * {@code strerrordesc_np}, which a test checks against the C library of the build machine.
 */
public final class Errno {

    /** Operation not permitted. */
    public static final int EPERM = 1;
    /** No such file or directory. */
    public static final int ENOENT = 2;
    /** No such process. */
    public static final int ESRCH = 3;
    /** Interrupted system call. */
    public static final int EINTR = 4;
    /** Input/output error. */
    public static final int EIO = 5;
    /** No such device or address. */
    public static final int ENXIO = 6;
    /** Argument list too long. */
    public static final int E2BIG = 7;
    /** Exec format error. */
    public static final int ENOEXEC = 8;
    /** Bad file descriptor. */
    public static final int EBADF = 9;
    /** No child processes. */
    public static final int ECHILD = 10;
    /** Resource temporarily unavailable. */
    public static final int EAGAIN = 11;
    /** Cannot allocate memory. */
    public static final int ENOMEM = 12;
    /** Permission denied. */
    public static final int EACCES = 13;
    /** Bad address. */
    public static final int EFAULT = 14;
    /** Block device required. */
    public static final int ENOTBLK = 15;
    /** Device or resource busy. */
    public static final int EBUSY = 16;
    /** File exists. */
    public static final int EEXIST = 17;
    /** Invalid cross-device link. */
    public static final int EXDEV = 18;
    /** No such device. */
    public static final int ENODEV = 19;
    /** Not a directory. */
    public static final int ENOTDIR = 20;
    /** Is a directory. */
    public static final int EISDIR = 21;
    /** Invalid argument. */
    public static final int EINVAL = 22;
    /** Too many open files in system. */
    public static final int ENFILE = 23;
    /** Too many open files. */
    public static final int EMFILE = 24;
    /** Inappropriate ioctl for device. */
    public static final int ENOTTY = 25;
    /** Text file busy. */
    public static final int ETXTBSY = 26;
    /** File too large. */
    public static final int EFBIG = 27;
    /** No space left on device. */
    public static final int ENOSPC = 28;
    /** Illegal seek. */
    public static final int ESPIPE = 29;
    /** Read-only file system. */
    public static final int EROFS = 30;
    /** Too many links. */
    public static final int EMLINK = 31;
    /** Broken pipe. */
    public static final int EPIPE = 32;
    /** Numerical argument out of domain. */
    public static final int EDOM = 33;
    /** Numerical result out of range. */
    public static final int ERANGE = 34;
    /** Resource deadlock avoided. */
    public static final int EDEADLK = 35;
    /** File name too long. */
    public static final int ENAMETOOLONG = 36;
    /** No locks available. */
    public static final int ENOLCK = 37;
    /** Function not implemented. */
    public static final int ENOSYS = 38;
    /** Directory not empty. */
    public static final int ENOTEMPTY = 39;
    /** Too many levels of symbolic links. */
    public static final int ELOOP = 40;
    /** No message of desired type. */
    public static final int ENOMSG = 42;
    /** Identifier removed. */
    public static final int EIDRM = 43;
    /** Channel number out of range. */
    public static final int ECHRNG = 44;
    /** Level 2 not synchronized. */
    public static final int EL2NSYNC = 45;
    /** Level 3 halted. */
    public static final int EL3HLT = 46;
    /** Level 3 reset. */
    public static final int EL3RST = 47;
    /** Link number out of range. */
    public static final int ELNRNG = 48;
    /** Protocol driver not attached. */
    public static final int EUNATCH = 49;
    /** No CSI structure available. */
    public static final int ENOCSI = 50;
    /** Level 2 halted. */
    public static final int EL2HLT = 51;
    /** Invalid exchange. */
    public static final int EBADE = 52;
    /** Invalid request descriptor. */
    public static final int EBADR = 53;
    /** Exchange full. */
    public static final int EXFULL = 54;
    /** No anode. */
    public static final int ENOANO = 55;
    /** Invalid request code. */
    public static final int EBADRQC = 56;
    /** Invalid slot. */
    public static final int EBADSLT = 57;
    /** Bad font file format. */
    public static final int EBFONT = 59;
    /** Device not a stream. */
    public static final int ENOSTR = 60;
    /** No data available. */
    public static final int ENODATA = 61;
    /** Timer expired. */
    public static final int ETIME = 62;
    /** Out of streams resources. */
    public static final int ENOSR = 63;
    /** Machine is not on the network. */
    public static final int ENONET = 64;
    /** Package not installed. */
    public static final int ENOPKG = 65;
    /** Object is remote. */
    public static final int EREMOTE = 66;
    /** Link has been severed. */
    public static final int ENOLINK = 67;
    /** Advertise error. */
    public static final int EADV = 68;
    /** Srmount error. */
    public static final int ESRMNT = 69;
    /** Communication error on send. */
    public static final int ECOMM = 70;
    /** Protocol error. */
    public static final int EPROTO = 71;
    /** Multihop attempted. */
    public static final int EMULTIHOP = 72;
    /** RFS specific error. */
    public static final int EDOTDOT = 73;
    /** Bad message. */
    public static final int EBADMSG = 74;
    /** Value too large for defined data type. */
    public static final int EOVERFLOW = 75;
    /** Name not unique on network. */
    public static final int ENOTUNIQ = 76;
    /** File descriptor in bad state. */
    public static final int EBADFD = 77;
    /** Remote address changed. */
    public static final int EREMCHG = 78;
    /** Can not access a needed shared library. */
    public static final int ELIBACC = 79;
    /** Accessing a corrupted shared library. */
    public static final int ELIBBAD = 80;
    /** .lib section in a.out corrupted. */
    public static final int ELIBSCN = 81;
    /** Attempting to link in too many shared libraries. */
    public static final int ELIBMAX = 82;
    /** Cannot exec a shared library directly. */
    public static final int ELIBEXEC = 83;
    /** Invalid or incomplete multibyte or wide character. */
    public static final int EILSEQ = 84;
    /** Interrupted system call should be restarted. */
    public static final int ERESTART = 85;
    /** Streams pipe error. */
    public static final int ESTRPIPE = 86;
    /** Too many users. */
    public static final int EUSERS = 87;
    /** Socket operation on non-socket. */
    public static final int ENOTSOCK = 88;
    /** Destination address required. */
    public static final int EDESTADDRREQ = 89;
    /** Message too long. */
    public static final int EMSGSIZE = 90;
    /** Protocol wrong type for socket. */
    public static final int EPROTOTYPE = 91;
    /** Protocol not available. */
    public static final int ENOPROTOOPT = 92;
    /** Protocol not supported. */
    public static final int EPROTONOSUPPORT = 93;
    /** Socket type not supported. */
    public static final int ESOCKTNOSUPPORT = 94;
    /** Operation not supported. */
    public static final int EOPNOTSUPP = 95;
    /** Protocol family not supported. */
    public static final int EPFNOSUPPORT = 96;
    /** Address family not supported by protocol. */
    public static final int EAFNOSUPPORT = 97;
    /** Address already in use. */
    public static final int EADDRINUSE = 98;
    /** Cannot assign requested address. */
    public static final int EADDRNOTAVAIL = 99;
    /** Network is down. */
    public static final int ENETDOWN = 100;
    /** Network is unreachable. */
    public static final int ENETUNREACH = 101;
    /** Network dropped connection on reset. */
    public static final int ENETRESET = 102;
    /** Software caused connection abort. */
    public static final int ECONNABORTED = 103;
    /** Connection reset by peer. */
    public static final int ECONNRESET = 104;
    /** No buffer space available. */
    public static final int ENOBUFS = 105;
    /** Transport endpoint is already connected. */
    public static final int EISCONN = 106;
    /** Transport endpoint is not connected. */
    public static final int ENOTCONN = 107;
    /** Cannot send after transport endpoint shutdown. */
    public static final int ESHUTDOWN = 108;
    /** Too many references: cannot splice. */
    public static final int ETOOMANYREFS = 109;
    /** Connection timed out. */
    public static final int ETIMEDOUT = 110;
    /** Connection refused. */
    public static final int ECONNREFUSED = 111;
    /** Host is down. */
    public static final int EHOSTDOWN = 112;
    /** No route to host. */
    public static final int EHOSTUNREACH = 113;
    /** Operation already in progress. */
    public static final int EALREADY = 114;
    /** Operation now in progress. */
    public static final int EINPROGRESS = 115;
    /** Stale file handle. */
    public static final int ESTALE = 116;
    /** Structure needs cleaning. */
    public static final int EUCLEAN = 117;
    /** Not a XENIX named type file. */
    public static final int ENOTNAM = 118;
    /** No XENIX semaphores available. */
    public static final int ENAVAIL = 119;
    /** Is a named type file. */
    public static final int EISNAM = 120;
    /** Remote I/O error. */
    public static final int EREMOTEIO = 121;
    /** Disk quota exceeded. */
    public static final int EDQUOT = 122;
    /** No medium found. */
    public static final int ENOMEDIUM = 123;
    /** Wrong medium type. */
    public static final int EMEDIUMTYPE = 124;
    /** Operation canceled. */
    public static final int ECANCELED = 125;
    /** Required key not available. */
    public static final int ENOKEY = 126;
    /** Key has expired. */
    public static final int EKEYEXPIRED = 127;
    /** Key has been revoked. */
    public static final int EKEYREVOKED = 128;
    /** Key was rejected by service. */
    public static final int EKEYREJECTED = 129;
    /** Owner died. */
    public static final int EOWNERDEAD = 130;
    /** State not recoverable. */
    public static final int ENOTRECOVERABLE = 131;
    /** Operation not possible due to RF-kill. */
    public static final int ERFKILL = 132;
    /** Memory page has hardware error. */
    public static final int EHWPOISON = 133;

    /** Same number as {@link #EAGAIN}: the name {@code flock}, {@code accept} and non-blocking I/O document. */
    public static final int EWOULDBLOCK = EAGAIN;
    /** Same number as {@link #EDEADLK}. */
    public static final int EDEADLOCK = EDEADLK;
    /** Same number as {@link #EOPNOTSUPP}. */
    public static final int ENOTSUP = EOPNOTSUPP;

    private static final int LIMIT = EHWPOISON + 1;
    private static final String[] NAMES = new String[LIMIT];
    private static final String[] DESCRIPTIONS = new String[LIMIT];

    static {
        entry(EPERM, "EPERM", "Operation not permitted");
        entry(ENOENT, "ENOENT", "No such file or directory");
        entry(ESRCH, "ESRCH", "No such process");
        entry(EINTR, "EINTR", "Interrupted system call");
        entry(EIO, "EIO", "Input/output error");
        entry(ENXIO, "ENXIO", "No such device or address");
        entry(E2BIG, "E2BIG", "Argument list too long");
        entry(ENOEXEC, "ENOEXEC", "Exec format error");
        entry(EBADF, "EBADF", "Bad file descriptor");
        entry(ECHILD, "ECHILD", "No child processes");
        entry(EAGAIN, "EAGAIN", "Resource temporarily unavailable");
        entry(ENOMEM, "ENOMEM", "Cannot allocate memory");
        entry(EACCES, "EACCES", "Permission denied");
        entry(EFAULT, "EFAULT", "Bad address");
        entry(ENOTBLK, "ENOTBLK", "Block device required");
        entry(EBUSY, "EBUSY", "Device or resource busy");
        entry(EEXIST, "EEXIST", "File exists");
        entry(EXDEV, "EXDEV", "Invalid cross-device link");
        entry(ENODEV, "ENODEV", "No such device");
        entry(ENOTDIR, "ENOTDIR", "Not a directory");
        entry(EISDIR, "EISDIR", "Is a directory");
        entry(EINVAL, "EINVAL", "Invalid argument");
        entry(ENFILE, "ENFILE", "Too many open files in system");
        entry(EMFILE, "EMFILE", "Too many open files");
        entry(ENOTTY, "ENOTTY", "Inappropriate ioctl for device");
        entry(ETXTBSY, "ETXTBSY", "Text file busy");
        entry(EFBIG, "EFBIG", "File too large");
        entry(ENOSPC, "ENOSPC", "No space left on device");
        entry(ESPIPE, "ESPIPE", "Illegal seek");
        entry(EROFS, "EROFS", "Read-only file system");
        entry(EMLINK, "EMLINK", "Too many links");
        entry(EPIPE, "EPIPE", "Broken pipe");
        entry(EDOM, "EDOM", "Numerical argument out of domain");
        entry(ERANGE, "ERANGE", "Numerical result out of range");
        entry(EDEADLK, "EDEADLK", "Resource deadlock avoided");
        entry(ENAMETOOLONG, "ENAMETOOLONG", "File name too long");
        entry(ENOLCK, "ENOLCK", "No locks available");
        entry(ENOSYS, "ENOSYS", "Function not implemented");
        entry(ENOTEMPTY, "ENOTEMPTY", "Directory not empty");
        entry(ELOOP, "ELOOP", "Too many levels of symbolic links");
        entry(ENOMSG, "ENOMSG", "No message of desired type");
        entry(EIDRM, "EIDRM", "Identifier removed");
        entry(ECHRNG, "ECHRNG", "Channel number out of range");
        entry(EL2NSYNC, "EL2NSYNC", "Level 2 not synchronized");
        entry(EL3HLT, "EL3HLT", "Level 3 halted");
        entry(EL3RST, "EL3RST", "Level 3 reset");
        entry(ELNRNG, "ELNRNG", "Link number out of range");
        entry(EUNATCH, "EUNATCH", "Protocol driver not attached");
        entry(ENOCSI, "ENOCSI", "No CSI structure available");
        entry(EL2HLT, "EL2HLT", "Level 2 halted");
        entry(EBADE, "EBADE", "Invalid exchange");
        entry(EBADR, "EBADR", "Invalid request descriptor");
        entry(EXFULL, "EXFULL", "Exchange full");
        entry(ENOANO, "ENOANO", "No anode");
        entry(EBADRQC, "EBADRQC", "Invalid request code");
        entry(EBADSLT, "EBADSLT", "Invalid slot");
        entry(EBFONT, "EBFONT", "Bad font file format");
        entry(ENOSTR, "ENOSTR", "Device not a stream");
        entry(ENODATA, "ENODATA", "No data available");
        entry(ETIME, "ETIME", "Timer expired");
        entry(ENOSR, "ENOSR", "Out of streams resources");
        entry(ENONET, "ENONET", "Machine is not on the network");
        entry(ENOPKG, "ENOPKG", "Package not installed");
        entry(EREMOTE, "EREMOTE", "Object is remote");
        entry(ENOLINK, "ENOLINK", "Link has been severed");
        entry(EADV, "EADV", "Advertise error");
        entry(ESRMNT, "ESRMNT", "Srmount error");
        entry(ECOMM, "ECOMM", "Communication error on send");
        entry(EPROTO, "EPROTO", "Protocol error");
        entry(EMULTIHOP, "EMULTIHOP", "Multihop attempted");
        entry(EDOTDOT, "EDOTDOT", "RFS specific error");
        entry(EBADMSG, "EBADMSG", "Bad message");
        entry(EOVERFLOW, "EOVERFLOW", "Value too large for defined data type");
        entry(ENOTUNIQ, "ENOTUNIQ", "Name not unique on network");
        entry(EBADFD, "EBADFD", "File descriptor in bad state");
        entry(EREMCHG, "EREMCHG", "Remote address changed");
        entry(ELIBACC, "ELIBACC", "Can not access a needed shared library");
        entry(ELIBBAD, "ELIBBAD", "Accessing a corrupted shared library");
        entry(ELIBSCN, "ELIBSCN", ".lib section in a.out corrupted");
        entry(ELIBMAX, "ELIBMAX", "Attempting to link in too many shared libraries");
        entry(ELIBEXEC, "ELIBEXEC", "Cannot exec a shared library directly");
        entry(EILSEQ, "EILSEQ", "Invalid or incomplete multibyte or wide character");
        entry(ERESTART, "ERESTART", "Interrupted system call should be restarted");
        entry(ESTRPIPE, "ESTRPIPE", "Streams pipe error");
        entry(EUSERS, "EUSERS", "Too many users");
        entry(ENOTSOCK, "ENOTSOCK", "Socket operation on non-socket");
        entry(EDESTADDRREQ, "EDESTADDRREQ", "Destination address required");
        entry(EMSGSIZE, "EMSGSIZE", "Message too long");
        entry(EPROTOTYPE, "EPROTOTYPE", "Protocol wrong type for socket");
        entry(ENOPROTOOPT, "ENOPROTOOPT", "Protocol not available");
        entry(EPROTONOSUPPORT, "EPROTONOSUPPORT", "Protocol not supported");
        entry(ESOCKTNOSUPPORT, "ESOCKTNOSUPPORT", "Socket type not supported");
        entry(EOPNOTSUPP, "EOPNOTSUPP", "Operation not supported");
        entry(EPFNOSUPPORT, "EPFNOSUPPORT", "Protocol family not supported");
        entry(EAFNOSUPPORT, "EAFNOSUPPORT", "Address family not supported by protocol");
        entry(EADDRINUSE, "EADDRINUSE", "Address already in use");
        entry(EADDRNOTAVAIL, "EADDRNOTAVAIL", "Cannot assign requested address");
        entry(ENETDOWN, "ENETDOWN", "Network is down");
        entry(ENETUNREACH, "ENETUNREACH", "Network is unreachable");
        entry(ENETRESET, "ENETRESET", "Network dropped connection on reset");
        entry(ECONNABORTED, "ECONNABORTED", "Software caused connection abort");
        entry(ECONNRESET, "ECONNRESET", "Connection reset by peer");
        entry(ENOBUFS, "ENOBUFS", "No buffer space available");
        entry(EISCONN, "EISCONN", "Transport endpoint is already connected");
        entry(ENOTCONN, "ENOTCONN", "Transport endpoint is not connected");
        entry(ESHUTDOWN, "ESHUTDOWN", "Cannot send after transport endpoint shutdown");
        entry(ETOOMANYREFS, "ETOOMANYREFS", "Too many references: cannot splice");
        entry(ETIMEDOUT, "ETIMEDOUT", "Connection timed out");
        entry(ECONNREFUSED, "ECONNREFUSED", "Connection refused");
        entry(EHOSTDOWN, "EHOSTDOWN", "Host is down");
        entry(EHOSTUNREACH, "EHOSTUNREACH", "No route to host");
        entry(EALREADY, "EALREADY", "Operation already in progress");
        entry(EINPROGRESS, "EINPROGRESS", "Operation now in progress");
        entry(ESTALE, "ESTALE", "Stale file handle");
        entry(EUCLEAN, "EUCLEAN", "Structure needs cleaning");
        entry(ENOTNAM, "ENOTNAM", "Not a XENIX named type file");
        entry(ENAVAIL, "ENAVAIL", "No XENIX semaphores available");
        entry(EISNAM, "EISNAM", "Is a named type file");
        entry(EREMOTEIO, "EREMOTEIO", "Remote I/O error");
        entry(EDQUOT, "EDQUOT", "Disk quota exceeded");
        entry(ENOMEDIUM, "ENOMEDIUM", "No medium found");
        entry(EMEDIUMTYPE, "EMEDIUMTYPE", "Wrong medium type");
        entry(ECANCELED, "ECANCELED", "Operation canceled");
        entry(ENOKEY, "ENOKEY", "Required key not available");
        entry(EKEYEXPIRED, "EKEYEXPIRED", "Key has expired");
        entry(EKEYREVOKED, "EKEYREVOKED", "Key has been revoked");
        entry(EKEYREJECTED, "EKEYREJECTED", "Key was rejected by service");
        entry(EOWNERDEAD, "EOWNERDEAD", "Owner died");
        entry(ENOTRECOVERABLE, "ENOTRECOVERABLE", "State not recoverable");
        entry(ERFKILL, "ERFKILL", "Operation not possible due to RF-kill");
        entry(EHWPOISON, "EHWPOISON", "Memory page has hardware error");
    }

    private Errno() {}

    private static void entry(int errno, String name, String description) {
        NAMES[errno] = name;
        DESCRIPTIONS[errno] = description;
    }

    /**
     * The symbolic name of {@code errno}, such as {@code "ENOENT"}; {@code "errno 999"} for a
     * number this table does not know. Where two names share a number the first in
     * {@code errno.h} wins ({@code EAGAIN}, not {@code EWOULDBLOCK}).
     */
    public static String name(int errno) {
        String name = errno > 0 && errno < LIMIT ? NAMES[errno] : null;
        return name != null ? name : "errno " + errno;
    }

    /** The {@code strerror(3)} text of {@code errno}, such as {@code "No such file or directory"}; empty if unknown. */
    public static String description(int errno) {
        String description = errno > 0 && errno < LIMIT ? DESCRIPTIONS[errno] : null;
        return description != null ? description : "";
    }

    /**
     * What to do about a call that failed with {@code errno}: {@link #shortageRemedy} for a
     * shortage of file descriptors ({@link #EMFILE}, {@link #ENFILE}), else {@code otherwise}, the
     * caller's remedy for what the call was about.
     */
    public static String remedy(int errno, String otherwise) {
        return isShortage(errno) ? shortageRemedy(errno) : otherwise;
    }

    /**
     * Whether {@code errno} is a shortage of file descriptors, this process's ({@link #EMFILE}) or
     * the system's ({@link #ENFILE}): one that passes once some are closed, not a fault of what the
     * call was about.
     */
    public static boolean isShortage(int errno) {
        return errno == EMFILE || errno == ENFILE;
    }

    /**
     * What to do when file descriptors ran out: this process's ({@link #EMFILE}) or the system's
     * ({@link #ENFILE}). Worded once for every module that reports one, since no path, setting or
     * peer that the failed call was about is at fault then; a caller adds what its own use of
     * descriptors changes (a chunk size), or that its configuration is not to blame.
     *
     * @throws IllegalArgumentException if {@code errno} is neither
     */
    public static String shortageRemedy(int errno) {
        return switch (errno) {
            case EMFILE -> "this process has no file descriptor left: raise its open-file limit (ulimit -n, RLIMIT_NOFILE, "
                    + "systemd LimitNOFILE) or close descriptors it no longer needs";
            case ENFILE -> "the system's open-file table is full: raise fs.file-max or stop processes that hold many files";
            default -> throw new IllegalArgumentException(name(errno) + " is no shortage of file descriptors");
        };
    }

    /** Whether this table has a name for {@code errno}. */
    public static boolean isKnown(int errno) {
        return errno > 0 && errno < LIMIT && NAMES[errno] != null;
    }
}
