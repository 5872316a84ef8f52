package dev.conduit.spi;

import java.lang.foreign.MemorySegment;

/**
 * Writes one message's payload where it is sent from ({@code Endpoint.send(id, header, maxLength,
 * encoder)}): for a {@code maxLength} above 1 KiB, straight into the memory that carries it (a
 * zero-copy send); up to 1 KiB, into a buffer of the sending endpoint.
 *
 * <p><b>Implemented by</b> applications (and libraries such as {@code dev.conduit.chronicle});
 * <b>called by</b> the runtime or a transport, once per send, on the sending thread. The target is
 * exactly {@code maxLength} bytes long and bounded: a write outside it throws
 * {@link IndexOutOfBoundsException}. What is in it beyond what the encoder writes is undefined.
 *
 * <p>The encoder must not use the endpoint it is sending on, and must not keep the target: once
 * it returns, the bytes belong to the transport (they may be in the peer's receive queue). Keep it
 * short: on a shared-memory transport a large payload's space is claimed in the peer's queue, and
 * the peer cannot deliver messages claimed after it until it returns.
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
