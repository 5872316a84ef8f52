package dev.conduit.shm;

import dev.conduit.spi.Capability;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ThreadMode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/** What every plugin built on {@link ShmTransport} declares the same way. */
public final class ShmPlugins {

    /** Memory, its export, and the transport with RMA, atomics and wake-up. */
    public static final Set<Capability> CAPABILITIES = Collections.unmodifiableSet(EnumSet.of(
            Capability.MEMORY, Capability.IPC, Capability.AM, Capability.RMA, Capability.ATOMICS, Capability.WAKEUP));

    /**
     * Providers and importers are thread-safe, but a transport's endpoints keep per-connection
     * state without locks: {@code SERIALIZED} at most; the runtime's lock makes {@code MULTI}
     * workers safe.
     */
    public static final Set<ThreadMode> THREAD_MODES = Collections.unmodifiableSet(EnumSet.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED));

    /**
     * The plugins built on this module whose owners hold leases in the shared directory
     * ({@link OwnerLease}, files named {@code conduit-<plugin>-...}): every reclaim of dead owners'
     * files a transport runs covers each of them, for a process that used several (a worker over
     * memfd with a posix pool) leaves files of each when it dies, and a peer finds its death over one.
     */
    public static final List<String> LEASE_PLUGINS = List.of("memfd", "posix");

    private ShmPlugins() {
    }

    /**
     * The probe's {@code formats} detail ({@code conduit info}): the version of each format the
     * plugin exchanges with other processes, the transport's first, then the plugin's own
     * ({@code ownFormats}, such as "handle payload 1"). Processes connect and import only where
     * their versions are the same (docs/runtime.md, "Processes of different Conduit versions").
     */
    public static String formats(String ownFormats) {
        return "receive queue layout " + ReceiveQueue.VERSION + ", transport address " + ShmTransport.ADDRESS_VERSION + ", " + ownFormats;
    }

    /** The plugin's own keys followed by the transport's, under the plugin's name. */
    public static List<ConfigKey<?>> configKeys(String plugin, List<ConfigKey<?>> pluginKeys) {
        List<ConfigKey<?>> keys = new ArrayList<>(pluginKeys);
        keys.addAll(ShmTransportConfig.keys(plugin));
        return List.copyOf(keys);
    }
}
