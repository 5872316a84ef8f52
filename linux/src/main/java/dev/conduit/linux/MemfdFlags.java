package dev.conduit.linux;

import dev.conduit.linux.internal.FlagNames;

/**
 * Flags of {@code memfd_create(2)} ({@code MFD_*}), with their Linux values.
 *
 * <p>Used by the memfd plugin. {@link Libc#memfdCreate} adds {@code MFD_CLOEXEC} itself; pass
 * {@code MFD_ALLOW_SEALING} to be able to seal the file afterwards.
 */
public final class MemfdFlags {

    public static final int MFD_CLOEXEC = 0x0001;
    /** Allow {@link Seals} to be added later; without it the file is born with {@code F_SEAL_SEAL}. */
    public static final int MFD_ALLOW_SEALING = 0x0002;
    /** Back the file with huge pages from hugetlbfs (sizes must be multiples of the huge page size). */
    public static final int MFD_HUGETLB = 0x0004;

    private static final FlagNames NAMES = FlagNames.builder()
            .flag("MFD_CLOEXEC", MFD_CLOEXEC)
            .flag("MFD_ALLOW_SEALING", MFD_ALLOW_SEALING)
            .flag("MFD_HUGETLB", MFD_HUGETLB)
            .build();

    private MemfdFlags() {}

    /** Renders flags as C would spell them: {@code MFD_CLOEXEC|MFD_ALLOW_SEALING}. */
    public static String describe(int flags) {
        return NAMES.describe(flags);
    }
}
