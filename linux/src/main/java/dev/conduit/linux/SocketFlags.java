package dev.conduit.linux;

import dev.conduit.linux.internal.FlagNames;

/**
 * Constants of the AF_UNIX socket calls: socket types and flags ({@code SOCK_*}), message flags
 * ({@code MSG_*}), socket options ({@code SOL_SOCKET}, {@code SO_*}, {@code SCM_RIGHTS}), with
 * their Linux values.
 *
 * <p>Used by the memfd plugin and the shared-memory transport, which pass descriptors and
 * handshakes over Unix sockets in the shared directory. {@link Libc} adds {@code SOCK_CLOEXEC},
 * {@code MSG_CMSG_CLOEXEC} and {@code MSG_NOSIGNAL} itself.
 */
public final class SocketFlags {

    public static final int AF_UNIX = 1;

    public static final int SOCK_STREAM = 1;
    public static final int SOCK_DGRAM = 2;
    public static final int SOCK_SEQPACKET = 5;
    /** With a socket type: the socket is non-blocking ({@code O_NONBLOCK}). */
    public static final int SOCK_NONBLOCK = 04000;
    /** With a socket type: close on {@code exec}. */
    public static final int SOCK_CLOEXEC = 02000000;

    public static final int MSG_PEEK = 0x2;
    /** In a received message's flags: the control data (passed descriptors) did not fit. */
    public static final int MSG_CTRUNC = 0x8;
    /** In a received message's flags: the datagram did not fit. */
    public static final int MSG_TRUNC = 0x20;
    public static final int MSG_DONTWAIT = 0x40;
    public static final int MSG_WAITALL = 0x100;
    /** Return {@code EPIPE} rather than raise {@code SIGPIPE} when the peer is gone. */
    public static final int MSG_NOSIGNAL = 0x4000;
    /** Received descriptors are close-on-exec. */
    public static final int MSG_CMSG_CLOEXEC = 0x40000000;

    public static final int SOL_SOCKET = 1;
    /** Socket option: the pending error of the socket. */
    public static final int SO_ERROR = 4;
    /** Socket option: credentials of the peer process at {@code connect}/{@code socketpair} time. */
    public static final int SO_PEERCRED = 17;
    /** Control message type: descriptors passed with the message. */
    public static final int SCM_RIGHTS = 1;

    /** The longest socket path in bytes of UTF-8: {@code sun_path} is 108 bytes including the terminating NUL. */
    public static final int SUN_PATH_MAX = 107;

    private static final FlagNames TYPE_FLAGS = FlagNames.builder()
            .flag("SOCK_NONBLOCK", SOCK_NONBLOCK)
            .flag("SOCK_CLOEXEC", SOCK_CLOEXEC)
            .build();

    private static final FlagNames MESSAGE_FLAGS = FlagNames.builder()
            .flag("MSG_PEEK", MSG_PEEK)
            .flag("MSG_CTRUNC", MSG_CTRUNC)
            .flag("MSG_TRUNC", MSG_TRUNC)
            .flag("MSG_DONTWAIT", MSG_DONTWAIT)
            .flag("MSG_WAITALL", MSG_WAITALL)
            .flag("MSG_NOSIGNAL", MSG_NOSIGNAL)
            .flag("MSG_CMSG_CLOEXEC", MSG_CMSG_CLOEXEC)
            .build();

    private static final int TYPE_MASK = 0xf;

    private SocketFlags() {}

    /** Renders a socket type with its flags as C would spell it: {@code SOCK_STREAM|SOCK_CLOEXEC}. */
    public static String describeType(int type) {
        String base = switch (type & TYPE_MASK) {
            case SOCK_STREAM -> "SOCK_STREAM";
            case SOCK_DGRAM -> "SOCK_DGRAM";
            case SOCK_SEQPACKET -> "SOCK_SEQPACKET";
            default -> "type " + (type & TYPE_MASK);
        };
        int rest = type & ~TYPE_MASK;
        return rest == 0 ? base : base + '|' + TYPE_FLAGS.describe(rest);
    }

    /** Renders the flags of {@code accept4}, which are socket-type flags without a type: {@code SOCK_CLOEXEC}. */
    public static String describeAcceptFlags(int flags) {
        return TYPE_FLAGS.describe(flags);
    }

    /** Renders message flags as C would spell them: {@code MSG_NOSIGNAL|MSG_DONTWAIT}. */
    public static String describeMessageFlags(int flags) {
        return MESSAGE_FLAGS.describe(flags);
    }
}
