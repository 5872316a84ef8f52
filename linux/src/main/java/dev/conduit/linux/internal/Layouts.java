package dev.conduit.linux.internal;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.util.List;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The C structs the system calls read and write, as FFM layouts, with the byte offsets of the
 * fields the code touches.
 *
 * <p>Layouts spell out the padding the C compiler inserts ({@code structLayout} refuses a
 * misaligned member instead of padding it). Layout and field names are the C names, which is
 * how {@code AbiTest} finds the {@code sizeof}/{@code offsetof} to compare each one with.
 * Both supported architectures are LP64; only {@code struct stat} differs between them.
 */
public final class Layouts {

    /** {@code struct iovec}: one buffer of a scatter/gather list. */
    public static final StructLayout IOVEC = MemoryLayout.structLayout(
            ADDRESS.withName("iov_base"),
            JAVA_LONG.withName("iov_len")
    ).withName("iovec");

    /** {@code struct msghdr} of {@code sendmsg}/{@code recvmsg}: 56 bytes, padded after {@code msg_namelen} and at the end. */
    public static final StructLayout MSGHDR = MemoryLayout.structLayout(
            ADDRESS.withName("msg_name"),
            JAVA_INT.withName("msg_namelen"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("msg_iov"),
            JAVA_LONG.withName("msg_iovlen"),
            ADDRESS.withName("msg_control"),
            JAVA_LONG.withName("msg_controllen"),
            JAVA_INT.withName("msg_flags"),
            MemoryLayout.paddingLayout(4)
    ).withName("msghdr");

    /** {@code struct cmsghdr}: the header of one control message; its data follows at {@link #CMSG_DATA_OFFSET}. */
    public static final StructLayout CMSGHDR = MemoryLayout.structLayout(
            JAVA_LONG.withName("cmsg_len"),
            JAVA_INT.withName("cmsg_level"),
            JAVA_INT.withName("cmsg_type")
    ).withName("cmsghdr");

    /** {@code struct sockaddr_un}: 110 bytes, no padding after {@code sun_path}. */
    public static final StructLayout SOCKADDR_UN = MemoryLayout.structLayout(
            JAVA_SHORT.withName("sun_family"),
            MemoryLayout.sequenceLayout(108, JAVA_BYTE).withName("sun_path")
    ).withName("sockaddr_un");

    /** {@code struct ucred} of {@code SO_PEERCRED}. */
    public static final StructLayout UCRED = MemoryLayout.structLayout(
            JAVA_INT.withName("pid"),
            JAVA_INT.withName("uid"),
            JAVA_INT.withName("gid")
    ).withName("ucred");

    /** {@code struct pollfd}. */
    public static final StructLayout POLLFD = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"),
            JAVA_SHORT.withName("events"),
            JAVA_SHORT.withName("revents")
    ).withName("pollfd");

    /** {@code struct open_how} of {@code openat2}. */
    public static final StructLayout OPEN_HOW = MemoryLayout.structLayout(
            JAVA_LONG.withName("flags"),
            JAVA_LONG.withName("mode"),
            JAVA_LONG.withName("resolve")
    ).withName("open_how");

    /**
     * {@code struct dirent64}, glibc's name for the kernel's {@code linux_dirent64}, which
     * {@code getdents64} packs into its buffer: each entry {@code d_reclen} bytes long, its name
     * NUL-terminated from {@code d_name} (the 256 bytes here are glibc's bound, not the entry's).
     */
    public static final StructLayout DIRENT64 = MemoryLayout.structLayout(
            JAVA_LONG.withName("d_ino"),
            JAVA_LONG.withName("d_off"),
            JAVA_SHORT.withName("d_reclen"),
            JAVA_BYTE.withName("d_type"),
            MemoryLayout.sequenceLayout(256, JAVA_BYTE).withName("d_name"),
            MemoryLayout.paddingLayout(5)
    ).withName("dirent64");

    /** {@code struct timespec}: the futex timeout, and {@code st_mtim} of {@link #STAT}. */
    public static final StructLayout TIMESPEC = MemoryLayout.structLayout(
            JAVA_LONG.withName("tv_sec"),
            JAVA_LONG.withName("tv_nsec")
    ).withName("timespec");

    /**
     * glibc's x86-64 {@code struct stat} (144 bytes), with the fields Conduit reads named and the
     * others ({@code st_blksize}, {@code st_blocks}, the access time and the change time) left as
     * padding. {@code st_nlink} is 8 bytes here and 4 in {@link #STAT_GENERIC}.
     */
    static final StructLayout STAT_X86_64 = MemoryLayout.structLayout(
            JAVA_LONG.withName("st_dev"),
            JAVA_LONG.withName("st_ino"),
            JAVA_LONG.withName("st_nlink"),
            JAVA_INT.withName("st_mode"),
            JAVA_INT.withName("st_uid"),
            JAVA_INT.withName("st_gid"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("st_rdev"),
            JAVA_LONG.withName("st_size"),
            MemoryLayout.paddingLayout(88 - 56),
            TIMESPEC.withName("st_mtim"),
            MemoryLayout.paddingLayout(144 - 104)
    ).withName("stat");

    /**
     * The asm-generic {@code struct stat} (128 bytes) that glibc uses on aarch64, named like
     * {@link #STAT_X86_64}. Not exercised on x86-64; {@code AbiTest} checks it on an aarch64 machine.
     */
    static final StructLayout STAT_GENERIC = MemoryLayout.structLayout(
            JAVA_LONG.withName("st_dev"),
            JAVA_LONG.withName("st_ino"),
            JAVA_INT.withName("st_mode"),
            JAVA_INT.withName("st_nlink"),
            JAVA_INT.withName("st_uid"),
            JAVA_INT.withName("st_gid"),
            JAVA_LONG.withName("st_rdev"),
            MemoryLayout.paddingLayout(8),
            JAVA_LONG.withName("st_size"),
            MemoryLayout.paddingLayout(88 - 56),
            TIMESPEC.withName("st_mtim"),
            MemoryLayout.paddingLayout(128 - 104)
    ).withName("stat");

    /** {@code struct stat} of this architecture. */
    public static final StructLayout STAT = Abi.ARCH == Abi.Arch.AARCH64 ? STAT_GENERIC : STAT_X86_64;

    /** {@code struct statx_timestamp}: {@code stx_btime} of {@link #STATX}. */
    public static final StructLayout STATX_TIMESTAMP = MemoryLayout.structLayout(
            JAVA_LONG.withName("tv_sec"),
            JAVA_INT.withName("tv_nsec"),
            MemoryLayout.paddingLayout(4)
    ).withName("statx_timestamp");

    /**
     * The kernel's {@code struct statx} (256 bytes, one layout on every architecture), with the
     * fields Conduit reads named: the mask of what the file system filled in, and the birth time.
     */
    public static final StructLayout STATX = MemoryLayout.structLayout(
            JAVA_INT.withName("stx_mask"),
            MemoryLayout.paddingLayout(80 - 4),
            STATX_TIMESTAMP.withName("stx_btime"),
            MemoryLayout.paddingLayout(256 - 96)
    ).withName("statx");

    /**
     * {@code struct statfs} (120 bytes on x86-64 and aarch64 alike), with the fields Conduit reads
     * named: the file system's type, its block size (the huge page size on hugetlbfs), and its
     * size and room in fragments of {@code f_frsize} bytes.
     */
    public static final StructLayout STATFS = MemoryLayout.structLayout(
            JAVA_LONG.withName("f_type"),
            JAVA_LONG.withName("f_bsize"),
            JAVA_LONG.withName("f_blocks"),
            JAVA_LONG.withName("f_bfree"),
            JAVA_LONG.withName("f_bavail"),
            MemoryLayout.paddingLayout(4 * 8), // f_files, f_ffree, f_fsid, f_namelen
            JAVA_LONG.withName("f_frsize"),
            MemoryLayout.paddingLayout(120 - 80)
    ).withName("statfs");

    /** Every layout above that the system calls use, for {@code AbiTest}. */
    public static final List<StructLayout> ALL =
            List.of(IOVEC, MSGHDR, CMSGHDR, SOCKADDR_UN, UCRED, POLLFD, OPEN_HOW, DIRENT64, TIMESPEC, STAT, STATX_TIMESTAMP, STATX,
                    STATFS);

    public static final long IOV_BASE = offset(IOVEC, "iov_base");
    public static final long IOV_LEN = offset(IOVEC, "iov_len");

    public static final long MSG_NAME = offset(MSGHDR, "msg_name");
    public static final long MSG_NAMELEN = offset(MSGHDR, "msg_namelen");
    public static final long MSG_IOV = offset(MSGHDR, "msg_iov");
    public static final long MSG_IOVLEN = offset(MSGHDR, "msg_iovlen");
    public static final long MSG_CONTROL = offset(MSGHDR, "msg_control");
    public static final long MSG_CONTROLLEN = offset(MSGHDR, "msg_controllen");
    public static final long MSG_FLAGS = offset(MSGHDR, "msg_flags");

    public static final long CMSG_LEN_FIELD = offset(CMSGHDR, "cmsg_len");
    public static final long CMSG_LEVEL = offset(CMSGHDR, "cmsg_level");
    public static final long CMSG_TYPE = offset(CMSGHDR, "cmsg_type");

    public static final long SUN_FAMILY = offset(SOCKADDR_UN, "sun_family");
    public static final long SUN_PATH = offset(SOCKADDR_UN, "sun_path");

    public static final long UCRED_PID = offset(UCRED, "pid");
    public static final long UCRED_UID = offset(UCRED, "uid");
    public static final long UCRED_GID = offset(UCRED, "gid");

    public static final long POLLFD_FD = offset(POLLFD, "fd");
    public static final long POLLFD_EVENTS = offset(POLLFD, "events");
    public static final long POLLFD_REVENTS = offset(POLLFD, "revents");

    public static final long HOW_FLAGS = offset(OPEN_HOW, "flags");
    public static final long HOW_MODE = offset(OPEN_HOW, "mode");
    public static final long HOW_RESOLVE = offset(OPEN_HOW, "resolve");

    public static final long D_RECLEN = offset(DIRENT64, "d_reclen");
    public static final long D_NAME = offset(DIRENT64, "d_name");

    public static final long TV_SEC = offset(TIMESPEC, "tv_sec");
    public static final long TV_NSEC = offset(TIMESPEC, "tv_nsec");

    public static final long ST_DEV = offset(STAT, "st_dev");
    public static final long ST_INO = offset(STAT, "st_ino");
    public static final long ST_NLINK = offset(STAT, "st_nlink");
    /** 8 bytes on x86-64, 4 in the asm-generic layout. */
    public static final long ST_NLINK_SIZE = STAT.select(MemoryLayout.PathElement.groupElement("st_nlink")).byteSize();
    public static final long ST_MODE = offset(STAT, "st_mode");
    public static final long ST_UID = offset(STAT, "st_uid");
    public static final long ST_GID = offset(STAT, "st_gid");
    public static final long ST_RDEV = offset(STAT, "st_rdev");
    public static final long ST_SIZE = offset(STAT, "st_size");
    public static final long ST_MTIM = offset(STAT, "st_mtim");

    public static final long STATFS_F_TYPE = offset(STATFS, "f_type");
    public static final long STATFS_F_BSIZE = offset(STATFS, "f_bsize");
    public static final long STATFS_F_BLOCKS = offset(STATFS, "f_blocks");
    public static final long STATFS_F_BAVAIL = offset(STATFS, "f_bavail");
    public static final long STATFS_F_FRSIZE = offset(STATFS, "f_frsize");

    public static final long STX_MASK = offset(STATX, "stx_mask");
    public static final long STX_BTIME_SEC = offset(STATX, "stx_btime") + offset(STATX_TIMESTAMP, "tv_sec");
    public static final long STX_BTIME_NSEC = offset(STATX, "stx_btime") + offset(STATX_TIMESTAMP, "tv_nsec");

    /** {@code sizeof(size_t)}: control messages are aligned to it. */
    private static final long CMSG_ALIGNMENT = JAVA_LONG.byteSize();

    /** Where a control message's data starts: {@code CMSG_DATA(cmsg) - (unsigned char *) cmsg}. */
    public static final long CMSG_DATA_OFFSET = cmsgAlign(CMSGHDR.byteSize());

    private Layouts() {}

    /** {@code CMSG_ALIGN(length)}: rounds up to the alignment of control messages. */
    public static long cmsgAlign(long length) {
        return (length + CMSG_ALIGNMENT - 1) & -CMSG_ALIGNMENT;
    }

    /** {@code CMSG_SPACE(length)}: the buffer space one control message of {@code length} data bytes takes. */
    public static long cmsgSpace(long length) {
        return cmsgAlign(length) + cmsgAlign(CMSGHDR.byteSize());
    }

    /** {@code CMSG_LEN(length)}: the {@code cmsg_len} of a control message of {@code length} data bytes. */
    public static long cmsgLen(long length) {
        return cmsgAlign(CMSGHDR.byteSize()) + length;
    }

    private static long offset(StructLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }
}
