package dev.conduit.linux;

import dev.conduit.linux.internal.FlagNames;

/**
 * File seals of a memfd ({@code F_SEAL_*}, {@code fcntl(2)}), with their Linux values.
 *
 * <p>Used by the memfd plugin: a chunk sealed with {@code F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL}
 * keeps its size for good, so no peer that received the descriptor can truncate it and make
 * other mappings fault with {@code SIGBUS}. Seals belong to the file, so they travel with a
 * descriptor passed by {@code SCM_RIGHTS}. See {@link Libc#addSeals} and {@link Libc#seals}.
 */
public final class Seals {

    /** No further seal may be added. */
    public static final int F_SEAL_SEAL = 0x0001;
    /** The file may not shrink. */
    public static final int F_SEAL_SHRINK = 0x0002;
    /** The file may not grow. */
    public static final int F_SEAL_GROW = 0x0004;
    /** The contents may not change (fails while a writable shared mapping exists). */
    public static final int F_SEAL_WRITE = 0x0008;
    /** No new writable mapping or write may be made; existing writable mappings keep working. */
    public static final int F_SEAL_FUTURE_WRITE = 0x0010;

    /** The seals Conduit puts on every exported memfd chunk: fixed size, no more seals. */
    public static final int FIXED_SIZE = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

    private static final FlagNames NAMES = FlagNames.builder()
            .flag("F_SEAL_SEAL", F_SEAL_SEAL)
            .flag("F_SEAL_SHRINK", F_SEAL_SHRINK)
            .flag("F_SEAL_GROW", F_SEAL_GROW)
            .flag("F_SEAL_WRITE", F_SEAL_WRITE)
            .flag("F_SEAL_FUTURE_WRITE", F_SEAL_FUTURE_WRITE)
            .build();

    private Seals() {}

    /** Renders seals as C would spell them: {@code F_SEAL_SEAL|F_SEAL_SHRINK|F_SEAL_GROW}. */
    public static String describe(int seals) {
        return NAMES.describe(seals);
    }
}
