package dev.conduit.internal.worker;

import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.internal.RuntimePluginContext;
import dev.conduit.internal.RuntimeKeys;
import dev.conduit.internal.config.ConfigResolver;
import dev.conduit.internal.discovery.PluginRecord;
import dev.conduit.internal.threading.ThreadConfinement;
import dev.conduit.internal.threading.ThreadGuard;
import dev.conduit.internal.threading.ThreadPolicies;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.RemoteMemory;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The runtime's worker: one transport of every selected plugin that provides one, all behind one
 * thread-mode guard, as a UCP worker over its UCT interfaces.
 */
public final class RuntimeWorker implements Worker {

    private static final System.Logger LOG = System.getLogger("dev.conduit.worker");

    private final ThreadMode mode;
    private final ThreadGuard guard;
    private final ThreadPolicy policy;
    private final Transport[] transports;
    private final String[] transportNames;
    private final Consumer<AutoCloseable> onClose;
    private final MessageDispatch dispatch;
    private volatile boolean closed;

    private RuntimeWorker(ThreadMode mode, ThreadGuard guard, ThreadPolicy policy, Transport[] transports, String[] names,
                          MessageDispatch dispatch, Consumer<AutoCloseable> onClose) {
        this.mode = mode;
        this.guard = guard;
        this.policy = policy;
        this.transports = transports;
        this.transportNames = names;
        this.dispatch = dispatch;
        this.onClose = onClose;
    }

    /**
     * Opens a transport of every selected plugin with {@link Capability#AM}, choosing the guard for
     * {@code mode} from what those plugins declare.
     */
    public static RuntimeWorker open(ThreadMode mode, List<PluginRecord> selected, ConfigResolver config, Path sharedDirectory,
                                     RemoteMemory remoteMemory, Consumer<AutoCloseable> onClose) {
        List<PluginRecord> withTransport = transports(selected);
        Map<String, Set<ThreadMode>> declared = declaredModes(withTransport);
        Map<String, Boolean> confined = confinement(mode, withTransport, config.get(RuntimeKeys.THREAD_CONFINE));
        ThreadGuard guard = ThreadPolicies.guard(mode, declared, "worker");
        ThreadPolicy policy = ThreadPolicies.reported(guard, confined.containsValue(true));
        MessageDispatch dispatch = new MessageDispatch();
        List<Transport> opened = new ArrayList<>();
        List<String> names = new ArrayList<>();
        try {
            for (PluginRecord r : withTransport) {
                TransportContext context = new WorkerTransportContext(RuntimePluginContext.of(config, sharedDirectory, r.name()),
                        mode, dispatch, remoteMemory);
                Transport t;
                if (confined.get(r.name())) {
                    ThreadConfinement thread = new ThreadConfinement("conduit-confined-" + r.name());
                    try {
                        t = new ConfinedTransport(thread.call(() -> r.plugin().openTransport(context)), thread);
                    } catch (RuntimeException e) {
                        thread.close();
                        throw e;
                    }
                } else {
                    t = r.plugin().openTransport(context);
                }
                opened.add(t);
                names.add(r.name());
            }
        } catch (RuntimeException e) {
            for (Transport t : opened.reversed()) {
                try {
                    t.close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
        return new RuntimeWorker(mode, guard, policy, opened.toArray(Transport[]::new), names.toArray(String[]::new), dispatch, onClose);
    }

    /**
     * How a worker in {@code mode} over {@code selected} would be guarded, without opening it.
     *
     * @throws ConduitException when such a worker would be refused
     */
    public static ThreadPolicy policyFor(ThreadMode mode, List<PluginRecord> selected, boolean confineAllowed) {
        List<PluginRecord> withTransport = transports(selected);
        Map<String, Boolean> confined = confinement(mode, withTransport, confineAllowed);
        return ThreadPolicies.reported(ThreadPolicies.guard(mode, declaredModes(withTransport), "worker"), confined.containsValue(true));
    }

    private static List<PluginRecord> transports(List<PluginRecord> selected) {
        List<PluginRecord> withTransport = selected.stream().filter(r -> r.capabilities().contains(Capability.AM)).toList();
        if (withTransport.isEmpty()) {
            throw new ConduitException("no selected plugin provides a transport (capability AM); selected: "
                    + selected.stream().map(PluginRecord::name).toList() + ". Run 'conduit info' to see why others are unavailable.");
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
    public int progress() {
        guard.enter();
        try {
            ensureOpen();
            int events = 0;
            for (Transport t : transports) {
                events += t.progress();
            }
            return events;
        } finally {
            guard.exit();
        }
    }

    private void ensureOpen() {
        if (closed) throw new IllegalStateException("worker is closed");
    }

    @Override
    public void close() {
        guard.enter();
        try {
            if (closed) return;
            closed = true;
            RuntimeException failure = null;
            for (int i = transports.length - 1; i >= 0; i--) {
                try {
                    transports[i].close();
                } catch (RuntimeException e) {
                    if (failure == null) failure = new ConduitException("closing the worker's transports failed");
                    failure.addSuppressed(e);
                }
            }
            onClose.accept(this);
            if (failure != null) throw failure;
        } finally {
            guard.exit();
        }
    }

    /** Delivers received messages; counts those nobody handles, and says so once per id. */
    static final class MessageDispatch implements MessageSink {
        private final java.util.BitSet warned = new java.util.BitSet();
        private long unhandled;

        @Override
        public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                              MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
            unhandled++;
            if (id >= 0 && !warned.get(id)) {
                warned.set(id);
                LOG.log(System.Logger.Level.WARNING, "active message id " + id + " arrived but no handler is registered for it; "
                        + "it was counted as unhandled");
            }
        }

        long unhandled() {
            return unhandled;
        }
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
    }
}
