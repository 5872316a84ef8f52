/**
 * Conduit's integration tests, as a consumer on the module path: the runtime finds the test
 * plugins through {@code provides}. The same classes also run on the class path, where
 * {@code META-INF/services/dev.conduit.spi.ConduitPlugin} lists the plugins instead; all but the
 * load tests ({@link dev.conduit.it.LoadTest}), which run once.
 *
 * <p>The real plugins (posix, memfd) are test dependencies that nothing here {@code requires}: they
 * are service providers, resolved by service binding because {@code dev.conduit} {@code uses}
 * {@code dev.conduit.spi.ConduitPlugin}, exactly as in an application. Package
 * {@code dev.conduit.it.process} is the multi-process harness (child JVMs, a container launcher).
 */
open module dev.conduit.it {
    requires dev.conduit;
    requires java.compiler;
    requires jdk.jdi;
    requires org.junit.jupiter.api;
    requires org.junit.jupiter.params;
    requires org.assertj.core;

    provides dev.conduit.spi.ConduitPlugin with dev.conduit.it.plugins.AlphaPlugin, dev.conduit.it.plugins.BetaPlugin;
}
