package dev.conduit;

import dev.conduit.PluginInfo.Status;
import dev.conduit.spi.Availability;
import dev.conduit.spi.ConfigException;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.conduit.testing.TestConduits.info;
import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Selection by {@code transports} ({@code CONDUIT_TRANSPORTS}), like {@code UCX_TLS}. */
class SelectionTest {

    /** Three available plugins, priorities a=10, b=100, c=50, and one unavailable plugin "down". */
    private static ConduitBuilder fourPlugins() {
        return isolated()
                .addPlugin(TestPlugin.named("a").priority(10))
                .addPlugin(TestPlugin.named("b").priority(100))
                .addPlugin(TestPlugin.named("c").priority(50))
                .addPlugin(TestPlugin.named("down").priority(1000).probe(x -> Availability.unavailable("no device")));
    }

    @Test
    void byDefaultEveryAvailablePluginIsSelectedByPriority() {
        try (Conduit conduit = fourPlugins().build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("b", "c", "a");
            assertThat(info(conduit, "down").status()).isEqualTo(Status.UNAVAILABLE);
        }
    }

    /** The lowest priority there is comes last: ordered by its negation, Integer.MIN_VALUE, its own negation, came first. */
    @Test
    void thePriorityIntegerMinValueComesLast() {
        try (Conduit conduit = isolated().addPlugin(TestPlugin.named("last-resort").priority(Integer.MIN_VALUE))
                .addPlugin(TestPlugin.named("normal").priority(0)).build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("normal", "last-resort");
        }
    }

    @Test
    void equalPrioritiesAreOrderedByName() {
        try (Conduit conduit = isolated().addPlugin(TestPlugin.named("zz")).addPlugin(TestPlugin.named("mm"))
                .addPlugin(TestPlugin.named("aa")).build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("aa", "mm", "zz");
        }
    }

    @Test
    void namedPluginsAreSelectedInTheGivenPreferenceOrder() {
        try (Conduit conduit = fourPlugins().transports("a", "c").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("a", "c");
            assertThat(conduit.plugins()).extracting(PluginInfo::name).startsWith("a", "c");
            PluginInfo b = info(conduit, "b");
            assertThat(b.status()).isEqualTo(Status.EXCLUDED);
            assertThat(b.reason()).isEqualTo("not named by transports=a,c (from the builder), so not probed; name it there to use it");
        }
    }

    @Test
    void aPluginNamedTwiceIsSelectedOnce() {
        try (Conduit conduit = fourPlugins().set("transports", "c, a ,c").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("c", "a");
        }
    }

    @Test
    void aNamedButUnavailablePluginIsSkippedNotAnError() {
        try (Conduit conduit = fourPlugins().transports("down", "a").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("a");
            assertThat(info(conduit, "down").status()).isEqualTo(Status.UNAVAILABLE);
            assertThat(info(conduit, "down").reason()).isEqualTo("no device");
        }
    }

    @Test
    void aCaretExcludesAPluginAndKeepsTheOthersByPriority() {
        try (Conduit conduit = fourPlugins().transports("^b").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("c", "a");
            assertThat(info(conduit, "b").status()).isEqualTo(Status.EXCLUDED);
            assertThat(info(conduit, "b").reason()).isEqualTo("excluded by transports=^b (from the builder), so not probed; take it out of that list to use it");
        }
        try (Conduit conduit = fourPlugins().transports("^b", "^a").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("c");
        }
        try (Conduit conduit = fourPlugins().set("transports", "^b,a").build()) {
            assertThat(info(conduit, "a").reason()).as("no ^a in the setting to remove")
                    .isEqualTo("excluded by transports=^b,a (from the builder), so not probed; take it out of that list to use it");
        }
    }

    /** A refused or shadowed copy found first used to speak for the name in errors, not the copy that was left out. */
    @Test
    void theCopyLeftOutSpeaksForItsNameNotARefusedOneFoundBeforeIt() {
        try (Conduit conduit = isolated()
                .addPlugin(TestPlugin.named("dup").spiVersion("0.9"))
                .addPlugin(TestPlugin.named("dup"))
                .addPlugin(TestPlugin.named("a"))
                .transports("^dup").build()) {
            assertThatThrownBy(() -> conduit.pool("dup")).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageContaining("it is EXCLUDED: excluded by transports=^dup");
        }
    }

    /**
     * Leaving a plugin out is the remedy for one whose probe hangs or fails in native code, so a plugin left
     * out is never probed; it used to be probed and listed as available.
     */
    @Test
    void aPluginLeftOutByTransportsIsNotProbed() {
        AtomicInteger probes = new AtomicInteger();
        java.util.function.Supplier<ConduitBuilder> withCountedProbe = () -> isolated()
                .addPlugin(TestPlugin.named("a"))
                .addPlugin(TestPlugin.named("counted").probe(x -> {
                    probes.incrementAndGet();
                    return Availability.available(Map.of("device", "found"));
                }));
        try (Conduit conduit = withCountedProbe.get().transports("^counted").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("a");
            PluginInfo counted = info(conduit, "counted");
            assertThat(counted.status()).isEqualTo(Status.EXCLUDED);
            assertThat(counted.details()).as("what a probe would have found").isEmpty();
        }
        try (Conduit conduit = withCountedProbe.get().transports("a").build()) {
            assertThat(info(conduit, "counted").status()).isEqualTo(Status.EXCLUDED);
        }
        assertThat(probes).as("probes of the plugin left out").hasValue(0);
        try (Conduit conduit = withCountedProbe.get().build()) {
            assertThat(info(conduit, "counted").status()).isEqualTo(Status.SELECTED);
            assertThat(info(conduit, "counted").details()).containsEntry("device", "found");
        }
        assertThat(probes).hasValue(1);
    }

    @Test
    void anUnknownNameFailsListingTheKnownNames() {
        assertThatThrownBy(() -> fourPlugins().transports("a", "memfd").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("transports=a,memfd (from the builder) names plugin 'memfd', which was not found")
                .hasMessageContaining("found: a, b, c, down");
        assertThatThrownBy(() -> fourPlugins().transports("^verbs").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("'verbs'");
        assertThatThrownBy(() -> isolated().transports("memfd").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("found: none");
    }

    @Test
    void mixingNamesToUseAndNamesToExcludeFails() {
        assertThatThrownBy(() -> fourPlugins().transports("a", "^b").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("mixes names to use and names to exclude")
                .hasMessageContaining("a,^b");
    }

    /** As UCX_TLS: the form the docs and the error message give, ^verbs,devdax, used to be refused as a mix. */
    @Test
    void aLeadingCaretExcludesEveryNameOfTheList() {
        try (Conduit conduit = fourPlugins().set("transports", "^a,c").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("b");
        }
        try (Conduit conduit = fourPlugins().set("transports", "^a,^c").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("b");
        }
    }

    /** Blanks after a ^ are dropped as those around an item are: '^ a' failed as naming plugin ' a', not found, until 2026-12-02. */
    @Test
    void blanksAfterACaretAreDropped() {
        try (Conduit conduit = fourPlugins().environment(Map.of("CONDUIT_TRANSPORTS", " ^ a, ^\tc ")).build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("b");
            assertThat(info(conduit, "a").reason()).startsWith("excluded by transports=^ a,^\tc (from environment variable CONDUIT_TRANSPORTS)");
        }
    }

    /** A refused copy found first used to stand for the name, and the usable copy was "not named by transports". */
    @Test
    void aNameWithARefusedAndAUsableCopySelectsTheUsableOne() {
        try (Conduit conduit = isolated()
                .addPlugin(TestPlugin.named("twice").spiVersion("0.9").description("old SPI"))
                .addPlugin(TestPlugin.named("twice").description("current"))
                .transports("twice").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("twice");
            assertThat(conduit.plugins().getFirst().description()).isEqualTo("current");
        }
    }

    @Test
    void namingABrokenPluginSaysItIsBrokenAndWhy() {
        TestPlugin broken = TestPlugin.named("fragile").brokenMetadata(new NoClassDefFoundError("libfragile/Native"));
        assertThatThrownBy(() -> isolated().addPlugin(broken).addPlugin(TestPlugin.named("a")).transports("fragile").build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("'fragile', which was found but is BROKEN")
                .hasMessageContaining("libfragile/Native");
    }

    /**
     * As {@link #namingABrokenPluginSaysItIsBrokenAndWhy}, for a plugin found but REFUSED (a jar built for
     * another SPI): it can be used on no host, whatever its probe would say, so naming it to use is the
     * same mistake, and a build that passed would leave the application with no plugin at all.
     */
    @Test
    void namingARefusedPluginToUseSaysItIsRefusedAndWhy() {
        assertThatThrownBy(() -> isolated().addPlugin(TestPlugin.named("old").spiVersion("0.9")).addPlugin(TestPlugin.named("a"))
                .transports("old").build().close())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("'old', which was found but is REFUSED")
                .hasMessageContaining("built for SPI 0.9");
    }

    /** How a user who cannot remove a broken plugin silences it; the build used to fail, as for naming it to use. */
    @Test
    void aBrokenPluginCanBeExcluded() {
        TestPlugin broken = TestPlugin.named("fragile").brokenMetadata(new NoClassDefFoundError("libfragile/Native"));
        try (Conduit conduit = isolated().addPlugin(broken).addPlugin(TestPlugin.named("a")).transports("^fragile").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("a");
            assertThat(info(conduit, "fragile").status()).as("still said as it is").isEqualTo(Status.BROKEN);
        }
    }

    @Test
    void selectionIsReadFromTheEnvironmentAndSystemProperties() {
        try (Conduit conduit = fourPlugins().environment(Map.of("CONDUIT_TRANSPORTS", "c,b")).build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("c", "b");
        }
        Properties p = new Properties();
        p.setProperty("conduit.transports", "^c");
        try (Conduit conduit = fourPlugins().environment(Map.of("CONDUIT_TRANSPORTS", "c,b")).systemProperties(p).build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("b", "a");
        }
    }

    /**
     * A bad selection names where it was set: it used to name CONDUIT_TRANSPORTS whatever set it,
     * sending a user who had typed {@code conduit perf -t tcp}, or set a system property, to a variable they never set.
     */
    @Test
    void aBadSelectionNamesWhereItWasSet() {
        Properties p = new Properties();
        p.setProperty("conduit.transports", "nope");
        assertThatThrownBy(() -> fourPlugins().systemProperties(p).build()).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("transports=nope (from system property conduit.transports) names plugin 'nope', which was not found")
                .hasMessageNotContaining("CONDUIT_TRANSPORTS");
        assertThatThrownBy(() -> fourPlugins().environment(Map.of("CONDUIT_TRANSPORTS", "a,^b")).build()).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("transports=a,^b (from environment variable CONDUIT_TRANSPORTS) mixes names to use and names to exclude");
        try (Conduit conduit = fourPlugins().environment(Map.of("CONDUIT_TRANSPORTS", "c")).build()) {
            assertThat(info(conduit, "a").reason())
                    .isEqualTo("not named by transports=c (from environment variable CONDUIT_TRANSPORTS), so not probed; name it there to use it");
        }
    }

    @Test
    void anEmptySelectionMeansEveryAvailablePlugin() {
        try (Conduit conduit = fourPlugins().environment(Map.of("CONDUIT_TRANSPORTS", "")).build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("b", "c", "a");
        }
    }

    @Test
    void aShadowedPluginsNameSelectsTheWinner() {
        try (Conduit conduit = isolated()
                .addPlugin(TestPlugin.named("dup").version("1.0").description("old"))
                .addPlugin(TestPlugin.named("dup").version("2.0").description("new"))
                .addPlugin(TestPlugin.named("other"))
                .transports("dup").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("dup");
            assertThat(conduit.plugins().getFirst().description()).isEqualTo("new");
        }
    }
}
