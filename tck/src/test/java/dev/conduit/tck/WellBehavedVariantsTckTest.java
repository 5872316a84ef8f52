package dev.conduit.tck;

import dev.conduit.spi.ConduitPlugin;
import org.junit.jupiter.api.Nested;

import java.time.Duration;

/** Plugins that use a freedom the SPI gives ({@link WellBehavedVariants}) pass the suites. */
class WellBehavedVariantsTckTest {

    /** trySend refuses until the sender's own progress() reclaims its buffers: the suites progress the sender too. */
    @Nested
    class ReclaimsOnOwnProgressMetadata extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.ReclaimsOnOwnProgress();
        }

        @Override
        protected Duration progressGuard() {
            return Duration.ofSeconds(5);
        }

        @Override
        protected boolean foundByServiceLoader() {
            return false; // a test class, added in code
        }
    }

    @Nested
    class ReclaimsOnOwnProgressTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.ReclaimsOnOwnProgress();
        }

        @Override
        protected Duration progressGuard() {
            return Duration.ofSeconds(5);
        }
    }

    /** ATOMICS without RMA: the atomics are checked, not skipped with the RMA test. */
    @Nested
    class AtomicsWithoutRmaTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.AtomicsWithoutRma();
        }
    }

    /** A daemon thread per transport that ends a moment after close(): not taken for a leak. */
    @Nested
    class StopsItsThreadOnCloseTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.StopsItsThreadOnClose();
        }
    }
}
