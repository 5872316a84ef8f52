package dev.conduit.tck;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.spi.Version;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The TCK's own well-behaved transport: workers of one JVM, each with a bounded queue on the heap.
 * The broken fixtures ({@link BrokenPlugins}) are subclasses that break one rule each through the
 * hooks below.
 */
public class LoopbackPlugin implements ConduitPlugin {

    private static final Map<Long, LoopbackTransport> TRANSPORTS = new ConcurrentHashMap<>();
    private static final AtomicLong IDS = new AtomicLong();
    /** Numbers of connections (endpoints), from 1: the key a transport that names senders gives each. */
    private static final AtomicLong CONNECTIONS = new AtomicLong();
    /** Bytes a receiver queues before senders are refused, unless a fixture's {@link #queueBytes()} says otherwise. */
    static final long QUEUE_BYTES = 1 << 20;

    @Override
    public String name() {
        return "tck-loopback";
    }

    @Override
    public Version version() {
        return Version.parse("1.0.0");
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public Availability probe(PluginContext context) {
        return Availability.available();
    }

    @Override
    public Set<Capability> capabilities() {
        return Set.of(Capability.AM, Capability.WAKEUP);
    }

    @Override
    public Set<ThreadMode> threadModes() {
        return Set.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED);
    }

    @Override
    public Transport openTransport(TransportContext context) {
        LoopbackTransport t = newTransport(IDS.incrementAndGet(), context.messageSink());
        t.address = addressOf(t.id, context);
        TRANSPORTS.put(t.id, t);
        return t;
    }

    /** What transport {@code id} publishes: its id ({@code u64}); a broken fixture adds to it. */
    byte[] addressOf(long id, TransportContext context) {
        return new PayloadWriter().u64(id).toByteArray();
    }

    /** Makes a transport; fixtures that change how one behaves override it. */
    LoopbackTransport newTransport(long id, MessageSink sink) {
        return new LoopbackTransport(id, sink);
    }

    /** Makes an endpoint; fixtures that change how one behaves override it. */
    LoopbackEndpoint newEndpoint(LoopbackTransport target, EndpointEvents events) {
        return new LoopbackEndpoint(target, events);
    }

    // ---- hooks the broken fixtures override ----

    /** Whether the receiver refuses when {@link #queueBytes()} are queued. */
    boolean refusesWhenFull() {
        return true;
    }

    /** Whether trySend throws, rather than returns false, when the receiver's queue is full. */
    boolean throwsWhenFull() {
        return false;
    }

    /** How many bytes of messages a transport's queue holds before trySend refuses. */
    long queueBytes() {
        return QUEUE_BYTES;
    }

    /** Whether the message numbered {@code sequence} (per endpoint, from 0) is queued. */
    boolean keeps(long sequence) {
        return true;
    }

    /** How many of a queued payload's {@code length} bytes progress delivers. */
    int deliveredPayloadLength(int length) {
        return length;
    }

    /** How many of a queued header's {@code length} bytes progress delivers. */
    int deliveredHeaderLength(int length) {
        return length;
    }

    /** Whether progress reports that a peer's transport closed. */
    boolean reportsPeerDeath() {
        return true;
    }

    /** The reason it gives for a peer whose transport closed, which it can tell from a death. */
    PeerFailedException.Reason closedPeersReason() {
        return PeerFailedException.Reason.CLOSED;
    }

    /** Reports {@code ep}'s peer dead, from inside progress(). */
    void report(LoopbackEndpoint ep, PeerFailedException failure) {
        ep.events.peerFailed(failure);
    }

    /** Whether endpoints have a keepalive probe (checkPeer); one without throws NotSupportedException. */
    boolean probesPeers() {
        return true;
    }

    /** What the keepalive probe says of a peer whose transport is closed ({@code gone}) or not: whether it is dead. */
    boolean probeFindsDead(boolean gone) {
        return gone;
    }

    /** Whether an endpoint ever gets connected: one that does not refuses every message. */
    boolean connects() {
        return true;
    }

    /** Whether await wakes for a signal or a message. */
    boolean wakes() {
        return true;
    }

    /** Whether a signal while nobody sleeps is kept for the next await. */
    boolean keepsSignals() {
        return true;
    }

    /** Whether connect checks that the peer's transport is there; one that does not hands out an endpoint to nowhere. */
    boolean provesReachability() {
        return true;
    }

    /** Whether await takes a timeout of 0 or less as one that has passed (rather than as none, as a futex does). */
    boolean honoursPassedTimeouts() {
        return true;
    }

    /** Whether a message arriving wakes a thread in await (or makes the next await return true). */
    boolean messagesWake() {
        return true;
    }

    /** Whether closing an endpoint keeps what it sent and the peer has not read yet (a broken fixture drops it). */
    boolean deliversAfterEndpointClose() {
        return true;
    }

    /** Whether connect refuses an address with bytes after its last field. */
    boolean refusesTrailingBytes() {
        return true;
    }

    /** The peer's transport id, read from its address (a {@code u64}); a broken fixture reads it otherwise. */
    long peerOf(PayloadReader address) {
        return address.u64("transport");
    }

    /** Whether a zero-copy send whose encoder failed (threw, or returned a length outside 0..maxLength) is abandoned. */
    boolean abandonsFailedEncodings() {
        return true;
    }

    /** Whether a zero-copy send checks the length its encoder returned ({@link PayloadEncoder#checkWritten}) before committing. */
    boolean checksEncodedLengths() {
        return true;
    }

    /**
     * Whether that check refuses a negative length too, as {@link PayloadEncoder#checkWritten} does, or only one above
     * maxLength (a broken fixture's check, which then commits an empty payload and returns what the encoder returned).
     */
    boolean checksEncodedLengthsBelowZero() {
        return true;
    }

    /**
     * Whether the receiver names the connection each message came by (MessageSink.onMessage with a
     * sender), gives its sender's address and tells the sink when it ends: the optional operations
     * for answering a message. This fixture does not; {@code WellBehavedVariants.NamesSenders} does.
     */
    boolean namesSenders() {
        return false;
    }

    /**
     * Whether its transports keep a payload where they delivered it ({@code Transport.keepDelivered}):
     * each message's payload is an array of its own, which nothing reuses, so keeping it costs
     * nothing. This fixture does not; {@code WellBehavedVariants.KeepsDelivered} does.
     */
    boolean keepsDelivered() {
        return false;
    }

    /** Called after each delivery for each payload kept and not yet released: a broken fixture reuses its memory here. */
    void whileKept(MemorySegment kept) {
    }

    /** The key a message of {@code connection}, an endpoint of transport {@code from}, is delivered with. */
    long keyOf(long connection, long from) {
        return connection;
    }

    /** How many times the receiver tells its sink that a connection ended (once). */
    int timesToldOfTheEnd() {
        return 1;
    }

    /** Whether senderAddress of an ended connection is null, as it is once the sink was told. */
    boolean forgetsEndedSenders() {
        return true;
    }

    /** Whether senderAddress of an ending connection is null before its end is told (it must be), or only after. */
    boolean forgetsBeforeTellingTheEnd() {
        return true;
    }

    /** The address senderAddress gives for a connection from transport {@code from} to transport {@code receiver}. */
    long senderAddressOf(long from, long receiver) {
        return from;
    }

    /** Whether progress tells the sink that a connection ended after that connection's queued messages (it must), or before them. */
    boolean tellsTheEndAfterTheLastMessage() {
        return true;
    }

    /** Whether the receiver's own close tells its sink that its connections ended (it must not). */
    boolean tellsOfSendersWhenItCloses() {
        return false;
    }

    /**
     * Called as progress() takes {@code m} off its queue, before the sink gets it: a broken fixture gives the message's
     * memory back to its senders here, where a transport may do so only once the sink's call returned.
     */
    void takenOff(Message m) {
    }

    /** Hands one message to the receiver's queue; the MULTI fixture overrides it to do so unsafely. */
    void enqueue(LoopbackEndpoint from, Message message) {
        from.target.offer(message);
    }

    /** A message, and the connection it came by (0: none named). */
    record Message(int id, byte[] header, byte[] payload, long connection, long from) {
        Message(int id, byte[] header, byte[] payload) {
            this(id, header, payload, 0, 0);
        }

        long bytes() {
            return header.length + payload.length + 16;
        }
    }

    class LoopbackTransport implements Transport {
        final long id;
        /** What {@link #address()} gives: {@link #addressOf}, once opened. */
        private byte[] address;
        final MessageSink sink;
        private final ArrayDeque<Message> queue = new ArrayDeque<>();
        private long queuedBytes;
        private final Semaphore wake = new Semaphore(0);
        private volatile boolean sleeping;
        final List<LoopbackEndpoint> endpoints = new ArrayList<>();
        volatile boolean closed;
        /** Connections to this transport that deliver, by number: the transport of each's sender. */
        private final Map<Long, Long> senders = new ConcurrentHashMap<>();
        /** The payload the sink is being given now, which its keepDelivered() may keep; else null. */
        private MemorySegment delivering;
        /** Payloads kept and not yet released; their release runs on any thread. */
        private final List<MemorySegment> kept = new ArrayList<>();
        /** Connections to this transport that ended (their endpoint or its transport closed), to tell the sink of in progress. */
        private final java.util.Queue<Long> ended = new java.util.concurrent.ConcurrentLinkedQueue<>();

        LoopbackTransport(long id, MessageSink sink) {
            this.id = id;
            this.sink = sink;
        }

        synchronized boolean hasRoomFor(Message m) {
            return !refusesWhenFull() || queuedBytes + m.bytes() <= queueBytes() || queue.isEmpty();
        }

        void offer(Message m) {
            synchronized (this) {
                queue.add(m);
                queuedBytes += m.bytes();
            }
            if (messagesWake()) wake.release();
        }

        synchronized void dropQueued() {
            queue.clear();
            queuedBytes = 0;
        }

        private synchronized Message poll() {
            Message m = queue.poll();
            if (m != null) queuedBytes -= m.bytes();
            return m;
        }

        /** Whether this progress() delivers the next queued message; a fixture that paces its deliveries overrides it. */
        boolean deliversNext() {
            return true;
        }

        @Override
        public byte[] address() {
            return address.clone();
        }

        @Override
        public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
            long peer = peerOf(peerAddress);
            if (refusesTrailingBytes()) peerAddress.end("end");
            LoopbackTransport target = TRANSPORTS.get(peer);
            if (target == null && !provesReachability()) {
                // Assumes the peer is there: the endpoint's messages go to a transport nobody reads.
                target = new LoopbackTransport(peer, (id, hb, ho, hl, pb, po, pl) -> { });
            }
            if (target == null) throw new ConduitException("no loopback transport " + peer + " in this JVM: the peer closed or is in another process");
            LoopbackEndpoint ep = newEndpoint(target, events);
            ep.from = id;
            target.senders.put(ep.connection, id);
            synchronized (endpoints) {
                endpoints.add(ep);
            }
            return ep;
        }

        @Override
        public Runnable keepDelivered() {
            MemorySegment payload = delivering;
            if (!keepsDelivered() || payload == null) return null;
            synchronized (kept) {
                kept.add(payload);
            }
            return () -> {
                synchronized (kept) {
                    kept.remove(payload);
                }
            };
        }

        @Override
        public int progress() {
            int events = tellsTheEndAfterTheLastMessage() ? 0 : tellEnds();
            for (Message m; deliversNext() && (m = poll()) != null; events++) {
                takenOff(m);
                MemorySegment header = MemorySegment.ofArray(m.header());
                MemorySegment payload = MemorySegment.ofArray(m.payload());
                delivering = payload;
                try {
                    if (namesSenders()) {
                        sink.onMessage(m.id(), header, 0, deliveredHeaderLength(m.header().length), payload, 0, deliveredPayloadLength(m.payload().length),
                                keyOf(m.connection(), m.from()));
                    } else {
                        sink.onMessage(m.id(), header, 0, deliveredHeaderLength(m.header().length), payload, 0, deliveredPayloadLength(m.payload().length));
                    }
                } finally {
                    delivering = null;
                }
                synchronized (kept) {
                    for (MemorySegment k : kept) {
                        if (k != payload) whileKept(k);
                    }
                }
            }
            // After the messages queued before: a connection ends after its last message.
            if (tellsTheEndAfterTheLastMessage()) events += tellEnds();
            if (reportsPeerDeath()) {
                List<LoopbackEndpoint> current;
                synchronized (endpoints) {
                    current = List.copyOf(endpoints);
                }
                for (LoopbackEndpoint ep : current) {
                    if (ep.target.closed && ep.failure == null && !ep.closed) {
                        ep.failure = new PeerFailedException(closedPeersReason(), "loopback peer " + ep.target.id + " closed its transport");
                        report(ep, ep.failure);
                        events++;
                    }
                }
            }
            return events;
        }

        /** Tells the sink of the connections that ended; returns how many. */
        private int tellEnds() {
            int events = 0;
            for (Long connection; (connection = ended.poll()) != null; events++) {
                Long from = senders.get(connection);
                boolean forgetFirst = forgetsBeforeTellingTheEnd();
                if (forgetsEndedSenders() && forgetFirst) senders.remove(connection);
                if (namesSenders()) {
                    for (int i = 0; i < timesToldOfTheEnd(); i++) sink.onSenderClosed(keyOf(connection, from == null ? 0 : from));
                }
                if (forgetsEndedSenders() && !forgetFirst) senders.remove(connection);
            }
            return events;
        }

        @Override
        public boolean await(long timeoutNanos) {
            try {
                if (!wakes()) {
                    TimeUnit.NANOSECONDS.sleep(Math.min(timeoutNanos, 5_000_000));
                    return false;
                }
                synchronized (this) {
                    if (!queue.isEmpty() && messagesWake()) return true;
                }
                sleeping = true;
                try {
                    boolean woken = wake.tryAcquire(timeoutNanos > 0 || honoursPassedTimeouts() ? timeoutNanos : Long.MAX_VALUE,
                            TimeUnit.NANOSECONDS);
                    wake.drainPermits();
                    return woken;
                } finally {
                    sleeping = false;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }

        @Override
        public void signal() {
            if (keepsSignals() || sleeping) wake.release();
        }

        @Override
        public byte[] senderAddress(long sender) {
            if (!namesSenders()) return Transport.super.senderAddress(sender);
            Long from = senders.get(sender);
            return from == null ? null : new PayloadWriter().u64(senderAddressOf(from, id)).toByteArray();
        }

        /** The connection {@code connection} to this transport ended: its sender closed it. */
        void ended(long connection) {
            ended.add(connection);
        }

        @Override
        public void close() {
            if (tellsOfSendersWhenItCloses() && namesSenders() && !closed) {
                for (long connection : senders.keySet()) sink.onSenderClosed(connection);
            }
            closed = true;
            TRANSPORTS.remove(id);
            synchronized (endpoints) {
                endpoints.forEach(LoopbackEndpoint::close);
                endpoints.clear();
            }
        }
    }

    class LoopbackEndpoint implements TransportEndpoint {
        final LoopbackTransport target;
        final EndpointEvents events;
        /** This connection's number, and the transport it sends from. */
        final long connection = CONNECTIONS.incrementAndGet();
        long from;
        volatile PeerFailedException failure;
        long sequence;
        boolean closed;

        LoopbackEndpoint(LoopbackTransport target, EndpointEvents events) {
            this.target = target;
            this.events = events;
        }

        @Override
        public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
            if (failure != null) throw failure;
            if (closed) throw new IllegalStateException("loopback endpoint is closed");
            if (!connects()) return false;
            Message m = new Message(id, header.toArray(ValueLayout.JAVA_BYTE), payload.toArray(ValueLayout.JAVA_BYTE), connection, from);
            if (!target.hasRoomFor(m)) {
                if (throwsWhenFull()) throw new IllegalStateException("loopback: queue full");
                return false;
            }
            if (keeps(sequence++)) enqueue(this, m);
            return true;
        }

        /**
         * Zero-copy send: claims {@code maxLength} bytes, has the encoder write them with the ranged
         * call (the claim is this message's alone), and commits what it wrote, as a transport that
         * claims room in the peer's queue does.
         */
        @Override
        public long trySendEncoded(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
            if (failure != null) throw failure;
            if (closed) throw new IllegalStateException("loopback endpoint is closed");
            if (!connects()) return -1;
            byte[] headerBytes = header.toArray(ValueLayout.JAVA_BYTE);
            byte[] claim = new byte[Math.toIntExact(maxLength)];
            if (!target.hasRoomFor(new Message(id, headerBytes, claim))) return -1;
            long written;
            try {
                written = encoder.encode(MemorySegment.ofArray(claim), 0, maxLength);
                if (checksEncodedLengths() && checksEncodedLengthsBelowZero()) {
                    PayloadEncoder.checkWritten(written, maxLength);
                } else if (checksEncodedLengths() && written > maxLength) {
                    throw new IllegalStateException("loopback: the encoder returned " + written + ", above maxLength " + maxLength);
                }
            } catch (RuntimeException | Error e) {
                if (!abandonsFailedEncodings() && keeps(sequence++)) enqueue(this, new Message(id, headerBytes, claim, connection, from));
                throw e;
            }
            Message m = new Message(id, headerBytes, Arrays.copyOf(claim, (int) Math.clamp(written, 0, maxLength)), connection, from);
            if (keeps(sequence++)) enqueue(this, m);
            return written;
        }

        @Override
        public long maxPayloadSize() {
            return queueBytes() / 2;
        }

        @Override
        public void checkPeer() {
            if (!probesPeers()) throw new NotSupportedException("loopback: no keepalive probe");
            if (failure != null || closed) return;
            if (probeFindsDead(target.closed)) {
                failure = new PeerFailedException(closedPeersReason(), "loopback peer " + target.id + " closed its transport (found by the keepalive probe)");
                throw failure;
            }
        }

        @Override
        public void close() {
            if (!closed) target.ended(connection);
            closed = true;
            if (!deliversAfterEndpointClose()) target.dropQueued();
        }
    }
}
