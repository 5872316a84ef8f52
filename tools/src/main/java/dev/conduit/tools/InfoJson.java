package dev.conduit.tools;

import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;
import dev.conduit.shm.OwnerLease;

import java.io.PrintWriter;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Renders an {@link InfoReport} as one JSON document: the same facts as {@link InfoText}, with
 * enum values as their constant names and an unset value as {@code null}. The shape is described
 * in {@code docs/tools.md}; scripts rely on it, so change it only by adding members.
 */
final class InfoJson {

    private final JsonWriter json;

    private InfoJson(JsonWriter json) {
        this.json = json;
    }

    static void write(InfoReport report, PrintWriter out) {
        JsonWriter json = new JsonWriter(out);
        new InfoJson(json).write(report);
        json.finish();
        out.println();
    }

    private void write(InfoReport report) {
        json.beginObject();
        json.member("version", report.version());
        json.member("spiVersion", report.spiVersion());
        json.name("plugins").beginArray();
        for (PluginInfo plugin : report.plugins()) {
            writePlugin(plugin, report.preference(plugin));
        }
        json.endArray();
        json.name("configuration");
        writeConfiguration(report.runtimeConfiguration());
        json.name("selection").beginObject();
        json.member("transports", report.transports().map(ConfigEntry::value).orElse(null));
        json.member("source", report.transports().map(e -> e.source().name()).orElse(null));
        json.name("selected");
        writeStrings(report.selected());
        json.endObject();
        json.name("ipcCache").beginObject();
        json.member("maximumBytes", report.ipcCache().maximumBytes());
        json.member("maximumEntries", report.ipcCache().maximumEntries());
        json.member("idleMillis", report.ipcCache().idle().toMillis());
        json.member("hits", report.ipcCache().hits());
        json.member("misses", report.ipcCache().misses());
        json.member("evictions", report.ipcCache().evictions());
        json.member("mappedBytes", report.ipcCache().mappedBytes());
        json.member("entries", report.ipcCache().entries());
        json.member("entriesInUse", report.ipcCache().entriesInUse());
        json.endObject();
        json.name("threadPolicies").beginObject();
        report.threadPolicies().forEach((mode, policy) -> json.member(mode.name(), policy));
        json.endObject();
        json.name("sharedFiles").beginArray();
        report.sharedFiles().forEach(this::writeListing);
        json.endArray();
        json.endObject();
    }

    private void writeListing(SharedFiles.Listing listing) {
        json.beginObject();
        writePlace(json, listing.place());
        json.member("error", listing.error());
        json.member("leasesAcrossKernels", listing.leasesAcrossKernels());
        writeSurvey(listing);
        json.endObject();
    }

    /** The members {@code plugin}, {@code directory} and {@code setBy} of {@code place}, into the object {@code json} is writing. */
    static void writePlace(JsonWriter json, SharedFiles.Place place) {
        json.member("plugin", place.plugin());
        json.member("directory", place.directory().toString());
        json.member("setBy", place.setBy());
    }

    /** The member {@code bytes}: a file's size, {@code null} when it could not be read ({@code -1}). */
    static void writeBytes(JsonWriter json, long bytes) {
        json.name("bytes");
        if (bytes < 0) {
            json.nullValue();
        } else {
            json.value(bytes);
        }
    }

    /**
     * The members {@code owners}, {@code unowned} and {@code probes} of {@code listing}, into the object {@code json} is
     * writing: what {@code conduit info} lists of a place and {@code conduit reclaim --json} says is left in it.
     */
    static void writeSurvey(JsonWriter json, SharedFiles.Listing listing) {
        new InfoJson(json).writeSurvey(listing);
    }

    private void writeSurvey(SharedFiles.Listing listing) {
        OwnerLease.Survey survey = listing.survey();
        json.name("owners").beginArray();
        for (OwnerLease.Owner owner : survey == null ? List.<OwnerLease.Owner>of() : survey.owners()) {
            json.beginObject();
            json.member("owner", owner.id());
            json.member("lease", owner.lease());
            json.member("state", owner.state().name());
            json.member("why", owner.why());
            json.name("ageSeconds");
            Long age = listing.pendingAgeSeconds().get(owner.lease());
            if (age == null || age < 0) {
                json.nullValue();
            } else {
                json.value(age);
            }
            json.member("bytes", SharedFiles.bytes(owner.files()));
            json.name("files");
            writeFiles(owner.files());
            json.endObject();
        }
        json.endArray();
        json.name("unowned");
        writeFiles(survey == null ? List.of() : survey.unowned());
        json.name("probes");
        writeFiles(survey == null ? List.of() : survey.probes());
    }

    private void writeFiles(List<OwnerLease.FileEntry> files) {
        json.beginArray();
        for (OwnerLease.FileEntry file : files) {
            json.beginObject();
            json.member("name", file.name());
            writeBytes(json, file.bytes());
            json.endObject();
        }
        json.endArray();
    }

    private void writePlugin(PluginInfo plugin, int preference) {
        json.beginObject();
        json.member("name", plugin.name());
        json.member("version", plugin.version());
        json.member("spiVersion", plugin.spiVersion());
        json.member("description", plugin.description());
        json.member("origin", plugin.origin());
        json.member("status", plugin.status().name());
        json.name("available");
        InfoReport.isUsable(plugin).ifPresentOrElse(json::value, json::nullValue);
        json.member("reason", plugin.reason() == null || plugin.reason().isBlank() ? null : plugin.reason());
        json.name("preference");
        if (preference == 0) {
            json.nullValue();
        } else {
            json.value(preference);
        }
        json.name("capabilities");
        writeStrings(plugin.capabilities().stream().sorted().map(Enum::name).toList());
        json.name("unsupportedHere");
        if (plugin.status() == PluginInfo.Status.EXCLUDED) {
            json.nullValue(); // not probed: not known
        } else {
            Map<String, String> notHere = new java.util.LinkedHashMap<>();
            plugin.unsupportedHere().forEach((c, why) -> notHere.put(c.name(), why));
            writeMap(notHere);
        }
        json.name("threadModes");
        writeStrings(plugin.threadModes().stream().sorted().map(Enum::name).toList());
        json.member("priority", plugin.priority());
        json.name("details");
        writeMap(plugin.details());
        json.name("configuration");
        writeConfiguration(plugin.configuration());
        json.name("unreadConfiguration");
        writeConfiguration(plugin.unreadConfiguration());
        json.endObject();
    }

    private void writeConfiguration(List<ConfigEntry> entries) {
        json.beginArray();
        for (ConfigEntry entry : entries) {
            json.beginObject();
            json.member("key", entry.key());
            json.member("value", entry.value());
            json.member("source", entry.source().name());
            json.member("owner", entry.owner());
            json.member("property", entry.property());
            json.member("environment", entry.environment());
            json.member("doc", entry.doc());
            json.endObject();
        }
        json.endArray();
    }

    private void writeStrings(Collection<String> values) {
        json.beginArray();
        values.forEach(json::value);
        json.endArray();
    }

    private void writeMap(Map<String, String> values) {
        json.beginObject();
        values.forEach(json::member);
        json.endObject();
    }
}
