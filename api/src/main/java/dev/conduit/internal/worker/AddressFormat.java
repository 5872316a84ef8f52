package dev.conduit.internal.worker;

import dev.conduit.internal.codec.Envelope;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The codec of worker addresses; the format is documented on {@link dev.conduit.WorkerAddress}.
 * Structural fields are checked before the CRC, so that a malformed field is reported by name and an
 * altered but well-formed address fails on {@code crc} ({@link Envelope}).
 */
public final class AddressFormat {

    public static final int MAGIC = 0x41444E43; // "CNDA" little-endian
    public static final int VERSION = 1;
    /** What errors call these bytes: {@code invalid Conduit worker address: field …}. */
    static final String KIND = "Conduit worker address";
    public static final int MAX_LENGTH = 4096;
    public static final int MAX_ENTRIES = 16;
    public static final int MAX_TRANSPORT_ADDRESS = dev.conduit.spi.Transport.MAX_ADDRESS_LENGTH;
    /** magic, version, length, worker id, count, one entry (1-letter name, empty address), crc. */
    public static final int MIN_LENGTH = 4 + 2 + 2 + 16 + 1 + (2 + 1 + 2) + 4;

    private AddressFormat() {
    }

    /** One transport a worker can be reached by. */
    public record Entry(String plugin, byte[] address) {
    }

    /** A decoded address. */
    public record Decoded(long idHigh, long idLow, List<Entry> entries) {
        /** The entry of {@code plugin}, or {@code null}. */
        public Entry entry(String plugin) {
            for (Entry e : entries) {
                if (e.plugin().equals(plugin)) return e;
            }
            return null;
        }
    }

    /**
     * Encodes an address.
     *
     * @throws IllegalArgumentException when the entries break a rule of the format (the message
     *         names the entry and the rule)
     */
    public static byte[] encode(long idHigh, long idLow, List<Entry> entries) {
        if (entries.isEmpty() || entries.size() > MAX_ENTRIES) {
            throw new IllegalArgumentException("a worker address lists 1 to " + MAX_ENTRIES + " transports, not " + entries.size());
        }
        if (idHigh == 0 && idLow == 0) throw new IllegalArgumentException("worker id 0");
        PayloadWriter w = Envelope.begin(MAGIC, VERSION).u64(idLow).u64(idHigh).u8(entries.size());
        Set<String> seen = new HashSet<>();
        for (Entry e : entries) {
            if (!PayloadReader.isName(e.plugin())) throw new IllegalArgumentException("'" + e.plugin() + "' is not a plugin name");
            if (!seen.add(e.plugin())) throw new IllegalArgumentException("plugin '" + e.plugin() + "' listed twice");
            if (e.address().length > MAX_TRANSPORT_ADDRESS) {
                throw new IllegalArgumentException("the address of transport '" + e.plugin() + "' has " + e.address().length
                        + " bytes; at most " + MAX_TRANSPORT_ADDRESS + " are allowed");
            }
            w.string(e.plugin()).u16(e.address().length).bytes(e.address());
        }
        if (w.size() + 4 > MAX_LENGTH) {
            throw new IllegalArgumentException("the worker address would have " + (w.size() + 4) + " bytes; at most " + MAX_LENGTH
                    + " are allowed (transport addresses: " + entries.stream().map(e -> e.plugin() + "=" + e.address().length + " B").toList() + ")");
        }
        return Envelope.seal(w);
    }

    /**
     * Decodes and validates {@code bytes}.
     *
     * @throws InvalidHandleException naming the first field that is wrong
     */
    public static Decoded decode(byte[] bytes) {
        return Envelope.decode(bytes, MAGIC, VERSION, MIN_LENGTH, MAX_LENGTH, KIND, "address", AddressFormat::fields);
    }

    /** The fields between the frame's header and its CRC, each checked. */
    private static Decoded fields(PayloadReader r) {
        long idLow = r.u64("worker.id");
        long idHigh = r.u64("worker.id");
        if (idLow == 0 && idHigh == 0) throw r.invalid("worker.id", "is zero");
        int count = r.u8("entry.count");
        if (count < 1 || count > MAX_ENTRIES) {
            throw r.invalid("entry.count", count + " transports listed; an address lists 1 to " + MAX_ENTRIES);
        }
        List<Entry> entries = new ArrayList<>(count);
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < count; i++) {
            String field = "entry[" + i + "]";
            if (r.remaining() <= 4) {
                throw r.invalid("entry.count", "says " + count + " transports, but the bytes before the crc hold only " + i);
            }
            String plugin = r.name(field + ".plugin", 32);
            if (!seen.add(plugin)) throw r.invalid(field + ".plugin", "plugin '" + plugin + "' is listed twice");
            int length = r.u16(field + ".address.length");
            if (length > MAX_TRANSPORT_ADDRESS) {
                throw r.invalid(field + ".address.length", length + " exceeds " + MAX_TRANSPORT_ADDRESS);
            }
            if (length > r.remaining() - 4) {
                throw r.invalid(field + ".address.length", length + " bytes do not fit in the " + Math.max(0, r.remaining() - 4)
                        + " bytes before the crc");
            }
            entries.add(new Entry(plugin, r.bytes(field + ".address", length)));
        }
        if (r.remaining() != 4) {
            throw r.invalid("entry.count", "says " + count + " transports, but " + (r.remaining() - 4)
                    + " bytes follow the last one before the crc");
        }
        return new Decoded(idHigh, idLow, List.copyOf(entries));
    }
}
