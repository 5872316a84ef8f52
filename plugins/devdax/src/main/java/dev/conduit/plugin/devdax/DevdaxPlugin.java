package dev.conduit.plugin.devdax;

import dev.conduit.linux.Linux;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.nio.file.Path;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The devdax plugin: memory from a device-DAX character device ({@code /dev/daxX.Y}: persistent
 * memory, or CXL memory), or from a regular file of the same shape where there is no DAX
 * hardware.
 *
 * <ul>
 *   <li><b>Memory</b> ({@link DevdaxProvider}): one provider per device, enforced by an exclusive
 *       {@code flock} among those that reach it through one device node (a provider that another
 *       took the device over from through a second node fails loudly at its next call); size and
 *       alignment from sysfs; allocations are whole alignment units, placed next fit, mapped
 *       {@code MAP_SHARED} ({@code MAP_SYNC} where accepted), recorded in an allocation table on
 *       the device ({@link Layout}) that a restarted owner resets or recovers
 *       ({@code devdax.on.start}).</li>
 *   <li><b>IPC</b> ({@link DevdaxImporter}): an export names a device alias, an offset, a length
 *       and a protection ({@link DevdaxPayload}); the importer resolves the alias through its own
 *       table, checks the range against the device's table (before and after mapping it), maps
 *       only that range, and needs no provider and no lock. A mapping made before its exporter
 *       frees the chunk then aliases the range's next owner: device memory is physical.</li>
 * </ul>
 *
 * <p>Priority {@value #PRIORITY}: below the shared-memory plugins, which need no device; choose it
 * explicitly ({@code CONDUIT_TRANSPORTS=devdax}) to put pools on device memory. No transport.
 *
 * <p>Configuration: see {@link DevdaxConfig}. Probe: see {@link DevdaxProbe}.
 */
public final class DevdaxPlugin implements ConduitPlugin {

    static final String NAME = "devdax";
    static final int PRIORITY = 50;
    private static final Version VERSION = Version.parse("0.1.0");
    private static final Set<Capability> CAPABILITIES = Collections.unmodifiableSet(EnumSet.of(Capability.MEMORY, Capability.IPC));
    private static final Set<ThreadMode> THREAD_MODES = Collections.unmodifiableSet(EnumSet.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED));

    private final Path devRoot;
    private final Sysfs sysfs;
    private final Path procLocks;

    /** Found by {@link java.util.ServiceLoader}: the machine's {@code /dev}, {@code /sys} and {@code /proc/locks}. */
    public DevdaxPlugin() {
        this(Path.of("/dev"), Sysfs.SYSTEM.root(), LockHolders.PROC_LOCKS);
    }

    /** Over other roots, for tests: a fixture device directory and sysfs tree. */
    DevdaxPlugin(Path devRoot, Path sysfsRoot, Path procLocks) {
        this.devRoot = devRoot;
        this.sysfs = new Sysfs(sysfsRoot);
        this.procLocks = procLocks;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Version version() {
        return VERSION;
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public String description() {
        return "device-DAX memory (persistent or CXL) or a file of the same shape: one provider per device under an exclusive "
                + "flock, allocation table on the device (reset or recover on restart), consumer-only import by device alias";
    }

    /** See {@link DevdaxProbe}. */
    @Override
    public Availability probe(PluginContext context) {
        return new DevdaxProbe(devRoot, sysfs, procLocks).probe(context.config());
    }

    @Override
    public Set<Capability> capabilities() {
        return CAPABILITIES;
    }

    /**
     * {@code SINGLE} and {@code SERIALIZED}, like the shared-memory plugins; for a {@code MULTI}
     * worker the runtime serializes calls with its own lock. (The provider and the importer are
     * thread-safe regardless: the importer is called concurrently by the IPC cache.)
     */
    @Override
    public Set<ThreadMode> threadModes() {
        return THREAD_MODES;
    }

    @Override
    public List<ConfigKey<?>> configKeys() {
        return DevdaxConfig.KEYS;
    }

    /** The provider's device must be in the table: a rule between two keys, checked when the Conduit is built. */
    @Override
    public void checkConfig(Config config) {
        DevdaxConfig.checkDeviceInTable(config);
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    @Override
    public MemoryProvider openMemoryProvider(PluginContext context) {
        return DevdaxProvider.open(Linux.libc(), context, sysfs, procLocks);
    }

    /** Reads only {@code devdax.devices}: no provider, device or lock. */
    @Override
    public IpcImporter ipcImporter(PluginContext context) {
        return new DevdaxImporter(Linux.libc(), DevdaxConfig.deviceTable(context.config()), sysfs);
    }
}
