package dev.conduit.plugin.devdax;

import dev.conduit.linux.MmapFlags;
import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

/**
 * The devdax plugin's part of an IPC handle: which range of which device, by alias. Never a
 * path: each process resolves the alias through its own device table ({@code devdax.devices}),
 * since a host and a container see one device at different paths.
 *
 * <table class="striped">
 * <caption>Payload, version 1 (little-endian)</caption>
 * <tr><th>offset</th><th>size</th><th>field</th><th>rule on decode</th></tr>
 * <tr><td>0</td><td>1</td><td>{@code payload.version}</td><td>{@value #VERSION}</td></tr>
 * <tr><td>1</td><td>2+n</td><td>{@code payload.alias}</td><td>u16 length + {@code [a-z][a-z0-9-]}, at most 32;
 *     must be in the consumer's device table</td></tr>
 * <tr><td>.</td><td>8</td><td>{@code payload.layout}</td><td>the device's layout id, not 0; must equal the one
 *     on the device the alias leads to</td></tr>
 * <tr><td>.</td><td>8</td><td>{@code payload.offset}</td><td>below 2<sup>63</sup>; on the device: a multiple of its
 *     alignment, past its metadata region, inside it</td></tr>
 * <tr><td>.</td><td>8</td><td>{@code payload.length}</td><td>1 to 2<sup>63</sup>-1, equal to the handle's
 *     {@code chunk.length}; on the device: a multiple of its alignment, ending inside it</td></tr>
 * <tr><td>.</td><td>1</td><td>{@code payload.protection}</td><td>{@code PROT_READ} (1) or
 *     {@code PROT_READ|PROT_WRITE} (3): how the importer maps and opens the device</td></tr>
 * <tr><td>.</td><td>8</td><td>{@code payload.allocation}</td><td>the allocation id, not 0; the device's table
 *     must hold it, with this length, at this offset</td></tr>
 * <tr><td>.</td><td>8</td><td>{@code payload.generation}</td><td>the device's generation when the range was
 *     allocated, at least 1, not above the device's (refused at import); for messages, and for the importer's
 *     {@code exporterState()}, {@code DEAD} once the device is at another ({@link DevdaxImporter#exporterState})</td></tr>
 * <tr><td>.</td><td>&nbsp;</td><td>{@code payload.end}</td><td>no bytes follow</td></tr>
 * </table>
 *
 * <p>The provider exports every chunk {@code PROT_READ|PROT_WRITE}, as the SPI's importer
 * contract asks; the field lets a later producer hand out read-only ranges without a new version.
 *
 * @param alias        the device, as the producer's table names it
 * @param layoutId     the layout id of the device's header
 * @param offset       start of the range on the device
 * @param length       length of the range
 * @param protection   {@link MmapFlags#PROT_READ}, optionally with {@link MmapFlags#PROT_WRITE}
 * @param allocationId the allocation's id in the table
 * @param generation   the device's generation at allocation
 */
record DevdaxPayload(String alias, long layoutId, long offset, long length, int protection, long allocationId, long generation) {

    static final int VERSION = 1;
    static final int MAX_ALIAS_LENGTH = 32;
    static final int READ_WRITE = MmapFlags.PROT_READ | MmapFlags.PROT_WRITE;

    byte[] encode() {
        return new PayloadWriter().u8(VERSION).string(alias).u64(layoutId).u64(offset).u64(length).u8(protection)
                .u64(allocationId).u64(generation).toByteArray();
    }

    boolean writable() {
        return (protection & MmapFlags.PROT_WRITE) != 0;
    }

    /**
     * Reads and checks a payload's structure; what needs the device (alignment, range, the table)
     * the importer checks once it has opened it.
     *
     * @throws InvalidHandleException naming the first field that is wrong; nothing has been opened
     */
    static DevdaxPayload decode(PayloadReader reader) {
        int version = reader.u8("version");
        if (version != VERSION) {
            throw reader.invalid("version", FormatVersions.refusal("devdax export payload", version, VERSION, "the producer"));
        }
        String alias = reader.name("alias", MAX_ALIAS_LENGTH);
        long layoutId = reader.u64("layout");
        if (layoutId == 0) {
            throw reader.invalid("layout", "layout id 0 is never written to a device");
        }
        long offset = reader.u64InRange("offset", 0, Long.MAX_VALUE);
        long length = reader.u64InRange("length", 1, Long.MAX_VALUE);
        int protection = reader.u8("protection");
        if (protection != MmapFlags.PROT_READ && protection != READ_WRITE) {
            throw reader.invalid("protection", "protection " + protection + " is neither PROT_READ (1) nor PROT_READ|PROT_WRITE (3)");
        }
        long allocationId = reader.u64("allocation");
        if (allocationId == 0) {
            throw reader.invalid("allocation", "allocation id 0 means 'no allocation' in the device's table");
        }
        long generation = reader.u64InRange("generation", 1, Long.MAX_VALUE);
        reader.end("end");
        return new DevdaxPayload(alias, layoutId, offset, length, protection, allocationId, generation);
    }

    @Override
    public String toString() {
        return "devdax export of [" + offset + ", " + (offset + length) + ") on alias '" + alias + "' ("
                + MmapFlags.describeProtection(protection) + ", generation " + generation + ")";
    }
}
