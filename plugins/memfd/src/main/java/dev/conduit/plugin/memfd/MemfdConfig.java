package dev.conduit.plugin.memfd;

import dev.conduit.shm.HugePages;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The memfd plugin's configuration keys, and their values read into the forms the code uses.
 *
 * <p>Each side reads only its own keys: the provider {@link #ALLOWED_UIDS}, {@link #SERVER_TIMEOUT} and
 * {@link #HUGEPAGES} (a pool's, not the transport's), the importer {@link #CONNECT_TIMEOUT} and {@link #TRUSTED_UIDS}. Every
 * key's value is checked when the {@code Conduit} is built, the uids of both lists too.
 */
final class MemfdConfig {

    /** How errors name the runtime's key for the shared directory. */
    static final String SHARED_DIR_KEY = "shared.dir (CONDUIT_SHARED_DIR)";

    static final ConfigKey<List<String>> ALLOWED_UIDS = UserNamespace.uidListKey("memfd.allowed.uids",
            "Numeric user ids, besides the provider's own, whose processes may receive this provider's chunks "
                    + "(checked with SO_PEERCRED on every request). Empty: only the provider's own user. When set, the "
                    + "fd server's socket is made connectable by every user (0666 instead of 0600), so that the uid "
                    + "check and the capability token are what admit a peer.");

    static final ConfigKey<Duration> SERVER_TIMEOUT = ConfigKey.duration("memfd.server.timeout", Duration.ofSeconds(1),
            "How long a provider's fd server waits for a connected importer's request before dropping the connection. "
                    + "The server answers one connection at a time, so this bounds how long a client that connects and "
                    + "sends nothing can delay the others.");

    static final ConfigKey<Duration> CONNECT_TIMEOUT = ConfigKey.duration("memfd.connect.timeout", Duration.ofSeconds(2),
            "How long an import waits for the producer's fd server to accept the connection and answer. Raise it when "
                    + "producers serve many importers at once.");

    static final ConfigKey<List<String>> TRUSTED_UIDS = UserNamespace.uidListKey("memfd.trusted.uids",
            "Numeric user ids, besides this process's own, whose fd servers this process imports chunks from (as this "
                    + "process sees them, in its user namespace; checked with SO_PEERCRED before the handle's token is sent). "
                    + "Empty: only fd servers of this process's own user. List a producer's user when it runs as another one "
                    + "(and admits this one with memfd.allowed.uids).");

    static final ConfigKey<HugePages.Mode> HUGEPAGES = ConfigKey.enumeration("memfd.hugepages", HugePages.Mode.class, HugePages.Mode.NO,
            "Whether a pool's chunks are huge pages of the kernel's default size (Hugepagesize, 2 MiB on x86-64), as UCX's "
                    + "UCX_POSIX_HUGETLB_MODE: no (normal pages), try (huge pages where the pool reserved with vm.nr_hugepages "
                    + "has them, normal pages otherwise, said once at INFO), yes (huge pages or an error naming the errno and "
                    + "the remedy). With try or yes the pool's page size, and so its chunks and large regions, are multiples "
                    + "of the huge page size, and each chunk takes all its huge pages when it is allocated. Importers need "
                    + "nothing set. The transport's queues and rings keep normal pages.");

    static final List<ConfigKey<?>> KEYS = List.of(ALLOWED_UIDS, SERVER_TIMEOUT, HUGEPAGES, CONNECT_TIMEOUT, TRUSTED_UIDS);

    private MemfdConfig() {}

    /** The uids of {@link #ALLOWED_UIDS}, as the unsigned 32-bit values {@code SO_PEERCRED} reports. */
    static Set<Integer> allowedUids(Config config) {
        return Arrays.stream(UserNamespace.uids(config.get(ALLOWED_UIDS))).boxed().collect(Collectors.toUnmodifiableSet());
    }

    /** The uids of {@link #TRUSTED_UIDS}, as the unsigned 32-bit values {@code SO_PEERCRED} reports. */
    static int[] trustedUids(Config config) {
        return UserNamespace.uids(config.get(TRUSTED_UIDS));
    }

    /** {@link #SERVER_TIMEOUT} in nanoseconds. */
    static long serverTimeoutNanos(Config config) {
        return config.get(SERVER_TIMEOUT).toNanos();
    }

    /** {@link #CONNECT_TIMEOUT} in nanoseconds. */
    static long connectTimeoutNanos(Config config) {
        return config.get(CONNECT_TIMEOUT).toNanos();
    }
}
