package dev.conduit.linux;

import dev.conduit.linux.internal.FfmLibc;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

/**
 * An open Linux file descriptor, owned: closing it closes the descriptor, once.
 *
 * <p>Returned by every {@link Libc} call that creates a descriptor and accepted by every call
 * that uses one, so that a plugin cannot mix up an fd with a length or a flag, cannot close one
 * twice, and cannot use one after closing it (which, with descriptor numbers being reused,
 * would silently operate on some other file). The owner closes it, normally with
 * try-with-resources; a descriptor that is never closed leaks until the process exits.
 *
 * <p>{@link #close()} is thread-safe and idempotent. Closing a descriptor while another thread
 * is inside a system call on it is the caller's bug, as in C: the number may already belong to
 * a new file when the other call looks at it.
 */
public final class FileDescriptor implements AutoCloseable {
    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(FileDescriptor.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int fd;
    private final String description;
    @SuppressWarnings("unused") // accessed through CLOSED
    private volatile boolean closed;

    private FileDescriptor(int fd, String description) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd);
        }
        this.fd = fd;
        this.description = Objects.requireNonNull(description, "description");
    }

    /**
     * Takes ownership of {@code fd}: the returned object will close it.
     *
     * @param description what the descriptor refers to, for messages: a path, {@code "memfd:name"},
     *                    {@code "socket"}; may be empty
     */
    public static FileDescriptor adopt(int fd, String description) {
        return new FileDescriptor(fd, description);
    }

    /**
     * The descriptor number, for a system call.
     *
     * @throws IllegalStateException if this descriptor has been closed
     */
    public int fd() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        return fd;
    }

    /** Whether {@link #close()} has not been called yet. */
    public boolean isOpen() {
        return !closed;
    }

    /** What the descriptor refers to, as given when it was created: a path, {@code "memfd:name"}, {@code "socket"}. */
    public String description() {
        return description;
    }

    /**
     * Closes the descriptor if it is still open. {@code close(2)} is not retried after
     * {@code EINTR}: Linux has released the number by then, and a retry could close a
     * descriptor another thread has just been given.
     *
     * @throws ErrnoException if the kernel reports an error other than {@code EINTR}, such as
     *                        {@code EBADF} (someone closed this number behind our back) or
     *                        {@code EIO} from a network file system; the descriptor is closed anyway
     */
    @Override
    public void close() {
        if (CLOSED.compareAndSet(this, false, true)) {
            FfmLibc.closeDescriptor(fd, openName()); // toString() says "closed" by now
        }
    }

    /**
     * Closes this descriptor on the way out of a failure or of a result that must not be lost:
     * an error of the close is added to {@code failure}'s suppressed exceptions instead of
     * replacing it.
     */
    public void closeAfter(Throwable failure) {
        try {
            close();
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /** {@code fd 7 (/dev/shm/x)}, plus {@code closed} once closed: the form used in error messages. */
    @Override
    public String toString() {
        return closed ? openName() + " closed" : openName();
    }

    /** {@code fd 7 (/dev/shm/x)}, open or not. */
    private String openName() {
        return description.isEmpty() ? "fd " + fd : "fd " + fd + " (" + description + ')';
    }
}
