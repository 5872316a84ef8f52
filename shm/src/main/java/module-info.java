/**
 * What Conduit's shared-memory plugins (posix, memfd) share: the shared directory, opened once
 * and used only through {@code *at} calls that cannot leave it, and owner leases that let a
 * process reclaim the files of dead owners without knowing their pids.
 *
 * <p>Used by plugins, never by applications.
 */
module dev.conduit.shm {
    requires transitive dev.conduit.linux;

    exports dev.conduit.shm;
}
