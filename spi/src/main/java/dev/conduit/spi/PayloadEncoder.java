package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * Writes one message's payload where it is sent from ({@code Endpoint.send(id, header, maxLength,
 * encoder)}): for a {@code maxLength} above 1 KiB, straight into the memory that carries it (a
 * zero-copy send); up to 1 KiB, into a buffer of the sending endpoint.
 *
 * <p><b>Implemented by</b> applications (and libraries such as {@code dev.conduit.chronicle});
 * <b>called by</b> the runtime or a transport, once per send, on the sending thread, where it
 * writes the target (a buffer of the runtime's may be confined to that thread: a write from
 * another thread throws {@link WrongThreadException}). Through
 * {@link #encode(MemorySegment)} the target is exactly {@code maxLength} bytes long and bounded: a
 * write outside it throws {@link IndexOutOfBoundsException}. What is in it beyond what the encoder
 * writes is undefined.
 *
 * <p>Two forms: {@link #encode(MemorySegment)}, the one to implement, gets a view bounded to the
 * message; {@link #encode(MemorySegment, long, long)}, which an encoder may override so that more
 * sends above 1 KiB allocate nothing, gets a whole buffer and a range in it, and is called only
 * where a write outside the range reaches no other sender's message. {@link Ranged} is an encoder
 * written for the second, as a lambda.
 *
 * <p>The encoder must not use the endpoint it is sending on (the runtime refuses a send on it, a
 * close of it or of its worker, and a {@code progress()} or {@code await()} of that worker, with
 * {@code IllegalStateException}; a close of the
 * {@code Conduit} closes that worker as the send returns), and must not keep the target: once
 * it returns, the bytes belong to the transport (they may be in the peer's receive queue). Keep it
 * short where it writes into a shared-memory peer's receive queue (a payload above 1 KiB and up to
 * the transport's {@code inline.max}): its record there is claimed while it runs, and the peer
 * cannot deliver messages claimed after it, any sender's, until it returns. A larger payload is
 * encoded into the connection's bounce ring before its record is claimed, and holds up no other
 * sender however long the encoder takes.
 */
@FunctionalInterface
public interface PayloadEncoder {

    /**
     * Writes the payload at the start of {@code target} and returns how many bytes it wrote. If it
     * throws, nothing is sent (a space the transport claimed is abandoned, the receiver skips it)
     * and the exception reaches the caller of {@code send}.
     *
     * @param target writable, {@code maxLength} bytes
     * @return the payload's length, {@code 0..target.byteSize()}
     */
    long encode(MemorySegment target);

    /**
     * Writes the payload into {@code memory} at {@code offset}, in at most {@code maxLength} bytes,
     * and returns how many bytes it wrote: the same as {@link #encode(MemorySegment)} on
     * {@code memory.asSlice(offset, maxLength)}, which is what this default does. It is called
     * only on memory that no other sender writes and no receiver parses, above 1 KiB: a transport's
     * buffer of one connection (the shared-memory transports' bounce ring, for payloads above their
     * {@code inline.max}), and the runtime's own buffer of the endpoint (for a payload that must
     * wait in the endpoint's local queue, or goes over a transport without zero-copy send).
     * Elsewhere the encoder gets {@link #encode(MemorySegment)}: up to 1 KiB with a view the
     * runtime keeps, which allocates nothing; in a shared-memory peer's receive queue (above 1 KiB,
     * up to {@code inline.max}) with a view bounded to the record, made per send, because every
     * sender writes that ring and the receiver parses it.
     *
     * <p><b>Why override it:</b> the default's view is a new object per send (40 B), which the JIT
     * removes only where it inlines this encoder and everything the view reaches. An encoder that
     * writes through {@code memory} at {@code offset + i} makes none. It must write only within
     * {@code offset .. offset + maxLength}: {@code memory} is bounded by the buffer, not by this
     * message, and a write outside the range changes this connection's other payloads (or nothing,
     * in the runtime's buffer). Both forms must write the same payload.
     *
     * @param memory writable; may hold this connection's other payloads outside the range
     * @param offset where the payload starts in {@code memory}
     * @param maxLength the most bytes the payload may take
     * @return the payload's length, {@code 0..maxLength}
     * @since SPI 1.1
     */
    default long encode(MemorySegment memory, long offset, long maxLength) {
        return encode(memory.asSlice(offset, maxLength));
    }

    /**
     * An encoder written for the ranged call: {@link #encode(MemorySegment, long, long)} is the one
     * to implement, so a lambda can be one, and {@link #encode(MemorySegment)} writes through it at
     * offset 0 of the view. Where the ranged call is made no view is made; it must keep to its
     * {@code maxLength} bytes itself (see {@link #encode(MemorySegment, long, long)}).
     *
     * @since SPI 1.1
     */
    @FunctionalInterface
    interface Ranged extends PayloadEncoder {

        @Override
        long encode(MemorySegment memory, long offset, long maxLength);

        @Override
        default long encode(MemorySegment target) {
            return encode(target, 0, target.byteSize());
        }
    }

    /**
     * Returns {@code written} if it is a length an encoder may return for a target of
     * {@code maxLength} bytes; throws otherwise. For transports, before they commit.
     *
     * @throws IllegalStateException naming both numbers
     */
    static long checkWritten(long written, long maxLength) {
        if (written < 0 || written > maxLength) {
            throw new IllegalStateException("payload encoder returned " + written + " bytes written, outside 0.." + maxLength
                    + " (the target's length); nothing was sent");
        }
        return written;
    }
}
