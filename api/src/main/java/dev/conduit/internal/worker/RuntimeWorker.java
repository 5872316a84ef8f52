package dev.conduit.internal.worker;

import dev.conduit.Endpoint;
import dev.conduit.EndpointErrorHandler;
import dev.conduit.MessageHandler;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.internal.RuntimeKeys;
import dev.conduit.internal.RuntimePluginContext;
import dev.conduit.internal.config.ConfigResolver;
import dev.conduit.internal.CloseFailures;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.discovery.PluginRegistry;
import dev.conduit.internal.threading.OverlapCheck;
import dev.conduit.internal.threading.OwnerCheck;
import dev.conduit.internal.threading.PassThrough;
import dev.conduit.internal.threading.PlatformHandOff;
import dev.conduit.internal.threading.RuntimeLock;
import dev.conduit.internal.threading.ThreadConfinement;
import dev.conduit.internal.threading.ThreadGuard;
import dev.conduit.internal.threading.ThreadNames;
import dev.conduit.internal.threading.ThreadPolicies;
import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConcurrentUseException;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MappedMemoryFault;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RemoteMemory;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The runtime's worker: one transport of every selected plugin that provides one, all behind one
 * thread-mode guard, as a UCP worker over its UCT interfaces. It owns what the application sees of
 * messaging — the address, endpoints, the handler table, await — and enforces on top of every
 * plugin: the guard on every call, order and exactly-once with local queuing, failure reporting.
 *
 * <p>Every application call enters the guard ({@link #enter()}), except {@link #signal()}. A
 * handler runs inside the progress call that delivered it, so its calls re-enter the guard; when a
 * thread-confined plugin delivers on its own thread (policy {@code CONFINED_THREAD}), that thread
 * acts for the progress caller, who holds the guard and waits, so its calls skip the guard.
 */
public final class RuntimeWorker implements Worker {

    private static final System.Logger LOG = System.getLogger("dev.conduit.worker");
    /** Longest sleep in the preferred transport when others must be progressed too. */
    static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** Longest sleep with no transport that can sleep, with queued messages, or under the runtime lock. */
    static final long SHORT_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** How long {@code Conduit.close()} waits for the threads using its workers to close them (requestCloseFromConduit). */
    static final long OWNER_CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final VarHandle STATE;
    private static final VarHandle SIGNALS_IN_FLIGHT;
    private static final VarHandle AWAITING;
    private static final VarHandle IN_AWAIT;

    // The flags and the count that the word state holds.
    /** Set by the one call that closes (closeNow), as it starts; never cleared. */
    private static final long CLOSED = 1;
    /** Set by {@link #requestCloseFromConduit}, after it wrote the deadline: the outermost call of a thread using the worker closes it (exit); never cleared. */
    private static final long CLOSE_REQUESTED = 1 << 1;
    /** Set, under the lock of {@link #deferredCloses}, when a close is added to it; cleared, under it, by the progress that runs them. */
    private static final long CLOSES_DEFERRED = 1 << 2;
    /** Set when an endpoint failed; cleared by the progress that calls the error handlers, before it looks at the endpoints. */
    private static final long FAILURES_TO_REPORT = 1 << 3;
    /** Set by the Conduit's {@link Keepalive} once per keepalive.interval; cleared by the progress round that looks at the peers. */
    private static final long KEEPALIVE_DUE = 1 << 4;
    /** The upper half counts the endpoints with locally queued messages: added to as an endpoint's local queue fills or empties. */
    private static final long BACKLOG_UNIT = 1L << 32;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(RuntimeWorker.class, "state", long.class);
            SIGNALS_IN_FLIGHT = MethodHandles.lookup().findVarHandle(RuntimeWorker.class, "signalsInFlight", int.class);
            AWAITING = MethodHandles.lookup().findVarHandle(RuntimeWorker.class, "awaiting", int.class);
            IN_AWAIT = MethodHandles.lookup().findVarHandle(RuntimeWorker.class, "inAwait", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final ThreadMode mode;
    private final ThreadGuard guard;
    private final ThreadPolicy policy;
    private final Transport[] transports;
    /** The worker's transport when it has only one (most do): {@link #progress} then calls it without a loop. Else null. */
    private final Transport sole;
    private final String[] transportNames;
    /** What the probe of each selected plugin ruled out here, with why: a transport left out, RMA or atomics refused. */
    private final Map<String, Map<Capability, String>> ruledOutHere;
    /** Immutable once built: why a transport a peer offers is missing here, for a connect's refusal. */
    private final PluginRegistry plugins;
    private final boolean[] rma;
    private final boolean[] atomics;
    /** The transports that reach memory of other hosts ({@code CROSS_HOST}): they need no mapping of a peer region here. */
    private final Set<String> crossHost;
    /** The most preferred transport with WAKEUP, or -1. */
    private final int wakeup;
    /**
     * Whether a virtual thread's {@link #await} sleeps in that transport on a platform thread
     * ({@link PlatformHandOff}): its plugin takes calls from a thread other than its creator's
     * ({@code SERIALIZED} or {@code MULTI}) and is not confined, whose thread sleeps for the caller already.
     */
    private final boolean wakeupHandedOff;
    /** The payloads kept past their handlers ({@code Message.keepPayload()}), which the worker's close closes; under its monitor. */
    private final java.util.Set<AutoCloseable> keptPayloads = new java.util.HashSet<>();
    /** Whether a transport is confined to a thread of its own (its handlers run there). */
    private final boolean confining;
    /** Whether calls may run concurrently ({@code PASS_THROUGH}): endpoints then lock their own state. */
    private final boolean concurrent;
    private final RemoteMemory remoteMemory;
    private final Consumer<AutoCloseable> onClose;
    private final MessageDispatch dispatch;
    private final long idHigh;
    private final long idLow;
    private volatile WorkerAddress address;
    /**
     * What a progress call must see to besides its transports, in one word so that the common call
     * reads it once and finds zero ({@link #progress}): the flags {@link #CLOSED},
     * {@link #CLOSE_REQUESTED}, {@link #CLOSES_DEFERRED}, {@link #FAILURES_TO_REPORT} and
     * {@link #KEEPALIVE_DUE} in the lower half, the count of backlogged endpoints in the upper ({@link #BACKLOG_UNIT}). Every
     * change is an atomic read-modify-write through STATE ({@code getAndBitwiseOr},
     * {@code getAndBitwiseAnd}, {@code getAndAdd}), so that none loses another's, and a volatile
     * one: what was written before it (a deferred close in its list, an endpoint's failure, the
     * close request's deadline) is seen by whoever reads the bit. A count that goes below zero for a
     * moment never reaches the flags: adding multiples of 2<sup>32</sup> leaves the lower half as it is.
     *
     * <p>Progress reads it inside the guard, whose entry sees what the previous holder did (a
     * SERIALIZED worker's send that queued locally on another thread). Only {@code CLOSE_REQUESTED},
     * {@code KEEPALIVE_DUE} and an endpoint's failure come from threads outside the guard at any
     * time; a failure or a keepalive is handled by the round that reads its bit, this one or the
     * next, as before, and a close request by the call's {@link #exit}, which reads the word again as
     * it leaves.
     */
    private volatile long state;
    /** Set by the first {@link #closeFromConduit}. */
    private final AtomicBoolean closedForConduit = new AtomicBoolean();
    /** Set when the close (closeNow) has finished, successfully or not. */
    private volatile boolean closeDone;
    /** What the close threw, for the calls and the Conduit close that come after it. */
    private volatile Throwable closeFailure;
    /** Signals between their check of {@link #CLOSED} and their return: through SIGNALS_IN_FLIGHT. */
    @SuppressWarnings("unused")
    private volatile int signalsInFlight;
    /** Threads in {@link #await}'s slices, through AWAITING: a close wakes them only then ({@link #wakeAwaitingThreadAsItCloses}). */
    @SuppressWarnings("unused")
    private volatile int awaiting;
    /**
     * The thread inside {@link #await} of a {@code SERIALIZED} worker, else null: the call of
     * another thread that overlaps it says so ({@link #enter}). Opaque through IN_AWAIT: it only
     * words that error, so an await pays a plain store for it, not a fence.
     */
    @SuppressWarnings("unused")
    private Thread inAwait;
    /** Until when {@link #closeFromConduit} waits for that; written before {@link #CLOSE_REQUESTED}. */
    private long closeRequestDeadline;
    /** The thread whose {@code Conduit.close()} closed or asked to close this worker, for the message of later calls. */
    private volatile String closedByConduitOn;

    /** Turns an interrupt of a thread asleep in {@link #await} into a {@link #signal()}: a transport's sleep may not see it. */
    private final InterruptWake interruptWake = new InterruptWake(this::signal);

    private final Object endpointsLock = new Object();
    /**
     * The segments the local queues of this worker's endpoints keep for reuse, shared: a worker with
     * an endpoint per subscriber keeps {@link PendingQueue#RETAIN} bytes once their backlogs drained,
     * not that much per endpoint.
     */
    final PendingQueue.Spares pendingSpares = new PendingQueue.Spares();
    /** The buffer this worker's endpoints encode into when a send cannot go to the transport in place, shared likewise. */
    final RuntimeEndpoint.SharedEncodingBuffer encodingBuffer;
    /** Open endpoints, oldest first; copied on write (connect and close are rare, progress reads it). */
    private volatile RuntimeEndpoint[] endpoints = new RuntimeEndpoint[0];
    /** Transport endpoints a handler closed while their transport's progress was on the stack. */
    private final List<DeferredClose> deferredCloses = new ArrayList<>();

    /** A transport endpoint to close once no transport's progress is on the stack, with its transport's name for its failure. */
    private record DeferredClose(String transport, TransportEndpoint endpoint) {
    }
    /** For {@link #await} without a WAKEUP transport. */
    private final AtomicBoolean signalled = new AtomicBoolean();
    private volatile Thread sleeper;
    /** The guard when it is the runtime lock ({@code MULTI} over a plugin that does not declare it), else null. */
    private final RuntimeLock runtimeLock;
    /** Set while a thread of {@link #await} sleeps (or is about to) holding {@link #runtimeLock}: see {@link #wakeSleeperUnderLock}. */
    private volatile boolean sleepingUnderLock;

    private RuntimeWorker(ThreadMode mode, ThreadGuard guard, ThreadPolicy policy, List<Transport> transports, List<PluginRecord> plugins,
                          PluginRegistry registry, boolean confining, RemoteMemory remoteMemory, MessageDispatch dispatch,
                          Consumer<AutoCloseable> onClose) {
        this.mode = mode;
        Map<String, Map<Capability, String>> ruledOut = new java.util.HashMap<>();
        for (PluginRecord r : registry.selected()) ruledOut.put(r.name(), r.unsupportedHere());
        this.ruledOutHere = Map.copyOf(ruledOut);
        this.plugins = registry;
        this.guard = guard;
        this.runtimeLock = guard instanceof RuntimeLock lock ? lock : null;
        if (runtimeLock != null) runtimeLock.wakeHolderWith(this::wakeSleeperUnderLock);
        this.policy = policy;
        this.transports = transports.toArray(Transport[]::new);
        this.sole = this.transports.length == 1 ? this.transports[0] : null;
        int n = plugins.size();
        this.transportNames = new String[n];
        this.rma = new boolean[n];
        this.atomics = new boolean[n];
        Set<String> reachOtherHosts = new HashSet<>();
        int w = -1;
        for (int i = 0; i < n; i++) {
            PluginRecord r = plugins.get(i);
            transportNames[i] = r.name();
            rma[i] = r.offers(Capability.RMA);
            atomics[i] = r.offers(Capability.ATOMICS);
            if (r.capabilities().contains(Capability.CROSS_HOST)) reachOtherHosts.add(r.name());
            if (w < 0 && r.offers(Capability.WAKEUP)) w = i;
        }
        this.crossHost = Set.copyOf(reachOtherHosts);
        this.wakeup = w;
        this.wakeupHandedOff = w >= 0 && !(this.transports[w] instanceof ConfinedTransport)
                && (plugins.get(w).threadModes().contains(ThreadMode.SERIALIZED) || plugins.get(w).threadModes().contains(ThreadMode.MULTI));
        this.confining = confining;
        this.concurrent = guard.policy() == ThreadPolicy.PASS_THROUGH;
        this.encodingBuffer = new RuntimeEndpoint.SharedEncodingBuffer(concurrent);
        this.remoteMemory = remoteMemory;
        this.dispatch = dispatch;
        this.onClose = onClose;
        long hi;
        long lo;
        do {
            hi = RANDOM.nextLong();
            lo = RANDOM.nextLong();
        } while (hi == 0 && lo == 0);
        this.idHigh = hi;
        this.idLow = lo;
    }

    /**
     * Opens a transport of every selected plugin with {@link Capability#AM}, choosing the guard for
     * {@code mode} from what those plugins declare. A plugin whose probe ruled its transport out
     * here ({@code Availability.without(AM, why)}: memfd on a read-only shared directory, which still
     * imports) is left out, and named with its reason when a peer offers only it.
     */
    public static RuntimeWorker open(ThreadMode mode, PluginRegistry plugins, ConfigResolver config, Path sharedDirectory,
                                     RemoteMemory remoteMemory, Consumer<AutoCloseable> onClose) {
        List<PluginRecord> withTransport = transports(plugins);
        Map<String, Set<ThreadMode>> declared = declaredModes(withTransport);
        Map<String, Boolean> confined = confinement(mode, withTransport, config.get(RuntimeKeys.THREAD_CONFINE));
        ThreadGuard guard = ThreadPolicies.guard(mode, declared, "worker");
        boolean anyConfined = confined.containsValue(true);
        ThreadPolicy policy = ThreadPolicies.reported(guard, anyConfined);
        MessageDispatch dispatch = new MessageDispatch(guard.policy() == ThreadPolicy.PASS_THROUGH);
        List<Transport> opened = new ArrayList<>();
        List<TransportSink> sinks = new ArrayList<>();
        try {
            for (PluginRecord r : withTransport) {
                TransportSink sink = new TransportSink(dispatch, r.name());
                TransportContext context = new WorkerTransportContext(RuntimePluginContext.of(config, sharedDirectory, r.name()),
                        ThreadPolicies.calledIn(mode, r.threadModes(), confined.get(r.name())), sink, remoteMemory);
                Supplier<Transport> open = () -> r.plugin().openTransport(context);
                if (withTransport.size() > 1) open = sayingItCanBeLeftOut(r.name(), open);
                Supplier<Transport> opening = open;
                Transport t;
                if (confined.get(r.name())) {
                    ThreadConfinement thread = new ThreadConfinement("conduit-confined-" + r.name());
                    try {
                        t = new ConfinedTransport(thread.call(() -> r.open("openTransport()", opening)), thread);
                    } catch (Throwable e) {
                        thread.close();
                        throw e;
                    }
                } else {
                    t = r.open("openTransport()", opening);
                }
                opened.add(t);
                sinks.add(sink);
            }
        } catch (Throwable e) { // precise rethrow: what the plugin threw, also a checked one undeclared (Kotlin, @SneakyThrows)
            // An Error too (a plugin missing a class of its own): the transports opened before it
            // hold queues, mappings and files in the shared directory.
            for (Transport t : opened.reversed()) {
                try {
                    t.close();
                } catch (Throwable suppressed) { // a checked one too: the transports before it are still to close
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
        RuntimeWorker worker = new RuntimeWorker(mode, guard, policy, opened, withTransport, plugins, anyConfined, remoteMemory,
                dispatch, onClose);
        // Before the worker is returned, so before any progress call: until then a transport delivers nothing.
        for (int i = 0; i < sinks.size(); i++) sinks.get(i).bind(worker, i);
        return worker;
    }

    /**
     * How a worker in {@code mode} over the selected {@code plugins} would be guarded, without opening it.
     *
     * @throws ConduitException when such a worker would be refused
     */
    public static ThreadPolicy policyFor(ThreadMode mode, PluginRegistry plugins, boolean confineAllowed) {
        List<PluginRecord> withTransport = transports(plugins);
        Map<String, Boolean> confined = confinement(mode, withTransport, confineAllowed);
        return ThreadPolicies.reported(ThreadPolicies.guard(mode, declaredModes(withTransport), "worker"), confined.containsValue(true));
    }

    private static List<PluginRecord> transports(PluginRegistry plugins) {
        List<PluginRecord> withTransport = plugins.selected().stream().filter(r -> r.offers(Capability.AM)).toList();
        if (withTransport.isEmpty()) {
            throw new ConduitException("no selected plugin provides a transport (capability AM) here; " + plugins.whyNoneOffers(Capability.AM));
        }
        return withTransport;
    }

    private static Map<String, Set<ThreadMode>> declaredModes(List<PluginRecord> plugins) {
        Map<String, Set<ThreadMode>> declared = new LinkedHashMap<>();
        for (PluginRecord r : plugins) declared.put(r.name(), r.threadModes());
        return declared;
    }

    private static Map<String, Boolean> confinement(ThreadMode mode, List<PluginRecord> plugins, boolean allowed) {
        Map<String, Boolean> confined = new LinkedHashMap<>();
        for (PluginRecord r : plugins) {
            confined.put(r.name(), ThreadPolicies.needsConfinement(r.name(), r.threadModes(), mode, allowed));
        }
        return confined;
    }

    // ------------------------------------------------------------------ guard

    /**
     * Enters the guard for an application call; returns whether it did (pass the answer to
     * {@link #exit(boolean)}). A confined transport's thread running a handler acts for the guard's
     * holder and does not enter.
     */
    boolean enter() {
        if (actsForTheHolder()) return false;
        try {
            guard.enter();
        } catch (ConcurrentUseException inUse) {
            // The thread inside may be closing this worker for its Conduit: say that, not "overlap".
            if (has(CLOSE_REQUESTED | CLOSED)) throw closedException(inUse);
            Thread sleeper = (Thread) IN_AWAIT.getOpaque(this);
            if (sleeper != null && sleeper != Thread.currentThread()) throw overlapsAwait(inUse, sleeper);
            throw inUse;
        }
        return true;
    }

    /**
     * A call that overlaps another thread's {@code await} on a {@code SERIALIZED} worker: that
     * thread keeps the worker until its await returns, up to its whole timeout, so serializing the
     * calls takes a {@link #signal()}, which no guard refuses.
     */
    private static ConcurrentUseException overlapsAwait(ConcurrentUseException inUse, Thread sleeper) {
        return new ConcurrentUseException(inUse.getMessage() + " Thread " + ThreadNames.of(sleeper) + " is in await(), which keeps the "
                + "worker until it returns, up to its timeout: call signal() (any thread may, at any time) to make it return, and "
                + "make this call once it has; or create the worker with ThreadMode.MULTI, under which a call waits for the worker "
                + "and wakes a thread asleep in await() to have it.");
    }

    /**
     * {@link #enter()} for {@link #await}: under the runtime lock, a thread that comes to sleep
     * waits its turn without waking a thread asleep under the lock ({@link RuntimeLock#enterToSleep}).
     */
    private boolean enterToAwait() {
        if (runtimeLock == null) return enter();
        if (actsForTheHolder()) return false;
        runtimeLock.enterToSleep();
        return true;
    }

    /** Whether this thread is a confined transport's running a handler: it acts for the guard's holder, and enters nothing. */
    private boolean actsForTheHolder() {
        return confining && dispatch.handling(Thread.currentThread());
    }

    /**
     * Leaves the guard. After {@code Conduit.close()} asked for it ({@link #requestCloseFromConduit}),
     * the outermost call of a thread using the worker closes it first: here, on a thread the guard
     * let in, with no handler or {@code PayloadEncoder} running on any thread. Under
     * {@code PASS_THROUGH} that is the last of the threads in call-backs when the close was asked
     * for from one: until 2026-12-07 any thread's call closed it, under the handler that asked and
     * its transport's progress. A failure of that close is kept ({@link #closeFailure}) and
     * reported by the next call and by the {@code Conduit}'s close.
     */
    void exit(boolean entered) {
        if (!entered) return;
        try {
            if ((state & (CLOSE_REQUESTED | CLOSED)) == CLOSE_REQUESTED && !dispatch.calledBackOnAnyThread()) closeQuietly();
        } finally {
            guard.exit();
        }
    }

    private void closeQuietly() {
        try {
            closeGuarded();
        } catch (RuntimeException | Error keptInCloseFailure) {
            // closeNow kept it: the next call and Conduit.close() report it
        }
    }

    void ensureOpen() {
        if (has(CLOSED)) throw closedException(null);
    }

    /** Whether any of the flags {@code bits} of {@link #state} is set. */
    private boolean has(long bits) {
        return (state & bits) != 0;
    }

    private IllegalStateException closedException(Throwable cause) {
        String on = closedByConduitOn;
        IllegalStateException closedNow = new IllegalStateException(on == null
                ? "worker is closed: it takes no more calls; make another with Conduit.newWorker to go on"
                : "worker is closed: its Conduit was closed (Conduit.close() on thread " + on + "); open another Conduit and make a "
                        + "worker of it to go on", cause);
        Throwable failed = closeFailure;
        if (failed != null) closedNow.addSuppressed(failed);
        return closedNow;
    }

    /**
     * {@code e} as the worker's closed exception (its cause) when the worker is closed: a transport
     * that another thread's close closed under the call throws its own {@code IllegalStateException},
     * which is no failure of the transport; else {@code e}. Until 2026-12-07 an await that the close
     * overtook between its look at the worker and its sleep threw the transport's
     * (EndpointThreadingTest#anAwaitThatAnotherThreadsCloseOvertakesBeforeItsSleepSaysTheWorkerIsClosed).
     */
    private RuntimeException closedOr(RuntimeException e) {
        return has(CLOSED) ? closedException(e) : e;
    }

    /** Refuses {@code call} from inside a handler or a {@code PayloadEncoder} of this worker, whose caller holds the worker. */
    private void ensureNotCalledBack(MessageDispatch.Delivery d, String call) {
        if (d.depth == 0) return;
        // Nothing is delivered while an encoder runs (this refuses it): an encoder on this thread is the innermost call-back.
        if (!encodingOnCurrentThread()) {
            throw new IllegalStateException(call + " was called from a message or error handler; return from the handler instead "
                    + "(the progress call that runs it goes on)");
        }
        // Progress would run the transports, and their handlers, while the encoder's message is half written in the transport.
        throw new IllegalStateException(call + " was called from a PayloadEncoder; it must not (its message is under way): "
                + "call it after send(...) returns");
    }

    /**
     * Whether the calling thread is inside a {@code PayloadEncoder} of a send on one of this
     * worker's endpoints: a close now would unmap, under that send, the memory its claimed record
     * lies in (as the endpoint's own close would, which it refuses).
     */
    private boolean calledBackOnCurrentThread() {
        return dispatch.handlingOnCurrentThread() || encodingOnCurrentThread();
    }

    /** The calling thread's delivery context: a send counts its encoder there ({@link MessageDispatch.Delivery#depth}). */
    MessageDispatch.Delivery delivery() {
        return dispatch.delivery();
    }

    private boolean encodingOnCurrentThread() {
        for (RuntimeEndpoint ep : endpoints) {
            if (ep.encodingOnCurrentThread()) return true;
        }
        return false;
    }

    // ------------------------------------------------------------------ what the application sees

    @Override
    public ThreadMode threadMode() {
        return mode;
    }

    @Override
    public ThreadPolicy threadPolicy() {
        return policy;
    }

    /** The plugins whose transports this worker drives, most preferred first. */
    public List<String> transportNames() {
        return List.of(transportNames);
    }

    @Override
    public long unhandledMessages() {
        return dispatch.unhandled();
    }

    @Override
    public WorkerAddress address() {
        boolean entered = enter();
        try {
            ensureOpen();
            WorkerAddress a = address;
            if (a == null) address = a = buildAddress();
            return a;
        } finally {
            exit(entered);
        }
    }

    /**
     * {@code open}, whose plugin's own refusal (a plain {@link ConduitException}, naming its cause and remedy) also says
     * that the worker could open without that transport: every selected transport opens in each worker, so one that
     * cannot (posix without room for its queue in a small shared directory, where memfd's queue needs none) fails the
     * worker, and its remedy named only its own key (helper h6). A subclass says something of its own, and is kept.
     */
    private static Supplier<Transport> sayingItCanBeLeftOut(String transport, Supplier<Transport> open) {
        return () -> {
            try {
                return open.get();
            } catch (ConduitException e) {
                if (e.getClass() != ConduitException.class) throw e;
                throw new ConduitException(e.getMessage() + "; or open workers without '" + transport + "' (every selected transport "
                        + "opens in each worker): leave it out, transports=^" + transport + " (CONDUIT_TRANSPORTS)", e);
            }
        };
    }

    private WorkerAddress buildAddress() {
        List<AddressFormat.Entry> entries = new ArrayList<>();
        for (int i = 0; i < transports.length; i++) {
            byte[] bytes;
            try {
                bytes = transports[i].address();
            } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw RuntimeEndpoint.thrownBy(transportNames[i], "address", e);
            }
            if (bytes == null) throw new ConduitException("transport '" + transportNames[i] + "' gave no address (null)");
            if (bytes.length > AddressFormat.MAX_TRANSPORT_ADDRESS) {
                throw new ConduitException("transport '" + transportNames[i] + "' gave an address of " + bytes.length + " bytes; at most "
                        + AddressFormat.MAX_TRANSPORT_ADDRESS + " fit in a worker address (a plugin bug: report it to its author)");
            }
            entries.add(new AddressFormat.Entry(transportNames[i], bytes));
        }
        try {
            return WorkerAddress.fromBytes(AddressFormat.encode(idHigh, idLow, entries));
        } catch (IllegalArgumentException e) {
            throw new ConduitException("this worker's transports do not fit in a worker address: " + e.getMessage()
                    + ". Select fewer transports (CONDUIT_TRANSPORTS).", e);
        }
    }

    @Override
    public Endpoint connect(WorkerAddress peer) {
        return connect(peer, null);
    }

    @Override
    public Endpoint connect(WorkerAddress peer, EndpointErrorHandler onError) {
        Objects.requireNonNull(peer, "peer");
        boolean entered = enter();
        try {
            ensureOpen();
            AddressFormat.Decoded decoded = AddressFormat.decode(peer.toBytes());
            WorkerEvents.Connect event = new WorkerEvents.Connect();
            event.begin();
            List<String> reasons = new ArrayList<>();
            List<Throwable> causes = new ArrayList<>();
            for (int i = 0; i < transports.length; i++) {
                String name = transportNames[i];
                AddressFormat.Entry entry = decoded.entry(name);
                if (entry == null) continue;
                RuntimeEndpoint ep;
                try {
                    ep = connectThrough(i, entry.address(), peer.toString(), onError, false);
                } catch (RuntimeException | LinkageError e) {
                    if (has(CLOSED)) throw closedException(e); // the close overtook it: no failure of the transport
                    reasons.add("'" + name + "': " + describe(e));
                    causes.add(e);
                    continue;
                }
                register(ep);
                commit(event, peer.toString(), name, reasons);
                if (!reasons.isEmpty()) logFallback(peer, name, reasons);
                return ep;
            }
            commit(event, peer.toString(), "", reasons);
            // Every transport found the peer failed (dead, closed, refusing): the failure an application's failover catches.
            boolean peerFailed = !causes.isEmpty() && causes.stream().allMatch(PeerFailedException.class::isInstance);
            String why = connectFailure(peer, decoded, reasons);
            ConduitException failure = peerFailed ? new PeerFailedException(sharedReason(causes), why) : new ConduitException(why);
            causes.forEach(failure::addSuppressed);
            throw failure;
        } finally {
            exit(entered);
        }
    }

    /**
     * Connects through transport {@code i} to the peer whose address for it is {@code address};
     * inside the guard. The caller registers the endpoint ({@link #register}), which fails on a
     * worker whose close overtook the connect; and the caller throws {@link #closedException} for
     * what the transport threw once that close had begun (a transport it closed throws
     * {@link IllegalStateException}): neither is a failure of the transport.
     *
     * @throws RuntimeException what the transport's connect threw: a {@link ConduitException} as it is, anything else but an
     *                          {@link IllegalStateException} (a checked exception thrown undeclared too) wrapped in one that
     *                          names it as most likely the plugin's fault ({@link PluginRecord#failed}), as for a plugin that
     *                          returned no endpoint; what reading the new endpoint's limits threw, once that endpoint is
     *                          closed (a checked exception so wrapped)
     */
    private RuntimeEndpoint connectThrough(int i, byte[] address, String peer, EndpointErrorHandler onError, boolean reply) {
        String name = transportNames[i];
        RuntimeEndpoint.Events events = new RuntimeEndpoint.Events(name);
        TransportEndpoint te;
        try {
            te = transports[i].connect(new PayloadReader(address, 0, address.length, "address." + name + ".", AddressFormat.KIND), events);
        } catch (IllegalStateException e) {
            throw e; // closed under the call, as for every transport call
        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): named, and the next transport tried
            throw PluginRecord.failed(name, "Transport.connect", e);
        }
        if (te == null) throw PluginRecord.returnedNull(name, "Transport.connect", "an endpoint", "TransportContract");
        RuntimeEndpoint ep;
        try {
            ep = new RuntimeEndpoint(this, name, peer, te, rma[i], atomics[i], concurrent, onError, reply);
        } catch (RuntimeException | LinkageError e) { // it reads the limits: plugin code, failing as its connect may
            closeUnusable(name, te, e);
            throw e;
        } catch (Exception e) { // a checked one, thrown undeclared: named as its connect's would be, not let through undeclared
            RuntimeException named = PluginRecord.failed(name, "TransportEndpoint.maxHeaderSize or maxPayloadSize", e);
            closeUnusable(name, te, named);
            throw named;
        }
        events.bind(ep);
        return ep;
    }

    /** Closes {@code te}, which a connect made but cannot use as it fails with {@code failure}: the close's own failure goes into it. */
    private void closeUnusable(String transport, TransportEndpoint te, Throwable failure) {
        try {
            closeTransportEndpoint(transport, te); // after the transport's step when a handler connects
        } catch (Exception | Error suppressed) { // a checked one too, thrown undeclared: kept with the failure, not thrown instead
            failure.addSuppressed(suppressed);
        }
    }

    /**
     * Connects through transport {@code i} to the worker that sent the messages of its connection
     * {@code sender}, at the address that sender announced ({@code Transport.senderAddress}): the
     * endpoint a handler answers through ({@link TransportSink#replyEndpoint}).
     *
     * @throws dev.conduit.spi.NotSupportedException when the transport does not give senders' addresses
     * @throws PeerFailedException when the transport no longer delivers from that connection, or its connect found the sender gone
     * @throws ConduitException    when the sender cannot be reached, naming the transport and why
     * @throws IllegalStateException when the worker is closed, also by a close that overtook the connect
     */
    RuntimeEndpoint connectToSender(int i, long sender) {
        String name = transportNames[i];
        boolean entered = enter();
        try {
            ensureOpen();
            String peer = "the sender of connection " + Long.toHexString(sender) + " over '" + name + "'";
            byte[] address;
            try {
                address = transports[i].senderAddress(sender);
            } catch (NotSupportedException e) {
                String reason = e.getMessage();
                // The SPI's default, and a plugin's own message that says as much, name the remedy already: said once.
                var n = new NotSupportedException(reason != null && reason.contains("worker.address().toBytes()")
                        ? "transport '" + name + "': " + reason
                        : "transport '" + name + "' does not give the address of a message's sender, so this message cannot be "
                        + "answered through replyEndpoint(): have the request carry worker.address().toBytes() and connect to it"
                        + (reason == null ? "" : " (" + reason + ")"));
                n.initCause(e);
                throw n;
            } catch (Exception | LinkageError e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                throw cannotAnswer(peer + ": transport '" + name + "' failed to give the address the sender announced: " + describe(e), e);
            }
            if (address == null) {
                throw new PeerFailedException("cannot answer " + peer + ": that connection has ended (its sender closed it, or its "
                        + "worker closed or died), so there is nobody to answer");
            }
            WorkerEvents.Connect event = new WorkerEvents.Connect();
            event.begin();
            RuntimeEndpoint ep;
            try {
                ep = connectThrough(i, address, peer, null, true);
            } catch (RuntimeException | LinkageError e) {
                if (has(CLOSED)) throw closedException(e); // the close overtook it: no failure of the transport
                commit(event, peer, "", List.of("'" + name + "': " + describe(e)));
                throw cannotAnswer(peer + ": connecting to the address it announced failed: " + describe(e), e);
            }
            register(ep);
            commit(event, peer, name, List.of());
            return ep;
        } finally {
            exit(entered);
        }
    }

    /**
     * The action that releases the payload transport {@code i} is delivering on this thread, kept
     * where it lies ({@code Transport.keepDelivered}), or null when the transport cannot keep it.
     * Called from a handler, inside the transport's progress: the thread holds the worker already.
     * A checked exception the action throws undeclared (Kotlin, {@code @SneakyThrows}) is named as
     * the plugin's fault, so that {@code KeptPayload.close()} keeps the payload open for a later
     * close, as it does for an unchecked one: until 2026-12-07 it passed bare, and the payload read
     * closed but was never given back, its room in the transport's memory taken while the worker
     * lived (KeptPayloadTest#aReleaseThatThrowsACheckedExceptionUndeclaredIsNamedAndALaterCloseGivesThePayloadBack).
     *
     * @throws ConduitException when the transport fails to keep it, naming the transport
     * @throws IllegalStateException as the transport threw it: closed under the handler (a forced close)
     */
    Runnable keepDelivered(int i) {
        Runnable release;
        try {
            release = transports[i].keepDelivered();
        } catch (IllegalStateException e) {
            throw e; // closed under the call, as for every transport call: not the plugin's fault, and copying would not help
        } catch (Exception | LinkageError e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
            throw new ConduitException("transport '" + transportNames[i] + "' failed to keep the payload it delivered "
                    + "(Message.keepPayload()): " + describe(e) + "; copy the payload instead (payloadToArray(), copyPayload(...))", e);
        }
        if (release == null) return null;
        String plugin = transportNames[i];
        return () -> {
            try {
                release.run();
            } catch (RuntimeException e) {
                throw e; // as it is: KeptPayload.close keeps the payload open for a later close
            } catch (Exception e) { // a checked one, thrown undeclared (Kotlin, @SneakyThrows): past KeptPayload.close's catch
                throw PluginRecord.failed(plugin, "the release of a payload it kept (Transport.keepDelivered)", e);
            }
        };
    }

    /**
     * Holds {@code kept} until it is closed ({@link #forgetKept}) or the worker closes, which closes
     * it; on a closed worker it is closed at once.
     *
     * @throws IllegalStateException when the worker is closed
     */
    void keepUntilClosed(AutoCloseable kept) {
        synchronized (keptPayloads) {
            if (!has(CLOSED)) {
                keptPayloads.add(kept);
                return;
            }
        }
        IllegalStateException closedNow = new IllegalStateException("cannot keep the payload: the worker that received it was closed "
                + "while its handler ran");
        try {
            kept.close();
        } catch (Exception e) {
            closedNow.addSuppressed(e);
        }
        throw closedNow;
    }

    void forgetKept(AutoCloseable kept) {
        synchronized (keptPayloads) {
            keptPayloads.remove(kept);
        }
    }

    /** Closes the payloads still kept, so that their transports' release actions run before the transports close. */
    private RuntimeException closeKeptPayloads(RuntimeException failure) {
        AutoCloseable[] open;
        synchronized (keptPayloads) {
            open = keptPayloads.toArray(AutoCloseable[]::new);
        }
        for (AutoCloseable kept : open) {
            try {
                kept.close();
            } catch (Exception | Error e) {
                failure = collect(failure, e, "giving back the payloads kept from the worker's messages failed");
            }
        }
        return failure;
    }

    /**
     * Why a handler cannot answer {@code whom}: a {@link PeerFailedException} when the transport's
     * was one (the sender's worker is gone, and the transport has not ended the connection yet: the
     * same failure as an ended connection's, which an application handles as a sender's death), else
     * a {@link ConduitException}.
     */
    private static ConduitException cannotAnswer(String whomAndWhy, Throwable cause) {
        String why = "cannot answer " + whomAndWhy;
        return cause instanceof PeerFailedException failed ? new PeerFailedException(why, failed) : new ConduitException(why, cause);
    }

    /** The reason every transport's failure gives, or UNKNOWN when they differ: one transport's reason is no peer's. */
    private static PeerFailedException.Reason sharedReason(List<Throwable> peerFailures) {
        PeerFailedException.Reason first = ((PeerFailedException) peerFailures.getFirst()).reason();
        return peerFailures.stream().allMatch(f -> ((PeerFailedException) f).reason() == first) ? first : PeerFailedException.Reason.UNKNOWN;
    }

    /**
     * An INFO that {@code peer} was reached through {@code transport} only after the transports this
     * worker prefers failed, each with its reason: the endpoint works, but over a transport the
     * configuration ranked lower (posix, which trusts its peers, where memfd timed out, say), which
     * only the JFR event said before (helper h6). Not a WARNING: a peer on another host is reached by
     * RDMA after the shared-memory transports found no lease of it, as designed.
     */
    private void logFallback(WorkerAddress peer, String transport, List<String> reasons) {
        LOG.log(System.Logger.Level.INFO, () -> this + " connected to " + peer + " through '" + transport
                + "' after the transports it prefers failed: " + String.join("; ", reasons)
                + ". The order is the transports key (CONDUIT_TRANSPORTS); 'conduit info' shows each plugin's state");
    }

    private static void commit(WorkerEvents.Connect event, String peer, String transport, List<String> reasons) {
        if (event.shouldCommit()) {
            event.peer = peer;
            event.transport = transport;
            event.tried = reasons.size() + (transport.isEmpty() ? 0 : 1);
            event.failures = String.join("; ", reasons);
            event.commit();
        }
    }

    /** Why the probe of {@code transport}'s plugin ruled {@code capability} out here; null when it did not. */
    String whyNotHere(String transport, Capability capability) {
        return ruledOutHere.getOrDefault(transport, Map.of()).get(capability);
    }

    /** Whether {@code transport} reaches a peer's region without a mapping of it in this process: it reaches other hosts. */
    boolean reachesRegionsUnmapped(String transport) {
        return crossHost.contains(transport);
    }

    private String connectFailure(WorkerAddress peer, AddressFormat.Decoded decoded, List<String> reasons) {
        List<String> ours = List.of(transportNames);
        List<String> lacking = peer.transports().stream().filter(t -> !ours.contains(t)).toList();
        StringBuilder b = new StringBuilder("cannot connect to ").append(peer).append(": ");
        if (reasons.isEmpty()) {
            b.append("no transport in common: this worker has ").append(ours).append(", the peer offers ").append(peer.transports());
        } else {
            b.append("every transport tried failed, in this worker's order of preference: ").append(String.join("; ", reasons));
            if (!lacking.isEmpty()) b.append(". The peer also offers ").append(lacking).append(", which this worker has no transport for");
        }
        if (!lacking.isEmpty()) b.append(": ").append(String.join("; ", lacking.stream().map(plugins::whyNoTransport).toList()));
        assert decoded.entries().size() == peer.transports().size();
        return b.toString();
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return e instanceof ConduitException && m != null ? m : e.getClass().getName() + (m == null ? "" : ": " + m);
    }

    /**
     * Adds a connected endpoint to those the worker's close closes; or, when that close already took
     * them (under {@code PASS_THROUGH} it may run while another thread connects), closes it and
     * throws as every call on a closed worker does. The close takes the endpoints under
     * {@link #endpointsLock} after it set {@link #CLOSED}, so one of the two sees the other.
     */
    private void register(RuntimeEndpoint ep) {
        boolean closedMeanwhile;
        synchronized (endpointsLock) {
            closedMeanwhile = has(CLOSED);
            if (!closedMeanwhile) {
                RuntimeEndpoint[] now = endpoints;
                RuntimeEndpoint[] next = Arrays.copyOf(now, now.length + 1);
                next[now.length] = ep;
                endpoints = next;
            }
        }
        if (closedMeanwhile) {
            IllegalStateException refused = closedException(null);
            try {
                ep.close(false);
            } catch (RuntimeException | Error e) {
                refused.addSuppressed(e);
            }
            throw refused;
        }
        if (ep.isFailed()) failureToReport(); // failed while connecting
    }

    void removeEndpoint(RuntimeEndpoint ep) {
        synchronized (endpointsLock) {
            RuntimeEndpoint[] now = endpoints;
            for (int i = 0; i < now.length; i++) {
                if (now[i] == ep) {
                    RuntimeEndpoint[] next = new RuntimeEndpoint[now.length - 1];
                    System.arraycopy(now, 0, next, 0, i);
                    System.arraycopy(now, i + 1, next, i, now.length - i - 1);
                    endpoints = next;
                    return;
                }
            }
        }
    }

    @Override
    public void onMessage(int id, MessageHandler handler) {
        if ((id >>> 16) != 0) throw new IllegalArgumentException("active message id " + id + " is outside 0..65535");
        boolean entered = enter();
        try {
            ensureOpen();
            dispatch.setHandler(id, handler);
        } finally {
            exit(entered);
        }
    }

    // ------------------------------------------------------------------ progress

    /**
     * One round ({@link #progressOnce}). When the worker has one transport and {@link #state} is
     * zero (open, no close requested, nothing queued locally, no close deferred, no failure to
     * report), which is every call of a busy-polling loop with nothing to do, the round is that
     * transport's progress alone ({@link #progressSole}), without the loop over the transports
     * and the checks it needs: the guard, one read of {@code state}, the in-handler check, the
     * transport. What the transport's handlers leave to do is looked at after it, from
     * {@code state} again.
     */
    @Override
    public int progress() {
        boolean entered = enter();
        try {
            boolean alone = sole != null && state == 0;
            if (!alone) ensureOpen(); // a zero state says open
            MessageDispatch.Delivery d = dispatch.delivery();
            ensureNotCalledBack(d, "progress()");
            int events;
            try {
                events = alone ? progressSole(d) : progressOnce(d, -1);
            } catch (RuntimeException | Error e) {
                d.attachTo(e); // a plugin failed after a handler threw: lose neither
                throw e;
            }
            d.rethrow();
            return events;
        } finally {
            exit(entered);
        }
    }

    /**
     * One round: drain local queues, progress every transport but {@code skip} (stopping after one
     * whose handler threw), close what handlers closed, call error handlers. A transport that
     * throws keeps neither the others from progressing nor the round from completing: its
     * exception (the first one, with later ones suppressed) is thrown at the end of the round.
     * Until 2026-12-07 a checked exception a plugin threw undeclared left the round at once
     * (EndpointMessagingTest#aTransportThatThrowsACheckedExceptionKeepsNeitherTheOthersFromProgressingNorFailuresFromBeingReported).
     */
    private int progressOnce(MessageDispatch.Delivery d, int skip) {
        int events = 0;
        RuntimeException failure = null;
        if (backlogged()) {
            try {
                events += drainBacklogs();
            } catch (RuntimeException e) {
                failure = e; // the endpoint's messages stay queued; the transports still progress
            }
        }
        d.inTransport++;
        try {
            for (int i = 0; i < transports.length; i++) {
                if (i == skip) continue;
                try {
                    int handled = transports[i].progress();
                    if (handled >= 0) {
                        events += handled;
                    } else {
                        failure = withSuppressed(failure, negativeCount(transportNames[i], handled));
                    }
                } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): the round still ends
                    failure = withSuppressed(failure, RuntimeEndpoint.thrownBy(transportNames[i], "progress", e));
                } catch (InternalError e) {
                    failure = withSuppressed(failure, mappedMemoryFault(e, transportNames[i]));
                }
                if (d.failed()) break;
            }
        } finally {
            d.inTransport--;
        }
        return endRound(d, events, failure);
    }

    /**
     * {@link #progressOnce} for a worker of one transport when {@link #state} was zero: nothing to
     * drain, no other transport to progress, no failure to report from before.
     */
    private int progressSole(MessageDispatch.Delivery d) {
        int events = 0;
        RuntimeException failure = null;
        d.inTransport++;
        try {
            events = sole.progress();
            if (events < 0) {
                failure = negativeCount(transportNames[0], events);
                events = 0;
            }
        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): the round still ends
            failure = RuntimeEndpoint.thrownBy(transportNames[0], "progress", e);
        } catch (InternalError e) {
            failure = mappedMemoryFault(e, transportNames[0]);
        } finally {
            d.inTransport--;
        }
        // Its handlers may have closed endpoints, failed them, or queued messages locally; the next round drains those.
        return failure == null && state == 0 ? events : endRound(d, events, failure);
    }

    /**
     * A transport's progress that answered a negative count, failed as one that throws is, at the
     * end of the round. Added to the others' counts, it used to hide their events: progress() said
     * there was no work while handlers had run, and an await slept on past messages it delivered.
     */
    private static ConduitException negativeCount(String transport, int answer) {
        return PluginRecord.brokenAnswer(transport, "progress()", answer,
                "as the number of events it handled, which is 0 when there was nothing to do and never less", "TransportContract");
    }

    /**
     * The end of a round, once no transport's progress is on the stack: closes what handlers
     * closed, calls the error handlers of endpoints that failed, and throws the round's failure.
     */
    private int endRound(MessageDispatch.Delivery d, int events, RuntimeException failure) {
        if (has(CLOSES_DEFERRED)) {
            try {
                runDeferredCloses();
            } catch (RuntimeException e) {
                failure = withSuppressed(failure, e);
            }
        }
        if (has(KEEPALIVE_DUE)) {
            try {
                events += checkPeers(); // before the error handlers: a peer found dead here is reported in this round
            } catch (RuntimeException e) {
                failure = withSuppressed(failure, e);
            }
        }
        if (has(FAILURES_TO_REPORT)) {
            try {
                reportFailures(d);
            } catch (RuntimeException e) {
                failure = withSuppressed(failure, e);
            }
        }
        if (failure != null) throw failure;
        return events;
    }

    /**
     * A fault on memory a transport maps, as the exception it promises: HotSpot delivers a SIGBUS
     * in compiled code at the thread's next safepoint check ("a fault occurred in a recent unsafe
     * memory access operation in compiled Java code"), which may come after the transport's own
     * handler for it, as the transport returns. Any other {@code InternalError} is rethrown.
     */
    private static ConduitException mappedMemoryFault(InternalError e, String transport) {
        if (!MappedMemoryFault.is(e)) throw e;
        return new ConduitException("transport '" + transport + "': memory it maps faulted (SIGBUS), reported by the JVM as \""
                + e.getMessage() + "\" after the transport's own check: a file it maps was truncated by another process (posix; memfd "
                + "seals its chunks), its file system was full when a page was first touched, or another thread closed what it "
                + "maps during the access, which the JDK should have prevented (JDK-8364167) (docs/guarantees.md, §6)", e);
    }

    /** {@code first}, with {@code later} suppressed in it; or {@code later} when there was none. */
    private RuntimeException withSuppressed(RuntimeException first, RuntimeException later) {
        if (first == null) return later;
        dispatch.suppress(first, later);
        return first;
    }

    /**
     * Sends what endpoints queued locally. An endpoint whose transport throws keeps its messages
     * queued and does not keep the others from draining: its exception is thrown after them, a
     * fault on memory the transport maps ({@code InternalError}, which may come as its send
     * returns) as the {@code ConduitException} that names it, as its progress's is.
     */
    private int drainBacklogs() {
        int sent = 0;
        RuntimeException failure = null;
        for (RuntimeEndpoint ep : endpoints) {
            if (!ep.backlogged()) continue;
            try {
                sent += ep.drain();
            } catch (RuntimeException e) {
                failure = withSuppressed(failure, e);
            } catch (InternalError e) {
                failure = withSuppressed(failure, mappedMemoryFault(e, ep.transport()));
            }
        }
        if (failure != null) throw failure;
        return sent;
    }

    /**
     * Asks the next progress round to look at every endpoint's peer ({@link #checkPeers}): the
     * Conduit's {@link Keepalive}, once per keepalive.interval, from its own thread. A worker with
     * no endpoint is left alone.
     */
    void keepaliveDue() {
        if (endpoints.length > 0 && !has(KEEPALIVE_DUE)) STATE.getAndBitwiseOr(this, KEEPALIVE_DUE);
    }

    /**
     * The keepalive's round: asks each endpoint's transport whether its peer lives
     * ({@link RuntimeEndpoint#checkPeer}); one found dead is failed, and its error handler called
     * by this round, and counts as an event (an {@code await} that ran the round returns
     * {@code true}). A probe that throws an exception keeps the others from nothing: it is thrown
     * after them, as a transport's progress failure is, and so is a fault on memory it maps
     * ({@code InternalError}), as the {@code ConduitException} that names it. Another {@code Error}
     * (an {@code assert} of the plugin's, the JVM's own) passes at once, as one from a transport's
     * progress does: the endpoints after it are asked at the next interval, and the round's error
     * handlers run at the next progress.
     *
     * @return the endpoints the probes failed
     */
    private int checkPeers() {
        STATE.getAndBitwiseAnd(this, ~KEEPALIVE_DUE);
        int failed = 0;
        RuntimeException failure = null;
        for (RuntimeEndpoint ep : endpoints) {
            try {
                if (ep.checkPeer()) failed++;
            } catch (RuntimeException e) {
                failure = withSuppressed(failure, e);
            } catch (InternalError e) {
                failure = withSuppressed(failure, mappedMemoryFault(e, ep.transport()));
            }
        }
        if (failure != null) throw failure;
        return failed;
    }

    void backlogChanged(int delta) {
        STATE.getAndAdd(this, delta * BACKLOG_UNIT);
    }

    /** Whether an endpoint has messages queued locally. */
    private boolean backlogged() {
        return (int) (state >>> 32) != 0;
    }

    void failureToReport() {
        STATE.getAndBitwiseOr(this, FAILURES_TO_REPORT);
    }

    private void reportFailures(MessageDispatch.Delivery d) {
        STATE.getAndBitwiseAnd(this, ~FAILURES_TO_REPORT);
        for (RuntimeEndpoint ep : endpoints) { // the array as it was: a release replaces it
            if (!ep.reportFailure(d)) continue;
            d.failuresReported++;
            try {
                ep.releaseFailed();
            } catch (RuntimeException | Error e) {
                d.fail(e);
            }
        }
    }

    RemoteMemory remoteMemory() {
        return remoteMemory;
    }

    /** Closes a transport endpoint of {@code transport} now, or after the transport's progress step when one is on the stack. */
    void closeTransportEndpoint(String transport, TransportEndpoint te) {
        if (dispatch.delivery().inTransport > 0) {
            synchronized (deferredCloses) {
                deferredCloses.add(new DeferredClose(transport, te));
                STATE.getAndBitwiseOr(this, CLOSES_DEFERRED);
            }
            return;
        }
        te.close();
    }

    /**
     * Closes the transport endpoints whose close waited for the transport's progress step, each
     * whatever the others threw: a checked exception thrown undeclared (a Kotlin plugin's) too, named
     * as the plugin's fault as {@link RuntimeEndpoint#thrownBy} names one from a close made at once.
     * Until 2026-12-07 such an exception left the loop, the endpoints after it open for good, and
     * came out of {@code progress()} bare
     * (EndpointMessagingTest#aDeferredCloseThatThrowsACheckedExceptionUndeclaredIsNamedAndTheOtherDeferredClosesStillRun).
     */
    private void runDeferredCloses() {
        List<DeferredClose> toClose;
        synchronized (deferredCloses) {
            STATE.getAndBitwiseAnd(this, ~CLOSES_DEFERRED);
            toClose = List.copyOf(deferredCloses);
            deferredCloses.clear();
        }
        Throwable failure = null;
        for (DeferredClose close : toClose) {
            try {
                close.endpoint().close();
            } catch (Exception | Error e) { // the others are still closed
                Throwable closing = e instanceof Exception thrown ? RuntimeEndpoint.thrownBy(close.transport(), "close", thrown) : e;
                if (failure == null) failure = closing;
                else failure.addSuppressed(closing);
            }
        }
        CloseFailures.rethrow(failure);
    }

    // ------------------------------------------------------------------ await and signal

    @Override
    public boolean await(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        long nanos;
        try {
            nanos = Math.min(timeout.toNanos(), Long.MAX_VALUE / 4);
        } catch (ArithmeticException e) {
            nanos = timeout.isNegative() ? 0 : Long.MAX_VALUE / 4;
        }
        boolean entered = enterToAwait();
        // Only a SERIALIZED worker refuses an overlapping call; the one before is put back (an await refused inside a handler).
        boolean marked = entered && guard instanceof OverlapCheck;
        Thread markedBefore = marked ? (Thread) IN_AWAIT.getOpaque(this) : null;
        if (marked) IN_AWAIT.setOpaque(this, Thread.currentThread());
        try {
            ensureOpen();
            MessageDispatch.Delivery d = dispatch.delivery();
            ensureNotCalledBack(d, "await()");
            try {
                return awaitWork(d, System.nanoTime() + nanos, entered && runtimeLock != null);
            } catch (RelockRefused refused) {
                entered = false; // the lock was let go and not taken again: nothing to leave
                d.attachTo(refused.failure);
                if (refused.failure instanceof Error e) throw e;
                throw (RuntimeException) refused.failure;
            } catch (RuntimeException | Error e) {
                d.attachTo(e);
                throw e;
            }
        } finally {
            if (marked) IN_AWAIT.setOpaque(this, markedBefore);
            exit(entered);
        }
    }

    /**
     * Sleeps until there may be work. An interrupt of the calling thread ends it, as it ends a
     * {@code Selector.select} or a park, and keeps the interrupt status: one already set returns at
     * once, one that comes during a transport's sleep (a futex wait or a {@code poll}, which an
     * interrupt does not reach) wakes it through {@link #interruptWake}. Until 2026-12-01 an
     * interrupted thread slept its whole timeout over the shared-memory transports, while it woke at
     * once without a transport that sleeps (AwaitInterruptTest). The hook is up around each slice's
     * sleep only, and so set again before every sleep: the JDK keeps one per thread, and code run
     * between slices that blocks in an interruptible channel (a transport's progress writing to a pipe)
     * takes it down as its channel's {@code end()} returns; an interrupt in the next sleep then
     * waited for the slice to end
     * (EndpointThreadingTest#anInterruptWakesAnAwaitInWhichATransportsProgressBlockedInAChannel). Until
     * 2026-12-07 it stayed up from the first slice to the return, so an interrupt while the await
     * ran code between slices (the other transports' progress and their handlers, the relock) became
     * a signal that the transport kept, and the thread's next await returned at once without work
     * (EndpointThreadingTest#anInterruptBetweenTheSlicesOfAnAwaitLeavesNoWakeupForTheNextOne).
     */
    private boolean awaitWork(MessageDispatch.Delivery d, long deadline, boolean releaseLock) {
        // Counted before the slices' first look at CLOSED: either that look sees the close, or the close sees this count.
        AWAITING.getAndAdd(this, 1);
        try {
            return awaitInSlices(d, deadline, releaseLock);
        } finally {
            AWAITING.getAndAdd(this, -1);
        }
    }

    private boolean awaitInSlices(MessageDispatch.Delivery d, long deadline, boolean releaseLock) {
        Transport waker = wakeup >= 0 ? transports[wakeup] : null;
        boolean others = transports.length > (waker == null ? 0 : 1);
        // A signal made before the call is taken in the loop, once the deadline is known not to have passed: a timeout
        // of zero or less keeps it for the next await, as a transport that sleeps keeps it (its await is never called then).
        while (true) {
            // Another thread may have closed the worker since the last look: under PASS_THROUGH at any time, under the
            // runtime lock while this await let go of it between slices.
            ensureOpen();
            if (has(FAILURES_TO_REPORT)) return true;
            // A close request is served as the call returns (exit); under PASS_THROUGH only once no thread runs a handler or
            // encoder, and until then this await sleeps on: the last of them closes the worker as its call returns, which
            // wakes this one (wakeAwaitingThreadAsItCloses). Returning at once would spin for as long as that handler runs.
            if (has(CLOSE_REQUESTED) && !dispatch.calledBackOnAnyThread()) return true;
            long remaining = deadline - System.nanoTime();
            // After the clock: an interrupt that comes once the deadline has passed is one after the timeout. Before the hook,
            // which would turn a pending interrupt into a signal that the transport keeps for the next await.
            if (Thread.currentThread().isInterrupted()) return true;
            if (remaining <= 0) return false;
            long slice = remaining;
            if (waker == null || backlogged() || releaseLock) {
                slice = Math.min(slice, SHORT_SLICE_NANOS);
            } else if (others) {
                slice = Math.min(slice, SLICE_NANOS);
            }
            // Under the runtime lock a sleep keeps every other thread out of the worker: a thread that comes to wait for the
            // lock wakes this one (wakeSleeperUnderLock), and one already waiting is handed the lock without a sleep.
            if (releaseLock) sleepingUnderLock = true;
            // An interrupt since the check is a signal from here on, which this sleep takes: it returns at once, woken.
            interruptWake.beginSleep();
            boolean woke = false;
            try {
                if (waker != null) {
                    if (!(releaseLock && runtimeLock.contended())) {
                        d.inTransport++;
                        try {
                            woke = sleep(waker, slice);
                        } catch (InternalError e) {
                            throw mappedMemoryFault(e, transportNames[wakeup]); // await reads the queue too (its liveness checks)
                        } catch (IllegalStateException e) { // the transport closed under the call
                            throw closedOr(e);
                        } catch (Exception e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows): the plugin's fault, as progress()'s
                            throw closedOr(PluginRecord.failed(transportNames[wakeup], "await()", e));
                        } finally {
                            d.inTransport--;
                        }
                    }
                } else {
                    this.sleeper = Thread.currentThread();
                    try {
                        if (!signalled.get() && !(releaseLock && runtimeLock.contended())) LockSupport.parkNanos(this, slice);
                    } finally {
                        this.sleeper = null;
                    }
                    woke = signalled.getAndSet(false) || Thread.currentThread().isInterrupted();
                }
            } finally {
                interruptWake.endSleep(); // before the code between slices, where an interrupt is seen at the next check
                sleepingUnderLock = false;
            }
            ensureOpen(); // a close by another thread wakes the sleeper (wakeAwaitingThreadAsItCloses)
            if (woke) return true;
            int events = 0;
            int failuresReportedBefore = d.failuresReported;
            try {
                if (others) {
                    events = progressOnce(d, wakeup);
                } else if (backlogged()) {
                    events = drainBacklogs();
                }
            } catch (RuntimeException e) {
                throw closedOr(e);
            }
            d.rethrow();
            // An error handler run here is news for the caller, as a failure left to report is (the check above), though
            // the transport that found the failure may count no event for it: until 2026-12-07 the await slept on.
            if (events > 0 || d.failuresReported != failuresReportedBefore) return true;
            if (releaseLock) {
                runtimeLock.exit();
                try {
                    runtimeLock.enterToSleep(GAVE_UP_BETWEEN_SLICES); // behind any thread waiting meanwhile, and waking no other sleeper
                } catch (RuntimeException | Error notRetaken) { // a cycle of waits, or an Error while waiting: either way not held
                    throw new RelockRefused(notRetaken);
                }
            }
        }
    }

    /**
     * A slice of sleep in the WAKEUP transport: a futex wait or a {@code poll}, native calls that
     * would pin a virtual caller to its carrier for the whole slice, so a virtual thread hands it to
     * a platform thread and parks (docs/runtime.md, "Virtual threads"). A platform thread sleeps
     * itself, as before: its path is unchanged but for the test.
     */
    private boolean sleep(Transport waker, long slice) {
        if (wakeupHandedOff && Thread.currentThread().isVirtual()) return PlatformHandOff.call(() -> waker.await(slice));
        return waker.await(slice);
    }

    /**
     * The end of the deadlock's message when an await gives up between two slices: those before
     * had progressed the worker, which may have run error handlers (a slice that delivered a
     * message returns). Until 2026-12-07 it said "this call did nothing"
     * (EndpointThreadingTest#anAwaitThatGivesUpItsLockBetweenSlicesToADeadlockSaysItHadProgressedTheWorker).
     */
    private static final String GAVE_UP_BETWEEN_SLICES = "this await() gave up between two of its slices, holding nothing: the "
            + "slices before had progressed the worker and may have run the error handlers of endpoints that failed meanwhile, "
            + "but delivered no message";

    /**
     * The runtime lock, let go between an await's slices, could not be taken again: the caller
     * holds nothing, whatever {@link RuntimeLock#enterToSleep} threw (it never throws holding the
     * lock). Until 2026-12-07 only its deadlock was taken for that: anything else (an Error while
     * it waited) reached the await's exit, whose unlock of the lock it no longer held threw
     * IllegalMonitorStateException in its place
     * (EndpointThreadingTest#anAwaitWhoseRelockFailsOtherwiseThrowsThatFailureAndLeavesTheLockFree).
     */
    private static final class RelockRefused extends RuntimeException {
        /** What the relock threw: a {@code RuntimeException} or an {@code Error}. */
        final Throwable failure;

        RelockRefused(Throwable failure) {
            super(null, null, false, false);
            this.failure = failure;
        }
    }

    @Override
    public void signal() {
        if (wakeup >= 0) {
            signalTransport();
        } else {
            signalled.set(true);
            Thread t = sleeper;
            if (t != null) LockSupport.unpark(t);
        }
    }

    private void signalTransport() {
        // Counted in flight, so that a close (closeNow) waits for it before the transport's
        // descriptors and memory go: a wake must not reach a descriptor number reused since.
        SIGNALS_IN_FLIGHT.getAndAdd(this, 1);
        try {
            if (!has(CLOSED)) transports[wakeup].signal(); // which keeps it for the next await when nobody sleeps (Transport#signal)
        } finally {
            SIGNALS_IN_FLIGHT.getAndAdd(this, -1);
        }
    }

    /**
     * Run on a thread that must wait for this worker's runtime lock ({@link RuntimeLock#wakeHolderWith}):
     * a thread asleep in {@link #await} holds it for up to a slice, so it is woken to let go. Through
     * its transport, whose await then returns, and so does the worker's ({@code await} may return
     * without work); a parked one hands the lock over between slices and sleeps on. It throws
     * nothing but the JVM's own errors, as {@link InterruptWake} does: a signal that fails (a
     * ConduitException, a fault of a queue's memory, a plugin's Error such as a class it misses) is
     * the sleeper's to meet in its own sleep, which under the lock lasts at most a 1 ms slice, and
     * the waiting thread waits that long; it used to throw the signal's failure out of the waiting
     * thread's call (a progress, a send on another transport's endpoint, a close), which had done
     * nothing, and until 2026-12-07 an Error other than InternalError still came out
     * (EndpointThreadingTest#aWakeOfAnAwaitingThreadWhoseSignalFailsWithAnErrorThrowsNothing), and
     * a checked exception the plugin's signal threw undeclared (a plugin in Kotlin)
     * (#aWakeOfAnAwaitingThreadWhoseSignalThrowsACheckedExceptionThrowsNothingAndTheCloseStillClosesTheTransport).
     *
     * <p>The signal may find no sleep to end, and is then kept by the transport for the next
     * {@code await} (Transport#signal), whoever calls it: the sleeper read {@link #sleepingUnderLock}
     * set, and found this waiter counted and did not sleep, or its sleep had just ended (timeout, or
     * a message). That await returns {@code true} at once without work: a spurious wakeup, which
     * Worker.await allows, at most one per call that woke a sleeper (signals kept coalesce). It is
     * not taken back: the transport cannot tell it from an application's {@code signal()} made
     * meanwhile, which must not be lost (docs/decisions.md, "The runtime lock is fair, and wakes its
     * sleeping holder").
     */
    private void wakeSleeperUnderLock() {
        if (!sleepingUnderLock) return;
        try {
            if (wakeup >= 0) {
                signalTransport();
            } else {
                Thread t = sleeper;
                if (t != null) LockSupport.unpark(t);
            }
        } catch (Throwable notForTheWaiter) { // a checked one too, thrown undeclared
            // the sleeper lets go of the lock when its slice ends, or when its sleep meets the broken transport
            CloseFailures.rethrowIfTheJvmsOwn(notForTheWaiter);
        }
    }

    // ------------------------------------------------------------------ close

    @Override
    public void close() {
        boolean entered = enter();
        try {
            closeGuarded();
        } finally {
            exit(entered);
        }
    }

    /**
     * The first step of {@code Conduit.close()}, taken for every worker before any is closed. A
     * thread may be inside a call of the worker right now (its owner, if {@code SINGLE} and not
     * the closing thread; any thread, if {@code SERIALIZED} or under the runtime lock), which the
     * closing thread cannot see without a cost on every call. So it asks: the outermost call under
     * way, or the next one, closes the worker as it leaves ({@link #exit}), and a thread asleep in
     * {@code await} is woken for that. {@link #closeFromConduit} then waits, for all workers
     * together, at most {@link #OWNER_CLOSE_WAIT_NANOS}. Called from one of the worker's own
     * handlers or {@code PayloadEncoder}s, it asks the call running it.
     */
    public void requestCloseFromConduit() {
        if (has(CLOSED)) return;
        closedByConduitOn = ThreadNames.of(Thread.currentThread());
        boolean ask = calledBackOnCurrentThread() || switch (guard) {
            case OwnerCheck owned -> owned.owner() != Thread.currentThread() && owned.owner().isAlive();
            case OverlapCheck serialized -> true;
            case RuntimeLock locked -> true;
            case PassThrough concurrent -> false; // its plugins take concurrent calls, close included
        };
        if (!ask) return;
        closeRequestDeadline = System.nanoTime() + OWNER_CLOSE_WAIT_NANOS;
        STATE.getAndBitwiseOr(this, CLOSE_REQUESTED);
        signal();
    }

    /**
     * Closing the {@code Conduit} closes its workers from the closing thread: at once when
     * {@link #requestCloseFromConduit} asked nothing; else once a thread using the worker closed
     * it, its owner died, or the guard is free. A worker still in use when the wait ends is closed
     * anyway, with a WARNING: leaving it open would leak its transports, and a thread that does
     * not call within a second is rarely inside a call; one that is gets the
     * {@link IllegalStateException}s the JDK's arenas make of an access to closed memory. A
     * failure of a close the worker's user made is thrown here, so that the {@code Conduit}'s
     * close reports it.
     */
    public void closeFromConduit() {
        if (!closedForConduit.compareAndSet(false, true)) return; // once: its failure is reported once
        if (has(CLOSED)) {
            awaitCloseDone(); // its user is closing it, or did
            if (has(CLOSE_REQUESTED)) rethrowCloseFailure(); // a close this Conduit asked for: reported here too
            return;
        }
        if (has(CLOSE_REQUESTED)) {
            if (calledBackOnCurrentThread()) return; // the call running the handler or encoder closes it as it returns
            if (awaitCloseByItsUsers()) {
                rethrowCloseFailure();
                return;
            }
            closeNow(); // the wait ran out with a call under way, or the owner died: not through the guard
            awaitCloseDone(); // should a user's close have started meanwhile
            rethrowCloseFailure(); // and then that close's failure is this one's too
        } else if (guard instanceof OwnerCheck owned && owned.owner() != Thread.currentThread()) {
            closeNow(); // its owner has ended: without the owner check
        } else {
            close();
        }
    }

    private void rethrowCloseFailure() {
        CloseFailures.rethrow(closeFailure);
    }

    /** Waits until the close under way (closeNow) has finished: it is bounded by the transports' own close. */
    private void awaitCloseDone() {
        boolean interrupted = Thread.interrupted();
        try {
            while (!closeDone) LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    /**
     * Whether the worker was closed, by its user or here (the guard was free), waiting at most
     * until the request's deadline. {@code false}: its owner died, or the wait ran out.
     */
    private boolean awaitCloseByItsUsers() {
        boolean interrupted = Thread.interrupted(); // a park would not wait otherwise
        try {
            while (!closeDone) {
                if (has(CLOSED)) {
                    // A user is closing it: wait for that close, which its transports bound, past the deadline too.
                    LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
                    continue;
                }
                if (guard instanceof OwnerCheck owned && !owned.owner().isAlive()) return false; // its end publishes its last call
                if (!(guard instanceof OwnerCheck) && guard.tryEnter()) {
                    try {
                        closeGuarded();
                    } finally {
                        guard.exit();
                    }
                    return true;
                }
                if (System.nanoTime() - closeRequestDeadline >= 0) {
                    Thread user = guard instanceof OwnerCheck owned ? owned.owner() : null;
                    // Best effort: out of descriptors the logger's Error would stop Conduit.close before it closed this worker.
                    BestEffortLog.warn(LOG, () -> this + (user == null ? "" : " of thread " + ThreadNames.of(user))
                            + " was still in use " + TimeUnit.NANOSECONDS.toMillis(OWNER_CLOSE_WAIT_NANOS) + " ms after Conduit.close() "
                            + "asked its users to close it; closing it from thread " + ThreadNames.of(Thread.currentThread()) + ", so calls "
                            + "under way on it may fail with IllegalStateException. Stop the threads that use a Conduit's workers, or "
                            + "have them close their workers, before closing the Conduit", null);
                    return false;
                }
                LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
            }
            return true;
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    private void closeGuarded() {
        if (has(CLOSED)) return;
        if (encodingOnCurrentThread()) {
            throw new IllegalStateException("a PayloadEncoder closed the worker of the endpoint it is encoding for; it must not (its "
                    + "message is under way in the peer's memory): close after send(...) returns");
        }
        ensureNotCalledBack(dispatch.delivery(), "close()");
        closeNow();
    }

    /**
     * Closes endpoints and transports, once: a forced close from {@code Conduit.close()} may meet
     * the owner's own close (at its call's {@link #exit}), and only one of them may run it.
     */
    private void closeNow() {
        if (((long) STATE.getAndBitwiseOr(this, CLOSED) & CLOSED) != 0) return;
        try {
            wakeAwaitingThreadAsItCloses();
            // A signal that passed its check of closed before that store is still using the transport.
            while ((int) SIGNALS_IN_FLIGHT.getVolatile(this) != 0) Thread.onSpinWait();
            closeEndpointsAndTransports();
        } catch (RuntimeException | Error e) {
            closeFailure = e;
            throw e;
        } finally {
            closeDone = true;
        }
    }

    /**
     * Wakes a thread asleep in {@link #await} while the worker closes under it (under
     * {@code PASS_THROUGH}, or by {@code Conduit.close()} after its wait): it finds the worker
     * closed as its sleep ends, and throws as every call on a closed worker does. Until 2026-12-07
     * nothing woke it, and under PASS_THROUGH nothing in its loop looked for the close: it went on
     * sleeping, and progressing the closed transports between slices, until its whole timeout
     * passed (EndpointThreadingTest#anAwaitUnderPassThroughEndsWhenAnotherThreadClosesTheWorker,
     * #anAwaitAsleepInItsTransportUnderPassThroughIsWokenByAnotherThreadsCloseOfTheWorker).
     * Made once {@link #CLOSED} is set, which {@link #signal()} checks to keep other threads'
     * wakes off the transports about to close, so it calls the transport itself; a signal nobody
     * sleeps for is kept by the transport, which closes next. It throws nothing but the JVM's own
     * errors: a failing signal leaves the sleeper to meet its transport closed. A close that no
     * await overlaps signals nothing. Until 2026-12-07 a checked exception that the plugin's signal
     * threw undeclared (a plugin in Kotlin) came out of it, and the close ended there, its worker
     * marked closed and its endpoints and transports left open for good
     * (EndpointThreadingTest#aWakeOfAnAwaitingThreadWhoseSignalThrowsACheckedExceptionThrowsNothingAndTheCloseStillClosesTheTransport).
     */
    private void wakeAwaitingThreadAsItCloses() {
        if ((int) AWAITING.getVolatile(this) == 0) return;
        try {
            if (wakeup >= 0) {
                transports[wakeup].signal();
            } else {
                Thread t = sleeper;
                if (t != null) LockSupport.unpark(t);
            }
        } catch (Throwable notForTheCloser) { // a checked one too, thrown undeclared
            CloseFailures.rethrowIfTheJvmsOwn(notForTheCloser);
        }
    }

    /**
     * Closes the endpoints, then the kept payloads and the transports, newest first, collecting every
     * failure so that none leaves the rest open: until 2026-12-07 a checked exception a plugin's
     * close threw undeclared left at once, the transports after it open for good and the worker
     * still tracked (ConduitCloseTest#aCheckedExceptionFromClosingATransportIsCollectedAndEverythingElseIsStillClosed).
     */
    private void closeEndpointsAndTransports() {
        RuntimeException failure = null;
        RuntimeEndpoint[] open;
        synchronized (endpointsLock) {
            open = endpoints;
            endpoints = new RuntimeEndpoint[0];
        }
        for (int i = open.length - 1; i >= 0; i--) {
            try {
                open[i].close(false);
            } catch (Throwable e) { // the rest is still closed; an Error, or a checked exception thrown undeclared, is reported too
                failure = collect(failure, e, "closing the worker's endpoints failed");
            }
        }
        if (has(CLOSES_DEFERRED)) {
            try {
                runDeferredCloses();
            } catch (Throwable e) { // as above
                failure = collect(failure, e, "closing the worker's endpoints failed");
            }
        }
        failure = closeKeptPayloads(failure);
        for (int i = transports.length - 1; i >= 0; i--) {
            try {
                transports[i].close();
            } catch (Throwable e) { // as above: a plugin in Kotlin may throw a checked one undeclared
                failure = collect(failure, e, "closing the worker's transports failed");
            }
        }
        onClose.accept(this);
        CloseFailures.throwCollected(failure);
    }

    private static RuntimeException collect(RuntimeException failure, Throwable e, String what) {
        if (failure == null) failure = new ConduitException(what + "; the causes are suppressed");
        failure.addSuppressed(e);
        return failure;
    }

    @Override
    public String toString() {
        return "Worker[" + mode + ", " + policy + ", " + List.of(transportNames) + (has(CLOSED) ? ", closed" : "") + "]";
    }

    private record WorkerTransportContext(RuntimePluginContext plugin, ThreadMode threadMode, MessageSink messageSink,
                                          RemoteMemory remoteMemory) implements TransportContext {
        @Override
        public dev.conduit.spi.Config config() {
            return plugin.config();
        }

        @Override
        public Path sharedDirectory() {
            return plugin.sharedDirectory();
        }

        @Override
        public System.Logger logger() {
            return plugin.logger();
        }

        @Override
        public <T> T blockingCall(java.util.function.Supplier<T> call) {
            return plugin.blockingCall(call);
        }
    }
}
