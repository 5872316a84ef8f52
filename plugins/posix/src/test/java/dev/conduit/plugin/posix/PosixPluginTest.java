package dev.conduit.plugin.posix;

import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class PosixPluginTest {

    private final PosixPlugin plugin = new PosixPlugin();

    @Test
    void describesItself() {
        assertThat(plugin.name()).isEqualTo("posix");
        assertThat(plugin.version()).isEqualTo(Version.parse("0.1.0"));
        assertThat(plugin.spiVersion()).isEqualTo(ConduitPlugin.SPI_VERSION);
        assertThat(plugin.description()).isNotBlank();
        assertThat(plugin.capabilities()).containsExactlyInAnyOrder(Capability.MEMORY, Capability.IPC, Capability.AM,
                Capability.RMA, Capability.ATOMICS, Capability.WAKEUP);
        assertThat(plugin.threadModes()).containsExactlyInAnyOrder(ThreadMode.SINGLE, ThreadMode.SERIALIZED);
        assertThat(plugin.priority()).isEqualTo(100);
    }

    @Test
    void declaresItsConfigKeysUnderItsName() {
        assertThat(plugin.configKeys()).extracting(ConfigKey::name).containsExactly("posix.dir", "posix.trusted.uids",
                "posix.queue.size", "posix.inline.max", "posix.bounce.size", "posix.liveness.interval",
                "posix.heartbeat.timeout", "posix.unblock.timeout", "posix.inbound.max", "posix.inbound.bounce.max");
        assertThat(plugin.configKeys()).allSatisfy(key -> assertThat(key.doc()).isNotBlank());
        assertThat(PosixConfig.DIR.defaultValue()).isNull();
        assertThat(PosixConfig.DIR.environmentName()).isEqualTo("CONDUIT_POSIX_DIR");
        assertThat(PosixConfig.TRUSTED_UIDS.defaultValue()).isEmpty();
        assertThat(PosixConfig.TRUSTED_UIDS.environmentName()).isEqualTo("CONDUIT_POSIX_TRUSTED_UIDS");
    }

    @Test
    void isAServiceOnTheModulePathAndOnTheClassPath() throws IOException {
        ModuleDescriptor descriptor = PosixPlugin.class.getModule().getDescriptor();
        assertThat(descriptor.name()).isEqualTo("dev.conduit.plugin.posix");
        assertThat(descriptor.exports()).isEmpty();
        assertThat(descriptor.provides()).singleElement().satisfies(p -> {
            assertThat(p.service()).isEqualTo(ConduitPlugin.class.getName());
            assertThat(p.providers()).containsExactly(PosixPlugin.class.getName());
        });
        try (InputStream services = PosixPlugin.class.getModule().getResourceAsStream(
                "META-INF/services/dev.conduit.spi.ConduitPlugin")) {
            assertThat(services).isNotNull();
            assertThat(new String(services.readAllBytes(), StandardCharsets.UTF_8).trim()).isEqualTo(PosixPlugin.class.getName());
        }
    }
}
