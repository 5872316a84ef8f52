/**
 * Conduit: shared memory and messaging between processes, on one host and across hosts.
 *
 * <p>Applications use {@link dev.conduit.Conduit}: {@code Conduit.open()} or
 * {@code Conduit.builder()...build()}. This module is also the runtime that enforces, for every
 * plugin, discovery and selection, configuration, the thread-mode policy, the IPC-handle cache and
 * liveness: a keepalive that asks each endpoint's transport whether its peer lives, and what
 * follows a peer's failure, however the transport found it. Applications get {@code dev.conduit}
 * only; everything under {@code dev.conduit.internal} is the runtime's own, but
 * for {@code dev.conduit.internal.formats}, exported to the tools module alone, so that
 * {@code conduit --version} shows the versions of the runtime's formats.
 */
@SuppressWarnings("module") // dev.conduit.tools, to which the formats are exported, is built after this module
module dev.conduit {
    requires transitive dev.conduit.spi;
    requires com.github.benmanes.caffeine;
    requires jdk.jfr;
    // A probe past probe.timeout is waited for while the probes, or the JVM, use processor time (PluginRegistry).
    requires java.management;
    requires jdk.management;

    exports dev.conduit;
    exports dev.conduit.internal.formats to dev.conduit.tools;

    uses dev.conduit.spi.ConduitPlugin;
}
