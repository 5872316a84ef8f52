package dev.conduit.internal;

import dev.conduit.Conduit;
import dev.conduit.ConfigEntry;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.PluginInfo;
import dev.conduit.Pool;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.internal.config.ConfigResolver;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.discovery.PluginRegistry;
import dev.conduit.internal.install.PluginInstall;
import dev.conduit.internal.ipc.IpcCache;
import dev.conduit.internal.ipc.IpcImports;
import dev.conduit.internal.memory.RuntimePool;
import dev.conduit.internal.threading.ThreadPolicies;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.internal.worker.Keepalive;
import dev.conduit.internal.worker.RuntimeWorker;
import dev.conduit.spi.ThreadMode;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/** The {@link Conduit} implementation: owns the registry, the configuration and what was opened. */
public final class ConduitRuntime implements Conduit {

    static final System.Logger LOG = System.getLogger("dev.conduit");

    private final ConfigResolver config;
    private final PluginRegistry registry;
    private final Path sharedDirectory;
    private final Resources resources = new Resources();
    private final IpcCache ipcCache;
    private final IpcImports imports;
    /** Set by the one close that runs; any other returns at once (Conduit#close says why it does not wait). */
    private final AtomicBoolean closeClaimed = new AtomicBoolean();
    /** Started with the first worker (a Conduit used only for pools and imports has no thread of it), stopped by the close. */
    private Keepalive keepalive;
    private boolean keepaliveStopped;
    /**
     * The context class loader of the thread that built this Conduit, which its background threads run with (the
     * sweep's unmaps are plugin code): theirs, not that of whichever thread first needs one, as the threads serve the
     * Conduit, which belongs to the application that built it (Periodic).
     */
    private final ClassLoader builtWith = Thread.currentThread().getContextClassLoader();

    private ConduitRuntime(ConfigResolver config, PluginRegistry registry, Path sharedDirectory) {
        this.config = config;
        this.registry = registry;
        this.sharedDirectory = sharedDirectory;
        this.ipcCache = new IpcCache(config.get(RuntimeKeys.IPC_CACHE_BYTES), config.get(RuntimeKeys.IPC_CACHE_ENTRIES),
                config.get(RuntimeKeys.IPC_CACHE_IDLE), builtWith);
        this.imports = new IpcImports(registry, this::contextOf, ipcCache);
    }

    private RuntimePluginContext contextOf(String plugin) {
        return RuntimePluginContext.of(config, sharedDirectory, plugin);
    }

    public static Conduit open(RuntimeSettings settings) {
        ConfigResolver config = new ConfigResolver(settings.builderValues(), settings.environment(), settings.systemProperties());
        config.declareAll(RuntimeKeys.ALL, ConfigResolver.RUNTIME);
        List<PluginRecord> records = PluginRegistry.discover(settings, config.get(RuntimeKeys.PLUGIN_PATH),
                config.sourceOf(RuntimeKeys.PLUGIN_PATH));
        // Before any plugin key is declared: which plugin a variable two plugins' keys share sets depends on which are left out.
        List<String> transports = config.get(RuntimeKeys.TRANSPORTS);
        List<String> preference = PluginRegistry.leaveOut(records, transports, config.sourceOf(RuntimeKeys.TRANSPORTS));
        PluginRegistry.declareKeys(records, config);
        config.rejectUnknownBuilderKeys();
        PluginRegistry.checkConfig(records, config);
        PluginRegistry.requireNamedUsable(records, transports, config.sourceOf(RuntimeKeys.TRANSPORTS));
        for (String warning : config.unknownSettingWarnings()) {
            LOG.log(System.Logger.Level.WARNING, warning);
        }
        // A relative shared.dir is the working directory's (a systemd unit's WorkingDirectory, easily forgotten): resolved once,
        // so that the plugins and every message they write name the directory itself.
        Path shared = config.get(RuntimeKeys.SHARED_DIR).toAbsolutePath();
        PluginRegistry registry = PluginRegistry.probeAndSelect(records,
                name -> RuntimePluginContext.of(config, shared, name),
                config.get(RuntimeKeys.PROBE_TIMEOUT), config.sourceOf(RuntimeKeys.PROBE_TIMEOUT), preference);
        registry.report(LOG);
        return new ConduitRuntime(config, registry, shared);
    }

    @Override
    public List<PluginInfo> plugins() {
        return registry.all().stream().map(r -> r.toInfo(config)).toList();
    }

    @Override
    public List<String> selectedPlugins() {
        return registry.selected().stream().map(PluginRecord::name).toList();
    }

    /** Says the selected plugins, and whether its close has started, for logs; never throws. */
    @Override
    public String toString() {
        return "Conduit[" + selectedPlugins() + (closeClaimed.get() ? ", closed" : "") + "]";
    }

    @Override
    public List<ConfigEntry> configuration() {
        return config.entries();
    }

    @Override
    public Worker newWorker(ThreadMode mode) {
        Objects.requireNonNull(mode, "mode");
        ensureOpen();
        RuntimeWorker worker = RuntimeWorker.open(mode, registry, config, sharedDirectory, imports, resources::unregister);
        try {
            resources.register(worker, worker::closeFromConduit);
        } catch (IllegalStateException e) {
            Cleanup.run(e, worker::close); // the refusal is what the caller must read; a failing close is added to it
            throw e;
        }
        try {
            startKeepalive();
        } catch (RuntimeException | Error e) { // no thread to be had (Periodic: a ConduitException): the worker is not handed out, so it goes
            Cleanup.run(e, worker::close);
            throw e;
        }
        return worker;
    }

    private synchronized void startKeepalive() {
        // None once the close took it: a worker registered just before the close began is closed by it, unmarked.
        if (keepalive != null || keepaliveStopped) return;
        keepalive = new Keepalive(config.get(RuntimeKeys.KEEPALIVE_INTERVAL), resources, builtWith);
    }

    /** The keepalive to stop, if one started; none starts after this. */
    private synchronized Keepalive stopKeepalive() {
        keepaliveStopped = true;
        Keepalive k = keepalive;
        keepalive = null;
        return k;
    }

    @Override
    public ThreadPolicy threadPolicy(ThreadMode mode) {
        return RuntimeWorker.policyFor(Objects.requireNonNull(mode, "mode"), registry, config.get(RuntimeKeys.THREAD_CONFINE));
    }

    @Override
    public Pool pool(String plugin) {
        Objects.requireNonNull(plugin, "plugin");
        ensureOpen();
        PluginRecord r = registry.selected(plugin).orElseThrow(() -> new ConduitException("no pool over plugin '" + plugin + "': "
                + registry.find(plugin).map(p -> "it is " + p.status() + ": " + p.reason())
                        .orElse("it was not found; found: " + registry.all().stream().map(PluginRecord::name).toList()
                                + "; to use it, " + PluginInstall.howToInstall("it"))));
        if (!r.offers(Capability.MEMORY)) {
            String why = r.unsupportedHere().get(Capability.MEMORY);
            throw new NotSupportedException("plugin '" + plugin + "' provides no memory (capability MEMORY)"
                    + (why != null ? " here: " + why : "") + "; plugins that do here: "
                    + registry.selected().stream().filter(p -> p.offers(Capability.MEMORY)).map(PluginRecord::name).toList());
        }
        if (!ThreadPolicies.supports(r.threadModes(), ThreadMode.SERIALIZED)) {
            throw new ConduitException("plugin '" + plugin + "' declares thread modes " + r.threadModes()
                    + ": a pool is shared by threads and needs a memory provider that supports at least SERIALIZED (the runtime then "
                    + "serializes calls to it with a lock); a plugin whose objects are confined to one thread gives no pools. Use another "
                    + "plugin's pool; the plugin's authors declare SERIALIZED if its provider may be called from several threads in turn");
        }
        MemoryProvider provider = r.open("openMemoryProvider()", () -> r.plugin().openMemoryProvider(contextOf(plugin)));
        RuntimePool pool;
        try {
            pool = new RuntimePool(plugin, provider, r.capabilities().contains(Capability.IPC), r.unsupportedHere().get(Capability.IPC),
                    config.get(RuntimeKeys.POOL_CHUNK_SIZE), config.get(RuntimeKeys.POOL_MAX_SIZE),
                    resources::unregister);
        } catch (RuntimeException | Error e) { // its pageSize() is plugin code, and a class missing from the plugin is an Error
            // Why there is no pool is what the caller must read: a failing close is added to it, not put in its place.
            Cleanup.run(e, provider::close);
            throw e;
        }
        try {
            return resources.register(pool);
        } catch (IllegalStateException e) {
            // Closed once, its failure added to the refusal, and not kept for a retry (RuntimePool#close keeps a pool whose
            // provider refused, for its Conduit's close): that retry waits out memory still in use, and this pool handed out
            // none. A provider that fails to close with no memory out has failed for good (devdax then has no chunk left to
            // keep its device for: it closes its descriptor, and the lock with it); and the close that refused the pool may
            // have passed its closeAll already, leaving nothing to retry it.
            Cleanup.run(e, pool::close);
            throw e;
        }
    }

    @Override
    public Pool pool() {
        ensureOpen(); // before looking for a plugin: a closed Conduit says it is closed, whatever its plugins
        return pool(registry.selected().stream().filter(p -> p.offers(Capability.MEMORY)).findFirst()
                .map(PluginRecord::name)
                .orElseThrow(() -> new ConduitException("no selected plugin provides memory (capability MEMORY) here; "
                        + registry.whyNoneOffers(Capability.MEMORY))));
    }

    @Override
    public ImportedRegion importRegion(byte[] handle) {
        return importRegion(handle, null);
    }

    @Override
    public ImportedRegion importRegion(byte[] handle, ImportedRegion reuse) {
        ensureOpen();
        return imports.importRegion(handle, reuse);
    }

    @Override
    public IpcCacheStats ipcCacheStats() {
        return ipcCache.stats();
    }

    private void ensureOpen() {
        // From the start of a close (Resources#seal refuses a worker that passed this just before).
        if (closeClaimed.get()) throw new IllegalStateException(Resources.CLOSED);
    }

    @Override
    public void close() {
        // Only one close runs. Another one, while the first still asks its workers, would have run
        // a whole close of its own, and closed the IPC cache under the workers the first waits for.
        if (!closeClaimed.compareAndSet(false, true)) return;
        Keepalive k = stopKeepalive();
        if (k != null) k.close();
        // Every worker another thread may be using is asked first, so that their users close them
        // all at once and the waits for them overlap (RuntimeWorker#requestCloseFromConduit).
        // Errors too (a mapped-memory fault in a worker's close is an InternalError), and a checked
        // exception a plugin's signal threw undeclared: one must not end the loop that asks or waits
        // for the other workers, and the IPC cache is closed only after them.
        List<Throwable> workerFailures = new ArrayList<>();
        List<RuntimeWorker> workers = new ArrayList<>();
        RuntimeException failure = null;
        try {
            try {
                resources.seal(); // a worker made meanwhile is refused, not closed unasked under its user
                resources.forEachOpen(RuntimeWorker.class, workers::add);
                for (RuntimeWorker worker : workers) {
                    try {
                        worker.requestCloseFromConduit();
                    } catch (Throwable e) { // a checked one too, which a plugin's signal may throw undeclared
                        workerFailures.add(e); // the worker is still closed below; the JVM's own error is thrown at the end
                    }
                }
            } finally {
                try {
                    resources.closeAll("Conduit");
                } catch (RuntimeException e) {
                    failure = e;
                }
                // A worker its user closed when asked left the list before closeAll looked: its
                // close is waited for and its failure reported here (once: closeFromConduit).
                for (RuntimeWorker worker : workers) {
                    try {
                        worker.closeFromConduit();
                    } catch (RuntimeException | Error e) {
                        workerFailures.add(e);
                    }
                }
            }
        } finally {
            try {
                ipcCache.close();
            } catch (RuntimeException e) {
                // Both reported: the cache's failure must not hide the workers' and pools'.
                if (failure == null) failure = e;
                else failure.addSuppressed(e);
            }
        }
        for (Throwable e : workerFailures) {
            if (failure == null) failure = new ConduitException("closing Conduit failed; further failures are suppressed");
            failure.addSuppressed(e);
        }
        CloseFailures.throwCollected(failure);
    }
}
