package dev.conduit.spi;

/**
 * How a process refuses what another process wrote in another version of a format — a handle, an
 * address, a queue, a protocol message — so that every refusal, the runtime's and every plugin's,
 * says the same: both versions, which side runs the older Conduit, and what to do. Nothing
 * translates between versions of a format; a format is read only at its own version, and the
 * version is judged before anything else in the record (another version may lay it out otherwise).
 *
 * <p>A plugin whose payloads, addresses or wire messages carry a version refuses another with
 * {@code reader.invalid("version", FormatVersions.refusal("example payload", found, VERSION, "the producer"))}.
 * Since SPI 1.1.
 */
public final class FormatVersions {

    /** Where the user's guide explains the formats and a rolling upgrade. */
    public static final String GUIDE = "docs/runtime.md, \"Processes of different Conduit versions\"";

    private FormatVersions() {
    }

    /**
     * The refusal of {@code format} at version {@code found}, where this process reads only
     * {@code ours}, written by {@code writer} ("the peer", "the producer", "the process that made
     * it"): for example "posix export payload version 2, where this process's Conduit reads only
     * version 1: the producer runs a newer Conduit than this process; upgrade this process, or run
     * the producer with the older one (docs/runtime.md, ...)".
     */
    public static String refusal(String format, long found, long ours, String writer) {
        boolean newer = found > ours;
        return format + " version " + found + ", where this process's Conduit reads only version " + ours + ": " + writer + " runs "
                + (newer ? "a newer" : "an older") + " Conduit than this process; upgrade " + (newer ? "this process" : writer)
                + ", or run " + (newer ? writer : "this process") + " with the older one (" + GUIDE + ")";
    }
}
