package dev.conduit.linux.internal;

import java.util.Locale;

/**
 * The numbers of the Linux ABI that callers never pass themselves (fcntl commands, futex
 * operations, system call numbers) and the few that differ between architectures.
 *
 * <p>x86-64 and aarch64 share the asm-generic values for almost everything this module uses;
 * the exceptions are collected here: the {@code futex} system call number, {@code O_DIRECTORY}
 * and {@code O_NOFOLLOW} (arm64 swaps them with {@code O_DIRECT}), and {@code struct stat}
 * (see {@link Layouts#STAT}). {@code AbiTest} compares every value with the C headers.
 */
public final class Abi {

    /** The architectures whose ABI this module encodes. */
    public enum Arch {
        X86_64("x86_64", 202, 5, 319, 217, 332, 0200000, 0400000),
        AARCH64("aarch64", 98, 80, 279, 61, 291, 040000, 0100000),
        /** Anything else: values are the x86-64 ones only so that constant classes still load. */
        UNSUPPORTED("unsupported", -1, -1, -1, -1, -1, 0200000, 0400000);

        final String displayName;
        final int sysFutex;
        final int sysFstat;
        final int sysMemfdCreate;
        final int sysGetdents64;
        final int sysStatx;
        final int oDirectory;
        final int oNofollow;

        Arch(String displayName, int sysFutex, int sysFstat, int sysMemfdCreate, int sysGetdents64, int sysStatx, int oDirectory,
             int oNofollow) {
            this.displayName = displayName;
            this.sysFutex = sysFutex;
            this.sysFstat = sysFstat;
            this.sysMemfdCreate = sysMemfdCreate;
            this.sysGetdents64 = sysGetdents64;
            this.sysStatx = sysStatx;
            this.oDirectory = oDirectory;
            this.oNofollow = oNofollow;
        }

        /** The name {@code uname -m} prints for it. */
        public String displayName() {
            return displayName;
        }

        /** The architecture {@code os.arch} names, as HotSpot reports it ({@code amd64} on x86-64 Linux). */
        public static Arch of(String osArch) {
            return switch (osArch.toLowerCase(Locale.ROOT)) {
                case "amd64", "x86_64", "x86-64" -> X86_64;
                case "aarch64", "arm64" -> AARCH64;
                default -> UNSUPPORTED;
            };
        }
    }

    /** The architecture this JVM runs on. */
    public static final Arch ARCH = Arch.of(System.getProperty("os.arch", ""));

    public static final int O_DIRECTORY = ARCH.oDirectory;
    public static final int O_NOFOLLOW = ARCH.oNofollow;

    /** {@code SYS_futex}: glibc has no wrapper, so futex goes through {@code syscall(2)}. */
    public static final long SYS_futex = ARCH.sysFutex;
    /** {@code SYS_fstat}: called through {@code syscall(2)}, since glibc exports {@code fstat} only from 2.33. */
    public static final long SYS_fstat = ARCH.sysFstat;
    /** {@code SYS_memfd_create}: called through {@code syscall(2)}, since glibc has the wrapper only from 2.27. */
    public static final long SYS_memfd_create = ARCH.sysMemfdCreate;
    /** {@code SYS_getdents64}: glibc has a wrapper only from 2.30, and its {@code readdir} needs a {@code DIR} to manage. */
    public static final long SYS_getdents64 = ARCH.sysGetdents64;
    /** {@code SYS_statx}: called through {@code syscall(2)}, since glibc has the wrapper only from 2.28. */
    public static final long SYS_statx = ARCH.sysStatx;
    /** {@code STATX_BTIME}: the mask bit of {@code stx_btime}, asked for, and set in {@code stx_mask} when the file system records it. */
    public static final int STATX_BTIME = 0x800;
    /**
     * {@code SYS_openat2}, the same on every architecture (numbers from 424 on are shared); called
     * through {@code syscall(2)} because glibc 2.36 has no wrapper.
     */
    public static final long SYS_openat2 = 437;

    public static final int FUTEX_WAIT = 0;
    public static final int FUTEX_WAKE = 1;

    public static final int F_GETFL = 3;
    public static final int F_SETFL = 4;
    public static final int F_ADD_SEALS = 1033;
    public static final int F_GET_SEALS = 1034;

    /** What {@code mmap} returns on failure: {@code (void *) -1}. */
    public static final long MAP_FAILED = -1L;

    /** The most descriptors one {@code SCM_RIGHTS} message may carry ({@code SCM_MAX_FD}, kernel-internal, in no header). */
    public static final int SCM_MAX_FD = 253;

    private Abi() {}
}
