package dev.conduit.linux;

import dev.conduit.linux.internal.FlagNames;

/**
 * Protections ({@code PROT_*}) and flags ({@code MAP_*}) of {@code mmap(2)}, with their Linux values.
 *
 * <p>Used by the memory providers to map chunks through {@link Libc#mmap}. Shared-memory
 * chunks are mapped {@code MAP_SHARED}; device-DAX mappings may ask for
 * {@code MAP_SHARED_VALIDATE|MAP_SYNC}. {@code MAP_FIXED} and {@code MAP_ANONYMOUS} are left out
 * on purpose: the first can silently replace an existing mapping the JVM still uses, the second
 * has no file to share. ({@link Libc#mmapAligned} uses both internally, only over address space it
 * reserved itself.)
 */
public final class MmapFlags {

    public static final int PROT_NONE = 0x0;
    public static final int PROT_READ = 0x1;
    public static final int PROT_WRITE = 0x2;

    /** Writes are visible to every mapping of the file, in this process and in others. */
    public static final int MAP_SHARED = 0x01;
    /** Copy-on-write: writes stay in this mapping. */
    public static final int MAP_PRIVATE = 0x02;
    /** Like {@code MAP_SHARED}, but unknown flags fail with {@code EOPNOTSUPP} instead of being ignored. */
    public static final int MAP_SHARED_VALIDATE = 0x03;
    /** Do not reserve swap for the mapping. */
    public static final int MAP_NORESERVE = 0x4000;
    /** Fault every page in now, so the first access does not. */
    public static final int MAP_POPULATE = 0x8000;
    /** With {@code MAP_SHARED_VALIDATE} on DAX: writes are durable once flushed from the CPU cache. */
    public static final int MAP_SYNC = 0x80000;

    private static final FlagNames PROTECTION = FlagNames.builder()
            .flag("PROT_READ", PROT_READ)
            .flag("PROT_WRITE", PROT_WRITE)
            .build();

    private static final FlagNames FLAGS = FlagNames.builder()
            .flag("MAP_SHARED_VALIDATE", MAP_SHARED_VALIDATE)
            .flag("MAP_SHARED", MAP_SHARED)
            .flag("MAP_PRIVATE", MAP_PRIVATE)
            .flag("MAP_NORESERVE", MAP_NORESERVE)
            .flag("MAP_POPULATE", MAP_POPULATE)
            .flag("MAP_SYNC", MAP_SYNC)
            .build();

    private MmapFlags() {}

    /** Renders a protection as C would spell it: {@code PROT_READ|PROT_WRITE}, or {@code PROT_NONE}. */
    public static String describeProtection(int protection) {
        return protection == PROT_NONE ? "PROT_NONE" : PROTECTION.describe(protection);
    }

    /** Renders mapping flags as C would spell them: {@code MAP_SHARED|MAP_POPULATE}. */
    public static String describe(int flags) {
        return FLAGS.describe(flags);
    }
}
