package dev.conduit.internal.ipc;

import dev.conduit.spi.InvalidHandleException;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class IpcHandleTest {

    private static final IpcHandle HANDLE = new IpcHandle("memfd", 0x1122334455667788L, 0x99AABBCCDDEEFF00L, 7, 2 << 20,
            4096, 512, new byte[]{1, 2, 3, 4, 5});

    // Offsets in HANDLE's encoding, from the layout table in IpcHandle.
    private static final int PLUGIN = 8;
    private static final int ORIGIN = PLUGIN + 2 + 5;
    private static final int EXPORT_ID = ORIGIN + 16;
    private static final int CHUNK_LENGTH = EXPORT_ID + 8;
    private static final int REGION_OFFSET = CHUNK_LENGTH + 8;
    private static final int REGION_LENGTH = REGION_OFFSET + 8;
    private static final int PAYLOAD_LENGTH = REGION_LENGTH + 8;

    @Test
    void roundTripsEveryField() {
        IpcHandle decoded = IpcHandle.decode(HANDLE.encode());
        assertThat(decoded.plugin()).isEqualTo("memfd");
        assertThat(decoded.originHigh()).isEqualTo(HANDLE.originHigh());
        assertThat(decoded.originLow()).isEqualTo(HANDLE.originLow());
        assertThat(decoded.exportId()).isEqualTo(7);
        assertThat(decoded.chunkLength()).isEqualTo(2 << 20);
        assertThat(decoded.regionOffset()).isEqualTo(4096);
        assertThat(decoded.regionLength()).isEqualTo(512);
        assertThat(decoded.payload()).containsExactly(1, 2, 3, 4, 5);
    }

    @Test
    void namesEachMalformedField() {
        assertField(set(HANDLE.encode(), 0, 0x00), "magic");
        assertField(set(HANDLE.encode(), 4, 9), "version");
        assertField(set(HANDLE.encode(), 6, 0x10), "total.length");
        assertField(set(HANDLE.encode(), PLUGIN + 2, 'M'), "plugin");
        assertField(set(HANDLE.encode(), PLUGIN, 40), "plugin");
        assertField(setLong(HANDLE.encode(), EXPORT_ID, 0), "export.id");
        assertField(setLong(HANDLE.encode(), CHUNK_LENGTH, 0), "chunk.length");
        assertField(setLong(HANDLE.encode(), CHUNK_LENGTH, -1), "chunk.length");
        assertField(setLong(HANDLE.encode(), REGION_OFFSET, 2 << 20), "region.offset");
        assertField(setLong(HANDLE.encode(), REGION_OFFSET, -4096), "region.offset");
        assertField(setLong(HANDLE.encode(), REGION_LENGTH, (2 << 20) - 4095), "region.length");
        assertField(setLong(HANDLE.encode(), REGION_LENGTH, Long.MAX_VALUE), "region.length");
        assertField(set(HANDLE.encode(), PAYLOAD_LENGTH, 4), "payload.length");
        // One byte over the bound, with the handle's length and crc matching it: refused by the bound, not by its framing.
        assertField(new IpcHandle("memfd", 1, 1, 7, 2 << 20, 0, 512, new byte[IpcHandle.MAX_PAYLOAD + 1]).encode(), "payload.length");
        byte[] zeroOrigin = HANDLE.encode();
        Arrays.fill(zeroOrigin, ORIGIN, ORIGIN + 16, (byte) 0);
        assertField(zeroOrigin, "origin");
    }

    /**
     * A handle of another format version, which a Conduit of another version made (a rolling
     * upgrade), is refused by its version, naming both, which side runs the older Conduit and what
     * to upgrade; also when its length is out of this version's bounds, which a newer layout's need
     * not keep. It said only "format version 2 is not supported; this runtime reads version 1", and a
     * longer handle of a newer version was refused on its length ("total.length").
     */
    @Test
    void aHandleOfAnotherFormatVersionSaysWhichSideRunsTheOlderConduitAndWhatToUpgrade() {
        byte[] newer = sealed(set(HANDLE.encode(), 4, IpcHandle.VERSION + 1));
        assertThatThrownBy(() -> IpcHandle.decode(newer)).isInstanceOf(InvalidHandleException.class)
                .hasMessageContaining("field 'version': Conduit IPC handle format version " + (IpcHandle.VERSION + 1) + ", where this process's "
                        + "Conduit reads only version " + IpcHandle.VERSION + ": the process that made it runs a newer Conduit than this process; "
                        + "upgrade this process, or run the process that made it with the older one")
                .hasMessageContaining("Processes of different Conduit versions");
        byte[] longer = sealed(Arrays.copyOf(newer, IpcHandle.MAX_LENGTH + 64));
        assertThatThrownBy(() -> IpcHandle.decode(longer)).hasMessageContaining("the process that made it runs a newer Conduit");
        assertThatThrownBy(() -> IpcHandle.decode(sealed(set(HANDLE.encode(), 4, IpcHandle.VERSION - 1))))
                .hasMessageContaining("the process that made it runs an older Conduit than this process; upgrade the process that made it,");
    }

    /**
     * A handle of another version's magic and version whose length or checksum does not match its
     * bytes — truncated, padded, or its version byte itself altered — is called damaged, and no
     * Conduit version is blamed. Each said "a newer Conduit ... made this; upgrade this process".
     */
    @Test
    void aHandleWhoseVersionDoesNotCheckIsCalledDamagedNotAnotherVersion() {
        byte[] newer = sealed(set(HANDLE.encode(), 4, IpcHandle.VERSION + 1));
        for (byte[] damaged : List.of(set(HANDLE.encode(), 4, 0x3A), Arrays.copyOf(newer, 8), Arrays.copyOf(newer, newer.length - 1),
                Arrays.copyOf(newer, newer.length + 16), set(newer.clone(), 20, newer[20] + 1))) {
            assertField(damaged, "version");
            assertThatThrownBy(() -> IpcHandle.decode(damaged)).hasMessageContaining("whose length or checksum does not match its bytes: "
                    + "it was damaged").hasMessageNotContaining("upgrade");
        }
    }

    @Test
    void aWellFormedButAlteredHandleFailsOnItsCrc() {
        assertField(set(HANDLE.encode(), PAYLOAD_LENGTH + 2, 9), "crc");
        assertField(setLong(HANDLE.encode(), EXPORT_ID, 8), "crc");
    }

    /**
     * A byte altered in a length moves every field after it, so the field that fails first is not
     * the one altered: a plugin-name length of 4 for "memfd" was reported as a wrong
     * {@code payload.length} and nothing else (helper h5). The CRC says that the bytes were altered.
     */
    @Test
    void aFieldThatFailsInAnAlteredHandleSaysTheHandleWasAlteredMaybeBeforeIt() {
        byte[] altered = set(HANDLE.encode(), 8, 4); // the plugin name's length: "memf", and every field after it one byte off
        assertThatThrownBy(() -> IpcHandle.decode(altered)).isInstanceOf(InvalidHandleException.class)
                .hasMessageStartingWith("invalid Conduit IPC handle: field '")
                .hasMessageEndingWith("; and its crc does not match its bytes: the Conduit IPC handle was altered or corrupted after it "
                        + "was made, maybe in a byte before this field (a length that moved the fields after it); pass its bytes on unchanged")
                .cause().isInstanceOf(InvalidHandleException.class);
    }

    /** A region of 0 bytes is refused for its length, not said not to fit (0 bytes fit anywhere): it said "0 bytes at offset 0 do not fit". */
    @Test
    void aRegionOfNoBytesIsRefusedAsNoPositiveLength() {
        assertThatThrownBy(() -> IpcHandle.decode(sealed(setLong(HANDLE.encode(), REGION_LENGTH, 0))))
                .isInstanceOf(InvalidHandleException.class)
                .hasMessage("invalid Conduit IPC handle: field 'region.length': 0 is not a positive length");
    }

    @Test
    void everyTruncationAndEveryBitFlipIsRefusedAsInvalid() {
        byte[] good = HANDLE.encode();
        for (int n = 0; n < good.length; n++) {
            byte[] truncated = Arrays.copyOf(good, n);
            assertThatThrownBy(() -> IpcHandle.decode(truncated)).isInstanceOf(InvalidHandleException.class);
        }
        for (int bit = 0; bit < good.length * 8; bit++) {
            byte[] flipped = good.clone();
            flipped[bit / 8] ^= (byte) (1 << (bit % 8));
            assertThatThrownBy(() -> IpcHandle.decode(flipped)).isInstanceOf(InvalidHandleException.class);
        }
    }

    @Test
    void randomBytesOnlyEverYieldInvalidHandleException() {
        SplittableRandom random = new SplittableRandom(42);
        byte[] good = HANDLE.encode();
        for (int i = 0; i < 20_000; i++) {
            byte[] bytes = i % 2 == 0 ? new byte[random.nextInt(0, 200)] : good.clone();
            if (i % 2 == 0) {
                random.nextBytes(bytes);
            } else {
                for (int k = 0; k < 3; k++) bytes[random.nextInt(bytes.length)] = (byte) random.nextInt();
            }
            try {
                IpcHandle.decode(bytes);
            } catch (InvalidHandleException expected) {
                assertThat(expected.field()).isNotBlank();
            }
        }
    }

    /**
     * The cache's hit path validates handles in place ({@link IpcHandle#fieldsAt}) and the miss path
     * decodes them: two codings of one rule set. Mutations that keep the CRC right (it is recomputed)
     * reach the structural checks; both must agree on every one.
     */
    @Test
    void inPlaceValidationAgreesWithDecoding() {
        SplittableRandom random = new SplittableRandom(7);
        byte[] good = HANDLE.encode();
        int accepted = 0;
        for (int i = 0; i < 50_000; i++) {
            byte[] bytes = good.clone();
            int mutations = 1 + random.nextInt(3);
            for (int k = 0; k < mutations; k++) {
                int at = random.nextInt(bytes.length - 4);
                bytes[at] = random.nextBoolean() ? (byte) random.nextInt() : (byte) (bytes[at] ^ (1 << random.nextInt(8)));
            }
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            crc.update(bytes, 0, bytes.length - 4);
            int c = (int) crc.getValue();
            for (int b = 0; b < 4; b++) bytes[bytes.length - 4 + b] = (byte) (c >>> (8 * b));
            boolean decodes;
            try {
                IpcHandle.decode(bytes);
                decodes = true;
            } catch (InvalidHandleException e) {
                decodes = false;
            }
            assertThat(IpcHandle.fieldsAt(bytes) >= 0).as("mutation %d: %s", i, java.util.HexFormat.of().formatHex(bytes)).isEqualTo(decodes);
            if (decodes) accepted++;
        }
        assertThat(IpcHandle.fieldsAt(good) >= 0).isTrue();
        assertThat(accepted).as("some mutations must stay valid, or only refusals were compared").isPositive();
    }

    @Test
    void refusesNullAndOversizedInput() {
        assertThatThrownBy(() -> IpcHandle.decode(null)).isInstanceOf(InvalidHandleException.class);
        assertField(new byte[IpcHandle.MAX_LENGTH + 1], "total.length");
    }

    private static void assertField(byte[] bytes, String field) {
        assertThatThrownBy(() -> IpcHandle.decode(bytes))
                .isInstanceOf(InvalidHandleException.class)
                .satisfies(e -> assertThat(((InvalidHandleException) e).field()).isEqualTo(field))
                .hasMessageContaining(field);
    }

    /** {@code b} framed as a Conduit that writes its version would frame it: its total length and CRC made to match its bytes. */
    private static byte[] sealed(byte[] b) {
        b[6] = (byte) b.length;
        b[7] = (byte) (b.length >>> 8);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b, 0, b.length - 4);
        int c = (int) crc.getValue();
        for (int i = 0; i < 4; i++) b[b.length - 4 + i] = (byte) (c >>> (8 * i));
        return b;
    }

    private static byte[] set(byte[] b, int at, int value) {
        b[at] = (byte) value;
        return b;
    }

    private static byte[] setLong(byte[] b, int at, long value) {
        for (int i = 0; i < 8; i++) b[at + i] = (byte) (value >>> (8 * i));
        return b;
    }
}
