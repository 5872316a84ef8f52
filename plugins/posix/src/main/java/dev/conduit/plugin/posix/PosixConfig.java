package dev.conduit.plugin.posix;

import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;

import java.nio.file.Path;
import java.util.List;

/**
 * The posix plugin's configuration keys, and what this process makes of them: the directory that
 * holds chunk files, and whose files it may map.
 *
 * <p>Both are this process's own view. A handle names a chunk file only relative to the
 * directory, so a host and a container that mount one directory at different paths each set their
 * own {@code shared.dir} or {@code posix.dir}; and which file owners an importer trusts is never
 * the handle's word.
 */
final class PosixConfig {

    /** The runtime's key for the shared directory, named in errors: the plugin does not declare it. */
    static final String SHARED_DIR_KEY = "shared.dir (CONDUIT_SHARED_DIR)";

    static final ConfigKey<Path> DIR = ConfigKey.path("posix.dir", null,
            "Directory of the posix plugin's chunk files, if not the shared directory (shared.dir), e.g. a bind mount "
                    + "that a container sees elsewhere. Each process sets its own view of it; handles carry only names "
                    + "relative to it. A tmpfs (such as /dev/shm) keeps chunks in memory; a disk file system writes them back.");

    static final ConfigKey<List<String>> TRUSTED_UIDS = UserNamespace.uidListKey("posix.trusted.uids",
            "User ids, besides this process's own, whose chunk files the importer may map (as this process sees them, "
                    + "in its user namespace), e.g. 1000,1001. A peer that can write a file it shares can also truncate "
                    + "it while mapped, so list only users you trust.");

    static final List<ConfigKey<?>> KEYS = List.of(DIR, TRUSTED_UIDS);

    private final Path directory;
    private final boolean dedicatedDirectory;
    private final String directoryKeys;
    private final int[] trustedUids;

    private PosixConfig(Path directory, boolean dedicatedDirectory, String directoryKeys, int[] trustedUids) {
        this.directory = directory;
        this.dedicatedDirectory = dedicatedDirectory;
        this.directoryKeys = directoryKeys;
        this.trustedUids = trustedUids;
    }

    /**
     * Reads and validates the configuration.
     *
     * @throws ConfigException naming the key, the value and the expected form
     */
    static PosixConfig of(PluginContext context) {
        Path dedicated = context.config().get(DIR);
        // Resolved as the runtime resolves shared.dir: a message naming a relative path says nothing outside the working directory.
        if (dedicated != null) dedicated = dedicated.toAbsolutePath();
        Path directory = dedicated != null ? dedicated : context.sharedDirectory();
        String keys = dedicated != null ? DIR.nameAndVariable()
                : SHARED_DIR_KEY + " or " + DIR.nameAndVariable();
        return new PosixConfig(directory, dedicated != null, keys, UserNamespace.uids(context.config().get(TRUSTED_UIDS)));
    }

    /** The directory of chunk files as this process sees it, absolute: a relative {@code posix.dir} is the working directory's. */
    Path directory() {
        return directory;
    }

    /** The key that chose {@link #directory()}: {@code posix.dir} if set, else {@code shared.dir}. */
    String directorySetBy() {
        return dedicatedDirectory ? DIR.name() : "shared.dir";
    }

    /** The key(s) that set {@link #directory()}, for errors: the remedy names what to change. */
    String directoryKeys() {
        return directoryKeys;
    }

    /** Whether the importer may map a file owned by {@code uid}, given this process's real uid {@code self}. */
    boolean trusts(int uid, int self) {
        return uid == self || UserNamespace.lists(trustedUids, uid);
    }

    /** The trusted uids besides this process's own, as configured, for messages. */
    String trustedUidsText() {
        return UserNamespace.describeUids(trustedUids);
    }
}
