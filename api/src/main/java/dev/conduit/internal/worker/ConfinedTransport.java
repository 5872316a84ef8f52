package dev.conduit.internal.worker;

import dev.conduit.internal.threading.ThreadConfinement;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;

import java.lang.foreign.MemorySegment;

/**
 * A thread-confined plugin's transport, every call to it and to its endpoints run on one
 * runtime-owned thread ({@code thread.confine}). {@link #signal()} is the exception: it is
 * documented callable from any thread.
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
            return thread.call(() -> ep.trySend(id, header, payload));
        }

        @Override
        public boolean trySend(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                               MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
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
        public void put(MemorySegment source, RemoteRegion target, long offset) {
            thread.run(() -> ep.put(source, target, offset));
        }

        @Override
        public void get(RemoteRegion source, long offset, MemorySegment destination) {
            thread.run(() -> ep.get(source, offset, destination));
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
        public void close() {
            thread.run(ep::close);
        }
    }
}
