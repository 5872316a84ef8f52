package dev.conduit;

import dev.conduit.internal.worker.AddressFormat;
import dev.conduit.spi.InvalidHandleException;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * What a peer needs to connect to a worker ({@link Worker#address()}), exchanged out of band (a
 * file, a socket, an environment variable, a command line) as bytes: {@link #toBytes()} on one
 * side, {@link #fromBytes(byte[])} and {@link Worker#connect(WorkerAddress)} on the other. It lists
 * every transport the worker can be reached by, in the worker's order of preference, each with
 * that transport's own address. It carries no host id and no pid: reachability is proven by
 * connecting, never assumed from a comparison.
 *
 * <p>Format (little-endian, at most 4096 bytes), validated field by field when decoded:
 *
 * <table class="striped">
 * <caption>Worker address, version 1</caption>
 * <thead><tr><th>offset</th><th>size</th><th>field</th><th>rule on decode</th></tr></thead>
 * <tbody>
 * <tr><td>0</td><td>4</td><td>{@code magic}</td><td>"CNDA"</td></tr>
 * <tr><td>4</td><td>2</td><td>{@code version}</td><td>1</td></tr>
 * <tr><td>6</td><td>2</td><td>{@code total.length}</td><td>= the number of bytes given, 34..4096</td></tr>
 * <tr><td>8</td><td>16</td><td>{@code worker.id}</td><td>128 random bits chosen when the worker was made, not 0</td></tr>
 * <tr><td>24</td><td>1</td><td>{@code entry.count}</td><td>1..16; the entries fill the bytes up to the crc exactly</td></tr>
 * <tr><td>25</td><td>2+n</td><td>{@code entry[i].plugin}</td><td>u16 length + {@code [a-z][a-z0-9-]{0,31}}, no plugin twice</td></tr>
 * <tr><td>.</td><td>2+n</td><td>{@code entry[i].address}</td><td>u16 length (at most 1024) + the bytes of that plugin's
 *     {@link dev.conduit.spi.Transport#address()}</td></tr>
 * <tr><td>.</td><td>4</td><td>{@code crc}</td><td>CRC32C of every byte before it</td></tr>
 * </tbody>
 * </table>
 *
 * <p>Entries come in the worker's order of preference. A transport's own address is checked by
 * that transport when a peer connects. Immutable and thread-safe; equal when the bytes are equal, so two addresses of one
 * worker may differ. {@link Worker#connect} tries, in its own worker's order of preference (not the address's), each of
 * its transports the address lists, through that entry, until one succeeds; the worker id decides nothing (errors and
 * logs name it).
 */
public final class WorkerAddress {

    private final byte[] bytes;
    private final List<String> transports;
    private final String id;

    private WorkerAddress(byte[] bytes, AddressFormat.Decoded decoded) {
        this.bytes = bytes;
        this.transports = decoded.entries().stream().map(AddressFormat.Entry::plugin).toList();
        HexFormat hex = HexFormat.of();
        this.id = hex.toHexDigits(decoded.idHigh()) + hex.toHexDigits(decoded.idLow());
    }

    /**
     * Decodes and validates an address another worker published. The bytes are copied.
     *
     * @throws InvalidHandleException naming the first field that is wrong ({@link InvalidHandleException#field()}):
     *         {@code total.length}, {@code magic}, {@code version}, {@code worker.id}, {@code entry.count},
     *         {@code entry[i].plugin}, {@code entry[i].address.length}, {@code entry[i].address}, {@code crc}
     */
    public static WorkerAddress fromBytes(byte[] bytes) {
        byte[] copy = bytes == null ? null : bytes.clone();
        return new WorkerAddress(copy, AddressFormat.decode(copy));
    }

    /** The bytes to hand to a peer; a fresh copy. */
    public byte[] toBytes() {
        return bytes.clone();
    }

    /** The plugins whose transports the worker can be reached by, most preferred first. */
    public List<String> transports() {
        return transports;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WorkerAddress other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** The worker id and the transports, for logs. */
    @Override
    public String toString() {
        return "WorkerAddress[" + id + " " + transports + "]";
    }
}
