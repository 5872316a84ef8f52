package dev.conduit.internal.config;

import dev.conduit.ConfigEntry.Source;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The resolver itself. Warnings are issued once per name per process, so every test here uses
 * names no other test uses.
 */
class ConfigResolverTest {

    private static Properties props(String... keyValues) {
        Properties p = new Properties();
        for (int i = 0; i < keyValues.length; i += 2) p.setProperty(keyValues[i], keyValues[i + 1]);
        return p;
    }

    @Test
    void anUnknownEnvironmentVariableGetsOneWarningNamingTheNearestKnownVariable() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of("CONDUIT_WARNA_TRANSPROTS", "memfd"), new Properties());
        r.declare(ConfigKey.list("warna.transports", List.of(), "doc"), "runtime");
        r.declare(ConfigKey.string("warna.other", null, "doc"), "runtime");

        assertThat(r.unknownSettingWarnings()).containsExactly(
                "unknown environment variable CONDUIT_WARNA_TRANSPROTS is ignored; did you mean CONDUIT_WARNA_TRANSPORTS?"
                        + " ('conduit info' lists every key)");
    }

    @Test
    void aNameIsWarnedAboutOncePerProcess() {
        Map<String, String> env = Map.of("CONDUIT_WARNB_SIZ", "1");
        ConfigResolver first = new ConfigResolver(Map.of(), env, new Properties());
        first.declare(ConfigKey.string("warnb.size", null, "doc"), "runtime");
        assertThat(first.unknownSettingWarnings()).hasSize(1);
        assertThat(first.unknownSettingWarnings()).as("same resolver again").isEmpty();

        ConfigResolver second = new ConfigResolver(Map.of(), env, new Properties());
        second.declare(ConfigKey.string("warnb.size", null, "doc"), "runtime");
        assertThat(second.unknownSettingWarnings()).as("another resolver in the same process").isEmpty();
    }

    @Test
    void anUnknownSystemPropertyIsWarnedAboutToo() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of(), props("conduit.warnc.shared.dri", "/x", "user.home", "/home/x"));
        r.declare(ConfigKey.string("warnc.shared.dir", null, "doc"), "runtime");
        assertThat(r.unknownSettingWarnings()).singleElement().asString()
                .contains("system property conduit.warnc.shared.dri")
                .contains("did you mean conduit.warnc.shared.dir?");
    }

    @Test
    void anUnknownNameFarFromEveryKeyIsWarnedAboutWithoutASuggestion() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of("CONDUIT_WARND_SOMETHING_ELSE_ENTIRELY", "1"), new Properties());
        r.declare(ConfigKey.string("warnd.x", null, "doc"), "runtime");
        assertThat(r.unknownSettingWarnings()).singleElement().asString()
                .contains("CONDUIT_WARND_SOMETHING_ELSE_ENTIRELY")
                .doesNotContain("did you mean");
    }

    @Test
    void knownAndForeignVariablesAreNotWarnedAbout() {
        ConfigResolver r = new ConfigResolver(Map.of(),
                Map.of("CONDUIT_WARNE_KEY", "v", "PATH", "/bin", "UCX_TLS", "shm", "CONDUITX_LOWER", "x"),
                props("conduit.warne.key", "v", "java.home", "/jdk"));
        r.declare(ConfigKey.string("warne.key", null, "doc"), "runtime");
        assertThat(r.unknownSettingWarnings()).isEmpty();
    }

    /**
     * A variable CONDUIT_ in lower or mixed case is read by nothing (variables are read in upper
     * case, as UCX's and libfabric's are) and is warned about, naming the variable to set: until
     * 2026-12-02 it was skipped as another program's, so the setting had no effect and no word said why.
     */
    @Test
    void aVariableInLowerCaseIsWarnedAboutNamingTheOneToSet() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of("conduit_warnl_timeout", "5s", "Conduit_Warnl_Dir", "/mnt",
                "CONDUIT_WARNL_DIR", "/srv", "conduit_warnl_timout", "5s", "conduit_test_warnl", "x", "conduit_java_opts", "-Xmx1g",
                "conduit_warnl_refused_port", "1"), new Properties());
        r.declare(ConfigKey.duration("warnl.timeout", java.time.Duration.ofSeconds(1), "doc"), "runtime");
        r.declare(ConfigKey.path("warnl.dir", null, "doc"), "runtime");
        r.leaveUnread("warnl-refused");
        assertThat(r.unknownSettingWarnings()).containsExactlyInAnyOrder(
                "environment variable conduit_warnl_timeout is ignored: Conduit reads its variables in upper case only; "
                        + "set CONDUIT_WARNL_TIMEOUT instead",
                "environment variable Conduit_Warnl_Dir is ignored: Conduit reads its variables in upper case only; "
                        + "CONDUIT_WARNL_DIR, which is set too, is read",
                "environment variable conduit_warnl_timout is ignored: Conduit reads its variables in upper case only, and "
                        + "CONDUIT_WARNL_TIMOUT is no known variable either; did you mean CONDUIT_WARNL_TIMEOUT? ('conduit info' lists "
                        + "every key)",
                "environment variable conduit_warnl_refused_port is ignored: Conduit reads its variables in upper case only; "
                        + "set CONDUIT_WARNL_REFUSED_PORT instead");
        assertThat(r.get(ConfigKey.duration("warnl.timeout", java.time.Duration.ofSeconds(1), "doc"))).as("not read")
                .isEqualTo(java.time.Duration.ofSeconds(1));
    }

    /**
     * As {@link #aVariableInLowerCaseIsWarnedAboutNamingTheOneToSet}, for a variable whose prefix is in
     * upper case and the rest not (CONDUIT_ and the key's name with its dots made '_', as a template
     * that upper-cases only the prefix writes it): it is in another case too, read by nothing, and its
     * warning must name the variable to set. Until 2026-12-07 it was sorted by its prefix alone among
     * the variables read, and called an unknown one, with no "did you mean".
     */
    @Test
    void aVariableWithOnlyItsPrefixInUpperCaseIsWarnedAboutNamingTheOneToSet() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of("CONDUIT_warnm_timeout", "5s"), new Properties());
        r.declare(ConfigKey.duration("warnm.timeout", java.time.Duration.ofSeconds(1), "doc"), "runtime");
        assertThat(r.unknownSettingWarnings()).singleElement().asString().contains("CONDUIT_WARNM_TIMEOUT");
    }

    /**
     * A system property conduit. in another case is read by nothing (properties are read as
     * conduit. and the key's lower-case name) and is warned about as a variable in another case
     * is, naming the property to set: until 2026-12-02 it was skipped as another library's, so the
     * setting had no effect and no word said why. One whose lower case is no key's (Conduit.other,
     * CONDUIT.LIB.MODE) may well be another library's: it is not warned about.
     */
    @Test
    void aPropertyInAnotherCaseIsWarnedAboutNamingTheOneToSet() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of(), props("Conduit.warnp.timeout", "5s", "CONDUIT.WARNP.DIR", "/mnt",
                "conduit.warnp.dir", "/srv", "Conduit.warnp.timout", "5s", "CONDUIT.LIB.MODE", "x", "Conduit.warnp-refused.port", "1"));
        r.declare(ConfigKey.duration("warnp.timeout", java.time.Duration.ofSeconds(1), "doc"), "runtime");
        r.declare(ConfigKey.path("warnp.dir", null, "doc"), "runtime");
        r.leaveUnread("warnp-refused");
        assertThat(r.unknownSettingWarnings()).containsExactlyInAnyOrder(
                "system property Conduit.warnp.timeout is ignored: Conduit reads its system properties in lower case only; "
                        + "set conduit.warnp.timeout instead",
                "system property CONDUIT.WARNP.DIR is ignored: Conduit reads its system properties in lower case only; "
                        + "conduit.warnp.dir, which is set too, is read",
                "system property Conduit.warnp-refused.port is ignored: Conduit reads its system properties in lower case only; "
                        + "set conduit.warnp-refused.port instead");
        assertThat(r.unknownSettingWarnings()).as("once").isEmpty();
        assertThat(r.get(ConfigKey.duration("warnp.timeout", java.time.Duration.ofSeconds(1), "doc"))).as("not read")
                .isEqualTo(java.time.Duration.ofSeconds(1));
    }

    /** A setting for a plugin found refused or broken is not a misspelt key: no warning, no failure; others still are. */
    @Test
    void settingsOfAPluginLeftUnreadAreNeitherWarnedAboutNorRefused() {
        ConfigResolver r = new ConfigResolver(Map.of("warnf-x.size", "8k"),
                Map.of("CONDUIT_WARNF_X_DEVICE", "mlx5_0", "CONDUIT_WARNF_Y_DEVICE", "mlx5_0"),
                props("conduit.warnf-x.port", "1", "conduit.warnf-y.port", "1"));
        r.declare(ConfigKey.string("warnf-y.other", null, "doc"), "warnf-y");
        r.leaveUnread("warnf-x");
        r.rejectUnknownBuilderKeys();
        List<String> warnings = r.unknownSettingWarnings();
        assertThat(warnings).hasSize(2);
        assertThat(String.join("\n", warnings)).contains("CONDUIT_WARNF_Y_DEVICE", "conduit.warnf-y.port")
                .doesNotContain("WARNF_X", "warnf-x");
    }

    /**
     * A refused plugin named after a runtime word ({@code pool}) must not hide misspellings of the
     * runtime's keys under that word: they silenced every {@code CONDUIT_POOL_*} variable,
     * {@code conduit.pool.*} property and {@code pool.*} builder key until 2026-12-02.
     */
    @Test
    void aPluginLeftUnreadUnderAWordOfADeclaredKeyDoesNotHideItsMisspellings() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of("CONDUIT_WARNI_CHUNK_SIZ", "4m"),
                props("conduit.warni.chunk.siz", "4m"));
        r.declare(ConfigKey.bytes("warni.chunk.size", 2L << 20, 0, "doc"), "runtime");
        r.leaveUnread("warni");
        assertThat(r.unknownSettingWarnings()).containsExactlyInAnyOrder(
                "unknown environment variable CONDUIT_WARNI_CHUNK_SIZ is ignored; did you mean CONDUIT_WARNI_CHUNK_SIZE?"
                        + " ('conduit info' lists every key)",
                "unknown system property conduit.warni.chunk.siz is ignored; did you mean conduit.warni.chunk.size?"
                        + " ('conduit info' lists every key)");

        ConfigResolver b = new ConfigResolver(Map.of("warni.chunk.siz", "4m"), Map.of(), new Properties());
        b.declare(ConfigKey.bytes("warni.chunk.size", 2L << 20, 0, "doc"), "runtime");
        b.leaveUnread("warni");
        assertThatThrownBy(b::rejectUnknownBuilderKeys).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("unknown config key 'warni.chunk.siz' set in the builder (did you mean 'warni.chunk.size'?)");
    }

    /** An unknown variable or property under no plugin found here says so; one under a plugin found does not. */
    @Test
    void anUnknownSettingForAPluginNotFoundHereSaysNoSuchPluginWasFound() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of("CONDUIT_WARNG_ABSENT_DEVICE", "x", "CONDUIT_WARNG_HERE_DEVIC", "x",
                        "CONDUIT_WARNG_HER_DEVICE", "x"),
                props("conduit.warng-absent.port", "1", "conduit.warng-here.devic", "1"));
        r.declare(ConfigKey.string("warng-here.device", null, "doc"), "warng-here");
        r.pluginFound("warng-here");
        List<String> warnings = r.unknownSettingWarnings();
        String found = " (found: warng-here), so nothing reads it: leave the setting out, or put that plugin on the module path or "
                + "the class path, or into plugin.path (CONDUIT_PLUGIN_PATH)";
        assertThat(warnings).filteredOn(w -> w.contains("ABSENT")).singleElement().asString()
                .startsWith("unknown environment variable CONDUIT_WARNG_ABSENT_DEVICE is ignored; no plugin found here has the name "
                        + "it starts with" + found);
        assertThat(warnings).filteredOn(w -> w.contains("warng-absent")).singleElement().asString()
                .startsWith("unknown system property conduit.warng-absent.port is ignored; no plugin called 'warng-absent' was found here"
                        + found);
        // A first word a letter from one found here is a misspelling, not an absent plugin (until 2026-12-02 'install that plugin').
        assertThat(warnings).filteredOn(w -> w.contains(" CONDUIT_WARNG_HERE_DEVIC ") || w.contains(" conduit.warng-here.devic ")
                        || w.contains(" CONDUIT_WARNG_HER_DEVICE ")).hasSize(3)
                .allSatisfy(w -> assertThat(w).doesNotContain("was found here", "no plugin found here"));
    }

    /**
     * In a run-time image made by jlink, a setting for a plugin not found says to link it in, as
     * every other error for a plugin not found does there: until 2026-12-06 it said "install that
     * plugin (module path, class path or plugin.path)" there too. integration-tests'
     * {@code RuntimeImageTest} sees it from an image.
     */
    @Test
    void inARunTimeImageASettingForAPluginNotFoundSaysToLinkItIn() {
        assertThat(ConfigResolver.noPluginHere("no plugin called 'verbs' was found here", List.of("devdax"), true))
                .startsWith("; no plugin called 'verbs' was found here (found: devdax), so nothing reads it: leave the setting out, or "
                        + "link that plugin into this run-time image (jlink --add-modules with the plugin's module")
                .doesNotContain("class path");
        assertThat(ConfigResolver.noPluginHere("no plugin called 'verbs' was found here", List.of(), false))
                .isEqualTo("; no plugin called 'verbs' was found here (found: none), so nothing reads it: leave the setting out, or "
                        + "put that plugin on the module path or the class path, or into plugin.path (CONDUIT_PLUGIN_PATH)");
    }

    /**
     * A runtime key misspelt by a letter, in the builder or a variable, is a misspelling: reported
     * earlier on 2026-12-02 as "no plugin called 'shard' was found here ... install that plugin"
     * (fixed by 08f2c86, which this checks with the runtime's own keys). A variable of a plugin not
     * installed says so, and offers no other key beside it: until 2026-12-02 CONDUIT_VERBS_DEVICE
     * added "did you mean CONDUIT_SHARED_DIR?", and verbs.device beside devdax "did you mean
     * 'devdax.device'?".
     */
    @Test
    void aRuntimeKeyMisspeltByALetterIsAMisspellingAndAnAbsentPluginsVariableIsNotOne() {
        ConfigResolver b = new ConfigResolver(Map.of("shard.dir", "/mnt"), Map.of(), new Properties());
        b.declareAll(dev.conduit.internal.RuntimeKeys.ALL, ConfigResolver.RUNTIME);
        b.pluginFound("devdax");
        assertThatThrownBy(b::rejectUnknownBuilderKeys).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("unknown config key 'shard.dir' set in the builder (did you mean 'shared.dir'?)")
                .hasMessageNotContaining("was found here");

        ConfigResolver e = new ConfigResolver(Map.of(), Map.of("CONDUIT_SHARD_DIR", "/mnt", "CONDUIT_VERBS_DEVICE", "mlx5_0"),
                new Properties());
        e.declareAll(dev.conduit.internal.RuntimeKeys.ALL, ConfigResolver.RUNTIME);
        e.pluginFound("devdax");
        List<String> warnings = e.unknownSettingWarnings();
        assertThat(warnings).filteredOn(w -> w.contains("SHARD")).singleElement().asString()
                .isEqualTo("unknown environment variable CONDUIT_SHARD_DIR is ignored; did you mean CONDUIT_SHARED_DIR?"
                        + " ('conduit info' lists every key)");
        assertThat(warnings).filteredOn(w -> w.contains("VERBS")).singleElement().asString()
                .isEqualTo("unknown environment variable CONDUIT_VERBS_DEVICE is ignored; no plugin found here has the name it starts "
                        + "with (found: devdax), so nothing reads it: leave the setting out, or put that plugin on the module path or "
                        + "the class path, or into plugin.path (CONDUIT_PLUGIN_PATH) ('conduit info' lists every key)");

        ConfigResolver v = new ConfigResolver(Map.of("verbs.device", "mlx5_0"), Map.of(), new Properties());
        v.declareAll(dev.conduit.internal.RuntimeKeys.ALL, ConfigResolver.RUNTIME);
        v.declare(ConfigKey.string("devdax.device", null, "doc"), "devdax");
        v.pluginFound("devdax");
        assertThatThrownBy(v::rejectUnknownBuilderKeys).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("unknown config key 'verbs.device' set in the builder; no plugin called 'verbs' was found here "
                        + "(found: devdax), so nothing reads it: leave the setting out, or put that plugin on the module path or "
                        + "the class path, or into plugin.path (CONDUIT_PLUGIN_PATH); known keys: ")
                .hasMessageNotContaining("did you mean");
    }

    @Test
    void aPluginsKeyWithoutThePluginsNameIsToldToStartWithIt() {
        // CONDUIT_HEARTBEAT_TIMEOUT, as the shm transport's table names the key, was said to be for a plugin 'heartbeat' to install.
        ConfigResolver e = new ConfigResolver(Map.of(), Map.of("CONDUIT_HEARTBEAT_TIMEOUT", "3s"),
                props("conduit.liveness.interval", "5ms"));
        e.declareAll(dev.conduit.internal.RuntimeKeys.ALL, ConfigResolver.RUNTIME);
        e.declare(ConfigKey.duration("memfd.heartbeat.timeout", Duration.ofSeconds(10), "doc"), "memfd");
        e.declare(ConfigKey.duration("posix.heartbeat.timeout", Duration.ofSeconds(10), "doc"), "posix");
        e.declare(ConfigKey.duration("posix.liveness.interval", Duration.ofMillis(20), "doc"), "posix");
        e.pluginFound("memfd");
        e.pluginFound("posix");
        List<String> warnings = e.unknownSettingWarnings();
        assertThat(warnings).filteredOn(w -> w.contains("HEARTBEAT")).singleElement().asString()
                .isEqualTo("unknown environment variable CONDUIT_HEARTBEAT_TIMEOUT is ignored; a plugin's key starts with the "
                        + "plugin's name: did you mean CONDUIT_MEMFD_HEARTBEAT_TIMEOUT or CONDUIT_POSIX_HEARTBEAT_TIMEOUT?"
                        + " ('conduit info' lists every key)");
        assertThat(warnings).filteredOn(w -> w.contains("liveness")).singleElement().asString()
                .isEqualTo("unknown system property conduit.liveness.interval is ignored; a plugin's key starts with the "
                        + "plugin's name: did you mean conduit.posix.liveness.interval? ('conduit info' lists every key)");

        ConfigResolver b = new ConfigResolver(Map.of("heartbeat.timeout", "3s"), Map.of(), new Properties());
        b.declareAll(dev.conduit.internal.RuntimeKeys.ALL, ConfigResolver.RUNTIME);
        b.declare(ConfigKey.duration("memfd.heartbeat.timeout", Duration.ofSeconds(10), "doc"), "memfd");
        b.pluginFound("memfd");
        assertThatThrownBy(b::rejectUnknownBuilderKeys).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("unknown config key 'heartbeat.timeout' set in the builder; a plugin's key starts with the "
                        + "plugin's name: did you mean memfd.heartbeat.timeout?; known keys: ")
                .hasMessageNotContaining("was found here");
    }

    @Test
    void sourcesArePrecedenceOrdered() {
        ConfigKey<String> k = ConfigKey.string("prec.key", "default", "doc");
        ConfigResolver all = new ConfigResolver(Map.of("prec.key", "builder"), Map.of("CONDUIT_PREC_KEY", "env"),
                props("conduit.prec.key", "property"));
        all.declare(k, "runtime");
        assertThat(all.get(k)).isEqualTo("builder");
        assertThat(all.entries()).singleElement().extracting(e -> e.source()).isEqualTo(Source.BUILDER);

        ConfigResolver noBuilder = new ConfigResolver(Map.of(), Map.of("CONDUIT_PREC_KEY", "env"), props("conduit.prec.key", "property"));
        assertThat(noBuilder.get(k)).isEqualTo("property");
        ConfigResolver envOnly = new ConfigResolver(Map.of(), Map.of("CONDUIT_PREC_KEY", "env"), new Properties());
        assertThat(envOnly.get(k)).isEqualTo("env");
        ConfigResolver none = new ConfigResolver(Map.of(), Map.of(), new Properties());
        assertThat(none.get(k)).isEqualTo("default");
        assertThat(none.get(ConfigKey.string("prec.unset", null, "doc"))).isNull();
    }

    @Test
    void theFirstDeclarationOfAKeyWins() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of(), new Properties());
        r.declare(ConfigKey.string("own.key", "a", "first"), "runtime");
        r.declare(ConfigKey.string("own.key", "b", "second"), "plugin");
        assertThat(r.entries()).singleElement().satisfies(e -> {
            assertThat(e.owner()).isEqualTo("runtime");
            assertThat(e.value()).isEqualTo("a");
        });
    }

    @Test
    void validateParsesEveryDeclaredKey() {
        ConfigResolver r = new ConfigResolver(Map.of(), Map.of("CONDUIT_VAL_N", "x"), new Properties());
        r.declare(ConfigKey.integer("val.n", 1, 0, 10, "doc"), "runtime");
        assertThatThrownBy(r::validate).isInstanceOf(ConfigException.class)
                .hasMessageContaining("environment variable CONDUIT_VAL_N");
    }

    @Test
    void unknownBuilderKeysAreRejectedWithTheKnownKeys() {
        ConfigResolver r = new ConfigResolver(Map.of("rej.kye", "1"), Map.of(), new Properties());
        r.declare(ConfigKey.string("rej.key", null, "doc"), "runtime");
        assertThatThrownBy(r::rejectUnknownBuilderKeys).isInstanceOf(ConfigException.class)
                .hasMessageContaining("did you mean 'rej.key'?")
                .hasMessageContaining("(did you mean 'rej.key'?); known keys: [rej.key]");
    }

    @Test
    void suggestionsPickTheSmallestEditDistanceAndGiveUpWhenNothingIsClose() {
        assertThat(Suggestions.distance("kitten", "sitting")).isEqualTo(3);
        assertThat(Suggestions.distance("", "abc")).isEqualTo(3);
        assertThat(Suggestions.distance("same", "same")).isZero();
        assertThat(Suggestions.nearest("CONDUIT_TRANSPROTS", List.of("CONDUIT_TRANSPORTS", "CONDUIT_SHARED_DIR")))
                .isEqualTo("CONDUIT_TRANSPORTS");
        assertThat(Suggestions.nearest("xyz", List.of("transports", "shared.dir"))).isNull();
        assertThat(Suggestions.nearest("anything", List.of())).isNull();
    }
}
