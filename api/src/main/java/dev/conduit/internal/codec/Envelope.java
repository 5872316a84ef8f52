package dev.conduit.internal.codec;

import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.util.zip.CRC32C;

/**
 * The frame every record the runtime hands to another process shares (IPC handles, worker
 * addresses): a header, the record's own fields, and a checksum.
 *
 * <pre>
 * offset  size  field         rule on open
 *      0     4  magic         the record type's
 *      4     2  version       the one this runtime reads
 *      6     2  total.length  = the number of bytes given, within the type's bounds
 *      8     …  the record's fields
 *  n - 4     4  crc           CRC32C of every byte before it; checked by {@link #checkCrc} after the fields
 * </pre>
 *
 * Little-endian. The fields are validated before the CRC, so a malformed field is reported by
 * name; a well-formed but altered record fails on {@code crc}, and a malformed field of a record
 * whose CRC fails too says that as well ({@link #malformed}).
 *
 * <p>The frame — magic, version and total length first, the CRC last — is the same in every
 * version of every record, so that a record of another version is told from a damaged one: the
 * former's length and CRC check, the latter's do not. A version is judged before the record's
 * length bounds, which another version's need not keep.
 */
public final class Envelope {

    /** Header and trailer bytes. */
    public static final int OVERHEAD = 8 + 4;

    private Envelope() {
    }

    /** A writer with the header in place; the record's fields follow, then {@link #seal}. */
    public static PayloadWriter begin(int magic, int version) {
        return new PayloadWriter().u32(magic & 0xFFFF_FFFFL).u16(version).u16(0);
    }

    /** Appends the trailer, fills in the total length and the CRC: the finished record. */
    public static byte[] seal(PayloadWriter writer) {
        byte[] bytes = writer.u32(0).toByteArray();
        if (bytes.length > 0xFFFF) throw new IllegalArgumentException("record of " + bytes.length + " bytes is too long");
        bytes[6] = (byte) bytes.length;
        bytes[7] = (byte) (bytes.length >>> 8);
        int crc = crc(bytes);
        for (int i = 0; i < 4; i++) bytes[bytes.length - 4 + i] = (byte) (crc >>> (8 * i));
        return bytes;
    }

    /**
     * Checks the header and returns a reader positioned at the record's fields.
     *
     * @param kind what the record is, for messages ("Conduit IPC handle")
     * @throws dev.conduit.spi.InvalidHandleException naming {@code total.length}, {@code magic} or {@code version}
     */
    public static PayloadReader open(byte[] bytes, int magic, int version, int minLength, int maxLength, String kind) {
        if (bytes == null) throw new dev.conduit.spi.InvalidHandleException(kind, "total.length", "no bytes (null) given as a " + kind);
        PayloadReader r = new PayloadReader(bytes, 0, bytes.length, "", kind);
        boolean headed = bytes.length >= 6;
        long found = headed ? r.u32("magic") : -1;
        int foundVersion = headed ? r.u16("version") : -1;
        // Another version of this record is judged by its version before anything else: its bounds may be others.
        if (found == (magic & 0xFFFF_FFFFL) && foundVersion != version) {
            throw intactFrame(bytes) ? otherVersion(foundVersion, version, kind) : damagedOtherVersion(foundVersion, kind);
        }
        if (bytes.length < minLength || bytes.length > maxLength) {
            throw new dev.conduit.spi.InvalidHandleException(kind, "total.length", bytes.length + " bytes given; a " + kind + " has "
                    + minLength + " to " + maxLength);
        }
        if (found != (magic & 0xFFFF_FFFFL)) {
            throw r.invalid("magic", String.format("0x%08x is not a %s (0x%08x)", found, kind, magic));
        }
        int total = r.u16("total.length");
        if (total != bytes.length) {
            throw r.invalid("total.length", "says " + total + " bytes, " + bytes.length + " given (truncated or padded)");
        }
        return r;
    }

    /**
     * A record of {@code kind} whose format version is {@code found}, where this runtime reads only
     * {@code version}: a Conduit of another version made it, and nothing translates between versions
     * of a format. Says which side runs the older Conduit and what to do.
     */
    private static dev.conduit.spi.InvalidHandleException otherVersion(int found, int version, String kind) {
        return new dev.conduit.spi.InvalidHandleException(kind, "version",
                dev.conduit.spi.FormatVersions.refusal(kind + " format", found, version, "the process that made it"));
    }

    /** Whether {@code bytes} (headed) say their own length and end in their CRC: a whole record, of whatever version. */
    private static boolean intactFrame(byte[] bytes) {
        if (bytes.length < OVERHEAD) return false;
        int total = new PayloadReader(bytes, 6, 2, "").u16("total.length");
        return total == bytes.length && crcMatches(bytes);
    }

    /**
     * A record of {@code kind} whose version is not this runtime's and whose frame does not check:
     * its version field may itself be the damage, so no Conduit version is blamed.
     */
    private static dev.conduit.spi.InvalidHandleException damagedOtherVersion(int found, String kind) {
        return new dev.conduit.spi.InvalidHandleException(kind, "version", "format version " + found + " in a " + kind
                + " whose length or checksum does not match its bytes: it was damaged (truncated, padded or altered) between"
                + " the process that made it and this one, not made by another Conduit version; pass its bytes on unchanged");
    }

    /**
     * Decodes a whole record of {@code kind}: the header ({@link #open}), the record's own
     * {@code fields}, each checked ({@link #malformed} when one fails), then the CRC ({@link #checkCrc},
     * whose messages call the record {@code shortKind}).
     *
     * @throws dev.conduit.spi.InvalidHandleException naming the first field that is wrong
     */
    public static <T> T decode(byte[] bytes, int magic, int version, int minLength, int maxLength, String kind, String shortKind,
                               java.util.function.Function<PayloadReader, T> fields) {
        PayloadReader r = open(bytes, magic, version, minLength, maxLength, kind);
        T record;
        try {
            record = fields.apply(r);
        } catch (dev.conduit.spi.InvalidHandleException e) {
            throw malformed(e, bytes, kind);
        }
        checkCrc(r, bytes, shortKind);
        return record;
    }

    /**
     * {@code malformed}, a field of the record in {@code bytes} that failed its check, said so that
     * its reader knows how far to trust the field's name. When the CRC matches, the record's maker
     * wrote the field so (its bug, or a forgery), and the name is exact. When it does not match
     * either, the record was altered after it was made, and the byte altered may lie before the
     * field named: one of an earlier length moves every field after it (a flipped byte of a
     * handle's plugin-name length was reported as a wrong {@code payload.length}, and nothing else).
     */
    static dev.conduit.spi.InvalidHandleException malformed(dev.conduit.spi.InvalidHandleException malformed, byte[] bytes,
                                                                    String kind) {
        if (bytes.length < OVERHEAD || crcMatches(bytes)) return malformed;
        String prefix = "invalid " + kind + ": field '" + malformed.field() + "': ";
        String detail = malformed.getMessage().startsWith(prefix) ? malformed.getMessage().substring(prefix.length()) : malformed.getMessage();
        var altered = new dev.conduit.spi.InvalidHandleException(kind, malformed.field(), detail + "; and its crc does not match its "
                + "bytes: the " + kind + " was altered or corrupted after it was made, maybe in a byte before this field (a length "
                + "that moved the fields after it); pass its bytes on unchanged");
        altered.initCause(malformed);
        return altered;
    }

    private static boolean crcMatches(byte[] bytes) {
        return new PayloadReader(bytes, bytes.length - 4, 4, "").u32("crc") == (crc(bytes) & 0xFFFF_FFFFL);
    }

    /** Reads the trailer (the reader must be at it) and checks it against the bytes. */
    public static void checkCrc(PayloadReader r, byte[] bytes, String kind) {
        long found = r.u32("crc");
        long expected = crc(bytes) & 0xFFFF_FFFFL;
        if (found != expected) {
            throw r.invalid("crc", String.format("0x%08x does not match the contents (0x%08x): the %s was altered or corrupted",
                    found, expected, kind));
        }
        r.end("crc");
    }

    private static int crc(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length - 4);
        return (int) crc.getValue();
    }
}
