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
                        + "to do), then what is left. Exit code 1 when a file could not be removed or a directory listed."})
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
        int notRemoved = 0;
        List<String> unlisted = new ArrayList<>();
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
            notRemoved += report.notRemoved;
            out.println(INDENT + "removed " + report.files + (report.files == 1 ? " file, " : " files, ") + report.bytes + " bytes, of "
                    + report.owners.size() + (report.owners.size() == 1 ? " dead owner" : " dead owners")
                    + (report.notRemoved > 0 ? "; " + report.notRemoved + " not removed" : ""));
            out.println(INDENT + left(SharedFiles.survey(place)));
            out.flush();
        }
        if (notRemoved > 0 || !unlisted.isEmpty()) {
            List<String> failures = new ArrayList<>();
            if (notRemoved > 0) failures.add(notRemoved + (notRemoved == 1 ? " file" : " files") + " of dead owners could not be removed");
            if (!unlisted.isEmpty()) failures.add("cannot reclaim in " + String.join(", ", unlisted));
            throw new ConduitException(String.join("; ", failures) + " (above, with what to do)");
        }
    }

    /** What the directory holds once reclaimed: the owners left, by state, and the files no lease names. */
    private static String left(SharedFiles.Listing listing) {
        if (listing.error() != null) return "left: unknown: " + listing.error();
        List<String> parts = new ArrayList<>();
        for (OwnerLease.State state : OwnerLease.State.values()) {
            List<OwnerLease.Owner> owners = listing.survey().owners().stream().filter(o -> o.state() == state).toList();
            if (owners.isEmpty()) continue;
            long files = owners.stream().mapToLong(o -> o.files().size()).sum();
            long bytes = owners.stream().mapToLong(o -> SharedFiles.bytes(o.files())).sum();
            parts.add(owners.size() + " " + state.name().toLowerCase(java.util.Locale.ROOT) + (owners.size() == 1 ? " owner" : " owners")
                    + " (" + files + (files == 1 ? " file, " : " files, ") + bytes + " bytes)" + LEFT_BECAUSE.get(state));
        }
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

    /** Prints each file as the reclaim removes it or fails to, and counts them. */
    private static final class Report implements OwnerLease.ReclaimListener {
        private final PrintWriter out;
        private final Path directory;
        private final java.util.Set<String> owners = new java.util.HashSet<>();
        private int files;
        private long bytes;
        private int notRemoved;

        Report(PrintWriter out, Path directory) {
            this.out = out;
            this.directory = directory;
        }

        @Override
        public void removed(String owner, String name, long size) {
            files++;
            bytes += Math.max(0, size);
            out.println(INDENT + "removed      " + name + "  " + (size < 0 ? "?" : Long.toString(size)) + " bytes  (" + whose(owner, name)
                    + ")");
        }

        @Override
        public void notRemoved(String owner, String name, ErrnoException e) {
            notRemoved++;
            out.println(INDENT + "not removed  " + name + "  (" + whose(owner, name) + "): " + e.errnoName() + " (" + e.getMessage()
                    + "); " + remedy(e) + "; " + (owner == null || OwnerLease.isPendingLease(name) ? "the next reclaim tries again"
                    : "its lease stays, so that the next reclaim tries again"));
        }

        /** Whose file {@code name} is, counting a dead owner once. */
        private String whose(String owner, String name) {
            if (owner == null) return "a probe file left by a process killed while probing";
            // Owns nothing yet: an owner killed while creating its lease, or one starting, which starts over (OwnerLease.acquire).
            if (OwnerLease.isPendingLease(name)) return "a pending lease nobody held";
            owners.add(owner);
            return "dead owner " + owner;
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
