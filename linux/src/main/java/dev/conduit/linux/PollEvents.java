package dev.conduit.linux;

import dev.conduit.linux.internal.FlagNames;

/**
 * Events of {@code poll(2)} ({@code POLL*}), with their Linux values.
 *
 * <p>Used by transports that wait for a socket or an eventfd to become ready (see
 * {@link Libc#poll(FileDescriptor, int, int)}). {@code POLLERR}, {@code POLLHUP} and
 * {@code POLLNVAL} are reported whether asked for or not.
 */
public final class PollEvents {

    public static final int POLLIN = 0x001;
    public static final int POLLPRI = 0x002;
    public static final int POLLOUT = 0x004;
    public static final int POLLERR = 0x008;
    public static final int POLLHUP = 0x010;
    public static final int POLLNVAL = 0x020;
    /** The peer closed its end or shut down writing (stream sockets). */
    public static final int POLLRDHUP = 0x2000;

    private static final FlagNames NAMES = FlagNames.builder()
            .flag("POLLIN", POLLIN)
            .flag("POLLPRI", POLLPRI)
            .flag("POLLOUT", POLLOUT)
            .flag("POLLERR", POLLERR)
            .flag("POLLHUP", POLLHUP)
            .flag("POLLNVAL", POLLNVAL)
            .flag("POLLRDHUP", POLLRDHUP)
            .build();

    private PollEvents() {}

    /** Renders events as C would spell them: {@code POLLIN|POLLHUP}. */
    public static String describe(int events) {
        return NAMES.describe(events);
    }
}
