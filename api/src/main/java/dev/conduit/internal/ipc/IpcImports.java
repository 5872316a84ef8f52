package dev.conduit.internal.ipc;

import dev.conduit.ImportedRegion;
import dev.conduit.PluginInfo.Status;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.discovery.PluginRegistry;
import dev.conduit.internal.install.PluginInstall;
import dev.conduit.internal.threading.PlatformHandOff;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.RemoteMemory;
import dev.conduit.spi.RemoteRegion;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Consumer-only import: validates a handle, routes it by plugin name to that plugin's stateless
 * importer and maps it through the {@link IpcCache}. No provider, pool or device parameter is
 * involved; the importer sees only this process's configuration.
 */
public final class IpcImports implements RemoteMemory {

    private final PluginRegistry registry;
    private final Function<String, PluginContext> contexts;
    private final IpcCache cache;
    private final Map<String, IpcImporter> importers = new ConcurrentHashMap<>();

    public IpcImports(PluginRegistry registry, Function<String, PluginContext> contexts, IpcCache cache) {
        this.registry = registry;
        this.contexts = contexts;
        this.cache = cache;
    }

    /** {@code reuse}: a closed region to reopen for this import, or {@code null} ({@link dev.conduit.Conduit#importRegion(byte[], ImportedRegion)}). */
    public ImportedRegion importRegion(byte[] bytes, ImportedRegion reuse) {
        IpcCache.Lease claimed = cache.claimForReopen(reuse);
        try {
            IpcCache.Lease hit = cache.tryHit(bytes, claimed);
            if (hit != null) return hit;
            IpcHandle handle = IpcHandle.decode(bytes);
            IpcImporter importer = importer(handle.plugin());
            return cache.open(handle, h -> map(importer, h), claimed);
        } catch (RuntimeException | Error e) {
            if (claimed != null) claimed.abandonReopen();
            throw e;
        }
    }

    /** For transports' RMA: the same path, plus handles of plugins that cannot map here (other hosts). */
    @Override
    public RemoteRegion open(byte[] bytes) {
        IpcHandle handle = IpcHandle.decode(bytes);
        PluginRecord r = registry.selected(handle.plugin()).orElse(null);
        if (r != null && r.offers(Capability.IPC) && !r.capabilities().contains(Capability.CROSS_HOST)) {
            IpcImporter importer = importer(handle.plugin());
            return new Remote(handle, cache.open(handle, h -> map(importer, h)), null);
        }
        return new Remote(handle, null, whyNotMapped(handle.plugin(), r));
    }

    /**
     * Why a region that {@link #open} left unmapped is not mapped here, or {@code null} for one it
     * mapped. A cross-host transport needs no mapping; one that does (shared memory) can only say
     * that it has none, and this says why and what to do.
     */
    public static String whyNotMapped(RemoteRegion region) {
        return region instanceof Remote remote ? remote.unmapped : null;
    }

    /**
     * {@link ChunkMapping#exporterState()} of the mapping {@code region} uses, also once it was closed
     * (a failed endpoint's peer region is still asked), or {@code null} when {@link #open} left it unmapped.
     */
    public static ExporterState exporterState(RemoteRegion region) {
        return region instanceof Remote remote && remote.lease != null ? remote.lease.exporterStateEvenIfClosed() : null;
    }

    private String whyNotMapped(String plugin, PluginRecord selected) {
        if (selected == null) return notHere(plugin).getMessage();
        if (selected.capabilities().contains(Capability.CROSS_HOST)) {
            return "plugin '" + plugin + "' reaches memory of other hosts and maps none here";
        }
        String why = selected.unsupportedHere().get(Capability.IPC);
        return "plugin '" + plugin + "' imports no IPC handles here" + (why == null ? " (no capability IPC)" : ": " + why);
    }

    /**
     * Maps the chunk {@code handle} names with its plugin's importer, on a miss of the cache. A
     * virtual thread has it done on a platform thread ({@link PlatformHandOff#blockingCall}) and
     * parks: an importer may wait in a native call for the exporter (memfd asks the exporter's
     * descriptor server and {@code poll}s for its answer, up to {@code memfd.connect.timeout}),
     * which would pin the virtual thread's carrier for that long (docs/runtime.md, "Virtual
     * threads"). memfd's importer hands that wait off itself ({@code PluginContext.blockingCall}),
     * which on the platform thread is a direct call; an importer that does not (one written before
     * SPI 1.1 had it) is covered here all the same. What it throws is named as the plugin's fault,
     * a checked exception thrown undeclared (Kotlin, {@code @SneakyThrows}) too: until 2026-12-07
     * that one passed bare, naming no plugin, and past {@link #importRegion}'s catch, leaving the
     * region handed back to be reopened claimed for good
     * (IpcCacheTest#anImporterThatThrowsACheckedExceptionUndeclaredIsNamedAndLeavesTheRegionHandedBackReusable).
     */
    private static ChunkMapping map(IpcImporter importer, IpcHandle handle) {
        try {
            return PlatformHandOff.blockingCall(() -> importer.map(handle.payloadReader(), handle.chunkLength()));
        } catch (Exception e) {
            throw PluginRecord.failed(handle.plugin(), "its importer's map()", e);
        }
    }

    private IpcImporter importer(String plugin) {
        IpcImporter importer = importers.get(plugin);
        if (importer != null) return importer;
        PluginRecord r = registry.selected(plugin).orElseThrow(() -> notHere(plugin));
        if (!r.offers(Capability.IPC)) {
            String why = r.unsupportedHere().get(Capability.IPC);
            if (why != null) throw new NotSupportedException("plugin '" + plugin + "' imports no IPC handles here: " + why);
            throw new ConduitException("plugin '" + plugin + "' does not import IPC handles (no capability IPC)");
        }
        return importers.computeIfAbsent(plugin, p -> r.open("ipcImporter()", () -> r.plugin().ipcImporter(contexts.apply(p))));
    }

    private ConduitException notHere(String plugin) {
        var found = registry.find(plugin);
        if (found.isEmpty()) {
            return new ConduitException("the handle was exported by plugin '" + plugin + "', which is not installed here; "
                    + PluginInstall.howToInstall("it"));
        }
        PluginRecord r = found.get();
        String why = r.status() == Status.EXCLUDED ? r.reason() : r.status() + ": " + r.reason();
        return new ConduitException("the handle was exported by plugin '" + plugin + "', which cannot be used here: " + why);
    }

    /** A transport's view of a peer's region. */
    private static final class Remote implements RemoteRegion {
        private final IpcHandle handle;
        private final IpcCache.Lease lease;
        private final String unmapped;
        private boolean closed;

        Remote(IpcHandle handle, IpcCache.Lease lease, String unmapped) {
            this.handle = handle;
            this.lease = lease;
            this.unmapped = unmapped;
        }

        @Override
        public String pluginName() {
            return handle.plugin();
        }

        @Override
        public long length() {
            return handle.regionLength();
        }

        @Override
        public long chunkOffset() {
            return handle.regionOffset();
        }

        @Override
        public PayloadReader payload() {
            return handle.payloadReader();
        }

        @Override
        public MemorySegment localSegment() {
            return lease == null ? null : lease.region();
        }

        @Override
        public boolean mayFault() {
            return lease == null || lease.mayFault();
        }

        @Override
        public synchronized void close() {
            if (closed) return;
            closed = true;
            if (lease != null) lease.close();
        }
    }
}
