package dev.conduit.linux;

import dev.conduit.linux.internal.FlagNames;

/**
 * Flags of {@code eventfd(2)} ({@code EFD_*}), with their Linux values.
 *
 * <p>Used by transports that offer an eventfd as a worker's wakeup descriptor, passed to the
 * peer over the socket. {@link Libc#eventfd} adds {@code EFD_CLOEXEC} itself.
 */
public final class EventfdFlags {

    /** Each read returns 1 and decrements the counter, instead of returning and clearing it. */
    public static final int EFD_SEMAPHORE = 1;
    public static final int EFD_NONBLOCK = 04000;
    public static final int EFD_CLOEXEC = 02000000;

    private static final FlagNames NAMES = FlagNames.builder()
            .flag("EFD_SEMAPHORE", EFD_SEMAPHORE)
            .flag("EFD_NONBLOCK", EFD_NONBLOCK)
            .flag("EFD_CLOEXEC", EFD_CLOEXEC)
            .build();

    private EventfdFlags() {}

    /** Renders flags as C would spell them: {@code EFD_NONBLOCK|EFD_CLOEXEC}. */
    public static String describe(int flags) {
        return NAMES.describe(flags);
    }
}
