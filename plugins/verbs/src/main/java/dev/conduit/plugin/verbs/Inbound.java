package dev.conduit.plugin.verbs;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The accepting side of a connection: a queue pair with {@code verbs.receive.buffers} registered
 * buffers posted, which delivers the connector's messages to the worker's sink, re-posts each
 * buffer once its message is delivered, and RDMA-writes the running count of re-posted buffers
 * into the connector's credit word.
 *
 * <p>A message cut into several records is reassembled by the connection's {@link Records.Reader}.
 *
 * <p>The connection is named to the sink by its {@linkplain #sender() sender key}, its inbound slot
 * and that slot's generation: unique among the transport's live inbound connections (each holds its
 * own slot), never 0 (inbound slots start at {@link VerbsTransport#MAX_CONNECTIONS}), and a new
 * connection in the same slot gets another generation. Every message it delivers carries the key,
 * {@link VerbsTransport#senderAddress} resolves it to the address the connector announced in its
 * wire-up request while the connection delivers, and the transport retires it with
 * {@link dev.conduit.spi.MessageSink#onSenderClosed} when the connection ends (not when the
 * transport closes).
 */
final class Inbound extends VerbsTransport.Connection {

    private final VerbsTransport transport;
    private final SocketChannel wireup;
    private final Verbs.QueuePair qp;
    private final Verbs.MemoryRegion receive;
    private final Verbs.MemoryRegion creditSource;
    private final long peerCreditAddress;
    private final int peerCreditKey;
    /** The connector's transport address, as its wire-up request announced it. */
    private final byte[] senderAddress;
    private final long sender;
    private final int bufferSize;
    private final Arena arena;
    private final int psn = VerbsTransport.newPsn();
    private final ByteBuffer probe = ByteBuffer.allocate(1);
    private long reposted;
    private long announced;
    private boolean creditInFlight;
    private boolean broken;
    /**
     * How many asynchronous events the device context had read when the wire-up thread handed the
     * connection over: written by that thread before the handoff, which publishes it. 0 until then,
     * which no event spares.
     */
    private long eventsReadBefore;
    private final Records.Reader records;

    private Inbound(VerbsTransport transport, SocketChannel wireup, Verbs.QueuePair qp, Verbs.MemoryRegion receive,
                    Verbs.MemoryRegion creditSource, WireFormat.Wireup request, Arena arena, int slot, int generation) {
        this.slot = slot;
        this.generation = generation;
        this.sender = senderKey(slot, generation);
        this.senderAddress = request.senderAddress();
        this.transport = transport;
        this.wireup = wireup;
        this.qp = qp;
        this.receive = receive;
        this.creditSource = creditSource;
        this.peerCreditAddress = request.creditAddress();
        this.peerCreditKey = request.creditKey();
        this.bufferSize = transport.bufferSize;
        this.arena = arena;
        this.records = new Records.Reader(transport.sink, transport.receiveBuffers, bufferSize, sender);
    }

    /** The key of the connection in inbound {@code slot} at {@code generation}: not 0, since inbound slots are not. */
    static long senderKey(int slot, int generation) {
        return (long) generation << 32 | slot;
    }

    /** The inbound slot a {@link #senderKey} names. */
    static int slotOf(long sender) {
        return (int) sender;
    }

    /** The slot generation a {@link #senderKey} names. */
    static int generationOf(long sender) {
        return (int) (sender >>> 32);
    }

    /** This connection's key, which every message it delivers carries. */
    long sender() {
        return sender;
    }

    /** The address the connector announced (a copy), which the transport's {@code connect} accepts. */
    byte[] senderAddress() {
        return senderAddress.clone();
    }

    /** Records that the context had read {@code eventsRead} events when the connection was handed over ({@link VerbsDomain#takeAsyncEventsThen}). */
    void handedOver(long eventsRead) {
        eventsReadBefore = eventsRead;
    }

    /**
     * Whether the event numbered {@code eventSequence} ({@link VerbsDomain.HeldEvent#sequence}) was read
     * before the connection was handed over: it is about the connections before this one.
     */
    boolean handedOverAfter(long eventSequence) {
        return eventSequence < eventsReadBefore;
    }

    /** Whether the connection still delivers: not broken down (it is then closed at the end of this progress). */
    boolean delivers() {
        return !broken && slot >= 0;
    }

    /**
     * Creates the queue pair for {@code request} on the transport's completion queues in inbound
     * {@code slot}, posts the receive buffers and moves it to RTS. Runs on the wire-up server's
     * thread; the transport takes the connection from there. When that fails, whatever was built
     * is torn down and {@code releaseSlot} run, unless the device may still write into it (a queue
     * pair or registration that could not be torn down): then the slot stays taken, as
     * {@link #close()} keeps it, and the transport runs the teardown again until it succeeds
     * ({@link VerbsTransport#keepFromWireup}).
     */
    static Inbound build(VerbsTransport transport, SocketChannel wireup, WireFormat.Wireup request, int slot, int generation,
                         Runnable releaseSlot) {
        VerbsDomain domain = transport.domain;
        Verbs.ProtectionDomain pd = domain.protectionDomain();
        Arena arena = null;
        Verbs.QueuePair qp = null;
        Verbs.MemoryRegion receive = null;
        Verbs.MemoryRegion credit = null;
        try {
            arena = Arena.ofShared();
            qp = pd.createQueuePair(transport.sendQueue, transport.receiveQueue, 2, transport.receiveBuffers);
            qp.toInit(domain.port(), domain.access());
            String less = "lower " + VerbsConfig.RECEIVE_BUFFERS.name() + " or " + VerbsConfig.BUFFER_SIZE.name()
                    + ": each accepted connection registers their product";
            receive = pd.register(VerbsTransport.allocate(arena, (long) transport.receiveBuffers * transport.bufferSize),
                    VerbsAbi.IBV_ACCESS_LOCAL_WRITE, less);
            credit = pd.register(VerbsTransport.allocate(arena, 64), VerbsAbi.IBV_ACCESS_LOCAL_WRITE, less);
            Inbound in = new Inbound(transport, wireup, qp, receive, credit, request, arena, slot, generation);
            for (int i = 0; i < transport.receiveBuffers; i++) {
                qp.postReceive(VerbsTransport.requestId(in, VerbsTransport.KIND_RECEIVE, i), receive, (long) i * transport.bufferSize,
                        transport.bufferSize);
            }
            qp.toReadyToReceive(transport.path(request), domain.port(), domain.gidIndex(), domain.responderDepth());
            qp.toReadyToSend(in.psn, domain.initiatorDepth(request.sender().responderDepth()));
            return in;
        } catch (RuntimeException | Error e) { // an Error too (out of memory for the buffers): nothing stays on the device
            // Completions of receives posted before the failure name a slot no connection holds with this generation: dropped.
            Teardown teardown = new Teardown("closing a connection that could not be built").queuePair(qp).region(credit).region(receive);
            if (arena != null) teardown.memory(arena);
            // What could not be torn down may still complete into the slot: it stays taken, as close() keeps it, until the
            // transport's retry of the teardown succeeded.
            if (teardown.deviceMayWrite()) {
                transport.keepFromWireup(teardown, slot);
            } else {
                releaseSlot.run();
            }
            teardown.suppressedInto(e);
            throw e;
        }
    }

    /** Sends the wire-up reply (this queue pair's number, PSN and port): once it is sent, the connector may use the connection. */
    void reply(WireFormat.Wireup request) throws IOException {
        VerbsDomain domain = transport.domain;
        byte[] reply = WireFormat.Wireup.reply(request.token(), qp.number(), psn, domain.lid(), domain.gid(), domain.activeMtu())
                .encode();
        ByteBuffer out = ByteBuffer.wrap(reply);
        long start = System.nanoTime();
        while (out.hasRemaining()) {
            wireup.write(out);
            if (out.hasRemaining()) {
                if (!transport.withinWireupTimeout(start)) {
                    throw new IOException("the connector does not read its wire-up reply");
                }
                Thread.onSpinWait();
            }
        }
    }

    @Override
    void onReceive(int index, int status, int byteLength) {
        if (broken) {
            return;
        }
        if (status != VerbsAbi.IBV_WC_SUCCESS) {
            // Flushed when the queue pair went to the error state: the peer is gone or broke the protocol.
            if (status != VerbsAbi.IBV_WC_WR_FLUSH_ERR) {
                transport.droppedByProtocol.log(() -> "verbs: receive failed on the inbound connection from " + describePeer() + ": "
                        + Completion.status(status));
            }
            breakDown();
            return;
        }
        MemorySegment m = receive.memory();
        long at = (long) index * bufferSize;
        try {
            records.read(m, at, byteLength);
        } catch (Records.ProtocolError e) {
            transport.droppedByProtocol.log(() -> "verbs: dropped the inbound connection from " + describePeer() + ", which broke the "
                    + "record protocol: " + e.getMessage());
            breakDown();
        } catch (RuntimeException e) {
            // This connection's state is unknown now; the other connections' completions in the same batch still need handling.
            transport.logger.log(System.Logger.Level.WARNING, "verbs: dropped an inbound connection whose record could not be "
                    + "handled: " + e, e);
            breakDown();
        }
        if (!broken && slot >= 0) { // not once the transport closed the connection
            try {
                qp.postReceive(VerbsTransport.requestId(this, VerbsTransport.KIND_RECEIVE, index), receive, at, bufferSize);
                reposted++;
            } catch (RuntimeException e) {
                // The connector's credits assume this buffer: without it the connection would stall, so it goes.
                transport.logger.log(System.Logger.Level.WARNING, "verbs: dropped an inbound connection whose receive buffer could "
                        + "not be posted again: " + e.getMessage());
                breakDown();
            }
        }
    }

    /** Tells the connector how many buffers are posted again, unless a previous word is still being written. */
    void announceCredits() {
        if (creditInFlight || reposted == announced || broken || slot < 0) {
            return;
        }
        creditSource.memory().set(Records.LONG, 0, reposted);
        try {
            qp.postSend(VerbsTransport.requestId(this, VerbsTransport.KIND_CREDIT, 0), VerbsAbi.IBV_WR_RDMA_WRITE, creditSource, 0, 8,
                    peerCreditAddress, peerCreditKey, 0, 0);
        } catch (RuntimeException e) {
            // Without its credits the connector stalls; and a throw here would stop every other inbound's credits and
            // the rest of progress() on every call. This connection goes alone.
            transport.logger.log(System.Logger.Level.WARNING, "verbs: dropped an inbound connection whose credits could not be "
                    + "written back: " + e.getMessage());
            breakDown();
            return;
        }
        creditInFlight = true;
        announced = reposted;
    }

    /**
     * Whether buffers posted again since the last announcement wait for the credit write in flight
     * to complete: they are announced by the next {@link #announceCredits()} after that completion,
     * which comes on the transport's send completion queue.
     */
    boolean awaitsCreditWrite() {
        return creditInFlight && reposted != announced && !broken && slot >= 0;
    }

    @Override
    void onSendCompletion(int kind, int index, int status, int vendorError) {
        creditInFlight = false;
        if (status != VerbsAbi.IBV_WC_SUCCESS && !broken) {
            if (status != VerbsAbi.IBV_WC_WR_FLUSH_ERR) {
                transport.logger.log(System.Logger.Level.DEBUG, () -> "verbs: credit write to a connector failed: "
                        + Completion.status(status) + " (vendor error " + vendorError + ")");
            }
            breakDown();
        }
    }

    /** Stops using the connection; the transport closes it (queue pair, buffers, wire-up socket) at the end of this progress. */
    void breakDown() {
        if (!broken) {
            broken = true;
            transport.drop(this);
        }
    }

    /** Whether the connector closed the wire-up connection or died (end of stream), or its host went silent (keepalive's ETIMEDOUT). */
    boolean peerGone() {
        try {
            probe.clear();
            int n = wireup.read(probe);
            if (n > 0) {
                // Nothing is sent after the handshake: data is a protocol breach, which ends the connection like a close.
                transport.droppedByProtocol.log(() -> "verbs: closed the inbound connection from " + describePeer()
                        + ": it sent bytes on its wire-up connection after the handshake, where the protocol has none (a protocol "
                        + "breach: a peer of another version, or not a Conduit verbs transport)");
            }
            return n != 0;
        } catch (IOException e) {
            return true;
        }
    }

    /** Its queue pair, which the device's asynchronous events name. */
    Verbs.QueuePair queuePair() {
        return qp;
    }

    String describePeer() {
        try {
            return String.valueOf(wireup.getRemoteAddress());
        } catch (IOException e) {
            return "a connector whose address is unknown (" + e.getMessage() + ")";
        }
    }

    /**
     * Closes the wire-up socket, the queue pair, the registrations and the buffers, each even when
     * an earlier one fails; buffers the device may still write into (a queue pair or registration
     * that could not be torn down) are kept, not freed, and the exception says so, until the
     * transport's retry of the teardown succeeded.
     */
    void close() {
        Teardown teardown = new Teardown("closing an inbound connection").socket(wireup).queuePair(qp).region(receive).region(creditSource)
                .other(records::close).memory(arena);
        // A queue pair that could not be destroyed still has receives posted, and its errors would still complete into the
        // shared receive queue, sized for the inbound limit: its slot is not handed to a new connection until a retry of the
        // teardown destroyed it.
        transport.unregister(this, teardown);
        teardown.rethrow();
    }

    /** The wire-up socket, for tests of its options. */
    SocketChannel wireupSocket() {
        return wireup;
    }
}
