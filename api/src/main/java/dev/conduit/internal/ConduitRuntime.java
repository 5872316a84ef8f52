package dev.conduit.internal;

import dev.conduit.Conduit;
import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;
import dev.conduit.Worker;
import dev.conduit.internal.config.ConfigResolver;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.discovery.PluginRegistry;
import dev.conduit.internal.worker.RuntimeWorker;
import dev.conduit.spi.ThreadMode;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/** The {@link Conduit} implementation: owns the registry, the configuration and what was opened. */
public final class ConduitRuntime implements Conduit {

    static final System.Logger LOG = System.getLogger("dev.conduit");

    private final ConfigResolver config;
    private final PluginRegistry registry;
    private final Path sharedDirectory;
    private final Resources resources = new Resources();

    private ConduitRuntime(ConfigResolver config, PluginRegistry registry, Path sharedDirectory) {
        this.config = config;
        this.registry = registry;
        this.sharedDirectory = sharedDirectory;
    }

    public static Conduit open(RuntimeSettings settings) {
        ConfigResolver config = new ConfigResolver(settings.builderValues(), settings.environment(), settings.systemProperties());
        config.declareAll(RuntimeKeys.ALL, "runtime");
        List<PluginRecord> records = PluginRegistry.discover(settings, config.get(RuntimeKeys.PLUGIN_PATH));
        PluginRegistry.declareKeys(records, config);
        config.rejectUnknownBuilderKeys();
        config.validate();
        for (String warning : config.unknownSettingWarnings()) {
            LOG.log(System.Logger.Level.WARNING, warning);
        }
        Path shared = config.get(RuntimeKeys.SHARED_DIR);
        PluginRegistry registry = PluginRegistry.probeAndSelect(records,
                name -> RuntimePluginContext.of(config, shared, name),
                config.get(RuntimeKeys.PROBE_TIMEOUT), config.get(RuntimeKeys.TRANSPORTS));
        for (PluginRecord r : registry.all()) {
            if (r.status() != PluginInfo.Status.SELECTED && r.status() != PluginInfo.Status.AVAILABLE) {
                LOG.log(System.Logger.Level.DEBUG, () -> "plugin " + r.name() + " " + r.status() + ": " + r.reason());
            }
        }
        return new ConduitRuntime(config, registry, shared);
    }

    @Override
    public List<PluginInfo> plugins() {
        return registry.all().stream().map(r -> r.toInfo(config.entries(r.name()))).toList();
    }

    @Override
    public List<String> selectedPlugins() {
        return registry.selected().stream().map(PluginRecord::name).toList();
    }

    @Override
    public List<ConfigEntry> configuration() {
        return config.entries();
    }

    @Override
    public Worker newWorker(ThreadMode mode) {
        Objects.requireNonNull(mode, "mode");
        ensureOpen();
        RuntimeWorker worker = RuntimeWorker.open(mode, registry.selected(), config, sharedDirectory, resources::unregister);
        try {
            return resources.register(worker);
        } catch (IllegalStateException e) {
            worker.close();
            throw e;
        }
    }

    private void ensureOpen() {
        if (resources.isClosed()) throw new IllegalStateException("Conduit is closed");
    }

    @Override
    public void close() {
        resources.closeAll("Conduit");
    }
}
