/**
 * Conduit's integration tests, as a consumer on the module path: the runtime finds the test
 * plugins through {@code provides}. The same classes also run on the class path, where
 * {@code META-INF/services/dev.conduit.spi.ConduitPlugin} lists the plugins instead.
 */
open module dev.conduit.it {
    requires dev.conduit;
    requires java.compiler;
    requires org.junit.jupiter.api;
    requires org.assertj.core;

    provides dev.conduit.spi.ConduitPlugin with dev.conduit.it.plugins.AlphaPlugin, dev.conduit.it.plugins.BetaPlugin;
}
