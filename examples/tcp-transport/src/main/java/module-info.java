/**
 * An example third-party Conduit plugin: active messages over TCP, written against
 * {@code dev.conduit.spi} alone. Nothing is exported; the runtime finds the plugin as a service.
 */
module org.example.conduit.tcp {
    requires dev.conduit.spi;

    provides dev.conduit.spi.ConduitPlugin with org.example.conduit.tcp.TcpPlugin;
}
