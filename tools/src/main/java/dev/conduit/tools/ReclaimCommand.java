package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.shm.OwnerLease;
import dev.conduit.spi.ConduitException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code conduit reclaim}: removes the files of dead owners from memfd's and posix's directories, as
 * the next pool or worker opened there would ({@link OwnerLease#reclaimDead}), and says what it removed
 * and what it could not.
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
                        + "to do), then what is left. Exit code 1 when a file could not be removed, or a directory listed before "
                        + "or after the reclaim."})
final class ReclaimCommand implements Runnable {

    private static final String INDENT = "  ";

    @Mixin
    private ConduitOptions options;

    @ParentCommand
    private ConduitCommand conduit;

    @Spec
    private CommandSpec spec;

    @Override
    public void run() {
        List<SharedFiles.Place> places;
        try (Conduit opened = conduit.openConduit(options)) {
            places = SharedFiles.places(opened.plugins(), opened.configuration());
        }
        if (places.isEmpty()) {
            throw new ConduitException("nothing to reclaim: neither memfd nor posix was found, or transports leaves both out; "
                    + "run without transports (--set transports=) or name memfd and posix in it");
        }
        PrintWriter out = spec.commandLine().getOut();
        int[] notRemoved = new int[Kind.values().length];
        List<String> unlisted = new ArrayList<>();
        List<String> unknown = new ArrayList<>();
        for (SharedFiles.Place place : places) {
            out.println(place.plugin() + "  " + place.directory() + "  (" + place.setBy() + ")");
            Report report = new Report(out, place.directory());
            try {
                SharedFiles.inDirectory(place, (libc, directory) -> OwnerLease.reclaimDead(libc, directory, place.prefix(), report));
            } catch (ConduitException e) {
                out.println(INDENT + "cannot reclaim: " + e.getMessage());
                unlisted.add(place.plugin() + " in " + place.directory());
                out.flush();
                continue;
            }
            for (Kind kind : Kind.values()) notRemoved[kind.ordinal()] += report.notRemoved[kind.ordinal()];
            out.println(INDENT + report.summary());
            SharedFiles.Listing left = SharedFiles.survey(place);
            out.println(INDENT + left(left));
            if (left.error() != null) unknown.add(place.plugin() + " in " + place.directory());
            out.flush();
        }
        List<String> failures = new ArrayList<>();
        String files = Kind.counted(notRemoved);
        if (!files.isEmpty()) failures.add(files + " could not be removed");
        if (!unlisted.isEmpty()) failures.add("cannot reclaim in " + String.join(", ", unlisted));
        // The reclaim went through, but whether a dead owner's file is still there is not known: a script must not take it for done.
        if (!unknown.isEmpty()) failures.add("cannot tell what is left in " + String.join(", ", unknown));
        if (!failures.isEmpty()) throw new ConduitException(String.join("; ", failures) + " (above, with what to do)");
    }

    /** What a reclaim removes, or fails to: each is counted apart, so that no count says "files of dead owners" of a pending lease. */
    private enum Kind {
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

    /** What the directory holds once reclaimed: the owners left, by state, and the files no lease names. */
    private static String left(SharedFiles.Listing listing) {
        if (listing.error() != null) return "left: unknown: " + listing.error();
        List<String> parts = new ArrayList<>();
        SharedFiles.byState(listing.survey()).forEach((state, left) -> parts.add(left.owners() + " "
                + state.name().toLowerCase(java.util.Locale.ROOT) + (left.owners() == 1 ? " owner" : " owners") + " (" + left.files()
                + (left.files() == 1 ? " file, " : " files, ") + left.bytes() + " bytes)" + LEFT_BECAUSE.get(state)));
        List<OwnerLease.FileEntry> unowned = listing.survey().unowned();
        if (!unowned.isEmpty()) {
            parts.add(unowned.size() + (unowned.size() == 1 ? " file" : " files") + " that no lease names ("
                    + SharedFiles.bytes(unowned) + " bytes: no reclaim removes them; conduit info lists them, remove them by hand "
                    + "once no program of yours uses them)");
        }
        return "left: " + (parts.isEmpty() ? "nothing" : String.join("; ", parts));
    }

    /** Why a reclaim leaves an owner of each state, for the line that says what is left. */
    private static final java.util.Map<OwnerLease.State, String> LEFT_BECAUSE = java.util.Map.of(
            OwnerLease.State.LIVE, "",
            OwnerLease.State.PENDING, ": being created (a pending lease nobody holds is removed at the next reclaim)",
            OwnerLease.State.UNJUDGED, ": their leases do not open for this user (another user's: run as that user or root)",
            OwnerLease.State.DEAD, ": files above that could not be removed, or an owner that died or was judged since");

    /** Prints each file as the reclaim removes it or fails to, and counts them by kind. */
    private static final class Report implements OwnerLease.ReclaimListener {
        private final PrintWriter out;
        private final Path directory;
        private final java.util.Set<String> owners = new java.util.HashSet<>();
        private final int[] removed = new int[Kind.values().length];
        private final int[] notRemoved = new int[Kind.values().length];
        /** The bytes of the dead owners' files removed. */
        private long bytes;

        Report(PrintWriter out, Path directory) {
            this.out = out;
            this.directory = directory;
        }

        @Override
        public void removed(String owner, String name, long size) {
            Kind kind = Kind.of(owner, name);
            removed[kind.ordinal()]++;
            if (kind == Kind.DEAD_OWNERS_FILE) bytes += Math.max(0, size);
            out.println(INDENT + "removed      " + name + "  " + (size < 0 ? "?" : Long.toString(size)) + " bytes  (" + whose(owner, name)
                    + ")");
        }

        @Override
        public void notRemoved(String owner, String name, ErrnoException e) {
            Kind kind = Kind.of(owner, name);
            notRemoved[kind.ordinal()]++;
            out.println(INDENT + "not removed  " + name + "  (" + whose(owner, name) + "): " + e.errnoName() + " (" + e.getMessage()
                    + "); " + remedy(e) + "; " + (kind == Kind.DEAD_OWNERS_FILE ? "its lease stays, so that the next reclaim tries again"
                    : "the next reclaim tries again"));
        }

        /** "removed 2 files, 4096 bytes, of 1 dead owner; removed 1 pending lease nobody held; not removed: ...". */
        String summary() {
            int files = removed[Kind.DEAD_OWNERS_FILE.ordinal()];
            StringBuilder line = new StringBuilder("removed " + files + (files == 1 ? " file, " : " files, ") + bytes + " bytes, of "
                    + owners.size() + (owners.size() == 1 ? " dead owner" : " dead owners"));
            int[] others = removed.clone();
            others[Kind.DEAD_OWNERS_FILE.ordinal()] = 0;
            String removedOthers = Kind.counted(others);
            if (!removedOthers.isEmpty()) line.append("; removed ").append(removedOthers);
            String failed = Kind.counted(notRemoved);
            if (!failed.isEmpty()) line.append("; not removed: ").append(failed);
            return line.toString();
        }

        /** Whose file {@code name} is, counting a dead owner once. */
        private String whose(String owner, String name) {
            return switch (Kind.of(owner, name)) {
                case PROBE_FILE -> "a probe file left by a process killed while probing";
                // Owns nothing yet: an owner killed while creating its lease, or one starting, which starts over (OwnerLease.acquire).
                case PENDING_LEASE -> "a pending lease nobody held";
                case DEAD_OWNERS_FILE -> {
                    owners.add(owner);
                    yield "dead owner " + owner;
                }
            };
        }

        private String remedy(ErrnoException e) {
            return switch (e.errnoName()) {
                case "EROFS" -> directory + " is mounted read-only here: run conduit reclaim where it is mounted read-write";
                case "EACCES", "EPERM" -> "make " + directory + " writable for this user, or run conduit reclaim as the user that "
                        + "owns the file, or as root (in a sticky directory such as /dev/shm only a file's owner may remove it)";
                // No owner makes a directory: someone put one under the owner's name.
                case "EISDIR" -> "a directory has the name of a dead owner's file: remove it by hand (rm -r) once you know no "
                        + "program of yours made it";
                default -> Errno.remedy(e.errno(), "see the cause; the file is in " + directory);
            };
        }
    }
}
