package dev.conduit.tck;

import dev.conduit.spi.ConduitPlugin;
import org.junit.jupiter.api.Nested;

/** Both well-behaved fixtures pass the plugin-metadata suite. */
class FixtureMetadataTckTest {

    @Nested
    class Loopback extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new LoopbackPlugin();
        }
    }

    @Nested
    class File extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new FileMemoryPlugin();
        }
    }
}
