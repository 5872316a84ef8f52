package org.example.conduit.tcp;

import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.RepeatedWarning;
import dev.conduit.spi.Transport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * The receiving half of the handshake, on a thread of its own: a connector waits for the
 * acknowledgement before its connect returns, and the thread that waits may be the very one that
 * drives this transport's progress() (the TCK drives both transports of a test from one thread).
 *
 * <p>The thread accepts, reads each hello (the token, then the connector's address) within
 * {@code tcp.connect.timeout}, compares the token with {@code MessageDigest.isEqual}, makes the
 * connection's frame buffer, hands the connection to progress() ({@link #poll}) and only then writes
 * {@link Frame#ACK}. A connection whose hello is wrong or not whole in time is closed, and its
 * connector's connect fails. Anyone who reaches the port can connect, so what a stranger costs is
 * bounded: at most {@value #MAX_HANDSHAKES} connections wait for their hello at once, each holding a
 * descriptor and a buffer for its hello alone; connections beyond are closed as they are accepted.
 * Refusals are warned about at most once a minute ({@link RepeatedWarning}).
 */
final class Acceptor implements AutoCloseable {

    /** Connections waiting for their hello, at most. */
    static final int MAX_HANDSHAKES = 64;
    /** The pause after a failed accept (the process out of descriptors), which fails again until one is freed: no busy loop. */
    private static final Duration ACCEPT_RETRY = Duration.ofMillis(100);
    private static final AtomicInteger THREADS = new AtomicInteger();

    /** A connection whose hello was verified: what progress() makes an inbound connection of. */
    record Verified(SocketChannel channel, byte[] senderAddress, ByteBuffer frames) {
    }

    private final ServerSocketChannel server;
    private final Selector selector;
    private final byte[] token;
    private final int maxPayload;
    private final Duration timeout;
    /** Anyone who reaches the port can make a connection this refuses, as fast as it can connect: at most one warning a minute. */
    private final RepeatedWarning refused;
    /**
     * An accept that fails (the process out of descriptors) fails again at every retry, as may a
     * failure of the thread's loop: at most one warning a minute.
     */
    private final RepeatedWarning acceptFailed;
    /** The thread's own: connections accepted whose hello is not yet whole. */
    private final List<Handshake> handshakes = new ArrayList<>();
    private final Queue<Verified> verified = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private volatile boolean closing;

    /**
     * Starts accepting on {@code server}, on a thread that {@code startThread} starts ({@link #startDaemon}; a test's may
     * fail as in a process out of threads). {@code server} stays the caller's to close, also when this throws; the
     * selector this opens is closed whatever it fails on.
     */
    Acceptor(ServerSocketChannel server, byte[] token, int maxPayload, Duration timeout, System.Logger log,
             Function<Runnable, Thread> startThread) throws IOException {
        this.server = server;
        this.token = token;
        this.maxPayload = maxPayload;
        this.timeout = timeout;
        this.refused = new RepeatedWarning(log, Duration.ofMinutes(1));
        this.acceptFailed = new RepeatedWarning(log, Duration.ofMinutes(1));
        this.selector = Selector.open();
        try {
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
            // An OutOfMemoryError ("unable to create native thread") or a refusal of the thread's start leaked the selector.
            this.thread = startThread.apply(this::serve);
        } catch (IOException | RuntimeException | Error e) {
            Cleanup.run(e, () -> TcpTransport.closeQuietly(selector));
            throw e;
        }
    }

    /** The accepting thread: a daemon, so that a worker left open does not keep the JVM alive. */
    static Thread startDaemon(Runnable serve) {
        return Thread.ofPlatform().daemon().name("conduit-tcp-acceptor-" + THREADS.incrementAndGet()).start(serve);
    }

    /** The next verified connection, or {@code null}; it is the caller's from then on. */
    Verified poll() {
        return verified.poll();
    }

    private void serve() {
        while (!closing) {
            try {
                // Waiting handshakes are looked at at least once per timeout, to give up on those that stall.
                selector.select(handshakes.isEmpty() ? 0 : Math.max(1, timeout.toMillis()));
                selector.selectedKeys().clear();
                if (closing) return;
                acceptWaiting();
                long now = System.nanoTime();
                handshakes.removeIf(h -> h.advance(now));
            } catch (IOException | RuntimeException | Error e) { // an Error too: a thread that ends accepts nobody again
                acceptFailed.log(() -> "tcp: the acceptor failed: " + e + "; retrying every " + ACCEPT_RETRY.toMillis() + " ms");
                LockSupport.parkNanos(ACCEPT_RETRY.toNanos());
            }
        }
    }

    private void acceptWaiting() throws IOException {
        while (true) {
            SocketChannel accepted;
            try {
                accepted = server.accept();
            } catch (IOException e) {
                // The connection stays queued, and the listener ready: without the pause the next select would return at once.
                acceptFailed.log(() -> "tcp: accept failed: " + e.getMessage() + "; retrying every " + ACCEPT_RETRY.toMillis() + " ms");
                LockSupport.parkNanos(ACCEPT_RETRY.toNanos());
                return;
            }
            if (accepted == null) return;
            if (handshakes.size() >= MAX_HANDSHAKES) {
                refuse(accepted, MAX_HANDSHAKES + " connections are waiting for their hello already, the most this transport lets "
                        + "wait (each for at most " + ConfigKey.durationText(timeout) + ", tcp.connect.timeout)");
                continue;
            }
            try {
                accepted.configureBlocking(false);
                handshakes.add(new Handshake(accepted, accepted.register(selector, SelectionKey.OP_READ), System.nanoTime()));
            } catch (IOException | RuntimeException e) {
                refuse(accepted, e.toString());
            }
        }
    }

    /** Closes {@code channel}, warning why; returns true, the handshake being over. */
    private boolean refuse(SocketChannel channel, String why) {
        String from;
        try {
            from = String.valueOf(channel.getRemoteAddress());
        } catch (IOException e) {
            from = "a peer";
        }
        String peer = from;
        refused.log(() -> "tcp: refused a connection from " + peer + ": " + why);
        TcpTransport.closeQuietly(channel);
        return true;
    }

    /**
     * Stops the thread and waits for it, then closes the connections it had not verified and those
     * it verified that progress() never took. The listening socket stays open: the transport closes it.
     */
    @Override
    public void close() {
        closing = true;
        selector.wakeup();
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        handshakes.forEach(h -> TcpTransport.closeQuietly(h.channel));
        handshakes.clear();
        for (Verified v; (v = verified.poll()) != null; ) TcpTransport.closeQuietly(v.channel());
        TcpTransport.closeQuietly(selector);
    }

    /** A connection accepted, until its hello is whole (handed over) or refused. */
    private final class Handshake {
        private final SocketChannel channel;
        private final SelectionKey key;
        private final long accepted;
        /**
         * Room for the token and the address's length, then for the address alone: a connection
         * whose peer presents no token costs no buffer for a whole frame. Exactly the hello: the
         * frames after it are progress()'s to read.
         */
        private ByteBuffer buffer = ByteBuffer.allocate(Frame.HELLO_PREFIX).order(ByteOrder.LITTLE_ENDIAN);
        private boolean prefixRead;

        Handshake(SocketChannel channel, SelectionKey key, long accepted) {
            this.channel = channel;
            this.key = key;
            this.accepted = accepted;
        }

        /** Reads what arrived; whether the handshake is over. */
        boolean advance(long now) {
            try {
                int n = channel.read(buffer);
                if (!prefixRead) {
                    // Judged as soon as it is whole: a stranger's wrong token is refused without waiting for more.
                    if (buffer.position() >= Frame.TOKEN_LENGTH
                            && !MessageDigest.isEqual(Arrays.copyOf(buffer.array(), Frame.TOKEN_LENGTH), token)) {
                        return refuse(channel, "it presented a wrong token");
                    }
                    if (buffer.hasRemaining()) return waitMore(n, now);
                    int length = Short.toUnsignedInt(buffer.getShort(Frame.TOKEN_LENGTH));
                    if (length == 0 || length > Transport.MAX_ADDRESS_LENGTH) {
                        return refuse(channel, "it announced an address of " + length + " bytes (1 to " + Transport.MAX_ADDRESS_LENGTH + ")");
                    }
                    prefixRead = true;
                    buffer = ByteBuffer.allocate(length);
                    n = channel.read(buffer);
                }
                if (buffer.hasRemaining()) return waitMore(n, now);
                key.cancel(); // from the handoff on, progress() reads the connection
                verified.add(new Verified(channel, buffer.array(), Frame.buffer(maxPayload)));
                ByteBuffer ack = ByteBuffer.wrap(Frame.ACK);
                // A few bytes on a connection that has written nothing yet: the socket's buffer takes them whole.
                channel.write(ack);
                if (ack.hasRemaining()) throw new IOException("the socket took " + ack.position() + " bytes of the acknowledgement");
                return true;
            } catch (IOException | RuntimeException e) {
                // A connection already handed over is closed too: progress() then reads its end, and tells the sink.
                return refuse(channel, e instanceof ConduitException ? e.getMessage() : e.toString());
            }
        }

        private boolean waitMore(int read, long now) {
            if (read < 0) return refuse(channel, "it closed the connection before its hello was whole");
            return now - accepted > timeout.toNanos()
                    && refuse(channel, "its hello was not whole within " + ConfigKey.durationText(timeout) + " (tcp.connect.timeout)");
        }
    }
}
