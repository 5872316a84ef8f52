package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.RepeatedWarning;
import dev.conduit.spi.ThreadStart;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
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
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.ERROR;

/**
 * The accepting half of the wire-up, on a thread of its own so that a connector is answered
 * whether or not the accepting worker progresses (a connector waits for the reply before it can
 * send or do RMA, and the worker it waits on may be driven by the very thread that waits).
 *
 * <p>The thread accepts TCP connections on the transport's listener, reads and checks each
 * request, builds the {@link Inbound} (queue pair on the worker's completion queues, receive
 * buffers posted, INIT → RTR → RTS), <b>hands it to the transport</b> and only then replies. The
 * transport takes handed-off connections in {@link VerbsTransport#progress()} before it polls its
 * completion queues, and again when a completion names a connection it does not know: the peer
 * can only send once it has the reply, so a completion of the new queue pair always follows the
 * handoff. The handoff reads the device's pending asynchronous events first, under the device
 * context's lock, and tells the connection how many the context has read: a port error read before
 * it, which the worker may still hold, spares it ({@link VerbsDomain}). Inbound connection slots
 * are taken here (by compare-and-set, with the slot's generation kept by this thread) and given
 * back by the transport when it closes the connection.
 *
 * <p>Everything else of an inbound connection (completions, credits, liveness, close) stays on
 * the progress thread. A bad request or a failure to build the queue pair (an {@code Error}
 * too: out of memory for its buffers) is logged and its TCP connection closed (the protocol has no
 * error reply: the connector reports the close); neither stops the thread.
 *
 * <p>Anyone who can reach the listener can connect before a token is checked, so what that costs
 * is bounded: at most {@value #MAX_HANDSHAKES} connections wait for their request at once, at
 * most {@value #MAX_HANDSHAKES_PER_ADDRESS} of them from one source (an IPv4 address, an IPv6 /64:
 * one host usually has a whole /64), each for at most
 * {@code wireup.timeout}; connections beyond are closed as they are accepted. Refusals are logged
 * with the connector's address, at most once a minute ({@link RepeatedWarning}).
 */
final class WireupServer implements AutoCloseable {

    private static final AtomicInteger THREADS = new AtomicInteger();
    /** How long the thread pauses after an unexpected failure of its own loop, so that a persistent one does not spin. */
    private static final long PAUSE_NANOS = 100_000_000L;
    /** Connections waiting for their request, at most: each holds a descriptor until it is answered or times out. */
    static final int MAX_HANDSHAKES = 128;
    /** Of those, from one source ({@link #source}): one host that floods the listener leaves room for the others. */
    static final int MAX_HANDSHAKES_PER_ADDRESS = 32;
    private static final Duration REPEATED_WARNING = Duration.ofMinutes(1);

    private final VerbsTransport transport;
    private final ServerSocketChannel listener;
    private final Selector selector;
    private final byte[] token;
    private final long timeoutNanos;
    private final System.Logger logger;
    private final int firstSlot;
    private final AtomicIntegerArray taken;
    /** Generations of the inbound slots: written by this thread only, published with the connection. */
    private final int[] generations;
    private final Queue<Inbound> handoff = new ConcurrentLinkedQueue<>();
    private final List<Handshake> handshakes = new ArrayList<>();
    private final Thread thread;
    private final RepeatedWarning refused;
    private final RepeatedWarning acceptFailed;
    private volatile boolean stopping;

    /** The server's thread, unstarted: a test's may make one whose start() throws what Thread.start throws. */
    static final Function<Runnable, Thread> OWN_THREAD = serve -> Thread.ofPlatform().daemon()
            .name("conduit-verbs-wireup-" + THREADS.incrementAndGet()).unstarted(serve);

    WireupServer(VerbsTransport transport, ServerSocketChannel listener, byte[] token, int firstSlot, int slots,
                 Function<Runnable, Thread> threads) throws IOException {
        this.transport = transport;
        this.listener = listener;
        this.token = token;
        this.timeoutNanos = transport.wireupTimeoutMillis * 1_000_000;
        this.logger = transport.logger;
        this.refused = new RepeatedWarning(logger, REPEATED_WARNING);
        this.acceptFailed = new RepeatedWarning(logger, REPEATED_WARNING);
        this.firstSlot = firstSlot;
        this.taken = new AtomicIntegerArray(slots);
        this.generations = new int[slots];
        this.selector = Selector.open();
        try {
            listener.configureBlocking(false);
            listener.register(selector, SelectionKey.OP_ACCEPT);
        } catch (IOException | RuntimeException | Error e) {
            selector.close();
            throw e;
        }
        this.thread = threads.apply(this::serve);
    }

    /** Starts the thread that answers on {@code listening} (host:port); at a limit of threads, a ConduitException saying which. */
    void start(String listening) {
        ThreadStart.start(thread, "verbs: cannot start the thread that answers wire-up connections on " + listening);
    }

    /** The next inbound connection the thread built, or {@code null}: called by the progress thread only. */
    Inbound poll() {
        return handoff.poll();
    }

    /** Whether a connection the thread built waits to be taken: a look that takes no lock, before {@link #poll}. */
    boolean handedOver() {
        return !handoff.isEmpty();
    }

    /** How many inbound slots are taken: by live connections, and by any whose queue pair could not be destroyed. */
    int slotsTaken() {
        int n = 0;
        for (int i = 0; i < taken.length(); i++) n += taken.get(i);
        return n;
    }

    /** Gives a slot back once the transport no longer finds a connection in it. */
    void release(int slot) {
        taken.set(slot - firstSlot, 0);
    }

    // ---------------------------------------------------------------- the server thread

    private void serve() {
        while (!stopping) {
            try {
                // Unanswered handshakes are looked at least once per timeout, to give up on those that stall.
                long millis = handshakes.isEmpty() ? 0 : Math.max(1, timeoutNanos / 1_000_000);
                selector.select(millis);
                if (stopping) {
                    return;
                }
                selector.selectedKeys().clear();
                long now = System.nanoTime();
                acceptAll(now);
                for (Handshake h : List.copyOf(handshakes)) {
                    if (h.advance(now)) {
                        handshakes.remove(h);
                    }
                }
            } catch (IOException | RuntimeException | Error e) { // an Error too: a thread that ends accepts nobody again
                logger.log(ERROR, "verbs: the wire-up server of device " + transport.domain.deviceName() + " failed; retrying", e);
                LockSupport.parkNanos(PAUSE_NANOS);
            }
        }
    }

    private void acceptAll(long now) {
        while (true) {
            SocketChannel accepted;
            try {
                accepted = listener.accept();
            } catch (IOException e) {
                // Out of descriptors, typically: the connection stays queued and is tried again after the pause.
                acceptFailed.log(() -> "verbs: accepting a wire-up connection on device " + transport.domain.deviceName() + " failed: "
                        + e.getMessage() + "; retrying every " + PAUSE_NANOS / 1_000_000 + " ms");
                LockSupport.parkNanos(PAUSE_NANOS);
                return;
            }
            if (accepted == null) {
                return;
            }
            InetAddress from = null;
            try {
                from = ((InetSocketAddress) accepted.getRemoteAddress()).getAddress();
                String full = tooMany(from);
                if (full != null) {
                    refuse(from, full);
                    closeQuietly(accepted);
                    continue;
                }
                accepted.configureBlocking(false);
                accepted.setOption(StandardSocketOptions.TCP_NODELAY, true);
                transport.keepalive.apply(accepted);
                Handshake h = new Handshake(accepted, from, now);
                h.key = accepted.register(selector, SelectionKey.OP_READ);
                handshakes.add(h);
            } catch (IOException | RuntimeException e) {
                refuse(from, e.toString());
                closeQuietly(accepted);
            }
        }
    }

    /** Why a new connection from {@code from} is not taken, or {@code null} when it is. */
    private String tooMany(InetAddress from) {
        if (handshakes.size() >= MAX_HANDSHAKES) {
            return MAX_HANDSHAKES + " connections are waiting for their request already, the most this listener lets wait "
                    + "(each one's wait ends with its request, or after " + VerbsConfig.WIREUP_TIMEOUT.nameAndVariable() + ")";
        }
        String source = source(from);
        int same = 0;
        for (Handshake h : handshakes) {
            if (h.source.equals(source)) same++;
        }
        return same < MAX_HANDSHAKES_PER_ADDRESS ? null : same + " connections from " + source + " are waiting for their request "
                + "already, the most one source may have waiting (each one's wait ends with its request, or after "
                + VerbsConfig.WIREUP_TIMEOUT.nameAndVariable() + ")";
    }

    /** What one host connects from: its IPv4 address, or its IPv6 address's /64 network, which one host usually has whole. */
    static String source(InetAddress address) {
        if (address instanceof java.net.Inet6Address) {
            byte[] network = Arrays.copyOf(address.getAddress(), 16); // the lower 64 bits zeroed below
            Arrays.fill(network, 8, 16, (byte) 0);
            try {
                return InetAddress.getByAddress(network).getHostAddress() + "/64";
            } catch (java.net.UnknownHostException impossible) { // 16 bytes are always an IPv6 address
                throw new AssertionError(impossible);
            }
        }
        return address.getHostAddress();
    }

    private void refuse(InetAddress from, String why) {
        refused.log(() -> "verbs: refused a wire-up connection" + (from == null ? "" : " from " + from.getHostAddress()) + " on device "
                + transport.domain.deviceName() + ": " + why);
    }

    /** Takes a free inbound slot and advances its generation; the transport frees it with {@link #release}. */
    private int[] takeSlot() {
        for (int i = 0; i < generations.length; i++) {
            if (taken.compareAndSet(i, 0, 1)) {
                generations[i] = (generations[i] + 1) & 0xFFFF;
                return new int[] {firstSlot + i, generations[i]};
            }
        }
        throw new ConduitException("verbs: this worker already has " + generations.length + " inbound connections, the most its "
                + "completion queues hold (" + VerbsTransport.MAX_CONNECTIONS + ", or fewer when the device's max_cqe is small: lower "
                + VerbsConfig.RECEIVE_BUFFERS.nameAndVariable() + ")");
    }

    /** A wire-up connection accepted, until its request is read and answered. */
    private final class Handshake {
        private final SocketChannel channel;
        private final InetAddress from;
        private final String source;
        private final long started;
        private final ByteBuffer length = ByteBuffer.allocate(2).order(ByteOrder.LITTLE_ENDIAN);
        private ByteBuffer body;
        SelectionKey key;

        Handshake(SocketChannel channel, InetAddress from, long started) {
            this.channel = channel;
            this.from = from;
            this.source = source(from);
            this.started = started;
        }

        /** @return whether the handshake is over (answered or given up) */
        boolean advance(long now) {
            try {
                if (body == null) {
                    if (channel.read(length) < 0) {
                        return abandon("the connector closed the connection before its request");
                    }
                    if (length.hasRemaining()) {
                        return timedOut(now);
                    }
                    int n = Short.toUnsignedInt(length.getShort(0));
                    if (n == 0 || n > WireFormat.MAX_WIREUP) {
                        return abandon("a wire-up request of " + n + " bytes (at most " + WireFormat.MAX_WIREUP + ")");
                    }
                    body = ByteBuffer.allocate(n);
                }
                if (channel.read(body) < 0) {
                    return abandon("the connector closed the connection in the middle of its request");
                }
                if (body.hasRemaining()) {
                    return timedOut(now);
                }
                WireFormat.Wireup request = WireFormat.Wireup.decode(body.array(), WireFormat.REQUEST);
                if (!MessageDigest.isEqual(request.token(), token)) {
                    return abandon("the request names another transport (token mismatch): the peer used a stale worker address");
                }
                // The connection leaves the selector: from the handoff on, the progress thread reads it (for its end of stream).
                key.cancel();
                int[] slot = takeSlot();
                Inbound in = Inbound.build(transport, channel, request, slot[0], slot[1], () -> release(slot[0]));
                transport.domain.takeAsyncEventsThen(eventsRead -> {
                    in.handedOver(eventsRead);
                    handoff.add(in);
                });
                try {
                    in.reply(request);
                } catch (IOException e) {
                    // The transport owns the connection now: closing the socket makes its liveness check drop it.
                    refused.log(() -> "verbs: the wire-up reply to " + from.getHostAddress() + " could not be sent (" + e.getMessage()
                            + "); the connection is dropped");
                    closeQuietly(channel);
                }
                logger.log(DEBUG, () -> "verbs: accepted a connection from queue pair " + request.qpn());
                return true;
            } catch (InvalidHandleException e) {
                return abandon(e.getMessage());
            } catch (IOException | RuntimeException e) {
                return abandon(e.toString());
            } catch (Error e) { // out of memory for the connection's buffers, say: its slot is free again, its queue pair gone
                return abandon("building the connection failed: " + e);
            }
        }

        private boolean timedOut(long now) {
            return now - started > timeoutNanos && abandon("no complete request within " + VerbsConfig.WIREUP_TIMEOUT.nameAndVariable());
        }

        private boolean abandon(String why) {
            refuse(from, why);
            closeQuietly(channel);
            return true;
        }
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing to release beyond the descriptor, which close releases anyway
        }
    }

    /**
     * Stops the thread and waits for it, then closes the connections it had not answered and those
     * it built that the transport never took, and the listener. Called by the transport's close,
     * on the progress thread.
     */
    @Override
    public void close() throws IOException {
        stopping = true;
        selector.wakeup();
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        for (Handshake h : handshakes) {
            closeQuietly(h.channel);
        }
        handshakes.clear();
        RuntimeException failure = null;
        for (Inbound in; (in = handoff.poll()) != null; ) {
            try {
                in.close();
            } catch (RuntimeException e) { // one that fails to close keeps the others open no longer
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        try {
            try {
                selector.close();
            } finally {
                listener.close();
            }
        } catch (IOException | RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** The server thread, for tests that check it ends with the transport. */
    Thread thread() {
        return thread;
    }
}
