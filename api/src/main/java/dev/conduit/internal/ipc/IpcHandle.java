package dev.conduit.internal.ipc;

import dev.conduit.internal.codec.Envelope;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;


/**
 * An IPC handle: the bytes that let another process map one region. Versioned, little-endian,
 * self-describing, at most {@value #MAX_LENGTH} bytes, and validated field by field on decode:
 * a decoder given any bytes returns a handle or throws {@link InvalidHandleException} naming the
 * field, before anything is opened.
 *
 * <pre>
 * offset  size     field            rule on decode
 * ------  -------  ---------------  -----------------------------------------------------------
 *      0  4        magic            "CNDH" (0x48444E43 little-endian)
 *      4  2        version          1
 *      6  2        total.length     = the number of bytes given, {@value #MIN_LENGTH}..{@value #MAX_LENGTH}
 *      8  2+n      plugin           u16 length + [a-z][a-z0-9-]{0,31}
 *      .  16       origin           128-bit random id of the producing provider instance, not 0
 *      .  8        export.id        unique per export of that origin, never reused, &gt; 0
 *      .  8        chunk.length     &gt; 0
 *      .  8        region.offset    offset of the region in the chunk
 *      .  8        region.length    &gt; 0, region.offset + region.length &lt;= chunk.length
 *      .  2+n      payload          u16 length (&lt;= {@value #MAX_PAYLOAD}) + the plugin's bytes
 *      .  4        crc              CRC32C of every byte before it
 * </pre>
 *
 * Structural fields are checked before the CRC, so that a malformed field is reported by name;
 * a well-formed but altered handle fails on {@code crc} ({@link Envelope}). The origin id is never a pid: pids
 * repeat and mean nothing across PID namespaces.
 *
 * @param plugin       the exporting plugin
 * @param originHigh   high 64 bits of the origin id
 * @param originLow    low 64 bits of the origin id
 * @param exportId     the export, unique for its origin
 * @param chunkLength  the exported chunk's length
 * @param regionOffset where the region starts in the chunk
 * @param regionLength the region's length
 * @param payload      the plugin's bytes (relative path, socket name, token, ...)
 */
public record IpcHandle(String plugin, long originHigh, long originLow, long exportId, long chunkLength,
                        long regionOffset, long regionLength, byte[] payload) {

    public static final int MAGIC = 0x48444E43;
    public static final int VERSION = 1;
    /** What errors call these bytes: {@code invalid Conduit IPC handle: field …}, also for a plugin's payload in it. */
    static final String KIND = "Conduit IPC handle";
    public static final int MAX_LENGTH = 4096;
    public static final int MAX_PAYLOAD = MemoryProvider.MAX_EXPORT_LENGTH;
    /** The shortest possible handle: one-letter plugin name, empty payload. */
    public static final int MIN_LENGTH = 4 + 2 + 2 + 3 + 16 + 8 * 4 + 2 + 4;

    public byte[] encode() {
        PayloadWriter w = Envelope.begin(MAGIC, VERSION)
                .string(plugin).u64(originLow).u64(originHigh).u64(exportId)
                .u64(chunkLength).u64(regionOffset).u64(regionLength)
                .u16(payload.length).bytes(payload);
        if (w.size() + 4 > MAX_LENGTH) {
            throw new IllegalArgumentException("handle of " + (w.size() + 4) + " bytes exceeds " + MAX_LENGTH);
        }
        return Envelope.seal(w);
    }

    /**
     * Decodes and validates {@code bytes}.
     *
     * @throws InvalidHandleException naming the first field that is wrong
     */
    public static IpcHandle decode(byte[] bytes) {
        return Envelope.decode(bytes, MAGIC, VERSION, MIN_LENGTH, MAX_LENGTH, KIND, "handle", IpcHandle::fields);
    }

    /** The fields between the frame's header and its CRC, each checked. */
    private static IpcHandle fields(PayloadReader r) {
        String plugin = r.name("plugin", 32);
        long originLow = r.u64("origin");
        long originHigh = r.u64("origin");
        if (originLow == 0 && originHigh == 0) throw r.invalid("origin", "is zero");
        long exportId = r.u64("export.id");
        if (exportId <= 0) throw r.invalid("export.id", Long.toUnsignedString(exportId) + " is not a positive export id");
        long chunkLength = r.u64("chunk.length");
        if (chunkLength <= 0) throw r.invalid("chunk.length", Long.toUnsignedString(chunkLength) + " is not a positive length");
        long regionOffset = r.u64("region.offset");
        if (regionOffset < 0 || regionOffset >= chunkLength) {
            throw r.invalid("region.offset", Long.toUnsignedString(regionOffset) + " is outside the chunk of " + chunkLength + " bytes");
        }
        long regionLength = r.u64("region.length");
        if (regionLength == 0) throw r.invalid("region.length", "0 is not a positive length");
        if (regionLength < 0 || regionLength > chunkLength - regionOffset) {
            throw r.invalid("region.length", Long.toUnsignedString(regionLength) + " bytes at offset " + regionOffset
                    + " do not fit in the chunk of " + chunkLength + " bytes");
        }
        int payloadLength = r.u16("payload.length");
        if (payloadLength > MAX_PAYLOAD) throw r.invalid("payload.length", payloadLength + " exceeds " + MAX_PAYLOAD);
        if (payloadLength != r.remaining() - 4) {
            throw r.invalid("payload.length", payloadLength + " does not match the " + (r.remaining() - 4) + " bytes before the crc");
        }
        byte[] payload = r.bytes("payload", payloadLength);
        return new IpcHandle(plugin, originHigh, originLow, exportId, chunkLength, regionOffset, regionLength, payload);
    }

    // ------------------------------------------------------------------ reading without decoding

    private static final VarHandle LE_LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LE_INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LE_SHORT = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final ThreadLocal<CRC32C> CRC = ThreadLocal.withInitial(CRC32C::new);
    /** Where the plugin name's bytes start. */
    static final int PLUGIN_NAME = 10;

    /**
     * Whether {@code bytes} pass every check {@link #decode} makes, without allocating: the IPC
     * cache's hit path validates a handle this way and reads its fields in place. When this says
     * no, {@link #decode} says why.
     *
     * @return where the fields after the plugin's name start in {@code bytes}, the {@code at} of
     *         the readers below; -1 when they are not a valid handle. Read once, so that reads at it
     *         stay inside the array whatever another thread writes there after this check.
     */
    static int fieldsAt(byte[] bytes) {
        if (bytes == null || bytes.length < MIN_LENGTH || bytes.length > MAX_LENGTH) return -1;
        if ((int) LE_INT.get(bytes, 0) != MAGIC || (((short) LE_SHORT.get(bytes, 4)) & 0xFFFF) != VERSION) return -1;
        if ((((short) LE_SHORT.get(bytes, 6)) & 0xFFFF) != bytes.length) return -1;
        int nameLength = ((short) LE_SHORT.get(bytes, 8)) & 0xFFFF;
        int at = PLUGIN_NAME + nameLength;
        if (nameLength < 1 || nameLength > 32 || at + 50 + 4 > bytes.length) return -1; // fixed fields, payload length, crc
        if (bytes[PLUGIN_NAME] < 'a' || bytes[PLUGIN_NAME] > 'z') return -1;
        for (int i = PLUGIN_NAME + 1; i < at; i++) {
            byte c = bytes[i];
            if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')) return -1;
        }
        if (originLow(bytes, at) == 0 && originHigh(bytes, at) == 0) return -1;
        if (exportId(bytes, at) <= 0 || !regionFits(chunkLength(bytes, at), regionOffset(bytes, at), regionLength(bytes, at))) return -1;
        int payloadLength = ((short) LE_SHORT.get(bytes, at + 48)) & 0xFFFF;
        if (payloadLength > MAX_PAYLOAD || at + 50 + payloadLength + 4 != bytes.length) return -1;
        CRC32C crc = CRC.get();
        crc.reset();
        crc.update(bytes, 0, bytes.length - 4);
        return (int) crc.getValue() == (int) LE_INT.get(bytes, bytes.length - 4) ? at : -1;
    }

    /** Whether a region of {@code length} bytes at {@code offset} lies in a chunk of {@code chunkLength} bytes, and is not empty. */
    static boolean regionFits(long chunkLength, long offset, long length) {
        return chunkLength > 0 && offset >= 0 && offset < chunkLength && length > 0 && length <= chunkLength - offset;
    }

    static long originLow(byte[] valid, int at) {
        return (long) LE_LONG.get(valid, at);
    }

    static long originHigh(byte[] valid, int at) {
        return (long) LE_LONG.get(valid, at + 8);
    }

    static long exportId(byte[] valid, int at) {
        return (long) LE_LONG.get(valid, at + 16);
    }

    static long chunkLength(byte[] valid, int at) {
        return (long) LE_LONG.get(valid, at + 24);
    }

    static long regionOffset(byte[] valid, int at) {
        return (long) LE_LONG.get(valid, at + 32);
    }

    static long regionLength(byte[] valid, int at) {
        return (long) LE_LONG.get(valid, at + 40);
    }

    /** Where the payload's bytes start; they end 4 bytes before the end. */
    static int payloadStart(int at) {
        return at + 50;
    }

    /** A reader of the payload whose errors name {@code payload.<field>}. */
    public PayloadReader payloadReader() {
        return new PayloadReader(payload, 0, payload.length, "payload.", KIND);
    }
}
