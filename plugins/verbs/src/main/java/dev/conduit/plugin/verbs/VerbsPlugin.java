package dev.conduit.plugin.verbs;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.nio.file.Path;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * The verbs plugin: RDMA devices through rdma-core's {@code libibverbs}, bound with FFM
 * ({@link FfmVerbs}) and opened on the first probe.
 *
 * <p>The probe ({@link VerbsProbe}) says whether this process can use RDMA and why not
 * ("libibverbs.so.1 not found", "no RDMA devices", "no active RDMA port"), and lists devices,
 * ports, link layers, LIDs and GIDs for {@code conduit info}. When it finds an active port the
 * plugin offers a transport ({@link VerbsTransport}: reliable-connected queue pairs wired up over
 * TCP, active messages as SENDs with credit-based flow control, put and get as RDMA WRITE and
 * READ, atomics as verbs atomics) and memory registered with the device ({@link VerbsMemoryProvider}),
 * the only memory its RMA reaches. Transports and the provider of one plugin instance share one
 * device context and protection domain ({@link VerbsDomain}). See docs/plugins.md, "verbs".
 *
 * <p>Capabilities are declared before any probe, so they are the plugin's, not a device's:
 * {@code ATOMICS} is declared, and on a device whose {@code atomic_cap} is
 * {@code IBV_ATOMIC_NONE} fetch-add and compare-and-swap throw {@code NotSupportedException}
 * naming the device.
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

    private static final Set<Capability> CAPABILITIES = Collections.unmodifiableSet(EnumSet.of(Capability.MEMORY, Capability.AM,
            Capability.RMA, Capability.ATOMICS, Capability.WAKEUP, Capability.CROSS_HOST));

    private final Function<String, Verbs> loader;
    private final VerbsDomain.Holder domains;

    /** Found by {@link java.util.ServiceLoader}: the real library, opened on the first probe. */
    public VerbsPlugin() {
        this(FfmVerbs::load);
    }

    /** Over another loader, for tests. */
    VerbsPlugin(Function<String, Verbs> loader) {
        this(loader, VerbsDomain.SYSFS);
    }

    /** Over another loader and a fixture sysfs tree (where GID types are read), for tests. */
    VerbsPlugin(Function<String, Verbs> loader, Path sysfs) {
        this.loader = loader;
        this.domains = new VerbsDomain.Holder(loader, sysfs);
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
        return "RDMA through rdma-core's libibverbs (FFM): RC queue pairs wired up over TCP, messages as SENDs, put/get as "
                + "RDMA WRITE/READ, verbs atomics, registered memory; inventory of devices, ports, link layers and GIDs";
    }

    /** See {@link VerbsProbe}. */
    @Override
    public Availability probe(PluginContext context) {
        return new VerbsProbe(loader).probe(context.config());
    }

    /** MEMORY, AM, RMA, ATOMICS (per device: see the class comment), WAKEUP, CROSS_HOST. */
    @Override
    public Set<Capability> capabilities() {
        return CAPABILITIES;
    }

    /** Registered memory in the plugin's protection domain (opens the device on first use). */
    @Override
    public MemoryProvider openMemoryProvider(PluginContext context) {
        VerbsDomain domain = domains.acquire(context.config(), context.logger());
        return new VerbsMemoryProvider(domains, domain, context.logger());
    }

    /** A transport for one worker, in the plugin's protection domain. */
    @Override
    public Transport openTransport(TransportContext context) {
        return openTransport(context, Linux.libc());
    }

    /** Over another libc, for tests. */
    Transport openTransport(TransportContext context, Libc libc) {
        return openTransport(context, libc, WireupServer.OWN_THREAD);
    }

    /** Over another libc, with {@code wireupThreads} making the wire-up thread, for tests. */
    Transport openTransport(TransportContext context, Libc libc, Function<Runnable, Thread> wireupThreads) {
        VerbsDomain domain = domains.acquire(context.config(), context.logger());
        try {
            return new VerbsTransport(domains, domain, context, libc, wireupThreads);
        } catch (RuntimeException | Error e) { // an Error too: the device context's last user closes it
            domains.release(domain);
            throw e;
        }
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
