package dev.conduit.tck;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Plugins that use a freedom the SPI gives, which a suite must not mistake for a broken rule:
 * {@link WellBehavedVariantsTckTest} runs the suites on them and expects them to pass.
 */
final class WellBehavedVariants {

    private WellBehavedVariants() {
    }

    /**
     * Names the connection each message came by, gives its sender's address and tells its sink
     * when a connection ends: the optional operations for answering a message, done right.
     */
    public static class NamesSenders extends LoopbackPlugin {
        @Override
        boolean namesSenders() {
            return true;
        }
    }

    /**
     * Finds a dead peer only when the keepalive probe asks (checkPeer), never in progress(): the SPI
     * lets a transport rely on the runtime's keepalive rather than a timer of its own.
     */
    public static final class FindsDeathOnlyByProbe extends LoopbackPlugin {
        @Override
        boolean reportsPeerDeath() {
            return false;
        }
    }

    /**
     * Keeps a payload where it delivered it ({@code Transport.keepDelivered}) until released: the
     * optional operation done right, so that the suite's test of it runs rather than aborts.
     */
    public static final class KeepsDelivered extends LoopbackPlugin {
        @Override
        boolean keepsDelivered() {
            return true;
        }
    }

    /**
     * Its probe rules its transport out here ({@code Availability.without}), and openTransport()
     * then says "not supported" with the same reason: honest, as memfd on a read-only shared
     * directory is.
     */
    public static final class RulesTransportOutHonestly extends LoopbackPlugin {
        static final String WHY = "no transport here: the shared directory is read-only";

        @Override
        public Availability probe(PluginContext context) {
            return super.probe(context).without(Capability.AM, WHY);
        }

        @Override
        public Transport openTransport(TransportContext context) {
            throw new NotSupportedException(WHY);
        }
    }

    /**
     * Declares MULTI. An endpoint has a few send buffers of its own: trySend refuses when they are
     * all in use, and only the sender's own progress() reclaims them (TransportEndpoint.trySend:
     * {@code false} when "the transport's buffers are full"), as a transport whose sends complete
     * asynchronously does. Names senders: its delivery lock is not one {@code senderAddress} takes,
     * so another thread gets a sender's address while the end is told.
     */
    public static final class ReclaimsOnOwnProgress extends LoopbackPlugin {
        static final int BUFFERS = 4;

        @Override
        boolean namesSenders() {
            return true;
        }

        @Override
        public Set<ThreadMode> threadModes() {
            return Set.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED, ThreadMode.MULTI);
        }

        @Override
        LoopbackTransport newTransport(long id, MessageSink sink) {
            return new LoopbackTransport(id, sink) {
                private final Object delivering = new Object();

                @Override
                public int progress() {
                    int events;
                    // MULTI: progress from several threads at once still delivers in order.
                    synchronized (delivering) {
                        events = super.progress();
                    }
                    synchronized (endpoints) {
                        for (LoopbackEndpoint ep : endpoints) ((BufferedEndpoint) ep).free.set(BUFFERS);
                    }
                    return events;
                }
            };
        }

        @Override
        LoopbackEndpoint newEndpoint(LoopbackTransport target, EndpointEvents events) {
            return new BufferedEndpoint(target, events);
        }

        final class BufferedEndpoint extends LoopbackEndpoint {
            final AtomicInteger free = new AtomicInteger(BUFFERS);

            BufferedEndpoint(LoopbackTransport target, EndpointEvents events) {
                super(target, events);
            }

            @Override
            public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
                if (failure != null) throw failure;
                int n;
                do {
                    n = free.get();
                    if (n == 0) return false;
                } while (!free.compareAndSet(n, n - 1));
                boolean sent = super.trySend(id, header, payload);
                if (!sent) free.incrementAndGet();
                return sent;
            }
        }
    }

    /**
     * Declares ATOMICS but not RMA, with memory of its own to try them on (the TCK's file memory):
     * fetchAdd and compareAndSwap on the peer's region as mapped in this process.
     */
    public static class AtomicsWithoutRma extends LoopbackPlugin {
        static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

        private final FileMemoryPlugin memory = newMemory();

        /** The memory its provider and importer are: the TCK's file memory, or a broken fixture's. */
        FileMemoryPlugin newMemory() {
            return new FileMemoryPlugin();
        }

        @Override
        public Set<Capability> capabilities() {
            return Set.of(Capability.AM, Capability.WAKEUP, Capability.MEMORY, Capability.IPC, Capability.ATOMICS);
        }

        @Override
        public MemoryProvider openMemoryProvider(PluginContext context) {
            return memory.openMemoryProvider(context);
        }

        @Override
        public IpcImporter ipcImporter(PluginContext context) {
            return memory.ipcImporter(context);
        }

        @Override
        LoopbackEndpoint newEndpoint(LoopbackTransport target, EndpointEvents events) {
            return new AtomicEndpoint(target, events);
        }

        class AtomicEndpoint extends LoopbackEndpoint {
            AtomicEndpoint(LoopbackTransport target, EndpointEvents events) {
                super(target, events);
            }

            @Override
            public long fetchAdd(RemoteRegion region, long offset, long delta) {
                return (long) WORD.getAndAdd(region.localSegment(), offset, delta);
            }

            @Override
            public long compareAndSwap(RemoteRegion region, long offset, long expected, long desired) {
                return (long) WORD.compareAndExchange(region.localSegment(), offset, expected, desired);
            }
        }
    }

    /**
     * Each transport keeps a daemon thread of its own (a ticker, as a transport's keep-alive or
     * wire-up thread would be) that delivers nothing; close() tells it to stop and returns without
     * waiting, so that it ends a moment after the close: the TCK waits for it instead of calling it a leak.
     */
    public static final class StopsItsThreadOnClose extends LoopbackPlugin {
        @Override
        LoopbackTransport newTransport(long id, MessageSink sink) {
            return new LoopbackTransport(id, sink) {
                private final Thread ticker = Thread.ofPlatform().daemon().name("tck-variant-ticker-" + id).start(() -> {
                    while (!closed) LockSupport.parkNanos(20_000_000);
                });

                @Override
                public void close() {
                    super.close();
                    ticker.interrupt();
                }
            };
        }
    }

    /**
     * As conduit-linux's {@code conduit-unmapper} does with the ranges a close gives back: each
     * transport's close() leaves a daemon thread that ends on its own a second later, which no
     * {@code progressGuard()} of a suite (a hang guard) should make a leak.
     */
    public static final class EndsItsThreadASecondAfterClose extends LoopbackPlugin {
        @Override
        LoopbackTransport newTransport(long id, MessageSink sink) {
            return new LoopbackTransport(id, sink) {
                @Override
                public void close() {
                    boolean first = !closed;
                    super.close();
                    if (first) Thread.ofPlatform().daemon().name("tck-variant-unmapper-" + id).start(() -> {
                        long until = System.nanoTime() + 1_000_000_000L;
                        while (System.nanoTime() < until) LockSupport.parkNanos(until - System.nanoTime());
                    });
                }
            };
        }
    }

    /**
     * Delivers a message at most every {@code pace}, one a progress() at most: slow, and never
     * stopped. Its queue holds a whole stream of 1,000 of the transport suite's messages (about
     * 35 MB), which then takes a second at a millisecond's pace, longer than a suite's short
     * {@code progressGuard()}: a hang guard, which must run from the last message that arrived, not
     * bound the whole stream.
     */
    public static final class DeliversSlowlyButSteadily extends LoopbackPlugin {
        private final long paceNanos;

        DeliversSlowlyButSteadily(Duration pace) {
            this.paceNanos = pace.toNanos();
        }

        @Override
        long queueBytes() {
            return 64L << 20;
        }

        @Override
        LoopbackTransport newTransport(long id, MessageSink sink) {
            return new LoopbackTransport(id, sink) {
                private long next = System.nanoTime();

                @Override
                boolean deliversNext() {
                    long now = System.nanoTime();
                    if (now - next < 0) return false;
                    next = now + paceNanos;
                    return true;
                }
            };
        }
    }

    /** The transport suite on {@link DeliversSlowlyButSteadily} under a guard of half its stream; run by {@link WellBehavedVariantsTckTest}. */
    public static final class DeliversSlowlyButSteadilySuite extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new DeliversSlowlyButSteadily(Duration.ofMillis(1));
        }

        @Override
        protected Duration progressGuard() {
            return Duration.ofMillis(500);
        }

        @Override
        protected long backpressureBound() {
            return 128L << 20;
        }
    }

    /**
     * The metadata suite on {@link DeliversSlowlyButSteadily}, a message every 5 ms: the 200 messages of
     * aSerializedPluginWorksFromThreadsTakingTurns take a second, twice its guard; run by {@link WellBehavedVariantsTckTest}.
     */
    public static final class DeliversSlowlyButSteadilyMetadataSuite extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new DeliversSlowlyButSteadily(Duration.ofMillis(5));
        }

        @Override
        protected Duration progressGuard() {
            return Duration.ofMillis(500);
        }

        @Override
        protected boolean foundByServiceLoader() {
            return false; // a test class, added in code
        }
    }

    /**
     * Reclaims dead owners' files only when asked ({@link #reclaim}), as a plugin whose documentation
     * names a command of its own for it would: its provider's open reclaims nothing.
     */
    public static final class ReclaimsOnlyWhenAsked extends FileMemoryPlugin {
        @Override
        public MemoryProvider openMemoryProvider(PluginContext context) {
            return new Provider(context.sharedDirectory(), false);
        }

        /** What the plugin's documented command runs. */
        static void reclaim(Path sharedDirectory) {
            reclaimDeadOwners(sharedDirectory);
        }
    }

    /** The memory suite on {@link ReclaimsOnlyWhenAsked}, naming the trigger it documents; run by {@link WellBehavedVariantsTckTest}. */
    public static final class ReclaimsOnlyWhenAskedSuite extends MemoryProviderContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new ReclaimsOnlyWhenAsked();
        }

        @Override
        protected AutoCloseable reclaimTheFilesOfDeadExporters(ConduitPlugin plugin, PluginContext context) {
            ReclaimsOnlyWhenAsked.reclaim(context.sharedDirectory());
            return () -> {
            };
        }
    }

    /**
     * A plugin with MEMORY and without IPC whose chunks are files in the shared directory, private to
     * the process that allocated them: its provider's open reclaims a dead process's, as memfd's and
     * posix's do their exporters'.
     */
    public static class PrivateFileMemory extends FileMemoryPlugin {
        @Override
        public Set<Capability> capabilities() {
            return Set.of(Capability.MEMORY);
        }

        @Override
        public IpcImporter ipcImporter(PluginContext context) {
            throw new NotSupportedException("plugin '" + name() + "' keeps its memory private: no IPC");
        }
    }

    /** The memory suite on {@link PrivateFileMemory}; run by {@link WellBehavedVariantsTckTest}. */
    public static final class PrivateFileMemorySuite extends MemoryProviderContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new PrivateFileMemory();
        }
    }

    /**
     * The memory suite on {@link TableMemoryPlugin}, whose medium is not a file; run by {@link WellBehavedVariantsTckTest}
     * for the checks made in one process (its imports map in the exporting JVM only).
     */
    public static final class TableMemorySuite extends MemoryProviderContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new TableMemoryPlugin();
        }
    }

    /** The memory suite on {@link ReclaimsOnlyWhenAsked} for an author whose plugin leaves the clearing to something outside it. */
    public static final class ClearedOutsideThePluginSuite extends MemoryProviderContract {
        static final String WHY = "a dead exporter's files are cleared by systemd-tmpfiles, as docs/operating.md says";

        @Override
        protected ConduitPlugin newPlugin() {
            return new ReclaimsOnlyWhenAsked();
        }

        @Override
        protected AutoCloseable reclaimTheFilesOfDeadExporters(ConduitPlugin plugin, PluginContext context) {
            return org.junit.jupiter.api.Assumptions.abort(WHY);
        }
    }

    /**
     * A loopback whose every transport holds a lease in the shared directory for its life (a
     * {@link FileMemoryPlugin} provider's, locked with a lock the kernel drops with the process), as
     * a transport of shared memory holds its queue and lease there; opening a transport reclaims the
     * leases of dead owners, as memfd's and posix's does. Its workers connect only within one JVM:
     * the files of its open are what the check of a killed worker's files looks at.
     */
    public static class LeasedLoopback extends LoopbackPlugin {
        private final java.util.Map<Long, MemoryProvider> leases = new java.util.concurrent.ConcurrentHashMap<>();

        /** The lease a transport holds, whose open reclaims dead owners' files; a broken fixture's reclaims otherwise. */
        MemoryProvider openLease(Path sharedDirectory) {
            return new FileMemoryPlugin().new Provider(sharedDirectory);
        }

        @Override
        public Transport openTransport(TransportContext context) {
            MemoryProvider lease = openLease(context.sharedDirectory());
            LoopbackTransport transport;
            try {
                transport = (LoopbackTransport) super.openTransport(context);
            } catch (RuntimeException | Error e) {
                lease.close();
                throw e;
            }
            leases.put(transport.id, lease);
            return transport;
        }

        @Override
        LoopbackTransport newTransport(long id, MessageSink sink) {
            return new LoopbackTransport(id, sink) {
                @Override
                public void close() {
                    super.close();
                    MemoryProvider lease = leases.remove(id);
                    if (lease != null) lease.close();
                }
            };
        }
    }

    /** The transport suite on {@link LeasedLoopback}; run by {@link WellBehavedVariantsTckTest}. */
    public static final class LeasedLoopbackSuite extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new LeasedLoopback();
        }
    }
}
