package dev.conduit;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * A received payload kept past its handler ({@link Message#keepPayload()}), until closed: for
 * handing a large payload to another thread without copying it.
 *
 * <p>Where the transport can keep the payload where it received it, {@link #segment()} is that
 * memory (zero-copy: a large payload in the memfd or posix sender's bounce ring); else it is a
 * copy the runtime made as the handler asked (a payload inline in a memfd or posix receive queue,
 * or one of a transport that cannot keep what it delivers). Either way it is read-only, and the
 * same until closed, also when its sender closes or dies meanwhile; but a payload kept in place
 * lies in memory its sender can still write, as the {@link Message}'s own does: input from a peer
 * that is not trusted is copied and checked in the copy (docs/runtime.md).
 *
 * <p>Close it once done: a payload kept in place holds room in its transport's memory, which the
 * sender's later messages may wait for (in a bounce ring, every later large message of that
 * sender's endpoint: queued by the sender's runtime, never dropped); a copy holds native memory,
 * of a shared {@link java.lang.foreign.Arena} of its own that the close closes, which is what makes a
 * view taken before throw. The JDK closes a shared arena with a handshake with every thread of the
 * JVM, a worker's polling thread included; a latency-critical process that hands on many small
 * payloads copies them into memory of its own instead ({@link Message#copyPayload(long,
 * java.lang.foreign.MemorySegment, long, long)}), whose reuse stops nobody.
 * {@code close()} may be called from any thread, and more than once (the calls after one that
 * returned do nothing; one that threw, refused while another thread's native call held a copy's
 * memory, left the payload open for a later close to try again; one that overlaps another, such as
 * the worker's close, waits for it, and tries again itself if that one was refused: a close that
 * returned has given the payload back). After it, {@link #segment()} throws {@link IllegalStateException}; a view taken before
 * reads a copy's memory no more (it throws {@link IllegalStateException}), and a view of a payload
 * kept in place reads bytes that are the transport's to reuse, i.e. undefined, until the transport
 * unmaps them (it then throws too: never a JVM crash).
 *
 * <p>Closing the {@link Worker} that received the payload closes every payload kept from it: its
 * memory is the worker's transports', unmapped by their close.
 */
public final class KeptPayload implements AutoCloseable {

    private final MemorySegment segment;
    private final Runnable release;
    private final Consumer<KeptPayload> forget;
    /** Held by a close through its release: one that overlaps it waits for its outcome ({@link #close()}). */
    private final Object closing = new Object();
    /** Written under {@link #closing}; read without it by {@link #segment()}. */
    private volatile boolean closed;

    /**
     * @param segment the payload, read-only
     * @param release gives the payload's memory back (the transport's action, or a copy's arena close)
     * @param forget  called after {@code release}, to drop the worker's reference to this
     */
    KeptPayload(MemorySegment segment, Runnable release, Consumer<KeptPayload> forget) {
        this.segment = segment;
        this.release = release;
        this.forget = forget;
    }

    /**
     * The payload, read-only; {@code segment().byteSize()} is its length.
     *
     * @throws IllegalStateException once closed, by {@link #close()} or by the worker's close
     */
    public MemorySegment segment() {
        if (closed) {
            throw new IllegalStateException("this KeptPayload is closed (by close(), or by the close of the worker that received it); "
                    + "its memory is given back");
        }
        return segment;
    }

    /**
     * Gives the payload's memory back; callable from any thread, and idempotent once it returned.
     *
     * <p>A close that overlaps another waits for it, and gives the payload back itself if that one
     * was refused.
     *
     * @throws IllegalStateException when the JDK refuses to close a copy's arena: another thread is
     *         inside a native call that holds a segment of it. The payload then stays open and its
     *         memory held; close it again once that call returned
     */
    @Override
    public void close() {
        // A close that overlaps another (the worker's and the application's) waits for its outcome, and tries the release
        // itself when that one was refused: until 2026-12-07 it returned at once, as if the payload were given back, and
        // when the other's release was then refused nobody closed the payload (KeptPayloadReleaseRefusedTest).
        synchronized (closing) {
            if (closed) return;
            closed = true; // segment() refuses from the release's start: the memory is being given back
            try {
                release.run();
            } catch (RuntimeException | Error e) {
                // Not given back: open again, and still the worker's, so that a later close, or the worker's, tries again.
                closed = false;
                throw e;
            }
        }
        forget.accept(this);
    }

    /** Says the payload's length, or that it is closed; never throws. */
    @Override
    public String toString() {
        return closed ? "KeptPayload[closed]" : "KeptPayload[" + segment.byteSize() + " B]";
    }
}
