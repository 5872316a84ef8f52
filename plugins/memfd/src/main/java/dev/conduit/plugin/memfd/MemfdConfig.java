package dev.conduit.plugin.memfd;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The memfd plugin's configuration keys, and their values read into the forms the code uses.
 *
 * <p>Each side reads only its own keys: the provider {@link #ALLOWED_UIDS} and
 * {@link #SERVER_TIMEOUT}, the importer {@link #CONNECT_TIMEOUT}. A malformed producer-side key
 * therefore never stops a process from importing.
 */
final class MemfdConfig {

    /** How errors name the runtime's key for the shared directory. */
    static final String SHARED_DIR_KEY = "shared.dir (CONDUIT_SHARED_DIR)";

    static final ConfigKey<List<String>> ALLOWED_UIDS = ConfigKey.list("memfd.allowed.uids", List.of(),
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

    static final List<ConfigKey<?>> KEYS = List.of(ALLOWED_UIDS, SERVER_TIMEOUT, CONNECT_TIMEOUT);

    /** {@code (uid_t) -1} means "no user" to the kernel, so it is not a uid anyone can be allowed as. */
    private static final long MAX_UID = 0xFFFF_FFFEL;

    private MemfdConfig() {}

    /**
     * The uids of {@link #ALLOWED_UIDS}, as the unsigned 32-bit values {@code SO_PEERCRED} reports.
     *
     * @throws ConfigException naming the key and the item that is not a uid
     */
    static Set<Integer> allowedUids(Config config) {
        Set<Integer> uids = new HashSet<>();
        for (String item : config.get(ALLOWED_UIDS)) {
            long uid;
            try {
                uid = Long.parseLong(item);
            } catch (NumberFormatException e) {
                uid = -1;
            }
            if (uid < 0 || uid > MAX_UID) {
                throw new ConfigException("bad user id '" + item + "' in config key " + ALLOWED_UIDS.propertyName()
                        + " (" + ALLOWED_UIDS.environmentName() + "): expected a comma-separated list of numeric user ids from 0 to "
                        + MAX_UID + ", e.g. 1000,1001");
            }
            uids.add((int) uid);
        }
        return Set.copyOf(uids);
    }

    /** A key as errors name it: {@code memfd.connect.timeout (CONDUIT_MEMFD_CONNECT_TIMEOUT)}. */
    static String describe(ConfigKey<?> key) {
        return key.name() + " (" + key.environmentName() + ")";
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
