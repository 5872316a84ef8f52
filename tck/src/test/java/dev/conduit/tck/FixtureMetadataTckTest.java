package dev.conduit.tck;

import dev.conduit.spi.ConduitPlugin;
import org.junit.jupiter.api.Nested;

/**
 * Both well-behaved fixtures pass the plugin-metadata suite. They are test classes, added in code,
 * that no jar declares: foundByServiceLoader says so ({@link BrokenPlugins.UndeclaredSuite} is the
 * same plugin without it).
 */
class FixtureMetadataTckTest {

    @Nested
    class Loopback extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new LoopbackPlugin();
        }

        @Override
        protected boolean foundByServiceLoader() {
            return false;
        }
    }

    @Nested
    class File extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new FileMemoryPlugin();
        }

        @Override
        protected boolean foundByServiceLoader() {
            return false;
        }
    }
}
