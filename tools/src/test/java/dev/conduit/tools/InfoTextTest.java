package dev.conduit.tools;

import dev.conduit.ConfigEntry;
import dev.conduit.tools.CommandRunner.Result;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code conduit info} as text: every plugin, every key, the selection. */
class InfoTextTest {

    private final CommandRunner conduit = CommandRunner.withPlugins(TestPlugin.beta(), TestPlugin.gamma(), TestPlugin.alpha());

    @Test
    void showsEveryFactAboutEachPlugin() {
        Result result = conduit.run("info");

        assertThat(result.exitCode()).as(result.err()).isZero();
        assertThat(result.err()).isEmpty();
        assertThat(section(result.out(), "  alpha 1.2.0  [SELECTED]")).contains(
                "description   Alpha test transport",
                "status        selected, preference 1 of 2",
                "origin        added in code (" + TestPlugin.class.getName() + ")",
                "spi version   " + dev.conduit.spi.ConduitPlugin.SPI_VERSION,
                "capabilities  MEMORY, IPC, AM",
                "thread modes  SINGLE, MULTI",
                "priority      150",
                "probe         device  /dev/alpha0\n                  ports   2",
                "alpha.depth  4        default",
                "How deep alpha's queues are. (a whole number from 1 to 64)",
                "property conduit.alpha.depth, environment CONDUIT_ALPHA_DEPTH",
                "alpha.label  (unset)  default");
        assertThat(section(result.out(), "  alpha 1.2.0  [SELECTED]")).doesNotContain("not here");
        assertThat(section(result.out(), "  beta 0.3.1  [UNAVAILABLE]")).contains(
                "status        unavailable: no beta device: load the beta driver (modprobe beta)",
                "capabilities  AM, CROSS_HOST",
                "thread modes  SERIALIZED",
                "probe         no details",
                "beta.fast  true  default");
        assertThat(section(result.out(), "  gamma 2.0.0  [SELECTED]")).contains(
                "status        selected, preference 2 of 2",
                "capabilities  MEMORY",
                "not here      MEMORY: " + TestPlugin.GAMMA_NOT_HERE,
                "config        no keys")
                .doesNotContain("description");
    }

    @Test
    void listsSelectedPluginsFirstInPreferenceOrderThenTheOthers() {
        Result result = conduit.run("info", "--set", "transports=gamma,alpha");

        String out = result.out();
        assertThat(out.indexOf("  gamma 2.0.0  [SELECTED]")).isPositive()
                .isLessThan(out.indexOf("  alpha 1.2.0  [SELECTED]"));
        assertThat(out.indexOf("  alpha 1.2.0  [SELECTED]")).isLessThan(out.indexOf("  beta 0.3.1  [EXCLUDED]"));
        assertThat(out).contains("PLUGINS: 3 found, 2 selected");
    }

    @Test
    void showsAPluginLeftOutByTransportsWithTheReason() {
        Result result = conduit.run("info", "--set", "transports=gamma");

        assertThat(section(result.out(), "  alpha 1.2.0  [EXCLUDED]"))
                .contains("status        not named by transports=gamma (from the builder), so not probed; name it there to use it")
                .contains("probe         not probed");
    }

    /**
     * A plugin whose keys are not read (left out by transports while a key of it has the variable of
     * a key of a plugin in use, or refused for it) lists them, with what is set for them, under
     * "not read": until 2026-12-02 it showed "no keys", as if it declared none, and hid that
     * lo-dax.mode, set, applies to nothing.
     */
    @Test
    void showsTheKeysOfAPluginWhoseKeysAreNotReadAsNotRead() {
        CommandRunner loPlugins = CommandRunner.withPlugins(TestPlugin.lo(), TestPlugin.loDax());
        for (String transports : List.of("^lo-dax", "")) {
            Result result = loPlugins.run("info", "--set", "transports=" + transports, "--set", "lo-dax.mode=fast");

            assertThat(result.exitCode()).as(result.err()).isZero();
            String status = transports.isEmpty() ? "REFUSED" : "EXCLUDED";
            assertThat(section(result.out(), "  lo-dax 1.0.0  [" + status + "]")).as(transports)
                    .contains("CONDUIT_LO_DAX_PATH",
                            "config        not read (the status says why): what is set for its keys applies to nothing",
                            "lo-dax.mode  fast     builder",
                            "How lo-dax runs. (any text)",
                            "property conduit.lo-dax.mode, environment CONDUIT_LO_DAX_MODE",
                            "lo-dax.path  (unset)  default")
                    .doesNotContain("no keys");
            assertThat(section(result.out(), "  lo 1.0.0  [SELECTED]")).as(transports).contains("lo.dax.path  (unset)  default");
        }
    }

    @Test
    void showsEveryRuntimeKeyWithValueSourceAndDoc() {
        Result result = conduit.run("info", "--set", "probe.timeout=3s");

        String runtime = section(result.out(), "RUNTIME CONFIGURATION");
        List<ConfigEntry> keys;
        try (var opened = conduit.builder().build()) {
            keys = opened.configuration().stream().filter(e -> e.owner().equals("runtime")).toList();
        }
        assertThat(keys).isNotEmpty();
        for (ConfigEntry key : keys) {
            assertThat(runtime).contains("\n  " + key.key() + " ", key.property(), key.environment(),
                    InfoText.wrap(key.doc(), 1000).getFirst().substring(0, Math.min(40, key.doc().length())));
        }
        assertThat(runtime).containsPattern("probe\\.timeout +3s +builder");
        assertThat(runtime).doesNotContain("alpha.depth");
    }

    @Test
    void showsTheSelection() {
        assertThat(section(conduit.run("info").out(), "SELECTION")).contains(
                "transports    not set: every available plugin, by priority",
                "selected      alpha, gamma");
        assertThat(section(conduit.run("info", "--set", "transports=^alpha").out(), "SELECTION")).contains(
                "transports    ^alpha  (builder)",
                "selected      gamma");
    }

    @Test
    void showsTheIpcCachesBoundsAndIdleTime() {
        assertThat(section(conduit.run("info").out(), "SELECTION")).contains(
                "IPC CACHE (this process)",
                "  bound         1073741824 bytes kept mapped for no open region (ipc.cache.bytes)",
                "  entries bound 4096 chunks kept mapped for no open region (ipc.cache.entries)",
                "  idle          1m: a chunk no region uses is unmapped one to two of these after its last region closed (ipc.cache.idle)");
        assertThat(section(conduit.run("info", "--set", "ipc.cache.entries=100", "--set", "ipc.cache.idle=30s").out(), "SELECTION"))
                .contains("  entries bound 100 chunks kept", "  idle          30s: ");
    }

    @Test
    void saysSoWhenNoPluginIsFound() {
        Result result = CommandRunner.withPlugins().run("info");

        assertThat(result.exitCode()).isZero();
        assertThat(result.out()).contains("PLUGINS: 0 found, 0 selected", "none: no plugin module", "selected      none");
    }

    @Test
    void wrapsLongTextAtWordBoundaries() {
        assertThat(InfoText.wrap("one two three four", 9)).containsExactly("one two", "three", "four");
        assertThat(InfoText.wrap("a-very-long-word fits", 5)).containsExactly("a-very-long-word", "fits");
        assertThat(InfoText.wrap("  spaced \n out  ", 80)).containsExactly("spaced out");
    }

    /** The text from the line starting with {@code heading} up to the next blank line. */
    private static String section(String out, String heading) {
        int start = out.indexOf("\n" + heading + "\n");
        assertThat(start).as("section " + heading + " in:\n" + out).isNotNegative();
        int end = out.indexOf("\n\n", start + 1);
        return out.substring(start + 1, end < 0 ? out.length() : end);
    }
}
