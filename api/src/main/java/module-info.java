/**
 * Conduit: shared memory and messaging between processes, on one host and across hosts.
 *
 * <p>Applications use {@link dev.conduit.Conduit}: {@code Conduit.open()} or
 * {@code Conduit.builder()...build()}. This module is also the runtime that enforces, for every
 * plugin, discovery and selection, configuration, the thread-mode policy, the IPC-handle cache and
 * liveness. Only {@code dev.conduit} is exported; everything under {@code dev.conduit.internal} is
 * the runtime's own, but for the versions of its formats, which the {@code conduit} command shows.
 */
module dev.conduit {
    requires transitive dev.conduit.spi;
    requires com.github.benmanes.caffeine;
    requires jdk.jfr;

    exports dev.conduit;
    exports dev.conduit.internal.formats to dev.conduit.tools;

    uses dev.conduit.spi.ConduitPlugin;
}
