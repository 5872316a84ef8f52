package dev.conduit.benchmarks;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.spi.Version;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * A benchmark-only plugin with capability {@link Capability#AM} whose transport does almost
 * nothing, so that {@code worker.progress()} measures the runtime's thread-mode guard and
 * dispatch, not a transport. It is registered explicitly
 * ({@code Conduit.builder().discoverPlugins(false).addPlugin(...)}), never through
 * {@link java.util.ServiceLoader}: it is not listed in {@code META-INF/services}.
 *
 * <p>It declares the thread modes it is given, so one instance can stand for a plugin that is
 * thread-safe ({@code MULTI}: the runtime passes calls through) and another for one that is not
 * ({@code SERIALIZED} only: the runtime takes its lock for a {@code MULTI} worker). It records the
 * last transport it opened, so a benchmark can call that transport directly as the baseline.
 */
public final class GuardBenchPlugin implements ConduitPlugin {

    private final String name;
    private final Set<ThreadMode> modes;
    private final boolean delivers;
    private volatile CountingTransport lastOpened;

    /**
     * @param name  the plugin's name (lower-case letters, digits, {@code -})
     * @param modes the thread modes it declares
     */
    public GuardBenchPlugin(String name, Set<ThreadMode> modes) {
        this(name, modes, false);
    }

    private GuardBenchPlugin(String name, Set<ThreadMode> modes, boolean delivers) {
        this.name = Objects.requireNonNull(name, "name");
        this.modes = Set.copyOf(modes);
        this.delivers = delivers;
    }

    /**
     * This plugin, whose transports deliver one message ({@link CountingTransport#MESSAGE_ID}, no
     * header, an 8-byte payload) at every {@code progress()}: the runtime's dispatch to a handler,
     * and what its policy adds around a call-back, are then part of each call.
     */
    public GuardBenchPlugin delivering() {
        return new GuardBenchPlugin(name, modes, true);
    }

    /** Declares {@code SINGLE}, {@code SERIALIZED} and {@code MULTI}. */
    public static GuardBenchPlugin threadSafe() {
        return new GuardBenchPlugin("bench-multi", EnumSet.allOf(ThreadMode.class));
    }

    /** Declares {@code SINGLE} and {@code SERIALIZED}, not {@code MULTI}. */
    public static GuardBenchPlugin serializedOnly() {
        return new GuardBenchPlugin("bench-serialized", EnumSet.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED));
    }

    /** The transport this plugin opened last (for the direct-call baseline), or {@code null}. */
    public CountingTransport lastOpened() {
        return lastOpened;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Version version() {
        return new Version(1, 0, 0, "");
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public String description() {
        return "benchmark-only transport whose progress() does nothing but count calls" + (delivers ? " and hand the runtime one message" : "");
    }

    @Override
    public Availability probe(PluginContext context) {
        return Availability.available();
    }

    @Override
    public Set<Capability> capabilities() {
        return EnumSet.of(Capability.AM);
    }

    @Override
    public Set<ThreadMode> threadModes() {
        return modes;
    }

    @Override
    public Transport openTransport(TransportContext context) {
        CountingTransport t = new CountingTransport(delivers ? context.messageSink() : null);
        lastOpened = t;
        return t;
    }

    /**
     * A transport whose {@link #progress()} increments a plain field and returns 0 (no events), or,
     * given a sink, also hands it one message and returns 1. The store keeps the call from being
     * dead code; it is not atomic, which is fine for the one-thread benchmark even under
     * {@code MULTI} pass-through.
     */
    public static final class CountingTransport implements Transport {
        /** The id of the message a delivering transport hands its sink at each progress. */
        public static final int MESSAGE_ID = 1;

        private static final MemorySegment PAYLOAD = Arena.global().allocate(Long.BYTES, Long.BYTES);

        private final MessageSink sink;
        private long calls;
        private boolean closed;

        CountingTransport(MessageSink sink) {
            this.sink = sink;
        }

        @Override
        public byte[] address() {
            return new byte[0];
        }

        @Override
        public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
            throw new NotSupportedException("the benchmark transport has no peers");
        }

        @Override
        public int progress() {
            calls++;
            if (sink == null) return 0;
            sink.onMessage(MESSAGE_ID, MemorySegment.NULL, 0, 0, PAYLOAD, 0, Long.BYTES);
            return 1;
        }

        /** How many times {@link #progress()} ran. */
        public long calls() {
            return calls;
        }

        /** Whether the runtime closed it. */
        public boolean isClosed() {
            return closed;
        }

        @Override
        public void close() {
            closed = true;
        }
    }
}
