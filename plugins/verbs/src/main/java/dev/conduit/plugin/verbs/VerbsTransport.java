package dev.conduit.plugin.verbs;

import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.PollEvents;
import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.RepeatedWarning;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * The verbs transport of one worker: reliable-connected queue pairs, one per connection, wired up
 * over TCP the way perftest and rdma_cm do it.
 *
 * <ul>
 *   <li><b>Address</b> ({@link WireFormat.Address}): the port's identity (LID, GID, MTU, link
 *       layer), the receive-buffer geometry, a random token, and the IP and port of this
 *       transport's TCP <b>wire-up listener</b> ({@code verbs.wireup.address}).</li>
 *   <li><b>Connect</b>: the connector creates its queue pair (INIT), connects to the peer's
 *       listener (the proof that it is reachable) and sends a request (queue pair number, PSN,
 *       LID, GID, MTU, the address and key of its credit word); the acceptor's
 *       {@link WireupServer} thread (not its progress: the acceptor may be driven by the very
 *       thread that waits for the reply) creates its queue pair, posts its receive buffers, moves
 *       it to RTR and RTS, hands it to this transport and replies; the connector moves its own to
 *       RTR and RTS when it reads the reply, in progress, trySend or an RMA call. Until then
 *       {@link VerbsEndpoint#trySend} says "not now" and the runtime keeps the messages. The TCP connection stays open: its end of stream is the peer's death
 *       (or close), besides completion errors such as {@code IBV_WC_RETRY_EXC_ERR}; TCP keepalive on both ends
 *       ({@link Keepalive}, from {@code verbs.heartbeat.timeout}) fails it when the peer's host goes silent.</li>
 *   <li><b>Direction</b>: a connection carries messages from connector to acceptor, and RMA of
 *       the connector on the acceptor's memory; the acceptor's queue pair only writes credits
 *       back. Replies go over the connection the peer opens to this worker, as with every Conduit
 *       transport.</li>
 *   <li><b>Senders</b>: the connector's request carries its own transport address, which the
 *       acceptor keeps with the {@link Inbound} connection. Every message is delivered with the
 *       connection's key ({@link Inbound#sender()}: its slot and the slot's generation, so unique
 *       among live connections and never 0); {@link #senderAddress} gives the connector's address
 *       for that key while the connection delivers, and {@code null} from the progress step that
 *       ends it, where the sink is told with {@link MessageSink#onSenderClosed} (once per
 *       connection: its connector closed the endpoint or its transport, or died, its host went
 *       silent, or it broke the protocol). So a message can be answered without an address
 *       exchanged by the application ({@code Message.replyEndpoint()}): the runtime connects to
 *       that address, which opens a connection the other way.</li>
 *   <li><b>Flow control</b>: the acceptor posts {@code verbs.receive.buffers} buffers per
 *       connection; the connector may have that many SENDs outstanding. Whenever the acceptor
 *       re-posts buffers it RDMA-writes its running count of re-posted buffers into the
 *       connector's registered credit word (one write in flight per connection): credits take no
 *       receive buffer, so they can never deadlock. A sender without credits or free send
 *       buffers returns {@code false} from trySend; it never overruns the peer's receive queue
 *       (which would be an RNR error) and never blocks.</li>
 *   <li><b>Asynchronous events</b> of the device ({@code ibv_get_async_event}): read at each
 *       liveness look, before a failure is reported and before a {@code connect}, never on the data
 *       path; a queue pair in
 *       error fails its connection, the port in use going down fails every connection made before
 *       the event was read (not one the wire-up thread handed over after it: {@link VerbsDomain}), a device
 *       failure or an error of this transport's completion queues fails every connection and later
 *       {@code connect}s, each naming the event ({@link #handleAsyncEvents}).</li>
 *   <li><b>Completions</b>: one send and one receive completion queue per worker, both on a
 *       completion channel for {@link #await}, which arms the send queue only while credits wait
 *       for a credit write to complete. Work-request ids name the connection (slot
 *       and generation, so completions of a closed connection are recognised and dropped), the
 *       kind and the buffer.</li>
 *   <li><b>Closed from another thread</b>: {@code Conduit.close()} closes a worker whose user is
 *       still inside a call, from its own thread. The send queue and what its completions change
 *       have one owner at a time ({@link #sendSide}): a close that finds it free drains each
 *       endpoint's sends as the owner's close does; one that finds the call still holding it closes
 *       every endpoint without polling the queue, waiting for nothing (the runtime waited for the
 *       call already), and throws a {@link ConduitException} naming each one whose work requests it
 *       did not wait for. The
 *       call under way may then fail on what the close destroyed ({@link IllegalStateException}
 *       "... is closed": {@link FfmVerbs} waits for a library call under way and refuses later ones). A
 *       connection the call's liveness look retires is closed once, by whichever takes it out of the
 *       inbound list first ({@link #lifecycle}); the look then throws "verbs transport is closed". An
 *       endpoint whose own close is the call, still draining, is torn down by the close, before the
 *       queues it is on, and that drain then throws the same ({@link VerbsEndpoint#close(boolean)}). A
 *       kept teardown is retried by the look or the close, one at a time ({@link #retryKeptTeardowns}). A
 *       {@code connect} waiting for the peer's wire-up listener has its socket closed, which ends the
 *       wait, and tears down its queue pair before the close destroys the queues ({@link Connecting}); it
 *       then throws the same. The
 *       close waits for {@link #await}'s sleep, which it wakes, before it closes the descriptors
 *       the sleep polls and reads ({@link #sleeping}).</li>
 * </ul>
 */
final class VerbsTransport implements Transport {

    static final int KIND_SLOT = 1;
    static final int KIND_CREDIT = 2;
    static final int KIND_RECEIVE = 3;
    /** Connections per direction a transport holds at most (slots of its completion queues). */
    static final int MAX_CONNECTIONS = 256;
    private static final SecureRandom RANDOM = new SecureRandom();

    final VerbsDomain domain;
    private final VerbsDomain.Holder holder;
    final TransportContext context;
    final MessageSink sink;
    final System.Logger logger;
    /** Inbound connections dropped for what their connector sent: a peer with the token may repeat that at will. */
    final RepeatedWarning droppedByProtocol;
    final int bufferSize;
    final int receiveBuffers;
    final int sendBuffers;
    final long wireupTimeoutMillis;
    /** Set on both ends of every wire-up connection, so that a crashed host or cut network fails it within {@code verbs.heartbeat.timeout}. */
    final Keepalive keepalive;
    private final long livenessNanos;
    private final Libc libc;
    private final Verbs.CompletionChannel channel;
    final Verbs.CompletionQueue sendQueue;
    final Verbs.CompletionQueue receiveQueue;
    /**
     * The owner of the send queue and of what its completions change (each endpoint's send buffers,
     * each inbound's credit write in flight): held by the user's calls that poll it or take send
     * buffers ({@link #progress}, {@link #pollSendQueue}, an endpoint's trySend, RMA, flush and
     * close) and by {@link #close()}. The worker is its user's, but {@code Conduit.close()} closes
     * it from another thread while a call of the user's is still under way, and both polling the
     * queue at once shared the completion arrays and each endpoint's free buffers: completions were
     * handled twice or lost. The close only tries it ({@link #ownSendQueueToClose}); a call of the
     * user's waits for it only while that close drains. Uncontended it costs a compare-and-set and
     * a release store per call.
     */
    final ReentrantLock sendSide = new ReentrantLock();
    private final Verbs.Completions sendCompletions = new Verbs.Completions(32);
    private final Verbs.Completions receiveCompletions = new Verbs.Completions(32);
    /** Receive completions {@link #await} took off the queue (to close the arming race); the next progress handles them first. */
    private int stashed;
    private final WireupServer wireupServer;
    private final byte[] token = new byte[WireFormat.TOKEN_LENGTH];
    private final byte[] address;
    private final Connection[] connections = new Connection[2 * MAX_CONNECTIONS];
    private final int[] generations = new int[2 * MAX_CONNECTIONS];
    private final int inboundLimit;
    private final int outboundLimit;
    // Copy-on-write: a close forced from another thread (Conduit.close() past its wait for a call under way) changes them
    // while the call walks them; an ArrayList's copy then met a removal half done (a null element, or one twice).
    private final List<VerbsEndpoint> endpoints = new CopyOnWriteArrayList<>();
    private final List<Inbound> inbounds = new CopyOnWriteArrayList<>();
    private final List<VerbsEndpoint> toReport = new CopyOnWriteArrayList<>();
    private final List<Inbound> toDrop = new CopyOnWriteArrayList<>();
    /**
     * Held to take an inbound connection in ({@link #adoptInbounds}) or out and close it
     * ({@link #closeInbound}), to look at the endpoints' peers, and by the close over its walks of
     * both lists. A close forced from another thread closed a departed peer's inbound that the
     * call's liveness look was retiring at the same moment: both closed it, and the second close of
     * its memory threw the JDK's bare "Already closed" out of the call. Never held while a sink or
     * an application handler runs; taken after {@link #sendSide}, never before it.
     */
    final Object lifecycle = new Object();
    private final FileDescriptor wake;
    private final FileDescriptor channelFd;
    private final FileDescriptor[] pollFds;
    private final int[] pollEvents = {PollEvents.POLLIN, PollEvents.POLLIN};
    private final int[] pollReturned = new int[2];
    /**
     * Whether await is in its sleep: its poll of {@link #pollFds} and the reads of what woke it.
     * The runtime wakes a sleeping await and closes the worker from another thread without waiting
     * for it to return (Conduit.close() past its wait); a descriptor's check of being closed and
     * the system call after it are two steps, so a close between them had the read reach a number
     * the process had given to another file since (8 bytes of its data taken, or a block for
     * ever). The close wakes a sleep under way and waits for this to drop before it closes them.
     */
    private volatile boolean sleeping;
    private long progressCount;
    private long lastLiveness = System.nanoTime();
    /** Volatile: a close forced from another thread sets it under a call, whose steps past each hand-back of the lock look at it. */
    private volatile boolean closed;
    /** The device's asynchronous events that can fail connections, as {@link VerbsDomain#takeAsyncEvents} hands them to this transport. */
    private final VerbsDomain.Subscription asyncEvents;
    /**
     * Why this transport can connect no more ({@code IBV_EVENT_DEVICE_FATAL}, or {@code IBV_EVENT_CQ_ERR} on one of its
     * completion queues), with the remedy; {@code null} while it can.
     */
    private String unusable;
    /** Whether every connection was failed for the device context's failure ({@link VerbsDomain#failure}). */
    private boolean deviceFailed;

    /** A queue pair of this transport, found by the slot in its work-request ids. */
    abstract static class Connection {
        int slot = -1;
        int generation;

        abstract void onSendCompletion(int kind, int index, int status, int vendorError);

        void onReceive(int index, int status, int byteLength) {
            throw new IllegalStateException("receive completion on a connection that posts no receives");
        }
    }

    VerbsTransport(VerbsDomain.Holder holder, VerbsDomain domain, TransportContext context, Libc libc) {
        this(holder, domain, context, libc, WireupServer.OWN_THREAD);
    }

    /** With {@code wireupThreads} making the wire-up thread ({@link WireupServer#OWN_THREAD}, or a test's). */
    VerbsTransport(VerbsDomain.Holder holder, VerbsDomain domain, TransportContext context, Libc libc, Function<Runnable, Thread> wireupThreads) {
        this.holder = holder;
        this.domain = domain;
        this.context = context;
        this.sink = context.messageSink();
        this.logger = context.logger();
        this.droppedByProtocol = new RepeatedWarning(logger, Duration.ofMinutes(1));
        this.libc = libc;
        var config = context.config();
        this.bufferSize = config.get(VerbsConfig.BUFFER_SIZE).intValue();
        this.receiveBuffers = config.get(VerbsConfig.RECEIVE_BUFFERS).intValue();
        this.sendBuffers = config.get(VerbsConfig.SEND_BUFFERS).intValue();
        this.wireupTimeoutMillis = Math.max(1, config.get(VerbsConfig.WIREUP_TIMEOUT).toMillis());
        this.livenessNanos = config.get(VerbsConfig.LIVENESS_INTERVAL).toNanos();
        Duration heartbeat = config.get(VerbsConfig.HEARTBEAT_TIMEOUT);
        this.keepalive = Keepalive.within(heartbeat);
        if (heartbeat.compareTo(Keepalive.LONGEST) > 0) {
            logger.log(System.Logger.Level.WARNING, "verbs: " + VerbsConfig.HEARTBEAT_TIMEOUT.nameAndVariable() + " is "
                    + ConfigKey.durationText(heartbeat) + ", longer than Linux's TCP keepalive can count (at most 32767 s of silence "
                    + "before the first probe, and as long between probes): a silent peer's connections fail after "
                    + ConfigKey.durationText(Keepalive.LONGEST) + " (36 h 24 min 28 s) instead. Set it to at most "
                    + ConfigKey.durationText(Keepalive.LONGEST) + " to silence this warning");
        }
        if (bufferSize > domain.maxMessageSize()) {
            // Every SEND, RDMA WRITE and READ moves up to one buffer: past max_msg_sz the adapter fails each such work request
            // (IBV_WC_LOC_LEN_ERR) and with it the connection, which names neither the key nor the limit.
            throw new ConduitException("verbs: " + VerbsConfig.BUFFER_SIZE.nameAndVariable() + " is " + bufferSize + " bytes, more than port "
                    + domain.port() + " of device " + domain.deviceName() + " moves in one work request (max_msg_sz " + domain.maxMessageSize()
                    + " bytes): set it to at most " + domain.maxMessageSize() / VerbsConfig.BUFFER_ALIGNMENT * VerbsConfig.BUFFER_ALIGNMENT
                    + " bytes");
        }
        String noReads = domain.readDepthRefusal();
        if (noReads != null) {
            // Passed on, the 0 would reach ibv_modify_qp at the first connection, whose EINVAL names no attribute.
            throw new ConduitException("verbs: device " + domain.deviceName() + " reports " + noReads + ", which get, fetchAdd and "
                    + "compareAndSwap need: use another device (" + VerbsConfig.DEVICE.nameAndVariable() + ")");
        }
        RANDOM.nextBytes(token);
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            Verbs.Device device = domain.device();
            channel = device.createCompletionChannel();
            opened.add(channel);
            // Completion queues must hold every completion that can be outstanding: connections are limited to what fits max_cqe.
            int maxCqe = domain.maxCompletionQueueEntries();
            inboundLimit = Math.min(MAX_CONNECTIONS, maxCqe / receiveBuffers);
            outboundLimit = Math.min(MAX_CONNECTIONS, (maxCqe - inboundLimit) / sendBuffers);
            if (inboundLimit < 1 || outboundLimit < 1) {
                throw new ConduitException("verbs: device " + domain.deviceName() + " has completion queues of " + maxCqe
                        + " entries (max_cqe), too few for " + VerbsConfig.RECEIVE_BUFFERS.nameAndVariable() + " " + receiveBuffers
                        + " or " + VerbsConfig.SEND_BUFFERS.nameAndVariable() + " " + sendBuffers + ": lower them");
            }
            // On the channel too, armed by await only while credits wait for a credit write to complete (see there).
            sendQueue = device.createCompletionQueue(outboundLimit * sendBuffers + inboundLimit, channel);
            opened.add(sendQueue);
            receiveQueue = device.createCompletionQueue(inboundLimit * receiveBuffers, channel);
            opened.add(receiveQueue);
            asyncEvents = domain.subscribe(sendQueue, receiveQueue);
            opened.add(() -> domain.unsubscribe(asyncEvents));
            wake = libc.eventfd(0, dev.conduit.linux.EventfdFlags.EFD_NONBLOCK);
            opened.add(wake);
            // The channel's descriptor belongs to libibverbs (ibv_destroy_comp_channel closes it): wrapped for poll, never closed here.
            channelFd = FileDescriptor.adopt(channel.fd(), "completion channel of " + domain.deviceName());
            pollFds = new FileDescriptor[] {channelFd, wake};
            String host = wireupHost(VerbsConfig.text(config, VerbsConfig.WIREUP_ADDRESS));
            ServerSocketChannel listener = ServerSocketChannel.open();
            opened.add(listener);
            try {
                listener.bind(new InetSocketAddress(InetAddress.ofLiteral(host), 0), MAX_CONNECTIONS);
            } catch (IOException e) {
                throw new ConduitException("verbs: cannot listen for wire-up connections on " + host + " (" + e.getMessage() + "); set "
                        + VerbsConfig.WIREUP_ADDRESS.nameAndVariable() + " to an address of this host", e);
            }
            int tcpPort = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            address = new WireFormat.Address(token, domain.context(), domain.port(), domain.linkLayer(), domain.lid(), domain.gid(), domain.activeMtu(),
                    receiveBuffers, bufferSize, domain.responderDepth(), domain.atomics(), host, tcpPort).encode();
            wireupServer = new WireupServer(this, listener, token, MAX_CONNECTIONS, inboundLimit, wireupThreads);
            opened.add(wireupServer); // its selector; a thread that never started needs no stopping
            wireupServer.start(host + ":" + tcpPort); // a thread that cannot start: a ConduitException (ThreadStart)
        } catch (IOException e) {
            closeAll(opened);
            throw new ConduitException("verbs: cannot open the wire-up listener: " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            // An Error too (out of memory for the eventfd): left open, the queues and the channel would stay on the device and
            // the subscription keep its events for nobody. Rethrown as it is, as Inbound.build rethrows one; the caller gives
            // back its count of the context.
            closeAll(opened);
            throw e;
        }
    }

    private static void closeAll(List<AutoCloseable> opened) {
        for (AutoCloseable c : opened.reversed()) {
            try {
                c.close();
            } catch (Exception suppressed) {
                // already failing: the first failure is the one to report
            }
        }
    }

    /** {@code verbs.wireup.address}, or on RoCE the IPv4 of the port's GID, or the first up non-loopback interface's address. */
    private String wireupHost(String configured) {
        if (!configured.isEmpty()) {
            if (!WireFormat.isIpLiteral(configured)) {
                throw new ConduitException("verbs: " + VerbsConfig.WIREUP_ADDRESS.nameAndVariable() + " is '" + configured
                        + "', not an IPv4 or IPv6 address (a host name is never resolved, and the port is chosen by the listener): "
                        + "set an address of this host that peers reach, as 10.0.0.2 or fd00::2, or leave it empty for the default");
            }
            // It is also what the address announces for peers to connect to: it must name this host as they reach it.
            String unreachable = WireFormat.whyNoPeerConnectsTo(configured);
            if (unreachable != null) {
                throw new ConduitException("verbs: " + VerbsConfig.WIREUP_ADDRESS.nameAndVariable() + " is '" + configured + "', "
                        + unreachable + ", and peers connect to the address it sets: set an address of this host that peers reach, "
                        + "or leave it empty for the default");
            }
            return configured;
        }
        Inet4Address roce = WireFormat.ipv4Of(domain.gid());
        if (roce != null) {
            return roce.getHostAddress();
        }
        try {
            for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (!nic.isUp() || nic.isLoopback()) {
                    continue;
                }
                for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                    if (a instanceof Inet4Address && !a.isLinkLocalAddress()) {
                        return a.getHostAddress();
                    }
                }
            }
        } catch (SocketException e) {
            logger.log(System.Logger.Level.WARNING, "verbs: cannot list network interfaces (" + e.getMessage() + "); wire-up on loopback");
        }
        return "127.0.0.1";
    }

    @Override
    public byte[] address() {
        return address.clone();
    }

    /** This transport's address, not copied: what {@link VerbsEndpoint#connect} announces in its wire-up request. */
    byte[] ownAddress() {
        return address;
    }

    /**
     * The address the connector of inbound connection {@code sender} announced in its wire-up
     * request, or {@code null} once that connection delivers no more: it was closed, or broke
     * down in this progress step and is closed at its end, where {@link MessageSink#onSenderClosed}
     * comes. Also {@code null} for a key this transport never gave. A lookup in the slot table,
     * on the progress thread.
     */
    @Override
    public byte[] senderAddress(long sender) {
        int slot = Inbound.slotOf(sender);
        if (slot < MAX_CONNECTIONS || slot >= connections.length) {
            return null;
        }
        return connections[slot] instanceof Inbound in && in.generation == Inbound.generationOf(sender) && in.delivers()
                ? in.senderAddress() : null;
    }

    /**
     * Takes an outbound connection slot; its generation tells its completions from those of the
     * slot's earlier owners. Inbound slots (from {@link #MAX_CONNECTIONS} on) are taken by the
     * {@link WireupServer}, which builds inbound connections on its own thread.
     */
    void register(VerbsEndpoint c) {
        for (int i = 0; i < outboundLimit; i++) {
            if (connections[i] == null) {
                connections[i] = c;
                c.slot = i;
                c.generation = generations[i] = (generations[i] + 1) & 0xFFFF;
                return;
            }
        }
        throw new ConduitException("verbs: this worker already has " + outboundLimit + " outbound connections (counting those "
                + "whose queue pair could not be destroyed), the most its completion queues hold (" + MAX_CONNECTIONS + ", or fewer "
                + "when the device's max_cqe is small: lower " + VerbsConfig.SEND_BUFFERS.nameAndVariable() + ")");
    }

    /**
     * Stops routing completions to {@code c} ({@code null}: a connection that never had a slot),
     * torn down by {@code teardown}: frees its slot, unless
     * the teardown left its queue pair or a registration on the device. Then the slot stays taken
     * (that queue pair may still complete work into this worker's completion queues, which are sized
     * for the slots) and the teardown is kept: {@link #retryKeptTeardowns} runs it again at every
     * liveness look and in {@link #close()}, before the queues are closed, and frees the slot once
     * it succeeded. Under {@link #lifecycle}, as every change of the kept ones: the worker's close
     * closes connections on its own thread (the wire-up server's close those it handed over), also
     * under a call of the user's.
     */
    void unregister(Connection c, Teardown teardown) {
        synchronized (lifecycle) {
            int slot = c != null && c.slot >= 0 && connections[c.slot] == c ? c.slot : -1;
            boolean held = teardown.deviceMayWrite();
            if (c != null) {
                unregister(c, !held);
            }
            if (held) {
                keptTeardowns.add(new KeptTeardown(teardown.retriedBy(RETRIES), slot));
            }
        }
    }

    /**
     * Keeps {@code teardown} of a connection the wire-up thread could not build, which left a queue
     * pair or registration on the device, with its inbound {@code slot} (taken until the teardown
     * succeeded). Thread-safe: the progress thread takes it over at its next retry.
     */
    void keepFromWireup(Teardown teardown, int slot) {
        keptByWireup.add(new KeptTeardown(teardown.retriedBy(RETRIES), slot));
    }

    /** What the failure of a kept teardown says of its retries. */
    private static final String RETRIES = "the worker tries again at its liveness looks (" + VerbsConfig.LIVENESS_INTERVAL.name()
            + ") and at the latest in its close, and frees them and the connection's slot once that succeeds";

    /** A teardown that left something on the device, and the slot it holds ({@code -1}: none). */
    private record KeptTeardown(Teardown teardown, int slot) {
    }

    /** Teardowns that left a queue pair or registration on the device: retried until they succeed. Under {@link #lifecycle}. */
    private final List<KeptTeardown> keptTeardowns = new ArrayList<>();
    /** Those of connections the wire-up thread could not build, on their way to {@link #keptTeardowns}. */
    private final Queue<KeptTeardown> keptByWireup = new ConcurrentLinkedQueue<>();

    /**
     * Runs every kept teardown again; one that succeeds frees its memory and its slot, one that
     * fails again stays kept. Throws nothing: a teardown's failure was thrown when its connection
     * closed, and the caller decides what to say of a repeated one. The caller holds
     * {@link #lifecycle}: a liveness look and the close forced from another thread both retry
     * them, and two retries of one teardown at once had the second find nothing held (the first had
     * taken it) and free the memory while the first's {@code ibv_destroy_qp} was still under way,
     * the slot freed twice, the list met mid-change; and the close destroyed the completion queues
     * under that queue pair. A look that comes after the close began retries nothing: the close does.
     *
     * @return the teardowns whose retry failed, with their {@link Teardown#failure()} of this retry
     */
    private List<Teardown> retryKeptTeardowns() {
        assert Thread.holdsLock(lifecycle);
        for (KeptTeardown k; (k = keptByWireup.poll()) != null; ) {
            keptTeardowns.add(k);
        }
        if (keptTeardowns.isEmpty()) {
            return List.of();
        }
        List<Teardown> failed = new ArrayList<>();
        for (KeptTeardown k : List.copyOf(keptTeardowns)) {
            if (k.teardown().retry()) {
                keptTeardowns.remove(k);
                freeSlot(k.slot());
            }
            if (k.teardown().failure() != null) {
                failed.add(k.teardown());
            }
        }
        return failed;
    }

    /** Frees the slot a kept teardown held: an outbound one held by {@link #KEPT}, an inbound one by the wire-up server. */
    private void freeSlot(int slot) {
        if (slot < 0) {
            return;
        }
        if (slot < MAX_CONNECTIONS) {
            if (connections[slot] == KEPT) {
                connections[slot] = null;
            }
        } else {
            wireupServer.release(slot);
        }
    }

    /** Teardowns kept because they left something on the device, for tests. */
    int keptTeardowns() {
        synchronized (lifecycle) {
            return keptTeardowns.size() + keptByWireup.size();
        }
    }

    /** Inbound slots taken, for tests. */
    int inboundSlotsTaken() {
        return wireupServer.slotsTaken();
    }

    /**
     * Stops routing completions to {@code c}; with {@code releaseSlot} false, its slot stays taken
     * (its queue pair could not be destroyed and may still complete work): an inbound's by the
     * wire-up server, an outbound one by {@link #KEPT}, until {@link #freeSlot}.
     */
    private void unregister(Connection c, boolean releaseSlot) {
        if (c.slot >= 0 && connections[c.slot] == c) {
            connections[c.slot] = c.slot < MAX_CONNECTIONS && !releaseSlot ? KEPT : null;
            if (c.slot >= MAX_CONNECTIONS && releaseSlot) {
                wireupServer.release(c.slot);
            }
        }
        c.slot = -1;
    }

    /** Holds the outbound slot of a queue pair that could not be destroyed: no completion matches its generation, no endpoint takes it. */
    private static final Connection KEPT = new Connection() {
        {
            generation = -1; // ids carry 16 bits of generation: never -1
        }

        @Override
        void onSendCompletion(int kind, int index, int status, int vendorError) {
            throw new AssertionError("a completion routed to a kept slot");
        }
    };

    /** Takes the inbound connections the wire-up server built since the last call into their slots. */
    private int adoptInbounds() {
        if (!wireupServer.handedOver()) {
            return 0; // the common case, on every progress: no lock taken
        }
        synchronized (lifecycle) {
            if (closed) {
                return 0; // the wire-up server's close closes what it handed over and nobody took
            }
            int n = 0;
            for (Inbound in; (in = wireupServer.poll()) != null; n++) {
                connections[in.slot] = in;
                inbounds.add(in);
            }
            return n;
        }
    }

    static long requestId(Connection c, int kind, int index) {
        return (long) c.slot << 48 | (long) c.generation << 32 | (long) kind << 24 | index;
    }

    /**
     * The connection a completion belongs to, or {@code null} for one of a connection closed since.
     * A completion of a connection the wire-up server built but the transport has not taken yet
     * can only come after the handoff (the peer sends once it has the reply): take them and look
     * again.
     */
    private Connection owner(long requestId) {
        Connection c = known(requestId);
        return c == null && adoptInbounds() > 0 ? known(requestId) : c;
    }

    private Connection known(long requestId) {
        int slot = (int) (requestId >>> 48);
        Connection c = slot < connections.length ? connections[slot] : null;
        return c != null && c.generation == (int) (requestId >>> 32 & 0xFFFF) ? c : null;
    }

    static int newPsn() {
        return RANDOM.nextInt(WireFormat.MAX_QPN + 1);
    }

    byte[] token() {
        return token;
    }

    /** The wire-up server's thread, for tests that check it ends with {@link #close()}. */
    Thread wireupThread() {
        return wireupServer.thread();
    }

    @Override
    public TransportEndpoint connect(PayloadReader peer, EndpointEvents events) {
        ensureOpen();
        // Acted on before the connection exists: an event this worker has not looked at yet (the port went down, and maybe up
        // again, while it was not progressed) is about the connections before it, and would fail the new one too. Also the
        // device's failure, known to the context before this look, or before this worker subscribed to its events.
        handleAsyncEvents();
        if (unusable != null) {
            throw new ConduitException("verbs: this worker cannot connect: " + unusable);
        }
        WireFormat.Address a = WireFormat.Address.decode(peer);
        boolean ethernet = domain.linkLayer() == VerbsAbi.IBV_LINK_LAYER_ETHERNET;
        if (ethernet != (a.linkLayer() == VerbsAbi.IBV_LINK_LAYER_ETHERNET)) {
            throw new ConduitException("verbs: no path to the peer: its port is " + VerbsAbi.linkLayer(a.linkLayer()) + ", this worker's ("
                    + domain.deviceName() + " port " + domain.port() + ") " + VerbsAbi.linkLayer(domain.linkLayer()));
        }
        return VerbsEndpoint.connect(this, a, events);
    }

    /**
     * A connect under way ({@link VerbsEndpoint#connect}), on the user's thread: from before its
     * queue pair is created until what it built is either listed in {@link #endpoints} or torn
     * down. Its wire-up connect waits up to {@code verbs.wireup.timeout} for a peer that does not
     * answer, longer than {@code Conduit.close()}'s wait for the call, so a close forced from
     * another thread comes under it: that close closes its socket, which ends the wait at once, and
     * waits for the connect to tear down its queue pair, which is on the completion queues the
     * close destroys next. It destroyed them under that queue pair: the bare EBUSY of
     * {@code ibv_destroy_cq}, and the queues, the channel and the protection domain left on the
     * device for good. Under {@link #lifecycle}.
     */
    static final class Connecting {
        private SocketChannel socket;
    }

    /** The connects under way: under {@link #lifecycle}, which their end notifies. */
    private final List<Connecting> connecting = new ArrayList<>();

    /**
     * Lists a connect about to create its queue pair, refused once the transport is closed.
     * {@link #endConnect} must follow, after whatever the connect built is listed or torn down.
     */
    Connecting beginConnect() {
        synchronized (lifecycle) {
            ensureOpen();
            Connecting c = new Connecting();
            connecting.add(c);
            return c;
        }
    }

    /**
     * Gives {@code c} its wire-up socket before the connect waits on it, for a close to end that wait
     * ({@link #stopConnects}); throws the transport's "closed" when the close came first.
     */
    void connectsThrough(Connecting c, SocketChannel socket) {
        synchronized (lifecycle) {
            ensureOpen();
            c.socket = socket;
        }
    }

    /** Lists the endpoint a connect built, unless the transport was closed meanwhile: then throws its "closed", and the connect tears it down. */
    void connected(VerbsEndpoint endpoint) {
        synchronized (lifecycle) {
            ensureOpen();
            endpoints.add(endpoint);
        }
    }

    /** Ends {@code c}, which listed or tore down what it built: a close waiting for it goes on. */
    void endConnect(Connecting c) {
        synchronized (lifecycle) {
            connecting.remove(c);
            lifecycle.notifyAll();
        }
    }

    /**
     * Closes the socket of every connect under way, which ends its wire-up wait, and waits for each
     * to tear down what it built (or list it in {@link #endpoints}, for the walk after this). The
     * rest of a connect creates and registers, and its socket refuses once closed: no wait on a peer.
     * The closing thread's interrupt is kept for its caller: the queues cannot be destroyed before.
     */
    private void stopConnects() {
        boolean interrupted = false;
        synchronized (lifecycle) {
            for (Connecting c : connecting) {
                if (c.socket != null) {
                    try {
                        c.socket.close();
                    } catch (IOException e) {
                        // the descriptor is released all the same; the connect's own teardown closes it again, which is a no-op
                    }
                }
            }
            while (!connecting.isEmpty()) {
                try {
                    lifecycle.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** The path to a peer: its queue pair and port, with the smaller of the two MTUs. */
    Verbs.PeerPath path(WireFormat.Wireup w) {
        boolean global = domain.linkLayer() == VerbsAbi.IBV_LINK_LAYER_ETHERNET;
        return new Verbs.PeerPath(w.qpn(), w.psn(), w.lid(), w.gid(), Math.min(domain.activeMtu(), w.mtu()), global);
    }

    @Override
    public int progress() {
        sendSide.lock();
        try {
            return progressOwned();
        } finally {
            sendSide.unlock();
        }
    }

    private int progressOwned() {
        ensureOpen();
        int events = adoptInbounds();
        events += pollReceiveQueue();
        events += pollSendQueue();
        for (Inbound in : inbounds) {
            in.announceCredits();
        }
        for (VerbsEndpoint e : endpoints) {
            if (e.isConnecting()) {
                events += e.advanceWireup();
            }
        }
        progressCount++;
        // The clock is read every 16th idle poll (every 256th busy one), not on every spin.
        if ((events == 0 && (progressCount & 15) == 0) || (progressCount & 255) == 0) {
            long now = System.nanoTime();
            if (now - lastLiveness >= livenessNanos) {
                lastLiveness = now;
                events += checkLiveness(now);
            }
        }
        return events + dropBroken() + reportFailures();
    }

    /** Inbound connections that broke (their queue pair failed, or a record broke the protocol) are closed here, outside any poll. */
    void drop(Inbound in) {
        toDrop.add(in);
    }

    /** Completions the last {@link #pollReceiveQueue} took off the queue, also when it threw. */
    private int receiveCompletionsTaken;

    /** Closes every broken inbound connection, also when closing one fails (then throws that, after the others are closed). */
    private int dropBroken() {
        if (toDrop.isEmpty()) {
            return 0;
        }
        readAsyncEventsAfterAFailure();
        int n = toDrop.size();
        List<Inbound> dropping = List.copyOf(toDrop);
        toDrop.clear();
        Throwable failure = null;
        for (Inbound in : dropping) {
            try {
                retireInbound(in);
            } catch (RuntimeException | Error e) {
                failure = add(failure, e);
            }
        }
        rethrow(failIfClosedUnder(failure));
        return n;
    }

    int pollReceiveQueue() {
        int events = 0;
        receiveCompletionsTaken = 0;
        int n = stashed;
        stashed = 0;
        if (n == 0) {
            n = receiveQueue.poll(receiveCompletions);
        }
        Throwable failure = null;
        while (n > 0) {
            receiveCompletionsTaken += n;
            Verbs.Completions c = receiveCompletions;
            // Every completion of the batch is handled even if one throws: the next poll overwrites the batch, and a
            // completion left unhandled is a message lost and a receive buffer never posted again.
            for (int i = 0; i < n; i++) {
                Connection owner = owner(c.requestId[i]);
                if (owner != null) {
                    try {
                        owner.onReceive((int) (c.requestId[i] & 0xFF_FFFF), c.status[i], c.byteLength[i]);
                    } catch (RuntimeException | Error e) { // an Error: Inbound handles the rest itself
                        failure = add(failure, e);
                        if (owner instanceof Inbound in) {
                            in.breakDown(); // its buffer was not posted again: it would stall short of a credit
                        }
                    }
                    events++;
                }
            }
            if (n < c.capacity() || failure != null) {
                break; // after a failure, what is still queued waits for the next progress, not lost
            }
            n = receiveQueue.poll(receiveCompletions);
        }
        rethrow(failure);
        return events;
    }

    /** Handles send completions (frees send buffers, finishes RMA, credit writes); runs no application code, so RMA may call it while waiting. */
    int pollSendQueue() {
        sendSide.lock();
        try {
            return pollSendQueueOwned();
        } finally {
            sendSide.unlock();
        }
    }

    private int pollSendQueueOwned() {
        int events = 0;
        int n;
        Throwable failure = null;
        do {
            n = sendQueue.poll(sendCompletions);
            Verbs.Completions c = sendCompletions;
            for (int i = 0; i < n; i++) { // the whole batch, as in pollReceiveQueue
                Connection owner = owner(c.requestId[i]);
                if (owner != null) {
                    try {
                        owner.onSendCompletion((int) (c.requestId[i] >>> 24 & 0xFF), (int) (c.requestId[i] & 0xFF_FFFF), c.status[i],
                                c.vendorError[i]);
                    } catch (RuntimeException | Error e) {
                        failure = add(failure, e);
                    }
                    events++;
                }
            }
        } while (n == sendCompletions.capacity() && failure == null);
        rethrow(failure);
        return events;
    }

    /**
     * Reads the device's asynchronous events, then every wire-up connection for its end of stream
     * (a closed or dead peer) or its error (a silent host, by keepalive). The events first: a
     * queue pair, port or device that failed is the cause of what follows from it (the peer's end
     * of stream, a retry error), and the endpoint's failure names the first cause it is given.
     */
    private int checkLiveness(long now) {
        int events = 0;
        Throwable failure = null;
        try {
            events += handleAsyncEvents();
        } catch (RuntimeException | Error e) {
            failure = e;
        }
        List<Teardown> retried;
        synchronized (lifecycle) {
            retried = closed ? List.of() : retryKeptTeardowns();
        }
        for (Teardown t : retried) {
            if (Cleanup.isTheJvmsOwn(t.failure())) {
                failure = add(failure, t.failure());
            }
        }
        for (Inbound in : inbounds) {
            if (closed) {
                break;
            }
            if (in.peerGone()) {
                // Messages sent before the peer closed are on the receive queue already: deliver them first, all of them,
                // also past a batch whose handling threw. Not past a poll that failed itself: a device in error fails every
                // poll and takes nothing off the queue. The connection is closed all the same, and what is left of it on
                // the queue is lost with the device.
                while (true) {
                    try {
                        events += pollReceiveQueue();
                        break;
                    } catch (RuntimeException | Error e) {
                        failure = add(failure, e);
                        if (receiveCompletionsTaken == 0) break;
                    }
                }
                try {
                    retireInbound(in);
                } catch (RuntimeException | Error e) {
                    failure = add(failure, e);
                }
                events++;
            }
        }
        synchronized (lifecycle) {
            if (!closed) {
                for (VerbsEndpoint e : endpoints) {
                    events += e.checkPeer(now);
                }
            }
        }
        rethrow(failIfClosedUnder(failure));
        return events;
    }

    /**
     * Acts on the device's asynchronous events (UCX's ib device async handler does the same): a
     * queue pair in error fails its endpoint or drops its inbound connection; the port in use going
     * down fails every connection made before the event was read ({@link #failConnectionsBefore});
     * a device failure or an error of this transport's completion
     * queues fails every connection and every later {@code connect}. Events of queue pairs and
     * queues of another transport of the device, the informational ones ({@code IBV_EVENT_COMM_EST},
     * {@code IBV_EVENT_PORT_ACTIVE}, {@code IBV_EVENT_LID_CHANGE}, …) and those of another port never
     * reach this queue: the domain logs them where it reads them ({@link VerbsDomain#takeAsyncEvents}).
     */
    private int handleAsyncEvents() {
        domain.takeAsyncEvents();
        int events = 0;
        for (VerbsDomain.HeldEvent held; (held = asyncEvents.poll()) != null; ) {
            events += onAsyncEvent(held.event(), held.sequence());
        }
        // Not only by the event: this transport may have subscribed after another handed IBV_EVENT_DEVICE_FATAL out, and a
        // context the kernel detached reports no event at all, only EIO.
        if (domain.failure() != null) {
            events += failWithTheDevice();
        }
        return events;
    }

    /** The events {@link VerbsDomain#takeAsyncEvents} handed to this transport and its progress has not acted on yet, for tests. */
    int asyncEventsQueued() {
        return asyncEvents.size();
    }

    /** Fails every connection and every later {@code connect}, once, for what made the device context unusable. */
    private int failWithTheDevice() {
        if (deviceFailed) {
            return 0;
        }
        deviceFailed = true;
        unusable = domain.failure() + ", and nothing opened on it works any more: close this worker and open a new one, which opens "
                + "the device again";
        return failEveryConnection(unusable);
    }

    /** @param sequence the event's number in the order the device context read its events ({@link VerbsDomain.HeldEvent}) */
    private int onAsyncEvent(Verbs.AsyncEvent event, long sequence) {
        String name = VerbsAbi.eventType(event.type());
        String device = "device " + domain.deviceName();
        switch (event.type()) {
            case VerbsAbi.IBV_EVENT_QP_FATAL, VerbsAbi.IBV_EVENT_QP_REQ_ERR, VerbsAbi.IBV_EVENT_QP_ACCESS_ERR -> {
                if (event.queuePair() == null) {
                    break;
                }
                adoptInbounds();
                String why = name + " on the queue pair to it (qp " + event.queuePair().number() + " on " + device + " port " + domain.port()
                        + "): " + queuePairError(event.type()) + "; the queue pair is in the error state and the connection is lost: "
                        + "connect again (if it repeats, see dmesg and the port's error counters: ethtool -S on RoCE, perfquery on InfiniBand)";
                for (VerbsEndpoint e : endpoints) {
                    if (e.queuePair() == event.queuePair()) {
                        return e.failBy(why);
                    }
                }
                for (Inbound in : inbounds) {
                    if (in.queuePair() == event.queuePair()) {
                        logger.log(System.Logger.Level.WARNING, () -> "verbs: dropped the inbound connection from " + in.describePeer() + ": "
                                + why.replace("to it", "from it"));
                        in.breakDown();
                        return 1;
                    }
                }
                return 0;
            }
            case VerbsAbi.IBV_EVENT_PORT_ERR -> {
                if (event.port() != domain.port()) {
                    break;
                }
                return failConnectionsBefore(name + " on port " + event.port() + " of " + device + ", which this worker's connections "
                        + "use: its link went down (a cable, the switch, or on InfiniBand the subnet manager; see ibstat or ip link); a "
                        + "connection is not kept across it (docs/decisions.md): connect again once the port is ACTIVE", sequence);
            }
            case VerbsAbi.IBV_EVENT_DEVICE_FATAL -> {
                // The domain marked itself failed when it read the event, naming it.
                return failWithTheDevice();
            }
            case VerbsAbi.IBV_EVENT_CQ_ERR -> {
                String queue = event.completionQueue() == sendQueue ? "send" : event.completionQueue() == receiveQueue ? "receive" : null;
                if (queue == null) {
                    break;
                }
                unusable = name + " on the " + queue + " completion queue of this worker on " + device + ": it overran or failed and "
                        + "takes no more completions, so none of its connections can complete work (see dmesg): close this worker "
                        + "and open a new one";
                return failEveryConnection(unusable);
            }
            default -> {
            }
        }
        logger.log(System.Logger.Level.DEBUG, () -> "verbs: " + device + ": asynchronous event " + event + " (nothing of this worker fails)");
        return 0;
    }

    /** What an {@code IBV_EVENT_QP_*} error means, in the InfiniBand specification's words. */
    private static String queuePairError(int type) {
        return switch (type) {
            case VerbsAbi.IBV_EVENT_QP_FATAL -> "the adapter met an error it could not report in a completion (a local work queue "
                    + "catastrophic error)";
            case VerbsAbi.IBV_EVENT_QP_REQ_ERR -> "as a responder it received a request it found invalid (an invalid request local work "
                    + "queue error: the peer broke the transport protocol)";
            default -> "as a responder it refused a request for its access rights or keys (a local access violation work queue error)";
        };
    }

    /** Fails every endpoint with {@code why} and drops every inbound connection, naming it. */
    private int failEveryConnection(String why) {
        return failConnectionsBefore(why, Long.MAX_VALUE); // no event is numbered that high: none spares a connection
    }

    /**
     * Fails every endpoint with {@code why}, and drops, naming it, every inbound connection the wire-up
     * thread handed over before the device context read event {@code eventSequence}: one handed over
     * after it ({@link Inbound#handedOverAfter}) was made over the link that came back while this
     * worker, not progressed, held the event. Endpoints carry no such number: {@code connect} acts on
     * every event the worker holds before it builds one, so each event still held was read after that
     * look. One another thread read between the look and the endpoint's creation fails it too: a
     * failure too many at worst, never a connection kept across an event.
     */
    private int failConnectionsBefore(String why, long eventSequence) {
        int events = 0;
        for (VerbsEndpoint e : List.copyOf(endpoints)) {
            events += e.failBy(why);
        }
        adoptInbounds();
        for (Inbound in : List.copyOf(inbounds)) {
            if (in.delivers() && !in.handedOverAfter(eventSequence)) {
                logger.log(System.Logger.Level.WARNING, () -> "verbs: dropped the inbound connection from " + in.describePeer() + ": " + why);
                in.breakDown();
                events++;
            }
        }
        return events;
    }

    /** Collects {@code e} into {@code failure}; an Error is thrown before any exception, which it carries as suppressed. */
    private static Throwable add(Throwable failure, Throwable e) {
        if (failure == null) {
            return e;
        }
        if (e instanceof Error && !(failure instanceof Error)) {
            e.addSuppressed(failure);
            return e;
        }
        failure.addSuppressed(e);
        return failure;
    }

    private static void rethrow(Throwable failure) {
        if (failure instanceof RuntimeException e) {
            throw e;
        }
        if (failure instanceof Error e) {
            throw e;
        }
    }

    /** The inbound connections progress has taken, for tests. */
    List<Inbound> inbounds() {
        return List.copyOf(inbounds);
    }

    /**
     * Closes {@code in} if it is still among {@link #inbounds}, which it leaves: whoever takes it
     * out closes it, once.
     *
     * @return whether this call closed it (also when the close threw)
     */
    private boolean closeInbound(Inbound in) {
        synchronized (lifecycle) {
            if (!inbounds.remove(in)) {
                return false;
            }
            in.close();
            return true;
        }
    }

    /**
     * Closes an inbound connection that ended while the transport lives, then tells the sink that
     * its key delivers no more ({@link MessageSink#onSenderClosed}), also when the close failed:
     * the connection is out of the slot table either way. Once per connection: it leaves
     * {@link #inbounds} here. The transport's own {@link #close()} closes its connections without
     * this (the worker closes every endpoint); when that close, forced from another thread, took
     * it first, this does nothing, and the caller throws the transport's "closed" ({@link #failIfClosedUnder}).
     */
    private void retireInbound(Inbound in) {
        Throwable failure = null;
        try {
            if (!closeInbound(in)) {
                return; // retired already by an earlier step of this call, or closed by the transport's close (see the callers)
            }
        } catch (RuntimeException | Error e) {
            failure = e;
        }
        try {
            sink.onSenderClosed(in.sender());
        } catch (RuntimeException | Error e) {
            failure = add(failure, e);
        }
        rethrow(failure);
    }

    /**
     * Reads the device's asynchronous events before a failed connection is reported or dropped: a
     * completion error (a flushed receive or send) may follow from a queue pair, port or device event
     * already queued, which then names the cause. Failures are rare, so this is off the data path.
     */
    private void readAsyncEventsAfterAFailure() {
        try {
            handleAsyncEvents();
        } catch (RuntimeException e) {
            // The events cannot be read: the next liveness check throws that, in its own right.
        }
    }

    void failed(VerbsEndpoint endpoint) {
        toReport.add(endpoint);
    }

    private int reportFailures() {
        if (toReport.isEmpty()) {
            return 0;
        }
        readAsyncEventsAfterAFailure();
        int n = toReport.size();
        for (VerbsEndpoint e : List.copyOf(toReport)) {
            e.report();
        }
        toReport.clear();
        return n;
    }

    void closed(VerbsEndpoint endpoint) {
        endpoints.remove(endpoint);
        toReport.remove(endpoint);
    }

    @Override
    public boolean await(long timeoutNanos) {
        ensureOpen();
        // A connection the wire-up thread handed over is work now: taken only at the next liveness look, it would make
        // some later await return true with nothing the caller can connect it to.
        if (stashed > 0 || !toReport.isEmpty() || adoptInbounds() > 0) {
            return true;
        }
        receiveQueue.requestNotification();
        // The send queue is armed too while a completion on it is work: an inbound connection announces the buffers it
        // posted again only once its last credit write completed (its connector may need exactly those credits for its
        // next message, and sends nothing until then); and an endpoint's work request that fails (IBV_WC_RETRY_EXC_ERR:
        // the peer's queue pair in error, or RDMA blocked where the wire-up's TCP passes) is told by its completion alone.
        boolean sendQueueAwaited = creditsWaitForAWrite() || sendsOutstanding();
        if (sendQueueAwaited) {
            sendQueue.requestNotification();
        }
        // A completion that arrived before the queue was armed raises no event: look once more after arming.
        stashed = receiveQueue.poll(receiveCompletions);
        if (stashed > 0) {
            return true;
        }
        if (sendQueueAwaited && pollSendQueue() > 0) {
            return true; // the next progress announces the credits, or reports the endpoint it failed
        }
        // Credits arrive as RDMA writes, which raise no completion here: sleep at most one liveness interval.
        long sleep = Math.min(timeoutNanos, livenessNanos);
        int millis = Libc.pollTimeoutMillis(sleep);
        boolean woken = false;
        sleeping = true;
        try {
            ensureOpen(); // after the store: a close from another thread either sees this sleep and waits, or is seen here
            if (libc.poll(pollFds, pollEvents, pollReturned, millis) > 0) {
                if (pollReturned[0] != 0) {
                    while (channel.takeEvent()) {
                        woken = true;
                    }
                }
                if (pollReturned[1] != 0) {
                    libc.eventfdRead(wake);
                    woken = true;
                }
            }
        } finally {
            sleeping = false;
        }
        if (woken) {
            return true;
        }
        long now = System.nanoTime();
        if (now - lastLiveness < livenessNanos) {
            return false;
        }
        lastLiveness = now;
        return adoptInbounds() + checkLiveness(now) + dropBroken() + reportFailures() > 0;
    }

    /** Whether an inbound connection has buffers to announce once its credit write in flight completes. */
    private boolean creditsWaitForAWrite() {
        for (Inbound in : inbounds) {
            if (in.awaitsCreditWrite()) {
                return true;
            }
        }
        return false;
    }

    /** Whether an endpoint has work requests posted whose completion was not polled yet. */
    private boolean sendsOutstanding() {
        for (VerbsEndpoint e : endpoints) {
            if (e.hasSendsOutstanding()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void signal() {
        libc.eventfdWrite(wake, 1);
    }

    /**
     * Whether less than {@code verbs.wireup.timeout} has passed since {@code start}, a
     * {@link System#nanoTime()} value. Compared as elapsed time: a deadline of start plus the
     * timeout overflows for the longest timeouts a key takes (about 292 years), and a deadline in
     * the past ended every wait at once.
     */
    boolean withinWireupTimeout(long start) {
        return System.nanoTime() - start < wireupTimeoutMillis * 1_000_000;
    }

    private void ensureOpen() {
        if (closed) {
            throw closedError();
        }
    }

    private static IllegalStateException closedError() {
        return new IllegalStateException("verbs transport is closed");
    }

    /**
     * What a step that delivers (and so hands {@link #lifecycle} back while the application runs)
     * throws once the transport was closed from another thread meanwhile: the transport's "closed",
     * with what the step met on the way (a queue the close destroyed) suppressed in it; a failure
     * of the JVM's own still comes first ({@link #add}). Else {@code failure} as it is.
     */
    Throwable failIfClosedUnder(Throwable failure) {
        if (!closed) {
            return failure;
        }
        return failure == null ? closedError() : add(closedError(), failure);
    }

    /** Zeroed native memory for registration, page-aligned, owned by {@code arena}. */
    static MemorySegment allocate(Arena arena, long bytes) {
        return arena.allocate(bytes, 4096);
    }

    private static final java.lang.invoke.VarHandle LONG = Records.LONG.varHandle();

    /** A word the adapter writes (a credit count, little-endian as the peer writes it): read with acquire semantics. */
    static long readLong(MemorySegment segment, long offset) {
        return (long) LONG.getAcquire(segment, offset);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        // Every step runs whatever an earlier one threw, an Error included (an endpoint's close rethrows its drain's):
        // the transport cannot be closed a second time, so what a skipped step held would stay held.
        Throwable failure = null;
        try {
            // First, so that no connection is built on the completion queues while they are torn down.
            wireupServer.close();
        } catch (IOException ex) {
            failure = new ConduitException("verbs: closing the wire-up listener failed: " + ex.getMessage(), ex);
        } catch (RuntimeException | Error ex) {
            failure = ex;
        }
        try {
            stopConnects();
        } catch (RuntimeException | Error ex) {
            failure = add(failure, ex);
        }
        boolean owned = ownSendQueueToClose();
        try {
            failure = closeOwning(owned, failure);
        } finally {
            if (owned) {
                sendSide.unlock();
            }
        }
        rethrow(failure);
    }

    /**
     * Wakes an await asleep on another thread and waits for it to leave its sleep ({@link #sleeping}),
     * before the wake-up eventfd and the completion channel (whose descriptor the sleep polls) are
     * closed. Woken, the sleep ends at once: its reads do not block. A wake that fails (the eventfd's
     * count full, which also wakes it) leaves the poll to its timeout, one liveness interval at most.
     */
    private void awaitSleepOver() {
        if (!sleeping) {
            return;
        }
        try {
            libc.eventfdWrite(wake, 1);
        } catch (RuntimeException e) {
            // the poll's own timeout ends the sleep
        }
        while (sleeping) {
            Thread.onSpinWait();
        }
    }

    /**
     * Takes the send queue, unless a call of the user's under way on another thread holds it
     * ({@link #sendSide}); waits for nothing. The worker's calls are serialised, so only
     * {@code Conduit.close()} closes it under one, and only after waiting a second for that call to
     * return (docs/runtime.md, "Closing"): that wait is the one bound. A wait here of its own
     * (until 2026-12-08 up to {@code verbs.wireup.timeout}, 5 s) came on top, once per worker, one
     * worker after the other, for a call the runtime had given up on.
     */
    private boolean ownSendQueueToClose() {
        return sendSide.tryLock();
    }

    /**
     * The close past its wire-up listener; {@code owned}: holding {@link #sendSide}, else every
     * endpoint is closed without its drain ({@link VerbsEndpoint#close(boolean)}).
     */
    private Throwable closeOwning(boolean owned, Throwable failure) {
        List<Throwable> connections = new ArrayList<>();
        List<KeptTeardown> keptBefore;
        List<Teardown> retried;
        List<KeptTeardown> keptAfter;
        synchronized (lifecycle) {
            for (VerbsEndpoint e : endpoints) {
                try {
                    e.close(owned);
                } catch (RuntimeException | Error ex) {
                    connections.add(ex);
                }
            }
            toDrop.clear();
            for (Inbound in : inbounds) {
                try {
                    closeInbound(in);
                } catch (RuntimeException | Error ex) {
                    connections.add(ex);
                }
            }
            // Before the queues: a queue pair left on them keeps them (and the protection domain) from being destroyed.
            keptBefore = new ArrayList<>(keptTeardowns);
            keptBefore.addAll(keptByWireup);
            retried = retryKeptTeardowns();
            keptAfter = List.copyOf(keptTeardowns);
        }
        for (Throwable ex : connections) {
            KeptTeardown healed = keptBefore.stream().filter(k -> k.teardown().threw(ex) && !keptAfter.contains(k)).findFirst()
                    .orElse(null);
            if (healed == null || Cleanup.isTheJvmsOwn(ex)) { // the JVM's own is never lost
                failure = add(failure, ex);
            } else {
                // Its message, memory kept for the worker's later tries, holds no more: the try here freed it.
                logger.log(System.Logger.Level.DEBUG, () -> "verbs: closing the worker on device " + domain.deviceName() + ": "
                        + healed.teardown().what() + " failed, and succeeded when tried again: " + ex.getMessage());
            }
        }
        List<String> leftHere = new ArrayList<>();
        for (Teardown t : retried) {
            if (t.deviceMayWrite()) {
                leftHere.add("a worker's " + t.what() + " failed again: " + t.whyHeld());
                domain.leftOnDevice(leftHere.getLast());
                logger.log(System.Logger.Level.WARNING, "verbs: closing the worker on device " + domain.deviceName() + ": "
                        + t.what() + " failed again: " + t.whyHeld() + "; and this worker's completion queues, completion channel "
                        + "and protection domain, which a queue pair or registration left there keeps from being destroyed, stay "
                        + "held with it: all of it is released when the process exits");
            } else {
                failure = add(failure, t.failure());
            }
        }
        awaitSleepOver();
        List<AutoCloseable> resources = List.of(wake, receiveQueue, sendQueue, channel);
        for (AutoCloseable c : resources) {
            try {
                c.close();
            } catch (RuntimeException ex) {
                failure = add(failure, leftHere.isEmpty() || c == wake ? ex : VerbsDomain.keptBy("closing the worker on device "
                        + domain.deviceName(), ex, leftHere));
            } catch (Error ex) {
                failure = add(failure, ex);
            } catch (Exception ex) {
                failure = add(failure, new ConduitException("verbs: closing " + c + " failed: " + ex.getMessage(), ex));
            }
        }
        domain.unsubscribe(asyncEvents);
        try {
            holder.release(domain);
        } catch (RuntimeException | Error ex) {
            failure = add(failure, ex);
        }
        return failure;
    }
}
