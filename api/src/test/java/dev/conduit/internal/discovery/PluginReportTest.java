package dev.conduit.internal.discovery;

import dev.conduit.internal.RuntimeSettings;
import dev.conduit.internal.config.ConfigResolver;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ResourceBundle;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the runtime says about plugins it does not use, and at which level: an installed plugin it
 * cannot use is a WARNING, until {@code transports} excludes it by name.
 */
class PluginReportTest {

    /** A logger that keeps what it is given, at every level. */
    private static final class Recorded implements System.Logger {
        final List<String> lines = new ArrayList<>();
        final List<Throwable> thrown = new ArrayList<>();

        @Override public String getName() { return "test"; }
        @Override public boolean isLoggable(Level level) { return true; }

        @Override
        public void log(Level level, Supplier<String> message) {
            lines.add(level + " " + message.get());
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String message, Throwable thrown) {
            lines.add(level + " " + message);
            if (thrown != null) this.thrown.add(thrown);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            lines.add(level + " " + format);
        }
    }

    private static List<String> report(List<String> transports, ConduitPlugin... plugins) {
        RuntimeSettings settings = new RuntimeSettings(Map.of(), Map.of(), new Properties(),
                PluginReportTest.class.getClassLoader(), false, List.of(plugins));
        List<PluginRecord> records = PluginRegistry.discover(settings, null, null);
        List<String> preference = PluginRegistry.leaveOut(records, transports, "the builder");
        PluginRegistry registry = PluginRegistry.probeAndSelect(records, name -> null, Duration.ofSeconds(5), "the default", preference);
        Recorded log = new Recorded();
        registry.report(log);
        return log.lines;
    }

    private static ConduitPlugin[] installed() {
        return new ConduitPlugin[] {
                TestPlugin.named("fragile").brokenMetadata(new NoClassDefFoundError("libfragile/Native")),
                TestPlugin.named("old").spiVersion("0.9"),
                TestPlugin.named("a")};
    }

    @Test
    void aBrokenOrRefusedPluginIsAWarningNamingHowToSilenceIt() {
        List<String> lines = report(List.of(), installed());
        assertThat(lines).filteredOn(l -> l.startsWith("WARNING")).hasSize(2);
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("WARNING plugin fragile BROKEN")
                .contains("libfragile/Native").contains("add ^fragile to an exclusion list in transports"));
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("WARNING plugin old REFUSED").contains("add ^old to an exclusion list"));
    }

    /**
     * Excluding a plugin by name is the remedy the warning names. A broken one could not be excluded
     * at all (the build failed: "names plugin 'fragile', which was found but is BROKEN"), and a refused
     * one was still warned about at every build.
     */
    @Test
    void excludingThemByNameTurnsTheWarningsIntoDebugLines() {
        List<String> lines = report(List.of("^fragile", "old"), installed());
        assertThat(lines).noneMatch(l -> l.startsWith("WARNING"));
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("DEBUG plugin fragile BROKEN").contains("excluded by transports"));
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("DEBUG plugin old REFUSED").contains("excluded by transports"));
    }

    /** A plugin whose check of its configuration threw is a fault for its author: the WARNING carries what it threw, and where. */
    @Test
    void aPluginBrokenByItsConfigurationCheckIsAWarningCarryingWhatItThrew() {
        NullPointerException bug = new NullPointerException("no table");
        RuntimeSettings settings = new RuntimeSettings(Map.of(), Map.of(), new Properties(), PluginReportTest.class.getClassLoader(),
                false, List.of(TestPlugin.named("ruled").configCheck(c -> {
                    throw bug;
                }), TestPlugin.named("a")));
        List<PluginRecord> records = PluginRegistry.discover(settings, null, null);
        ConfigResolver config = new ConfigResolver(Map.of(), Map.of(), new Properties());
        PluginRegistry.declareKeys(records, config);
        PluginRegistry.checkConfig(records, config);
        Recorded log = new Recorded();
        PluginRegistry.probeAndSelect(records, name -> null, Duration.ofSeconds(5), "the default", List.of()).report(log);
        assertThat(log.lines).anySatisfy(l -> assertThat(l).startsWith("WARNING plugin ruled BROKEN: its checkConfig threw "
                + "java.lang.NullPointerException (no table) before reading any config key: a fault of the plugin"));
        assertThat(log.thrown).containsExactly(bug);
    }

    /**
     * A plugin.path directory that is not there is listed as a BROKEN entry named by its path: no
     * plugin, so "exclude it: add ^/opt/plugns to an exclusion list in transports", a list of plugin
     * names, is no remedy to give; fixing plugin.path is, and the reason says so. Until 2026-12-07
     * every BROKEN entry's WARNING ended with that exclusion, ^?, for a bad service declaration, too.
     */
    @Test
    void aMissingPluginDirectoryIsNotToldToBeExcludedByTransportsAsAPlugin(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        String missing = dir.resolve("plugns").toString();
        RuntimeSettings settings = new RuntimeSettings(Map.of(), Map.of(), new Properties(), PluginReportTest.class.getClassLoader(),
                false, List.of(TestPlugin.named("a")));
        List<PluginRecord> records = PluginRegistry.discover(settings, missing, "the builder");
        Recorded log = new Recorded();
        PluginRegistry.probeAndSelect(records, name -> null, Duration.ofSeconds(5), "the default", List.of()).report(log);
        assertThat(log.lines).filteredOn(l -> l.startsWith("WARNING")).singleElement().asString()
                .contains("fix plugin.path (from the builder)").doesNotContain("^" + missing);
    }

    @Test
    void aListOfNamesToUseDoesNotSilenceThem() {
        List<String> lines = report(List.of("a"), installed());
        assertThat(lines).filteredOn(l -> l.startsWith("WARNING")).hasSize(2);
    }
}
