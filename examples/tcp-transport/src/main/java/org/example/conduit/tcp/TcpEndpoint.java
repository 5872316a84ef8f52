package org.example.conduit.tcp;

import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.TransportEndpoint;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * A connection to a peer transport. {@link #trySend} encodes a frame into one reusable buffer and
 * writes what the socket takes; the rest of that one frame is written by later calls and by
 * {@link #progress()}. While a frame is still partly unwritten (the peer does not read and the
 * kernel's buffers are full) {@code trySend} refuses, and the runtime keeps the message: backpressure
 * is the runtime's local queue, never an unbounded one here.
 *
 * <p>The peer writes nothing on this connection after its acknowledgement of the hello, so a read
 * that sees end of stream or an error means the peer's transport or process is gone: the endpoint
 * fails once. A close leaves the connection open until the frame in the buffer is written whole,
 * which the transport's progress() does.
 */
final class TcpEndpoint implements TransportEndpoint {

    private final SocketChannel channel;
    private final EndpointEvents events;
    private final int maxPayload;
    private final String peer;
    private final ByteBuffer out;
    private final MemorySegment outSegment;
    private final ByteBuffer probe = ByteBuffer.allocate(1);
    /** Reported to the runtime, once: every later call throws it. */
    private PeerFailedException failure;
    /** Seen by trySend, to be reported by the next progress(). */
    private PeerFailedException broken;
    private boolean closed;

    /** {@code out}: a {@link Frame#buffer} for {@code maxPayload}, made before the connection, which this then owns. */
    TcpEndpoint(SocketChannel channel, ByteBuffer out, EndpointEvents events, int maxPayload, String peer) {
        this.channel = channel;
        this.events = events;
        this.maxPayload = maxPayload;
        this.peer = peer;
        this.out = out;
        this.outSegment = MemorySegment.ofBuffer(out);
        out.limit(0);
    }

    @Override
    public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
        if (failure != null) throw failure;
        if (closed) throw new IllegalStateException("tcp endpoint to " + peer + " is closed");
        if (broken != null || !writePending()) return false;
        long length = Frame.PREFIX + header.byteSize() + payload.byteSize();
        out.clear();
        out.putInt(0, (int) length).putInt(4, id).putInt(8, (int) header.byteSize());
        MemorySegment.copy(header, 0, outSegment, Frame.PREFIX, header.byteSize());
        MemorySegment.copy(payload, 0, outSegment, Frame.PREFIX + header.byteSize(), payload.byteSize());
        out.limit((int) length);
        writePending();
        return true; // committed: what the socket did not take yet goes out on the next call or progress()
    }

    /** Writes what is left of the current frame; whether it is all written. */
    private boolean writePending() {
        if (!out.hasRemaining()) return true;
        try {
            channel.write(out);
        } catch (IOException e) {
            // Not accepted: the runtime keeps the message and learns of the failure from progress().
            broken = new PeerFailedException("tcp: write to " + peer + " failed: " + e.getMessage());
            return false;
        }
        return !out.hasRemaining();
    }

    /** Flushes the current frame and notices a peer that went away. */
    int progress() {
        if (failure != null || closed) return 0;
        if (broken != null) {
            fail(broken);
            return 1;
        }
        if (peerGone()) return 1;
        if (!out.hasRemaining()) return 0;
        try {
            // Bytes the socket took are the event: a frame waiting on a peer that reads nothing is none (Transport.progress).
            return channel.write(out) > 0 ? 1 : 0;
        } catch (IOException e) {
            fail(new PeerFailedException("tcp: connection to " + peer + " broke: " + e.getMessage()));
            return 1;
        }
    }

    /**
     * The runtime's keepalive probe (once per {@code keepalive.interval}): the look progress() takes
     * at the connection, so that the runtime's keepalive notices a dead peer too.
     */
    @Override
    public void checkPeer() {
        if (failure != null || closed) return;
        peerGone();
    }

    /** Reads the connection the peer never writes on: end of stream or an error means it is gone, and fails the endpoint. */
    private boolean peerGone() {
        try {
            probe.clear();
            if (channel.read(probe) >= 0) return false;
            fail(new PeerFailedException("tcp: peer " + peer + " closed the connection (its worker closed or its process died)"));
        } catch (IOException e) {
            fail(new PeerFailedException("tcp: connection to " + peer + " broke: " + e.getMessage()));
        }
        return true;
    }

    private void fail(PeerFailedException cause) {
        failure = cause;
        TcpTransport.closeQuietly(channel);
        events.peerFailed(failure);
    }

    @Override
    public long maxPayloadSize() {
        return maxPayload;
    }

    /** What Conduit's refusal of a larger payload names as the remedy: the key, on both sides (the connect takes the smaller). */
    @Override
    public String maxPayloadSizeRemedy() {
        return TcpPlugin.MAX_PAYLOAD.nameAndVariable() + " of both processes sets it, the smaller of the two";
    }

    @Override
    public int maxHeaderSize() {
        return Frame.MAX_HEADER;
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * Closes the connection, once the frame trySend last committed is written: a frame the socket
     * has not taken whole yet is a message the peer must still get (TransportEndpoint.close), so
     * the transport's progress() finishes it ({@link #finishAfterClose()}) rather than this call
     * waiting on the peer.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (!out.hasRemaining() || failure != null || broken != null) TcpTransport.closeQuietly(channel);
    }

    /** For a closed endpoint: writes what is left of its last frame; whether that is done and the connection closed. */
    boolean finishAfterClose() {
        if (channel.isOpen() && out.hasRemaining()) {
            try {
                channel.write(out);
                if (out.hasRemaining()) return false;
            } catch (IOException e) {
                // The peer is gone: no one is left to deliver the frame to.
            }
        }
        TcpTransport.closeQuietly(channel);
        return true;
    }

    /** Closes the connection now, written or not: the transport is closing. */
    void release() {
        closed = true;
        TcpTransport.closeQuietly(channel);
    }
}
