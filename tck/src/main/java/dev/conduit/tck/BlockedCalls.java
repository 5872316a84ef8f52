package dev.conduit.tck;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;

/**
 * A thread of this process kept inside a system call, as {@code /proc/self/task/<tid>/syscall} shows it: for a
 * plugin's unit tests of what must not happen while a native call runs. A downcall holds the arenas of its segments
 * from before the call until it returns, so a thread blocked in {@code read(2)} into a chunk's segment (from a pipe or
 * socket nothing is written to) makes that chunk's unmap fail for sure, for as long as the test keeps it blocked: the
 * way to test a provider's free or close that meets a mapping in use. Linux only.
 */
public final class BlockedCalls {

    /** A hang guard: the thread is expected within milliseconds. */
    private static final Duration GUARD = Duration.ofSeconds(30);

    private BlockedCalls() {
    }

    /**
     * Starts a thread that runs {@code read}, a {@code read(2)} on {@code fd} that blocks, and returns once it is
     * blocked there. Closing the result runs {@code release} (closes the other end of the socket, or writes to it) and
     * waits for the read to return; in a try-with-resources that also happens when an assertion in between fails, so
     * that the chunk read into can be unmapped by the test's clean-up.
     *
     * <pre>{@code
     * try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
     *      var blocked = BlockedCalls.blockedRead(pair.first().fd(),
     *              () -> libc.read(pair.first(), chunk.segment().asSlice(0, 1)), pair.second()::close)) {
     *     assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(IllegalStateException.class);
     * }
     * }</pre>
     *
     * @throws AssertionError when the read is not blocked within 30 s, or returned or threw before (its failure the
     *                        cause); the read is released and waited for first
     */
    public static BlockedRead blockedRead(int fd, Runnable read, Runnable release) throws InterruptedException {
        BlockedRead blocked = new BlockedRead(fd, read, release);
        try {
            blocked.awaitBlocked();
        } catch (Throwable t) {
            try {
                blocked.close();
            } catch (Throwable e) {
                t.addSuppressed(e);
            }
            throw t;
        }
        return blocked;
    }

    /** A thread blocked in {@code read(2)}, from {@link #blockedRead}, until {@link #close()} releases it. */
    public static final class BlockedRead implements AutoCloseable {
        private final int fd;
        private final Runnable release;
        private final Thread reader;
        private volatile Throwable failure;
        private boolean closed;

        private BlockedRead(int fd, Runnable read, Runnable release) {
            this.fd = fd;
            this.release = release;
            // A daemon: should the release fail, a reader blocked for good does not keep the test JVM alive.
            this.reader = Thread.ofPlatform().daemon().name("blocked-read-" + fd).start(() -> {
                try {
                    read.run();
                } catch (Throwable t) {
                    failure = t;
                }
            });
        }

        private void awaitBlocked() throws InterruptedException {
            // The syscall's number, then its arguments in hex: read(2) is 0 on x86-64 and 63 on aarch64.
            int read = System.getProperty("os.arch").equals("aarch64") ? 63 : 0;
            String prefix = read + " 0x" + Integer.toHexString(fd) + " ";
            long deadline = System.nanoTime() + GUARD.toNanos();
            while (System.nanoTime() < deadline) {
                if (!reader.isAlive()) {
                    throw new AssertionError("the read on fd " + fd + (failure == null ? " returned" : " failed")
                            + " before it blocked: is nothing written to the other end?", failure);
                }
                try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
                    if (tasks.anyMatch(task -> {
                        try {
                            return Files.readString(task.resolve("syscall")).startsWith(prefix);
                        } catch (IOException e) {
                            return false; // the thread ended meanwhile
                        }
                    })) return;
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                Thread.sleep(5);
            }
            throw new AssertionError("no thread of this process blocked in read(" + fd + ") within " + GUARD);
        }

        /**
         * Releases the read and waits for it to return; once only, so that a test may release it before the end of
         * its try-with-resources.
         *
         * @throws AssertionError what the read threw (the cause), or when it has not returned 30 s after the release
         */
        @Override
        public void close() throws InterruptedException {
            if (closed) return;
            closed = true;
            release.run();
            reader.join(GUARD);
            if (reader.isAlive()) {
                throw new AssertionError("the read on fd " + fd + " did not return within " + GUARD + " of its release");
            }
            if (failure != null) {
                throw new AssertionError("the read on fd " + fd + " failed", failure);
            }
        }
    }
}
