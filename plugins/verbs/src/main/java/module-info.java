/**
 * Conduit's verbs plugin: RDMA devices through rdma-core's {@code libibverbs.so.1}, bound with the
 * FFM API and loaded lazily, on the first probe. It reports which devices and ports this process
 * could use (state, link layer, LID, MTU, GIDs) and, when it cannot, why; with an active port it
 * offers a transport (RC queue pairs wired up over TCP: messages, RDMA write and read, atomics)
 * and registered memory (see docs/plugins.md, "verbs").
 *
 * <p>The JVM must grant this module native access
 * ({@code --enable-native-access=dev.conduit.linux,dev.conduit.plugin.verbs}); without it the probe
 * says so. Found by {@link java.util.ServiceLoader}; nothing here is exported.
 */
module dev.conduit.plugin.verbs {
    requires dev.conduit.linux;
    // TCP_KEEPIDLE, TCP_KEEPINTERVAL, TCP_KEEPCOUNT for the wire-up connections (jdk.net.ExtendedSocketOptions)
    requires jdk.net;

    provides dev.conduit.spi.ConduitPlugin with dev.conduit.plugin.verbs.VerbsPlugin;
}
