package dev.conduit.plugin.verbs;

import dev.conduit.linux.ErrnoException;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConduitException;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Decides whether this process can use RDMA, and lists what it found for {@code conduit info}.
 *
 * <p>The checks, in the order a person would fix them, each with its own reason:
 * <ol>
 *   <li>the library ({@code verbs.library}) opens and has the functions, and this module has
 *       native access;</li>
 *   <li>the library lists at least one device ({@code ENOSYS} from {@code ibv_get_device_list}
 *       means the kernel has no verbs at all);</li>
 *   <li>a device opens, and one of its ports is {@code ACTIVE}.</li>
 * </ol>
 * Details, in this order: {@code library}, {@code devices}, then per device a line of attributes
 * and per port its state, link layer, LID, MTU and the non-zero GIDs among the first
 * {@value #MAX_GIDS} entries of its table.
 */
final class VerbsProbe {

    /** GID table entries queried per port: RoCE tables have hundreds, mostly empty; the first ones name the port. */
    static final int MAX_GIDS = 8;

    static final String SOFT_ROCE = "modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0";

    private final Function<String, Verbs> loader;

    /** @param loader opens the library of the given name; throws {@link ConduitException} saying why it cannot */
    VerbsProbe(Function<String, Verbs> loader) {
        this.loader = loader;
    }

    Availability probe(Config config) {
        String library = VerbsConfig.text(config, VerbsConfig.LIBRARY);
        Map<String, String> details = new LinkedHashMap<>();
        // The versions of what processes exchange (conduit info): docs/runtime.md, "Processes of different Conduit versions".
        details.put("formats", "address " + WireFormat.ADDRESS_VERSION + ", wire-up " + WireFormat.WIREUP_VERSION + ", region "
                + WireFormat.REGION_VERSION);
        details.put("library", library);
        Verbs verbs;
        try {
            verbs = loader.apply(library);
        } catch (ConduitException e) {
            return Availability.unavailable(e.getMessage(), details);
        }
        List<String> names;
        try {
            names = verbs.deviceNames();
        } catch (ErrnoException e) {
            details.put("devices", "none");
            return Availability.unavailable("no RDMA devices: " + e.getMessage(), details);
        }
        if (names.isEmpty()) {
            details.put("devices", "none");
            return Availability.unavailable("no RDMA devices: " + library + " lists none (ibv_devices would say the same): "
                    + "load the driver of an RDMA adapter, or set up Soft-RoCE (" + SOFT_ROCE + ")", details);
        }
        details.put("devices", String.join(", ", names));
        List<String> inactive = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        int active = 0;
        for (String name : names) {
            try (Verbs.Device device = verbs.open(name)) {
                Verbs.DeviceAttributes attributes = device.attributes();
                details.put(name, describe(attributes));
                for (int port = 1; port <= attributes.physicalPorts(); port++) {
                    String label = name + " port " + port;
                    Verbs.PortAttributes attr = device.port(port);
                    details.put(label, describe(attr));
                    if (attr.isActive()) {
                        active++;
                    } else {
                        inactive.add(label + " " + VerbsAbi.portState(attr.state()));
                    }
                    listGids(device, port, attr, label, details);
                }
            } catch (ErrnoException | IllegalArgumentException e) {
                details.put(name, "unusable: " + e.getMessage());
                failures.add(e.getMessage());
            }
        }
        if (active > 0) {
            return Availability.available(details);
        }
        if (inactive.isEmpty()) {
            return Availability.unavailable("no usable RDMA device: " + String.join("; ", failures), details);
        }
        return Availability.unavailable("no active RDMA port (" + String.join(", ", inactive) + "): bring a link up "
                + "(RoCE and Soft-RoCE: ip link set <netdev> up; InfiniBand: check the cable and the subnet manager with ibstat)"
                + (failures.isEmpty() ? "" : "; besides: " + String.join("; ", failures)), details);
    }

    private static void listGids(Verbs.Device device, int port, Verbs.PortAttributes attr, String label, Map<String, String> details) {
        int gids = Math.min(attr.gidTableLength(), MAX_GIDS);
        for (int index = 0; index < gids; index++) {
            try {
                byte[] gid = device.gid(port, index);
                if (!isZero(gid)) {
                    details.put(label + " gid[" + index + "]", formatGid(gid));
                }
            } catch (ErrnoException e) {
                details.put(label + " gid[" + index + "]", "unreadable: " + e.getMessage());
            }
        }
    }

    static String describe(Verbs.DeviceAttributes a) {
        return "node guid " + formatGuid(a.nodeGuid()) + ", firmware " + (a.firmware().isEmpty() ? "-" : a.firmware())
                + ", vendor 0x" + Integer.toHexString(a.vendorId()) + " part " + a.vendorPartId()
                + ", " + a.physicalPorts() + (a.physicalPorts() == 1 ? " port" : " ports")
                + ", max_qp " + a.maxQp() + ", max_cqe " + a.maxCqe() + ", max_mr_size " + Long.toUnsignedString(a.maxMrSize())
                + ", atomics " + VerbsAbi.atomics(a.atomicCap()) + ", max_qp_rd_atom " + a.maxQpRdAtom()
                + ", max_qp_init_rd_atom " + a.maxQpInitRdAtom();
    }

    static String describe(Verbs.PortAttributes p) {
        int mtu = VerbsAbi.mtuBytes(p.activeMtu());
        return VerbsAbi.portState(p.state()) + ", link layer " + VerbsAbi.linkLayer(p.linkLayer()) + ", lid " + p.lid()
                + ", active mtu " + (mtu == 0 ? "enum " + p.activeMtu() : mtu) + ", max_msg_sz " + Long.toUnsignedString(p.maxMessageSize())
                + ", gid table " + p.gidTableLength();
    }

    /** As ibv_devinfo prints it: four groups of four hex digits. */
    static String formatGuid(long guid) {
        String hex = HexFormat.of().toHexDigits(guid);
        return hex.substring(0, 4) + ":" + hex.substring(4, 8) + ":" + hex.substring(8, 12) + ":" + hex.substring(12, 16);
    }

    /** As ibv_devinfo -v prints it: eight groups of four hex digits. */
    static String formatGid(byte[] gid) {
        String hex = HexFormat.of().formatHex(gid);
        StringBuilder out = new StringBuilder(39);
        for (int i = 0; i < 32; i += 4) {
            if (i > 0) {
                out.append(':');
            }
            out.append(hex, i, i + 4);
        }
        return out.toString();
    }

    private static boolean isZero(byte[] bytes) {
        for (byte b : bytes) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }
}
