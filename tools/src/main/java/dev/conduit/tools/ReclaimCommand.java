package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.linux.ErrnoException;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.ConduitException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/**
 * {@code conduit reclaim}: removes the files of dead owners from memfd's and posix's directories, as
 * the next pool or worker opened there would ({@link OwnerLease#reclaimDead}), and says what it removed
 * and what it could not: as text, each file as it goes, or as one JSON document at the end ({@link ReclaimJson}).
 * With {@code --dry-run} it says what it would remove, judged by the same code ({@link OwnerLease#wouldReclaimDead}),
 * and removes nothing; its exit code says whether anything would be removed ({@link ConduitCommand#EXIT_WOULD_REMOVE}).
 */
@Command(name = "reclaim",
        mixinStandardHelpOptions = true,
        header = "Removes the files that dead processes left in the shared directory.",
        versionProvider = ToolVersion.class,
        description = {
                "Removes from the directories of memfd and posix (shared.dir, and posix.dir when set) the files of every owner "
                        + "whose lease nobody holds, then the lease, as the next pool or worker opened there would. Live owners, "
                        + "owners being created and other users' files are left alone, and so are files no lease names.",
                "Prints each file removed (with its dead owner and bytes), each it could not remove (with the errno and what "
                        + "to do), then what is left; with --json, one JSON document of the same. Exit code 1 when a file could not "
                        + "be removed, a directory listed before or after the reclaim, or there is nothing to reclaim in (neither "
                        + "memfd nor posix was found, or transports leaves both out).",
                "With --dry-run, prints what it would remove and leave, judged as a reclaim judges, and removes nothing: exit "
                        + "code 0 when nothing would be removed, 3 when something would.",
                "A directory on a file system other kernels may see too (NFS, SMB, CephFS, 9p, FUSE and virtiofs, ...) is refused "
                        + "without --trust-leases: a lease held under another kernel may look free there, and a live owner dead."})
final class ReclaimCommand implements Callable<Integer> {

    private static final String INDENT = "  ";

    @Option(names = "--json", description = "Writes one JSON document, once the reclaim is done: what was removed and what "
            + "could not be, by kind and with paths, and what is left, for scripts (cron, systemd). The exit code is the same.")
    private boolean json;

    @Option(names = "--dry-run", description = "Removes nothing: says what a reclaim would remove now, and what it would "
            + "leave, judging owners by their leases as a reclaim does. Exit code 0 when nothing would be removed, 3 when "
            + "something would (1 on a failure, as without it).")
    private boolean dryRun;

    @Option(names = "--trust-leases", description = "Reclaims in a directory on a file system other kernels may see too (NFS, "
            + "SMB, CephFS, 9p, FUSE and virtiofs, ...), where a lease held under another kernel may look free here and its live "
            + "owner dead: only once no process under another kernel uses the directory, or its locks reach every kernel that does. "
            + "Without it the reclaim refuses such a directory (exit code 1), saying why.")
    private boolean trustLeases;

    @Mixin
    private ConduitOptions options;

    @ParentCommand
    private ConduitCommand conduit;

    @Spec
    private CommandSpec spec;

    @Override
    public Integer call() {
        List<SharedFiles.Place> places;
        try (Conduit opened = conduit.openConduit(options)) {
            places = SharedFiles.places(opened.plugins(), opened.configuration());
        }
        if (places.isEmpty()) {
            throw new ConduitException("nothing to reclaim: neither memfd nor posix was found, or transports leaves both out; "
                    + "run without transports (--set transports=) or name memfd and posix in it");
        }
        PrintWriter out = spec.commandLine().getOut();
        // The text says each file as it goes; the document is written whole at the end, never a part of one.
        PrintWriter text = json ? null : out;
        List<Reclaimed> reclaimed = new ArrayList<>();
        for (SharedFiles.Place place : places) {
            if (text != null) text.println(place.plugin() + "  " + place.directory() + "  (" + place.setBy() + ")");
            Report report = new Report(text, place.directory(), dryRun);
            try {
                SharedFiles.inDirectory(conduit::libc, place, (libc, directory) -> {
                    String acrossKernels = trustLeases ? null : OwnerLease.leasesAcrossKernels(directory);
                    if (acrossKernels != null) {
                        throw new ConduitException(acrossKernels + ": run conduit reclaim --trust-leases once no process under "
                                + "another kernel uses the directory, or its locks reach every kernel that does");
                    }
                    return dryRun ? OwnerLease.wouldReclaimDead(libc, directory, place.prefix(), report)
                            : OwnerLease.reclaimDead(libc, directory, place.prefix(), report);
                });
            } catch (ConduitException e) {
                reclaimed.add(new Reclaimed(place, e.getMessage(), report.removed, report.notRemoved, null));
                if (text != null) {
                    text.println(INDENT + "cannot reclaim: " + e.getMessage());
                    text.flush();
                }
                continue;
            }
            // Reached only where the leases tell, or are trusted to (--trust-leases): what is left is judged as the reclaim judged.
            SharedFiles.Listing after = SharedFiles.survey(conduit::libc, place, true);
            if (dryRun) {
                // Nothing went: what a reclaim would leave is the directory as it is, less what the dry run listed.
                after = after.without(report.removed.stream().map(Removed::name).collect(Collectors.toSet()));
            }
            Reclaimed done = new Reclaimed(place, null, report.removed, report.notRemoved, after);
            reclaimed.add(done);
            if (text != null) {
                text.println(INDENT + done.summary(dryRun));
                text.println(INDENT + (dryRun ? "would leave: " : "left: ") + left(done.left()));
                text.flush();
            }
        }
        List<String> failures = failures(reclaimed);
        if (json) ReclaimJson.write(reclaimed, dryRun, failures, out);
        if (text != null && dryRun) text.println(dryRunEnd(reclaimed));
        out.flush();
        if (!failures.isEmpty()) {
            String where = json ? "the document says each" : "above";
            throw new ConduitException(String.join("; ", failures) + " (" + where + ", with what to do)");
        }
        boolean wouldRemove = reclaimed.stream().anyMatch(place -> !place.removed().isEmpty());
        return dryRun && wouldRemove ? ConduitCommand.EXIT_WOULD_REMOVE : ConduitCommand.EXIT_OK;
    }

    /**
     * The dry run's last line: what a reclaim without {@code --dry-run} does, said only of the places the dry run could
     * judge; a place it could not (refused on a file system other kernels may see, a directory it cannot list) the
     * reclaim cannot either, for the same reason, and being told it "removes what it then finds" sent the user to it.
     */
    private static String dryRunEnd(List<Reclaimed> reclaimed) {
        List<String> judged = reclaimed.stream().filter(place -> place.error() == null)
                .map(place -> place.place().plugin() + " in " + place.place().directory()).toList();
        String end = "dry run: nothing was removed; conduit reclaim without --dry-run ";
        if (judged.isEmpty()) return end + "cannot reclaim there either (above, with what to do)";
        return end + "removes what it then finds of dead owners" + (judged.size() < reclaimed.size() ? " in " + String.join(", ", judged)
                + " (where this dry run could not reclaim, above, it cannot either)" : "") + ", an owner that dies meanwhile included";
    }

    /** Why the reclaim of {@code reclaimed} exits with 1, each a clause of the one error line; empty when it exits with 0. */
    static List<String> failures(List<Reclaimed> reclaimed) {
        int[] notRemoved = new int[Kind.values().length];
        List<String> unlisted = new ArrayList<>();
        List<String> unknown = new ArrayList<>();
        for (Reclaimed place : reclaimed) {
            String where = place.place().plugin() + " in " + place.place().directory();
            if (place.error() != null) {
                unlisted.add(where);
                continue;
            }
            int[] counts = place.notRemovedCounts();
            for (Kind kind : Kind.values()) notRemoved[kind.ordinal()] += counts[kind.ordinal()];
            if (place.left().error() != null) unknown.add(where);
        }
        List<String> failures = new ArrayList<>();
        String files = Kind.counted(notRemoved);
        if (!files.isEmpty()) failures.add(files + " could not be removed");
        if (!unlisted.isEmpty()) failures.add("cannot reclaim in " + String.join(", ", unlisted));
        // The reclaim went through, but whether a dead owner's file is still there is not known: a script must not take it for done.
        if (!unknown.isEmpty()) failures.add("cannot tell what is left in " + String.join(", ", unknown));
        return failures;
    }

    /** What a reclaim removes, or fails to: each is counted apart, so that no count says "files of dead owners" of a pending lease. */
    enum Kind {
        DEAD_OWNERS_FILE("file of dead owners", "files of dead owners"),
        PENDING_LEASE("pending lease nobody held", "pending leases nobody held"),
        PROBE_FILE("probe file left by a killed probe", "probe files left by killed probes");

        private final String one;
        private final String many;

        Kind(String one, String many) {
            this.one = one;
            this.many = many;
        }

        static Kind of(String owner, String name) {
            if (owner == null) return PROBE_FILE;
            return OwnerLease.isPendingLease(name) ? PENDING_LEASE : DEAD_OWNERS_FILE;
        }

        /** How many of {@code files} are of each kind, by ordinal. */
        static int[] count(List<? extends ReclaimedFile> files) {
            int[] counts = new int[values().length];
            for (ReclaimedFile file : files) counts[file.kind().ordinal()]++;
            return counts;
        }

        /** "1 file of dead owners and 2 pending leases nobody held": the counts that are not 0, by kind; empty when all are. */
        static String counted(int[] counts) {
            List<String> parts = new ArrayList<>();
            for (Kind kind : values()) {
                int n = counts[kind.ordinal()];
                if (n > 0) parts.add(n + " " + (n == 1 ? kind.one : kind.many));
            }
            if (parts.size() < 2) return String.join("", parts);
            return String.join(", ", parts.subList(0, parts.size() - 1)) + " and " + parts.getLast();
        }
    }

    /** A file the reclaim met: its kind, its owner's id ({@code null} for a probe file, which no owner has) and its name. */
    sealed interface ReclaimedFile permits Removed, NotRemoved {
        Kind kind();

        String owner();

        String name();
    }

    /** A file the reclaim removed, with its size just before ({@code -1} when that could not be read). */
    record Removed(Kind kind, String owner, String name, long bytes) implements ReclaimedFile {
    }

    /** A file the reclaim could not remove: why, and what to do ({@code remedy}: what the text says after the errno). */
    record NotRemoved(Kind kind, String owner, String name, ErrnoException cause, String remedy) implements ReclaimedFile {
    }

    /**
     * What the reclaim of one place did.
     *
     * @param error why its directory could not be opened or listed for the reclaim, with what to do; {@code null} when it
     *              was reclaimed
     * @param left  what it holds after the reclaim, as {@code conduit info} lists it (for a dry run, what it would hold:
     *              {@link SharedFiles.Listing#without} what {@code removed} says would go); {@code null} when {@code error} is set
     */
    record Reclaimed(SharedFiles.Place place, String error, List<Removed> removed, List<NotRemoved> notRemoved,
                     SharedFiles.Listing left) {
        Reclaimed {
            removed = List.copyOf(removed);
            notRemoved = List.copyOf(notRemoved);
        }

        int[] removedCounts() {
            return Kind.count(removed);
        }

        int[] notRemovedCounts() {
            return Kind.count(notRemoved);
        }

        /**
         * The dead owners of which a file was removed, each once: those the summary's "removed N files, B bytes" are of,
         * as {@link #deadOwnersBytes} counts the bytes removed. An owner none of whose files could be removed is not one
         * ({@code notRemoved} has its files, and what is left its owner, as dead); until 2026-12-04 it was, and a reclaim
         * that removed nothing said "removed 0 files, 0 bytes, of 1 dead owner".
         */
        long deadOwners() {
            return removed.stream().filter(f -> f.kind() == Kind.DEAD_OWNERS_FILE).map(ReclaimedFile::owner).distinct().count();
        }

        /** The bytes of the dead owners' files removed, those whose size could not be read left out. */
        long deadOwnersBytes() {
            return removed.stream().filter(f -> f.kind() == Kind.DEAD_OWNERS_FILE).mapToLong(f -> Math.max(0, f.bytes())).sum();
        }

        /**
         * "removed 2 files, 4096 bytes, of 1 dead owner; removed 1 pending lease nobody held; not removed: ...", or for a
         * dry run "would remove 2 files, ...; would remove 1 pending lease nobody held".
         */
        String summary(boolean dryRun) {
            String verb = dryRun ? "would remove " : "removed ";
            int files = removedCounts()[Kind.DEAD_OWNERS_FILE.ordinal()];
            long owners = deadOwners();
            StringBuilder line = new StringBuilder(verb + files + (files == 1 ? " file, " : " files, ") + deadOwnersBytes()
                    + " bytes, of " + owners + (owners == 1 ? " dead owner" : " dead owners"));
            int[] others = removedCounts();
            others[Kind.DEAD_OWNERS_FILE.ordinal()] = 0;
            String removedOthers = Kind.counted(others);
            if (!removedOthers.isEmpty()) line.append("; ").append(verb).append(removedOthers);
            String failed = Kind.counted(notRemovedCounts());
            if (!failed.isEmpty()) line.append("; not removed: ").append(failed);
            return line.toString();
        }
    }

    /** What the directory holds once reclaimed: the owners left, by state, and the files no lease names; after "left: ". */
    private static String left(SharedFiles.Listing listing) {
        if (listing.error() != null) return "unknown: " + listing.error();
        List<String> parts = new ArrayList<>();
        SharedFiles.byState(listing.survey()).forEach((state, left) -> parts.add(left.owners() + " "
                + state.name().toLowerCase(java.util.Locale.ROOT) + (left.owners() == 1 ? " owner" : " owners") + " (" + left.files()
                + (left.files() == 1 ? " file, " : " files, ") + left.bytes() + " bytes)"
                + (state == OwnerLease.State.LIVE ? "" : ": " + leftBecause(state, UserNamespace.current()))));
        List<OwnerLease.FileEntry> unowned = listing.survey().unowned();
        if (!unowned.isEmpty()) {
            parts.add(unowned.size() + (unowned.size() == 1 ? " file" : " files") + " that no lease names ("
                    + SharedFiles.bytes(unowned) + " bytes: no reclaim removes them; conduit info lists them, remove them by hand "
                    + "once no program of yours uses them)");
        }
        return parts.isEmpty() ? "nothing" : String.join("; ", parts);
    }

    /**
     * What an unjudged owner is: until 2026-12-07 "their leases do not open for this user", which a lease of another user
     * that opens, left unjudged by a reclaim not run as root since that day, belied
     * ({@code SharedFilesCommandTest#aLeaseOfAnotherUserThatOpensIsLeftUnjudgedAndTheReclaimSaysItIsThatUsers}).
     */
    private static final String UNJUDGED_BECAUSE = "their leases are another user's (conduit info gives each one's why: it does not "
            + "open for this user, or it opens and another user owns it)";

    /**
     * Why a reclaim leaves the owners of {@code state}, for what is left; {@code null} for live ones, which need no why.
     * In a user namespace of its own (a rootless container's), root is root only over the users its map holds: another
     * user's lease, the host process's say, opens only from outside.
     */
    static String leftBecause(OwnerLease.State state, UserNamespace namespace) {
        return switch (state) {
            case LIVE -> null;
            case PENDING -> "being created (a pending lease nobody holds is removed at the next reclaim)";
            case UNJUDGED -> namespace.isNested()
                    ? UNJUDGED_BECAUSE + ": run the reclaim as that user, or as root outside this process's user namespace, on the "
                    + "host: this namespace's root opens only the files of the users its uid_map holds, and the lease of a user it "
                    + "does not map shows that user as the overflow uid, kernel.overflowuid"
                    : UNJUDGED_BECAUSE + ": run the reclaim as that user or as root";
            case DEAD -> "files that could not be removed (each said with its errno and what to do), or an owner that died or was "
                    + "judged since";
        };
    }

    /**
     * Keeps each file as the reclaim removes it or fails to, and prints it when there is text to print; for a dry run,
     * each file it would remove.
     */
    private static final class Report implements OwnerLease.ReclaimListener {
        /** Where each file is said as it goes; {@code null} for the JSON document, written at the end. */
        private final PrintWriter out;
        private final Path directory;
        private final boolean dryRun;
        private final List<Removed> removed = new ArrayList<>();
        private final List<NotRemoved> notRemoved = new ArrayList<>();

        Report(PrintWriter out, Path directory, boolean dryRun) {
            this.out = out;
            this.directory = directory;
            this.dryRun = dryRun;
        }

        @Override
        public void removed(String owner, String name, long size) {
            Removed file = new Removed(Kind.of(owner, name), owner, name, size);
            removed.add(file);
            if (out != null) {
                out.println(INDENT + (dryRun ? "would remove " : "removed      ") + SharedFiles.shown(name) + "  " + (size < 0 ? "?" : Long.toString(size))
                        + " bytes  (" + whose(file) + ")");
            }
        }

        @Override
        public void notRemoved(String owner, String name, ErrnoException e) {
            Kind kind = Kind.of(owner, name);
            NotRemoved file = new NotRemoved(kind, owner, name, e, OwnerLease.removalRemedy(directory, e) + "; "
                    + (kind == Kind.DEAD_OWNERS_FILE ? "its lease stays, so that the next reclaim tries again" : "the next reclaim tries again"));
            notRemoved.add(file);
            if (out != null) {
                out.println(INDENT + "not removed  " + SharedFiles.shown(name) + "  (" + whose(file) + "): " + e.errnoName() + " (" + SharedFiles.shown(e.getMessage()) + "); "
                        + file.remedy());
            }
        }

        /** Whose file it is. */
        private static String whose(ReclaimedFile file) {
            return switch (file.kind()) {
                case PROBE_FILE -> "a probe file left by a process killed while probing";
                // Owns nothing yet: an owner killed while creating its lease, or one starting, which starts over (OwnerLease.acquire).
                case PENDING_LEASE -> "a pending lease nobody held";
                case DEAD_OWNERS_FILE -> "dead owner " + file.owner();
            };
        }
    }
}
