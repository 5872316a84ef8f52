package dev.conduit.shm;

import dev.conduit.linux.ErrnoException;
import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.PeerFailedException.Reason;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.TransportEndpoint;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A connection from this worker to a peer worker's receive queue. Messages up to
 * {@code inline.max} are copied into the peer's queue; larger payloads are copied once into this
 * connection's {@link BounceRing} and read there by the peer. RMA works on the peer's exported
 * regions mapped here through the runtime's IPC cache: put and get are copies, atomics are the
 * CPU's, all coherent, so {@link #flush()} only orders.
 *
 * <h2>Large messages</h2>
 * A record claimed in the peer's queue and not yet committed stops the peer's head: every other
 * sender's messages behind it wait until it is committed ({@link ReceiveQueue}). A small message
 * is written into its record, under its claim, as it must be (zero copy; an encoder of an inline
 * payload runs there too, which is why encoders must be quick). A large one, whose payload may
 * take megabytes to copy or an application's encoder to write, is put into the bounce ring first:
 * the send reserves the ring's room, looks whether the peer's queue has room for the record
 * ({@link ReceiveQueue#hasRoomFor}: when it has none, the reservation is rolled back and nothing
 * is copied), copies or encodes the payload into the ring, and only then claims the record,
 * writes its fields and commits it; the claim is held for the record's 48 bytes and the header.
 * An encoder that throws leaves nothing in the queue, and its reservation is rolled back. When
 * other senders took the room between the look and the claim, a copied payload's reservation is
 * rolled back, and the send, refused, copies again when it is retried; an encoded one cannot be
 * (the encoder runs once per send, and a refused zero-copy send must not have called it), so it
 * is taken and held ({@link #hold}): posted before anything else this endpoint sends, by the next
 * send or the transport's progress, or by a close before its CLOSE. The ring's payloads stay in
 * the order of their records either way, for no reservation follows one not yet posted: the
 * receiver reads them in that order and releases the ring up to each record's bounce end.
 */
final class ShmEndpoint implements TransportEndpoint {

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int MAX_HEADER = 1024;
    private static final byte[] NO_BYTES = {};
    /** A peer that left none of this endpoint's messages unread: said, so that a failover knows there is nothing to send again. */
    private static final String READ_EVERY_MESSAGE = "; it had read every message sent on this endpoint";
    /** A dead peer's read position moves at the end of each message, so the count may hold the one it was handling. */
    private static final String OR_HANDLED_AS_IT_DIED = " (or being handled as it died)";
    /**
     * A peer judged hung is most often stalled inside a progress() call (a handler that blocks, a long
     * pause), whose read position moves only at its end: the count takes in what that call's handlers
     * took already.
     */
    private static final String OR_TAKEN_BY_THE_CALL_IT_STALLED_IN = " (counting those the progress() call it stalled in had taken "
            + "already, whose read position moves only at the call's end: those are not delivered again)";

    private final ShmTransport transport;
    private final ReceiveQueue peer;
    private final ChunkMapping peerMapping;
    /**
     * The watch of the peer's lease, shared with the connections the peer sends to this worker on
     * ({@link PeerLeases}): given back at the release, and closed by whichever of them leaves last.
     */
    private final LeaseWatch peerLease;
    private final EndpointEvents events;
    private final long connection;
    /** The largest header plus payload copied into the peer's queue: inline.max, within what its ring always has room for. */
    private final long inlineMaximum;
    private final long heartbeatTimeoutNanos;
    private boolean connectSent;
    private Chunk bounceChunk;
    private BounceRing bounce;
    private boolean bounceAnnounced;
    private PeerFailedException failure;
    private boolean closed;
    private long waitingSince;
    private long lastHeartbeat;
    /** Whether the last refused send waits for room in our bounce ring (not in the peer's queue). */
    private boolean waitingForRing;
    /** Whether a large message waits to be posted ({@link #hold}); the fields after it describe it. */
    private boolean holding;
    private int heldId;
    private int heldHeaderLength;
    private long heldPayloadLength;
    private long heldBounceOffset;
    /** The held message's header, copied (a heap segment, made once): the caller's buffer is its own again once the send returned. */
    private MemorySegment heldHeader;
    /** The peer's queue position just past our last LARGE record: once the peer has read past it, it has released every payload it will. */
    private long lastLargeEnd;
    /** The ring position just past this endpoint's last message (MSG or LARGE) in the peer's queue: what it read is judged by it. */
    private long lastMessageEnd;
    /** The peer's count of refused connections as this endpoint last looked for its own among them. */
    private long refusalsSeen;
    /** The peer's queue position just past our CONNECT record: once the peer has read past it, it kept or refused the connection. */
    private long connectEnd;
    /** When our CLOSE record was sent, else 0 (unsent). */
    private long closeSentAt;
    /** Whether this close is its worker's, which reports refusals once for all its endpoints. */
    private boolean closingWithWorker;
    /** Whether this close holds one of the places of closes waiting for the peer to read CONNECT. */
    private boolean inConnectWait;
    /**
     * Whether the ring, the mapping of the peer's queue and the watch of its lease are given back: by
     * a close, or when the peer is gone. Set holding {@link #closeSteps} and then the transport's
     * handOff, so that it may be read holding either.
     */
    private boolean released;
    /**
     * Held through each step of this endpoint's close ({@link #finishClose}), with the claim of the
     * release that completes it, and through every other claim of its release: the owner's thread and
     * a close of the worker forced from another thread may both come to finish it, and one at a time
     * each finds what the other did. Else both found CLOSE unsent and sent it, and a release could
     * unmap the peer's queue under the other's CLOSE, claimed there and not yet committed (which then
     * holds the peer's head until its unblock.timeout). Not held through the release's unmaps and
     * frees. Taken once per step of a close, never on the message path.
     */
    private final Object closeSteps = new Object();
    /** Whether the peer's lease was found free at a close or a liveness check: no receiver is left that knows this connection. */
    private boolean peerGone;

    ShmEndpoint(ShmTransport transport, ReceiveQueue peer, ChunkMapping peerMapping, LeaseWatch peerLease, EndpointEvents events,
                long connection) {
        this.transport = transport;
        this.peer = peer;
        this.peerMapping = peerMapping;
        this.peerLease = peerLease;
        this.events = events;
        this.connection = connection;
        // inline.max is this side's setting and the queue's size the peer's: a larger record may never
        // fit the peer's ring (ReceiveQueue#largestRecordThatAlwaysFits), so it goes through the bounce ring.
        // inline.max counts the header and the payload, as documented, not the record's own header.
        this.inlineMaximum = Math.min(transport.config().inlineMaximum(), peer.largestRecordThatAlwaysFits() - ReceiveQueue.RECORD_HEADER);
        this.heartbeatTimeoutNanos = transport.config().heartbeatTimeout().toNanos();
    }

    /** This connection's id ({@link OwnerLease#newConnectionId}): taken from this worker's ids until the endpoint is released. */
    long connection() {
        return connection;
    }

    @Override
    public int maxHeaderSize() {
        return MAX_HEADER;
    }

    @Override
    public long maxPayloadSize() {
        return transport.config().bounceCapacity();
    }

    @Override
    public String maxPayloadSizeRemedy() {
        return ShmTransportConfig.bounceSizeRemedy(transport.plugin());
    }

    @Override
    public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
        return trySend(id, header, 0, (int) header.byteSize(), payload, 0, payload.byteSize());
    }

    @Override
    public boolean trySend(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                           MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        try {
            return send(id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength);
        } catch (ApplicationFault e) {
            throw e.fault; // the application's, as it threw it: this endpoint and its peer are as they were
        } catch (InternalError e) {
            throw sendFault(e);
        } catch (ReceiveQueue.CorruptQueueException e) {
            throw corruptQueue(e);
        }
    }

    private boolean send(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                         MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        if (!ready()) return noQueueRoom();
        if (headerLength + payloadLength <= inlineMaximum) {
            int length = ReceiveQueue.recordLength(ReceiveQueue.RECORD_HEADER + headerLength + payloadLength);
            long offset = peer.claim(length, connection);
            if (offset < 0) return noQueueRoom();
            MemorySegment q = peer.memory();
            try {
                writeMessageFields(q, offset, id, headerLength, payloadLength);
                long body = offset + ReceiveQueue.RECORD_HEADER;
                if (headerLength != 0) MemorySegment.copy(headerBuffer, headerOffset, q, body, headerLength);
                if (payloadLength == Long.BYTES) {
                    // One word (a sequence number, a price, an id) as one load and one store, not MemorySegment.copy: the JDK's
                    // copy is one method for every size in the process, so once larger copies ran (a bounce ring's payload, the
                    // application's own) C2 compiles this call with its large-size path too, and the record's line, which the
                    // receiver spins on, stays taken longer between the claim and the commit: 8 B am_lat after a warm-up of
                    // every size, about 20 ns a hop more (docs/performance.md, "One word stored, not copied").
                    q.set(ValueLayout.JAVA_LONG_UNALIGNED, body + headerLength, payloadBuffer.get(ValueLayout.JAVA_LONG_UNALIGNED, payloadOffset));
                } else {
                    MemorySegment.copy(payloadBuffer, payloadOffset, q, body + headerLength, payloadLength);
                }
                deliverFaultsOfMappedFiles(headerBuffer, payloadBuffer);
            } catch (Throwable t) {
                abandon(offset, length, -1);
                if (t instanceof InternalError fault) throw applicationFault(fault, q, offset, length);
                throw t;
            }
            peer.commit(offset, length, ReceiveQueue.MSG);
            return sent();
        }
        if (!bounceReady()) return noQueueRoom();
        long before = bounce.position();
        long bounceOffset = bounce.reserve(payloadLength);
        if (bounceOffset < 0) return noRingRoom();
        int length = ReceiveQueue.recordLength(ReceiveQueue.RECORD_HEADER + headerLength);
        if (!peer.hasRoomFor(length)) {
            bounce.rollback(before);
            return noQueueRoom();
        }
        try {
            // Before the claim (see "Large messages" above): a claimed record stops the peer's head, and every sender's
            // messages behind it, until it is committed.
            MemorySegment.copy(payloadBuffer, payloadOffset, bounce.memory(), bounceOffset, payloadLength);
            // The ring may fault as well as the application's memory: one downcall per large message, whatever the source
            // (see deliverFaultsOfMappedFiles; PayloadFaultOverShmTest failed so once in CI, 2026-12-07).
            transport.libc().deliverPendingFaults();
        } catch (Throwable t) {
            bounce.rollback(before);
            if (t instanceof InternalError fault) throw applicationFault(fault, bounce.memory(), bounceOffset, payloadLength);
            throw t;
        }
        long offset = peer.claim(length, connection);
        if (offset < 0) {
            // Other senders took the room found above. The caller still has the payload and sends it again (the runtime
            // from its local queue), copying it again: that costs a copy per room lost between the look and the claim, and
            // never one per retry while the queue stays full (the look finds it full first).
            bounce.rollback(before);
            return noQueueRoom();
        }
        postLargeOfTheApplication(offset, length, id, headerBuffer, headerOffset, headerLength, payloadLength, bounceOffset, before);
        return sent();
    }

    /**
     * Undoes a send that failed after its claim (the caller's segment was closed or is confined to
     * another thread, or mapped memory faulted), a message's, a control record's (CONNECT, BOUNCE,
     * CLOSE: {@link #sendControl}) or a held large message's: its record becomes padding and its bounce
     * reservation ({@code bounceBefore}, or -1) is released, so that a claim never committed does
     * not block the peer's queue for every sender while this process lives. A fault of the peer's
     * queue itself leaves nothing to write: the receiver finds its queue broken anyway.
     */
    private void abandon(long offset, int length, long bounceBefore) {
        try {
            peer.abandon(offset, length);
            // The receiver may sleep on this record (ShmTransport#awaitBlockedHead), with committed ones behind it.
            peer.wakeIfSleeping(transport.libc());
        } catch (InternalError queueFault) {
            // The queue's mapping is gone: see above.
        }
        if (bounceBefore >= 0) bounce.rollback(bounceBefore);
    }

    /**
     * Makes a fault of a copy from {@code header} or {@code payload}, when either is a file mapped
     * by the JDK ({@link MemorySegment#isMapped}), come out here, inside the copy's {@code try}:
     * compiled code gets a {@code SIGBUS} at its next safepoint check, which may lie past the
     * record's commit, where the peer then reads a message of stale queue bytes and the fault,
     * caught as the send's own, fails the healthy endpoint as DAMAGED
     * ({@code PayloadFaultOverShmTest#aCompiledSendOfATruncatedMappingOfTheApplicationsDeliversNothingAndFailsNothing}).
     * The native call that does it costs 10 to 45 ns, a tenth of a small message's hop: a message
     * pays it only when it copies from such a file; other memory that may be truncated (a posix
     * region's, a file the application mapped through FFM) is not told apart and is not checked on
     * the inline path (docs/decisions.md, "Late faults of the application's memory").
     */
    private void deliverFaultsOfMappedFiles(MemorySegment header, MemorySegment payload) {
        if (header.isMapped() || payload.isMapped()) transport.libc().deliverPendingFaults();
    }

    /**
     * Like {@link #trySend}, but the encoder writes the payload where the peer reads it: a MSG
     * record claimed for {@code maxLength} payload bytes in the peer's queue (the record keeps that
     * length; its payload length field says how much was written), or, beyond {@code inline.max},
     * {@code maxLength} bytes reserved in the bounce ring. In the peer's queue the encoder gets a
     * view bounded to the record (40 B); in the bounce ring, the ranged call
     * ({@link PayloadEncoder#encode(MemorySegment, long, long)}) on the ring's payload bytes, so that
     * one which overrides it allocates nothing. An encoder that throws leaves an abandoned record
     * (padding to the receiver) and no bounce reservation.
     */
    @Override
    public long trySendEncoded(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        try {
            return sendEncoded(id, header, maxLength, encoder);
        } catch (ApplicationFault e) {
            throw e.fault; // the application's, as it threw it: this endpoint and its peer are as they were
        } catch (InternalError e) {
            throw sendFault(e);
        } catch (ReceiveQueue.CorruptQueueException e) {
            throw corruptQueue(e);
        }
    }

    /**
     * A fault ({@code SIGBUS}, which the JDK throws as an {@link InternalError}) that a send met in
     * memory of the application's own (a mapped file of its own, truncated): the payload or header
     * it copies, or what its encoder reads. Carried past {@link #trySend}'s and
     * {@link #trySendEncoded}'s reading of every other such fault as one of this send's mappings
     * ({@link #applicationFault}): until 2026-12-07 it failed the healthy endpoint as damaged, an
     * encoder's above 1 KiB (below, the runtime encodes into its own buffer), a copied segment's at
     * any size.
     */
    private static final class ApplicationFault extends RuntimeException {
        final InternalError fault;

        ApplicationFault(InternalError fault) {
            super(null, null, false, false);
            this.fault = fault;
        }
    }

    /**
     * {@code fault}, met by a send that writes {@code length} bytes of {@code target} from
     * {@code offset} (a record in the peer's queue, a payload in this connection's bounce ring),
     * as the application's ({@link ApplicationFault}) when that range is still backed, or as it
     * is, a fault of this send's mappings, when not: a file is truncated from its end, so the
     * range's last byte tells (the peer's queue or the bounce ring cut short fails the endpoint as
     * damaged, as before). Called once the send is undone, and only after a fault: the message
     * path pays nothing for it.
     */
    private RuntimeException applicationFault(InternalError fault, MemorySegment target, long offset, long length) {
        if (length > 0) {
            try {
                target.get(ValueLayout.JAVA_BYTE, offset + length - 1);
                // Compiled code gets the read's fault at its next safepoint check, which may lie past this block: the range
                // would pass for backed, and its fault come out of the caller unjudged.
                transport.libc().deliverPendingFaults();
            } catch (InternalError ours) {
                fault.addSuppressed(ours);
                throw fault;
            }
        }
        return new ApplicationFault(fault);
    }

    private long sendEncoded(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        if (!ready()) return noRoomEncoded();
        long headerLength = header.byteSize();
        MemorySegment q = peer.memory();
        if (headerLength + maxLength <= inlineMaximum) {
            int length = ReceiveQueue.recordLength(ReceiveQueue.RECORD_HEADER + headerLength + maxLength);
            long offset = peer.claim(length, connection);
            if (offset < 0) return noRoomEncoded();
            long body = offset + ReceiveQueue.RECORD_HEADER;
            long written;
            try {
                // A view bounded to the record, never the ring: every sender writes the ring and the receiver parses it, so one
                // stray write past the range could forge a record there and stall the receiver for every sender.
                written = PayloadEncoder.checkWritten(encoder.encode(q.asSlice(body + headerLength, maxLength)), maxLength);
                writeMessageFields(q, offset, id, (int) headerLength, written);
                MemorySegment.copy(header, 0, q, body, headerLength);
                deliverFaultsOfMappedFiles(header, MemorySegment.NULL);
            } catch (Throwable t) {
                abandon(offset, length, -1);
                if (t instanceof InternalError fault) throw applicationFault(fault, q, offset, length);
                throw t;
            }
            peer.commit(offset, length, ReceiveQueue.MSG);
            sent();
            return written;
        }
        if (!bounceReady()) return noRoomEncoded();
        long before = bounce.position();
        long bounceOffset = bounce.reserve(maxLength);
        if (bounceOffset < 0) {
            noRingRoom();
            return -1;
        }
        int length = ReceiveQueue.recordLength(ReceiveQueue.RECORD_HEADER + headerLength);
        if (!peer.hasRoomFor(length)) {
            bounce.rollback(before); // the encoder not called: the runtime has it encode into a buffer of its own
            return noRoomEncoded();
        }
        long written;
        try {
            // Before the claim (see "Large messages" above): the encoder is the application's, and may take its time.
            written = PayloadEncoder.checkWritten(
                    // This connection's ring of payload bytes, which no other sender writes and the receiver does not parse: a
                    // stray write can only change this connection's own payloads.
                    encoder.encode(bounce.ring(), bounceOffset - BounceRing.HEADER_LENGTH, maxLength), maxLength);
            transport.libc().deliverPendingFaults(); // what the encoder read or wrote may fault: see deliverFaultsOfMappedFiles
        } catch (Throwable t) {
            bounce.rollback(before);
            if (t instanceof InternalError fault) throw applicationFault(fault, bounce.memory(), bounceOffset, maxLength);
            throw t;
        }
        long offset = peer.claim(length, connection);
        if (offset < 0) {
            // Other senders took the room found above, and the encoder, which runs once per send, has run: the message is
            // taken, held here and posted before anything else this endpoint sends (see "Large messages" above).
            hold(id, header, written, bounceOffset, before);
            return written;
        }
        postLargeOfTheApplication(offset, length, id, header, 0, (int) headerLength, written, bounceOffset, before);
        sent();
        return written;
    }

    /**
     * Writes the LARGE record claimed at {@code offset}, whose payload, of this endpoint's last
     * reservation, is in the ring, and commits it. A write that fails (the caller's header closed or
     * another thread's, the peer's queue truncated) abandons the record and releases the ring back to
     * {@code bounceBefore}, or nothing at -1 ({@link #abandon}).
     */
    private void postLarge(long offset, int length, int id, MemorySegment header, long headerOffset, int headerLength,
                           long payloadLength, long bounceOffset, long bounceBefore) {
        MemorySegment q = peer.memory();
        try {
            writeMessageFields(q, offset, id, headerLength, payloadLength);
            writeBounceFields(q, offset, bounce.position(), bounceOffset);
            MemorySegment.copy(header, headerOffset, q, offset + ReceiveQueue.RECORD_HEADER, headerLength);
            deliverFaultsOfMappedFiles(header, MemorySegment.NULL);
        } catch (Throwable t) {
            abandon(offset, length, bounceBefore);
            throw t;
        }
        peer.commit(offset, length, ReceiveQueue.LARGE);
        lastLargeEnd = peer.claimedUpTo();
    }

    /**
     * {@link #postLarge} of a header of the application's, which a fault may be of
     * ({@link #applicationFault}); a held message's header is this endpoint's copy
     * ({@link #postHeld}), whose record's fault is always the queue's.
     */
    private void postLargeOfTheApplication(long offset, int length, int id, MemorySegment header, long headerOffset, int headerLength,
                                           long payloadLength, long bounceOffset, long bounceBefore) {
        try {
            postLarge(offset, length, id, header, headerOffset, headerLength, payloadLength, bounceOffset, bounceBefore);
        } catch (InternalError fault) {
            throw applicationFault(fault, peer.memory(), offset, length);
        }
    }

    /**
     * Keeps a large message whose payload is encoded in the bounce ring but whose record found no
     * room in the peer's queue, to post it before anything else this endpoint sends
     * ({@link #postHeld}); the transport posts it too as it progresses, and a close before it goes.
     * No reservation follows it in the ring while it is held: the ring's payloads stay in the
     * order of their records, as the receiver's releases need.
     */
    private void hold(int id, MemorySegment header, long payloadLength, long bounceOffset, long bounceBefore) {
        int headerLength = (int) header.byteSize();
        // Once per endpoint, on this path only: sends allocate nothing.
        if (heldHeader == null || heldHeader.byteSize() < headerLength) heldHeader = MemorySegment.ofArray(new byte[Math.max(MAX_HEADER, headerLength)]);
        try {
            MemorySegment.copy(header, 0, heldHeader, 0, headerLength);
            deliverFaultsOfMappedFiles(header, MemorySegment.NULL);
        } catch (Throwable t) {
            // The caller's header is closed, another thread's or a mapping of its own that faulted: nothing is sent, as at a claim.
            bounce.rollback(bounceBefore);
            if (t instanceof InternalError fault) throw applicationFault(fault, heldHeader, 0, headerLength);
            throw t;
        }
        synchronized (closeSteps) { // as postHeld reads them: a close forced from another thread may post the message
            heldId = id;
            heldHeaderLength = headerLength;
            heldPayloadLength = payloadLength;
            heldBounceOffset = bounceOffset;
            holding = true;
        }
        transport.holding(this);
        // A peer that makes no progress while this waits is judged hung, as for any send that waits on its queue.
        noQueueRoom();
    }

    /**
     * Posts the held large message's record ({@link #hold}) if the peer's queue has room now.
     * Holding {@link #closeSteps}: a close of the worker forced from another thread posts it too
     * ({@link #awaitsHeldPost}), and two posts would deliver it twice. Taken only while a message
     * is held, never on the message path.
     *
     * @return whether nothing is held any more (posted, or released meanwhile with the endpoint)
     */
    private boolean postHeld() {
        synchronized (closeSteps) {
            if (!holding || released) return true;
            int length = ReceiveQueue.recordLength(ReceiveQueue.RECORD_HEADER + heldHeaderLength);
            long offset = peer.claim(length, connection);
            if (offset < 0) {
                noQueueRoom();
                return false;
            }
            // A fault keeps the ring's room: the endpoint fails (sendFault), and its ring serves nothing more.
            postLarge(offset, length, heldId, heldHeader, 0, heldHeaderLength, heldPayloadLength, heldBounceOffset, -1);
            holding = false;
            transport.heldPosted(this);
        }
        sent();
        return true;
    }

    /**
     * The transport's post of the held large message, as it progresses: an endpoint that sends
     * nothing more would hold it for ever. Nothing more is tried once the endpoint failed (the
     * failure counted the message among those the peer never read) or was released.
     *
     * @return whether the endpoint holds nothing more to post
     */
    boolean postHeldAsTheTransportProgresses() {
        if (!holding || failure != null) return true;
        try {
            return postHeld();
        } catch (InternalError e) {
            sendFault(e);
            return true;
        } catch (ReceiveQueue.CorruptQueueException e) {
            corruptQueue(e);
            return true;
        }
    }

    /**
     * A send touched mapped memory of its own that is gone (a posix file truncated under it): this
     * endpoint fails. A fault of the application's own segments is not one ({@link #applicationFault}).
     */
    private PeerFailedException sendFault(InternalError e) {
        fail(Reason.DAMAGED, MappedMemoryFaults.describe(e, transport.plugin(), "mapped memory this send touched (the peer's receive queue "
                + "or this connection's bounce ring)"), e);
        return failure;
    }

    /** The peer's queue cannot be written as the protocol says any more: this endpoint fails. */
    private PeerFailedException corruptQueue(ReceiveQueue.CorruptQueueException e) {
        fail(Reason.DAMAGED, transport.plugin() + ": the peer's " + e.getMessage() + "; nothing more can be sent to it", e);
        return failure;
    }

    /** Checks the endpoint is usable and that the peer was told who connects; false when its queue had no room for that. */
    private boolean ready() {
        if (failure != null) throw failure;
        if (closed) throw new IllegalStateException("endpoint is closed");
        if (!connectSent) {
            if (!sendControl(ReceiveQueue.CONNECT, transport.connectPayload())) return false;
            connectSent = true;
            connectEnd = peer.claimedUpTo();
        }
        // A held large message goes first: what follows it is sent after it, in order.
        return !holding || postHeld();
    }

    /** Creates the bounce ring and announces it to the peer once; false when the peer's queue had no room for that. */
    private boolean bounceReady() {
        if (!bounceAnnounced) {
            if (bounce == null) createBounce();
            byte[] export = transport.provider().export(bounceChunk);
            if (export.length > ShmTransport.BOUNCE_EXPORT_MAX) {
                // The peer would refuse the announcement, and this endpoint learn it only at its next large message, unsaid why.
                // For good: the endpoint fails, so that the runtime neither retries the message from its backlog for ever nor
                // sends what follows it.
                fail(Reason.UNKNOWN, transport.plugin() + ": the memory provider exported the bounce ring in " + export.length + " bytes, more than the "
                        + ShmTransport.BOUNCE_EXPORT_MAX + " MemoryProvider#export allows: a bug of the provider, which no large message "
                        + "can get past");
                throw failure;
            }
            byte[] announcement = new PayloadWriter().u16(export.length).bytes(export).u64(bounceChunk.segment().byteSize()).toByteArray();
            if (!sendControl(ReceiveQueue.BOUNCE, announcement)) return false;
            bounceAnnounced = true;
        }
        return true;
    }

    private long noRoomEncoded() {
        noQueueRoom();
        return -1;
    }

    private void createBounce() {
        Chunk chunk;
        try {
            chunk = transport.provider().allocate(BounceRing.mappedLength(transport.config().bounceCapacity()));
        } catch (ConduitException e) {
            // The provider names the directory and its space; only this says what the chunk is for and which key sizes it.
            throw cannotCreateBounce(e.getMessage(), e);
        }
        try {
            bounce = BounceRing.format(chunk.segment());
            // Formatting is the first touch of the ring's pages: on a full tmpfs (another process took the space the provider
            // found free) or a file truncated under it, that faults, and compiled code gets the fault later.
            transport.libc().deliverPendingFaults();
            synchronized (transport.handOff) {
                // Released meanwhile by its worker's close, forced from another thread: that release freed no ring, so this
                // one is freed below (if the worker's close has freed the provider already, which frees every chunk, the
                // provider refuses or ignores the free) and the send fails as after any close.
                if (!released) {
                    bounceChunk = chunk;
                    return;
                }
            }
            throw transport.closedError();
        } catch (RuntimeException | InternalError e) {
            bounce = null;
            try {
                transport.provider().free(chunk); // else its file stayed in the shared directory until the worker closed
            } catch (RuntimeException freeing) {
                e.addSuppressed(freeing);
            }
            if (!(e instanceof InternalError fault)) throw e;
            // Not the peer's fault nor this send's: the endpoint stays usable (small messages, a later large one), as when
            // the provider finds no room; thrown on as the InternalError, trySend took it for a send's fault and failed it.
            throw cannotCreateBounce(MappedMemoryFaults.describe(fault, transport.plugin(), "its new bounce ring"), fault);
        }
    }

    private ConduitException cannotCreateBounce(String why, Throwable cause) {
        return new ConduitException(transport.plugin() + ": cannot create this connection's bounce ring, which a message larger than "
                + transport.plugin() + ".inline.max needs (" + transport.plugin() + ".bounce.size, " + transport.config().bounceCapacity()
                + " bytes, also the largest payload): " + why, cause);
    }

    /**
     * Writes a claimed record's message fields: the claim wrote its length, type and connection,
     * and every other field is zero until written (ReceiveQueue#claim), so a record writes only what
     * it uses, in as few stores as it can: they are on the path of every message.
     */
    private static void writeMessageFields(MemorySegment q, long offset, int id, int headerLength, long payloadLength) {
        q.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.MESSAGE_ID, ReceiveQueue.twoInts(id, headerLength));
        q.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.PAYLOAD_SIZE, payloadLength);
    }

    /** Writes where a LARGE record's payload is in this connection's bounce ring, and where the ring stands after it. */
    private static void writeBounceFields(MemorySegment q, long offset, long bounceEnd, long bounceOffset) {
        q.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.BOUNCE_END, bounceEnd);
        q.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.BOUNCE_OFFSET, bounceOffset);
    }

    private boolean sendControl(int type, byte[] payload) {
        int length = ReceiveQueue.recordLength(ReceiveQueue.RECORD_HEADER + payload.length);
        long offset = peer.claim(length, connection);
        if (offset < 0) return false;
        MemorySegment q = peer.memory();
        try {
            writeMessageFields(q, offset, 0, 0, payload.length);
            MemorySegment.copy(payload, 0, q, ValueLayout.JAVA_BYTE, offset + ReceiveQueue.RECORD_HEADER, payload.length);
        } catch (Throwable t) {
            abandon(offset, length, -1); // as a send's: taken and never committed, it held the peer's queue while this process lived
            throw t;
        }
        peer.commit(offset, length, type);
        peer.wakeIfSleeping(transport.libc());
        return true;
    }

    private boolean sent() {
        lastMessageEnd = peer.claimedUpTo();
        waitingSince = 0;
        waitingForRing = false;
        peer.wakeIfSleeping(transport.libc());
        return true;
    }

    /** No room in our bounce ring: the peer has not released enough of it yet. */
    private boolean noRingRoom() {
        waitingForRing = true;
        return waiting();
    }

    /**
     * No room in the peer's queue (for a record, a large message's included, or a control record):
     * a liveness check that judges the peer hung names the queue, not the ring a send before may
     * have waited for, and does not look for a ring the peer read past without releasing it
     * ({@link #ringRefused}): the room that ring lacked may be back, or held by a large message
     * that waits for the queue ({@link #hold}).
     */
    private boolean noQueueRoom() {
        waitingForRing = false;
        return waiting();
    }

    /** A send refused for room: from the first of a run, the peer that makes no progress for heartbeat.timeout is hung. */
    private boolean waiting() {
        if (waitingSince == 0) {
            waitingSince = System.nanoTime();
            lastHeartbeat = peer.heartbeat();
        }
        return false;
    }

    /**
     * Whether the peer, which a send of this endpoint waits on, has read every record of its queue
     * and, for a send that waits for room in the bounce ring, released every payload there: a peer
     * so drained that makes no progress is idle, not hung, and a send tried again finds the room.
     * One that keeps payloads ({@code keepDelivered}) beats while it sleeps, and one stopped while
     * it keeps them still holds the ring.
     */
    private boolean peerHoldsNothingBack() {
        return peer.readToTheTail() && (!waitingForRing || bounce.drained());
    }

    /**
     * How far the peer, whose lease is free, got in closing its worker: 2, closed (an orderly close
     * marks its queue so before it releases the lease); 1, it began and died during the close; 0,
     * it died. An application's failover tells an orderly restart from a crash by it.
     */
    private int peerClose() {
        try {
            return peer.isClosed() ? 2 : peer.isDamaged() ? 3 : peer.isClosing() ? 1 : 0;
        } catch (InternalError truncated) {
            return 0; // its queue file was cut short: not what a close does
        }
    }

    /**
     * Checks the peer: dead (its lease is free), refusing this connection (listed among its
     * queue's refused connections), or hung (no progress for {@code heartbeat.timeout} while this
     * endpoint waits on it). Reports a failure once. A peer found gone is reported, and what only
     * it could use (the mapping of its queue, unmapped on the transport's mapping thread, the
     * watch of its lease, this connection's bounce ring) is released at the next check: the
     * runtime calls the error handler once the check returns, and releasing first kept it waiting
     * (ShmTransport#checkPeers).
     *
     * @return whether the peer failed now
     */
    boolean checkPeer(long now) {
        try {
            return checkPeerOnce(now);
        } catch (IllegalStateException gone) {
            // Released under this check by a close of the worker forced from another thread (the check walks a copy of the
            // endpoints, unlocked): the close unmapped the peer's queue and gave back its share of the watch of its lease.
            // Nothing to check; the check's walk of the connections then says the transport is closed.
            if (!releasedMeanwhile()) throw gone;
            return false;
        }
    }

    /**
     * Whether the peer's lease is held at the check of {@code now}, for a live endpoint and a failed
     * one alike. A look that fails ({@code flock}: {@code ENOLCK}) proves no death: the peer is taken
     * as alive, said at most once a minute, and the check goes on. Thrown, it left the transport's
     * walk of its endpoints, so that those after this one were not checked, and no dead peer's files
     * reclaimed, at every check while it lasted.
     */
    private boolean peerAliveAtCheck(long now) {
        try {
            return peerLease.ownerAliveAtCheck(now);
        } catch (RuntimeException e) {
            if (e instanceof IllegalStateException && releasedMeanwhile()) throw e; // not a failed look: see checkPeer
            transport.failedEndpointLeaseChecks.log(() -> transport.plugin() + ": could not check whether the peer of a connection lives "
                    + "(its lease " + peerLease.name() + "); it is taken as alive until a look succeeds: " + e.getMessage(), e);
            return true;
        }
    }

    private boolean checkPeerOnce(long now) {
        if (closed || released) return false;
        if (failure != null) {
            // Failed at an earlier check: its peer found gone then, or failed while the peer lived (refused, judged hung, its
            // queue damaged or faulted). Once the peer is gone, what only it could use goes, or an endpoint dropped unclosed
            // kept it for good.
            if (!peerAliveAtCheck(now)) releaseForAPeerThatIsGone();
            return false;
        }
        if (!peerAliveAtCheck(now)) { // the check's one flock of this lease, which its connections to this worker share
            int how = peerClose();
            fail(how == 2 ? Reason.CLOSED : Reason.DIED, transport.plugin() + ": " + switch (how) {
                case 2 -> "peer worker closed (an orderly close: it marked its queue closed, then released its lease " + peerLease.name() + ")";
                case 1 -> "peer worker died while closing (it began to close, then its lease " + peerLease.name() + " was released before "
                        + "the close was done: killed during its close, which waits up to heartbeat.timeout for peers to read its large "
                        + "messages)";
                case 3 -> "peer worker died after finding its receive queue's header overwritten (its lease " + peerLease.name()
                        + " is no longer held)";
                default -> "peer worker died (its lease " + peerLease.name() + " is no longer held)";
            } + unread(how == 0) + (how == 2 ? "" : transport.underAnotherKernel(ShmTransport.LEASE_UNDER_ANOTHER_KERNEL)));
            return true; // released at the next check (above)
        }
        try {
            long refusals = peer.refusals();
            if (refusals != refusalsSeen) {
                refusalsSeen = refusals;
                int reason = peer.refusalOf(connection);
                if (reason != 0) {
                    fail(Reason.REFUSED, transport.plugin() + ": the peer worker refused this connection, and drops what it sends: "
                            + ShmTransport.refusal(transport.plugin(), reason));
                    return true;
                }
            }
            if (peer.isDamaged()) {
                fail(Reason.DAMAGED, transport.plugin() + ": the peer worker reads nothing more: it found its receive queue's header overwritten by "
                        + "a process that maps the queue (its progress() says what changed)");
                return true;
            }
            if (waitingForRing && ringRefused()) {
                fail(Reason.REFUSED, transport.plugin() + ": the peer worker read this connection's large messages without releasing them from its "
                        + "bounce ring, so a large message waits for room there forever: the peer cannot map the ring, or "
                        + "refused this connection (its progress() says why; " + transport.plugin() + ".inbound.max and "
                        + transport.plugin() + ".inbound.bounce.max are its limits)");
                return true;
            }
            if (waitingSince != 0) {
                long beat = peer.heartbeat();
                if (beat != lastHeartbeat) {
                    lastHeartbeat = beat;
                    waitingSince = now;
                } else if (peerHoldsNothingBack()) {
                    // Drained and asleep, beating no more: the refused message was never tried again (the runtime's encoder
                    // threw in its own buffer after the refusal), so nothing waits on the peer. Until 2026-12-07 the wait ran
                    // on, and the idle peer failed as hung a heartbeat.timeout later
                    // (ShmTransportTest#aReceiverThatReadItsWholeQueueAndSleepsIsNotJudgedHungByASenderItOnceRefusedRoom).
                    waitingSince = 0;
                } else if (now - waitingSince > heartbeatTimeoutNanos) {
                    String key = transport.plugin() + ".heartbeat.timeout";
                    fail(Reason.HUNG, transport.plugin() + ": peer worker is hung: " + (waitingForRing ? "this connection's bounce ring" : "its queue")
                            + " stayed full and it made no progress for "
                            + (now - waitingSince) / 1_000_000 + " ms (" + key + ")" + unreadWhileHung()
                            + "; raise " + key + " for a peer that is only slow or paused, or connect to it again once it progresses"
                            + transport.underAnotherKernel("If the peer runs under another kernel, it may be alive and never see "
                                    + "what this worker writes"));
                    return true;
                }
            }
        } catch (InternalError e) {
            fail(Reason.DAMAGED, MappedMemoryFaults.describe(e, transport.plugin(), "the peer's receive queue or this connection's bounce ring"), e);
            return true;
        }
        return false;
    }

    /**
     * Nothing here serves anyone any more once the peer's worker is gone: the ring (a file of
     * bounce.size, for posix in the shared directory) and the peer's queue, whose pages this mapping
     * alone would keep. An application that drops the failed endpoint unclosed, as one that
     * reconnects to the peer's successor may, kept them for good.
     */
    private void releaseForAPeerThatIsGone() {
        peerGone = true;
        try {
            release();
        } catch (RuntimeException e) {
            BestEffortLog.warn(transport.logger(), () -> transport.plugin() + ": could not release a connection to a peer "
                    + "that is gone: " + e.getMessage(), e);
        }
    }

    /**
     * What the peer, which reads nothing more, left unread of this endpoint's messages: the
     * transport took them (a send learns of a close or a death only at the next liveness check),
     * and they are lost with the peer, always the last ones sent. Said either way, so that a
     * failover knows how many to send again to the peer's successor. A worker that began to close
     * (or found its queue's header overwritten) reads nothing from then on, so the count is exact;
     * one that died in the middle of a progress() may have been handling some of them, for its read
     * position moves at the end of each.
     */
    private String unread(boolean diedReading) {
        long unread;
        int refused;
        try {
            unread = unreadMessages();
            refused = connectSent ? peer.refusalOf(connection) : 0;
        } catch (InternalError truncated) {
            return ""; // its queue file was cut short: nothing can be read there
        }
        String lost = unread == 0 ? "" : "; " + theLast(unread, "this endpoint", "was", "were") + " never read by it"
                + (diedReading ? OR_HANDLED_AS_IT_DIED : "") + ": lost with it, to be sent again to its successor";
        if (refused != 0) {
            // Its read position passed what it dropped: "read every message" would tell a failover that nothing was lost.
            return "; it had refused this connection, and dropped what was sent on it from its refusal on: "
                    + ShmTransport.refusal(transport.plugin(), refused) + lost;
        }
        return unread == 0 ? READ_EVERY_MESSAGE : lost;
    }

    /**
     * What a hung peer's queue still holds of this endpoint: it lives, so it delivers that if it
     * resumes, and loses it if it dies. A failover must know both ways: sent again after a resume it
     * arrives twice, not sent again after a death it is lost. Counted as the peer left it; one that
     * resumes during the count has read some of them already.
     */
    private String unreadWhileHung() {
        long unread;
        try {
            unread = peer.unreadMessagesOf(connection, lastMessageEnd);
        } catch (InternalError truncated) {
            return ""; // its queue file was cut short: nothing can be read there
        }
        if (holding) {
            // The failure ends its posting (postHeldAsTheTransportProgresses): it never reaches the queue, resumed or not.
            String held = "; the last message sent on this endpoint, a large one whose record never found room in its queue, is lost";
            return unread == 0 ? held : held + ", and " + (unread == 1 ? "the one" : "the " + unread) + " before it "
                    + (unread == 1 ? "is" : "are") + " unread in its queue" + OR_TAKEN_BY_THE_CALL_IT_STALLED_IN
                    + ": delivered if it resumes, lost if it dies" + unreadLargeWithoutItsRing();
        }
        if (unread == 0) return READ_EVERY_MESSAGE;
        return "; " + theLast(unread, "this endpoint", "is", "are") + " unread in its queue" + OR_TAKEN_BY_THE_CALL_IT_STALLED_IN
                + ": delivered if it resumes, lost if it dies" + unreadLargeWithoutItsRing();
    }

    /**
     * What a hung peer that resumes may still drop of the unread messages {@link #unreadWhileHung}
     * counts: the close of a failed endpoint (the runtime's, as it reports the failure) does not
     * wait for the peer to read its ring ({@link #awaitsDrain}) and frees it, and a peer that had
     * not mapped it yet (the connection's first large message is among them) cannot, so it refuses
     * the connection there. A peer that mapped it keeps its mapping, and delivers them.
     */
    private String unreadLargeWithoutItsRing() {
        if (bounce == null || peerReadPastLastLarge() || bounce.receiverHandledAny()) return "";
        return "; but the first large one among them and every one after it may be dropped even if it resumes: it has not mapped "
                + "this connection's bounce ring yet, and this endpoint's close (the runtime's, as it reports this failure) frees the "
                + "ring without waiting for it, so that it refuses the connection there";
    }

    /**
     * This endpoint's messages the peer has not read: those in its queue past its read position,
     * and the large message this endpoint holds ({@link #hold}), the last one sent, which never got
     * into the queue.
     */
    private long unreadMessages() {
        return peer.unreadMessagesOf(connection, lastMessageEnd) + (holding ? 1 : 0);
    }

    /**
     * "the last message sent on {@code on} was", or "the last N messages ... were": how every count
     * of a peer's unread messages begins, so that a failover reads one phrase for it.
     */
    private static String theLast(long count, String on, String singularVerb, String pluralVerb) {
        return count == 1 ? "the last message sent on " + on + " " + singularVerb
                : "the last " + count + " messages sent on " + on + " " + pluralVerb;
    }

    private void fail(Reason reason, String message) {
        fail(reason, message, null);
    }

    private void fail(Reason reason, String message, Throwable cause) {
        failure = new PeerFailedException(reason, message, cause);
        events.peerFailed(failure);
    }

    @Override
    public void put(MemorySegment source, RemoteRegion target, long offset) {
        MemorySegment segment = local(target);
        try {
            MemorySegment.copy(source, 0, segment, offset, source.byteSize());
            faultsHere(target);
        } catch (InternalError e) {
            throw regionFault(e, target);
        }
    }

    @Override
    public void get(RemoteRegion source, long offset, MemorySegment destination) {
        MemorySegment segment = local(source);
        try {
            MemorySegment.copy(segment, offset, destination, 0, destination.byteSize());
            faultsHere(source);
        } catch (InternalError e) {
            throw regionFault(e, source);
        }
    }

    @Override
    public long fetchAdd(RemoteRegion target, long offset, long delta) {
        MemorySegment segment = local(target);
        try {
            long previous = (long) LONG.getAndAdd(segment, offset, delta);
            faultsHere(target);
            return previous;
        } catch (InternalError e) {
            throw regionFault(e, target);
        } catch (IllegalArgumentException e) {
            throw misalignedWord(e, "fetchAdd", target, segment, offset);
        }
    }

    @Override
    public long compareAndSwap(RemoteRegion target, long offset, long expected, long desired) {
        MemorySegment segment = local(target);
        try {
            // An interpreted CAS on a truncated mapping crashes the JVM; this read faults first (MappedMemoryFaults).
            LONG.getOpaque(segment, offset);
            long witness = (long) LONG.compareAndExchange(segment, offset, expected, desired);
            faultsHere(target);
            return witness;
        } catch (InternalError e) {
            throw regionFault(e, target);
        } catch (IllegalArgumentException e) {
            throw misalignedWord(e, "compareAndSwap", target, segment, offset);
        }
    }

    /**
     * An atomic's word that is no aligned word of this process although its offset in the region
     * is a multiple of 8 (the runtime checks that): the peer's handle placed the region off an
     * 8-byte boundary of its chunk. Said so, rather than with the JDK's message, which blames that
     * offset. Judged only once the access refused it: nothing on the path of an atomic that works.
     */
    private static IllegalArgumentException misalignedWord(IllegalArgumentException e, String op, RemoteRegion region,
                                                           MemorySegment segment, long offset) {
        if (((segment.address() + offset) & 7) == 0) return e;
        return new IllegalArgumentException(op + " at offset " + offset + " of the peer's region: the region starts at byte "
                + region.chunkOffset() + " of its chunk, as its handle says, off an 8-byte boundary, so none of its words is "
                + "aligned as the CPU's atomics need. A Conduit pool places every region on a 64-byte boundary: this handle was "
                + "made otherwise, or altered; have the peer export a region of a pool for atomics (put and get need no alignment)", e);
    }

    /**
     * Makes a fault of the access just made to {@code region} come out here, inside its operation's
     * handler (Libc#deliverPendingFaults): compiled code got it later, up in the runtime's lock
     * release, which then stranded a MULTI worker's other threads. About a native call's cost, on
     * regions whose mapping may fault ({@link dev.conduit.spi.ChunkMapping#mayFault()}: posix's and memfd's of huge
     * pages, not memfd's of normal pages or a DAX device's). The caller's own segment is not asked about: a fault there (an
     * imported posix region as the source of a put) can still come out later (guarantees.md §6).
     */
    private void faultsHere(RemoteRegion region) {
        if (region.mayFault()) transport.libc().deliverPendingFaults();
    }

    private ConduitException regionFault(InternalError e, RemoteRegion region) {
        return new ConduitException(MappedMemoryFaults.describe(e, transport.plugin(), "the peer's region of " + region.length()
                + " bytes (plugin " + region.pluginName() + ") or the local segment of this operation"), e);
    }

    @Override
    public void flush() {
        // Copies and atomics on coherent shared memory are complete when they return; order them.
        VarHandle.fullFence();
    }

    /**
     * The runtime's keepalive probe: the same look at the peer as the transport's own liveness
     * check ({@link #checkPeer(long)}: its lease, its refusals, its queue's damage, a hang while
     * this side waits), now. A peer found failed is reported through the endpoint's events, and
     * the transport's next check releases what only it could use and reclaims its files, as after
     * a failure that check found itself.
     */
    @Override
    public void checkPeer() {
        if (checkPeer(System.nanoTime())) transport.peerFoundFailed();
    }

    private MemorySegment local(RemoteRegion region) {
        if (failure != null) throw failure;
        MemorySegment segment = region.localSegment();
        if (segment == null) {
            throw new NotSupportedException(transport.plugin() + " reaches peers on this host only; region of plugin '"
                    + region.pluginName() + "' is not mapped here");
        }
        return segment;
    }

    /**
     * Closes without waiting. What the peer still needs of this connection is kept until it is done
     * with it: the bounce ring until the peer has read every large payload in it (freed earlier, a
     * ring the peer has not mapped yet would be gone, and the messages in it with it), then room in
     * the peer's queue for the CLOSE record that lets the peer release its side of the connection
     * (its watch of our lease, its mapping of our ring), then, for a connection the peer has not
     * heard of yet, the peer's reading of CONNECT, by which it kept or refused it
     * ({@link #warnIfRefused}). Until then the
     * transport finishes the close as it progresses, connects or closes other endpoints
     * ({@link #finishClose()}). The wait for the ring ends when the peer dies, closes its worker,
     * or has read past our last large message without releasing it (it could not map the ring); a
     * peer that is slow or makes no progress is waited for while it lives. The wait for CONNECT to
     * be read ends as well after {@code heartbeat.timeout}. A look at the peer's lease that fails
     * proves no death: the peer is taken as alive ({@link #peerAliveOrTakenSo}). Until 2026-12-07
     * such a look released everything at once, and a live peer that had not mapped the ring yet
     * dropped the large messages in it.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (!finishClose()) transport.closing(this);
    }

    /**
     * Takes the next step of a close: releases everything once the peer has read our large
     * payloads (or will not: {@link #awaitsDrain}), CLOSE is sent, and the peer has read our
     * CONNECT (or may not be waited for: {@link #awaitsConnectRead}), or at once when there is no
     * one to tell (the peer is dead, never heard of this connection, or its queue's mapping
     * faulted).
     *
     * @return whether the close is complete
     */
    boolean finishClose() {
        boolean complete = true;
        boolean releasing = false;
        try {
            synchronized (closeSteps) {
                if (released) return true; // at the failure that found the peer gone, or by the other thread (closeSteps)
                try {
                    if (connectSent && !peerGone && !peerAliveOrTakenSo()) peerGone = true;
                    if (connectSent && !peerGone) {
                        if (closeSentAt == 0) {
                            complete = !awaitsHeldPost() && !awaitsDrain() && sendControl(ReceiveQueue.CLOSE, NO_BYTES);
                            if (complete) {
                                closeSentAt = System.nanoTime() | 1; // never 0
                                // Decided once: the peer read our CONNECT already, or there is a place to wait for that.
                                inConnectWait = !closingWithWorker && !peerReadConnect() && transport.enterConnectWait();
                            }
                        }
                        complete = complete && !(inConnectWait && awaitsConnectRead());
                    }
                } catch (InternalError | ReceiveQueue.CorruptQueueException queueFault) {
                    // The peer's queue is not there, or not writable as the protocol says, any more: nothing to say, and nothing to wait for.
                } finally {
                    // Claimed with the step, so that the other thread's step finds it released; given back unlocked.
                    releasing = complete && claimRelease();
                }
            }
        } finally {
            if (releasing) giveBack();
        }
        return complete;
    }

    private boolean releasedMeanwhile() {
        synchronized (transport.handOff) {
            return released;
        }
    }

    /**
     * Whether a close should wait to post the large message this endpoint holds ({@link #hold}),
     * which its CLOSE must follow: one is held, this endpoint has not failed, the peer is not
     * closing its worker (it reads nothing more: the message is lost with it, and counted so as
     * the connection is given back) and its queue has no room for the record yet (else it is
     * posted now). A worker's close tries before it waits for its peers to read their rings
     * ({@link #postHeldBeforeTheWorkerCloses}) and once more after ({@link #closeWithWorker}).
     */
    private boolean awaitsHeldPost() {
        return holding && failure == null && !peer.isClosing() && !postHeld();
    }

    /**
     * A worker's close posts the large message this endpoint holds, where the peer's queue has room
     * for it now, before it waits while endpoints {@link #awaitsDrain await} their peers' reading of
     * their rings, so that the wait covers it as it covers every large message posted before. Posted
     * only by the close's step after that wait ({@link #closeWithWorker}), the ring was freed at once,
     * and a peer that had not mapped it yet (the held message was the connection's first large one)
     * lost it. A fault of the peer's queue, or a release by the owner's thread under a close forced
     * from another thread, is left to that step, which finds it too.
     */
    void postHeldBeforeTheWorkerCloses() {
        try {
            awaitsHeldPost();
        } catch (InternalError | ReceiveQueue.CorruptQueueException | IllegalStateException queueGone) {
            // See above: closeWithWorker's step says nothing more of it either.
        }
    }

    /**
     * Whether a close should wait for the peer to read large payloads in our bounce ring: some
     * wait, this endpoint has not failed, and the peer lives (or a look at its lease fails:
     * {@link #peerAliveOrTakenSo}), is not closing its worker, and has
     * not read past our last large message yet (once it has, whatever it did not release it
     * dropped, {@link #ringRefused}, or its application keeps in the peer's mapping of the ring,
     * which outlives our free of it).
     */
    boolean awaitsDrain() {
        try {
            if (bounce == null || failure != null) return false;
            boolean readPast = peerReadPastLastLarge();
            return !readPast && !bounce.drained() && !peer.isClosing() && peerAliveOrTakenSo();
        } catch (InternalError | IllegalStateException gone) {
            // A mapping is gone: nothing can be read any more. Unmapped (IllegalStateException) when the owner's thread released
            // this endpoint while its worker's close, forced from another thread, waits here: which must not end that close.
            return false;
        }
    }

    /**
     * Whether the peer's lease is held, as a close's step or wait looks: a look that fails
     * ({@code flock}: {@code ENOLCK}) proves no death, so the peer is taken as alive, said at most
     * once a minute, as a liveness check does ({@link #peerAliveAtCheck}); the waits it keeps going
     * are bounded, or retried at each check. Thrown, it left a worker's close halfway (its wait
     * for its peers' reading), its endpoints, queue, provider and lease never closed.
     */
    private boolean peerAliveOrTakenSo() {
        try {
            return peerLease.ownerAlive();
        } catch (ErrnoException e) {
            transport.failedEndpointLeaseChecks.log(() -> transport.plugin() + ": could not check whether the peer of a closed "
                    + "connection lives (its lease " + peerLease.name() + "); it is taken as alive until a look succeeds: " + e.getMessage(), e);
            return true;
        }
    }

    /**
     * Whether a close should wait for the peer to read our CONNECT, by which it kept or refused the
     * connection (a refusal for a ring or a broken record comes later, and is known when a close
     * that waited for the ring's drain releases): the peer has not read past it yet, this
     * endpoint has not failed, the peer lives and is not closing its worker, and
     * {@code heartbeat.timeout} has not passed since CLOSE was sent. A connection the peer heard of
     * long ago does not wait, and at most 64 closes of a worker wait at once
     * ({@link ShmTransport#enterConnectWait}); a worker's close does not wait for it.
     */
    private boolean awaitsConnectRead() {
        return failure == null && !peerReadConnect() && !peer.isClosing() && peerAliveOrTakenSo()
                && System.nanoTime() - closeSentAt < heartbeatTimeoutNanos;
    }

    private boolean peerReadConnect() {
        return peer.readPosition() - connectEnd >= 0;
    }

    /**
     * Whether the peer read past our last large message without releasing all our payloads, nor
     * saying it read them ({@link BounceRing#readAll}: kept by its application): it
     * dropped them, unable to map our bounce ring, and will never release that room. Judged by
     * positions, not time: a peer that is slow, stuck or busy with other senders has not read past.
     */
    private boolean ringRefused() {
        if (bounce == null || holding) return false; // a held message's room is not released until its record is read
        boolean readPast = peerReadPastLastLarge();
        // Read but unreleased: payloads the peer's application keeps (Message.keepPayload()), whose room comes back as they close.
        return readPast && !bounce.readAll();
    }

    /**
     * Whether the peer has handled (or dropped) our last LARGE record. Read before the ring's
     * {@code drained()}: this acquire makes the releases the peer made before it visible, so a
     * payload it released is never seen as unreleased after this says the peer read past it.
     */
    private boolean peerReadPastLastLarge() {
        return peer.readPosition() - lastLargeEnd >= 0;
    }

    /**
     * Completes a close because this worker closes, after the worker waited while any of its
     * endpoints {@link #awaitsDrain awaited} its peer: tells the peer CLOSE if its queue has room,
     * and releases everything.
     *
     * @return whether the peer had refused this connection, unseen by a liveness check: the worker
     *         says so once for all its endpoints
     */
    boolean closeWithWorker() {
        closed = true;
        closingWithWorker = true;
        boolean refused = refusal() != 0;
        if (!finishClose()) release();
        return refused;
    }

    private void release() {
        if (claimRelease()) giveBack();
    }

    /**
     * Claims this endpoint's release. The owner's thread (a close, a check that found the peer gone)
     * and a close of the worker forced from another thread may both come to it: one releases, once
     * (a second unmap, or close of the lease's descriptor, could hit what the process mapped or
     * opened since under the same address or number), and never under the other's step of the close
     * ({@link #closeSteps}).
     *
     * @return whether this thread is to give everything back ({@link #giveBack}); false when released already
     */
    private boolean claimRelease() {
        synchronized (closeSteps) {
            synchronized (transport.handOff) {
                if (released) return false;
                released = true;
                return true;
            }
        }
    }

    /**
     * Gives back the ring and the mapping of the peer's queue (freed and unmapped on the transport's
     * mapping thread while the worker is open) and the watch of the peer's lease, once its
     * release is claimed.
     */
    private void giveBack() {
        if (inConnectWait) {
            inConnectWait = false;
            transport.leaveConnectWait();
        }
        // The warnings read the ring, the peer's queue and its lease, so they come first; one that fails (its lease check
        // refused) must not keep what is released after it.
        try {
            warnIfRefused();
            warnIfLostWithThePeer();
            if (bounceChunk != null) warnIfUnread();
        } finally {
            Chunk ring = bounceChunk;
            bounceChunk = null;
            try {
                transport.giveBackOffThisThread(ring, peerMapping); // off this thread while the worker is open
            } finally {
                transport.releasePeerLease(peerLease); // closed once its connections to this worker are gone too
                // Its receiver forgets this id at its CLOSE, which it reads before any later record of the id, or knows
                // nothing of it; else (a close whose write of CLOSE met a queue that faulted) it may
                // keep the connection while this worker lives, and a new connection must never take the id.
                transport.released(this, connectSent && closeSentAt == 0 && !peerGone);
            }
        }
    }

    /**
     * A connection the peer refused after this endpoint's last liveness check, and so not failed
     * (an endpoint that sends a few messages and closes at once), lost what it sent since: say so.
     */
    private void warnIfRefused() {
        if (closingWithWorker) return; // the worker says so once for all
        int reason = refusal();
        if (reason != 0) {
            BestEffortLog.warn(transport.logger(), () -> transport.plugin() + ": closed a connection that the peer worker "
                    + "had refused; it dropped what was sent on it from its refusal on: " + ShmTransport.refusal(transport.plugin(), reason), null);
        }
    }

    /**
     * A connection closed before a liveness check found its peer's worker closed or dead lost what
     * it sent after the peer last read, as a failure would have: say how much, since no failure will
     * (unread()). A peer that lives and reads on reads it after the close.
     */
    private void warnIfLostWithThePeer() {
        if (failure != null || !connectSent) return; // the failure said so; or nothing was sent
        try {
            boolean alive = peerLease.ownerAlive();
            if (alive && !peer.isClosing()) return;
            long unread = unreadMessages();
            if (unread == 0) return;
            int close = alive ? -1 : peerClose();
            String how = alive ? (peer.isDamaged() ? "reads nothing more (it found its receive queue's header overwritten)"
                    : "is closing its worker") : switch (close) {
                case 2 -> "closed its worker";
                case 1 -> "died while closing its worker";
                default -> "died";
            };
            BestEffortLog.warn(transport.logger(), () -> transport.plugin() + ": closed a connection whose peer worker " + how
                    + ": " + theLast(unread, "it", "was", "were") + " never read by it" + (close == 0 ? OR_HANDLED_AS_IT_DIED : "")
                    + ", and lost with it", null);
        } catch (InternalError fault) {
            // Its queue is gone: nothing can be read there.
        }
    }

    /** Why the peer refused this connection, when no liveness check failed the endpoint for it yet; else 0. */
    private int refusal() {
        if (failure != null || !connectSent) return 0;
        try {
            return peer.refusalOf(connection);
        } catch (InternalError | IllegalStateException gone) {
            return 0; // the peer's queue is gone (or unmapped by the owner's release, under a forced close): nothing to read
        }
    }

    /** Freeing a ring with payloads a live peer has not released may lose them: say so. */
    private void warnIfUnread() {
        try {
            if (holding && failure == null && !peer.isClosing() && peerLease.ownerAlive()) {
                // Only a worker's close gives back an endpoint that holds one (a close of the endpoint waits to post it).
                BestEffortLog.warn(transport.logger(), () -> transport.plugin() + ": closed a connection, with its worker, "
                        + "while the peer's queue had no room for the record of its last large message, which was never sent: the "
                        + "peer reads its queue too slowly for its senders (" + transport.plugin() + ".queue.size is the room it has)", null);
            } else if (!bounce.readAll() && !peer.isClosing() && peerLease.ownerAlive()) {
                // (Read but not released: payloads the peer's application keeps, in its mapping of the ring, which stays.)
                BestEffortLog.warn(transport.logger(), () -> transport.plugin() + ": closed a connection whose peer had not read "
                        + "all its large messages (" + (failure != null ? "the endpoint had failed: " + failure.getMessage()
                        : "the peer did not release them in time, or could not map the ring") + "). They arrive only if the peer "
                        + "had mapped the connection's bounce ring already", null);
            }
        } catch (InternalError fault) {
            // A mapping is gone: nothing to tell.
        }
    }
}
