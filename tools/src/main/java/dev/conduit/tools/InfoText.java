package dev.conduit.tools;

import dev.conduit.ConfigEntry;
import dev.conduit.IpcCacheStats;
import dev.conduit.PluginInfo;
import dev.conduit.shm.OwnerLease;
import dev.conduit.spi.ConfigKey;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Renders an {@link InfoReport} as aligned plain text for people (no colors: output is often piped or pasted). */
final class InfoText {

    private static final int WRAP_WIDTH = 100;
    private static final int LABEL_WIDTH = 14;
    private static final int MAX_VALUE_COLUMN = 40;
    private static final String PLUGIN_INDENT = "  ";
    private static final String FIELD_INDENT = "    ";

    private final InfoReport report;
    private final PrintWriter out;

    private InfoText(InfoReport report, PrintWriter out) {
        this.report = report;
        this.out = out;
    }

    static void write(InfoReport report, PrintWriter out) {
        new InfoText(report, out).write();
    }

    private void write() {
        out.println("Conduit " + report.version() + ", SPI " + report.spiVersion());
        out.println();
        writePlugins();
        out.println();
        out.println("RUNTIME CONFIGURATION");
        writeConfiguration(report.runtimeConfiguration(), PLUGIN_INDENT);
        out.println();
        writeSelection();
        out.println();
        writeSharedFiles();
    }

    private static final int STATE_WIDTH = 10;

    /** Each memfd and posix directory: a summary line, then each owner with its lease's state and its files, then the rest. */
    private void writeSharedFiles() {
        out.println("SHARED FILES (leases of memfd and posix, and the files named after them)");
        if (report.sharedFiles().isEmpty()) {
            out.println(PLUGIN_INDENT + "none: neither memfd nor posix was found, or transports leaves both out");
        }
        for (SharedFiles.Listing listing : report.sharedFiles()) {
            SharedFiles.Place place = listing.place();
            out.println(PLUGIN_INDENT + place.plugin() + "  " + place.directory() + "  (" + place.setBy() + ")");
            if (listing.error() != null) {
                for (String line : wrap("cannot list: " + listing.error(), WRAP_WIDTH - FIELD_INDENT.length())) {
                    out.println(FIELD_INDENT + line);
                }
                continue;
            }
            if (listing.leasesAcrossKernels() != null) {
                String note = "leases here cannot tell a dead owner from one alive under another kernel: " + listing.leasesAcrossKernels()
                        + "; a free lease is listed UNJUDGED, and conduit reclaim refuses the directory without --trust-leases";
                for (String line : wrap(note, WRAP_WIDTH - FIELD_INDENT.length())) out.println(FIELD_INDENT + line);
            }
            OwnerLease.Survey survey = listing.survey();
            out.println(FIELD_INDENT + summary(survey));
            for (OwnerLease.Owner owner : survey.owners()) {
                String why = owner.why() == null ? "" : "  " + owner.why();
                if (owner.state() == OwnerLease.State.PENDING) why = "  " + created(listing.pendingAgeSeconds().get(owner.lease()));
                out.println(FIELD_INDENT + pad(owner.state().name(), STATE_WIDTH) + SharedFiles.shown(owner.lease()) + why);
                for (OwnerLease.FileEntry file : owner.files()) {
                    out.println(FIELD_INDENT + " ".repeat(STATE_WIDTH + 2) + file(file));
                }
            }
            for (OwnerLease.FileEntry file : survey.unowned()) out.println(FIELD_INDENT + pad("NO LEASE", STATE_WIDTH) + file(file));
            for (OwnerLease.FileEntry file : survey.probes()) out.println(FIELD_INDENT + pad("PROBE", STATE_WIDTH) + file(file));
        }
    }

    /** How many owners in each state, and the files and bytes of all, and of the dead (what a reclaim would free). */
    private static String summary(OwnerLease.Survey survey) {
        Map<OwnerLease.State, SharedFiles.Tally> byState = SharedFiles.byState(survey);
        long files = survey.unowned().size() + survey.probes().size();
        long bytes = SharedFiles.bytes(survey.unowned()) + SharedFiles.bytes(survey.probes());
        List<String> states = new ArrayList<>();
        for (Map.Entry<OwnerLease.State, SharedFiles.Tally> state : byState.entrySet()) {
            files += state.getValue().files();
            bytes += state.getValue().bytes();
            states.add(state.getValue().owners() + " " + state.getKey().name().toLowerCase(Locale.ROOT));
        }
        SharedFiles.Tally dead = byState.get(OwnerLease.State.DEAD);
        return survey.owners().size() + (survey.owners().size() == 1 ? " owner" : " owners") + (states.isEmpty() ? "" : " ("
                + String.join(", ", states) + ")") + "; " + files + (files == 1 ? " file, " : " files, ") + bytes + " bytes"
                + (dead != null ? ", of which dead owners' " + dead.bytes() + " (conduit reclaim removes them)" : "");
    }

    /** When a pending lease was created, in the largest whole unit up to days ("created 3 h ago"). */
    private static String created(Long seconds) {
        if (seconds == null || seconds < 0) return "created ? ago (its status could not be read)";
        long minutes = seconds / 60;
        long hours = minutes / 60;
        String age = seconds < 120 ? seconds + " s" : minutes < 120 ? minutes + " min" : hours < 48 ? hours + " h" : hours / 24 + " days";
        return "created " + age + " ago";
    }

    private static String file(OwnerLease.FileEntry file) {
        return SharedFiles.shown(file.name()) + "  " + (file.bytes() < 0 ? "? bytes" : file.bytes() + " bytes");
    }

    private void writePlugins() {
        out.println("PLUGINS: " + report.plugins().size() + " found, " + report.selected().size() + " selected");
        if (report.plugins().isEmpty()) {
            out.println(PLUGIN_INDENT + "none: no plugin module on the module path, no META-INF/services entry on the class path,");
            out.println(PLUGIN_INDENT + "and no plugin jar in plugin.path (CONDUIT_PLUGIN_PATH)");
        }
        for (PluginInfo plugin : report.plugins()) {
            out.println();
            writePlugin(plugin);
        }
    }

    private void writePlugin(PluginInfo plugin) {
        out.println(PLUGIN_INDENT + plugin.name() + " " + plugin.version() + "  [" + plugin.status() + "]");
        if (!plugin.description().isBlank()) {
            field("description", plugin.description());
        }
        field("status", status(plugin));
        field("origin", plugin.origin());
        field("spi version", plugin.spiVersion());
        field("capabilities", joined(plugin.capabilities().stream().sorted().toList()));
        if (!plugin.unsupportedHere().isEmpty()) field("not here", notHere(plugin.unsupportedHere()));
        field("thread modes", joined(plugin.threadModes().stream().sorted().toList()));
        field("priority", Integer.toString(plugin.priority()));
        field("probe", plugin.status() == PluginInfo.Status.EXCLUDED ? "not probed"
                : plugin.details().isEmpty() ? "no details" : aligned(plugin.details()));
        if (!plugin.configuration().isEmpty()) {
            out.println(FIELD_INDENT + "config");
            writeConfiguration(plugin.configuration(), FIELD_INDENT + "  ");
        } else if (!plugin.unreadConfiguration().isEmpty()) {
            // Listed as read, or as "no keys" (until 2026-12-02), they would hide that what is set for them does nothing.
            field("config", "not read (the status says why): what is set for its keys applies to nothing");
            writeConfiguration(plugin.unreadConfiguration(), FIELD_INDENT + "  ");
        } else {
            field("config", keysNeverRead(plugin) ? "not read (the status says why)" : "no keys");
        }
    }

    /** Whether the plugin's keys, if it has any, are never read: only a plugin in use or left out by transports has them read. */
    private static boolean keysNeverRead(PluginInfo plugin) {
        return switch (plugin.status()) {
            case REFUSED, BROKEN, SHADOWED -> true;
            case SELECTED, EXCLUDED, UNAVAILABLE -> false;
        };
    }

    private String status(PluginInfo plugin) {
        String reason = plugin.reason() == null ? "" : plugin.reason();
        return switch (plugin.status()) {
            case SELECTED -> "selected, preference " + report.preference(plugin) + " of " + report.selected().size();
            case EXCLUDED -> reason;
            default -> plugin.status().name().toLowerCase(Locale.ROOT) + ": " + reason;
        };
    }

    /** One key per line: key, value and source in aligned columns, then what it does and where else it can be set. */
    private void writeConfiguration(List<ConfigEntry> entries, String indent) {
        if (entries.isEmpty()) {
            out.println(indent + "no keys");
            return;
        }
        int keyWidth = entries.stream().mapToInt(e -> e.key().length()).max().orElse(0);
        int valueWidth = Math.min(MAX_VALUE_COLUMN, entries.stream().mapToInt(e -> value(e).length()).max().orElse(0));
        String detailIndent = indent + "    ";
        for (ConfigEntry entry : entries) {
            out.println(indent + pad(entry.key(), keyWidth) + "  " + pad(value(entry), valueWidth) + "  " + source(entry));
            for (String line : wrap(entry.doc(), WRAP_WIDTH - detailIndent.length())) {
                out.println(detailIndent + line);
            }
            out.println(detailIndent + "property " + entry.property() + ", environment " + entry.environment());
        }
    }

    private void writeSelection() {
        out.println("SELECTION");
        String transports = report.transports()
                .map(e -> e.value() == null || e.value().isBlank()
                        ? "not set: every available plugin, by priority"
                        : e.value() + "  (" + source(e) + ")")
                .orElse("not declared by this runtime");
        field(PLUGIN_INDENT, "transports", transports);
        field(PLUGIN_INDENT, "selected", report.selected().isEmpty() ? "none" : String.join(", ", report.selected()));
        IpcCacheStats cache = report.ipcCache();
        out.println("IPC CACHE (this process)");
        field(PLUGIN_INDENT, "bound", cache.maximumBytes() + " bytes kept mapped for no open region (ipc.cache.bytes)");
        field(PLUGIN_INDENT, "entries bound", cache.maximumEntries() + " chunks kept mapped for no open region (ipc.cache.entries)");
        field(PLUGIN_INDENT, "idle", ConfigKey.durationText(cache.idle()) + ": a chunk no region uses is unmapped one to two of these "
                + "after its last region closed (ipc.cache.idle)");
        field(PLUGIN_INDENT, "counters", "hits " + cache.hits() + ", misses " + cache.misses() + ", evictions " + cache.evictions()
                + ", mapped " + cache.mappedBytes() + " bytes in " + cache.entries() + " entries, " + cache.entriesInUse() + " in use");
        out.println("THREAD MODES (asked for -> in force)");
        report.threadPolicies().forEach((mode, policy) -> field(PLUGIN_INDENT, mode.name(),
                String.join(System.lineSeparator(), wrap(policy, WRAP_WIDTH - PLUGIN_INDENT.length() - LABEL_WIDTH))));
    }

    private void field(String label, String value) {
        field(FIELD_INDENT, label, value);
    }

    /** A labelled value; a value of several lines continues under its first line. */
    private void field(String indent, String label, String value) {
        String continuation = System.lineSeparator() + " ".repeat(indent.length() + LABEL_WIDTH);
        out.println(indent + pad(label, LABEL_WIDTH) + String.join(continuation, value.lines().toList()));
    }

    private static String aligned(Map<String, String> details) {
        int width = details.keySet().stream().mapToInt(String::length).max().orElse(0);
        List<String> lines = new ArrayList<>();
        details.forEach((k, v) -> lines.add(pad(k, width) + "  " + v));
        return String.join("\n", lines);
    }

    private static String value(ConfigEntry entry) {
        if (entry.value() == null) {
            return "(unset)";
        }
        return entry.value().isEmpty() ? "(empty)" : entry.value();
    }

    private static String source(ConfigEntry entry) {
        return entry.source().name().toLowerCase(Locale.ROOT).replace('_', ' ');
    }

    /** Capabilities ruled out here, those with one reason together: {@code MEMORY, AM: why}, wrapped. */
    private static String notHere(Map<dev.conduit.spi.Capability, String> unsupported) {
        Map<String, List<String>> byReason = new java.util.LinkedHashMap<>();
        unsupported.forEach((c, why) -> byReason.computeIfAbsent(why, w -> new ArrayList<>()).add(c.name()));
        List<String> lines = new ArrayList<>();
        byReason.forEach((why, capabilities) -> lines.addAll(wrap(String.join(", ", capabilities) + ": " + why,
                WRAP_WIDTH - FIELD_INDENT.length() - LABEL_WIDTH)));
        return String.join("\n", lines);
    }

    private static String joined(Collection<?> items) {
        return items.isEmpty() ? "none" : String.join(", ", items.stream().map(String::valueOf).toList());
    }

    private static String pad(String text, int width) {
        return text.length() >= width ? text : text + " ".repeat(width - text.length());
    }

    /** Greedy word wrap; a word longer than the width gets a line of its own. */
    static List<String> wrap(String text, int width) {
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String word : text.strip().split("\\s+")) {
            if (!line.isEmpty() && line.length() + 1 + word.length() > width) {
                lines.add(line.toString());
                line.setLength(0);
            }
            if (!line.isEmpty()) {
                line.append(' ');
            }
            line.append(word);
        }
        if (!line.isEmpty()) {
            lines.add(line.toString());
        }
        return lines;
    }
}
