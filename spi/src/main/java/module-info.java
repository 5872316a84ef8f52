/**
 * The Conduit service-provider interface: what a plugin implements and may use.
 *
 * <p>A plugin is a {@link dev.conduit.spi.ConduitPlugin} found by {@link java.util.ServiceLoader}:
 * on the module path through {@code provides dev.conduit.spi.ConduitPlugin with ...}, on the class
 * path through {@code META-INF/services/dev.conduit.spi.ConduitPlugin}, or from a plugin directory.
 * The runtime ({@code dev.conduit}) calls it; a plugin never sees the runtime except through the
 * context objects defined here. This module depends on {@code java.base} only.
 */
module dev.conduit.spi {
    exports dev.conduit.spi;
}
