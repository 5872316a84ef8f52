package dev.conduit.spi;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A bounds-checked, little-endian reader of bytes another process wrote: IPC handles, worker
 * addresses, handshake records. Every read names its field; running past the end, a string that
 * is not UTF-8, a malformed name or an unsafe path throws {@link InvalidHandleException} naming that
 * field, so no decoder has to write its own checks.
 *
 * <p><b>Used by</b> the runtime and by plugins' {@link IpcImporter}s and transports to decode what
 * a peer sent. Not thread-safe; cheap to create.
 *
 * <p>Encoding (as {@link PayloadWriter} writes it): integers little-endian; strings as a
 * {@code u16} byte length followed by that many UTF-8 bytes.
 */
public final class PayloadReader {

    /** Longest relative path accepted in a payload. */
    public static final int MAX_PATH_LENGTH = 255;

    /** Longest name {@link #name} and {@link #isName} accept, whatever the field allows. */
    private static final int MAX_NAME_LENGTH = 32;

    private final byte[] bytes;
    private final int end;
    private final String prefix;
    private final String what;
    private int position;

    /**
     * Reads {@code bytes[offset, offset + length)}; field names in errors are prefixed with
     * {@code prefix} (e.g. {@code "payload."}).
     */
    public PayloadReader(byte[] bytes, int offset, int length, String prefix) {
        this(bytes, offset, length, prefix, "handle");
    }

    /**
     * As {@link #PayloadReader(byte[], int, int, String)}, for bytes given as {@code what}, which
     * errors name ({@code "Conduit worker address"}; {@code "handle"} by default).
     *
     * @since SPI 1.1
     */
    public PayloadReader(byte[] bytes, int offset, int length, String prefix, String what) {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        this.bytes = bytes;
        this.position = offset;
        this.end = offset + length;
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.what = Objects.requireNonNull(what, "what");
    }

    /** Reads all of {@code bytes}. */
    public PayloadReader(byte[] bytes) {
        this(bytes, 0, bytes.length, "");
    }

    /** Bytes not read yet. */
    public int remaining() {
        return end - position;
    }

    public int u8(String field) {
        require(field, 1);
        return bytes[position++] & 0xFF;
    }

    public int u16(String field) {
        require(field, 2);
        int v = (bytes[position] & 0xFF) | (bytes[position + 1] & 0xFF) << 8;
        position += 2;
        return v;
    }

    /** An unsigned 32-bit value. */
    public long u32(String field) {
        require(field, 4);
        long v = 0;
        for (int i = 3; i >= 0; i--) v = v << 8 | (bytes[position + i] & 0xFF);
        position += 4;
        return v;
    }

    public long u64(String field) {
        require(field, 8);
        long v = 0;
        for (int i = 7; i >= 0; i--) v = v << 8 | (bytes[position + i] & 0xFF);
        position += 8;
        return v;
    }

    /**
     * An unsigned 64-bit value that must lie in {@code [min, max]}. The bounds are unsigned too, as the
     * value is: {@code -1L} as {@code max} means 2<sup>64</sup>&nbsp;&minus;&nbsp;1, and a value of 2<sup>63</sup>
     * or more is refused by a {@code max} of {@link Long#MAX_VALUE}, never taken for a negative number.
     */
    public long u64InRange(String field, long min, long max) {
        long v = u64(field);
        if (Long.compareUnsigned(v, min) < 0 || Long.compareUnsigned(v, max) > 0) {
            throw invalid(field, "value " + Long.toUnsignedString(v) + " is outside ["
                    + Long.toUnsignedString(min) + ", " + Long.toUnsignedString(max) + "]");
        }
        return v;
    }

    /** Exactly {@code n} raw bytes. */
    public byte[] bytes(String field, int n) {
        require(field, n);
        byte[] out = java.util.Arrays.copyOfRange(bytes, position, position + n);
        position += n;
        return out;
    }

    /**
     * A length-prefixed UTF-8 string of at most {@code maxLength} bytes. Bytes that are not UTF-8
     * (a stray continuation byte, an overlong or cut-short sequence, an encoded surrogate) are
     * refused, naming where they go wrong: until 2026-12-07 each malformed sequence read as U+FFFD,
     * so that different bytes a peer sent read as one string
     * ({@code PayloadReaderTest$Strings#refusesBytesThatAreNotUtf8NamingTheFieldAndWhereTheyGoWrong}).
     */
    public String string(String field, int maxLength) {
        int length = u16(field + ".length");
        if (length > maxLength) {
            throw invalid(field, "length " + length + " exceeds the maximum " + maxLength);
        }
        require(field, length);
        ByteBuffer encoded = ByteBuffer.wrap(bytes, position, length);
        String s;
        try {
            s = StandardCharsets.UTF_8.newDecoder().decode(encoded).toString(); // a new decoder reports, never replaces
        } catch (CharacterCodingException e) {
            // The decoder leaves the buffer at the sequence it refused.
            throw invalid(field, "is not UTF-8: byte " + (encoded.position() - position) + " of its " + length
                    + " begins a malformed sequence");
        }
        position += length;
        return s;
    }

    /**
     * A name ({@link #isName}) of 1 to {@code maxLength} characters, and never more than 32,
     * from {@code [a-z0-9-]}, starting with a letter: plugin names, aliases.
     */
    public String name(String field, int maxLength) {
        String s = string(field, maxLength);
        if (s.length() > MAX_NAME_LENGTH) {
            // Until 2026-12-07 said to be "not a name (lower-case letters, digits and '-' ...)", which a long one may well be.
            throw invalid(field, "'" + printable(s) + "' is " + s.length() + " characters long, and a name is at most " + MAX_NAME_LENGTH);
        }
        if (!isName(s)) {
            throw invalid(field, "'" + printable(s) + "' is not a name (lower-case letters, digits and '-', starting with a letter)");
        }
        return s;
    }

    /**
     * A path relative to a directory the consumer configured: one or more segments of
     * {@code [A-Za-z0-9._-]} separated by {@code /}, none of them {@code .} or {@code ..}, not
     * starting with {@code /}, at most {@link #MAX_PATH_LENGTH} bytes. The caller still opens it
     * with {@code O_NOFOLLOW} so a planted symlink is refused too.
     */
    public String relativePath(String field) {
        String s = string(field, MAX_PATH_LENGTH);
        if (s.isEmpty()) {
            throw invalid(field, "empty path");
        }
        if (s.startsWith("/")) {
            throw invalid(field, "absolute path '" + printable(s) + "' refused: handles carry paths relative to the shared directory");
        }
        for (String segment : s.split("/", -1)) {
            if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
                throw invalid(field, "path '" + printable(s) + "' refused: '" + printable(segment) + "' segments could leave the shared directory");
            }
            for (int i = 0; i < segment.length(); i++) {
                char c = segment.charAt(i);
                if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')) {
                    throw invalid(field, "path '" + printable(s) + "' has a character outside [A-Za-z0-9._-]");
                }
            }
        }
        return s;
    }

    /** Fails unless every byte has been read. */
    public void end(String field) {
        if (position != end) {
            throw invalid(field, (end - position) + " unexpected trailing bytes");
        }
    }

    /** An {@link InvalidHandleException} for {@code field} of this reader. */
    public InvalidHandleException invalid(String field, String message) {
        return new InvalidHandleException(what, prefix + field, message);
    }

    /** Whether {@code s} is a plugin or alias name: {@code [a-z][a-z0-9-]*}, 1..32 characters. */
    public static boolean isName(String s) {
        if (s.isEmpty() || s.length() > MAX_NAME_LENGTH || !(s.charAt(0) >= 'a' && s.charAt(0) <= 'z')) {
            return false;
        }
        for (int i = 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')) return false;
        }
        return true;
    }

    private void require(String field, int n) {
        if (n < 0 || end - position < n) {
            throw invalid(field, "truncated: needs " + n + " bytes, " + (end - position) + " left");
        }
    }

    /**
     * Text a peer sent, fit for a message or a log line: characters outside printable ASCII
     * (line breaks, escapes, which could forge lines or hide text) written as {@code \\uXXXX},
     * and at most 64 of them, then "...".
     */
    public static String printable(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length() && i < 64; i++) {
            char c = s.charAt(i);
            b.append(c >= 0x20 && c < 0x7F ? String.valueOf(c) : String.format("\\u%04x", (int) c));
        }
        return s.length() > 64 ? b + "..." : b.toString();
    }
}
