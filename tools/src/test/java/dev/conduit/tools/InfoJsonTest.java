package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;
import dev.conduit.tools.CommandRunner.Result;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code conduit info --json}: one valid document with the same content as the API reports. */
class InfoJsonTest {

    private static final String AWKWARD = "quote \" backslash \\ newline \n tab \t bell \u0007 é 😀";

    private final CommandRunner conduit = CommandRunner.withPlugins(
            TestPlugin.beta(), TestPlugin.gamma(), TestPlugin.alpha(), TestPlugin.delta(AWKWARD));

    @Test
    void isOneValidAsciiDocument() {
        Result result = conduit.run("info", "--json");

        assertThat(result.exitCode()).as(result.err()).isZero();
        assertThat(result.err()).isEmpty();
        assertThat(result.out().chars()).allMatch(c -> c == '\n' || (c >= 0x20 && c < 0x7f));
        Map<String, Object> info = JsonParser.parseObject(result.out());
        assertThat(info.keySet()).containsExactly("version", "spiVersion", "plugins", "configuration", "selection", "ipcCache", "threadPolicies", "sharedFiles");
        assertThat(((Map<?, ?>) info.get("threadPolicies")).keySet().stream().map(String::valueOf).toList()).containsExactlyInAnyOrder("SINGLE", "SERIALIZED", "MULTI");
        assertThat(info).containsEntry("version", ToolVersion.current()).containsEntry("spiVersion", "1.1");
    }

    @Test
    void showsTheIpcCachesBoundsIdleTimeAndCounters() {
        Map<String, Object> cache = Json.object(JsonParser.parseObject(conduit.run("info", "--json").out()), "ipcCache");
        assertThat(cache).containsEntry("maximumBytes", new BigDecimal(1L << 30))
                .containsEntry("maximumEntries", new BigDecimal(4096))
                .containsEntry("idleMillis", new BigDecimal(60_000))
                .containsKeys("hits", "misses", "evictions", "mappedBytes", "entries", "entriesInUse");
        Map<String, Object> set = Json.object(JsonParser.parseObject(
                conduit.run("info", "--json", "--set", "ipc.cache.entries=100", "--set", "ipc.cache.idle=250ms").out()), "ipcCache");
        assertThat(set).containsEntry("maximumEntries", new BigDecimal(100)).containsEntry("idleMillis", new BigDecimal(250));
    }

    @Test
    void describesEveryPluginAsTheApiDoes() {
        Map<String, Object> info = JsonParser.parseObject(conduit.run("info", "--json").out());

        List<PluginInfo> expected;
        try (Conduit opened = conduit.builder().build()) {
            expected = opened.plugins();
        }
        List<Map<String, Object>> plugins = Json.objects(info, "plugins");
        assertThat(plugins).extracting(p -> p.get("name")).containsExactly("alpha", "gamma", "delta", "beta");
        for (PluginInfo plugin : expected) {
            Map<String, Object> json = Json.plugin(info, plugin.name());
            assertThat(json).containsEntry("version", plugin.version())
                    .containsEntry("spiVersion", plugin.spiVersion())
                    .containsEntry("description", plugin.description())
                    .containsEntry("origin", plugin.origin())
                    .containsEntry("status", plugin.status().name())
                    .containsEntry("priority", new BigDecimal(plugin.priority()))
                    .containsEntry("details", plugin.details());
            assertThat(Json.list(json, "capabilities")).containsExactlyInAnyOrderElementsOf(
                    plugin.capabilities().stream().map(Enum::name).toList());
            assertThat(Json.list(json, "threadModes")).containsExactlyInAnyOrderElementsOf(
                    plugin.threadModes().stream().map(Enum::name).toList());
            assertConfiguration(Json.list(json, "configuration"), plugin.configuration());
        }
    }

    @Test
    void saysWhetherAndWhyAPluginCanBeUsed() {
        Map<String, Object> info = JsonParser.parseObject(conduit.run("info", "--json", "--set", "transports=gamma,alpha").out());

        assertThat(Json.plugin(info, "gamma")).containsEntry("available", true).containsEntry("reason", null)
                .containsEntry("preference", BigDecimal.ONE).containsEntry("unsupportedHere", Map.of("MEMORY", TestPlugin.GAMMA_NOT_HERE));
        assertThat(Json.plugin(info, "alpha")).containsEntry("unsupportedHere", Map.of());
        assertThat(Json.plugin(info, "alpha")).containsEntry("preference", BigDecimal.TWO);
        assertThat(Json.plugin(info, "delta")).as("left out, so not probed: whether it works is not known")
                .containsEntry("status", "EXCLUDED").containsEntry("available", null).containsEntry("unsupportedHere", null)
                .containsEntry("reason", "not named by transports=gamma,alpha (from the builder), so not probed; name it there to use it")
                .containsEntry("preference", null);
        Map<String, Object> all = JsonParser.parseObject(conduit.run("info", "--json").out());
        assertThat(Json.plugin(all, "beta")).containsEntry("status", "UNAVAILABLE").containsEntry("available", false)
                .containsEntry("reason", "no beta device: load the beta driver (modprobe beta)");
    }

    @Test
    void keepsTextThatNeedsEscapingIntact() {
        Map<String, Object> delta = Json.plugin(JsonParser.parseObject(conduit.run("info", "--json").out()), "delta");

        assertThat(delta).containsEntry("description", AWKWARD).containsEntry("details", Map.of("note", AWKWARD));
    }

    @Test
    void listsTheRuntimeKeysAndTheSelection() {
        Map<String, Object> info = JsonParser.parseObject(conduit.run("info", "--json", "--set", "transports=gamma,alpha").out());

        List<ConfigEntry> runtime;
        try (Conduit opened = conduit.builder().transports("gamma", "alpha").build()) {
            runtime = opened.configuration().stream().filter(e -> e.owner().equals("runtime")).toList();
        }
        assertConfiguration(Json.list(info, "configuration"), runtime);
        assertThat(Json.object(info, "selection")).containsEntry("transports", "gamma,alpha").containsEntry("source", "BUILDER")
                .containsEntry("selected", List.of("gamma", "alpha"));
    }

    /** A plugin whose keys are not read has them in unreadConfiguration, with what is set for them, and none in configuration. */
    @Test
    void listsTheKeysOfAPluginWhoseKeysAreNotReadApart() {
        CommandRunner loPlugins = CommandRunner.withPlugins(TestPlugin.lo(), TestPlugin.loDax());
        Map<String, Object> info = JsonParser.parseObject(loPlugins.run("info", "--json", "--set", "lo-dax.mode=fast").out());

        List<PluginInfo> expected;
        try (Conduit opened = loPlugins.builder().set("lo-dax.mode", "fast").build()) {
            expected = opened.plugins();
        }
        PluginInfo loDax = expected.stream().filter(p -> p.name().equals("lo-dax")).findFirst().orElseThrow();
        assertThat(loDax.unreadConfiguration()).extracting(ConfigEntry::key, ConfigEntry::value, ConfigEntry::source)
                .containsExactly(org.assertj.core.api.Assertions.tuple("lo-dax.mode", "fast", ConfigEntry.Source.BUILDER),
                        org.assertj.core.api.Assertions.tuple("lo-dax.path", null, ConfigEntry.Source.DEFAULT));
        Map<String, Object> json = Json.plugin(info, "lo-dax");
        assertThat(json).containsEntry("status", "REFUSED");
        assertConfiguration(Json.list(json, "configuration"), List.of());
        assertConfiguration(Json.list(json, "unreadConfiguration"), loDax.unreadConfiguration());
        assertConfiguration(Json.list(Json.plugin(info, "lo"), "unreadConfiguration"), List.of());
    }

    @Test
    void writesAnUnsetValueAsNull() {
        Map<String, Object> alpha = Json.plugin(JsonParser.parseObject(conduit.run("info", "--json").out()), "alpha");

        assertThat(Json.entry(Json.list(alpha, "configuration"), "alpha.label")).containsEntry("value", null)
                .containsEntry("source", "DEFAULT");
    }

    private static void assertConfiguration(List<Object> json, List<ConfigEntry> expected) {
        assertThat(json).hasSameSizeAs(expected);
        for (ConfigEntry entry : expected) {
            assertThat(Json.entry(json, entry.key()))
                    .containsEntry("value", entry.value())
                    .containsEntry("source", entry.source().name())
                    .containsEntry("owner", entry.owner())
                    .containsEntry("property", entry.property())
                    .containsEntry("environment", entry.environment())
                    .containsEntry("doc", entry.doc());
        }
    }
}
