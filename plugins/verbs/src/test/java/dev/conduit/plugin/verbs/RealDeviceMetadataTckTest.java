package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.tck.PluginMetadataContract;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

import java.nio.file.Path;
import java.util.Map;

/**
 * The TCK's plugin-metadata suite, run on the verbs plugin as {@link java.util.ServiceLoader} makes it, on the
 * RDMA device {@code CONDUIT_TEST_VERBS_DEVICE} names (hardware or Soft-RoCE: docs/plugins.md,
 * "verbs"); skipped, saying so, where that is not set, like {@link RealDeviceTest}.
 */
@EnabledIfEnvironmentVariable(named = RealDevice.VARIABLE, matches = ".+", disabledReason = RealDevice.WHY_SKIPPED)
class RealDeviceMetadataTckTest extends PluginMetadataContract {

    @Override
    protected ConduitPlugin newPlugin() {
        return new VerbsPlugin();
    }

    @Override
    protected Map<String, String> configuration(Path sharedDirectory) {
        return RealDevice.configuration();
    }
}
