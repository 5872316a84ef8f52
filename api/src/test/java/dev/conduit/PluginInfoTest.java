package dev.conduit;

import dev.conduit.spi.Capability;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** What a log line of {@code conduit.plugins()} shows: the plugin's standing, not every key's doc. */
class PluginInfoTest {

    private static final String DOC = "what the key does, and its accepted form, ".repeat(20);

    private static PluginInfo info(PluginInfo.Status status, String reason, Map<Capability, String> notHere) {
        ConfigEntry dir = new ConfigEntry("memfd.dir", "conduit.memfd.dir", "CONDUIT_MEMFD_DIR", "/dev/shm", ConfigEntry.Source.DEFAULT,
                "memfd", DOC);
        return new PluginInfo("memfd", "0.1.0", "1.1", "sealed memfd", "module dev.conduit.plugin.memfd (memfd.jar)", status, reason,
                Set.of(Capability.AM, Capability.MEMORY, Capability.IPC), notHere, Set.of(ThreadMode.SINGLE), 100,
                Map.of("dir", "/dev/shm"), List.of(dir));
    }

    @Test
    void aPluginPrintsOneLineWithoutItsKeysDocs() {
        assertThat(info(PluginInfo.Status.SELECTED, null, Map.of()))
                .hasToString("memfd 0.1.0 SELECTED [MEMORY, IPC, AM] from module dev.conduit.plugin.memfd (memfd.jar)");
    }

    @Test
    void aPluginNotSelectedSaysWhyAndWhatItCannotDoHere() {
        String line = info(PluginInfo.Status.UNAVAILABLE, "no memfd_create (ENOSYS): a kernel before 3.17",
                Map.of(Capability.AM, "the shared directory is read-only")).toString();
        assertThat(line).isEqualTo("memfd 0.1.0 UNAVAILABLE [MEMORY, IPC, AM] from module dev.conduit.plugin.memfd (memfd.jar), not here: [AM]: "
                + "no memfd_create (ENOSYS): a kernel before 3.17").doesNotContain(DOC);
    }

    @Test
    void aConfigEntryPrintsKeyValueAndSource() {
        assertThat(info(PluginInfo.Status.SELECTED, null, Map.of()).configuration().getFirst()).hasToString("memfd.dir=/dev/shm (DEFAULT)");
        assertThat(new ConfigEntry("k", "conduit.k", "CONDUIT_K", null, ConfigEntry.Source.DEFAULT, "runtime", DOC))
                .hasToString("k=(unset) (DEFAULT)");
    }
}
