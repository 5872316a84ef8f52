package dev.conduit.tools;

import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.spi.ConduitException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Where memfd and posix keep their files, as this process's configuration names the directories,
 * and what is in them: the facts {@code conduit info} shows (SHARED FILES) and {@code conduit reclaim}
 * acts on. The judging of owners is {@link OwnerLease}'s, the code the plugins run.
 */
final class SharedFiles {

    /** The plugins whose files are named after owner leases ({@code conduit-<plugin>-<owner>...}). */
    private static final List<String> LEASE_PLUGINS = List.of("memfd", "posix");

    private static final String SHARED_DIR = "shared.dir";
    private static final String POSIX_DIR = "posix.dir";

    private SharedFiles() {
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

    /** What {@link #survey} found in a place: the survey, or why the directory could not be listed. */
    record Listing(Place place, OwnerLease.Survey survey, String error) {
    }

    /**
     * The places of the memfd and posix plugins that discovery found and {@code transports} does not leave out,
     * in the order of {@code plugins}: the shared directory for both (their workers' leases, memfd's sockets), and
     * posix's chunk directory when {@code posix.dir} sets another (its providers' leases and chunks).
     */
    static List<Place> places(List<PluginInfo> plugins, List<ConfigEntry> configuration) {
        Set<Place> places = new LinkedHashSet<>();
        for (PluginInfo plugin : plugins) {
            if (!LEASE_PLUGINS.contains(plugin.name()) || plugin.status() == PluginInfo.Status.EXCLUDED) continue;
            for (String key : plugin.name().equals("posix") ? List.of(SHARED_DIR, POSIX_DIR) : List.of(SHARED_DIR)) {
                configuration.stream().filter(e -> e.key().equals(key) && e.value() != null && !e.value().isBlank()).findFirst()
                        .ifPresent(e -> places.add(new Place(plugin.name(), Path.of(e.value()).toAbsolutePath(),
                                e.key() + " (" + e.environment() + ")")));
            }
        }
        // posix.dir set to the shared directory itself names one place twice, by two keys: listed once, by the first.
        List<Place> distinct = new ArrayList<>();
        Set<String> seen = new java.util.HashSet<>();
        for (Place place : places) {
            if (seen.add(place.plugin() + "\0" + place.directory())) distinct.add(place);
        }
        return distinct;
    }

    /** Lists {@code place} without changing anything in it ({@link OwnerLease#survey}). */
    static Listing survey(Place place) {
        try {
            return inDirectory(place, (libc, directory) -> new Listing(place, OwnerLease.survey(libc, directory, place.prefix()), null));
        } catch (ConduitException e) {
            return new Listing(place, null, e.getMessage());
        }
    }

    /** What {@link #inDirectory} runs with the directory open. */
    interface InDirectory<T> {
        T run(Libc libc, SharedDirectory directory);
    }

    /**
     * Runs {@code action} on {@code place}'s directory, opened as the plugins open it.
     *
     * @throws ConduitException when it cannot be opened (naming the path, the errno and the key), or system calls
     *                          cannot be made here
     */
    static <T> T inDirectory(Place place, InDirectory<T> action) {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, place.directory(), place.setBy())) {
            return action.run(libc, directory);
        }
    }

    /** The bytes of {@code files}, those whose size could not be read left out. */
    static long bytes(List<OwnerLease.FileEntry> files) {
        return files.stream().mapToLong(f -> Math.max(0, f.bytes())).sum();
    }
}
