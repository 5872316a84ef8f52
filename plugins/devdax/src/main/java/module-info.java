/**
 * Conduit's devdax plugin: a memory provider over a device-DAX character device
 * ({@code /dev/daxX.Y}: persistent or CXL memory), or a regular file of the same shape, held
 * under an exclusive {@code flock}; and a consumer-only importer that maps exported ranges of a
 * device through this process's own alias table.
 *
 * <p>Found by {@link java.util.ServiceLoader}; nothing here is exported.
 */
module dev.conduit.plugin.devdax {
    requires dev.conduit.linux;

    provides dev.conduit.spi.ConduitPlugin with dev.conduit.plugin.devdax.DevdaxPlugin;
}
