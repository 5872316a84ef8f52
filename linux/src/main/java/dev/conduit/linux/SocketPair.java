package dev.conduit.linux;

/**
 * The two connected ends made by {@link Libc#socketpair}; closing the pair closes both.
 *
 * <p>Used for in-process plumbing (tests, a worker's own wakeup channel) and for handing one
 * end to a child process.
 *
 * @param first  one end
 * @param second the other end
 */
public record SocketPair(FileDescriptor first, FileDescriptor second) implements AutoCloseable {

    /** Closes both ends; the second is closed even if closing the first fails. */
    @Override
    public void close() {
        try (second) {
            first.close();
        }
    }
}
