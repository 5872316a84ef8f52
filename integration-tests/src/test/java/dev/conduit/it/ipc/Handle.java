package dev.conduit.it.ipc;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An IPC handle read and written by this test from the layout documented in {@code docs/runtime.md}
 * (not with the runtime's own code, which is internal), so that a test can change one field of a
 * real handle and recompute {@code total.length} and the CRC32C: the result is then well-formed
 * everywhere but in the field under test.
 *
 * <pre>
 * magic "CNDH" | version u16 | total.length u16 | plugin u16+n | origin 16 | export.id u64 | chunk.length u64
 * | region.offset u64 | region.length u64 | payload u16+n | crc u32 (CRC32C of every byte before it), little-endian
 * </pre>
 */
record Handle(String plugin, byte[] origin, long exportId, long chunkLength, long regionOffset, long regionLength, byte[] payload) {

    static Handle decode(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.getInt()).as("magic").isEqualTo(0x48444E43);
        assertThat(b.getShort()).as("version").isEqualTo((short) 1);
        assertThat(Short.toUnsignedInt(b.getShort())).as("total.length").isEqualTo(bytes.length);
        String plugin = new String(bytes(b, Short.toUnsignedInt(b.getShort())), StandardCharsets.UTF_8);
        byte[] origin = bytes(b, 16);
        long exportId = b.getLong();
        long chunkLength = b.getLong();
        long regionOffset = b.getLong();
        long regionLength = b.getLong();
        byte[] payload = bytes(b, Short.toUnsignedInt(b.getShort()));
        int crc = b.getInt();
        assertThat(b.hasRemaining()).as("bytes after the crc").isFalse();
        assertThat(crc).as("crc").isEqualTo(crc(bytes, bytes.length - 4));
        return new Handle(plugin, origin, exportId, chunkLength, regionOffset, regionLength, payload);
    }

    byte[] encode() {
        byte[] name = plugin.getBytes(StandardCharsets.UTF_8);
        int total = 4 + 2 + 2 + 2 + name.length + 16 + 8 * 4 + 2 + payload.length + 4;
        ByteBuffer b = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0x48444E43).putShort((short) 1).putShort((short) total)
                .putShort((short) name.length).put(name).put(origin)
                .putLong(exportId).putLong(chunkLength).putLong(regionOffset).putLong(regionLength)
                .putShort((short) payload.length).put(payload);
        b.putInt(crc(b.array(), total - 4));
        return b.array();
    }

    Handle withPlugin(String p) {
        return new Handle(p, origin, exportId, chunkLength, regionOffset, regionLength, payload);
    }

    Handle withPayload(byte[] p) {
        return new Handle(plugin, origin, exportId, chunkLength, regionOffset, regionLength, p);
    }

    Handle withExportId(long id) {
        return new Handle(plugin, origin, id, chunkLength, regionOffset, regionLength, payload);
    }

    /** The producer's directory, as posix and memfd payloads of version 2 end with it: {@code device u64 | inode u64 | birth u64}. */
    private static final int DIRECTORY_LENGTH = 24;

    /** What a posix payload of version 3 has after its path: the directory, then the chunk file's {@code device u64 | inode u64}. */
    private static final int AFTER_POSIX_PATH = DIRECTORY_LENGTH + 16;

    /**
     * posix payload, version 3: {@code version u8 | path u16+n | directory 24 | chunk 16}, the directory and chunk those of
     * {@code real}, a real payload.
     */
    static byte[] posixPayload(String path, byte[] real) {
        byte[] p = path.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(3 + p.length + AFTER_POSIX_PATH).order(ByteOrder.LITTLE_ENDIAN).put((byte) 3).putShort((short) p.length)
                .put(p).put(real, real.length - AFTER_POSIX_PATH, AFTER_POSIX_PATH).array();
    }

    /** The path a posix payload names. */
    static String posixPath(byte[] payload) {
        ByteBuffer b = ByteBuffer.wrap(payload).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.get()).as("payload.version").isEqualTo((byte) 3);
        String path = new String(bytes(b, Short.toUnsignedInt(b.getShort())), StandardCharsets.UTF_8);
        assertThat(b.remaining()).as("bytes after payload.path: the directory and the chunk file").isEqualTo(AFTER_POSIX_PATH);
        return path;
    }

    /** memfd payload, version 2: {@code version u8 | socket u16+n | token 16 | directory 24}. */
    record MemfdPayload(String socket, byte[] token, byte[] directory) {
        static MemfdPayload decode(byte[] payload) {
            ByteBuffer b = ByteBuffer.wrap(payload).order(ByteOrder.LITTLE_ENDIAN);
            assertThat(b.get()).as("payload.version").isEqualTo((byte) 2);
            String socket = new String(bytes(b, Short.toUnsignedInt(b.getShort())), StandardCharsets.UTF_8);
            byte[] token = bytes(b, 16);
            byte[] directory = bytes(b, DIRECTORY_LENGTH);
            assertThat(b.hasRemaining()).as("bytes after payload.directory").isFalse();
            return new MemfdPayload(socket, token, directory);
        }

        byte[] encode() {
            byte[] s = socket.getBytes(StandardCharsets.UTF_8);
            return ByteBuffer.allocate(3 + s.length + 16 + DIRECTORY_LENGTH).order(ByteOrder.LITTLE_ENDIAN)
                    .put((byte) 2).putShort((short) s.length).put(s).put(token).put(directory).array();
        }

        MemfdPayload withSocket(String s) {
            return new MemfdPayload(s, token, directory);
        }

        /** The same socket with every bit of the token flipped: a token the server never issued. */
        MemfdPayload withWrongToken() {
            byte[] t = token.clone();
            for (int i = 0; i < t.length; i++) t[i] = (byte) ~t[i];
            return new MemfdPayload(socket, t, directory);
        }
    }

    private static byte[] bytes(ByteBuffer b, int n) {
        byte[] out = new byte[n];
        b.get(out);
        return out;
    }

    private static int crc(byte[] bytes, int length) {
        CRC32C c = new CRC32C();
        c.update(bytes, 0, length);
        return (int) c.getValue();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Handle h && h.plugin.equals(plugin) && Arrays.equals(h.origin, origin) && h.exportId == exportId
                && h.chunkLength == chunkLength && h.regionOffset == regionOffset && h.regionLength == regionLength
                && Arrays.equals(h.payload, payload);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(exportId) * 31 + Arrays.hashCode(payload);
    }
}
