package dev.conduit.internal.worker;

import dev.conduit.internal.threading.ThreadConfinement;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A thread-confined plugin's transport, every call to it and to its endpoints run on one
 * runtime-owned thread ({@code thread.confine}). {@link #signal()} is the exception: it is
 * documented callable from any thread.
 *
 * <p>The application's segments reach the plugin on that thread, where one of an arena confined to
 * the calling thread ({@link Arena#ofConfined()}) cannot be accessed: the plugin's copy of it
 * would throw {@link WrongThreadException} at the one thread that may access it. Such a segment is
 * copied on the calling thread into one the plugin's thread can access (a send's header and
 * payload, a put's source), or a get reads into such a copy and the caller's thread copies it
 * into the destination. Other segments, the usual case, are handed over as they are.
 */
final class ConfinedTransport implements Transport {

    private final Transport delegate;
    private final ThreadConfinement thread;

    ConfinedTransport(Transport delegate, ThreadConfinement thread) {
        this.delegate = delegate;
        this.thread = thread;
    }

    @Override
    public byte[] address() {
        return thread.call(delegate::address);
    }

    @Override
    public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
        TransportEndpoint connected = thread.call(() -> delegate.connect(peerAddress, events));
        return connected == null ? null : new Endpoint(connected); // the worker names a plugin that returned none
    }

    @Override
    public byte[] senderAddress(long sender) {
        return thread.call(() -> delegate.senderAddress(sender));
    }

    /** Called from a handler, which runs on the plugin's thread: no hand-over. */
    @Override
    public Runnable keepDelivered() {
        return thread.call(delegate::keepDelivered);
    }

    @Override
    public int progress() {
        return thread.call(delegate::progress);
    }

    @Override
    public boolean await(long timeoutNanos) {
        return thread.call(() -> delegate.await(timeoutNanos));
    }

    @Override
    public void signal() {
        delegate.signal();
    }

    /** Whether every call to {@code endpoint} runs on a confined transport's thread, not the caller's. */
    static boolean runsOnItsOwnThread(TransportEndpoint endpoint) {
        return endpoint instanceof Endpoint;
    }

    /** {@code segment}, or a copy the plugin's thread can access when it is confined to another thread (the caller's). */
    private MemorySegment reachable(MemorySegment segment) {
        return segment.isAccessibleBy(thread.thread()) ? segment : copy(segment);
    }

    /** A copy of {@code segment}, made on the calling thread, in memory every thread can access. */
    private MemorySegment copy(MemorySegment segment) {
        return accessibleCopy(segment.byteSize()).copyFrom(segment);
    }

    /** {@code length} bytes every thread can access, for a copy of a segment confined to the calling thread. */
    private MemorySegment accessibleCopy(long length) {
        try {
            return Arena.ofAuto().allocate(length, 8);
        } catch (OutOfMemoryError e) {
            throw NativeBuffers.noRoom("cannot copy " + length + " bytes of a segment confined to thread '" + Thread.currentThread()
                    .getName() + "' for the plugin's thread " + thread.thread().getName() + " (thread.confine), which cannot access "
                    + "it", length, true, "Nothing reached the plugin. Pass a segment the plugin's thread can access, of an "
                    + "Arena.ofShared(), Arena.ofAuto() or Arena.global(), or of the heap: it is handed over without a copy", e);
        }
    }

    @Override
    public void close() {
        try {
            thread.run(delegate::close);
        } finally {
            thread.close();
        }
    }

    private final class Endpoint implements TransportEndpoint {
        private final TransportEndpoint ep;

        Endpoint(TransportEndpoint ep) {
            this.ep = ep;
        }

        @Override
        public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
            MemorySegment h = reachable(header);
            MemorySegment p = reachable(payload);
            return thread.call(() -> ep.trySend(id, h, p));
        }

        @Override
        public boolean trySend(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                               MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
            // The runtime's own buffers (its local queue, its encoding buffer) are reachable; the header of an encoded send is the caller's.
            if (!headerBuffer.isAccessibleBy(thread.thread())) {
                MemorySegment h = copy(headerBuffer.asSlice(headerOffset, headerLength));
                MemorySegment p = reachable(payloadBuffer.asSlice(payloadOffset, payloadLength));
                return thread.call(() -> ep.trySend(id, h, 0, headerLength, p, 0, payloadLength));
            }
            if (!payloadBuffer.isAccessibleBy(thread.thread())) {
                MemorySegment p = copy(payloadBuffer.asSlice(payloadOffset, payloadLength));
                return thread.call(() -> ep.trySend(id, headerBuffer, headerOffset, headerLength, p, 0, payloadLength));
            }
            return thread.call(() -> ep.trySend(id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength));
        }

        @Override
        public int maxHeaderSize() {
            return thread.call(ep::maxHeaderSize);
        }

        @Override
        public long maxPayloadSize() {
            return thread.call(ep::maxPayloadSize);
        }

        @Override
        public String maxPayloadSizeRemedy() {
            return thread.call(ep::maxPayloadSizeRemedy);
        }

        @Override
        public void put(MemorySegment source, RemoteRegion target, long offset) {
            MemorySegment s = reachable(source);
            thread.run(() -> ep.put(s, target, offset));
        }

        @Override
        public void get(RemoteRegion source, long offset, MemorySegment destination) {
            if (destination.isAccessibleBy(thread.thread())) {
                thread.run(() -> ep.get(source, offset, destination));
                return;
            }
            MemorySegment into = accessibleCopy(destination.byteSize());
            thread.run(() -> ep.get(source, offset, into));
            destination.copyFrom(into);
        }

        @Override
        public long fetchAdd(RemoteRegion target, long offset, long delta) {
            return thread.call(() -> ep.fetchAdd(target, offset, delta));
        }

        @Override
        public long compareAndSwap(RemoteRegion target, long offset, long expected, long desired) {
            return thread.call(() -> ep.compareAndSwap(target, offset, expected, desired));
        }

        @Override
        public void flush() {
            thread.run(ep::flush);
        }

        @Override
        public void checkPeer() {
            thread.run(ep::checkPeer);
        }

        @Override
        public void close() {
            thread.run(ep::close);
        }
    }
}
