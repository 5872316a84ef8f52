package dev.conduit.testing;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.Version;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A configurable plugin for runtime tests: metadata, probe and transports are set per test. It
 * records how the runtime used it (probes, the contexts it was given, the transports it opened and
 * the thread of every {@code openTransport} call).
 */
public final class TestPlugin implements ConduitPlugin {

    private final String name;
    private Version version = Version.parse("1.0.0");
    private String spiVersion = SPI_VERSION;
    private String description = "";
    private Set<Capability> capabilities = EnumSet.of(Capability.AM);
    private Set<ThreadMode> threadModes = EnumSet.allOf(ThreadMode.class);
    private int priority;
    private Error metadataFailure;
    private List<ConfigKey<?>> configKeys = List.of();
    private Function<PluginContext, Availability> probe = c -> Availability.available();
    private Function<TransportContext, Transport> transports = c -> new RecordingTransport();
    private Consumer<Config> checkConfig = c -> { };

    public final AtomicInteger probes = new AtomicInteger();
    public volatile PluginContext probeContext;
    public final List<Transport> opened = Collections.synchronizedList(new ArrayList<>());
    public final List<Thread> openThreads = Collections.synchronizedList(new ArrayList<>());
    public final List<TransportContext> transportContexts = Collections.synchronizedList(new ArrayList<>());

    private TestPlugin(String name) {
        this.name = name;
    }

    /** An available plugin with capability AM, every thread mode, version 1.0.0 and priority 0. */
    public static TestPlugin named(String name) {
        return new TestPlugin(name);
    }

    public TestPlugin version(String v) {
        this.version = v == null ? null : Version.parse(v);
        return this;
    }

    public TestPlugin spiVersion(String v) {
        this.spiVersion = v;
        return this;
    }

    public TestPlugin description(String d) {
        this.description = d;
        return this;
    }

    public TestPlugin capabilities(Capability... c) {
        this.capabilities = c.length == 0 ? EnumSet.noneOf(Capability.class) : EnumSet.of(c[0], c);
        return this;
    }

    public TestPlugin threadModes(ThreadMode... m) {
        this.threadModes = m.length == 0 ? EnumSet.noneOf(ThreadMode.class) : EnumSet.of(m[0], m);
        return this;
    }

    /** Declares no capability at all (invalid): {@code capabilities()} returns null. */
    public TestPlugin noCapabilities() {
        this.capabilities = null;
        return this;
    }

    /** Declares no thread mode at all (invalid). */
    public TestPlugin noThreadModes() {
        this.threadModes = EnumSet.noneOf(ThreadMode.class);
        return this;
    }

    public TestPlugin priority(int p) {
        this.priority = p;
        return this;
    }

    public TestPlugin configKeys(ConfigKey<?>... keys) {
        this.configKeys = List.of(keys);
        return this;
    }

    /** Makes {@link #capabilities()} throw {@code failure}, as a plugin missing a class at run time does: a BROKEN plugin. */
    public TestPlugin brokenMetadata(Error failure) {
        this.metadataFailure = failure;
        return this;
    }

    public TestPlugin configKeysNull() {
        this.configKeys = null;
        return this;
    }

    public TestPlugin probe(Function<PluginContext, Availability> p) {
        this.probe = p;
        return this;
    }

    /** What {@link #checkConfig} does; default: nothing. */
    public TestPlugin configCheck(Consumer<Config> check) {
        this.checkConfig = check;
        return this;
    }

    @Override
    public void checkConfig(Config config) {
        checkConfig.accept(config);
    }

    /** How {@link #openTransport} makes a transport; default: a new {@link RecordingTransport}. */
    public TestPlugin transports(Function<TransportContext, Transport> t) {
        this.transports = t;
        return this;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Version version() {
        return version;
    }

    @Override
    public String spiVersion() {
        return spiVersion;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public Availability probe(PluginContext context) {
        probes.incrementAndGet();
        probeContext = context;
        return probe.apply(context);
    }

    @Override
    public Set<Capability> capabilities() {
        if (metadataFailure != null) throw metadataFailure;
        return capabilities;
    }

    @Override
    public Set<ThreadMode> threadModes() {
        return threadModes;
    }

    @Override
    public int priority() {
        return priority;
    }

    @Override
    public List<ConfigKey<?>> configKeys() {
        return configKeys;
    }

    @Override
    public Transport openTransport(TransportContext context) {
        openThreads.add(Thread.currentThread());
        transportContexts.add(context);
        Transport t = transports.apply(context);
        opened.add(t);
        return t;
    }

    @Override
    public String toString() {
        return "TestPlugin[" + name + "]";
    }
}
