/**
 * Conduit's posix plugin: shared memory as files in a shared directory (by default
 * {@code /dev/shm}), which other processes map by name. A memory provider and an IPC importer;
 * meant for trusted peers (see {@link dev.conduit.plugin.posix.PosixPlugin}).
 *
 * <p>Found by the runtime through {@link java.util.ServiceLoader}; nothing here is exported.
 */
module dev.conduit.plugin.posix {
    requires dev.conduit.shm;

    provides dev.conduit.spi.ConduitPlugin with dev.conduit.plugin.posix.PosixPlugin;
}
