package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.PeerFailedException.Reason;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.TransportEndpoint;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The connecting side of a connection: a queue pair that SENDs active messages into the peer's
 * posted buffers and does RDMA on the peer's registered regions.
 *
 * <ul>
 *   <li><b>Send buffers</b>: {@code verbs.send.buffers} registered buffers of
 *       {@code verbs.buffer.size}; a message is copied into as many as its records need, so the
 *       caller's segments are free when {@link #trySend} returns; a buffer is free again when its
 *       completion arrives. The same buffers stage put, get and atomics.</li>
 *   <li><b>Credits</b>: {@code sent - credit word} SENDs are outstanding at the peer; trySend
 *       needs as many free peer buffers (and own buffers) as its message has records, or returns
 *       {@code false}, all or nothing.</li>
 *   <li><b>RMA</b>: put copies the source through send buffers into RDMA WRITEs and returns once
 *       they are posted (flush waits for their completions); get keeps as many RDMA READs into send
 *       buffers in flight as its queue pair's {@code max_rd_atomic} and its send buffers allow, and
 *       copies each part out once its READ completed, in posting order, its buffer the get's until
 *       then; each part is at most the smaller of the two sides' buffer sizes, which both ports
 *       move in one work request; fetch-add and compare-and-swap
 *       are verbs atomics on an 8-byte send buffer.
 *       Targets are regions of the peer's verbs memory provider: their handle carries the chunk's
 *       registered address and remote key, and the identity of the device context it is
 *       registered in, which must be the peer's (its address's {@code context}): a region of
 *       another process fails only its call, never posted.</li>
 * </ul>
 */
final class VerbsEndpoint extends VerbsTransport.Connection implements TransportEndpoint {

    private enum State { CONNECTING, CONNECTED, FAILED, CLOSED }

    private final VerbsTransport transport;
    private final EndpointEvents events;
    private final WireFormat.Address peer;
    private final String peerName;
    private final SocketChannel wireup;
    private final Arena arena;
    private final Verbs.QueuePair qp;
    private final Verbs.MemoryRegion ring;
    private final Verbs.MemoryRegion creditWord;
    /** The smaller of the two sides' {@code verbs.buffer.size}: the most bytes one work request of this endpoint moves. */
    private final int recordSize;
    private final int slots;
    private final int[] freeSlots;
    private int freeCount;
    private final boolean[] done;
    /**
     * The send buffers that hold a part of a get not copied out yet: their completion leaves them
     * taken, and the get gives them back ({@link #giveBack}) once it copied them.
     */
    private final boolean[] awaitingCopy;
    /** The opcode each send buffer was last posted with, so that a failed completion names the operation it served. */
    private final int[] postedOpcodes;
    /**
     * The RDMA READs and atomics its queue pair keeps in flight ({@code max_rd_atomic}), and so, within the send buffers,
     * the parts a get has in flight.
     */
    private final int readDepth;
    /**
     * A get's window: the buffers of its parts in flight, in posting order, each entry reused by the
     * part posted in its place; at most {@link #readDepth} and the send buffers, made once, as a get
     * allocates nothing.
     */
    private final int[] getWindow;
    private final int psn;
    private final long started = System.nanoTime();
    private final ByteBuffer replyLength = ByteBuffer.allocate(2).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer probe = ByteBuffer.allocate(1);
    private ByteBuffer replyBody;
    private State state = State.CONNECTING;
    private long sent;
    /** The peer's credit word when last read: it only grows, and never past {@link #sent}. */
    private long freedByPeer;
    private PeerFailedException failure;
    /**
     * Whether its teardown was claimed, under the transport's {@link VerbsTransport#lifecycle}: by
     * its own close, or by the worker's close forced from another thread while its own close on the
     * user's thread still drained (Conduit.close() past its wait for that call). Whichever claims
     * it tears it down, once, under that lock: the worker's close destroys the completion queues
     * only after, which fail with EBUSY while its queue pair is on them.
     */
    private volatile boolean released;
    /** Whether it was connected when its close began: the close that tears it down tells by it what it cut short. */
    private boolean connectedAtClose;
    private boolean reported;
    private RemoteRegion lastRegion;
    private WireFormat.Region lastPayload;

    private VerbsEndpoint(VerbsTransport transport, EndpointEvents events, WireFormat.Address peer, SocketChannel wireup, Arena arena,
                          Verbs.QueuePair qp, Verbs.MemoryRegion ring, Verbs.MemoryRegion creditWord, int psn) {
        this.transport = transport;
        this.events = events;
        this.peer = peer;
        this.peerName = peer.host() + ":" + peer.tcpPort();
        this.wireup = wireup;
        this.arena = arena;
        this.qp = qp;
        this.ring = ring;
        this.creditWord = creditWord;
        this.psn = psn;
        this.recordSize = Math.min(transport.bufferSize, peer.bufferSize());
        this.slots = transport.sendBuffers;
        this.freeSlots = new int[slots];
        for (int i = 0; i < slots; i++) {
            freeSlots[i] = slots - 1 - i;
        }
        this.freeCount = slots;
        this.done = new boolean[slots];
        this.awaitingCopy = new boolean[slots];
        this.postedOpcodes = new int[slots];
        this.readDepth = transport.domain.initiatorDepth(peer.responderDepth());
        this.getWindow = new int[Math.min(readDepth, slots)];
    }

    /**
     * Creates the queue pair (INIT) and buffers, connects to the peer's wire-up listener and sends
     * the request. The reply is read by progress. Listed with the transport as a connect under way
     * throughout ({@link VerbsTransport.Connecting}): a close from another thread ends its wait for
     * the peer's listener, and this tears down what it built before that close destroys the queues.
     *
     * @throws ConduitException naming the listener when it cannot be reached
     * @throws IllegalStateException "verbs transport is closed" when the transport was closed under it
     */
    static VerbsEndpoint connect(VerbsTransport transport, WireFormat.Address peer, EndpointEvents events) {
        VerbsTransport.Connecting connecting = transport.beginConnect();
        try {
            return connect(transport, peer, events, connecting);
        } finally {
            transport.endConnect(connecting);
        }
    }

    private static VerbsEndpoint connect(VerbsTransport transport, WireFormat.Address peer, EndpointEvents events,
                                         VerbsTransport.Connecting connecting) {
        VerbsDomain domain = transport.domain;
        Arena arena = Arena.ofShared();
        Verbs.QueuePair qp = null;
        Verbs.MemoryRegion ring = null;
        Verbs.MemoryRegion credit = null;
        SocketChannel channel = null;
        VerbsEndpoint endpoint = null;
        try {
            qp = domain.outboundProtectionDomain().createQueuePair(transport.sendQueue, transport.receiveQueue, transport.sendBuffers, 1);
            // The acceptor only writes the credit word through this queue pair: no remote read or atomics, and a domain
            // that holds no chunk of a pool, or a hostile acceptor could read or change memory it learns or guesses a key of.
            qp.toInit(domain.port(), VerbsAbi.IBV_ACCESS_REMOTE_WRITE);
            String less = "lower " + VerbsConfig.SEND_BUFFERS.name() + " or " + VerbsConfig.BUFFER_SIZE.name()
                    + ": each connection registers their product";
            ring = domain.outboundProtectionDomain().register(VerbsTransport.allocate(arena, (long) transport.sendBuffers * transport.bufferSize),
                    VerbsAbi.IBV_ACCESS_LOCAL_WRITE, less);
            credit = domain.outboundProtectionDomain().register(VerbsTransport.allocate(arena, 64),
                    VerbsAbi.IBV_ACCESS_LOCAL_WRITE | VerbsAbi.IBV_ACCESS_REMOTE_WRITE, less);
            InetSocketAddress listener = new InetSocketAddress(InetAddress.ofLiteral(peer.host()), peer.tcpPort());
            channel = SocketChannel.open();
            transport.connectsThrough(connecting, channel);
            try {
                channel.socket().connect(listener, (int) Math.min(Integer.MAX_VALUE, transport.wireupTimeoutMillis));
            } catch (IOException e) {
                throw new ConduitException("verbs: cannot reach the peer's wire-up listener " + peer.host() + ":" + peer.tcpPort() + " ("
                        + e.getMessage() + "): the peer is gone, or a firewall or routing separates this host from it (the peer chooses "
                        + "the address with " + VerbsConfig.WIREUP_ADDRESS.nameAndVariable() + ")", e);
            }
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            transport.keepalive.apply(channel);
            int psn = VerbsTransport.newPsn();
            endpoint = new VerbsEndpoint(transport, events, peer, channel, arena, qp, ring, credit, psn);
            transport.register(endpoint);
            // With this transport's own address: the acceptor gives it for this connection's messages, which are answered there.
            byte[] request = new WireFormat.Wireup(WireFormat.REQUEST, peer.token(), qp.number(), psn, domain.lid(), domain.gid(),
                    domain.activeMtu(), credit.memory().address(), credit.remoteKey(), transport.ownAddress()).encode();
            ByteBuffer out = ByteBuffer.wrap(request);
            while (out.hasRemaining()) {
                channel.write(out); // blocking: a new connection's socket buffer takes the request at once
            }
            channel.configureBlocking(false);
            transport.connected(endpoint);
            return endpoint;
        } catch (IOException e) {
            throw failed(transport, release(transport, endpoint, peer, channel, credit, ring, qp, arena),
                    new ConduitException("verbs: wire-up with " + peer.host() + ":" + peer.tcpPort() + " failed: " + e.getMessage(), e));
        } catch (RuntimeException e) {
            throw failed(transport, release(transport, endpoint, peer, channel, credit, ring, qp, arena), e);
        } catch (Error e) { // out of memory for the buffers, say: the queue pair and registrations are torn down all the same
            throw failed(transport, release(transport, endpoint, peer, channel, credit, ring, qp, arena), e);
        }
    }

    /**
     * What a connect that failed throws, with what its {@code teardown} met suppressed: {@code failure}; or once the
     * transport was closed under it, the transport's "closed" with {@code failure} suppressed, not the unreachable peer
     * or refused socket that the close's closing of the wire-up socket looks like.
     */
    private static RuntimeException failed(VerbsTransport transport, Teardown teardown, Throwable failure) {
        Throwable thrown = teardown.suppressedInto(transport.failIfClosedUnder(failure));
        if (thrown instanceof Error e) {
            throw e;
        }
        return (RuntimeException) thrown;
    }

    /**
     * Closes everything, each even when an earlier one fails, and unregisters {@code endpoint}
     * ({@code null}: not registered yet) from its transport, which keeps a teardown that left
     * something on the device to try again ({@link VerbsTransport#unregister(VerbsTransport.Connection, Teardown)});
     * the caller reports or rethrows what failed.
     */
    private static Teardown release(VerbsTransport transport, VerbsEndpoint endpoint, WireFormat.Address peer, SocketChannel channel,
                                    Verbs.MemoryRegion credit, Verbs.MemoryRegion ring, Verbs.QueuePair qp, Arena arena) {
        Teardown teardown = new Teardown("closing the connection to " + peer.host() + ":" + peer.tcpPort()).socket(channel).queuePair(qp)
                .region(credit).region(ring).memory(arena);
        transport.unregister(endpoint, teardown);
        return teardown;
    }

    boolean isConnecting() {
        return state == State.CONNECTING;
    }

    /** Whether the peer was found failed, for tests. */
    boolean hasFailed() {
        return failure != null;
    }

    /** Reads the acceptor's reply, if it has come, and moves the queue pair to RTR and RTS. */
    int advanceWireup() {
        try {
            if (replyBody == null) {
                if (wireup.read(replyLength) < 0) {
                    return fail(Reason.UNKNOWN, "the peer closed the wire-up connection before it replied: it refused the request (see its log) or died");
                }
                if (replyLength.hasRemaining()) {
                    return 0;
                }
                int n = Short.toUnsignedInt(replyLength.getShort(0));
                if (n == 0 || n > WireFormat.MAX_WIREUP) {
                    return fail(Reason.DAMAGED, "a wire-up reply of " + n + " bytes (at most " + WireFormat.MAX_WIREUP + ")");
                }
                replyBody = ByteBuffer.allocate(n);
            }
            if (wireup.read(replyBody) < 0) {
                return fail(Reason.UNKNOWN, "the peer closed the wire-up connection in the middle of its reply");
            }
            if (replyBody.hasRemaining()) {
                return 0;
            }
            WireFormat.Wireup reply = WireFormat.Wireup.decode(replyBody.array(), WireFormat.REPLY);
            if (!MessageDigest.isEqual(reply.token(), peer.token())) {
                return fail(Reason.DAMAGED, "the wire-up reply names another transport (token mismatch)");
            }
            qp.toReadyToReceive(transport.path(reply), transport.domain.port(), transport.domain.gidIndex(), transport.domain.responderDepth());
            qp.toReadyToSend(psn, readDepth);
            state = State.CONNECTED;
            return 1;
        } catch (InvalidHandleException e) {
            return fail(Reason.DAMAGED, "the wire-up reply is invalid: " + e.getMessage());
        } catch (IOException e) {
            return fail(Reason.UNKNOWN, "the wire-up connection broke: " + e.getMessage());
        } catch (RuntimeException e) {
            return fail(Reason.UNKNOWN, "the queue pair could not be connected: " + e.getMessage());
        }
    }

    /**
     * Fails the endpoint whose peer closed the wire-up connection, or whose handshake takes longer
     * than the timeout. A connecting endpoint reads the reply first: it may have come while the
     * worker slept in the transport's await, which reads no wire-up socket, and a reply that came
     * in time is no hung peer.
     */
    int checkPeer(long now) {
        if (state == State.CONNECTING) {
            int advanced = advanceWireup();
            if (state == State.CONNECTING && now - started > transport.wireupTimeoutMillis * 1_000_000) {
                return fail(Reason.HUNG, "no wire-up reply within " + VerbsConfig.WIREUP_TIMEOUT.nameAndVariable() + ": the peer does not progress");
            }
            return advanced;
        }
        if (state != State.CONNECTED) {
            return 0;
        }
        try {
            probe.clear();
            int read = wireup.read(probe);
            if (read < 0) {
                return fail(Reason.UNKNOWN, "the peer closed its end of the wire-up connection: its worker closed or its process died");
            }
            if (read > 0) {
                return fail(Reason.DAMAGED, "the peer sent " + read + " more bytes on the wire-up connection after its reply, where the protocol has "
                        + "none: a protocol breach (a peer of another version, or not a Conduit verbs transport)");
            }
        } catch (IOException e) {
            // ETIMEDOUT once TCP keepalive gave up on a crashed host or a cut network; ECONNRESET from a peer host that rebooted.
            return fail(Reason.UNKNOWN, "the wire-up connection broke (" + e.getMessage() + "): the peer's host crashed or became unreachable within "
                    + VerbsConfig.HEARTBEAT_TIMEOUT.nameAndVariable() + ", or its process died");
        }
        return 0;
    }

    private int fail(Reason reason, String why) {
        if (state == State.FAILED || state == State.CLOSED) {
            return 0;
        }
        state = State.FAILED;
        failure = new PeerFailedException(reason, "verbs: peer " + peerName + ": " + why);
        transport.failed(this);
        return 1;
    }

    /**
     * Fails the endpoint for an asynchronous event of the device, {@code why} naming it. An
     * endpoint already failed by what followed from the event (a completion flushed when the queue
     * pair went to the error state, a retry error) but not yet reported is failed with the event as
     * its cause instead, the first failure named after it: the event is what the user can act on.
     */
    int failBy(String why) {
        if (state == State.FAILED && !reported && failure != null) {
            failure = new PeerFailedException(failure.reason(), "verbs: peer " + peerName + ": " + why + " (first seen as: "
                    + failure.getMessage().substring(("verbs: peer " + peerName + ": ").length()) + ")");
            return 0;
        }
        return fail(Reason.UNKNOWN, why);
    }

    /** Whether a work request of its send buffers is posted and its completion not polled yet. */
    boolean hasSendsOutstanding() {
        return freeCount < slots;
    }

    /** Its queue pair, which the device's asynchronous events name. */
    Verbs.QueuePair queuePair() {
        return qp;
    }

    void report() {
        if (!reported && failure != null) {
            reported = true;
            events.peerFailed(failure);
        }
    }

    @Override
    void onSendCompletion(int kind, int index, int status, int vendorError) {
        if (index < 0 || index >= slots) {
            return;
        }
        done[index] = true;
        if (!awaitingCopy[index]) {
            freeSlots[freeCount++] = index;
        }
        if (status != VerbsAbi.IBV_WC_SUCCESS) {
            fail(Reason.UNKNOWN, "a work request failed: " + Completion.status(status) + ", vendor error 0x" + Integer.toHexString(vendorError)
                    + " (" + operation(postedOpcodes[index]) + ")");
        }
    }

    /** The endpoint operation a send work request of {@code opcode} serves, as its caller named it. */
    private static String operation(int opcode) {
        return switch (opcode) {
            case VerbsAbi.IBV_WR_SEND -> "the SEND of a message";
            case VerbsAbi.IBV_WR_RDMA_WRITE -> "an RDMA WRITE of a put";
            case VerbsAbi.IBV_WR_RDMA_READ -> "an RDMA READ of a get";
            case VerbsAbi.IBV_WR_ATOMIC_FETCH_AND_ADD -> "the atomic of a fetchAdd";
            case VerbsAbi.IBV_WR_ATOMIC_CMP_AND_SWP -> "the atomic of a compareAndSwap";
            default -> "opcode " + opcode;
        };
    }

    @Override
    public int maxHeaderSize() {
        return Records.MAX_MESSAGE_HEADER;
    }

    @Override
    public long maxPayloadSize() {
        return Records.maxPayload(Math.min(peer.receiveBuffers(), slots), recordSize);
    }

    /** A message is at most as many records as the fewer of the peer's receive buffers and this endpoint's send buffers. */
    @Override
    public String maxPayloadSizeRemedy() {
        String records = peer.receiveBuffers() < slots
                ? VerbsConfig.RECEIVE_BUFFERS.nameAndVariable() + " of the peer (" + peer.receiveBuffers() + " there, fewer than the "
                        + slots + " of this process's " + VerbsConfig.SEND_BUFFERS.nameAndVariable() + ")"
                : VerbsConfig.SEND_BUFFERS.nameAndVariable() + " of this process (" + slots + ", no more than the peer's "
                        + VerbsConfig.RECEIVE_BUFFERS.nameAndVariable() + ", " + peer.receiveBuffers() + ")";
        return "a message takes at most " + records + " records of " + recordSize + " bytes, the smaller of the two processes' "
                + VerbsConfig.BUFFER_SIZE.nameAndVariable() + "; raise them";
    }

    private void checkUsable() {
        if (failure != null) {
            throw failure;
        }
        if (state == State.CLOSED) {
            throw new IllegalStateException("endpoint is closed");
        }
    }

    @Override
    public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
        return trySend(id, header, 0, (int) header.byteSize(), payload, 0, payload.byteSize());
    }

    @Override
    public boolean trySend(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                           MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        transport.sendSide.lock();
        try {
            checkUsable();
            if (state == State.CONNECTING) {
                // The reply may be here although this worker has not progressed since: a sender that only
                // retries trySend (while its peer progresses) must get connected, as it gets its credits.
                advanceWireup();
                checkUsable();
            }
            if (state != State.CONNECTED) {
                return false;
            }
            int records = Records.count(headerLength, payloadLength, recordSize);
            long credits = peer.receiveBuffers() - (sent - freedByPeer());
            if (records > credits || records > freeCount) {
                transport.pollSendQueue();
                if (records > freeCount || failure != null) {
                    checkUsable();
                    return false;
                }
                if (records > credits) {
                    return false;
                }
            }
            MemorySegment buffers = ring.memory();
            // Every record is copied into the buffer it goes in before any is taken or posted: a copy that throws (the caller's
            // arena closed, even by another thread meanwhile, or confined to another thread; a fault in mapped memory) then keeps
            // no buffer, and leaves the peer no message without its end.
            long payloadDone = 0;
            for (int r = 0; r < records; r++) {
                long at = (long) freeSlots[freeCount - 1 - r] * transport.bufferSize;
                int headerHere = r == 0 ? headerLength : 0;
                long part = Math.min(payloadLength - payloadDone, recordSize - Records.HEADER - headerHere);
                Records.write(buffers, at, r == 0 ? Records.FIRST : Records.MORE, id, headerHere, (int) part, payloadLength);
                if (headerHere > 0) {
                    MemorySegment.copy(headerBuffer, headerOffset, buffers, at + Records.HEADER, headerHere);
                }
                MemorySegment.copy(payloadBuffer, payloadOffset + payloadDone, buffers, at + Records.HEADER + headerHere, part);
                payloadDone += part;
            }
            for (int r = 0; r < records; r++) {
                int slot = freeSlots[--freeCount];
                long at = (long) slot * transport.bufferSize;
                int length = Records.HEADER + buffers.get(Records.INT, at + Records.HEADER_LENGTH)
                        + buffers.get(Records.INT, at + Records.PART_LENGTH);
                post(slot, VerbsAbi.IBV_WR_SEND, at, length, 0, 0, 0, 0);
                sent++;
            }
            return true;
        } finally {
            transport.sendSide.unlock();
        }
    }

    /**
     * The peer's credit word, checked: the peer writes it (RDMA WRITE), so a broken or hostile one
     * could grant credits for SENDs never made, which would overrun its receive buffers.
     */
    private long freedByPeer() {
        long freed = VerbsTransport.readLong(creditWord.memory(), 0);
        if (freed != freedByPeer) {
            if (freed > sent || freed < freedByPeer) {
                fail(Reason.DAMAGED, "its credit word says " + freed + " of this endpoint's SENDs were received, after " + freedByPeer + " and with "
                        + sent + " sent: it can only grow, up to the SENDs made (a protocol breach)");
                checkUsable();
            }
            freedByPeer = freed;
        }
        return freed;
    }

    private void post(int slot, int opcode, long offset, int length, long remoteAddress, int remoteKey, long compareAdd, long swap) {
        done[slot] = false;
        postedOpcodes[slot] = opcode;
        try {
            qp.postSend(VerbsTransport.requestId(this, VerbsTransport.KIND_SLOT, slot), opcode, ring, offset, length, remoteAddress,
                    remoteKey, compareAdd, swap);
        } catch (RuntimeException | Error e) {
            // An Error too (out of memory, a fault in mapped memory): no completion comes for the slot, and flush() and
            // close() wait for every slot.
            freeSlots[freeCount++] = slot;
            done[slot] = true;
            fail(Reason.UNKNOWN, "posting a work request failed: " + (e instanceof Error ? e : e.getMessage()));
            if (e instanceof Error error) {
                throw error; // as it is, as the transport's other paths rethrow one; the endpoint's next call throws the failure
            }
            throw failure;
        }
    }

    // ------------------------------------------------------------------ RMA

    @Override
    public void put(MemorySegment source, RemoteRegion target, long offset) {
        transport.sendSide.lock();
        try {
            long length = source.byteSize();
            long remote = remoteAddress(target, offset, length, "put");
            boolean lastFirst = source.isNative() && lastPartFirst(source.address(), remote, length);
            MemorySegment buffers = ring.memory();
            long parts = parts(length);
            for (long i = 0; i < parts; i++) {
                long first = partStart(i, parts, lastFirst);
                int part = (int) Math.min(length - first, recordSize);
                int slot = takeSlot();
                long at = (long) slot * transport.bufferSize;
                try {
                    MemorySegment.copy(source, first, buffers, at, part);
                } catch (RuntimeException | Error e) {
                    // The source's arena closed, even by another thread meanwhile, or confined to another thread; a fault in its
                    // mapped memory: the part's buffer, taken and not posted, would wait for a completion that never comes. The
                    // parts posted before stay written, as when posting a part fails.
                    freeSlots[freeCount++] = slot;
                    throw e;
                }
                post(slot, VerbsAbi.IBV_WR_RDMA_WRITE, at, part, remote + first, lastPayload.rkey(), 0, 0);
            }
        } finally {
            transport.sendSide.unlock();
        }
    }

    /**
     * RDMA-READs the parts into send buffers, up to {@link #readDepth} of them in flight (and no
     * more buffers than there are), and copies each out when its READ completed, in the order they
     * were posted, posting the next part in its place. A get that throws (its peer failed, a READ
     * was refused) has copied out a run of its first parts in that order, possibly none, and left
     * the rest of {@code destination} as it was; the buffers of parts still in flight come back
     * with their completions, as a put's do.
     */
    @Override
    public void get(RemoteRegion source, long offset, MemorySegment destination) {
        transport.sendSide.lock();
        try {
            long length = destination.byteSize();
            long remote = remoteAddress(source, offset, length, "get");
            boolean lastFirst = destination.isNative() && lastPartFirst(remote, destination.address(), length);
            MemorySegment buffers = ring.memory();
            long parts = parts(length);
            int[] inFlight = getWindow;
            long posted = 0;
            long copied = 0;
            try {
                while (copied < parts) {
                    while (posted < parts && posted - copied < inFlight.length) {
                        long first = partStart(posted, parts, lastFirst);
                        int slot = takeSlot();
                        post(slot, VerbsAbi.IBV_WR_RDMA_READ, (long) slot * transport.bufferSize, (int) Math.min(length - first, recordSize),
                                remote + first, lastPayload.rkey(), 0, 0);
                        awaitingCopy[slot] = true;
                        inFlight[(int) (posted++ % inFlight.length)] = slot;
                    }
                    int slot = inFlight[(int) (copied % inFlight.length)];
                    awaitDone(slot);
                    long first = partStart(copied, parts, lastFirst);
                    MemorySegment.copy(buffers, (long) slot * transport.bufferSize, destination, first, Math.min(length - first, recordSize));
                    giveBack(slot);
                    copied++;
                }
            } finally {
                for (long i = copied; i < posted; i++) {
                    giveBack(inFlight[(int) (i % inFlight.length)]);
                }
            }
        } finally {
            transport.sendSide.unlock();
        }
    }

    /** Frees the buffer of a get's part: at once if its READ completed, else when its completion comes. */
    private void giveBack(int slot) {
        awaitingCopy[slot] = false;
        if (done[slot]) {
            freeSlots[freeCount++] = slot;
        }
    }

    /** Where the {@code index}th part of a put or get of {@code parts} starts, in the order they go. */
    private long partStart(long index, long parts, boolean lastFirst) {
        return (lastFirst ? parts - 1 - index : index) * recordSize;
    }

    /**
     * How many send buffers a put or get of {@code length} bytes goes through:
     * each part at most {@link #recordSize}, the peer's {@code buffer.size} too, which its port's
     * {@code max_msg_sz} moves in one work request (it checked that at its open), where this
     * side's buffer may be larger than the peer's port moves.
     */
    private long parts(long length) {
        return (length + recordSize - 1) / recordSize;
    }

    /**
     * Whether a put's or get's parts go from the last to the first: when its destination starts
     * above its source and within its length, as a copy in the same memory does (the peer is this
     * process: a region it exported, reached through a connection to itself), where the first part
     * written would overwrite source bytes of the next before they are read. The order copies what
     * {@code MemorySegment.copy} and the shared-memory transports copy. Addresses of two processes
     * compared this way only choose an order, which is otherwise free.
     *
     * <p>A get's READs in flight keep that copy: each part is copied out after its own READ
     * completed, and a copy-out of one part overwrites source bytes of that part and of those
     * before it in this order only (the destination is shifted away from the parts still to come),
     * all of them read already, never those of the parts whose READs are still in flight.
     */
    private static boolean lastPartFirst(long from, long to, long length) {
        return to > from && to - from < length;
    }

    @Override
    public long fetchAdd(RemoteRegion target, long offset, long delta) {
        return atomic(target, offset, VerbsAbi.IBV_WR_ATOMIC_FETCH_AND_ADD, delta, 0, "fetchAdd");
    }

    @Override
    public long compareAndSwap(RemoteRegion target, long offset, long expected, long desired) {
        return atomic(target, offset, VerbsAbi.IBV_WR_ATOMIC_CMP_AND_SWP, expected, desired, "compareAndSwap");
    }

    private long atomic(RemoteRegion target, long offset, int opcode, long compareAdd, long swap, String op) {
        transport.sendSide.lock();
        try {
            if (!transport.domain.atomics()) {
                throw new NotSupportedException("verbs: " + op + " needs RDMA atomics, and device " + transport.domain.deviceName()
                        + " has none (atomic_cap " + VerbsAbi.atomics(transport.domain.atomicCap()) + ")");
            }
            if (!peer.remoteAtomics()) {
                // Its device registers its chunks, and sets up its queue pairs, without IBV_ACCESS_REMOTE_ATOMIC: posted, the
                // atomic would be a remote access error, which fails this endpoint and the peer's inbound connection.
                throw new NotSupportedException("verbs: " + op + " needs RDMA atomics at the peer too, and the device of the peer at "
                        + peerName + " has none (atomic_cap none, as its address says), so its regions take no remote atomics; "
                        + "put and get on them still work. Export the word from a process whose device has atomics");
            }
            long remote = remoteAddress(target, offset, 8, op);
            if ((remote & 7) != 0) {
                // Posted, the adapter would fail the work request and with it the queue pair: only this call is wrong.
                throw misalignedWord(op, target, offset, remote);
            }
            int slot = takeSlot();
            long at = (long) slot * transport.bufferSize;
            post(slot, opcode, at, 8, remote, lastPayload.rkey(), compareAdd, swap);
            awaitDone(slot); // its buffer, free again with the completion, is read before anything takes one
            return ring.memory().get(ValueLayout.JAVA_LONG, at);
        } finally {
            transport.sendSide.unlock();
        }
    }

    /**
     * An atomic's word off an 8-byte boundary. The runtime lets through only offsets that are a
     * multiple of 8 ({@code RuntimeEndpoint.checkWord}), so the word is misaligned because the peer's
     * handle placed the region there, and no offset the application may pass fixes it: said so, in
     * the shared-memory transports' words ({@code ShmEndpoint.misalignedWord}), rather than asking for
     * another offset. An offset that is itself no multiple of 8 comes only from a caller that bypasses
     * the runtime, and is named as such.
     */
    private IllegalArgumentException misalignedWord(String op, RemoteRegion region, long offset, long remote) {
        long start = lastPayload.address() + region.chunkOffset();
        if ((start & 7) == 0) {
            return new IllegalArgumentException("verbs: " + op + " at offset " + offset + " of the peer's region: the offset is "
                    + "not a multiple of 8, so the word at 0x" + Long.toHexString(remote) + " is not aligned as the adapter's "
                    + "atomics need; use an offset that is a multiple of 8");
        }
        return new IllegalArgumentException("verbs: " + op + " at offset " + offset + " of the peer's region: the region starts at 0x"
                + Long.toHexString(start) + " (payload.address 0x" + Long.toHexString(lastPayload.address()) + " + chunk offset "
                + region.chunkOffset() + ", as its handle says), off an 8-byte boundary, so none of its words is aligned as the "
                + "adapter's atomics need. A Conduit pool places every region on a 64-byte boundary of a page-aligned chunk: this "
                + "handle was made otherwise, or altered; have the peer export a region of a pool for atomics (put and get need no "
                + "alignment)");
    }

    @Override
    public void flush() {
        transport.sendSide.lock();
        try {
            checkUsable();
            while (freeCount < slots) {
                waitStep();
            }
        } finally {
            transport.sendSide.unlock();
        }
    }

    /** The registered address of {@code offset} in {@code region}, checked, with its payload in {@link #lastPayload}. */
    private long remoteAddress(RemoteRegion region, long offset, long length, String op) {
        checkUsable();
        awaitConnected();
        if (region != lastRegion) {
            if (!VerbsPlugin.NAME.equals(region.pluginName())) {
                throw new NotSupportedException("verbs: " + op + " reaches regions of verbs memory only (a pool of plugin 'verbs', whose "
                        + "chunks are registered with the device); this region was exported by plugin '" + region.pluginName() + "'");
            }
            WireFormat.Region payload = WireFormat.Region.decode(region.payload());
            if (!Arrays.equals(payload.context(), peer.context())) {
                // Posted, its key would be looked up in the peer's protection domain: refused by the peer's adapter
                // (IBV_WC_REM_ACCESS_ERR), which fails this endpoint, or, should the peer hold such a key, applied to its memory.
                throw new IllegalArgumentException("verbs: " + op + " on a region exported by another process (or device context) "
                        + "than this endpoint's peer: its handle names device context " + HexFormat.of().formatHex(payload.context())
                        + ", the peer at " + peerName + " is context " + HexFormat.of().formatHex(peer.context()) + ", and RDMA "
                        + "reaches only the memory of the process at the connection's other end. Open the handle of the process this "
                        + "endpoint is connected to, or connect to the region's exporter and open the handle on that endpoint");
            }
            if (region.chunkOffset() < 0 || region.length() > payload.length() - region.chunkOffset()) {
                throw new InvalidHandleException(region.chunkOffset() < 0 || region.chunkOffset() > payload.length() ? "region.offset"
                        : "region.length", "the region (" + region.length() + " bytes at " + region.chunkOffset()
                        + ") does not fit the registered chunk of " + payload.length() + " bytes");
            }
            lastPayload = payload;
            lastRegion = region;
        }
        if (offset < 0 || length > region.length() - offset) {
            throw new IndexOutOfBoundsException(op + " of " + length + " bytes at offset " + offset + " of a region of " + region.length());
        }
        return lastPayload.address() + region.chunkOffset() + offset;
    }

    private void awaitConnected() {
        while (state == State.CONNECTING) {
            if (checkPeer(System.nanoTime()) == 0) {
                Thread.onSpinWait();
            }
        }
        checkUsable();
    }

    private int takeSlot() {
        while (freeCount == 0) {
            waitStep();
        }
        return freeSlots[--freeCount];
    }

    private void awaitDone(int slot) {
        while (!done[slot]) {
            waitStep();
        }
        checkUsable();
    }

    /** One step of waiting for this endpoint's own completions (no application code runs): fails on a dead peer. */
    private void waitStep() {
        if (transport.pollSendQueue() == 0) {
            checkPeer(System.nanoTime());
            Thread.onSpinWait();
        }
        checkUsable();
    }

    @Override
    public void close() {
        transport.sendSide.lock();
        try {
            close(true);
        } finally {
            transport.sendSide.unlock();
        }
    }

    /**
     * Closes the endpoint, with {@code drain} once the work requests of its send buffers completed
     * (at most {@code verbs.wireup.timeout}), by polling the send queue, which the caller holds
     * ({@link VerbsTransport#sendSide}). Without {@code drain} the worker's close found the send
     * queue held by another thread's call (Conduit.close() past its wait): then this close polls nothing and
     * touches no send buffer, which are that call's, and throws naming the work requests it did not
     * wait for, which the teardown may have cut short. That call may be this endpoint's own close,
     * still draining: the worker's close then tears the endpoint down itself, before the queues it is
     * on, and the drain stops and throws the transport's "closed" ({@link #released}).
     */
    void close(boolean drain) {
        boolean healthy;
        synchronized (transport.lifecycle) {
            if (released || drain && state == State.CLOSED) {
                return;
            }
            if (state != State.CLOSED) {
                connectedAtClose = state == State.CONNECTED;
                state = State.CLOSED;
            }
            healthy = connectedAtClose;
            if (!drain) {
                // Also an endpoint whose own close drains on the user's thread: torn down here, that drain cut short.
                tearDown(healthy, false, null);
                return;
            }
        }
        Throwable draining = null;
        try {
            if (healthy) {
                // Let what was sent reach the peer before the end of stream tells it to tear the connection down.
                long start = System.nanoTime();
                while (freeCount < slots && failure == null && !released && transport.withinWireupTimeout(start)) {
                    if (transport.pollSendQueue() == 0) {
                        Thread.onSpinWait();
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            // Whatever the drain threw (another connection's completion included), the connection is torn down.
            draining = e;
        }
        synchronized (transport.lifecycle) {
            if (released) {
                // The worker's close tore it down meanwhile, and names it: this close says what every call under way does.
                Throwable closedUnder = transport.failIfClosedUnder(draining);
                if (closedUnder instanceof Error e) {
                    throw e;
                }
                throw (RuntimeException) closedUnder;
            }
            tearDown(healthy, true, draining);
        }
    }

    /** Tears the endpoint down, under the transport's {@link VerbsTransport#lifecycle}, and throws what its close met. */
    private void tearDown(boolean healthy, boolean drained, Throwable draining) {
        released = true;
        transport.closed(this);
        // A queue pair that could not be destroyed may still complete its outstanding work into the send queue, sized for
        // the outbound limit: its slot is not handed to a new endpoint until a retry of the teardown destroyed it.
        Teardown teardown = release(transport, this, peer, wireup, creditWord, ring, qp, arena);
        int taken = slots - freeCount; // read after the teardown, which waited for a post under way and refuses later ones
        if (healthy && !drained && taken > 0) {
            draining = new ConduitException("verbs: closed the connection to " + peerName + " without waiting for its work requests "
                    + "in flight (" + taken + " of its send buffers taken): another thread's call on this worker held its send queue "
                    + "(the worker was closed under that call, as Conduit.close() does once its wait for the call ran out), so messages sent and puts made on it may not have reached the peer. "
                    + "Let calls on a worker return before its Conduit is closed");
        }
        switch (draining) {
            case null -> teardown.rethrow();
            case RuntimeException e -> throw teardown.suppressedInto(e);
            case Error e -> throw teardown.suppressedInto(e);
            default -> throw new AssertionError(draining);
        }
    }

    /** The credit word's memory, for tests that write it as a broken peer would. */
    MemorySegment creditWordMemory() {
        return creditWord.memory();
    }

    /** The send buffers free now, for tests of what a failed get gives back. */
    int freeSendBuffers() {
        return freeCount;
    }

    /** The wire-up socket, for tests of its options. */
    SocketChannel wireupSocket() {
        return wireup;
    }

    @Override
    public String toString() {
        return "VerbsEndpoint[" + peerName + ", " + state + "]";
    }
}
