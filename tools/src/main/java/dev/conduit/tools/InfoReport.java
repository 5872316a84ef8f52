package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.ConfigEntry;
import dev.conduit.IpcCacheStats;
import dev.conduit.PluginInfo;
import dev.conduit.linux.Libc;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ThreadMode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What {@code conduit info} shows, taken from an open {@link Conduit} once, so that the text and
 * the JSON form are two renderings of the same facts.
 *
 * @param version              this build's version
 * @param spiVersion           the SPI version the runtime implements
 * @param plugins              selected plugins in preference order, then the others in the runtime's order
 * @param runtimeConfiguration the keys the runtime itself declares
 * @param selected             names of the selected plugins, most preferred first
 * @param transports           the {@code transports} key that drove the selection, if the runtime declares it
 * @param threadPolicies       for each thread mode a worker may ask for, the policy in force, or why it would be refused
 * @param ipcCache             the IPC cache's counters in this process (its bound, and what this command imported: nothing)
 * @param sharedFiles          what memfd's and posix's directories hold, owner by owner, for each such plugin in use or available
 */
record InfoReport(String version, String spiVersion, List<PluginInfo> plugins, List<ConfigEntry> runtimeConfiguration,
                  List<String> selected, Optional<ConfigEntry> transports, Map<ThreadMode, String> threadPolicies,
                  IpcCacheStats ipcCache, List<SharedFiles.Listing> sharedFiles) {

    static final String RUNTIME_OWNER = "runtime";
    static final String TRANSPORTS_KEY = "transports";

    InfoReport {
        plugins = List.copyOf(plugins);
        runtimeConfiguration = List.copyOf(runtimeConfiguration);
        selected = List.copyOf(selected);
        threadPolicies = Collections.unmodifiableMap(new EnumMap<>(threadPolicies));
        sharedFiles = List.copyOf(sharedFiles);
    }

    /** The report of {@code conduit}, its shared directories read through the {@link Libc} {@code libc} gives. */
    static InfoReport of(Conduit conduit, String version, Supplier<Libc> libc) {
        List<String> selected = conduit.selectedPlugins();
        List<ConfigEntry> runtime = conduit.configuration().stream().filter(e -> e.owner().equals(RUNTIME_OWNER)).toList();
        Optional<ConfigEntry> transports = runtime.stream().filter(e -> e.key().equals(TRANSPORTS_KEY)).findFirst();
        List<PluginInfo> plugins = selectedFirst(conduit.plugins(), selected);
        List<SharedFiles.Listing> sharedFiles = SharedFiles.places(plugins, conduit.configuration()).stream()
                .map(place -> SharedFiles.survey(libc, place, false)).toList();
        return new InfoReport(version, ConduitPlugin.SPI_VERSION, plugins, runtime, selected, transports, threadPolicies(conduit),
                conduit.ipcCacheStats(), sharedFiles);
    }

    /** What a worker in each mode would get: the policy, or the refusal's message. */
    private static Map<ThreadMode, String> threadPolicies(Conduit conduit) {
        Map<ThreadMode, String> policies = new EnumMap<>(ThreadMode.class);
        for (ThreadMode mode : ThreadMode.values()) {
            try {
                policies.put(mode, conduit.threadPolicy(mode).name());
            } catch (ConduitException e) {
                policies.put(mode, "refused: " + e.getMessage());
            }
        }
        return policies;
    }

    /** The runtime promises this order already; sorting again keeps the output right if that ever changes. */
    private static List<PluginInfo> selectedFirst(List<PluginInfo> plugins, List<String> selected) {
        List<PluginInfo> ordered = new ArrayList<>(plugins);
        ordered.sort(Comparator.comparingInt(p -> {
            int preference = preference(p, selected);
            return preference == 0 ? Integer.MAX_VALUE : preference;
        }));
        return ordered;
    }

    /** 1 for the most preferred selected plugin, 2 for the next, and so on; 0 for a plugin that is not selected. */
    int preference(PluginInfo plugin) {
        return preference(plugin, selected);
    }

    private static int preference(PluginInfo plugin, List<String> selected) {
        return plugin.status() == PluginInfo.Status.SELECTED ? selected.indexOf(plugin.name()) + 1 : 0;
    }

    /** Whether the plugin can be used here; empty for one left out by {@code transports}, which was not probed. */
    static Optional<Boolean> isUsable(PluginInfo plugin) {
        return switch (plugin.status()) {
            case SELECTED -> Optional.of(true);
            case EXCLUDED -> Optional.empty();
            default -> Optional.of(false);
        };
    }
}
