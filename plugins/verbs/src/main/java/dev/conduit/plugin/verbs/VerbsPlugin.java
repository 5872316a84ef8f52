package dev.conduit.plugin.verbs;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * The verbs plugin: RDMA devices through rdma-core's {@code libibverbs}, bound with FFM
 * ({@link FfmVerbs}) and opened on the first probe.
 *
 * <p>What it does today: the probe ({@link VerbsProbe}) says whether this process could use RDMA
 * and why not ("libibverbs.so.1 not found", "no RDMA devices", "no active RDMA port"), and lists
 * devices, ports, link layers, LIDs and GIDs for {@code conduit info}. It declares <b>no
 * capability</b>: the RC queue-pair transport (connect, send/recv, RDMA write/read, atomics) is
 * not built, so the runtime never selects it for pools or workers. See docs/plugins.md, "verbs".
 *
 * <p>Thread modes: {@code SINGLE} and {@code SERIALIZED}. A verbs data path rings the adapter's
 * doorbell (an MMIO write to a page mapped into the process) from the posting thread, and
 * providers serialize that per queue pair only with locks an application can configure away; like
 * UCX, which refuses a {@code MULTI} worker on IB transports for this reason, the plugin lets the
 * runtime serialize a {@code MULTI} worker with its own lock.
 */
public final class VerbsPlugin implements ConduitPlugin {

    static final String NAME = "verbs";
    /** Cross-host plugins use 0..99; shared-memory ones, which win for peers on one host, 100..199. */
    static final int PRIORITY = 50;
    private static final Version VERSION = Version.parse("0.1.0");
    private static final Set<ThreadMode> THREAD_MODES = Collections.unmodifiableSet(EnumSet.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED));

    private final Function<String, Verbs> loader;

    /** Found by {@link java.util.ServiceLoader}: the real library, opened on the first probe. */
    public VerbsPlugin() {
        this(FfmVerbs::load);
    }

    /** Over another loader, for tests. */
    VerbsPlugin(Function<String, Verbs> loader) {
        this.loader = loader;
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
        return "RDMA devices through rdma-core's libibverbs (FFM): probe and inventory of devices, ports, link layers and GIDs; "
                + "no transport yet";
    }

    /** See {@link VerbsProbe}. */
    @Override
    public Availability probe(PluginContext context) {
        return new VerbsProbe(loader).probe(context.config());
    }

    /** None: the RDMA transport is not built yet (docs/plugins.md, "verbs"). */
    @Override
    public Set<Capability> capabilities() {
        return Collections.unmodifiableSet(EnumSet.noneOf(Capability.class));
    }

    /** {@code SINGLE} and {@code SERIALIZED}: see the class comment (doorbell MMIO). */
    @Override
    public Set<ThreadMode> threadModes() {
        return THREAD_MODES;
    }

    @Override
    public List<ConfigKey<?>> configKeys() {
        return VerbsConfig.KEYS;
    }

    @Override
    public int priority() {
        return PRIORITY;
    }
}
