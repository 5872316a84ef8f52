package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.RecordingTransport;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The worker address format: what a worker publishes, and a decoder that names every malformed field. */
class WorkerAddressTest {

    private static final byte[] SHM_ADDRESS = {1, 2, 3, 4};

    @Test
    void aWorkerPublishesEveryTransportInItsOrderOfPreferenceAndTheBytesRoundTrip() {
        LoopbackPlugin a = new LoopbackPlugin("lo-a", 8, false).priority(120);
        LoopbackPlugin b = new LoopbackPlugin("lo-b", 8, false).priority(180);
        try (Conduit conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new Properties())
                .addPlugin(a).addPlugin(b).transports("lo-a", "lo-b").build();
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            WorkerAddress address = worker.address();
            assertThat(address.transports()).containsExactly("lo-a", "lo-b");
            assertThat(worker.address()).isSameAs(address);

            byte[] bytes = address.toBytes();
            assertThat(bytes.length).isLessThanOrEqualTo(4096);
            WorkerAddress decoded = WorkerAddress.fromBytes(bytes);
            assertThat(decoded).isEqualTo(address).hasSameHashCodeAs(address);
            assertThat(decoded.transports()).containsExactly("lo-a", "lo-b");
            assertThat(decoded.toString()).contains("lo-a").contains("lo-b");

            bytes[0] ^= 1;
            assertThat(address.toBytes()[0]).as("toBytes gives a copy").isNotEqualTo(bytes[0]);
        }
    }

    @Test
    void twoWorkersHaveDifferentIds() {
        LoopbackPlugin a = new LoopbackPlugin("lo", 8, false);
        try (Conduit conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new Properties())
                .addPlugin(a).build();
             Worker one = conduit.newWorker(ThreadMode.SINGLE);
             Worker two = conduit.newWorker(ThreadMode.SINGLE)) {
            assertThat(Arrays.copyOfRange(one.address().toBytes(), 8, 24)).isNotEqualTo(Arrays.copyOfRange(two.address().toBytes(), 8, 24));
        }
    }

    // ---------------------------------------------------------------- malformed input, field by field

    /** A raw address, before total length and crc are filled in. */
    private static PayloadWriter raw(int count) {
        return new PayloadWriter().u32(AddressFormat.MAGIC & 0xFFFF_FFFFL).u16(1).u16(0).u64(7).u64(9).u8(count);
    }

    /** Fills in total length and crc. */
    private static byte[] seal(PayloadWriter w) {
        byte[] b = w.u32(0).toByteArray();
        b[6] = (byte) b.length;
        b[7] = (byte) (b.length >>> 8);
        return resealed(b);
    }

    private static byte[] valid() {
        return seal(raw(2).string("shm").u16(SHM_ADDRESS.length).bytes(SHM_ADDRESS).string("verbs").u16(0));
    }

    private static byte[] mutated(Consumer<byte[]> change) {
        byte[] b = valid();
        change.accept(b);
        return b;
    }

    private static void assertField(byte[] bytes, String field) {
        assertThatThrownBy(() -> WorkerAddress.fromBytes(bytes))
                .isInstanceOf(InvalidHandleException.class)
                .satisfies(e -> assertThat(((InvalidHandleException) e).field()).isEqualTo(field))
                // What the bytes were given as, not "invalid handle": a user who passed an address wonders which handle.
                .hasMessageStartingWith("invalid Conduit worker address: field '" + field + "': ");
    }

    @Test
    void aValidAddressDecodes() {
        WorkerAddress a = WorkerAddress.fromBytes(valid());
        assertThat(a.transports()).isEqualTo(List.of("shm", "verbs"));
        AddressFormat.Decoded d = AddressFormat.decode(a.toBytes());
        assertThat(d.entry("shm").address()).isEqualTo(SHM_ADDRESS);
        assertThat(d.entry("verbs").address()).isEmpty();
        assertThat(d.idLow()).isEqualTo(7);
        assertThat(d.idHigh()).isEqualTo(9);
    }

    /** The address of a worker of a newer Conduit (its format version 2) says to upgrade this process; it said only that version 2 is not supported. */
    @Test
    void anAddressOfANewerFormatVersionSaysToUpgradeThisProcess() {
        byte[] newer = resealed(mutated(b -> b[4] = AddressFormat.VERSION + 1));
        assertThatThrownBy(() -> WorkerAddress.fromBytes(newer)).isInstanceOf(InvalidHandleException.class)
                .hasMessageContaining("field 'version': Conduit worker address format version " + (AddressFormat.VERSION + 1) + ", where this "
                        + "process's Conduit reads only version " + AddressFormat.VERSION + ": the process that made it runs a newer Conduit than "
                        + "this process; upgrade this process");
    }

    /**
     * An address whose version byte was altered on its way (its checksum no longer matches) is called
     * damaged, and no Conduit version is blamed: it said "a newer Conduit ... made this; upgrade this
     * process".
     */
    @Test
    void anAddressWhoseVersionWasAlteredOnItsWayIsCalledDamagedNotAnotherVersion() {
        assertThatThrownBy(() -> WorkerAddress.fromBytes(mutated(b -> b[4] = 0x3A))).isInstanceOf(InvalidHandleException.class)
                .hasMessageContaining("field 'version': format version " + 0x3A + " in a Conduit worker address whose length or checksum "
                        + "does not match its bytes: it was damaged")
                .hasMessageNotContaining("upgrade");
    }

    /** {@code b} with its CRC made to match its bytes, as a Conduit that writes its version would seal it. */
    private static byte[] resealed(byte[] b) {
        CRC32C crc = new CRC32C();
        crc.update(b, 0, b.length - 4);
        int c = (int) crc.getValue();
        for (int i = 0; i < 4; i++) b[b.length - 4 + i] = (byte) (c >>> (8 * i));
        return b;
    }

    @Test
    void everyMalformedFieldIsNamed() {
        assertField(null, "total.length");
        assertField(new byte[0], "total.length");
        assertField(new byte[AddressFormat.MIN_LENGTH - 1], "total.length");
        assertField(new byte[4097], "total.length");
        assertField(Arrays.copyOf(valid(), valid().length - 1), "total.length"); // truncated
        assertField(Arrays.copyOf(valid(), valid().length + 1), "total.length"); // padded
        assertField(mutated(b -> b[0] = 'X'), "magic");
        assertField(mutated(b -> b[4] = 2), "version");
        assertField(mutated(b -> b[6]++), "total.length");
        assertField(seal(new PayloadWriter().u32(AddressFormat.MAGIC & 0xFFFF_FFFFL).u16(1).u16(0).u64(0).u64(0).u8(1).string("shm").u16(0)),
                "worker.id");
        assertField(seal(raw(0).string("shm").u16(0)), "entry.count");
        assertField(seal(raw(17).string("shm").u16(0)), "entry.count");
        assertField(seal(raw(2).string("shm").u16(0)), "entry.count"); // says 2, holds 1
        assertField(seal(raw(1).string("shm").u16(0).string("verbs").u16(0)), "entry.count"); // says 1, holds 2
        assertField(seal(raw(1).string("Shm").u16(0)), "entry[0].plugin");
        assertField(seal(raw(1).string("").u16(2).bytes(new byte[2])), "entry[0].plugin");
        assertField(seal(raw(1).string("a".repeat(33)).u16(0)), "entry[0].plugin");
        assertField(seal(raw(2).string("shm").u16(0).string("shm").u16(0)), "entry[1].plugin");
        assertField(seal(raw(1).string("shm").u16(1025).bytes(new byte[1025])), "entry[0].address.length");
        assertField(seal(raw(1).string("shm").u16(40).bytes(new byte[8])), "entry[0].address.length");
        // Runs into the crc by 2 bytes: the length is what is wrong, not the count of transports after it.
        assertField(seal(raw(1).string("shm").u16(10).bytes(new byte[8])), "entry[0].address.length");
        assertField(mutated(b -> b[33] ^= 1), "crc"); // well-formed, altered address byte
        assertField(mutated(b -> b[b.length - 1] ^= 1), "crc");
    }

    /** As a handle's (IpcHandleTest): an altered length moves what follows it, so a field that fails then says the CRC fails too. */
    @Test
    void aFieldThatFailsInAnAlteredAddressSaysTheAddressWasAlteredMaybeBeforeIt() {
        assertThatThrownBy(() -> WorkerAddress.fromBytes(mutated(b -> b[25] = 4))) // the first plugin name's length, 3 ("shm")
                .isInstanceOf(InvalidHandleException.class)
                .hasMessageContaining("; and its crc does not match its bytes: the Conduit worker address was altered or corrupted "
                        + "after it was made, maybe in a byte before this field");
        assertThatThrownBy(() -> WorkerAddress.fromBytes(seal(raw(1).string("Shm").u16(0)))).as("made so: the field is exact")
                .isInstanceOf(InvalidHandleException.class).message().doesNotContain("crc");
    }

    @Test
    void anyByteFlippedOrAnyTruncationIsRefusedWithAnInvalidHandleException() {
        byte[] good = valid();
        for (int i = 0; i < good.length; i++) {
            for (int bit = 0; bit < 8; bit++) {
                byte[] bad = good.clone();
                bad[i] ^= (byte) (1 << bit);
                assertThatThrownBy(() -> WorkerAddress.fromBytes(bad)).isInstanceOf(InvalidHandleException.class);
            }
        }
        for (int n = 0; n < good.length; n++) {
            byte[] cut = Arrays.copyOf(good, n);
            assertThatThrownBy(() -> WorkerAddress.fromBytes(cut)).isInstanceOf(InvalidHandleException.class);
        }
    }

    @Test
    void theEncoderRefusesWhatTheDecoderWould() {
        byte[] big = new byte[1025];
        assertThatThrownBy(() -> AddressFormat.encode(1, 1, List.of(new AddressFormat.Entry("shm", big))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'shm'").hasMessageContaining("1024");
        assertThatThrownBy(() -> AddressFormat.encode(1, 1, List.of())).isInstanceOf(IllegalArgumentException.class);
        List<AddressFormat.Entry> five = List.of(new AddressFormat.Entry("a", new byte[1000]), new AddressFormat.Entry("b", new byte[1000]),
                new AddressFormat.Entry("c", new byte[1000]), new AddressFormat.Entry("d", new byte[1000]), new AddressFormat.Entry("e", new byte[1000]));
        assertThatThrownBy(() -> AddressFormat.encode(1, 1, five)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4096");
    }

    /**
     * The bounds are inclusive on both sides of the wire: the shortest address (one transport of a
     * one-letter name and an empty address) and the longest (4096 bytes, with transport addresses of
     * the most a transport may have, 1024 bytes) that a worker publishes are ones its peers decode.
     */
    @Test
    void anAddressAtEachBoundOfItsLengthAndOfATransportsAddressDecodes() {
        byte[] shortest = AddressFormat.encode(1, 1, List.of(new AddressFormat.Entry("a", new byte[0])));
        assertThat(shortest).hasSize(AddressFormat.MIN_LENGTH);
        assertThat(AddressFormat.decode(shortest).entry("a").address()).isEmpty();

        byte[] longest = AddressFormat.encode(1, 1, addressesOf(975));
        assertThat(longest).hasSize(AddressFormat.MAX_LENGTH);
        assertThat(AddressFormat.decode(longest).entry("a").address()).hasSize(AddressFormat.MAX_TRANSPORT_ADDRESS);
        assertThatThrownBy(() -> AddressFormat.encode(1, 1, addressesOf(976))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("would have 4097 bytes");
    }

    /** Three transports of the longest address a transport may have, then one of {@code lastLength} bytes. */
    private static List<AddressFormat.Entry> addressesOf(int lastLength) {
        byte[] longest = new byte[AddressFormat.MAX_TRANSPORT_ADDRESS];
        return List.of(new AddressFormat.Entry("a", longest), new AddressFormat.Entry("b", longest), new AddressFormat.Entry("c", longest),
                new AddressFormat.Entry("d", new byte[lastLength]));
    }

    /**
     * Worker.address(): transports whose addresses do not fit the format (at most 16 transports,
     * 1 KiB each, 4 KiB in all) are a ConduitException that says which rule and what to do; 16
     * transports of empty addresses fit.
     */
    @Test
    void aWorkerWhoseTransportsDoNotFitAnAddressNamesTheRuleAndTheRemedy() {
        try (Conduit sixteen = withTransports(16, 0); Worker worker = sixteen.newWorker(ThreadMode.SINGLE)) {
            assertThat(worker.address().transports()).hasSize(16);
        }
        try (Conduit seventeen = withTransports(17, 0); Worker worker = seventeen.newWorker(ThreadMode.SINGLE)) {
            assertThatThrownBy(worker::address).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("a worker address lists 1 to 16 transports, not 17")
                    .hasMessageContaining("Select fewer transports (CONDUIT_TRANSPORTS)");
        }
        try (Conduit five = withTransports(5, 1000); Worker worker = five.newWorker(ThreadMode.SINGLE)) {
            assertThatThrownBy(worker::address).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("at most 4096 are allowed")
                    .hasMessageContaining("Select fewer transports (CONDUIT_TRANSPORTS)");
        }
        try (Conduit one = withTransports(1, 1025); Worker worker = one.newWorker(ThreadMode.SINGLE)) {
            assertThatThrownBy(worker::address).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("transport 't0' gave an address of 1025 bytes; at most 1024")
                    .hasMessageContaining("a plugin bug: report it to its author");
        }
    }

    /** {@code count} plugins t0, t1, ... whose transports have addresses of {@code addressLength} bytes. */
    private static Conduit withTransports(int count, int addressLength) {
        ConduitBuilder b = Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new Properties());
        for (int i = 0; i < count; i++) {
            b.addPlugin(TestPlugin.named("t" + i).priority(-i).transports(c -> new RecordingTransport() {
                @Override
                public byte[] address() {
                    return new byte[addressLength];
                }
            }));
        }
        return b.build();
    }

    /** WorkerAddress.fromBytes: "The bytes are copied." A change to the array afterwards changes nothing. */
    @Test
    void anAddressKeepsItsOwnCopyOfTheBytesItWasDecodedFrom() {
        byte[] bytes = valid();
        byte[] original = bytes.clone();
        WorkerAddress address = WorkerAddress.fromBytes(bytes);
        bytes[10] ^= 1;
        bytes[bytes.length - 1] ^= 1;
        assertThat(address.toBytes()).isEqualTo(original);
        assertThat(address).isEqualTo(WorkerAddress.fromBytes(original));
    }
}
