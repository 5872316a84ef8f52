package dev.conduit.chronicle;

import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.MessageHandler;
import dev.conduit.chronicle.internal.ChronicleFlags;
import dev.conduit.chronicle.internal.SegmentBytesStore;
import dev.conduit.spi.PayloadEncoder;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.ReadBytesMarshallable;
import net.openhft.chronicle.bytes.WriteBytesMarshallable;

import java.lang.foreign.MemorySegment;
import java.nio.BufferOverflowException;
import java.util.Objects;

/**
 * Active messages with Chronicle: sends that marshal an object where
 * {@code Endpoint.send(id, header, maxLength, encoder)} has it written ({@link #send}: above 1 KiB,
 * straight into the transport's shared buffer on transports with zero-copy send, such as the
 * shared-memory ones; up to 1 KiB, into the endpoint's buffer, copied once from there), and
 * handlers that read the payload through a Chronicle {@link Bytes} where it was received
 * ({@link #handler}, {@link #read}).
 *
 * <p>One instance holds two reusable views (one for sending, one for receiving), pointed at each
 * message's range of the transport's buffer, so receiving allocates nothing per message, and
 * neither does sending, but for a payload of more than 1 KiB up to a shared-memory transport's
 * {@code inline.max}, for which the transport makes a view bounded to the record (40 B).
 * <b>Not thread-safe</b>: its calls must not overlap. Use one instance per thread, or one per
 * worker whose calls never overlap ({@code SINGLE}, or
 * {@code SERIALIZED}: handlers then run on whichever thread progresses the worker, one at a time,
 * which is why Chronicle's own check that a {@code Bytes} stays on its first thread is turned off
 * for these views). Not one per {@code MULTI} worker: its handlers may run at once.
 *
 * <p>A view is valid only while it is in use: the sending view during the marshalling, the
 * receiving view during the handler call. Kept and used after its call, it throws
 * {@link IllegalStateException}, unless the same instance is by then sending or reading another
 * message: the view is one object, pointed at each message in turn, so it then reads or writes
 * that message. Copy what a handler keeps. A handler that causes a nested delivery on its own
 * thread (a call of {@code progress()} inside it) must use another instance for that delivery:
 * this one throws "already reading a message".
 */
public final class ChronicleMessages {

    private final SegmentBytesStore sendStore;
    /** Replaced only after a marshallable released it ({@link #encode}). */
    private Bytes<Void> sendBytes;
    private final SegmentBytesStore receiveStore;
    /** Replaced only after a handler released it ({@link #open}). */
    private Bytes<Void> receiveBytes;
    /** Points the sending view at the target's range, not at a view of it: nothing is allocated per send. */
    private final PayloadEncoder encoder = (PayloadEncoder.Ranged) this::encode;
    private WriteBytesMarshallable marshalling;
    private boolean receiving;

    public ChronicleMessages() {
        // Before a Chronicle class initializes: without its flags that failed naming neither flag nor remedy.
        ChronicleFlags.require();
        sendStore = new SegmentBytesStore(MemorySegment.NULL, () -> marshalling != null, "a message being sent", true);
        sendBytes = view(sendStore);
        receiveStore = new SegmentBytesStore(MemorySegment.NULL, () -> receiving, "a received message's payload", true);
        receiveBytes = view(receiveStore);
    }

    private static Bytes<Void> view(SegmentBytesStore store) {
        Bytes<Void> bytes = store.bytesForWrite();
        // With assertions on, Chronicle ties a Bytes to the first thread that used it; a SERIALIZED worker's handlers
        // run on whichever thread progresses it, one at a time, which the runtime's guard ensures, not this check.
        bytes.singleThreadedCheckDisabled(true);
        return bytes;
    }

    /**
     * Sends active message {@code id} whose payload is {@code payload}, marshalled by Chronicle
     * where {@link Endpoint#send(int, MemorySegment, long, PayloadEncoder)} has it written (the
     * transport's shared buffer above 1 KiB, the endpoint's own buffer up to it), with the same
     * guarantees: never blocks, never drops, in order.
     *
     * @param maxLength the most bytes the marshalled form may take
     * @return the payload's length
     * @throws IllegalStateException when the marshalled form would exceed {@code maxLength}
     *                               (Chronicle's overflow, or the exception Chronicle wrapped it in,
     *                               is its cause); nothing is sent. An overflow that Chronicle did
     *                               not throw (of a {@code ByteBuffer} of the marshallable's own,
     *                               say) is not the view's: it reaches the caller as it was;
     *                               and when the marshallable released the view it was given
     *                               ({@code unchecked(true)}, which releases the {@code Bytes} it
     *                               is called on and returns another, or {@code releaseLast()}):
     *                               what it wrote is not the view's to send, and nothing is sent
     */
    public long send(Endpoint endpoint, int id, MemorySegment header, WriteBytesMarshallable payload, long maxLength) {
        Objects.requireNonNull(payload, "payload");
        if (marshalling != null) throw new IllegalStateException("this ChronicleMessages is already sending (use one per thread)");
        marshalling = payload;
        try {
            return endpoint.send(id, header, maxLength, encoder);
        } finally {
            marshalling = null;
            sendStore.point(MemorySegment.NULL);
        }
    }

    /** {@link #send(Endpoint, int, MemorySegment, WriteBytesMarshallable, long)} with an empty header. */
    public long send(Endpoint endpoint, int id, WriteBytesMarshallable payload, long maxLength) {
        return send(endpoint, id, MemorySegment.NULL, payload, maxLength);
    }

    /** Marshals the payload being sent into {@code maxLength} bytes of {@code memory} at {@code offset}. */
    private long encode(MemorySegment memory, long offset, long maxLength) {
        sendStore.point(memory, offset, maxLength);
        sendBytes.clear();
        boolean released;
        try {
            marshalling.writeMarshallable(sendBytes);
        } catch (RuntimeException e) {
            if (!overflowed(e)) throw e;
            throw new IllegalStateException("the marshalled payload does not fit in maxLength " + maxLength
                    + " bytes; nothing was sent. Raise maxLength (at most the transport's payload limit)", e);
        } finally {
            // A released view would refuse every later send: a new one, allocated only after that.
            released = sendBytes.refCount() == 0;
            if (released) sendBytes = view(sendStore);
        }
        // unchecked(true) returns a Bytes with positions of its own: the released view's write position, 0, would send
        // an empty payload in place of what was written.
        if (released) {
            throw new IllegalStateException("the marshallable released the sending view (unchecked(true) releases the Bytes "
                    + "it is called on and returns another, whose write position this send cannot see; so does "
                    + "releaseLast()); nothing was sent. Write through the Bytes writeMarshallable is given: its store "
                    + "bounds every access, so unchecked(true) would spare little");
        }
        return sendBytes.writePosition();
    }

    /**
     * Whether {@code e} is the sending view's overflow, also one Chronicle wrapped (a text append
     * past the limit is an {@code IndexOutOfBoundsException} of it): a {@link BufferOverflowException}
     * thrown by Chronicle's code. One thrown elsewhere (by a {@code ByteBuffer} of the marshallable's
     * own) is the marshallable's, which no maxLength helps. Read on the failure path only: a trace
     * is not cheap. A fixed-size Chronicle {@code Bytes} of the marshallable's own overflows as the
     * view does, and is reported as the view's.
     */
    private static boolean overflowed(Throwable e) {
        for (int depth = 0; e != null && depth < 8; e = e.getCause(), depth++) {
            if (e instanceof BufferOverflowException && thrownByChronicle(e)) return true;
        }
        return false;
    }

    private static boolean thrownByChronicle(Throwable e) {
        StackTraceElement[] trace = e.getStackTrace();
        return trace.length > 0 && trace[0].getClassName().startsWith("net.openhft.chronicle.");
    }

    /**
     * Reads the current message's payload into {@code into} with Chronicle, where it was
     * received. Call it from the handler.
     *
     * @return {@code into}
     */
    public <T extends ReadBytesMarshallable> T read(Message message, T into) {
        Objects.requireNonNull(into, "into");
        Bytes<Void> bytes = open(message);
        try {
            into.readMarshallable(bytes);
        } finally {
            close();
        }
        return into;
    }

    /**
     * A message handler that gives {@code handler} the payload as a read-only Chronicle
     * {@link Bytes} (read position 0, read limit the payload's length), valid during the call:
     * its {@code readWrite()} is {@code false}, and a write throws {@link IllegalArgumentException}
     * (the payload is the transport's memory; copy it to change it).
     *
     * <p>The view is this instance's, pointed at the next message once the call returns: there is
     * nothing to release. A handler that releases it anyway ({@code releaseLast()}, or
     * {@code unchecked(true)}, which releases the {@code Bytes} it is called on) costs the next
     * message a new view, the one allocation of a receive.
     */
    public MessageHandler handler(PayloadHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return message -> {
            Bytes<Void> bytes = open(message);
            try {
                handler.onPayload(message, bytes);
            } finally {
                close();
            }
        };
    }

    private Bytes<Void> open(Message message) {
        if (receiving) throw new IllegalStateException("this ChronicleMessages is already reading a message (use one per thread)");
        // Released by a handler (releaseLast(), or unchecked(true), which releases the Bytes it is called on), the view
        // would throw "released" for every later message, each consumed and lost: a new one, allocated only after that.
        if (receiveBytes.refCount() == 0) receiveBytes = view(receiveStore);
        long length = message.payloadSize();
        // The payload's range of the transport's read-only buffer: no view per message.
        receiveStore.point(message.payloadBuffer(), message.payloadOffset(), length);
        receiving = true;
        receiveBytes.clear();
        receiveBytes.readPositionRemaining(0, length);
        return receiveBytes;
    }

    private void close() {
        receiving = false;
        receiveStore.point(MemorySegment.NULL);
    }

    /**
     * Handles one message's payload as Chronicle {@link Bytes}; both are valid only during the call.
     * The {@code Bytes} is the {@link ChronicleMessages} instance's, reused for the next message:
     * do not release it ({@link ChronicleMessages#handler}).
     */
    @FunctionalInterface
    public interface PayloadHandler {
        void onPayload(Message message, Bytes<?> payload);
    }
}
