/**
 * The Conduit TCK: JUnit 5 contract suites that a plugin passes, for our own plugins and for third
 * parties. An author subclasses one suite per kind of plugin object ({@link dev.conduit.tck.PluginMetadataContract},
 * {@link dev.conduit.tck.MemoryProviderContract}, {@link dev.conduit.tck.TransportContract}) and supplies the
 * plugin and its configuration; each suite checks the plugin directly through the SPI (the contract) and
 * through the runtime (so that the runtime's policies hold for it). See docs/plugin-authoring.md.
 */
module dev.conduit.tck {
    requires transitive dev.conduit;
    requires transitive org.junit.jupiter.api;
    requires org.assertj.core;
    requires java.management;
    // HotSpotDiagnosticMXBean.dumpThreads: the only list of a JVM's virtual threads (VirtualThreads).
    requires jdk.management;

    exports dev.conduit.tck;
    // JUnit reaches the suites' methods reflectively, wherever it is loaded from.
    opens dev.conduit.tck;

    uses dev.conduit.spi.ConduitPlugin;
}
