package dev.conduit.internal.worker;

import dev.conduit.Endpoint;
import dev.conduit.EndpointErrorHandler;
import dev.conduit.PeerRegion;
import dev.conduit.internal.CloseFailures;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.ipc.IpcImports;
import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.TransportEndpoint;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The runtime's endpoint over one plugin's {@link TransportEndpoint}: it enforces, for every
 * plugin, the thread-mode guard, size limits, order and exactly-once with local queuing when the
 * transport is full ({@link PendingQueue}), failure (once, nothing discarded silently) and RMA
 * bounds.
 *
 * <p>Its own state (queue, failure, closed) is protected by the worker's guard when that guard
 * serializes calls; under {@code PASS_THROUGH} (a {@code MULTI} worker over {@code MULTI} plugins)
 * by a lock of its own, so different endpoints stay concurrent and sends on one endpoint keep
 * their order relative to the queue.
 */
final class RuntimeEndpoint implements Endpoint {

    static {
        // Loaded with the first endpoint, not at its first failure: a JFR event class's first load takes milliseconds (JFR
        // instruments it), which the progress() that reports the failure would spend while the worker's other peers wait.
        new WorkerEvents.EndpointFailure();
    }

    private static final System.Logger LOG = System.getLogger("dev.conduit.worker");
    /**
     * Payloads up to this many bytes are encoded into this endpoint's scratch buffer and copied from
     * there, even where the transport could let the encoder write in place. The target of a write in
     * place is a new view per send, which the JIT removes only where it inlines the encoder (not
     * past two encoder classes at one call site); it then costs 40 bytes and more time than copying
     * a payload of this size from a buffer in this core's cache (docs/performance.md, "Allocation
     * on both sides"). Larger payloads are where the copy saved is worth a view.
     */
    static final int ENCODED_HERE_UP_TO = 1024;
    private static final VarHandle NOTIFIED;

    static {
        try {
            NOTIFIED = MethodHandles.lookup().findVarHandle(RuntimeEndpoint.class, "notified", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RuntimeWorker worker;
    private final String transport;
    private final String peer;
    private final boolean rma;
    private final boolean atomics;
    private final EndpointErrorHandler onError;
    /** Whether {@code Message.replyEndpoint()} made this endpoint: the application gave no connect, so it could give no handler. */
    private final boolean reply;
    /** {@code null} unless the worker's guard lets calls through concurrently. */
    private final ReentrantLock lock;
    private final PendingQueue pending;
    private final List<RuntimePeerRegion> regions = new ArrayList<>();
    private final TransportEndpoint te;
    private final int maxHeader;
    private final long maxPayload;
    /** Whether every call to the transport runs on a thread of its own ({@code thread.confine}): it reads our buffers there. */
    private final boolean transportOnItsOwnThread;
    /** Whether the transport may do zero-copy sends: until it says it does not ({@link TransportEndpoint#trySendEncoded}). */
    private boolean encodesInPlace = true;
    /** Cleared when the transport said it has no keepalive probe (checkPeer threw NotSupportedException): not asked again. */
    private volatile boolean probesPeer = true;
    /**
     * This endpoint's own buffer for encoders that do not write in place ({@link #encodeHere}): those
     * of at most {@value #ENCODED_HERE_UP_TO} bytes (every such send: the common path touches nothing
     * shared), and larger ones that found the worker's {@link SharedEncodingBuffer} taken. Made on
     * the first, grown on demand, kept up to {@link PendingQueue#RETAIN} bytes.
     */
    private MemorySegment scratch = MemorySegment.NULL;
    /**
     * The views of {@link #scratch} handed to encoders, indexed by {@code maxLength} (up to
     * {@value #ENCODED_HERE_UP_TO}), made on first use of a length and kept: an encoder's target
     * must be exactly {@code maxLength} long, and a view cannot be pointed elsewhere.
     */
    private MemorySegment[] targets;
    /** The worker's {@link SharedEncodingBuffer}, read here without going through the worker. */
    private final SharedEncodingBuffer sharedEncodingBuffer;
    /**
     * The thread whose encoder of a send on this endpoint is running, else {@code null}: a send it
     * makes here would overwrite or overtake its message, and a close of this endpoint or its
     * worker would unmap the memory it writes. Written under the endpoint's lock; read without it
     * only by a thread asking whether it is that thread, which its own writes answer.
     */
    private Thread encodingThread;
    /**
     * The application's encoder as {@link #encode} hands it to the transport's {@code trySendEncoded}, which calls it
     * there: it notes what the encoder throws, so that an exception out of {@code trySendEncoded} is told apart as the
     * encoder's, which reaches the application as it is, or the transport's, named as {@code trySend}'s is
     * ({@link #thrownBy}: until 2026-12-07 a bare one passed as it was, naming no plugin). Until 2026-12-07 every
     * {@link PeerFailedException} out of it failed this endpoint (one the encoder threw from a send on another endpoint
     * of the worker, whose peer had died, failed this healthy one too), and every {@link NotSupportedException} turned
     * zero-copy off for good and called the encoder again (one the encoder threw itself: {@code Region.exportHandle()}
     * of a plugin without IPC). One per endpoint, reused, as a send must allocate nothing: the endpoint's lock or its
     * worker's guard lets one encode of it run at a time, and the encoder cannot start another on it
     * ({@link #encoderSent}).
     */
    private final ObservedEncoder inPlaceEncoder = new ObservedEncoder();
    /** Whether {@link #pending} is not empty (counted once in the worker's backlog count). */
    private volatile boolean backlogged;
    private volatile PeerFailedException failure;
    /**
     * Set while {@link #drain} hands the queue's head to the transport: a failure the transport
     * reports meanwhile (it may take the message and then find its peer gone) waits in
     * {@link #reportedDuringHandOver} until the hand-over's answer says whether that message is
     * still the queue's to discard and count.
     */
    private boolean handingOver;
    private PeerFailedException reportedDuringHandOver;
    private volatile boolean closed;
    @SuppressWarnings("unused") // through NOTIFIED
    private volatile boolean notified;
    /** Whether its peer regions and transport endpoint were given back ({@link #release}): by its close, or by the report of its failure. */
    private boolean released;
    /**
     * What a thread's delivery context keeps of this endpoint as a reply endpoint ({@link #weakly}):
     * made with the endpoint, final so that any thread that reads it sees it whole.
     */
    private final WeakReference<RuntimeEndpoint> weakSelf = new WeakReference<>(this);
    /**
     * Set, before {@link #closed}, when the connection this reply endpoint answers ended
     * ({@link #closeAsEnded}): later calls throw it as a {@link PeerFailedException}, the sender's
     * failure that its use would have found, not "closed, connect again", which an application that
     * was never given the sender's address cannot do. While answers still wait in the local queue
     * the endpoint stays open for the worker's progress to hand them over ({@link #drain}).
     */
    private volatile PeerFailedException connectionEnded;

    /**
     * Wraps a connected transport endpoint, reading its limits once.
     *
     * @throws IllegalStateException when the transport reports negative limits
     */
    RuntimeEndpoint(RuntimeWorker worker, String transport, String peer, TransportEndpoint te, boolean rma, boolean atomics,
                    boolean locked, EndpointErrorHandler onError, boolean reply) {
        int h = te.maxHeaderSize();
        long p = te.maxPayloadSize();
        if (h < 0 || p < 0) {
            throw new IllegalStateException("transport '" + transport + "' reports negative size limits (header " + h + ", payload " + p + ")");
        }
        this.worker = worker;
        this.pending = new PendingQueue(worker.pendingSpares);
        this.sharedEncodingBuffer = worker.encodingBuffer;
        this.transport = transport;
        this.peer = peer;
        this.te = te;
        this.transportOnItsOwnThread = ConfinedTransport.runsOnItsOwnThread(te);
        this.maxHeader = h;
        this.maxPayload = p;
        this.rma = rma;
        this.atomics = atomics;
        this.lock = locked ? new ReentrantLock() : null;
        this.onError = onError;
        this.reply = reply;
    }

    @Override
    public String transport() {
        return transport;
    }

    // ---------------------------------------------------------------- active messages

    @Override
    public void send(int id, MemorySegment payload) {
        send(id, MemorySegment.NULL, payload);
    }

    @Override
    public void send(int id, MemorySegment header, MemorySegment payload) {
        boolean entered = worker.enter();
        try {
            Objects.requireNonNull(header, "header");
            Objects.requireNonNull(payload, "payload");
            if ((id >>> 16) != 0) throw new IllegalArgumentException("active message id " + id + " is outside 0..65535");
            long hl = header.byteSize();
            if (hl > maxHeader) throw tooLarge("header", hl, maxHeader);
            long pl = payload.byteSize();
            if (pl > maxPayload) throw tooLarge("payload", pl, maxPayload);
            requireOpen(header, "header", "send");
            requireOpen(payload, "payload", "send");
            lock();
            try {
                checkUsable();
                if (encodingThread != null) throw encoderSent();
                if (pending.isEmpty()) {
                    boolean sent;
                    try {
                        sent = te.trySend(id, header, payload);
                    } catch (PeerFailedException e) {
                        throw failedNow(e);
                    } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                        throw thrownBy(transport, "trySend", e);
                    }
                    if (sent) return;
                    refuseIfReportedFailed();
                    pending.add(id, header, payload);
                    markBacklogged();
                } else {
                    pending.add(id, header, payload);
                }
            } finally {
                unlock();
            }
        } finally {
            worker.exit(entered);
        }
    }

    @Override
    public long send(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        boolean entered = worker.enter();
        try {
            Objects.requireNonNull(header, "header");
            Objects.requireNonNull(encoder, "encoder");
            if ((id >>> 16) != 0) throw new IllegalArgumentException("active message id " + id + " is outside 0..65535");
            if (maxLength < 0) throw new IllegalArgumentException("maxLength " + maxLength + " is negative");
            long hl = header.byteSize();
            if (hl > maxHeader) throw tooLarge("header", hl, maxHeader);
            if (maxLength > maxPayload) throw tooLarge("payload (maxLength)", maxLength, maxPayload);
            requireOpen(header, "header", "send");
            lock();
            try {
                checkUsable();
                if (encodingThread != null) throw encoderSent();
                encodingThread = Thread.currentThread();
                MessageDispatch.Delivery d = worker.delivery();
                d.callBackBegins(); // the encoder's calls on the worker are call-backs, as a handler's are
                try {
                    return encode(id, header, maxLength, encoder);
                } finally {
                    d.callBackEnds();
                    encodingThread = null;
                }
            } finally {
                unlock();
            }
        } finally {
            worker.exit(entered);
        }
    }

    /** Where the encoder writes: this endpoint's buffer, or the transport's memory. */
    private long encode(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        if (maxLength <= ENCODED_HERE_UP_TO || !encodesInPlace || !pending.isEmpty()) return encodeHere(id, header, maxLength, encoder);
        long sent;
        int calls;
        long returned;
        ObservedEncoder observed = inPlaceEncoder.observe(encoder);
        try {
            sent = te.trySendEncoded(id, header, maxLength, observed);
            calls = observed.calls;
            returned = observed.returned;
        } catch (PeerFailedException e) {
            if (observed.threw(e)) throw e; // another endpoint's failure, from a send the encoder made there
            throw failedNow(e);
        } catch (NotSupportedException e) {
            if (observed.threw(e)) throw e; // the application's, not the transport's word that it has no zero-copy send
            encodesInPlace = false;
            return encodeHere(id, header, maxLength, encoder);
        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows), the encoder's or the transport's
            if (observed.threw(e)) throw e; // the application's encoder's, as Endpoint.send promises
            throw thrownBy(transport, "trySendEncoded", e);
        } finally {
            observed.forget();
        }
        if (calls == 0) {
            if (sent < 0) {
                // Refused, the encoder not called: for want of room, unless the transport reported its peer's failure in this
                // very call, which the send throws as trySend's does, before the encoder runs into a message for a failed peer.
                refuseIfReportedFailed();
                return encodeHere(id, header, maxLength, encoder);
            }
            throw brokenAnswer(sent, "without calling the encoder, so what it sent is not the application's payload");
        }
        if (calls == 1 && sent == returned) return sent;
        // Encoding again would call the encoder twice and may send the message twice; the length is Endpoint.send's answer.
        throw brokenAnswer(sent, "after the encoder it called " + (calls == 1 ? "" : calls + " times ") + "returned " + returned
                + ", which it must answer once it called it (-1, \"no room\", only without calling it): whether the message was sent "
                + "is unknown, and it is not encoded again");
    }

    /** A transport's answer from {@code trySendEncoded} that breaks the SPI's word, named as the plugin's fault. */
    private ConduitException brokenAnswer(long sent, String how) {
        return PluginRecord.brokenAnswer(transport, "trySendEncoded()", sent, how, "TransportContract");
    }

    /** Calls the encoder it {@link #observe}s through the form it is called by, noting what it throws. */
    private static final class ObservedEncoder implements PayloadEncoder {
        private PayloadEncoder encoder;
        private Throwable thrown;
        /** How many times the transport called the encoder in this send, and what the last call returned. */
        int calls;
        long returned;

        ObservedEncoder observe(PayloadEncoder encoder) {
            this.encoder = encoder;
            calls = 0;
            returned = -1;
            return this;
        }

        /** Whether {@code failure} is what the encoder threw, not the transport's own. */
        boolean threw(Throwable failure) {
            return failure == thrown;
        }

        /** Lets go of the encoder and what it threw, which belong to the application. */
        void forget() {
            encoder = null;
            thrown = null;
        }

        @Override
        public long encode(MemorySegment target) {
            calls++;
            try {
                return returned = encoder.encode(target);
            } catch (Throwable t) {
                thrown = t;
                throw t;
            }
        }

        @Override
        public long encode(MemorySegment memory, long offset, long maxLength) {
            calls++;
            try {
                return returned = encoder.encode(memory, offset, maxLength);
            } catch (Throwable t) {
                thrown = t;
                throw t;
            }
        }
    }

    /** A send on this endpoint from inside its encoder: its message is not complete, and the send would overwrite or overtake it. */
    private static IllegalStateException encoderSent() {
        return new IllegalStateException("a PayloadEncoder sent on the endpoint it is encoding for; it must not (its own message "
                + "is not complete, and the send would overwrite or overtake it): send after send(...) returns");
    }

    /**
     * The buffer a worker's endpoints encode payloads of more than {@value #ENCODED_HERE_UP_TO} bytes
     * into when they cannot write in place ({@link #encodeHere}), up to {@link PendingQueue#RETAIN}
     * bytes, kept for later sends: one per worker, where each endpoint kept one of its own until
     * 2026-12-04 (a publisher with an endpoint per subscriber kept up to 4 MiB of native memory per
     * subscriber). An encode takes it and gives it back as its send returns, so that it is never
     * handed to two encodes at once: one that finds it taken, the send an encoder makes on another
     * endpoint of the worker or, under {@code PASS_THROUGH}, another thread's encode, uses its
     * endpoint's own buffer instead. Taken atomically under {@code PASS_THROUGH}, where endpoints
     * encode concurrently; through a plain field where the worker's guard lets one thread in at a
     * time (its entry sees what the previous holder gave back), which costs the send no atomic
     * instruction. Only by sends that cannot go to the transport in place, never by those of at
     * most {@value #ENCODED_HERE_UP_TO} bytes.
     */
    static final class SharedEncodingBuffer {
        private static final VarHandle BUFFER;

        static {
            try {
                BUFFER = MethodHandles.lookup().findVarHandle(SharedEncodingBuffer.class, "buffer", MemorySegment.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        /** Whether calls on the worker run concurrently ({@code PASS_THROUGH}): then the buffer is taken atomically. */
        private final boolean concurrent;
        /** The buffer, {@link MemorySegment#NULL} until the first encode grows it; {@code null} while an encode has it. */
        private MemorySegment buffer = MemorySegment.NULL;

        SharedEncodingBuffer(boolean concurrent) {
            this.concurrent = concurrent;
        }

        /** The buffer, now this caller's until it {@link #give}s it back; {@code null} if another encode has it. */
        MemorySegment take() {
            if (concurrent) return (MemorySegment) BUFFER.getAndSet(this, (MemorySegment) null);
            MemorySegment b = buffer;
            buffer = null;
            return b;
        }

        /** Gives back what {@link #take} returned, or the larger buffer it was replaced with. */
        void give(MemorySegment taken) {
            if (concurrent) BUFFER.setRelease(this, taken);
            else buffer = taken;
        }

        /** Bytes of native memory it holds while no encode has it (tests). */
        long bytes() {
            MemorySegment b = (MemorySegment) BUFFER.getAcquire(this);
            return b == null ? 0 : b.byteSize();
        }
    }

    /**
     * Lets the encoder write into a buffer of the runtime's, then hands the message to the transport
     * as the local queue hands its records (the ranged {@code trySend}), or queues it: a small
     * payload (one copy more, no view), any over a transport without zero-copy send, and any that
     * would wait behind the local queue or found no room. Up to {@value #ENCODED_HERE_UP_TO} bytes
     * the encoder gets a view of {@link #scratch} kept per length; above, the ranged call on the
     * worker's {@link SharedEncodingBuffer} (this endpoint's own when another encode has it), which
     * holds nothing else, so that a stray write past the range reaches no message (never the local
     * queue's records, which nothing would check).
     */
    private long encodeHere(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        if (maxLength <= ENCODED_HERE_UP_TO) {
            MemorySegment target = scratchTarget(maxLength);
            return sendEncoded(id, header, scratch, PayloadEncoder.checkWritten(encoder.encode(target), maxLength));
        }
        if (maxLength > PendingQueue.RETAIN) {
            // Past RETAIN a buffer of its own, freed as the send returns (what the encoder wrote was sent or copied into the
            // local queue), as the local queue gives back a segment this large: an automatic arena held it until the GC ran.
            // Confined to this thread, which encodes, sends and queues it: a shared arena's close stops every thread of the
            // JVM (a handshake), every worker's polling one included, once per such send. A transport confined to a thread
            // of its own reads it there, so shared for it (ConfinedTransport would copy a confined one into GC-freed memory).
            try (Arena arena = transportOnItsOwnThread ? Arena.ofShared() : Arena.ofConfined()) {
                return encodeInto(allocateScratch(arena, maxLength), id, header, maxLength, encoder);
            }
        }
        SharedEncodingBuffer shared = sharedEncodingBuffer;
        MemorySegment buffer = shared.take();
        if (buffer == null) return encodeInto(scratch(maxLength), id, header, maxLength, encoder);
        try {
            if (buffer.byteSize() < maxLength) buffer = allocateScratch(maxLength);
            return encodeInto(buffer, id, header, maxLength, encoder);
        } finally {
            shared.give(buffer);
        }
    }

    /** {@code length} bytes of native memory for an encoding buffer, of an automatic arena (kept for later sends). */
    private MemorySegment allocateScratch(long length) {
        try {
            return Arena.ofAuto().allocate(length, 8);
        } catch (OutOfMemoryError e) {
            throw noRoomToEncode(length, true, e);
        }
    }

    /** {@code length} bytes of native memory for an encoding buffer, from {@code arena}, a confined or shared one. */
    private MemorySegment allocateScratch(Arena arena, long length) {
        try {
            return arena.allocate(length, 8);
        } catch (OutOfMemoryError e) {
            throw noRoomToEncode(length, false, e);
        }
    }

    private ConduitException noRoomToEncode(long length, boolean automatic, OutOfMemoryError e) {
        return NativeBuffers.noRoom("cannot encode a payload of up to " + length + " bytes (maxLength) for transport '" + transport
                + "'", length, automatic, "A zero-copy send is encoded there, and then sent or copied into the local queue, when "
                + "the transport has no room for it now (over memfd and posix: the connection's bounce ring still holds payloads the "
                + "peer has not released) or messages already wait locally. Progress the worker until pending() is 0 before such a "
                + "send, pass a smaller maxLength, or give the transport room for what is in flight (" + transport + ".bounce.size "
                + "over memfd and posix); a buffer of up to " + PendingQueue.RETAIN + " bytes is kept for later sends (one per "
                + "worker, shared by its endpoints), a larger one freed as the send returns", e);
    }

    /** Lets the encoder write into {@code buffer} through its ranged call, then sends or queues what it wrote. */
    private long encodeInto(MemorySegment buffer, int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
        return sendEncoded(id, header, buffer, PayloadEncoder.checkWritten(encoder.encode(buffer, 0, maxLength), maxLength));
    }

    /**
     * After a transport refused a message: throws the peer's failure when the transport reported it
     * in that very send (the SPI asks it to throw it then; one that only reports it must not have the
     * message queued on an endpoint that failed, as if it waited its turn).
     */
    private void refuseIfReportedFailed() {
        if (failure != null) throw rethrowable();
    }

    /** Hands the {@code written} bytes an encoder wrote at the start of {@code buffer} to the transport, or to the local queue. */
    private long sendEncoded(int id, MemorySegment header, MemorySegment buffer, long written) {
        if (pending.isEmpty()) {
            boolean sent;
            try {
                sent = te.trySend(id, header, 0, (int) header.byteSize(), buffer, 0, written);
            } catch (PeerFailedException e) {
                throw failedNow(e);
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw thrownBy(transport, "trySend", e);
            }
            if (sent) return written;
            refuseIfReportedFailed();
            pending.add(id, header, buffer, 0, written);
            markBacklogged();
        } else {
            pending.add(id, header, buffer, 0, written);
        }
        return written;
    }

    /** {@link #scratch}, grown to at least {@code length} bytes. */
    private MemorySegment scratch(long length) {
        if (scratch.byteSize() < length) {
            scratch = allocateScratch(Math.max(length, ENCODED_HERE_UP_TO));
            targets = null;
        }
        return scratch;
    }

    /** {@code maxLength} (at most {@value #ENCODED_HERE_UP_TO}) bytes of {@link #scratch}: a view made once per length. */
    private MemorySegment scratchTarget(long maxLength) {
        scratch(maxLength);
        if (targets == null) targets = new MemorySegment[ENCODED_HERE_UP_TO + 1];
        MemorySegment target = targets[(int) maxLength];
        if (target == null) targets[(int) maxLength] = target = scratch.asSlice(0, maxLength);
        return target;
    }

    /** Bytes of native memory this endpoint's own encoding buffer holds (tests; the worker's shared one is apart). */
    long encodingBytesHeld() {
        return scratch.byteSize();
    }

    /** The local queue was empty and holds a message now. */
    private void markBacklogged() {
        backlogged = true;
        worker.backlogChanged(1);
    }

    /**
     * A payload's limit names what raises it as the plugin says ({@code TransportEndpoint.maxPayloadSizeRemedy}); a
     * header's, and a payload's of a plugin that does not say, point to where each plugin's limits and keys are.
     */
    private IllegalArgumentException tooLarge(String what, long size, long limit) {
        boolean header = what.startsWith("header");
        String remedy = null;
        Exception remedyFailure = null;
        if (!header) {
            try {
                remedy = te.maxPayloadSizeRemedy();
            } catch (Exception e) { // plugin code, a checked exception thrown undeclared too: its failure must not hide the refusal, nor be lost
                remedyFailure = e;
            }
        }
        IllegalArgumentException e = new IllegalArgumentException(what + " of " + size + " bytes is larger than transport '" + transport
                + "' carries on this endpoint (" + limit + " bytes, Endpoint." + (header ? "maxHeaderSize" : "maxPayloadSize")
                + "()); send less, or split it" + (remedy != null && !remedy.isBlank() ? "; or raise the limit: " + remedy
                : ". docs/plugins.md gives each plugin's limits and the keys that set those that can be set"));
        if (remedyFailure != null) e.addSuppressed(remedyFailure);
        return e;
    }

    @Override
    public int maxHeaderSize() {
        return maxHeader;
    }

    @Override
    public long maxPayloadSize() {
        return maxPayload;
    }

    @Override
    public long pending() {
        boolean entered = worker.enter();
        try {
            lock();
            try {
                return pending.messages();
            } finally {
                unlock();
            }
        } finally {
            worker.exit(entered);
        }
    }

    @Override
    public long pendingBytes() {
        boolean entered = worker.enter();
        try {
            lock();
            try {
                return pending.bytes();
            } finally {
                unlock();
            }
        } finally {
            worker.exit(entered);
        }
    }

    boolean backlogged() {
        return backlogged;
    }

    /**
     * Hands queued messages to the transport in order, stopping at its first refusal. Called by the
     * worker's progress, inside its guard, outside any transport's progress. A reply endpoint whose
     * connection ended ({@link #closeAsEnded}) closes once the last is taken.
     *
     * @return how many the transport took
     */
    int drain() {
        int sent = 0;
        lock();
        try {
            if (!backlogged) return 0;
            while (!pending.isEmpty()) {
                boolean ok;
                handingOver = true;
                try {
                    ok = pending.offerHead(te);
                } catch (PeerFailedException e) {
                    endHandOver(e);
                    return sent;
                } catch (RuntimeException | Error e) {
                    endHandOver(null);
                    throw e;
                } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                    endHandOver(null);
                    throw thrownBy(transport, "trySend", e);
                }
                if (ok) {
                    pending.remove();
                    sent++;
                }
                if (endHandOver(null) || !ok) return sent;
            }
            backlogged = false;
            worker.backlogChanged(-1);
            if (connectionEnded == null) return sent;
        } finally {
            unlock();
        }
        close(true); // the connection it answered ended while answers waited here: the transport has them all now
        return sent;
    }

    /**
     * Ends {@link #drain}'s hand-over of the queue's head, once the message the transport took, if
     * it took it, is off the queue: fails the endpoint with what the transport reported meanwhile,
     * or else with {@code thrown}, when either is there (true then).
     */
    private boolean endHandOver(PeerFailedException thrown) {
        handingOver = false;
        PeerFailedException cause = reportedDuringHandOver != null ? reportedDuringHandOver : thrown;
        reportedDuringHandOver = null;
        if (cause == null) return false;
        fail(cause);
        return true;
    }

    /**
     * The keepalive's look at the peer ({@link TransportEndpoint#checkPeer}), unless this endpoint
     * is closed or failed, or its transport has no probe. A peer found dead fails the endpoint, as a
     * transport's report does; the worker's round calls the error handler. Called by the worker's
     * progress, inside its guard, outside any transport's progress on this thread. The probe runs
     * without this endpoint's lock, as {@code put} and {@code flush} do: a plugin whose probe takes
     * a lock of its own under which its progress reports a failure (which takes this lock) would
     * otherwise deadlock with it under {@code PASS_THROUGH}.
     *
     * @return whether the probe failed the endpoint now
     */
    boolean checkPeer() {
        lock();
        try {
            if (!probesPeer || closed || failure != null) return false;
        } finally {
            unlock();
        }
        try {
            te.checkPeer();
            return false;
        } catch (PeerFailedException e) {
            boolean first = failure == null;
            fail(e);
            return first;
        } catch (NotSupportedException e) {
            probesPeer = false;
            return false;
        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
            throw thrownBy(transport, "checkPeer", e);
        }
    }

    // ---------------------------------------------------------------- failure

    @Override
    public boolean isFailed() {
        boolean entered = worker.enter();
        try {
            return failure != null;
        } finally {
            worker.exit(entered);
        }
    }

    @Override
    public PeerFailedException failure() {
        boolean entered = worker.enter();
        try {
            return failure;
        } finally {
            worker.exit(entered);
        }
    }

    /**
     * {@link #failure()} without the worker's guard (the field is volatile), for what promises to need
     * none: {@link RuntimePeerRegion#exporterState()}, asked from a watcher thread of its own.
     */
    PeerFailedException failureWithoutGuard() {
        return failure;
    }

    /**
     * Fails the endpoint once: discards and counts the local queue, keeps the failure, and asks the
     * worker to call the error handler on its progress thread. Ignored once failed or closed.
     */
    void fail(PeerFailedException cause) {
        lock();
        try {
            if (failure != null || closed) return;
            if (handingOver) { // reported by the transport inside drain's hand-over, on this thread: drain fails it next
                if (reportedDuringHandOver == null) reportedDuringHandOver = cause;
                return;
            }
            long messages = pending.messages();
            long bytes = pending.bytes();
            pending.clear();
            if (backlogged) {
                backlogged = false;
                worker.backlogChanged(-1);
            }
            String discarded = messages == 0 ? "no message was waiting in the local queue"
                    : Counts.messages(messages) + " (" + Counts.bytes(bytes) + ") waiting in the local queue "
                      + (messages == 1 ? "was" : "were") + " discarded";
            // Made of the transport's failure, it keeps its reason (PeerFailedException(String, PeerFailedException)), as
            // every failure made of this one does: what the application acts on is the transport's verdict.
            failure = new PeerFailedException("endpoint over '" + transport + "' to " + peer + " failed: " + cause.getMessage()
                    + "; " + discarded, cause);
            WorkerEvents.EndpointFailure event = new WorkerEvents.EndpointFailure();
            if (event.shouldCommit()) {
                event.transport = transport;
                event.peer = peer;
                event.reason = cause.getMessage();
                event.discardedMessages = messages;
                event.discardedBytes = bytes;
                event.commit();
            }
        } finally {
            unlock();
        }
        worker.failureToReport();
    }

    /** Fails the endpoint because an operation found the peer dead; returns what the caller throws. */
    private PeerFailedException failedNow(PeerFailedException e) {
        fail(e);
        return failure == null ? e : rethrowable();
    }

    private PeerFailedException rethrowable() {
        PeerFailedException f = failure;
        return new PeerFailedException(f.getMessage(), f);
    }

    /**
     * Calls the error handler if the endpoint failed, is not closed, and the handler was not called
     * yet. On the progress thread, inside the worker's guard; its exception goes to {@code delivery}.
     * A closed endpoint was given back by its close; the worker's report walks the endpoints as they
     * were when it began, so one that an earlier error handler of the same report closed comes here
     * too, and is not called back (Worker.connect's promise).
     *
     * @return whether the handler was called (or the failure logged): the worker then gives back what the endpoint holds
     */
    boolean reportFailure(MessageDispatch.Delivery delivery) {
        PeerFailedException f = failure;
        if (f == null || closed || !NOTIFIED.compareAndSet(this, false, true)) return false;
        Thread previous = delivery.thread;
        delivery.thread = Thread.currentThread();
        delivery.callBackBegins();
        try {
            if (onError != null) {
                onError.onError(this, f);
            } else {
                LOG.log(System.Logger.Level.WARNING, f.getMessage() + (reply
                        ? " (an endpoint that replyEndpoint() gave, which has no error handler: its next use throws this; to be called "
                        + "back, connect to the sender's address with an error handler)"
                        : " (no error handler was given to connect)"));
            }
        } catch (Throwable t) {
            delivery.fail(t);
        } finally {
            delivery.callBackEnds();
            delivery.thread = previous;
        }
        return true;
    }

    /**
     * Gives back what a failed endpoint holds, once its failure was reported: its peer regions, its
     * transport endpoint and its place among the worker's endpoints. An application that drops a
     * failed endpoint unclosed (its error handler connects to the peer's successor) left all three
     * to the worker's close, some 3 KiB of heap per endpoint and a longer copy at every connect
     * for a worker whose peers restart for weeks. The endpoint stays failed, not closed: its calls
     * still throw the failure, and its close is still allowed.
     */
    void releaseFailed() {
        release(true, null);
    }

    /** Fails unless the endpoint can be used: open, worker open, not failed. */
    private void checkUsable() {
        worker.ensureOpen(); // first: a worker closed with its Conduit says so, which the endpoint's own message would not
        RuntimeException refused = unusable();
        if (refused != null) throw refused;
    }

    /**
     * What a call on this endpoint throws, or null while it is usable: its close, else its failure, else the end of the
     * connection it answered. A failure comes before the end that closed the failed endpoint after it (the transport tells a
     * dead sender's end after its failure): the failure is the transport's verdict (DIED), the end says only UNKNOWN.
     */
    private RuntimeException unusable() {
        if (closed && connectionEnded == null) return closedException();
        return failedOrEnded();
    }

    /** Its failure, else the end of the connection it answered, as a call throws it; null when neither happened. */
    private RuntimeException failedOrEnded() {
        if (failure != null) return rethrowable();
        return connectionEnded != null ? closedException() : null;
    }

    /**
     * What a call on the closed endpoint throws: the end of the connection a reply endpoint answered, or its close, with the
     * remedy its owner can follow (a reply endpoint's application may never have been given the sender's address).
     */
    private RuntimeException closedException() {
        PeerFailedException ended = connectionEnded;
        if (ended != null) return new PeerFailedException(ended.getMessage(), ended);
        return new IllegalStateException("endpoint over '" + transport + "' to " + peer + " is closed: it takes no more calls; "
                + (reply ? "it was a message's replyEndpoint(): answer that sender's next message through its own replyEndpoint()"
                           : "connect again (Worker.connect) to reach that peer"));
    }

    /**
     * What the application gets for {@code thrown}, which plugin {@code plugin}'s transport threw
     * from {@code operation}: the SPI's own failures as they are (a {@code ConduitException}; an
     * {@code IllegalStateException}, a transport or memory closed under the call; an
     * {@code IllegalArgumentException}, a limit of the plugin's; a {@code WrongThreadException}, the
     * JDK's for an application's segment confined to another thread, which the plugin reads or
     * writes for the caller), anything else named as most likely the plugin's fault
     * ({@link PluginRecord#failed}), a checked one it threw undeclared (Kotlin, {@code @SneakyThrows})
     * too. A plugin's {@code NullPointerException} or {@code IndexOutOfBoundsException} used to reach
     * the application as it was, from calls whose callers catch {@code ConduitException}, naming
     * neither the plugin nor the operation.
     */
    static RuntimeException thrownBy(String plugin, String operation, Exception thrown) {
        if (thrown instanceof IllegalStateException || thrown instanceof IllegalArgumentException
                || thrown instanceof WrongThreadException) {
            return (RuntimeException) thrown;
        }
        return PluginRecord.failed(plugin, operation + "()", thrown);
    }

    // ---------------------------------------------------------------- RMA

    @Override
    public PeerRegion peerRegion(byte[] handle) {
        Objects.requireNonNull(handle, "handle");
        boolean entered = worker.enter();
        try {
            checkUsable();
            RuntimePeerRegion region = new RuntimePeerRegion(this, worker.remoteMemory().open(handle));
            RuntimeException refused;
            synchronized (regions) {
                // Under PASS_THROUGH another thread may have run this endpoint's close (it sets closed) or reported its
                // failure (it sets failure; releaseFailed follows) meanwhile: each then takes the regions here, and a
                // region added after it would be released by nobody.
                refused = unusable();
                if (refused == null) {
                    regions.add(region);
                    return region;
                }
            }
            try {
                region.closeByEndpoint();
            } catch (RuntimeException | Error e) {
                refused.addSuppressed(e);
            }
            throw refused;
        } finally {
            worker.exit(entered);
        }
    }

    void regionClosed(RuntimePeerRegion region) {
        synchronized (regions) {
            regions.remove(region);
        }
    }

    @Override
    public void put(MemorySegment source, PeerRegion target, long offset) {
        Objects.requireNonNull(source, "source");
        requireOpen(source, "source", "put");
        boolean entered = worker.enter();
        try {
            RemoteRegion r = region(target, "target", "put");
            checkRange("put", offset, source.byteSize(), target);
            requireCapability(rma, "put", Capability.RMA);
            checkUsable();
            checkWritable("put", r);
            try {
                te.put(source, r, offset);
            } catch (PeerFailedException e) {
                throw failedNow(e);
            } catch (NotSupportedException e) {
                throw unsupported("put", "RMA", r, e);
            } catch (IllegalStateException e) {
                throw closedUnder(target, e);
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw thrownBy(transport, "put", e);
            }
        } finally {
            worker.exit(entered);
        }
    }

    @Override
    public void get(PeerRegion source, long offset, MemorySegment destination) {
        Objects.requireNonNull(destination, "destination");
        requireOpen(destination, "destination", "get");
        boolean entered = worker.enter();
        try {
            RemoteRegion r = region(source, "source", "get");
            checkRange("get", offset, destination.byteSize(), source);
            if (destination.isReadOnly()) throw new IllegalArgumentException("get into a read-only destination segment: get writes "
                    + "the bytes it reads into it; pass a writable segment (a Message's payload(), a region mapped read-only and an "
                    + "asReadOnly() view are not)");
            requireCapability(rma, "get", Capability.RMA);
            checkUsable();
            try {
                te.get(r, offset, destination);
            } catch (PeerFailedException e) {
                throw failedNow(e);
            } catch (NotSupportedException e) {
                throw unsupported("get", "RMA", r, e);
            } catch (IllegalStateException e) {
                throw closedUnder(source, e);
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw thrownBy(transport, "get", e);
            }
        } finally {
            worker.exit(entered);
        }
    }

    @Override
    public long fetchAdd(PeerRegion target, long offset, long delta) {
        boolean entered = worker.enter();
        try {
            RemoteRegion r = region(target, "target", "fetchAdd");
            checkWord("fetchAdd", offset, target);
            requireCapability(atomics, "fetchAdd", Capability.ATOMICS);
            checkUsable();
            checkWritable("fetchAdd", r);
            try {
                return te.fetchAdd(r, offset, delta);
            } catch (PeerFailedException e) {
                throw failedNow(e);
            } catch (NotSupportedException e) {
                throw unsupported("fetchAdd", "ATOMICS", r, e);
            } catch (IllegalStateException e) {
                throw closedUnder(target, e);
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw thrownBy(transport, "fetchAdd", e);
            }
        } finally {
            worker.exit(entered);
        }
    }

    @Override
    public long compareAndSwap(PeerRegion target, long offset, long expected, long desired) {
        boolean entered = worker.enter();
        try {
            RemoteRegion r = region(target, "target", "compareAndSwap");
            checkWord("compareAndSwap", offset, target);
            requireCapability(atomics, "compareAndSwap", Capability.ATOMICS);
            checkUsable();
            checkWritable("compareAndSwap", r);
            try {
                return te.compareAndSwap(r, offset, expected, desired);
            } catch (PeerFailedException e) {
                throw failedNow(e);
            } catch (NotSupportedException e) {
                throw unsupported("compareAndSwap", "ATOMICS", r, e);
            } catch (IllegalStateException e) {
                throw closedUnder(target, e);
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw thrownBy(transport, "compareAndSwap", e);
            }
        } finally {
            worker.exit(entered);
        }
    }

    @Override
    public void flush() {
        boolean entered = worker.enter();
        try {
            checkUsable();
            try {
                te.flush();
            } catch (PeerFailedException e) {
                throw failedNow(e);
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw thrownBy(transport, "flush", e);
            }
        } finally {
            worker.exit(entered);
        }
    }

    /** The transport's view of {@code region}, the operation's argument named {@code parameter}. */
    private RemoteRegion region(PeerRegion region, String parameter, String op) {
        Objects.requireNonNull(region, parameter);
        if (!(region instanceof RuntimePeerRegion r) || r.owner != this) {
            throw new IllegalArgumentException(op + ": the PeerRegion was not opened through this endpoint; open it with peerRegion(handle) on the endpoint that uses it");
        }
        // A closed worker (or its Conduit's close) closed the endpoint and its regions: the region's remedy, a live endpoint,
        // would not do, another worker would. Then the progress() that reported the failure gave the endpoint's regions
        // back, and the end of a reply endpoint's connection closed them: the failure or the end, as the endpoint's send
        // throws it, is the cause, not their close.
        worker.ensureOpen();
        RuntimeException refused = failedOrEnded();
        if (refused != null) throw refused;
        // One the application closed, on an endpoint closed since: the region's remedy, peerRegion(handle) again, would
        // meet the endpoint's close (EndpointRmaTest#aRegionClosedWithItsEndpointSaysSo).
        if (closed && r.closedByApplication()) throw closedException();
        return r.remote();
    }

    /**
     * An operation's {@code IllegalStateException} once its region was closed under it: a PeerRegion's close takes no worker
     * guard (it is thread-safe), and a PASS_THROUGH endpoint's close runs beside the operation. When that close released the
     * chunk's last count and the IPC cache did not keep it, the mapping went under the access, which the JDK fails with a bare
     * "Already closed": the region's close is the cause to name. Any other is the transport's own, thrown as it is. A
     * region that the report of the endpoint's failure gave back (a PASS_THROUGH progress() on another thread) was closed
     * by the peer's failure, not by the application: that failure is thrown, as by every later call, with the access's.
     */
    private RuntimeException closedUnder(PeerRegion region, IllegalStateException e) {
        RuntimeException closed = ((RuntimePeerRegion) region).closedUnder(e);
        if (closed == e || failure == null) return closed;
        PeerFailedException failed = rethrowable();
        failed.addSuppressed(e);
        return failed;
    }

    /**
     * Refuses an application's segment whose arena is closed, naming it: the transport's copy would throw the JDK's bare
     * "Already closed", which names no segment, where Endpoint's javadoc gives that exception to a closed region, endpoint
     * or worker. One check of the segment's scope; an arena another thread closes after it still shows the JDK's.
     */
    private static void requireOpen(MemorySegment segment, String parameter, String op) {
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException(op + ": the " + parameter + " segment is closed (its arena was closed): pass a segment "
                    + "of an arena still open, and close it only once the call returned");
        }
    }

    /** A put or an atomic needs a region this process may write: one mapped here read-only (posix through a read-only mount) takes none. */
    private static void checkWritable(String op, RemoteRegion region) {
        MemorySegment local = region.localSegment();
        if (local != null && local.isReadOnly()) {
            throw new IllegalArgumentException(op + " into a peer region that plugin '" + region.pluginName() + "' could map only for "
                    + "reading in this process (posix does so through a read-only mount); mount the directory read-write to write to it");
        }
    }

    private static void checkRange(String op, long offset, long length, PeerRegion region) {
        long size = region.size();
        if (offset < 0 || offset > size || length > size - offset) {
            throw new IndexOutOfBoundsException(op + " of " + Counts.bytes(length) + " at offset " + offset + " is outside the peer "
                    + "region of " + Counts.bytes(size));
        }
    }

    private static void checkWord(String op, long offset, PeerRegion region) {
        if ((offset & 7) != 0) {
            throw new IllegalArgumentException(op + " at offset " + offset + ": atomics work on 8-byte words at offsets that are a multiple of 8");
        }
        checkRange(op, offset, 8, region);
    }

    private void requireCapability(boolean offered, String op, Capability capability) {
        if (!offered) {
            String why = worker.whyNotHere(transport, capability);
            throw new NotSupportedException(op + ": transport '" + transport + "' of this endpoint "
                    + (why == null ? "does not declare capability " + capability : "offers no capability " + capability + " here: " + why)
                    + "; connect through a transport that does");
        }
    }

    /**
     * The transport's refusal of an operation whose capability it declares (the runtime checked that):
     * it cannot do it on this region (verbs: a region of another plugin) or here (verbs: a device
     * without atomics decides per call), so the region's plugin and the transport's reason are the
     * cause to name, not a missing capability.
     */
    private NotSupportedException unsupported(String op, String capability, RemoteRegion region, NotSupportedException e) {
        // A region the runtime could not map here refuses every operation of a transport that needs a mapping: say why it is not
        // mapped. A transport that reaches other hosts needs none (verbs maps no region of its own plugin): its reason is the cause.
        String unmapped = region.localSegment() == null && !worker.reachesRegionsUnmapped(transport)
                ? IpcImports.whyNotMapped(region) : null;
        NotSupportedException n = new NotSupportedException(unmapped != null
                ? op + ": the peer region is not mapped in this process, and transport '" + transport + "' of this endpoint reaches it "
                        + "only through a mapping: " + unmapped + " (" + e.getMessage() + ")"
                : op + ": transport '" + transport + "' of this endpoint declares capability " + capability + " but refused " + op
                        + " on this peer region (exported by plugin '" + region.pluginName() + "'): " + e.getMessage());
        n.initCause(e);
        return n;
    }

    // ---------------------------------------------------------------- closing

    @Override
    public void close() {
        boolean entered = worker.enter();
        try {
            refuseFromItsEncoder();
            close(true);
        } finally {
            worker.exit(entered);
        }
    }

    /**
     * An encoder that closes the endpoint it is encoding for would unmap, under its own send, the
     * memory its claimed record lies in: the record could be neither committed nor given back, and
     * the peer's queue would wait for it, for every sender, while this worker lives. Under the
     * endpoint's lock, so that another thread's close waits for the send instead.
     */
    private void refuseFromItsEncoder() {
        lock();
        try {
            if (encodingThread != null) {
                throw new IllegalStateException("a PayloadEncoder closed the endpoint it is encoding for; it must not (its message "
                        + "is under way in the peer's memory): close after send(...) returns");
            }
        } finally {
            unlock();
        }
    }

    /**
     * A weak reference to this endpoint, the same each time: a thread that answers two senders in
     * turn remembers each endpoint again and again, and must not allocate a reference each time.
     */
    WeakReference<RuntimeEndpoint> weakly() {
        return weakSelf;
    }

    /**
     * Closes this reply endpoint because the connection it answers ended ({@code why}: the sender
     * closed it, or its worker closed or died); its later calls throw {@code why} as a
     * {@link PeerFailedException}. Unregistered from the worker, as {@link #close(boolean)} with true.
     * Answers still waiting in its local queue (the sender's was full) are not discarded: a sender
     * that closed its endpoint may have a live worker that takes them, so the worker's progress
     * hands them to the transport ({@link #drain}) and closes the endpoint once they are all taken,
     * or fails it when the transport finds the sender gone. Until 2026-12-07 they were discarded here.
     */
    void closeAsEnded(PeerFailedException why) {
        lock();
        try {
            if (closed || connectionEnded != null) return;
            connectionEnded = why;
            if (failure == null && backlogged) return;
        } finally {
            unlock();
        }
        close(true);
    }

    /**
     * Whether this endpoint takes no more answers: closed (by the application, its worker, or as the
     * reply endpoint of a connection that ended), or its connection ended while answers still wait
     * in its local queue.
     */
    boolean isClosed() {
        return closed || connectionEnded != null;
    }

    /** Whether an encoder of a send on this endpoint runs on the calling thread now (for the worker's close). */
    boolean encodingOnCurrentThread() {
        return encodingThread == Thread.currentThread();
    }

    /**
     * Closes: tries once to hand queued messages to the transport, discards (and logs) the rest,
     * closes the peer regions and the transport endpoint. The transport endpoint is closed later,
     * after the transport's progress step, when a message handler closes it from inside that step.
     * An {@code Error} from the transport while it takes the queued messages (a fault in mapped
     * memory is an {@code InternalError}) is thrown as it is once everything else is closed.
     *
     * @param unregister whether to remove this endpoint from its worker (not when the worker closes it)
     */
    void close(boolean unregister) {
        long dropped;
        Throwable drainRefused = null;
        lock();
        try {
            if (closed) return;
            // Closed before the hand-over: a transport that reports the peer's failure through the events before its send
            // throws it (memfd and posix, for a faulted mapping or a damaged queue) would otherwise fail the endpoint there,
            // discarding the backlog into a failure nobody is told of (a closed endpoint is not called back), not counted here.
            boolean handOver = failure == null && backlogged;
            closed = true;
            if (handOver) drainRefused = drainQuietly();
            dropped = pending.clear();
            if (backlogged) {
                backlogged = false;
                worker.backlogChanged(-1);
            }
        } finally {
            unlock();
        }
        if (dropped > 0) {
            // Best effort: out of descriptors the logger's Error would leave the endpoint closed and nothing given back.
            Throwable refused = drainRefused;
            long discarded = dropped;
            BestEffortLog.warn(LOG, () -> "endpoint over '" + transport + "' to " + peer + " closed with " + discarded
                    + " messages still waiting in its local queue; they were discarded. " + (refused instanceof PeerFailedException f
                    ? "The transport refused them, the peer having failed (" + f.getMessage() + "): no progress() would have delivered them"
                    : refused instanceof RuntimeException r ? "The transport refused them as the close handed them over (" + r + ")"
                    : connectionEnded != null
                    ? "The connection it answered had ended, and its worker's progress was handing them to the sender's worker: "
                    + "progress the worker until pending() is 0 before closing it, or the endpoint"
                    : "Progress the worker until pending() is 0 before closing."), null);
        }
        release(unregister, drainRefused instanceof Error e ? e : null);
    }

    /**
     * Closes the peer regions and the transport endpoint, and leaves the worker if {@code unregister};
     * then throws {@code earlier} (what the close met before), if any, with its own failures suppressed.
     */
    private void release(boolean unregister, Throwable earlier) {
        lock();
        try {
            if (released) { // the report of its failure gave it back: its close has nothing left to give
                CloseFailures.rethrow(earlier);
                return;
            }
            released = true;
        } finally {
            unlock();
        }
        Throwable failure = earlier;
        List<RuntimePeerRegion> open;
        synchronized (regions) {
            open = List.copyOf(regions);
            regions.clear();
        }
        for (RuntimePeerRegion r : open.reversed()) {
            try {
                r.closeByEndpoint();
            } catch (RuntimeException | Error e) { // the transport's endpoint is still closed
                if (failure == null) failure = e;
                else failure.addSuppressed(e);
            }
        }
        if (unregister) worker.removeEndpoint(this);
        try {
            worker.closeTransportEndpoint(transport, te);
        } catch (Exception | Error e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): named, not thrown bare
            Throwable closing = e instanceof Exception thrown ? thrownBy(transport, "close", thrown) : e;
            if (failure == null) failure = closing;
            else failure.addSuppressed(closing);
        }
        CloseFailures.rethrow(failure);
    }

    /**
     * Hands what the queue holds to the transport until it refuses one.
     *
     * @return what the transport threw, else null: a {@code RuntimeException} (a {@link PeerFailedException}: the peer
     *         failed) for the close's WARNING to name, the rest of the queue being discarded anyway, a checked exception
     *         thrown undeclared (Kotlin, {@code @SneakyThrows}) named as the plugin's fault ({@link #thrownBy}); an
     *         {@code Error} for the close to throw once it closed the rest (thrown from here, it left the endpoint open for
     *         good, as a checked one did until 2026-12-07:
     *         EndpointMessagingTest#aCheckedExceptionWhileAClosingEndpointHandsOverItsBacklogStillClosesIt)
     */
    private Throwable drainQuietly() {
        try {
            while (!pending.isEmpty() && pending.offerHead(te)) {
                pending.remove();
            }
        } catch (RuntimeException | Error e) {
            return e;
        } catch (Exception e) { // a checked one, thrown undeclared: past the close, it left the endpoint open for good
            return thrownBy(transport, "trySend", e);
        }
        return null;
    }

    private void lock() {
        if (lock != null) lock.lock();
    }

    private void unlock() {
        if (lock != null) lock.unlock();
    }

    @Override
    public String toString() {
        return "Endpoint[" + transport + " to " + peer + (closed ? ", closed" : failure != null ? ", failed" : "") + "]";
    }

    /**
     * What a transport reports to, made before it connects (it may report while connecting), and
     * bound to the endpoint once there is one. A report before binding is kept and applied then;
     * the events of a connection attempt that failed are never bound, so their reports go nowhere.
     */
    static final class Events implements EndpointEvents {
        private final String transport;
        private RuntimeEndpoint endpoint;
        private PeerFailedException early;

        Events(String transport) {
            this.transport = transport;
        }

        @Override
        public void peerFailed(PeerFailedException cause) {
            PeerFailedException c = Objects.requireNonNullElseGet(cause,
                    () -> new PeerFailedException("transport '" + transport + "' reported a failure without a cause"));
            RuntimeEndpoint ep;
            synchronized (this) {
                ep = endpoint;
                if (ep == null) {
                    if (early == null) early = c;
                    return;
                }
            }
            ep.fail(c);
        }

        void bind(RuntimeEndpoint ep) {
            PeerFailedException f;
            synchronized (this) {
                endpoint = ep;
                f = early;
            }
            if (f != null) ep.fail(f);
        }
    }
}
