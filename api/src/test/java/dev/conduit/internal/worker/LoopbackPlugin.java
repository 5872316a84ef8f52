package dev.conduit.internal.worker;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.spi.Version;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An in-process transport plugin for runtime tests: workers in this JVM (in one {@code Conduit} or
 * several) reach each other through a static registry keyed by the random key in their transport
 * address. Each transport has a bounded receive queue of {@code capacity} messages, so
 * {@code trySend} returns {@code false} when the peer does not keep up; it declares AM, RMA,
 * ATOMICS and WAKEUP (fewer on request) and {@code SINGLE, SERIALIZED}, plus {@code MULTI} when
 * asked. Every call the runtime makes into a transport or one of its endpoints is counted, and two
 * at once are recorded as an overlap, so tests can see whether the runtime let concurrency in.
 */
final class LoopbackPlugin implements ConduitPlugin {

    static final Map<String, LoopbackTransport> REGISTRY = new ConcurrentHashMap<>();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final String name;
    private final int capacity;
    private final boolean multi;
    private volatile boolean singleOnly;
    private volatile Set<Capability> capabilities = EnumSet.of(Capability.AM, Capability.RMA, Capability.ATOMICS, Capability.WAKEUP);
    private volatile int priority = 150;
    volatile int maxHeader = 256;
    volatile long maxPayload = 1 << 20;
    /** What endpoints say raises {@link #maxPayload} ({@code maxPayloadSizeRemedy}): a String, null (the default) or a fault to throw. */
    volatile Object payloadRemedy;
    /** When set, {@code connect} reports the peer failed before it returns the endpoint. */
    volatile boolean failWhileConnecting;
    /** When set, {@code connect} fails with this reason. */
    volatile String refuseConnect;
    /** How long each connect takes before it does anything (a peer slow to answer, as a stopped memfd peer's fd server). */
    volatile long connectTakesMillis;
    /** How many connects were asked of this plugin's transports. */
    final java.util.concurrent.atomic.AtomicInteger connects = new java.util.concurrent.atomic.AtomicInteger();
    /**
     * When set, an endpoint's {@code maxHeaderSize} throws it, as a plugin missing one of its classes would; a checked one
     * undeclared, as a Kotlin plugin's.
     */
    volatile Throwable limitsError;
    /**
     * When set, {@code connect} throws it: a peer found dead while connecting ({@code PeerFailedException}), say; a checked
     * one undeclared, as a Kotlin plugin's.
     */
    volatile Throwable connectFault;
    /** When set, {@code connect} returns {@code null}, as a broken plugin would. */
    volatile boolean connectReturnsNull;
    /** Run by {@code connect} once it made the endpoint, before it returns it: for what happens meanwhile. */
    volatile Runnable whileConnecting = () -> { };
    final List<LoopbackTransport> transports = new CopyOnWriteArrayList<>();
    /**
     * When set, closing endpoint number n (from 0, in connect order) throws this after it is recorded closed; a checked one
     * undeclared, as a Kotlin plugin's.
     */
    volatile java.util.function.IntFunction<Throwable> endpointCloseFails = n -> null;
    /**
     * When set, the transports name each message's sender (the connection's key) and give the
     * address it connected from ({@code Transport.senderAddress}), and tell the sink when a
     * connection ends ({@code onSenderClosed}): its endpoint closed, or its transport closed or died.
     */
    volatile boolean namesSenders;
    /** When set with {@link #namesSenders}, {@code senderAddress} is the SPI's default: senders named, their addresses not given. */
    volatile boolean withholdsSenderAddresses;
    /** When set, {@code senderAddress} throws it: a plugin's own failure; a checked one undeclared, as a Kotlin plugin's. */
    volatile Throwable senderAddressFault;
    /**
     * When not 0, every connection gets this key: a transport that gives a retired key to its next
     * connection, as the SPI allows once the key's end was told (tests connect one at a time then).
     */
    volatile long reusedKey;
    /** When set, RMA refuses every region, mapped or not, with this NotSupportedException message (as verbs refuses another plugin's). */
    volatile String refusesRegions;
    /** Run by each RMA call once it has the region's mapping, before it touches it. */
    volatile Runnable whileRma = () -> { };
    /** When cleared, progress never reports a dead peer: only the keepalive probe can find it. */
    volatile boolean reportsDeathInProgress = true;
    /** When cleared, a death that progress reports is not among the events it counts (what an event is, the SPI leaves to the plugin). */
    volatile boolean countsDeathReports = true;
    /** When set, endpoints have a keepalive probe (checkPeer) that finds a dead peer; when not, it says it is not supported. */
    volatile boolean probesPeers;
    /** When set, the keepalive probe throws it: a plugin's own failure. */
    volatile RuntimeException probeFault;
    /**
     * When set, the transport takes a lock of its own ({@code LoopbackTransport.pluginLock}) around
     * its probe and around its progress's report of a dead peer, and that report, holding it, waits
     * (up to 30 s) for a probe to begin on another thread: the order of a plugin's locks against the
     * runtime's that deadlocked a {@code MULTI} worker while the runtime probed under its endpoint's lock.
     */
    volatile boolean probeAndReportUnderOneLock;
    /**
     * When set, the transports keep what they deliver where it lies ({@code Transport.keepDelivered}):
     * each release action adds "kept payload" to {@link #closes}, and counts in {@link #keptReleases}.
     */
    volatile boolean keepsDelivered;
    /**
     * When set, {@code keepDelivered} throws it, as a plugin's bug or a transport closed under the
     * handler does: a checked exception too, undeclared, as a plugin in Kotlin may.
     */
    volatile Exception keepFailure;
    /** When set, the next release action throws it instead of releasing, undeclared, as a plugin in Kotlin may throw an IOException. */
    volatile Exception keptReleaseFailure;
    final AtomicLong keptReleases = new AtomicLong();
    /** What was closed, in order: "endpoint#n", "transport" and "kept payload". */
    final List<String> closes = Collections.synchronizedList(new ArrayList<>());

    LoopbackPlugin(String name, int capacity, boolean multi) {
        this.name = name;
        this.capacity = capacity;
        this.multi = multi;
    }

    LoopbackPlugin capabilities(Capability... c) {
        this.capabilities = EnumSet.of(Capability.AM, c);
        return this;
    }

    /** Declares only SINGLE: thread-confined, as a plugin using a confined arena would be. */
    LoopbackPlugin singleOnly() {
        this.singleOnly = true;
        return this;
    }

    LoopbackPlugin priority(int p) {
        this.priority = p;
        return this;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Version version() {
        return Version.parse("1.0.0");
    }

    @Override
    public String spiVersion() {
        return SPI_VERSION;
    }

    private volatile Availability availability = Availability.available();

    /** Its probe rules {@code capability} out here, because of {@code why}. */
    LoopbackPlugin ruledOut(Capability capability, String why) {
        availability = availability.without(capability, why);
        return this;
    }

    /** Its probe finds it unusable here, because of {@code why}. */
    LoopbackPlugin unavailable(String why) {
        availability = Availability.unavailable(why);
        return this;
    }

    @Override
    public Availability probe(PluginContext context) {
        return availability;
    }

    @Override
    public Set<Capability> capabilities() {
        return capabilities;
    }

    @Override
    public Set<ThreadMode> threadModes() {
        if (singleOnly) return EnumSet.of(ThreadMode.SINGLE);
        return multi ? EnumSet.allOf(ThreadMode.class) : EnumSet.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED);
    }

    @Override
    public int priority() {
        return priority;
    }

    @Override
    public Transport openTransport(TransportContext context) {
        LoopbackTransport t = new LoopbackTransport(this, context);
        transports.add(t);
        return t;
    }

    /** The one transport this plugin opened. */
    LoopbackTransport transport() {
        if (transports.size() != 1) throw new AssertionError(transports.size() + " transports opened");
        return transports.getFirst();
    }

    /** A message in a receive queue; {@code sender} is its connection's key, 0 when the plugin does not name senders. */
    record Msg(int id, byte[] bytes, int headerLength, long sender) {
    }

    /** Connection keys, never 0, unique in this JVM. */
    private static final AtomicLong CONNECTIONS = new AtomicLong(0x5EED_0000_0000L);

    static final class LoopbackTransport implements Transport {
        final LoopbackPlugin plugin;
        final String key = UUID.randomUUID().toString();
        final ArrayBlockingQueue<Msg> queue;
        private final MessageSink sink;
        final List<LoopbackEndpoint> endpoints = new CopyOnWriteArrayList<>();
        final AtomicInteger inside = new AtomicInteger();
        final AtomicLong overlaps = new AtomicLong();
        final AtomicLong calls = new AtomicLong();
        volatile boolean inProgress;
        volatile boolean dead;
        volatile boolean closed;
        /** Thrown by progress() while set: a transport that cannot go on. */
        volatile RuntimeException progressFault;
        /** Thrown by progress() while set, undeclared, as a plugin in Kotlin may throw a checked exception. */
        volatile Exception progressChecked;
        /** Added to what progress() answers: a negative one makes a count the SPI does not allow (a plugin's bug). */
        volatile int progressAnswerOffset;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition work = lock.newCondition();
        volatile boolean waiting;
        private boolean signalled;
        /** When set, {@code await} sleeps until a message or a signal, however short the timeout it is given. */
        volatile boolean awaitIgnoresTimeout;
        /** When set, an interrupt does not end {@code await}'s sleep, as it does not end a futex wait; it is kept for the caller. */
        volatile boolean awaitDeafToInterrupts;
        /** Run by progress() as it starts: a plugin's own work there (blocking I/O on a channel, say). */
        volatile Runnable duringProgress = () -> { };
        /** Thrown by signal() while set: a transport whose wake fails (a queue's memory gone bad, say). */
        volatile RuntimeException signalFault;
        /** Thrown by signal() while set: a plugin whose wake fails with an Error (one of its classes missing, say). */
        volatile Error signalError;
        /** Thrown by signal() while set, undeclared: a plugin in Kotlin whose wake fails with an IOException (a pipe gone, say). */
        volatile Exception signalChecked;
        /** Thrown by await() while set, undeclared: a plugin in Kotlin whose sleep polls a pipe gone bad (IOException). */
        volatile Exception awaitChecked;
        /** Run by await() as it starts: what happens as a thread comes to sleep (another thread's close, say). */
        volatile Runnable beforeAwait = () -> { };
        /** When set, await() on a closed transport throws IllegalStateException, as shm's does (its ensureOpen). */
        volatile boolean awaitRefusedOnceClosed;
        /** Calls of signal(). */
        final AtomicLong signals = new AtomicLong();
        /** The thread of each await call, in order. */
        final List<Thread> awaitThreads = new CopyOnWriteArrayList<>();
        /** The endpoints connected to this transport, by connection key, while their connection lasts (namesSenders). */
        final Map<Long, LoopbackEndpoint> inbound = new ConcurrentHashMap<>();
        /** The keys whose end was told to the sink ({@code onSenderClosed}), in order. */
        final List<Long> sendersClosed = new CopyOnWriteArrayList<>();
        /** Calls of senderAddress(). */
        final AtomicLong senderAddressCalls = new AtomicLong();
        /** The plugin's own lock of {@link LoopbackPlugin#probeAndReportUnderOneLock}. */
        private final Object pluginLock = new Object();
        /** Probes that began to take {@link #pluginLock}. */
        private final AtomicLong probesBegun = new AtomicLong();
        /** Whether a report under {@link #pluginLock} went on once a probe had begun, rather than after its 30 s. */
        volatile boolean reportMetAProbe;

        /** What the runtime gave this transport: a test makes a blocking call through it. */
        final TransportContext context;

        LoopbackTransport(LoopbackPlugin plugin, TransportContext context) {
            this.plugin = plugin;
            this.context = context;
            this.queue = new ArrayBlockingQueue<>(plugin.capacity);
            this.sink = context.messageSink();
            REGISTRY.put(key, this);
        }

        /** What this transport delivers to: the runtime's sink of it. */
        MessageSink sink() {
            return sink;
        }

        /** Calls nested on one thread (a handler that sends) are re-entry, not overlap. */
        private final ThreadLocal<int[]> depth = ThreadLocal.withInitial(() -> new int[1]);

        void enter() {
            calls.incrementAndGet();
            int[] d = depth.get();
            if (d[0]++ > 0) return;
            if (inside.incrementAndGet() != 1) overlaps.incrementAndGet();
        }

        void exit() {
            int[] d = depth.get();
            if (--d[0] > 0) return;
            inside.decrementAndGet();
        }

        /** The peer "dies": its endpoints' senders see it at once, and report it on their next progress. */
        void kill() {
            dead = true;
            REGISTRY.remove(key);
        }

        /** What its senders' reports of its death say: DIED unless a test makes it a transport that cannot tell. */
        volatile PeerFailedException.Reason deathReason = PeerFailedException.Reason.DIED;

        @Override
        public byte[] address() {
            enter();
            try {
                return new PayloadWriter().string(key).toByteArray();
            } finally {
                exit();
            }
        }

        @Override
        public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
            enter();
            try {
                String peerKey = peerAddress.string("key", 64);
                peerAddress.end("key");
                plugin.connects.incrementAndGet();
                if (plugin.connectTakesMillis > 0) {
                    try {
                        Thread.sleep(plugin.connectTakesMillis);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                if (plugin.refuseConnect != null) throw new ConduitException(plugin.refuseConnect);
                if (plugin.connectFault != null) throw LoopbackTransport.<RuntimeException>sneaky(plugin.connectFault);
                if (plugin.connectReturnsNull) return null;
                LoopbackTransport target = REGISTRY.get(peerKey);
                if (target == null) throw new ConduitException("no loopback transport is listening at " + peerKey);
                LoopbackEndpoint ep = new LoopbackEndpoint(this, target, events, endpoints.size());
                endpoints.add(ep);
                if (plugin.namesSenders) target.inbound.put(ep.connection, ep);
                plugin.whileConnecting.run();
                if (plugin.failWhileConnecting) {
                    ep.reported = true;
                    events.peerFailed(new PeerFailedException("the peer hung up during the handshake"));
                }
                return ep;
            } finally {
                exit();
            }
        }

        @Override
        public Runnable keepDelivered() {
            Exception failure = plugin.keepFailure;
            if (failure != null) throw LoopbackTransport.<RuntimeException>sneaky(failure);
            if (!plugin.keepsDelivered) return null;
            if (!inProgress) throw new AssertionError("keepDelivered called outside the delivery of a message");
            return () -> {
                Exception releaseFailure = plugin.keptReleaseFailure;
                plugin.keptReleaseFailure = null;
                if (releaseFailure != null) throw LoopbackTransport.<RuntimeException>sneaky(releaseFailure);
                plugin.keptReleases.incrementAndGet();
                plugin.closes.add("kept payload");
            };
        }

        @Override
        public int progress() {
            enter();
            inProgress = true;
            try {
                duringProgress.run();
                if (progressFault != null) throw progressFault;
                if (progressChecked != null) throw LoopbackTransport.<RuntimeException>sneaky(progressChecked);
                int events = 0;
                for (int i = 0; i < 64; i++) {
                    Msg m = queue.poll();
                    if (m == null) break;
                    MemorySegment s = MemorySegment.ofArray(m.bytes());
                    if (m.sender() != 0) {
                        sink.onMessage(m.id(), s, 0, m.headerLength(), s, m.headerLength(), m.bytes().length - m.headerLength(), m.sender());
                    } else {
                        sink.onMessage(m.id(), s, 0, m.headerLength(), s, m.headerLength(), m.bytes().length - m.headerLength());
                    }
                    events++;
                }
                if (queue.isEmpty()) {
                    // After every message of theirs: a connection whose endpoint closed, or whose transport closed or died, ends.
                    for (LoopbackEndpoint in : inbound.values()) {
                        // Removed by one thread only: the threads of a MULTI worker may walk this at once, and each end is told once.
                        if ((in.closed || in.owner.closed || in.owner.dead) && inbound.remove(in.connection, in)) {
                            sendersClosed.add(in.connection);
                            sink.onSenderClosed(in.connection);
                            events++;
                        }
                    }
                }
                for (LoopbackEndpoint ep : endpoints) {
                    if (plugin.probeAndReportUnderOneLock) {
                        if (plugin.reportsDeathInProgress && ep.target.dead && !ep.closed && ep.reportClaimed.compareAndSet(false, true)) {
                            reportWhileAProbeWaits(ep);
                            events++;
                        }
                        continue;
                    }
                    if (plugin.reportsDeathInProgress && ep.target.dead && !ep.reported && !ep.closed) {
                        ep.reported = true;
                        ep.events.peerFailed(new PeerFailedException(ep.target.deathReason, "loopback peer " + ep.target.key + " died"));
                        if (plugin.countsDeathReports) events++;
                    }
                }
                return events + progressAnswerOffset;
            } finally {
                inProgress = false;
                exit();
            }
        }

        /** {@link LoopbackPlugin#probeAndReportUnderOneLock}: the report, under the plugin's lock, once a probe waits for it. */
        private void reportWhileAProbeWaits(LoopbackEndpoint ep) {
            synchronized (pluginLock) {
                ep.reported = true;
                long begun = probesBegun.get();
                long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
                while (probesBegun.get() == begun && System.nanoTime() - deadline < 0) Thread.onSpinWait();
                reportMetAProbe = probesBegun.get() != begun;
                ep.events.peerFailed(new PeerFailedException(ep.target.deathReason, "loopback peer " + ep.target.key + " died"));
            }
        }

        @Override
        public byte[] senderAddress(long sender) {
            enter();
            try {
                senderAddressCalls.incrementAndGet();
                Throwable fault = plugin.senderAddressFault;
                if (fault != null) throw LoopbackTransport.<RuntimeException>sneaky(fault);
                if (!plugin.namesSenders || plugin.withholdsSenderAddresses) return Transport.super.senderAddress(sender);
                LoopbackEndpoint in = inbound.get(sender);
                return in == null ? null : in.owner.address();
            } finally {
                exit();
            }
        }

        boolean deliver(Msg m) {
            if (!queue.offer(m)) return false;
            if (waiting) wake(false);
            return true;
        }

        private void wake(boolean signal) {
            lock.lock();
            try {
                if (signal) signalled = true;
                work.signalAll();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public boolean await(long timeoutNanos) {
            awaitThreads.add(Thread.currentThread());
            beforeAwait.run();
            if (awaitChecked != null) throw LoopbackTransport.<RuntimeException>sneaky(awaitChecked);
            if (awaitRefusedOnceClosed && closed) throw new IllegalStateException("loopback transport " + key + " is closed");
            enter();
            boolean interruptedWhileDeaf = false;
            try {
                lock.lock();
                try {
                    waiting = true;
                    long left = awaitIgnoresTimeout ? Long.MAX_VALUE : timeoutNanos;
                    while (queue.isEmpty() && !signalled && left > 0) {
                        try {
                            left = work.awaitNanos(left);
                        } catch (InterruptedException e) {
                            if (!awaitDeafToInterrupts) throw e;
                            interruptedWhileDeaf = true;
                        }
                    }
                    boolean woke = !queue.isEmpty() || signalled;
                    signalled = false;
                    return woke;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return true;
                } finally {
                    waiting = false;
                    lock.unlock();
                    if (interruptedWhileDeaf) Thread.currentThread().interrupt();
                }
            } finally {
                exit();
            }
        }

        @Override
        public void signal() {
            signals.incrementAndGet();
            if (signalFault != null) throw signalFault;
            if (signalError != null) throw signalError;
            if (signalChecked != null) throw LoopbackTransport.<RuntimeException>sneaky(signalChecked);
            wake(true); // any thread: not counted
        }

        @Override
        public void close() {
            enter();
            try {
                if (closed) return;
                closed = true;
                REGISTRY.remove(key);
                plugin.closes.add("transport");
            } finally {
                exit();
            }
        }

        /** Waits (bounded) until a thread sleeps in {@link #await}. */
        /** Throws {@code e}, checked or not, where the compiler would not let a checked one through: as Kotlin does. */
        @SuppressWarnings("unchecked")
        private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
            throw (E) e;
        }

        void awaitSleeper() throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!waiting) {
                if (System.nanoTime() > deadline) throw new AssertionError("nobody awaited");
                Thread.sleep(1);
            }
        }
    }

    static final class LoopbackEndpoint implements TransportEndpoint {
        /** Thrown by every trySend while set: a transport whose send fails for a reason of its own. */
        volatile Throwable sendFault;
        /**
         * When set, a {@link #sendFault} that is a {@code PeerFailedException} is reported through the endpoint's events
         * before trySend throws it, as the shared-memory transports report a send whose mapping faulted or whose peer's
         * queue is damaged ({@code ShmEndpoint.sendFault}, {@code corruptQueue}).
         */
        volatile boolean reportsSendFault;
        /**
         * Reported through the endpoint's events by every trySend while set, which still takes its message: a transport that
         * wrote the message and then found its peer gone, and says both.
         */
        volatile PeerFailedException reportedWhileTaking;
        /** Reported through the endpoint's events by every trySend while set, which then refuses its message ("no room"). */
        volatile PeerFailedException reportedWhileRefusing;
        /** Thrown by every trySend while set, after {@link #sendFault}: an Error, as a fault in mapped memory is (an InternalError). */
        volatile Error sendError;
        final LoopbackTransport owner;
        final LoopbackTransport target;
        final EndpointEvents events;
        final int number;
        final long connection;
        volatile boolean reported;
        /** Claimed by the one progress that reports the peer's death under {@link LoopbackPlugin#probeAndReportUnderOneLock}. */
        final java.util.concurrent.atomic.AtomicBoolean reportClaimed = new java.util.concurrent.atomic.AtomicBoolean();
        volatile boolean closed;
        volatile boolean closedDuringProgress;
        /** Calls of close(), a second one included, which the runtime must not make. */
        final AtomicInteger closeCalls = new AtomicInteger();
        final AtomicLong trySends = new AtomicLong();
        final AtomicLong rmaCalls = new AtomicLong();
        /** Thrown by this endpoint's keepalive probe while set, after {@link LoopbackPlugin#probeFault}: an {@code assert} of the plugin's. */
        volatile Error probeError;
        /** Calls of the keepalive probe, and the thread of the last one. */
        final AtomicLong probes = new AtomicLong();
        volatile Thread probedOn;
        /** What the last RMA call's region said of its mapping ({@link RemoteRegion#mayFault()}). */
        volatile boolean lastRegionMayFault;

        LoopbackEndpoint(LoopbackTransport owner, LoopbackTransport target, EndpointEvents events, int number) {
            this.owner = owner;
            this.target = target;
            this.events = events;
            this.number = number;
            long reused = owner.plugin.reusedKey;
            this.connection = reused != 0 ? reused : CONNECTIONS.incrementAndGet();
        }

        @Override
        public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
            owner.enter();
            try {
                trySends.incrementAndGet();
                if (sendFault != null) {
                    if (reportsSendFault && sendFault instanceof PeerFailedException failed) events.peerFailed(failed);
                    throw LoopbackTransport.<RuntimeException>sneaky(sendFault);
                }
                if (sendError != null) throw sendError;
                if (reportedWhileRefusing != null) {
                    events.peerFailed(reportedWhileRefusing);
                    return false;
                }
                if (closed) throw new IllegalStateException("closed");
                if (target.dead) throw new PeerFailedException(PeerFailedException.Reason.DIED, "loopback peer " + target.key + " is dead");
                int hl = (int) header.byteSize();
                byte[] bytes = new byte[hl + (int) payload.byteSize()];
                MemorySegment.copy(header, ValueLayout.JAVA_BYTE, 0, bytes, 0, hl);
                MemorySegment.copy(payload, ValueLayout.JAVA_BYTE, 0, bytes, hl, bytes.length - hl);
                boolean taken = target.deliver(new Msg(id, bytes, hl, owner.plugin.namesSenders ? connection : 0));
                if (taken && reportedWhileTaking != null) events.peerFailed(reportedWhileTaking);
                return taken;
            } finally {
                owner.exit();
            }
        }

        @Override
        public int maxHeaderSize() {
            Throwable error = owner.plugin.limitsError;
            if (error != null) throw LoopbackTransport.<RuntimeException>sneaky(error);
            return owner.plugin.maxHeader;
        }

        @Override
        public long maxPayloadSize() {
            return owner.plugin.maxPayload;
        }

        @Override
        public String maxPayloadSizeRemedy() {
            if (owner.plugin.payloadRemedy instanceof RuntimeException fault) throw fault;
            return (String) owner.plugin.payloadRemedy;
        }

        @Override
        public void checkPeer() {
            owner.enter();
            try {
                probes.incrementAndGet();
                probedOn = Thread.currentThread();
                if (!owner.plugin.probesPeers) throw new dev.conduit.spi.NotSupportedException("loopback: no keepalive probe");
                if (owner.plugin.probeAndReportUnderOneLock) {
                    owner.probesBegun.incrementAndGet();
                    synchronized (owner.pluginLock) {
                        probeTarget();
                    }
                    return;
                }
                probeTarget();
            } finally {
                owner.exit();
            }
        }

        private void probeTarget() {
            RuntimeException fault = owner.plugin.probeFault;
            if (fault != null) throw fault;
            Error error = probeError;
            if (error != null) throw error;
            if (target.dead && !reported) {
                reported = true;
                throw new PeerFailedException(PeerFailedException.Reason.DIED, "loopback peer " + target.key + " found dead by the keepalive probe");
            }
        }

        private MemorySegment local(RemoteRegion r) {
            rmaCalls.incrementAndGet();
            lastRegionMayFault = r.mayFault();
            if (target.dead) throw new PeerFailedException(PeerFailedException.Reason.DIED, "loopback peer " + target.key + " is dead");
            String refused = owner.plugin.refusesRegions;
            if (refused != null) throw new dev.conduit.spi.NotSupportedException(refused);
            // As the shared-memory transports: a region reaches them only through a mapping here.
            MemorySegment segment = r.localSegment();
            if (segment == null) {
                throw new dev.conduit.spi.NotSupportedException("loopback reaches peers in this process only; region of plugin '"
                        + r.pluginName() + "' is not mapped here");
            }
            owner.plugin.whileRma.run();
            return segment;
        }

        @Override
        public void put(MemorySegment source, RemoteRegion target, long offset) {
            owner.enter();
            try {
                MemorySegment.copy(source, 0, local(target), offset, source.byteSize());
            } finally {
                owner.exit();
            }
        }

        @Override
        public void get(RemoteRegion source, long offset, MemorySegment destination) {
            owner.enter();
            try {
                MemorySegment.copy(local(source), offset, destination, 0, destination.byteSize());
            } finally {
                owner.exit();
            }
        }

        @Override
        public long fetchAdd(RemoteRegion target, long offset, long delta) {
            owner.enter();
            try {
                return (long) LONG.getAndAdd(local(target), offset, delta);
            } finally {
                owner.exit();
            }
        }

        @Override
        public long compareAndSwap(RemoteRegion target, long offset, long expected, long desired) {
            owner.enter();
            try {
                return (long) LONG.compareAndExchange(local(target), offset, expected, desired);
            } finally {
                owner.exit();
            }
        }

        @Override
        public void flush() {
            owner.enter();
            try {
                rmaCalls.incrementAndGet();
            } finally {
                owner.exit();
            }
        }

        @Override
        public void close() {
            closeCalls.incrementAndGet();
            owner.enter();
            try {
                if (closed) return;
                closed = true;
                closedDuringProgress = owner.inProgress;
                owner.plugin.closes.add("endpoint#" + number);
            } finally {
                owner.exit();
            }
            Throwable failure = owner.plugin.endpointCloseFails.apply(number);
            if (failure != null) throw LoopbackTransport.<RuntimeException>sneaky(failure);
        }
    }
}
