package dev.conduit.internal.discovery;

import dev.conduit.PluginInfo;
import dev.conduit.PluginInfo.Status;
import dev.conduit.internal.config.ConfigResolver;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * One discovered plugin as the runtime tracks it: the instance (when there is one), the metadata
 * read once at discovery, and where it stands. Metadata is read once so that a plugin whose
 * answers change cannot confuse the runtime later.
 */
public final class PluginRecord {

    final ConduitPlugin plugin;
    final String name;
    final Version version;
    final String spiVersion;
    final String description;
    final String origin;
    final Set<Capability> capabilities;
    final Set<ThreadMode> threadModes;
    final int priority;
    /** Null while it is a candidate: validated, and not yet ruled out by shadowing, {@code transports} or its probe. */
    Status status;
    String reason;
    Map<String, String> details = Map.of();
    /** Declared capabilities (never others) its probe ruled out here, with why ({@code Availability.without}). */
    Map<Capability, String> unsupportedHere = Map.of();
    /** Whether {@code transports} excludes its name ({@code ^name}): a user who knows it is there and does not want it. */
    boolean excludedByName;
    /** What it threw when it was found BROKEN at the build (a check of its configuration), for the WARNING; else null. */
    Throwable failure;
    /** Whether its config keys were declared to the configuration, so read and checked at the build (declareKeys). */
    boolean keysDeclared;
    /** Of a SHADOWED one, the plugin of its name that shadows it; else null. */
    PluginRecord shadowedBy;
    /** Of a SHADOWED one, the EXCLUDED reason {@code transports} would give it if it stood in for its shadower; else null. */
    String leftOut;
    /** The config keys it declared, as read once at discovery. */
    List<ConfigKey<?>> configKeys = List.of();

    PluginRecord(ConduitPlugin plugin, String name, Version version, String spiVersion, String description, String origin,
                 Set<Capability> capabilities, Set<ThreadMode> threadModes, int priority, Status status, String reason) {
        this.plugin = plugin;
        this.name = name;
        this.version = version;
        this.spiVersion = spiVersion;
        this.description = description;
        this.origin = origin;
        this.capabilities = capabilities;
        this.threadModes = threadModes;
        this.priority = priority;
        this.status = status;
        this.reason = reason;
    }

    public ConduitPlugin plugin() {
        return plugin;
    }

    public String name() {
        return name;
    }

    public Set<Capability> capabilities() {
        return capabilities;
    }

    public Set<ThreadMode> threadModes() {
        return threadModes;
    }

    public int priority() {
        return priority;
    }

    public Status status() {
        return status;
    }

    public String reason() {
        return reason;
    }

    /** Declared capabilities its probe ruled out here, with why. */
    public Map<Capability, String> unsupportedHere() {
        return unsupportedHere;
    }

    /**
     * What the plugin's open {@code operation} ({@code openMemoryProvider()}, {@code ipcImporter()},
     * {@code openTransport()}) returned through {@code open}. The SPI's open operations return an
     * object or throw: a null used to come out later as a bare {@code NullPointerException} of the
     * runtime's, and a bare exception of the plugin's as it was, neither naming the plugin nor whose
     * fault it was. Both are refused so ({@link #failed} for what it threw).
     *
     * @throws ConduitException naming the plugin, the operation, whose fault it is and what to do meanwhile
     */
    public <T> T open(String operation, Supplier<T> open) {
        T opened;
        try {
            opened = open.get();
        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): not to leave the caller's cleanup
            throw failed(name, operation, e);
        }
        if (opened == null) throw returnedNull(name, operation, "an object", "PluginMetadataContract");
        return opened;
    }

    /**
     * What to throw for a plugin's operation that returned null where it returns {@code what} or
     * throws: the plugin's fault, which the TCK's {@code suite} shows, and what to do meanwhile.
     */
    public static ConduitException returnedNull(String plugin, String operation, String what, String suite) {
        return new ConduitException("plugin '" + plugin + "' returned null from " + operation + ", which returns " + what + " or throws: "
                + "that is the plugin's fault (the TCK's " + suite + " shows it); report it to the plugin's authors, and "
                + "meanwhile leave it out (transports=^" + plugin + ") or use another plugin");
    }

    /**
     * What to throw for an answer of a plugin's {@code operation} that breaks the SPI's word
     * ({@code how} says which): the plugin's fault, which the TCK's {@code suite} shows, and what
     * to do meanwhile.
     */
    public static ConduitException brokenAnswer(String plugin, String operation, long answer, String how, String suite) {
        return new ConduitException("plugin '" + plugin + "' answered " + answer + " from " + operation + " " + how + ". That is the "
                + "plugin's fault (the TCK's " + suite + " shows it): report it to the plugin's authors, and meanwhile leave it out "
                + "(transports=^" + plugin + ") or use another plugin");
    }

    /**
     * What to throw for {@code thrown}, which plugin {@code plugin}'s {@code operation} threw: a
     * {@link ConduitException} as it is (how the SPI's operations fail, naming the cause and the
     * remedy), any other exception wrapped in one that names the plugin, the operation and whose
     * fault it most likely is, {@code thrown} its cause. A plugin's bare
     * {@code IllegalStateException} or {@code NullPointerException} used to reach the application
     * as it was, from {@code Conduit.pool}, {@code Pool.allocate}, {@code Region.exportHandle},
     * {@code importRegion} or {@code newWorker}, whose callers catch {@code ConduitException},
     * naming neither the plugin nor that the application did nothing wrong; and, until 2026-12-07,
     * a checked one that a Kotlin or {@code @SneakyThrows} plugin threw undeclared passed as it was,
     * past a caller's clean-up that catches only unchecked ones.
     */
    public static RuntimeException failed(String plugin, String operation, Exception thrown) {
        if (thrown instanceof ConduitException conduitException) return conduitException;
        return new ConduitException("plugin '" + plugin + "' failed in " + operation + ": " + thrown + ". That is no ConduitException, "
                + "by which the SPI's operations fail naming the cause and what to do, so most likely the plugin's fault: report it to "
                + "the plugin's authors (this exception's cause is what it threw), and meanwhile leave it out (transports=^" + plugin
                + ") or use another plugin", thrown);
    }

    /** Whether it declares {@code capability} and its probe did not rule it out here. */
    public boolean offers(Capability capability) {
        return capabilities.contains(capability) && !unsupportedHere.containsKey(capability);
    }

    boolean isCandidate() {
        return status == null;
    }

    /** Its info, with its keys' entries from {@code config}: those in force if they were declared, else those it would read. */
    public PluginInfo toInfo(ConfigResolver config) {
        return new PluginInfo(name, version == null ? "?" : version.toString(), spiVersion == null ? "?" : spiVersion,
                description, origin, status, reason, capabilities, unsupportedHere, threadModes, priority, details,
                // Its keys, when declared: entries of its name otherwise are another's (a shadowing plugin's).
                keysDeclared ? config.entries(name) : List.of(), keysDeclared ? List.of() : config.unreadEntries(configKeys, name));
    }
}
