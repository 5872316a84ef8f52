package dev.conduit.tools;

import dev.conduit.shm.UserNamespace;

import java.io.PrintWriter;
import java.util.List;

/**
 * Renders what {@code conduit reclaim} did as one JSON document ({@code --json}): the same facts as its text, with
 * enum values as their constant names and an absent value as {@code null}. What is left of a place has the members
 * of a place in {@code conduit info}'s {@code sharedFiles}, written by the same code ({@link InfoJson#writeSurvey}).
 * The shape is described in {@code docs/tools.md}; scripts rely on it, so change it only by adding members. A dry run's
 * ({@code --dry-run}) has the same shape: {@code "dryRun": true}, and in {@code removed} the files it would remove, each
 * with {@code "action": "WOULD_REMOVE"}.
 */
final class ReclaimJson {

    private final JsonWriter json;
    private final boolean dryRun;

    private ReclaimJson(JsonWriter json, boolean dryRun) {
        this.json = json;
        this.dryRun = dryRun;
    }

    /**
     * @param dryRun   whether {@code reclaimed} says what a reclaim would remove, having removed nothing
     * @param failures why the command exits with 1, as its error line says it; empty when it exits with 0
     */
    static void write(List<ReclaimCommand.Reclaimed> reclaimed, boolean dryRun, List<String> failures, PrintWriter out) {
        JsonWriter json = new JsonWriter(out);
        new ReclaimJson(json, dryRun).write(reclaimed, failures);
        json.finish();
        out.println();
    }

    private void write(List<ReclaimCommand.Reclaimed> reclaimed, List<String> failures) {
        json.beginObject();
        json.member("version", ToolVersion.current());
        json.member("dryRun", dryRun);
        json.name("places").beginArray();
        reclaimed.forEach(this::writePlace);
        json.endArray();
        json.name("failures").beginArray();
        failures.forEach(json::value);
        json.endArray();
        json.endObject();
    }

    private void writePlace(ReclaimCommand.Reclaimed place) {
        json.beginObject();
        InfoJson.writePlace(json, place.place());
        json.member("error", place.error());
        json.name("removed").beginArray();
        for (ReclaimCommand.Removed file : place.removed()) {
            beginFile(file);
            InfoJson.writeBytes(json, file.bytes());
            json.member("action", dryRun ? "WOULD_REMOVE" : "REMOVED");
            json.endObject();
        }
        json.endArray();
        json.name("notRemoved").beginArray();
        for (ReclaimCommand.NotRemoved file : place.notRemoved()) {
            beginFile(file);
            json.member("errno", file.cause().errnoName());
            json.member("message", file.cause().getMessage());
            json.member("remedy", file.remedy());
            json.endObject();
        }
        json.endArray();
        json.name("removedCounts");
        writeCounts(place.removedCounts());
        json.name("notRemovedCounts");
        writeCounts(place.notRemovedCounts());
        json.member("deadOwners", place.deadOwners());
        json.member("deadOwnersBytes", place.deadOwnersBytes());
        json.name("left");
        if (place.left() == null) {
            json.nullValue(); // not reclaimed: what it holds was not looked at
        } else {
            writeLeft(place.left());
        }
        json.endObject();
    }

    private void beginFile(ReclaimCommand.ReclaimedFile file) {
        json.beginObject();
        json.member("name", file.name());
        json.member("kind", file.kind().name());
        json.member("owner", file.owner());
    }

    private void writeCounts(int[] counts) {
        json.beginObject();
        for (ReclaimCommand.Kind kind : ReclaimCommand.Kind.values()) json.member(kind.name(), counts[kind.ordinal()]);
        json.endObject();
    }

    private void writeLeft(SharedFiles.Listing left) {
        json.beginObject();
        json.member("error", left.error());
        json.name("byState").beginArray();
        if (left.survey() != null) {
            SharedFiles.byState(left.survey()).forEach((state, tally) -> {
                json.beginObject();
                json.member("state", state.name());
                json.member("owners", tally.owners());
                json.member("files", tally.files());
                json.member("bytes", tally.bytes());
                json.member("why", ReclaimCommand.leftBecause(state, UserNamespace.current()));
                json.endObject();
            });
        }
        json.endArray();
        InfoJson.writeSurvey(json, left);
        json.endObject();
    }
}
