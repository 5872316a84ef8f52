/**
 * The memfd plugin: sealed anonymous memory ({@code memfd_create}) shared by passing file
 * descriptors over a Unix socket in the shared directory, given a capability token. Works across
 * PID, IPC, UTS and mount namespaces; needs no peer's {@code /proc/<pid>}, no ptrace, no
 * {@code pidfd_getfd} (its own {@code /proc/self/fd} only for a shared directory longer than 38 bytes).
 *
 * <p>Found by {@link java.util.ServiceLoader}; nothing here is exported.
 */
module dev.conduit.plugin.memfd {
    requires dev.conduit.shm;

    provides dev.conduit.spi.ConduitPlugin with dev.conduit.plugin.memfd.MemfdPlugin;
}
