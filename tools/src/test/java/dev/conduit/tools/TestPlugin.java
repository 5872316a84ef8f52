package dev.conduit.tools;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** A plugin that only describes itself, added to Conduit in code so that tests control exactly what {@code info} sees. */
record TestPlugin(String name, Version version, String description, Availability availability, Set<Capability> capabilities,
                  Set<ThreadMode> threadModes, List<ConfigKey<?>> configKeys, int priority) implements ConduitPlugin {

    static final ConfigKey<Long> ALPHA_DEPTH = ConfigKey.integer("alpha.depth", 4, 1, 64, "How deep alpha's queues are.");
    static final ConfigKey<String> ALPHA_LABEL = ConfigKey.string("alpha.label", null, "A label for alpha's files.");
    static final ConfigKey<Boolean> BETA_FAST = ConfigKey.bool("beta.fast", true, "Whether beta takes the fast path.");

    static final String GAMMA_NOT_HERE = "the gamma directory is read-only: mount it read-write";

    /** Available, with probe details in a deliberate non-alphabetical order, and two keys. */
    static TestPlugin alpha() {
        Map<String, String> details = new LinkedHashMap<>();
        details.put("device", "/dev/alpha0");
        details.put("ports", "2");
        return new TestPlugin("alpha", Version.parse("1.2.0"), "Alpha test transport", Availability.available(details),
                EnumSet.of(Capability.MEMORY, Capability.IPC, Capability.AM), EnumSet.of(ThreadMode.SINGLE, ThreadMode.MULTI),
                List.of(ALPHA_DEPTH, ALPHA_LABEL), 150);
    }

    /** Unavailable, with the reason a person can act on. */
    static TestPlugin beta() {
        return new TestPlugin("beta", Version.parse("0.3.1"), "Beta test transport",
                Availability.unavailable("no beta device: load the beta driver (modprobe beta)"),
                EnumSet.of(Capability.AM, Capability.CROSS_HOST), EnumSet.of(ThreadMode.SERIALIZED), List.of(BETA_FAST), 50);
    }

    /** Available, below alpha in priority, with no keys and no details; its memory is ruled out here. */
    static TestPlugin gamma() {
        return new TestPlugin("gamma", Version.parse("2.0.0"), "", Availability.available().without(Capability.MEMORY, GAMMA_NOT_HERE),
                EnumSet.of(Capability.MEMORY), EnumSet.of(ThreadMode.SINGLE), List.of(), 120);
    }

    /** lo-dax's key whose variable, CONDUIT_LO_DAX_PATH, is also {@link #LO_DAX_PATH}'s of {@link #lo()}. */
    static final ConfigKey<String> LO_DAX_OWN_PATH = ConfigKey.string("lo-dax.path", null, "Where lo-dax's files go.");
    static final ConfigKey<String> LO_DAX_MODE = ConfigKey.string("lo-dax.mode", null, "How lo-dax runs.");
    static final ConfigKey<String> LO_DAX_PATH = ConfigKey.string("lo.dax.path", null, "Where lo's dax files go.");

    /** Available, with a key whose variable is also one of {@link #loDax()}'s: of the two, only one's keys are read. */
    static TestPlugin lo() {
        return new TestPlugin("lo", Version.parse("1.0.0"), "", Availability.available(), EnumSet.of(Capability.AM),
                EnumSet.of(ThreadMode.SINGLE), List.of(LO_DAX_PATH), 20);
    }

    /** Available, its keys not read beside {@link #lo()} (left out by transports, or refused). */
    static TestPlugin loDax() {
        return new TestPlugin("lo-dax", Version.parse("1.0.0"), "", Availability.available(), EnumSet.of(Capability.AM),
                EnumSet.of(ThreadMode.SINGLE), List.of(LO_DAX_OWN_PATH, LO_DAX_MODE), 10);
    }

    /** Available, with text that needs escaping in JSON: quotes, backslash, control characters, non-ASCII. */
    static TestPlugin delta(String awkwardText) {
        return new TestPlugin("delta", Version.parse("1.0.0"), awkwardText, Availability.available(Map.of("note", awkwardText)),
                EnumSet.of(Capability.AM), EnumSet.of(ThreadMode.MULTI), List.of(), 10);
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public Availability probe(PluginContext context) {
        return availability;
    }
}
