package dev.conduit.linux;

import dev.conduit.spi.ConduitException;

import java.io.Serial;
import java.util.Objects;

/**
 * A system call failed: carries the call, the errno and what the call was about, so that a log
 * line reads like {@code strace} output:
 * {@code open("/dev/shm/x", O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600): EEXIST (File exists)}.
 *
 * <p>Thrown by every {@link Libc} method; plugins catch it to turn a specific errno into their
 * own outcome (a held {@code flock} into "device in use", {@code ECONNREFUSED} into a failed
 * peer) and otherwise let it propagate to the runtime, which reports it.
 */
public final class ErrnoException extends ConduitException {
    @Serial private static final long serialVersionUID = 1L;

    private final String call;
    private final int errno;
    private final String errnoName;
    private final String subject;

    /**
     * @param call      the system call, such as {@code "open"}
     * @param errno     the error number it returned
     * @param subject   what the call was about: a path, {@code "fd 7 (memfd:chunk)"}, a socket path
     * @param arguments the call's arguments as they should appear between the parentheses of the
     *                  message, usually starting with {@code subject}
     */
    public ErrnoException(String call, int errno, String subject, String arguments) {
        this(call, errno, Errno.name(errno), subject, arguments, null);
    }

    /**
     * Like {@link #ErrnoException(String, int, String, String)}, and appends {@code hint}, what
     * the reader can do about it, unless it is {@code null}.
     */
    public ErrnoException(String call, int errno, String subject, String arguments, String hint) {
        this(call, errno, Errno.name(errno), subject, arguments, hint);
    }

    /**
     * Like {@link #ErrnoException(String, int, String, String, String)}, but names the errno with one of
     * its aliases where the call's man page does ({@code EWOULDBLOCK} for {@code flock}).
     *
     * @throws IllegalArgumentException if {@code errnoName} is not a name of {@code errno}
     */
    public ErrnoException(String call, int errno, String errnoName, String subject, String arguments, String hint) {
        super(message(call, errno, errnoName, arguments, hint));
        this.call = call;
        this.errno = errno;
        this.errnoName = errnoName;
        this.subject = Objects.requireNonNull(subject, "subject");
    }

    private static String message(String call, int errno, String errnoName, String arguments, String hint) {
        Objects.requireNonNull(call, "call");
        Objects.requireNonNull(errnoName, "errnoName");
        if (!errnoName.equals(Errno.name(errno)) && !isAlias(errno, errnoName)) {
            throw new IllegalArgumentException(errnoName + " is not a name of errno " + errno);
        }
        StringBuilder message = new StringBuilder(96)
                .append(call).append('(').append(Objects.requireNonNull(arguments, "arguments")).append("): ")
                .append(errnoName);
        String description = Errno.description(errno);
        if (!description.isEmpty()) {
            message.append(" (").append(description).append(')');
        }
        if (hint != null) {
            message.append(": ").append(hint);
        }
        return message.toString();
    }

    private static boolean isAlias(int errno, String name) {
        return switch (name) {
            case "EWOULDBLOCK" -> errno == Errno.EWOULDBLOCK;
            case "EDEADLOCK" -> errno == Errno.EDEADLOCK;
            case "ENOTSUP" -> errno == Errno.ENOTSUP;
            default -> false;
        };
    }

    /** The system call that failed, such as {@code "open"} or {@code "sendmsg"}. */
    public String call() {
        return call;
    }

    /** The error number, comparable with the constants of {@link Errno}. */
    public int errno() {
        return errno;
    }

    /** The errno's symbolic name, such as {@code "ENOENT"}, or {@code "errno 999"} if unknown. */
    public String errnoName() {
        return errnoName;
    }

    /** What the call was about: a path, a descriptor such as {@code "fd 7 (memfd:chunk)"}, a socket path. */
    public String subject() {
        return subject;
    }
}
