package dev.conduit;

import dev.conduit.internal.worker.MessageAccess;
import dev.conduit.internal.worker.NativeBuffers;
import dev.conduit.internal.worker.TransportSink;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * One received active message, as a {@link MessageHandler} sees it: the id, the header and the
 * payload, read where the transport received them (its shared receive queue or bounce buffer:
 * zero-copy).
 *
 * <p><b>A flyweight, valid only during the handler call.</b> The runtime owns one {@code Message}
 * per worker (one per progressing thread under {@code PASS_THROUGH}) and points it at each message
 * in turn, so delivering a message allocates nothing. (A message delivered while a handler of the
 * same thread still runs, by a plugin called from that handler, gets a flyweight of its own.)
 * When the handler returns, the runtime invalidates it: until its next delivery every method
 * throws {@link IllegalStateException}, and the bytes it showed may already hold another message.
 * The next delivery fills the same object again, so a reference kept past the handler and used
 * while a later handler call runs (a handler that reads a message an earlier one stored, say)
 * throws nothing: it is that later message, its accessors read its bytes, {@link #keepPayload()}
 * keeps its payload and {@link #replyEndpoint()} answers its sender. Keep nothing of a
 * {@code Message} past its handler (telling a kept reference from the current one would take an
 * object per message): to keep a payload, call {@link #keepPayload()} during the call (zero-copy where the
 * transport can keep it where it lies), or copy it: {@link #payloadToArray()}, or
 * {@link #copyPayload(long, MemorySegment, long, long)} into memory of your own; to answer later,
 * keep the endpoint that {@link #replyEndpoint()} returned.
 *
 * <p><b>Zero allocation</b> comes from the accessors: {@link #payloadByte}, {@link #payloadShort},
 * {@link #payloadInt}, {@link #payloadLong}, {@code copyPayload}, and the same for the header. They
 * read <b>little-endian</b> (whatever the platform's order, so peers on other hosts agree) at any
 * alignment, and check {@code offset} against the message (not against the transport's buffer):
 * an access outside it throws {@link IndexOutOfBoundsException}.
 *
 * <p>For a decoder that reads a buffer at an offset (as Aeron's fragment handlers do), the payload
 * is also {@link #payloadSize()} bytes at {@link #payloadOffset()} of {@link #payloadBuffer()}, a
 * read-only view of the transport's whole buffer, which the shared-memory transports do not make
 * per message.
 *
 * <p>{@link #payload()} and {@link #header()} are for convenience: they return read-only views of
 * the received bytes (zero-copy, but each call allocates a small segment object). A view, and the
 * payload's buffer, must not be used after the handler returns either: the runtime cannot revoke
 * it, so it stays readable (never crashing the JVM: it is bounded and scoped like the transport's
 * own memory) but its bytes are then the transport's to reuse, i.e. undefined.
 *
 * <p>Not thread-safe: use it on the thread that runs the handler.
 */
public final class Message {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** The largest array {@link #payloadToArray()} can return. */
    private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

    static {
        MessageAccess.install(new Access());
    }

    private boolean valid;
    private int id;
    private MemorySegment headerBuffer;
    private long headerOffset;
    private int headerLength;
    private MemorySegment payloadBuffer;
    private long payloadOffset;
    private long payloadLength;
    /**
     * The last writable buffer {@link #payloadBuffer()} was asked for, and its read-only view: one view per buffer, not per
     * message. Kept past the handler ({@code invalidate} leaves them): clearing them would make a view per message again,
     * for one buffer of the transport's kept reachable.
     */
    private MemorySegment writableBuffer;
    private MemorySegment readOnlyBuffer;
    /** The sink of the transport the message came through, and its key of the connection: whom {@link #replyEndpoint()} answers. */
    private TransportSink from;
    private long sender;
    /** Whether {@link #keepPayload()} kept this message's payload already. */
    private boolean kept;

    private Message() {
    }

    private void check() {
        if (!valid) {
            throw new IllegalStateException("this Message is only valid during the handler call that received it; "
                    + "keep the payload during the call (keepPayload()), or copy it (payloadToArray(), copyPayload(...))");
        }
    }

    /** The active-message id the sender used, 0..65535. */
    public int id() {
        check();
        return id;
    }

    /** The header's length in bytes (0 when the sender gave none). */
    public int headerSize() {
        check();
        return headerLength;
    }

    /** The payload's length in bytes. */
    public long payloadSize() {
        check();
        return payloadLength;
    }

    // ---- payload ----

    /** The payload byte at {@code offset}. */
    public byte payloadByte(long offset) {
        check();
        Objects.checkIndex(offset, payloadLength);
        return payloadBuffer.get(ValueLayout.JAVA_BYTE, payloadOffset + offset);
    }

    /** The little-endian 16-bit value at {@code offset} of the payload. */
    public short payloadShort(long offset) {
        check();
        Objects.checkFromIndexSize(offset, 2, payloadLength);
        return payloadBuffer.get(SHORT, payloadOffset + offset);
    }

    /** The little-endian 32-bit value at {@code offset} of the payload. */
    public int payloadInt(long offset) {
        check();
        Objects.checkFromIndexSize(offset, 4, payloadLength);
        return payloadBuffer.get(INT, payloadOffset + offset);
    }

    /** The little-endian 64-bit value at {@code offset} of the payload. */
    public long payloadLong(long offset) {
        check();
        Objects.checkFromIndexSize(offset, 8, payloadLength);
        return payloadBuffer.get(LONG, payloadOffset + offset);
    }

    /** Copies {@code length} payload bytes from {@code offset} to {@code destination} at {@code destinationOffset}. */
    public void copyPayload(long offset, MemorySegment destination, long destinationOffset, long length) {
        check();
        Objects.requireNonNull(destination, "destination");
        Objects.checkFromIndexSize(offset, length, payloadLength);
        MemorySegment.copy(payloadBuffer, payloadOffset + offset, destination, destinationOffset, length);
    }

    /** Copies {@code length} payload bytes from {@code offset} into {@code destination} at {@code destinationOffset}. */
    public void copyPayload(long offset, byte[] destination, int destinationOffset, int length) {
        check();
        Objects.requireNonNull(destination, "destination");
        Objects.checkFromIndexSize(offset, length, payloadLength);
        MemorySegment.copy(payloadBuffer, ValueLayout.JAVA_BYTE, payloadOffset + offset, destination, destinationOffset, length);
    }

    /**
     * A copy of the payload, the simplest way to keep it.
     *
     * @throws IllegalStateException for a payload too large for an array (more than
     *         {@code Integer.MAX_VALUE - 8} bytes): copy it with {@link #copyPayload(long, MemorySegment, long, long)}
     */
    public byte[] payloadToArray() {
        check();
        if (payloadLength > MAX_ARRAY) {
            throw new IllegalStateException("payload of " + payloadLength + " bytes does not fit in an array; use copyPayload");
        }
        byte[] copy = new byte[(int) payloadLength];
        MemorySegment.copy(payloadBuffer, ValueLayout.JAVA_BYTE, payloadOffset, copy, 0, copy.length);
        return copy;
    }

    /**
     * Keeps the payload past this handler call, until the {@link KeptPayload} returned is closed:
     * to hand it to another thread, as UCX's {@code ucp_am_data_release} lets a handler that
     * returned {@code UCS_INPROGRESS} keep its data. Zero-copy where the transport can keep the
     * payload where it received it ({@code Transport.keepDelivered()}): the memfd and posix
     * transports keep a large payload in its sender's bounce ring, where the sender's later large
     * messages then wait for room behind it, in order (queued by the sender's runtime, its
     * {@link Endpoint#pending()}), until it is closed (docs/plugins.md). Otherwise (their payloads
     * inline in the receive queue, whose records are given back in order for every sender; a
     * transport that cannot keep what it delivers) the runtime copies the payload into native
     * memory of its own, in this call, and the copy is what is kept. Either way it allocates: the
     * {@code KeptPayload} and its view, some 300 B with its close over memfd and posix (a copy's
     * {@code Arena} too); a handler that must allocate nothing copies the payload into memory of
     * its own ({@link #copyPayload(long, MemorySegment, long, long)}).
     *
     * <p>The kept payload outlives this message and the connection it came by (its sender may close
     * or die meanwhile); closing the worker that received it closes it.
     *
     * @throws IllegalStateException when called after the handler returned (until the next delivery:
     *         see above), a second time for the
     *         same message once a call returned a {@code KeptPayload}, or while the worker closes
     * @throws dev.conduit.spi.ConduitException when the transport failed to keep it, naming the
     *         transport, or native memory has no room for the copy (nothing kept: the message is
     *         still readable in the handler)
     */
    public KeptPayload keepPayload() {
        check();
        if (kept) {
            throw new IllegalStateException("keepPayload() was called already for this message: share the KeptPayload it returned "
                    + "(its close gives the payload back once)");
        }
        TransportSink sink = from;
        Runnable inPlace = sink == null ? null : sink.keepDelivered();
        KeptPayload keep;
        if (inPlace != null) {
            keep = new KeptPayload(payloadBuffer.asSlice(payloadOffset, payloadLength).asReadOnly(), inPlace, forget(sink));
        } else {
            // Shared: the kept payload goes to other threads, and closing the arena revokes every view of the copy.
            Arena arena = Arena.ofShared();
            MemorySegment copy;
            try {
                copy = arena.allocate(payloadLength, 64);
                MemorySegment.copy(payloadBuffer, payloadOffset, copy, 0, payloadLength);
            } catch (OutOfMemoryError e) {
                arena.close();
                throw NativeBuffers.noRoom("cannot keep a payload of " + payloadLength + " bytes"
                        + (sink == null ? "" : " delivered by transport '" + sink.transportName() + "'") + ": where the transport "
                        + "cannot keep it where it lies, the runtime keeps a copy", payloadLength, false, "Nothing was kept, and the message is still "
                        + "readable in this handler: read what you need of it now, or copy it into memory of your own "
                        + "(copyPayload), and close the KeptPayloads no longer needed", e);
            } catch (RuntimeException | Error e) {
                arena.close();
                throw e;
            }
            keep = new KeptPayload(copy.asReadOnly(), arena::close, forget(sink));
        }
        // Then only: a worker closed meanwhile gives back what was kept and throws, and returns no KeptPayload to share.
        if (sink != null) sink.keepUntilClosed(keep);
        kept = true;
        return keep;
    }

    private static java.util.function.Consumer<KeptPayload> forget(TransportSink sink) {
        return sink == null ? k -> { } : sink::forgetKept;
    }

    /** A read-only view of the payload where it was received (allocates the view; valid during the handler call only). */
    public MemorySegment payload() {
        return payloadBuffer().asSlice(payloadOffset, payloadLength);
    }

    /**
     * The memory the payload lies in, read-only: the transport's buffer (a receive ring, a bounce
     * ring), of which the payload is {@link #payloadSize()} bytes at {@link #payloadOffset()}. The
     * rest of it holds other messages, the ring's own header, or nothing: read only the payload's
     * range. For decoders that take a buffer and an offset; unlike {@link #payload()}, no view is
     * made per message: the shared-memory transports deliver from read-only memory, and for a
     * transport that delivers from writable memory the view is made again only when the buffer
     * differs from the previous message's. Valid during the handler call only, like everything
     * here.
     */
    public MemorySegment payloadBuffer() {
        check();
        MemorySegment buffer = payloadBuffer;
        if (buffer.isReadOnly()) return buffer;
        if (buffer != writableBuffer) {
            writableBuffer = buffer;
            readOnlyBuffer = buffer.asReadOnly();
        }
        return readOnlyBuffer;
    }

    /** Where the payload starts in {@link #payloadBuffer()}. */
    public long payloadOffset() {
        check();
        return payloadOffset;
    }

    // ---- header ----

    /** The header byte at {@code offset}. */
    public byte headerByte(long offset) {
        check();
        Objects.checkIndex(offset, headerLength);
        return headerBuffer.get(ValueLayout.JAVA_BYTE, headerOffset + offset);
    }

    /** The little-endian 16-bit value at {@code offset} of the header. */
    public short headerShort(long offset) {
        check();
        Objects.checkFromIndexSize(offset, 2, headerLength);
        return headerBuffer.get(SHORT, headerOffset + offset);
    }

    /** The little-endian 32-bit value at {@code offset} of the header. */
    public int headerInt(long offset) {
        check();
        Objects.checkFromIndexSize(offset, 4, headerLength);
        return headerBuffer.get(INT, headerOffset + offset);
    }

    /** The little-endian 64-bit value at {@code offset} of the header. */
    public long headerLong(long offset) {
        check();
        Objects.checkFromIndexSize(offset, 8, headerLength);
        return headerBuffer.get(LONG, headerOffset + offset);
    }

    /** Copies {@code length} header bytes from {@code offset} to {@code destination} at {@code destinationOffset}. */
    public void copyHeader(long offset, MemorySegment destination, long destinationOffset, long length) {
        check();
        Objects.requireNonNull(destination, "destination");
        Objects.checkFromIndexSize(offset, length, headerLength);
        MemorySegment.copy(headerBuffer, headerOffset + offset, destination, destinationOffset, length);
    }

    /** Copies {@code length} header bytes from {@code offset} into {@code destination} at {@code destinationOffset}. */
    public void copyHeader(long offset, byte[] destination, int destinationOffset, int length) {
        check();
        Objects.requireNonNull(destination, "destination");
        Objects.checkFromIndexSize(offset, length, headerLength);
        MemorySegment.copy(headerBuffer, ValueLayout.JAVA_BYTE, headerOffset + offset, destination, destinationOffset, length);
    }

    /** A copy of the header. */
    public byte[] headerToArray() {
        check();
        byte[] copy = new byte[headerLength];
        MemorySegment.copy(headerBuffer, ValueLayout.JAVA_BYTE, headerOffset, copy, 0, copy.length);
        return copy;
    }

    /** A read-only view of the header where it was received (allocates the view; valid during the handler call only). */
    public MemorySegment header() {
        check();
        return headerBuffer.asSlice(headerOffset, headerLength).asReadOnly();
    }

    /**
     * An endpoint to the worker that sent this message, to answer it without having exchanged its
     * address (as UCX's {@code reply_ep}). The first call for a sender's connection connects to the
     * address the sender's transport announced when it connected, through the transport the message
     * came by (a connect, as {@link Worker#connect} makes: over memfd up to
     * {@code memfd.connect.timeout} against a peer that does not answer, while this handler's
     * {@code progress()} call waits); later calls for messages of the same connection return the
     * same endpoint, without an allocation, and without a lock when the same thread answered that
     * sender last.
     *
     * <p>The worker keeps the endpoint while the sender's connection lasts, and closes it when the
     * transport reports that connection ended (the sender closed its endpoint, its worker closed or
     * died), once the worker's progress has handed to the transport the answers still waiting in its
     * local queue (those reach a sender whose worker lives): it is not the sender's endpoint, so a
     * sender with two endpoints to this worker is answered through two. The endpoint has no error handler: the sender's failure shows on its
     * next use, as {@link dev.conduit.spi.PeerFailedException}, and so does the end of its connection
     * once the worker closed the endpoint for it (an endpoint that failed before that end still
     * throws its failure). It may be kept past this handler and
     * used from any call the worker's thread mode allows, like any endpoint; closing it is allowed,
     * and the next message of that connection is then answered through a new one. The worker's close
     * closes it with its other endpoints.
     *
     * <p>The address is the one the sender announced: a sender that lies can have the answer go to
     * another worker whose address it knows, as it could by sending that address in a payload. The
     * connect still proves that worker reachable from this process, as every connect does.
     *
     * @throws IllegalStateException when called after the handler returned (until the next delivery:
     *         see above), or on a closed worker
     * @throws dev.conduit.spi.NotSupportedException when the message's transport does not name its
     *         senders and their addresses, an optional operation of a plugin (memfd, posix and verbs
     *         name them; {@code conduit info} does not tell)
     * @throws dev.conduit.spi.PeerFailedException when the sender's connection has ended, or the
     *         connect (or the transport, asked for the sender's address) found the sender's worker
     *         gone before its transport ended the connection
     * @throws dev.conduit.spi.ConduitException when the sender's worker cannot be reached from here,
     *         or its transport failed to give the address it announced (naming the transport)
     */
    public Endpoint replyEndpoint() {
        if (!valid) {
            // check()'s remedy, copying the payload, does not answer anybody.
            throw new IllegalStateException("this Message is only valid during the handler call that received it; to answer its "
                    + "sender after the handler, call replyEndpoint() in the handler and keep the endpoint it returns (it stays open "
                    + "while the sender's connection lasts)");
        }
        if (from == null) {
            throw new dev.conduit.spi.NotSupportedException("this message came through no transport that names its sender, so it cannot "
                    + "be answered through replyEndpoint(): have the request carry worker.address().toBytes() and connect to it");
        }
        return from.replyEndpoint(sender);
    }

    /** Describes the message, or says that it is no longer valid; never throws. */
    @Override
    public String toString() {
        return valid ? "Message[id=" + id + ", header=" + headerLength + " B, payload=" + payloadLength + " B]" : "Message[invalid]";
    }

    private static final class Access extends MessageAccess {
        @Override
        public Message create() {
            return new Message();
        }

        @Override
        public void fill(Message m, int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                         MemorySegment payloadBuffer, long payloadOffset, long payloadLength, TransportSink from, long sender) {
            m.id = id;
            m.from = from;
            m.sender = sender;
            m.headerBuffer = headerBuffer;
            m.headerOffset = headerOffset;
            m.headerLength = headerLength;
            m.payloadBuffer = payloadBuffer;
            m.payloadOffset = payloadOffset;
            m.payloadLength = payloadLength;
            m.kept = false;
            m.valid = true;
        }

        @Override
        public void invalidate(Message m) {
            m.valid = false;
            m.from = null;
            m.headerBuffer = null;
            m.payloadBuffer = null;
        }
    }
}
