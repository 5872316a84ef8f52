package dev.conduit.spi;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Writes the little-endian records that {@link PayloadReader} reads: plugin payloads of IPC
 * handles, worker addresses, handshakes.
 *
 * <p><b>Used by</b> plugins and the runtime when they build bytes for a peer. Not thread-safe.
 */
public final class PayloadWriter {

    private byte[] bytes = new byte[64];
    private int size;

    public PayloadWriter u8(int v) {
        if (v < 0 || v > 0xFF) throw new IllegalArgumentException("u8 out of range: " + v);
        ensure(1);
        bytes[size++] = (byte) v;
        return this;
    }

    public PayloadWriter u16(int v) {
        if (v < 0 || v > 0xFFFF) throw new IllegalArgumentException("u16 out of range: " + v);
        ensure(2);
        bytes[size++] = (byte) v;
        bytes[size++] = (byte) (v >>> 8);
        return this;
    }

    public PayloadWriter u32(long v) {
        if (v < 0 || v > 0xFFFF_FFFFL) throw new IllegalArgumentException("u32 out of range: " + v);
        ensure(4);
        for (int i = 0; i < 4; i++) bytes[size++] = (byte) (v >>> (8 * i));
        return this;
    }

    public PayloadWriter u64(long v) {
        ensure(8);
        for (int i = 0; i < 8; i++) bytes[size++] = (byte) (v >>> (8 * i));
        return this;
    }

    public PayloadWriter bytes(byte[] b) {
        ensure(b.length);
        System.arraycopy(b, 0, bytes, size, b.length);
        size += b.length;
        return this;
    }

    /**
     * A {@code u16} length, then the UTF-8 bytes.
     *
     * @throws IllegalArgumentException if {@code s} holds half a surrogate pair, which has no UTF-8
     *                                  form (until 2026-12-07 written as {@code ?}, text the caller
     *                                  never gave), or takes more than 65535 bytes; nothing is written
     */
    public PayloadWriter string(String s) {
        CharBuffer chars = CharBuffer.wrap(s);
        ByteBuffer encoded;
        try {
            encoded = StandardCharsets.UTF_8.newEncoder().encode(chars); // a new encoder reports, never replaces
        } catch (CharacterCodingException e) {
            // The encoder leaves the buffer at the char it refused.
            throw new IllegalArgumentException("string '" + PayloadReader.printable(s) + "' has no UTF-8 form: char " + chars.position()
                    + " is half a surrogate pair");
        }
        int length = encoded.remaining();
        if (length > 0xFFFF) {
            throw new IllegalArgumentException("string of " + length + " UTF-8 bytes is longer than its u16 length can say (65535)");
        }
        u16(length);
        ensure(length);
        encoded.get(bytes, size, length);
        size += length;
        return this;
    }

    public int size() {
        return size;
    }

    public byte[] toByteArray() {
        return Arrays.copyOf(bytes, size);
    }

    private void ensure(int n) {
        if (size + n > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + n));
        }
    }
}
