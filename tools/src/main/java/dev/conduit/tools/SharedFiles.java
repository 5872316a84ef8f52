package dev.conduit.tools;

import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.ShmPlugins;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.spi.ConduitException;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Where memfd and posix keep their files, as this process's configuration names the directories,
 * and what is in them: the facts {@code conduit info} shows (SHARED FILES) and {@code conduit reclaim}
 * acts on. The judging of owners is {@link OwnerLease}'s, the code the plugins run.
 */
final class SharedFiles {

    private static final String SHARED_DIR = "shared.dir";
    private static final String POSIX_DIR = "posix.dir";

    private SharedFiles() {
    }

    /**
     * A file's name, or a text that quotes one, as the text output shows it: {@link SharedDirectory#shown}, the rule the
     * reclaim's WARNING follows too. The JSON output escapes them as JSON does. {@code conduit perf}'s lines show a
     * peer's words (its host, thread mode, transports, the reasons it gives) through this too, whole: a reason is up to
     * 2000 characters.
     */
    static String shown(String name) {
        return SharedDirectory.shown(name);
    }

    /**
     * One plugin's files in one directory.
     *
     * @param setBy the key that names the directory, with its variable, as errors name it
     */
    record Place(String plugin, Path directory, String setBy) {
        /** What every file of the plugin's owners starts with, workers' included ({@code conduit-posix-worker-...}). */
        String prefix() {
            return "conduit-" + plugin;
        }
    }

    /**
     * What {@link #survey} found in a place: the survey, or why the directory could not be listed.
     *
     * @param pendingAgeSeconds   for each {@link OwnerLease.State#PENDING} owner's lease, how long ago it was last modified
     *                            (its creation: a starting owner writes nothing into it), {@code -1} when that could not be read
     * @param leasesAcrossKernels why a free lease there may be a live owner's under another kernel
     *                            ({@link OwnerLease#leasesAcrossKernels}), its owners listed {@link OwnerLease.State#UNJUDGED};
     *                            {@code null} where the leases tell, or were trusted to ({@code --trust-leases})
     */
    record Listing(Place place, OwnerLease.Survey survey, String error, Map<String, Long> pendingAgeSeconds,
                   String leasesAcrossKernels) {
        /**
         * This listing without the files named in {@code names} and the owners whose lease is among them: what a
         * reclaim that removed them would leave ({@code conduit reclaim --dry-run}). A listing that failed stays as it is.
         */
        Listing without(Set<String> names) {
            if (survey == null) return this;
            List<OwnerLease.Owner> owners = survey.owners().stream().filter(owner -> !names.contains(owner.lease()))
                    .map(owner -> new OwnerLease.Owner(owner.id(), owner.lease(), owner.state(), owner.why(), without(owner.files(), names)))
                    .toList();
            return new Listing(place, new OwnerLease.Survey(owners, without(survey.unowned(), names), without(survey.probes(), names)),
                    null, pendingAgeSeconds, leasesAcrossKernels);
        }

        private static List<OwnerLease.FileEntry> without(List<OwnerLease.FileEntry> files, Set<String> names) {
            return files.stream().filter(file -> !names.contains(file.name())).toList();
        }
    }

    /**
     * The places of the memfd and posix plugins that discovery found and {@code transports} does not leave out,
     * in the order of {@code plugins}: the shared directory for both (their workers' leases, memfd's sockets), and
     * posix's chunk directory when {@code posix.dir} sets another (its providers' leases and chunks).
     */
    static List<Place> places(List<PluginInfo> plugins, List<ConfigEntry> configuration) {
        // posix.dir set to the shared directory itself names one place twice, by two keys: listed once, by the first.
        Map<List<Object>, Place> places = new LinkedHashMap<>();
        for (PluginInfo plugin : plugins) {
            if (!ShmPlugins.LEASE_PLUGINS.contains(plugin.name()) || plugin.status() == PluginInfo.Status.EXCLUDED) continue;
            for (String key : plugin.name().equals("posix") ? List.of(SHARED_DIR, POSIX_DIR) : List.of(SHARED_DIR)) {
                configuration.stream().filter(e -> e.key().equals(key) && e.value() != null && !e.value().isBlank()).findFirst()
                        .ifPresent(e -> {
                            Path directory = Path.of(e.value()).toAbsolutePath();
                            places.putIfAbsent(List.of(plugin.name(), directory),
                                    new Place(plugin.name(), directory, e.key() + " (" + e.environment() + ")"));
                        });
            }
        }
        return List.copyOf(places.values());
    }

    /**
     * Lists {@code place} through {@code libc} without changing anything in it ({@link OwnerLease#survey}). On a file system
     * other kernels may see too, an owner whose lease is free is {@link OwnerLease.State#UNJUDGED} unless
     * {@code trustLeases}: it may live under another kernel, whose lock does not reach this one ({@link Listing#leasesAcrossKernels}).
     */
    static Listing survey(Supplier<Libc> libc, Place place, boolean trustLeases) {
        try {
            return inDirectory(libc, place, (opened, directory) -> {
                OwnerLease.Survey survey = OwnerLease.survey(opened, directory, place.prefix());
                String acrossKernels = trustLeases ? null : OwnerLease.leasesAcrossKernels(directory);
                if (acrossKernels != null) survey = freeLeasesUnjudged(survey, directory.seenByOtherKernels());
                return new Listing(place, survey, null, pendingAges(directory, survey), acrossKernels);
            });
        } catch (ConduitException e) {
            return new Listing(place, null, e.getMessage(), Map.of(), null);
        }
    }

    /** {@code survey} with each {@link OwnerLease.State#DEAD} owner unjudged: on {@code fileSystem}, dead or alive elsewhere. */
    private static OwnerLease.Survey freeLeasesUnjudged(OwnerLease.Survey survey, String fileSystem) {
        String why = "its lease is free here, as a lease held under another kernel looks on " + fileSystem + ": dead, or alive "
                + "under another kernel (conduit reclaim --trust-leases takes it for dead)";
        List<OwnerLease.Owner> owners = survey.owners().stream().map(owner -> owner.state() != OwnerLease.State.DEAD ? owner
                : new OwnerLease.Owner(owner.id(), owner.lease(), OwnerLease.State.UNJUDGED, why, owner.files())).toList();
        return new OwnerLease.Survey(owners, survey.unowned(), survey.probes());
    }

    /**
     * The age of each pending lease in {@code survey}: a starting owner renames its pending lease into place three
     * system calls after creating it (OwnerLease.acquire), so one that is seconds old was left by an owner killed while
     * creating it, which a reclaim removes.
     */
    private static Map<String, Long> pendingAges(SharedDirectory directory, OwnerLease.Survey survey) {
        Map<String, Long> ages = new LinkedHashMap<>();
        long now = System.currentTimeMillis();
        for (OwnerLease.Owner owner : survey.owners()) {
            if (owner.state() != OwnerLease.State.PENDING) continue;
            long age;
            try {
                age = Math.max(0, now - directory.status(owner.lease()).modifiedMillis()) / 1000;
            } catch (ErrnoException e) {
                age = -1; // gone since the listing (renamed into place, or removed), or not to be read here
            }
            ages.put(owner.lease(), age);
        }
        return ages;
    }

    /** What {@link #inDirectory} runs with the directory open. */
    interface InDirectory<T> {
        T run(Libc libc, SharedDirectory directory);
    }

    /**
     * Runs {@code action} on {@code place}'s directory, opened as the plugins open it, with the {@link Libc} {@code libc}
     * gives ({@link ConduitCommand#libc}).
     *
     * @throws ConduitException when it cannot be opened (naming the path, the errno and the key), or system calls
     *                          cannot be made here
     */
    static <T> T inDirectory(Supplier<Libc> libc, Place place, InDirectory<T> action) {
        Libc calls = libc.get();
        try (SharedDirectory directory = SharedDirectory.open(calls, place.directory(), place.setBy())) {
            return action.run(calls, directory);
        }
    }

    /** The owners of one state in a survey, with how many files they have and the bytes of those. */
    record Tally(int owners, long files, long bytes) {
    }

    /**
     * The owners of {@code survey} by state, in {@link OwnerLease.State}'s order, a state that no owner has left out:
     * what {@code conduit info}'s summary line and {@code conduit reclaim}'s {@code left:} line count.
     */
    static Map<OwnerLease.State, Tally> byState(OwnerLease.Survey survey) {
        Map<OwnerLease.State, Tally> tallies = new java.util.EnumMap<>(OwnerLease.State.class);
        for (OwnerLease.Owner owner : survey.owners()) {
            tallies.merge(owner.state(), new Tally(1, owner.files().size(), bytes(owner.files())),
                    (a, b) -> new Tally(a.owners() + b.owners(), a.files() + b.files(), a.bytes() + b.bytes()));
        }
        return tallies;
    }

    /** The bytes of {@code files}, those whose size could not be read left out. */
    static long bytes(List<OwnerLease.FileEntry> files) {
        return files.stream().mapToLong(f -> Math.max(0, f.bytes())).sum();
    }
}
