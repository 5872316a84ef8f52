package dev.conduit.plugin.devdax;

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

class DevdaxPluginTest {

    private final DevdaxPlugin plugin = new DevdaxPlugin();

    @Test
    void describesItself() {
        assertThat(plugin.name()).isEqualTo("devdax");
        assertThat(plugin.version()).isEqualTo(Version.parse("0.1.0"));
        assertThat(plugin.spiVersion()).isEqualTo(ConduitPlugin.SPI_VERSION);
        assertThat(plugin.description()).isNotBlank();
        assertThat(plugin.capabilities()).containsExactlyInAnyOrder(Capability.MEMORY, Capability.IPC);
        assertThat(plugin.threadModes()).containsExactlyInAnyOrder(ThreadMode.SINGLE, ThreadMode.SERIALIZED);
        assertThat(plugin.priority()).isEqualTo(50);
    }

    @Test
    void declaresItsConfigKeysUnderItsName() {
        assertThat(plugin.configKeys()).extracting(ConfigKey::name)
                .containsExactly("devdax.devices", "devdax.device", "devdax.on.start", "devdax.file.align");
        assertThat(plugin.configKeys()).extracting(ConfigKey::environmentName)
                .containsExactly("CONDUIT_DEVDAX_DEVICES", "CONDUIT_DEVDAX_DEVICE", "CONDUIT_DEVDAX_ON_START", "CONDUIT_DEVDAX_FILE_ALIGN");
        assertThat(plugin.configKeys()).allSatisfy(key -> assertThat(key.doc()).isNotBlank());
        assertThat(DevdaxConfig.DEVICES.defaultValue()).isEmpty();
        assertThat(DevdaxConfig.DEVICE.defaultValue()).isNull();
        assertThat(DevdaxConfig.ON_START.defaultValue()).hasToString("reset");
        assertThat(DevdaxConfig.ON_START.parse("Recover", "test")).isEqualTo(DevdaxConfig.OnStart.RECOVER);
        assertThat(DevdaxConfig.FILE_ALIGN.defaultValue()).isEqualTo(2L << 20);
    }

    @Test
    void isAServiceOnTheModulePathAndOnTheClassPath() throws IOException {
        ModuleDescriptor descriptor = DevdaxPlugin.class.getModule().getDescriptor();
        assertThat(descriptor.name()).isEqualTo("dev.conduit.plugin.devdax");
        assertThat(descriptor.exports()).isEmpty();
        assertThat(descriptor.provides()).singleElement().satisfies(p -> {
            assertThat(p.service()).isEqualTo(ConduitPlugin.class.getName());
            assertThat(p.providers()).containsExactly(DevdaxPlugin.class.getName());
        });
        try (InputStream services = DevdaxPlugin.class.getModule().getResourceAsStream(
                "META-INF/services/dev.conduit.spi.ConduitPlugin")) {
            assertThat(services).isNotNull();
            assertThat(new String(services.readAllBytes(), StandardCharsets.UTF_8).trim()).isEqualTo(DevdaxPlugin.class.getName());
        }
    }
}
