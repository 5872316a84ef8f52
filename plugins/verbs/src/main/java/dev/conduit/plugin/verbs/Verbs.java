package dev.conduit.plugin.verbs;

import dev.conduit.linux.ErrnoException;

import java.util.List;

/**
 * The calls of {@code libibverbs} this plugin makes, in Java types. {@link FfmVerbs} is the one
 * implementation over the library; tests of the probe's logic use a double (which is not a device).
 *
 * <p>Failures are {@link ErrnoException}s naming the verbs call, the errno and the device, as
 * {@code ibv_open_device(rxe0): EACCES (Permission denied)}.
 */
interface Verbs {

    /** The library these calls go to, as it was named to {@code dlopen} ({@code libibverbs.so.1}). */
    String library();

    /**
     * The names of the RDMA devices the library finds ({@code ibv_get_device_list}), in its order.
     *
     * @throws ErrnoException when the list cannot be read, e.g. {@code ENOSYS} when the kernel has
     *                        no verbs support ({@code /sys/class/infiniband_verbs} is missing)
     */
    List<String> deviceNames();

    /**
     * Opens the device {@code name} ({@code ibv_open_device}).
     *
     * @throws ErrnoException           when it cannot be opened ({@code EACCES} on {@code /dev/infiniband/uverbs*})
     * @throws IllegalArgumentException when no device has that name
     */
    Device open(String name);

    /** An open device context. Not thread-safe; close it once. */
    interface Device extends AutoCloseable {

        /** {@code ibv_query_device}. */
        DeviceAttributes attributes();

        /** {@code ibv_query_port} of port {@code port} (1-based). */
        PortAttributes port(int port);

        /** {@code ibv_query_gid}: entry {@code index} of the GID table of port {@code port}, 16 bytes. */
        byte[] gid(int port, int index);

        /** {@code ibv_close_device}. */
        @Override
        void close();
    }

    /** The fields of {@code struct ibv_device_attr} the plugin reports. */
    record DeviceAttributes(String firmware, long nodeGuid, int vendorId, int vendorPartId, int maxQp, int maxCqe,
                            long maxMrSize, int atomicCap, int physicalPorts) {
    }

    /** The fields of {@code struct ibv_port_attr} the plugin reports. */
    record PortAttributes(int state, int maxMtu, int activeMtu, int gidTableLength, int lid, int physicalState,
                          int linkLayer) {

        boolean isActive() {
            return state == VerbsAbi.IBV_PORT_ACTIVE;
        }
    }
}
