package dev.conduit;

import dev.conduit.ConfigEntry.Source;
import dev.conduit.spi.Availability;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static dev.conduit.testing.TestConduits.info;
import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Configuration through the builder: sources, precedence, validation at build time. */
class ConfigurationTest {

    private static final ConfigKey<Long> SIZE = ConfigKey.bytes("cfg.size", 4096, 4096, "Chunk size.");
    private static final ConfigKey<ThreadMode> MODE = ConfigKey.enumeration("cfg.mode", ThreadMode.class, ThreadMode.SINGLE, "Mode.");
    private static final ConfigKey<Path> DIR = ConfigKey.path("cfg.dir", null, "Directory.");

    private static TestPlugin plugin() {
        return TestPlugin.named("cfg").configKeys(SIZE, MODE, DIR);
    }

    private static Properties props(String... keyValues) {
        Properties p = new Properties();
        for (int i = 0; i < keyValues.length; i += 2) p.setProperty(keyValues[i], keyValues[i + 1]);
        return p;
    }

    private static ConfigEntry entry(Conduit conduit, String key) {
        return conduit.configuration().stream().filter(e -> e.key().equals(key)).findFirst().orElseThrow();
    }

    /**
     * ConduitBuilder#set takes a key "or as a property" and drops a leading "conduit.", so the key
     * conduit.mode of a plugin called conduit, set by its own name, became the unknown key mode,
     * "did you mean conduit.mode?". Until 2026-12-07 the name was accepted; it is now reserved, as
     * runtime is, and the plugin refused saying why, the others used.
     */
    @Test
    void aPluginCalledConduitIsRefusedSinceTheBuilderCouldNotSetItsKeysByTheirNames() {
        ConfigKey<String> mode = ConfigKey.string("conduit.mode", "slow", "Mode.");
        try (Conduit c = isolated().addPlugin(TestPlugin.named("conduit").configKeys(mode)).addPlugin(TestPlugin.named("good"))
                .build()) {
            PluginInfo refused = info(c, "conduit");
            assertThat(refused.status()).isEqualTo(PluginInfo.Status.REFUSED);
            assertThat(refused.reason()).contains("plugin name 'conduit' is reserved", "keys (conduit.x) could not be set there",
                    "name the plugin otherwise");
            assertThat(c.selectedPlugins()).containsExactly("good");
        }
    }

    @Test
    void theBuilderBeatsSystemPropertiesWhichBeatTheEnvironmentWhichBeatsTheDefault() {
        Map<String, String> env = Map.of("CONDUIT_CFG_SIZE", "16k");
        Properties props = props("conduit.cfg.size", "32k");

        TestPlugin p = plugin();
        try (Conduit c = isolated().addPlugin(p).environment(env).systemProperties(props).set("cfg.size", "64k").build()) {
            assertThat(p.probeContext.config().get(SIZE)).isEqualTo(64 * 1024L);
            assertThat(entry(c, "cfg.size")).extracting(ConfigEntry::value, ConfigEntry::source).containsExactly("65536", Source.BUILDER);
        }
        p = plugin();
        try (Conduit c = isolated().addPlugin(p).environment(env).systemProperties(props).build()) {
            assertThat(p.probeContext.config().get(SIZE)).isEqualTo(32 * 1024L);
            assertThat(entry(c, "cfg.size").source()).isEqualTo(Source.SYSTEM_PROPERTY);
        }
        p = plugin();
        try (Conduit c = isolated().addPlugin(p).environment(env).build()) {
            assertThat(p.probeContext.config().get(SIZE)).isEqualTo(16 * 1024L);
            assertThat(entry(c, "cfg.size").source()).isEqualTo(Source.ENVIRONMENT);
        }
        p = plugin();
        try (Conduit c = isolated().addPlugin(p).build()) {
            assertThat(p.probeContext.config().get(SIZE)).isEqualTo(4096L);
            assertThat(entry(c, "cfg.size")).extracting(ConfigEntry::value, ConfigEntry::source).containsExactly("4096", Source.DEFAULT);
        }
    }

    @Test
    void eachKeyIsResolvedFromItsOwnStrongestSource() {
        TestPlugin p = plugin();
        try (Conduit c = isolated().addPlugin(p)
                .environment(Map.of("CONDUIT_CFG_MODE", "multi", "CONDUIT_CFG_DIR", "/env/dir"))
                .systemProperties(props("conduit.cfg.dir", "/prop/dir"))
                .set("conduit.probe.timeout", "3s")
                .build()) {
            assertThat(p.probeContext.config().get(MODE)).isEqualTo(ThreadMode.MULTI);
            assertThat(p.probeContext.config().get(DIR)).isEqualTo(Path.of("/prop/dir"));
            assertThat(p.probeContext.config().get(SIZE)).isEqualTo(4096L);
            assertThat(entry(c, "probe.timeout")).extracting(ConfigEntry::value, ConfigEntry::source)
                    .containsExactly("3s", Source.BUILDER);
        }
    }

    /**
     * Configuration entries (what conduit info shows) gave durations as Duration#toString, PT5S and
     * PT0.02S, which no duration key accepts: a value copied from conduit info failed the build.
     * Each is now in the largest unit that says it exactly, and every value shown builds again.
     */
    @Test
    void everyValueShownIsAcceptedBackAsItIsShown() {
        try (Conduit c = isolated().addPlugin(plugin()).set("probe.timeout", "1500ms").build()) {
            assertThat(entry(c, "probe.timeout").value()).isEqualTo("1500ms");
            for (ConfigEntry shown : c.configuration()) {
                if (shown.value() == null) continue;
                try (Conduit again = isolated().addPlugin(plugin()).set(shown.key(), shown.value()).build()) {
                    assertThat(entry(again, shown.key()).value()).as(shown.key()).isEqualTo(shown.value());
                }
            }
        }
        Map<String, String> shownAs = Map.of("20ms", "20ms", "1000us", "1ms", "90s", "90s", "120s", "2m", "7ns", "7ns", "24h", "24h");
        shownAs.forEach((set, shown) -> {
            try (Conduit c = isolated().addPlugin(plugin()).set("probe.timeout", set).build()) {
                assertThat(entry(c, "probe.timeout").value()).as(set).isEqualTo(shown);
            }
        });
    }

    /**
     * Properties made over defaults ({@code new Properties(System.getProperties())} with overrides
     * set on top, the usual way to change a few) hold the defaults' values as their own: read as
     * {@link Properties#getProperty} reads them. Until 2026-12-07 the builder copied the entries
     * set on top alone, and a key set in the defaults fell back to its default.
     */
    @Test
    void systemPropertiesGivenAsTheDefaultsOfThePropertiesAreRead() {
        Properties overrides = new Properties(props("conduit.cfg.size", "32k"));
        overrides.setProperty("conduit.cfg.dir", "/prop/dir");
        TestPlugin p = plugin();
        try (Conduit c = isolated().addPlugin(p).systemProperties(overrides).build()) {
            assertThat(p.probeContext.config().get(DIR)).isEqualTo(Path.of("/prop/dir"));
            assertThat(entry(c, "cfg.size")).extracting(ConfigEntry::value, ConfigEntry::source)
                    .containsExactly("32768", Source.SYSTEM_PROPERTY);
        }
    }

    @Test
    void aMalformedValueInAWeakerSourceIsIgnoredWhenAStrongerSourceSetsTheKey() {
        try (Conduit c = isolated().addPlugin(plugin()).environment(Map.of("CONDUIT_CFG_SIZE", "huge"))
                .systemProperties(props("conduit.cfg.size", "8k")).build()) {
            assertThat(entry(c, "cfg.size").value()).isEqualTo("8192");
        }
    }

    @Test
    void aMalformedValueFailsBuildNamingKeyValueSourceAndExpectedForm() {
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).set("cfg.size", "tiny").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("'tiny'")
                .hasMessageContaining("conduit.cfg.size")
                .hasMessageContaining("CONDUIT_CFG_SIZE")
                .hasMessageContaining("(from the builder)")
                .hasMessageContaining(SIZE.expectedForm());
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).systemProperties(props("conduit.cfg.mode", "parallel")).build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("'parallel'")
                .hasMessageContaining("(from system property conduit.cfg.mode)")
                .hasMessageContaining("one of [single, serialized, multi]");
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).environment(Map.of("CONDUIT_PROBE_TIMEOUT", "5")).build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("'5'")
                .hasMessageContaining("(from environment variable CONDUIT_PROBE_TIMEOUT)")
                .hasMessageContaining("a positive duration with a unit");
    }

    @Test
    void aMalformedValueFailsBuildEvenWhenNothingReadsTheKey() {
        assertThatThrownBy(() -> isolated().environment(Map.of("CONDUIT_THREAD_CONFINE", "sometimes")).build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("CONDUIT_THREAD_CONFINE")
                .hasMessageContaining("true or false");
    }

    @Test
    void anUnknownBuilderKeyFailsBuildSuggestingTheNearestKey() {
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).set("probe.timout", "1s").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("unknown config key 'probe.timout'")
                .hasMessageContaining("did you mean 'probe.timeout'?");
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).set("conduit.cfg.sise", "8k").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("did you mean 'cfg.size'?");
        // A variable's name is far from its key's by edit distance, so it got no suggestion at all.
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).set("CONDUIT_CFG_SIZE", "8k").build())
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown config key 'CONDUIT_CFG_SIZE' set in the builder: that is the environment variable of key "
                        + "'cfg.size'; the builder takes the key: set(\"cfg.size\", value)");
        assertThatThrownBy(() -> isolated().set("completely.unrelated.setting", "1").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("unknown config key 'completely.unrelated.setting'")
                .hasMessageNotContaining("did you mean");
    }

    /**
     * A builder setting for a plugin that is not installed here fails, saying that no plugin of
     * that name was found and which were. The message only called the key unknown, and where
     * devdax is installed suggested another plugin's key: "did you mean 'devdax.device'?".
     */
    @Test
    void aBuilderSettingForAPluginNotFoundHereSaysNoSuchPluginWasFound() {
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).addPlugin(TestPlugin.named("keyless")).set("verbs.device", "mlx5_0").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("unknown config key 'verbs.device' set in the builder; no plugin called 'verbs' was found here "
                        + "(found: cfg, keyless), so nothing reads it: leave the setting out, or put that plugin on the module path "
                        + "or the class path, or into plugin.path (CONDUIT_PLUGIN_PATH)");
        // Nor one whose first word no plugin can be called, or is a letter or two from a word found here: a misspelt key
        // (until 2026-12-02 'install that plugin').
        for (String key : List.of("cfg.sise", "keyless.size", "probe.timout", "transport", "Probe.Timeout", " probe.timeout", "2cfg.size",
                "prob.timeout", "keyles.size", "threads.confine")) {
            assertThatThrownBy(() -> isolated().addPlugin(plugin()).addPlugin(TestPlugin.named("keyless")).set(key, "1").build())
                    .as("%s: a plugin or runtime word found here", key)
                    .isInstanceOf(ConfigException.class).hasMessageContaining("unknown config key '" + key + "'")
                    .hasMessageNotContaining("was found here");
        }
    }

    @Test
    void unknownEnvironmentVariablesAndPropertiesOnlyWarn() {
        Map<String, String> env = new HashMap<>();
        env.put("CONDUIT_CFG_SIZ", "8k");
        env.put("PATH", "/usr/bin");
        try (Conduit c = isolated().addPlugin(plugin()).environment(env)
                .systemProperties(props("conduit.cfg.moed", "multi", "java.version", "25")).build()) {
            assertThat(c.selectedPlugins()).containsExactly("cfg");
        }
    }

    @Test
    void configurationListsEveryDeclaredKeyByNameWithOwnerAndDoc() {
        try (Conduit c = isolated().addPlugin(plugin()).build()) {
            assertThat(c.configuration()).extracting(ConfigEntry::key).isSorted()
                    .contains("cfg.dir", "cfg.mode", "cfg.size", "plugin.path", "probe.timeout", "shared.dir", "thread.confine", "transports");
            ConfigEntry dir = entry(c, "cfg.dir");
            assertThat(dir.owner()).isEqualTo("cfg");
            assertThat(dir.value()).isNull();
            assertThat(dir.source()).isEqualTo(Source.DEFAULT);
            assertThat(dir.property()).isEqualTo("conduit.cfg.dir");
            assertThat(dir.environment()).isEqualTo("CONDUIT_CFG_DIR");
            assertThat(dir.doc()).contains("Directory.").contains("a file system path");
            assertThat(entry(c, "shared.dir").owner()).isEqualTo("runtime");
            assertThat(c.plugins().getFirst().configuration()).extracting(ConfigEntry::key)
                    .containsExactly("cfg.dir", "cfg.mode", "cfg.size");
        }
    }

    @Test
    void listValuesAreShownCommaSeparated() {
        try (Conduit c = isolated().addPlugin(TestPlugin.named("x")).addPlugin(TestPlugin.named("y")).transports("y", "x").build()) {
            assertThat(entry(c, "transports").value()).isEqualTo("y,x");
        }
    }

    @Test
    void builderHelpersSetTheirKeys() {
        try (Conduit c = isolated().addPlugin(TestPlugin.named("x")).sharedDirectory(Path.of("/mnt/shared"))
                .threadConfinement(true).build()) {
            assertThat(entry(c, "shared.dir").value()).isEqualTo("/mnt/shared");
            assertThat(entry(c, "thread.confine").value()).isEqualTo("true");
        }
    }

    /**
     * ConduitBuilder.build(): a malformed value, an unknown builder key, a transports setting that
     * names a plugin not found or mixes names to use and to exclude all fail it with a
     * ConfigException "before any probe runs".
     */
    @Test
    void whatFailsBuildWithAConfigExceptionFailsItBeforeAnyProbeRuns() {
        List<java.util.function.UnaryOperator<ConduitBuilder>> mistakes = List.of(
                b -> b.set("cfg.size", "tiny"),
                b -> b.set("probe.timout", "1s"),
                b -> b.transports("cfg", "memfd"),
                b -> b.transports("cfg", "^other"));
        for (var mistake : mistakes) {
            TestPlugin p = plugin();
            TestPlugin other = TestPlugin.named("other");
            assertThatThrownBy(() -> mistake.apply(isolated().addPlugin(p).addPlugin(other)).build()).isInstanceOf(ConfigException.class);
            assertThat(p.probes.get() + other.probes.get()).as("probes run").isZero();
        }
    }

    /**
     * PluginContext: the configuration, this process's view of the shared directory, and "a logger
     * named after the plugin", in the probe's context and a transport's alike.
     */
    @Test
    void aPluginsContextGivesTheSharedDirectoryAndALoggerNamedAfterThePlugin() {
        TestPlugin p = plugin();
        try (Conduit c = isolated().addPlugin(p).sharedDirectory(Path.of("/mnt/shared")).set("cfg.size", "8k").build();
             Worker worker = c.newWorker(ThreadMode.SINGLE)) {
            for (PluginContext context : List.of(p.probeContext, p.transportContexts.getFirst())) {
                assertThat(context.sharedDirectory()).isEqualTo(Path.of("/mnt/shared"));
                assertThat(context.logger().getName()).isEqualTo("dev.conduit.plugin.cfg");
                assertThat(context.config().get(SIZE)).isEqualTo(8192L);
            }
            assertThat(worker.threadMode()).isEqualTo(ThreadMode.SINGLE);
        }
    }

    /**
     * A relative shared.dir reaches the plugins resolved against the working directory, so that
     * their messages name the directory itself: they said {@code open("rel")}, which a service whose
     * working directory is not the operator's shell's does not tell (a helper playing an SRE).
     */
    @Test
    void aRelativeSharedDirectoryReachesThePluginsResolvedAgainstTheWorkingDirectory() {
        TestPlugin p = plugin();
        try (Conduit c = isolated().addPlugin(p).sharedDirectory(Path.of("relative/shared")).build()) {
            assertThat(p.probeContext.sharedDirectory()).isEqualTo(Path.of(System.getProperty("user.dir"), "relative", "shared"));
        }
    }

    @Test
    void keysOfAnUnavailablePluginMayStillBeSet() {
        TestPlugin p = TestPlugin.named("cfg").configKeys(SIZE).probe(x -> Availability.unavailable("no device"));
        try (Conduit c = isolated().addPlugin(p).set("cfg.size", "8k").build()) {
            assertThat(entry(c, "cfg.size").value()).isEqualTo("8192");
        }
    }

    /**
     * A plugin found but REFUSED (built for another SPI) or BROKEN (its metadata threw) costs only a
     * WARNING, but a builder setting for one of its keys failed the build as an "unknown config key",
     * with a "did you mean" pointing at another key: its keys were not declared, so an application
     * configuring a plugin could not start on a host where that plugin's jar is unusable. Such a
     * setting is now left unread, like the plugin, and an unknown key of a plugin in use still fails.
     */
    @Test
    void keysOfARefusedOrBrokenPluginMayStillBeSet() {
        TestPlugin refused = TestPlugin.named("cfg").spiVersion("2.0").configKeys(SIZE);
        TestPlugin broken = TestPlugin.named("bro").configKeys(ConfigKey.string("bro.dir", null, "Directory."))
                .brokenMetadata(new NoClassDefFoundError("dev/example/Native"));
        try (Conduit c = isolated().addPlugin(refused).addPlugin(broken).set("cfg.size", "8k").set("bro.dir", "/mnt").build()) {
            assertThat(c.plugins()).extracting(PluginInfo::name, PluginInfo::status)
                    .containsExactlyInAnyOrder(org.assertj.core.api.Assertions.tuple("cfg", PluginInfo.Status.REFUSED),
                            org.assertj.core.api.Assertions.tuple("bro", PluginInfo.Status.BROKEN));
            assertThat(c.configuration()).extracting(ConfigEntry::key).doesNotContain("cfg.size", "bro.dir");
        }
        assertThatThrownBy(() -> isolated().addPlugin(plugin()).addPlugin(broken).set("cfg.sise", "8k").build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("did you mean 'cfg.size'?");
    }

    @Test
    void aBuilderCanBuildMoreThanOnce() {
        ConduitBuilder b = isolated().addPlugin(TestPlugin.named("x"));
        try (Conduit first = b.build(); Conduit second = b.build()) {
            assertThat(first.selectedPlugins()).isEqualTo(second.selectedPlugins()).containsExactly("x");
        }
    }

    /**
     * A directory of plugin.path that no path can name (a NUL, which only the builder and a system property can set) fails the
     * build as a malformed value, naming the key: until 2026-12-02 Path.of's InvalidPathException escaped the build unexplained.
     */
    @Test
    void aPluginPathNoPathCanNameFailsTheBuildNamingTheKey() {
        assertThatThrownBy(() -> isolated().set("plugin.path", "/opt/plugins" + java.io.File.pathSeparator + " /opt/a\0b ").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("bad value '/opt/plugins" + java.io.File.pathSeparator + " /opt/a\\0b ' for config key "
                        + "conduit.plugin.path (CONDUIT_PLUGIN_PATH) (from the builder): directory '/opt/a\\0b' is no valid path (Nul "
                        + "character not allowed); expected directories separated by '" + java.io.File.pathSeparator + "'")
                .hasMessageNotContaining("\0");
    }

    /**
     * A plugin.path directory that is not there is named with where plugin.path was set: until
     * 2026-12-02 the reason said "fix plugin.path (CONDUIT_PLUGIN_PATH)" also to a user who set it
     * in the builder or a system property, and has no such variable.
     */
    @Test
    void aPluginPathDirectoryThatIsNotThereIsNamedWithWherePluginPathWasSet(@org.junit.jupiter.api.io.TempDir Path dir) {
        String missing = dir.resolve("missing").toString();
        try (Conduit c = isolated().set("plugin.path", missing).build()) {
            assertThat(c.plugins()).singleElement().satisfies(p -> assertThat(p.reason()).isEqualTo("plugin directory " + missing
                    + " does not exist or is not a directory; fix plugin.path (from the builder)"));
        }
        try (Conduit c = isolated().systemProperties(props("conduit.plugin.path", missing)).build()) {
            assertThat(c.plugins()).singleElement().satisfies(p -> assertThat(p.reason())
                    .endsWith("fix plugin.path (from system property conduit.plugin.path)"));
        }
    }

    /**
     * ConduitBuilder.pluginPath takes Paths, each one directory; it joins them with the path
     * separator into plugin.path, which splits them again and strips blanks around each. A directory
     * whose name holds the separator (a release dir "plugins:2.1", a mount "/mnt/nfs:/export"), or
     * ends in a blank, was then read as other directories: the one given was never searched, and
     * the build reported directories that do not exist, none of which the caller named. The
     * builder now refuses it, saying what it would be read as.
     */
    @Test
    void aDirectoryPluginPathWouldReadAsOthersIsRefusedByTheBuilderNamingIt(@TempDir Path dir) throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins" + File.pathSeparator + "2.1"));
        Path blank = Files.createDirectories(dir.resolve("plugins "));

        assertThatThrownBy(() -> isolated().pluginPath(plugins)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("plugin directory '" + plugins + "'")
                .hasMessageContaining("read as '" + dir.resolve("plugins") + "' and '2.1'");
        assertThatThrownBy(() -> isolated().pluginPath(dir, blank)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("plugin directory '" + blank + "'")
                .hasMessageContaining("read as '" + dir.resolve("plugins") + "'");
        try (Conduit c = isolated().pluginPath(Files.createDirectories(dir.resolve("plugins"))).build()) {
            assertThat(c.plugins()).as("a directory plugin.path carries: searched, nothing broken").isEmpty();
        }
    }

    /**
     * A plugin jar listed in plugin.path as on a class path was said to "not exist or not be a directory", though it
     * exists: the reason now says it is a jar and names the directory to give.
     */
    @Test
    void aJarInPluginPathIsNamedAsOneWithItsDirectory(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path jar = Files.writeString(dir.resolve("conduit-plugin-example.jar"), "not read");
        try (Conduit c = isolated().set("plugin.path", jar.toString()).build()) {
            assertThat(c.plugins()).singleElement().satisfies(p -> assertThat(p.reason()).isEqualTo("plugin directory " + jar
                    + " is a jar, not a directory: plugin.path lists directories, and every jar at the top of one is a plugin; give "
                    + "the jar's directory, " + dir + ", or one that holds only this jar; fix plugin.path (from the builder)"));
        }
    }
}
