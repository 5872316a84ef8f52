package org.example.conduit.tcp;

import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RepeatedWarning;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One worker's TCP transport: a listening socket whose address and token peers connect to, the
 * connections they opened to it (their hello verified and acknowledged by the {@link Acceptor}'s
 * thread, then read during {@link #progress()}), and the endpoints this worker connected (outbound,
 * see {@link TcpEndpoint}), each returned once the peer acknowledged its hello. Not thread-safe
 * (declared SERIALIZED).
 *
 * <p>It names senders, an optional part of the SPI: each inbound connection gets a key of its own
 * (never 0, never reused), every message is delivered with it, the address the connector sent in
 * its hello is given for it ({@link #senderAddress}), and the sink is told once when the
 * connection ends, after its last message, the key forgotten first.
 *
 * <p>Address: {@code version (u8) | host (string) | port (u16) | max payload (u32) | loopback scope
 * (string) | token (16 bytes)}. The largest payload is the receiver's ({@code tcp.max.payload},
 * which sizes its buffer for a whole frame): an endpoint carries the smaller of its own and its
 * peer's. The loopback scope ({@link LoopbackScope}) says which network namespace a loopback host
 * belongs to: a peer whose loopback is not this process's is refused as unreachable before any
 * connection is tried.
 */
final class TcpTransport implements Transport {

    private static final SecureRandom RANDOM = new SecureRandom();

    private final System.Logger log;
    /** A peer can make its connections fail as fast as it makes them: at most one warning a minute. */
    private final RepeatedWarning inboundDropped;
    private final MessageSink sink;
    private final ServerSocketChannel server;
    private final Acceptor acceptor;
    private final byte[] address;
    private final byte[] token = new byte[Frame.TOKEN_LENGTH];
    private final int maxPayload;
    private final String loopbackScope;
    /**
     * tcp.connect.timeout: an unreachable host's SYN may go unanswered for minutes, and what listens on a
     * stale address may never answer the hello, and connect must end in bounded time.
     */
    private final Duration connectTimeout;
    private final List<Inbound> inbound = new ArrayList<>();
    /** The inbound connections that announced their sender, by key: what {@link #senderAddress} gives. */
    private final Map<Long, Inbound> senders = new HashMap<>();
    private long lastKey;
    private final List<TcpEndpoint> endpoints = new ArrayList<>();
    private boolean closed;

    private TcpTransport(TransportContext context, ServerSocketChannel server, String host, int maxPayload, Duration connectTimeout,
                         Function<Runnable, Thread> startAcceptor) throws IOException {
        this.log = context.logger();
        this.inboundDropped = new RepeatedWarning(log, Duration.ofMinutes(1));
        this.sink = context.messageSink();
        this.server = server;
        this.maxPayload = maxPayload;
        this.connectTimeout = connectTimeout;
        this.loopbackScope = LoopbackScope.current();
        RANDOM.nextBytes(token);
        int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
        this.address = new PayloadWriter().u8(Frame.VERSION).string(host).u16(port).u32(maxPayload).string(loopbackScope)
                .bytes(token).toByteArray();
        this.acceptor = new Acceptor(server, token, maxPayload, connectTimeout, log, startAcceptor); // last: its thread starts at once
    }

    static TcpTransport open(TransportContext context, String host, int maxPayload, Duration connectTimeout) {
        return open(context, host, maxPayload, connectTimeout, Acceptor::startDaemon);
    }

    /**
     * As {@link #open(TransportContext, String, int, Duration)}, the acceptor's thread started by {@code startAcceptor}. The
     * listening socket is closed whatever the open fails on: an {@code Error} or a {@code RuntimeException} (the acceptor's
     * thread that cannot start, an {@code OutOfMemoryError} "unable to create native thread") leaked it, as the acceptor its
     * selector, for only an {@code IOException} was caught.
     */
    static TcpTransport open(TransportContext context, String host, int maxPayload, Duration connectTimeout,
                             Function<Runnable, Thread> startAcceptor) {
        ServerSocketChannel server = null;
        try {
            InetAddress listen = listenAddress(host);
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(listen, 0));
            return new TcpTransport(context, server, host, maxPayload, connectTimeout, startAcceptor);
        } catch (IOException e) {
            closeQuietly(server);
            throw new ConduitException("tcp: " + cannotListen(host, e), e);
        } catch (RuntimeException | Error e) {
            ServerSocketChannel opened = server;
            Cleanup.run(e, () -> closeQuietly(opened));
            throw e;
        }
    }

    /** Why the transport cannot listen on {@code host}, quoted so that a blank or a stray character in it shows, and the remedy. */
    static String cannotListen(String host, Exception cause) {
        return "cannot listen on '" + host + "' (" + cause.getMessage() + "); set tcp.host (CONDUIT_TCP_HOST) to a local address";
    }

    /**
     * {@code tcp.host} resolved, refused when it is a wildcard ({@code 0.0.0.0}, {@code ::}): the
     * host is published to peers as it is, and a peer that connects to a wildcard reaches its own
     * host, where nothing listens, and takes the refusal for this worker's death.
     */
    static InetAddress listenAddress(String host) throws IOException {
        InetAddress address = InetAddress.getByName(host);
        if (address.isAnyLocalAddress()) {
            throw new ConduitException("tcp: tcp.host (CONDUIT_TCP_HOST) is '" + host + "', the wildcard address, which the transport "
                    + "would publish to peers as it is, and which names no host to them: set it to an address of this host that the "
                    + "peers reach, such as its LAN address, or 127.0.0.1 for peers on this host alone");
        }
        return address;
    }

    @Override
    public byte[] address() {
        return address.clone();
    }

    @Override
    public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
        ensureOpen();
        // First, before anything another version may lay out otherwise.
        int version = peerAddress.u8("version");
        if (version != Frame.VERSION) throw peerAddress.invalid("version", FormatVersions.refusal("tcp address", version, Frame.VERSION, "the peer"));
        String host = peerAddress.string("host", 255);
        int port = peerAddress.u16("port");
        long peerMaxPayload = peerAddress.u32("max payload");
        String peerScope = peerAddress.string("loopback scope", 255);
        byte[] peerToken = peerAddress.bytes("token", Frame.TOKEN_LENGTH);
        peerAddress.end("end");
        if (port == 0) throw peerAddress.invalid("port", "port 0 is not a listening port");
        // The host is the peer's text: in messages only escaped, so that a forged address cannot write lines into the log.
        String peer = PayloadReader.printable(host) + ":" + port;
        SocketChannel channel = null;
        try {
            InetAddress peerHost = InetAddress.getByName(host);
            if (peerHost.isLoopbackAddress() && !LoopbackScope.reaches(loopbackScope, peerScope)) {
                throw new ConduitException("tcp: cannot reach " + peer + " from here: it is the loopback address of another network "
                        + "namespace (the peer's scope " + PayloadReader.printable(peerScope) + ", this process's " + loopbackScope
                        + "): a container with a network of its own, or another host. Set tcp.host (CONDUIT_TCP_HOST) on the peer's "
                        + "side to an address this process reaches, or connect over a transport that crosses it (memfd, posix)");
            }
            // The peer takes no frame larger than its own limit: a larger one it would drop, and the connection with it.
            int payload = (int) Math.min(maxPayload, peerMaxPayload);
            // Made before the socket: a buffer that cannot be made leaves no connection to close.
            ByteBuffer frame = Frame.buffer(payload);
            channel = SocketChannel.open();
            channel.socket().connect(new InetSocketAddress(peerHost, port),
                    (int) Math.clamp(connectTimeout.toMillis(), 1, Integer.MAX_VALUE));
            channel.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
            ByteBuffer hello = ByteBuffer.allocate(Frame.HELLO_PREFIX + address.length).order(ByteOrder.LITTLE_ENDIAN)
                    .put(peerToken).putShort((short) address.length).put(address).flip();
            while (hello.hasRemaining()) channel.write(hello);
            awaitAcknowledgement(channel, peer);
            channel.configureBlocking(false);
            TcpEndpoint ep = new TcpEndpoint(channel, frame, events, payload, peer);
            endpoints.add(ep);
            return ep;
        } catch (ConnectException e) {
            closeQuietly(channel);
            // The address names a port nothing listens on any more: the peer's transport closed, or its process died.
            throw new PeerFailedException("tcp: cannot connect to " + peer + ": nothing listens there (" + PayloadReader.printable(
                    String.valueOf(e.getMessage())) + "): the peer's worker closed or its process died, or the address is stale");
        } catch (SocketTimeoutException e) {
            closeQuietly(channel);
            throw new ConduitException("tcp: cannot connect to " + peer + ": its host did not accept the connection within "
                    + "tcp.connect.timeout (" + ConfigKey.durationText(connectTimeout) + "); is the peer's host up and reachable from here, "
                    + "or does tcp.connect.timeout (CONDUIT_TCP_CONNECT_TIMEOUT) need to be longer?", e);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new ConduitException("tcp: cannot connect to " + peer + ": " + PayloadReader.printable(String.valueOf(e.getMessage()))
                    + " (is the peer worker open and tcp.host an address this host can reach?)", e);
        } catch (RuntimeException | Error e) {
            closeQuietly(channel); // whatever failed, no connection outlives a connect that returns none
            throw e;
        }
    }

    /**
     * Reads the receiver's {@link Frame#ACK} within tcp.connect.timeout: the proof that the transport
     * the address names answered, for only the holder of its token acknowledges. Whatever else took
     * its port since it closed (another worker's transport, any server) fails the connect here.
     */
    private void awaitAcknowledgement(SocketChannel channel, String peer) throws IOException {
        channel.socket().setSoTimeout((int) Math.clamp(connectTimeout.toMillis(), 1, Integer.MAX_VALUE));
        byte[] answer = new byte[Frame.ACK.length];
        int read;
        try {
            read = channel.socket().getInputStream().readNBytes(answer, 0, answer.length);
        } catch (SocketTimeoutException e) {
            throw new ConduitException("tcp: cannot connect to " + peer + ": something accepted the connection but did not acknowledge "
                    + "the hello within tcp.connect.timeout (" + ConfigKey.durationText(connectTimeout) + "): the port was taken by another "
                    + "program after the peer's transport closed (a stale address), or the peer's process is stalled; if it is only "
                    + "slow, raise tcp.connect.timeout (CONDUIT_TCP_CONNECT_TIMEOUT)", e);
        } catch (IOException e) {
            throw notAcknowledged(peer, "reset the connection (" + PayloadReader.printable(String.valueOf(e.getMessage())) + ")", e);
        }
        if (read < answer.length) throw notAcknowledged(peer, "closed the connection after " + read + " bytes", null);
        if (!Arrays.equals(answer, Frame.ACK)) {
            throw new ConduitException("tcp: cannot connect to " + peer + ": it answered the hello with " + HexFormat.of().formatHex(answer)
                    + ", not the acknowledgement " + HexFormat.of().formatHex(Frame.ACK) + " of a tcp transport of wire version "
                    + Frame.VERSION + ": something else listens on that port (a stale address)");
        }
    }

    private static ConduitException notAcknowledged(String peer, String what, IOException cause) {
        return new ConduitException("tcp: cannot connect to " + peer + ": it " + what + " instead of acknowledging the hello: "
                + "the transport there refused it (another transport took the port after the peer's closed, so the token is not its "
                + "own: a stale address; its log says why), or something else listens there", cause);
    }

    @Override
    public int progress() {
        ensureOpen();
        int events = 0;
        for (Acceptor.Verified v; (v = acceptor.poll()) != null; events++) inbound.add(new Inbound(v));
        for (int i = inbound.size() - 1; i >= 0; i--) {
            Inbound in = inbound.get(i);
            try {
                int delivered = in.read();
                if (delivered < 0) {
                    events += end(inbound.remove(i));
                } else {
                    events += delivered;
                }
            } catch (IOException | ConduitException e) {
                inboundDropped.log(() -> "tcp: dropping an inbound connection: " + e.getMessage());
                events += end(inbound.remove(i));
            }
        }
        for (int i = endpoints.size() - 1; i >= 0; i--) {
            TcpEndpoint ep = endpoints.get(i);
            if (ep.isClosed()) {
                // A closed endpoint stays until the frame it committed last is written: the peer must still get it.
                if (ep.finishAfterClose()) endpoints.remove(i);
            } else {
                events += ep.progress();
            }
        }
        return events;
    }

    /**
     * Closes a connection that ended, forgets its key and then tells the sink (in that order: an
     * answer connected from the callback must not find the address still given). Returns the
     * events: 1, the sink told.
     */
    private int end(Inbound in) {
        in.close();
        senders.remove(in.key);
        sink.onSenderClosed(in.key);
        return 1;
    }

    @Override
    public byte[] senderAddress(long sender) {
        Inbound in = senders.get(sender);
        return in == null ? null : in.senderAddress.clone();
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        endpoints.forEach(TcpEndpoint::release);
        endpoints.clear();
        acceptor.close(); // first: it hands over no connection after inbound is closed
        // The worker closes every endpoint itself: its own close tells the sink of no sender.
        inbound.forEach(Inbound::close);
        inbound.clear();
        senders.clear();
        closeQuietly(server);
    }

    private void ensureOpen() {
        if (closed) throw new IllegalStateException("tcp transport is closed");
    }

    static void closeQuietly(java.io.Closeable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // closing: nothing left to do with it
        }
    }

    /** A connection a peer opened to this transport, its hello verified ({@link Acceptor}): frames, each delivered once whole. */
    private final class Inbound {
        private final SocketChannel channel;
        private final ByteBuffer buffer;
        /** The frame buffer as the sink gets it: read-only and made once, so the runtime hands it on as it is, with no view per message. */
        private final MemorySegment segment;
        /** The address the connector announced in its hello. */
        private final byte[] senderAddress;
        /** The key its messages are delivered with: never 0. */
        private final long key;

        Inbound(Acceptor.Verified verified) {
            this.channel = verified.channel();
            this.buffer = verified.frames();
            this.segment = MemorySegment.ofBuffer(buffer).asReadOnly();
            this.senderAddress = verified.senderAddress();
            this.key = ++lastKey;
            senders.put(key, this);
        }

        /** Reads what arrived and delivers every whole frame; -1 at end of stream. */
        int read() throws IOException {
            int n = channel.read(buffer);
            buffer.flip();
            int delivered = 0;
            try {
                while (buffer.remaining() >= Frame.PREFIX) {
                    int start = buffer.position();
                    long length = Integer.toUnsignedLong(buffer.getInt(start));
                    int id = buffer.getInt(start + 4);
                    long headerLength = Integer.toUnsignedLong(buffer.getInt(start + 8));
                    if (length < Frame.PREFIX || length > buffer.capacity() || headerLength > Math.min(Frame.MAX_HEADER, length - Frame.PREFIX)) {
                        throw new ConduitException("tcp: corrupt frame (length " + length + ", header " + headerLength + ")");
                    }
                    if (buffer.remaining() < length) break;
                    long payloadLength = length - Frame.PREFIX - headerLength;
                    sink.onMessage(id, segment, start + Frame.PREFIX, (int) headerLength,
                            segment, start + Frame.PREFIX + headerLength, payloadLength, key);
                    buffer.position(start + (int) length);
                    delivered++;
                }
            } finally {
                buffer.compact();
            }
            return n < 0 ? -1 : delivered;
        }

        void close() {
            closeQuietly(channel);
        }
    }
}
