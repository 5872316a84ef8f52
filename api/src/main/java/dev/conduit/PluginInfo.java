package dev.conduit;

import dev.conduit.spi.Capability;
import dev.conduit.spi.ThreadMode;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What discovery learned about one plugin, for {@code conduit info} and for applications that
 * want to explain a choice.
 *
 * @param name          the plugin's name
 * @param version       its version, or {@code "?"} when it could not be read
 * @param spiVersion    the SPI version it was compiled against, or {@code "?"}
 * @param description   one line on what it is
 * @param origin        where it was loaded from: module and jar, class path entry, or plugin directory layer
 * @param status        whether it can be used, and if not why not
 * @param reason        for every status but {@code SELECTED}: why, with the remedy (for {@code EXCLUDED}, the
 *                      {@code transports} setting that left it out)
 * @param capabilities  what it declares it can do
 * @param unsupportedHere declared capabilities its probe ruled out in this environment, each with why and the
 *                      remedy (memfd on a shared directory it cannot write: all but {@code IPC}, so it imports
 *                      only); the runtime never uses them here. Empty when it was not probed
 * @param threadModes   the thread modes it declares
 * @param priority      its default preference, higher first
 * @param details       what its probe found (devices, directories), in its order; empty when it was not probed
 * @param configuration its declared keys with their current values
 * @param unreadConfiguration the keys it declares that are not read here, because it is not used and they were never
 *                      declared to the configuration ({@code REFUSED}, {@code BROKEN}, {@code SHADOWED}, or
 *                      {@code EXCLUDED} while a key of it has the variable of a key of a plugin in use; {@code reason}
 *                      says which): each with what is set for it, as set and unchecked, and where, or its default,
 *                      none applying to anything. Empty when its keys are read ({@code configuration}) or not known
 *                      (its metadata could not be read)
 */
public record PluginInfo(String name, String version, String spiVersion, String description, String origin,
                         Status status, String reason, Set<Capability> capabilities, Map<Capability, String> unsupportedHere,
                         Set<ThreadMode> threadModes, int priority, Map<String, String> details, List<ConfigEntry> configuration,
                         List<ConfigEntry> unreadConfiguration) {

    public PluginInfo {
        capabilities = Set.copyOf(capabilities);
        var notHere = new java.util.EnumMap<Capability, String>(Capability.class);
        notHere.putAll(unsupportedHere);
        unsupportedHere = java.util.Collections.unmodifiableMap(notHere);
        threadModes = Set.copyOf(threadModes);
        details = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(details));
        configuration = List.copyOf(configuration);
        unreadConfiguration = List.copyOf(unreadConfiguration);
    }

    /** Before {@code unreadConfiguration}: a plugin whose keys are read, or not known. */
    public PluginInfo(String name, String version, String spiVersion, String description, String origin, Status status, String reason,
                      Set<Capability> capabilities, Map<Capability, String> unsupportedHere, Set<ThreadMode> threadModes, int priority,
                      Map<String, String> details, List<ConfigEntry> configuration) {
        this(name, version, spiVersion, description, origin, status, reason, capabilities, unsupportedHere, threadModes, priority,
                details, configuration, List.of());
    }

    /** Before {@code unsupportedHere}: a plugin that rules nothing out here. */
    public PluginInfo(String name, String version, String spiVersion, String description, String origin, Status status, String reason,
                      Set<Capability> capabilities, Set<ThreadMode> threadModes, int priority, Map<String, String> details,
                      List<ConfigEntry> configuration) {
        this(name, version, spiVersion, description, origin, status, reason, capabilities, Map.of(), threadModes, priority, details,
                configuration, List.of());
    }

    /**
     * One line for a log: name, version, status, capabilities, origin, and the reason or what was ruled out
     * here, but not the keys' docs, which the record's own form would print, several KB per plugin
     * ({@code conduit info} shows them).
     */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder(name).append(' ').append(version).append(' ').append(status)
                .append(' ').append(new java.util.TreeSet<>(capabilities)).append(" from ").append(origin);
        if (!unsupportedHere.isEmpty()) s.append(", not here: ").append(unsupportedHere.keySet());
        if (status != Status.SELECTED && reason != null) s.append(": ").append(reason);
        return s.toString();
    }

    /** Where a plugin stands after discovery, probing and selection. */
    public enum Status {
        /** Available and selected: the runtime uses it. */
        SELECTED,
        /**
         * Left out by {@code transports} ({@code CONDUIT_TRANSPORTS}): excluded ({@code ^name}) or not named.
         * It was not probed, so whether it would work here is not known. Leaving a plugin out is also the
         * remedy for one whose probe is slow, hangs or fails in native code, as {@code FI_PROVIDER=^verbs}
         * keeps libfabric from querying that provider.
         */
        EXCLUDED,
        /** Its probe said it cannot work here, threw, or did not finish in time. */
        UNAVAILABLE,
        /** Compiled against an incompatible SPI version, or its metadata is invalid. */
        REFUSED,
        /**
         * Another plugin of the same name and a higher version, or of the same version found first, is in its place;
         * if that one is refused or broken at the build, the best one it shadowed stands in for it instead.
         */
        SHADOWED,
        /**
         * It could not be instantiated (also a plugin directory entry whose jars cannot be loaded), its metadata could
         * not be read, or a check of its configuration threw what refuses no value ({@code checkConfig} anything but a
         * {@code ConfigException}, a key's check anything but an {@code IllegalArgumentException}): a fault of the
         * plugin, not of the values.
         */
        BROKEN
    }
}
