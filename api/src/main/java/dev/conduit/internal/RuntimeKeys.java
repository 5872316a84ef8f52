package dev.conduit.internal;

import dev.conduit.internal.memory.RuntimePool;
import dev.conduit.spi.ConfigKey;

import java.io.File;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** The configuration keys the runtime itself declares (plugins declare theirs). */
public final class RuntimeKeys {

    public static final ConfigKey<List<String>> TRANSPORTS = ConfigKey.list("transports", List.of(),
            "Plugins to use, most preferred first (e.g. memfd,posix), or ^name,... to use every available plugin but those. "
                    + "Empty (the default): every available plugin, by priority.");

    // Checked by the key, so that a directory no path can name (a NUL, which the builder can set) fails the build naming the key.
    public static final ConfigKey<String> PLUGIN_PATH = ConfigKey.string("plugin.path", null,
            "Directories of plugin jars, separated by '" + File.pathSeparator + "'. In each, every sub-directory is one plugin "
                    + "(its jars and their dependencies) and every jar at the top is a plugin on its own; each gets its own module layer.")
            .withCheck("directories separated by '" + File.pathSeparator + "', e.g. /opt/conduit/plugins", RuntimeKeys::pluginDirectories);

    public static final ConfigKey<Path> SHARED_DIR = ConfigKey.path("shared.dir", Path.of("/dev/shm"),
            "This process's view of the directory shared with peers, where plugins publish files and sockets. "
                    + "A container may mount it elsewhere; handles and addresses only carry paths relative to it.");

    public static final ConfigKey<Duration> PROBE_TIMEOUT = ConfigKey.duration("probe.timeout", Duration.ofSeconds(5),
            "How long a plugin's probe may take before the plugin is marked unavailable, unless the probes, or the JVM, "
                    + "still use processor time then: a slow probe is waited for while they do, up to 6 times this.");

    public static final ConfigKey<Boolean> THREAD_CONFINE = ConfigKey.bool("thread.confine", false,
            "Let a plugin that declares only SINGLE serve a SERIALIZED or MULTI worker by running every call to it on one "
                    + "runtime-owned thread (slower). Off: such a worker is refused.");

    public static final ConfigKey<Long> IPC_CACHE_BYTES = ConfigKey.bytes("ipc.cache.bytes", 1L << 30, 0,
            "How many bytes of imported chunks the IPC cache keeps mapped for no open region, so that importing them again "
                    + "makes no system call. Mappings in use are never unmapped; one opened again by a hit after it was unused "
                    + "still counts until the cache lets it go (it stays mapped while open).");

    public static final ConfigKey<Long> IPC_CACHE_ENTRIES = ConfigKey.integer("ipc.cache.entries", 4096, 0, Integer.MAX_VALUE,
            "How many imported chunks the IPC cache keeps mapped for no open region, as ipc.cache.bytes bounds their bytes: "
                    + "each is one of the process's vm.max_map_count mappings (65530 by default), which the JVM needs too, and "
                    + "small chunks (pool.chunk.size=64k) reach this bound long before the bytes one. 0: none kept, as "
                    + "ipc.cache.bytes=0. Mappings in use are never unmapped, and are not refused past the bound.");

    public static final ConfigKey<Duration> IPC_CACHE_IDLE = ConfigKey.duration("ipc.cache.idle", Duration.ofMinutes(1), Duration.ofMillis(1),
            "How long the IPC cache keeps an imported chunk mapped that no region used: a sweep once per interval unmaps "
                    + "those neither imported nor open since its last round, so chunks a producer freed, or a dead producer's, "
                    + "give their memory back between one and two intervals after their last region closed. A long one (1000h) "
                    + "leaves them to ipc.cache.bytes alone. At least 1ms: the sweep's thread waits this long between rounds.");

    public static final ConfigKey<Long> POOL_CHUNK_SIZE = ConfigKey.bytes("pool.chunk.size", 2L << 20, 64L << 10,
            RuntimePool.MAX_CHUNK_SIZE,
            "Size of the chunks pools take from a memory provider (rounded up to its page size). Allocations up to a quarter "
                    + "of it share chunks by size class; larger ones get a chunk of their own. At most 256g: 2^32 slots of the "
                    + "smallest class, 64 bytes.");

    public static final ConfigKey<Long> POOL_MAX_SIZE = ConfigKey.bytes("pool.max.size", 0, 0,
            "The most bytes of chunks each pool takes from its memory provider at once: an allocation that would need a chunk "
                    + "past it fails, naming this key. 0: no bound but the provider's own (its directory's free space, the memory "
                    + "available).");

    public static final ConfigKey<Duration> KEEPALIVE_INTERVAL = ConfigKey.duration("keepalive.interval", Duration.ofSeconds(1), Duration.ofMillis(1),
            "How often the runtime asks each endpoint's transport whether the peer still lives (its keepalive probe, "
                    + "TransportEndpoint.checkPeer), at a worker's next progress() after each interval; a peer found dead fails the "
                    + "endpoint. Transports that watch their peers themselves (memfd, posix: within 100 ms) answer too. At least 1ms: the "
                    + "conduit-keepalive thread waits this long between rounds.");

    /** Every runtime key (declared in this order; {@code conduit info} sorts them by name). */
    public static final List<ConfigKey<?>> ALL = List.of(TRANSPORTS, PLUGIN_PATH, SHARED_DIR, PROBE_TIMEOUT,
            THREAD_CONFINE, IPC_CACHE_BYTES, IPC_CACHE_ENTRIES, IPC_CACHE_IDLE, POOL_CHUNK_SIZE, POOL_MAX_SIZE, KEEPALIVE_INTERVAL);

    private RuntimeKeys() {
    }

    /**
     * The directories of a {@link #PLUGIN_PATH} value, blanks around each dropped, empty ones skipped.
     *
     * @throws IllegalArgumentException naming a directory that is no valid path, and why
     */
    public static List<Path> pluginDirectories(String pluginPath) {
        List<Path> directories = new ArrayList<>();
        for (String dir : pluginPath.split(File.pathSeparator)) {
            if (dir.isBlank()) continue;
            try {
                directories.add(Path.of(dir.trim()));
            } catch (InvalidPathException e) {
                throw new IllegalArgumentException("directory '" + dir.trim() + "' is no valid path (" + e.getReason() + ")");
            }
        }
        return directories;
    }
}
