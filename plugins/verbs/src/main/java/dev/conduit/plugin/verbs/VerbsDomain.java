package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConduitException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The device context and protection domains of one plugin instance, shared by its memory provider
 * and its transports: memory registered by the provider is reachable through the inbound queue
 * pairs of the transports, through which peers do RMA on it, only because they share its
 * protection domain; outbound connections have one of their own ({@link #outboundProtectionDomain}).
 * Opened by the first user, closed by the last ({@link #acquire}/{@link #release}); thread-safe.
 *
 * <p>The context numbers the asynchronous events it reads, under its lock ({@link HeldEvent#sequence}),
 * so that the port in use going down fails only the connections there were when the event was read,
 * not those a {@link WireupServer} thread handed over to a worker that held the event, not progressed,
 * meanwhile. The wire-up thread hands each inbound connection over inside
 * {@link #takeAsyncEventsThen}: under the lock, after the events pending in the kernel are read, so an
 * event numbered below the count it is given was read before the handover, and one numbered from it
 * on after. The progress thread compares the two only after it took the event from its
 * {@link Subscription}, and takes the handed-over connections before it acts on an event: the lock
 * orders the handover before every event read after it, and both queues publish what they carry, so
 * a connection that an event must fail has always been taken by then. An outbound connection needs no
 * number: {@code connect} acts on every event its worker holds before it builds the connection.
 */
final class VerbsDomain {

    private static final SecureRandom CONTEXT_IDS = new SecureRandom();
    private final Verbs.Device device;
    private final String deviceName;
    private final int port;
    private final Verbs.PortAttributes portAttributes;
    private final Verbs.DeviceAttributes deviceAttributes;
    private final int gidIndex;
    private final byte[] gid;
    private final Verbs.ProtectionDomain pd;
    private final Verbs.ProtectionDomain outboundPd;
    /**
     * This context's identity, random: what its transports' addresses and its memory's region
     * payloads carry as {@code context}, so that an endpoint refuses RMA on a region whose remote key
     * its peer's protection domain does not hold (another process's, or another context's).
     */
    private final byte[] context = new byte[WireFormat.CONTEXT_LENGTH];
    /** Where {@link #takeAsyncEvents} logs the events it hands to no transport: the logger of the user that opened the context. */
    private final System.Logger logger;
    private int users;
    /** How many asynchronous events the context has read: the sequence number of the next. Guarded by {@code this}. */
    private long eventsRead;
    /** The transports' queues of asynchronous events: the context has one event queue, which every transport of it needs. */
    private final List<Subscription> subscriptions = new CopyOnWriteArrayList<>();
    /**
     * What made the device context unusable ({@code IBV_EVENT_DEVICE_FATAL}, or its events no longer
     * readable: {@code EIO}), naming the device, or {@code null} while it works.
     */
    private volatile String fatal;
    /**
     * What a user's close could not tear down and left on the context ({@link #leftOnDevice}): it keeps the
     * protection domain it is on, and so the context, from being released, which the last user's close then says.
     */
    private final List<String> leftOnDevice = new CopyOnWriteArrayList<>();

    private VerbsDomain(Verbs.Device device, String deviceName, int port, Verbs.PortAttributes portAttributes,
                        Verbs.DeviceAttributes deviceAttributes, int gidIndex, byte[] gid, Verbs.ProtectionDomain pd,
                        Verbs.ProtectionDomain outboundPd, System.Logger logger) {
        this.device = device;
        this.deviceName = deviceName;
        this.port = port;
        this.portAttributes = portAttributes;
        this.deviceAttributes = deviceAttributes;
        this.gidIndex = gidIndex;
        this.gid = gid;
        this.pd = pd;
        this.outboundPd = outboundPd;
        this.logger = logger;
        CONTEXT_IDS.nextBytes(context);
    }

    /** This context's identity ({@code context} of the wire formats); not to be modified. */
    byte[] context() {
        return context;
    }

    /** The real sysfs, where the kernel says which GIDs are RoCE v2. */
    static final Path SYSFS = Path.of("/sys");

    /** The shared domain of a plugin instance: opens it on first use. */
    static final class Holder {
        private final Function<String, Verbs> loader;
        private final Path sysfs;
        private VerbsDomain domain;

        /** @param sysfs {@link #SYSFS}, or a fixture tree of its shape for tests */
        Holder(Function<String, Verbs> loader, Path sysfs) {
            this.loader = loader;
            this.sysfs = sysfs;
        }

        synchronized VerbsDomain acquire(Config config, System.Logger logger) {
            if (domain != null && domain.fatal != null) {
                // A context whose device failed takes no new user: the next worker opens the device again. The
                // failed one is closed by the release of its last user.
                domain = null;
            }
            if (domain == null) {
                domain = open(loader.apply(VerbsConfig.text(config, VerbsConfig.LIBRARY)), config, sysfs, logger);
            }
            domain.users++;
            return domain;
        }

        synchronized void release(VerbsDomain released) {
            if (released.users <= 0 || --released.users > 0) {
                return;
            }
            if (released == domain) {
                domain = null;
            }
            Teardown teardown = new Teardown("closing device " + released.deviceName).other(released.outboundPd::close)
                    .other(released.pd::close).other(released.device::close);
            Throwable failure = teardown.failure();
            if (failure instanceof RuntimeException refused && !released.leftOnDevice.isEmpty()) {
                throw keptBy("closing device " + released.deviceName, refused, released.leftOnDevice);
            }
            teardown.rethrow();
        }
    }

    /**
     * The device's refusal ({@code EBUSY}) to release what {@code left}, things an earlier close
     * could not tear down, is still on, naming them: the device's bare errno names neither what is
     * still there nor why (that close's WARNING did).
     *
     * @param closing what failed: "closing device rxe0"
     */
    static ConduitException keptBy(String closing, RuntimeException refused, List<String> left) {
        return new ConduitException("verbs: " + closing + " failed: " + refused.getMessage() + ", because what a close could not tear "
                + "down is still on it: " + String.join("; ", left) + ". It keeps what it is on from being released: all of it stays "
                + "held, and is released when the process exits; if this repeats, see dmesg for the adapter's state", refused);
    }

    /**
     * Records {@code what} a user's close could not tear down ("freeing a chunk of 4096 bytes at 0x…
     * failed again: ibv_dereg_mr(…): EBUSY …"), for the last user's close, which it keeps from
     * releasing the protection domains and the context.
     */
    void leftOnDevice(String what) {
        leftOnDevice.add(what);
    }

    /**
     * Opens {@code verbs.device} (or the first device with an active port), its port and GID, and a
     * protection domain. Without {@code verbs.device}, a device that cannot be opened or queried is
     * passed over, as the probe passes over it (which finds the plugin available through another).
     */
    static VerbsDomain open(Verbs verbs, Config config, Path sysfs, System.Logger logger) {
        String wanted = VerbsConfig.text(config, VerbsConfig.DEVICE);
        int wantedPort = config.get(VerbsConfig.PORT).intValue();
        List<String> names = wanted.isEmpty() ? verbs.deviceNames() : List.of(wanted);
        List<String> tried = new ArrayList<>();
        List<String> unusable = new ArrayList<>();
        for (String name : names) {
            Verbs.Device device;
            try {
                device = verbs.open(name);
            } catch (IllegalArgumentException e) {
                throw new ConduitException("verbs: " + e.getMessage() + " (" + VerbsConfig.DEVICE.nameAndVariable() + "; devices: "
                        + verbs.deviceNames() + ")", e);
            } catch (ErrnoException e) {
                if (!wanted.isEmpty()) {
                    throw e;
                }
                unusable.add(e.getMessage());
                continue;
            }
            try {
                Verbs.DeviceAttributes attributes;
                try {
                    attributes = device.attributes();
                } catch (ErrnoException e) {
                    if (!wanted.isEmpty()) {
                        throw e;
                    }
                    unusable.add(e.getMessage());
                    device.close();
                    continue;
                }
                for (int port = 1; port <= attributes.physicalPorts(); port++) {
                    if (wantedPort != 0 && port != wantedPort) {
                        continue;
                    }
                    Verbs.PortAttributes p;
                    try {
                        p = device.port(port);
                    } catch (ErrnoException e) {
                        if (!wanted.isEmpty()) {
                            throw e;
                        }
                        unusable.add(e.getMessage());
                        continue;
                    }
                    if (!p.isActive()) {
                        tried.add(name + " port " + port + " " + VerbsAbi.portState(p.state()));
                        continue;
                    }
                    int gidIndex = gidIndex(device, name, port, p, config.get(VerbsConfig.GID_INDEX).intValue(), sysfs, logger);
                    byte[] gid = device.gid(port, gidIndex);
                    Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
                    Verbs.ProtectionDomain outboundPd;
                    try {
                        outboundPd = device.allocateProtectionDomain();
                    } catch (RuntimeException e) {
                        throw new Teardown("closing the protection domain of device " + name).other(pd::close).suppressedInto(e);
                    }
                    return new VerbsDomain(device, name, port, p, attributes, gidIndex, gid, pd, outboundPd, logger);
                }
                if (wantedPort > attributes.physicalPorts()) {
                    tried.add(name + " has no port " + wantedPort);
                }
            } catch (RuntimeException e) {
                device.close();
                throw e;
            }
            device.close();
        }
        // The probe's words: a device that could not be opened or queried is the reason only when no port was found at all.
        if (tried.isEmpty() && !unusable.isEmpty()) {
            throw new ConduitException("verbs: no usable RDMA device: " + String.join("; ", unusable));
        }
        throw new ConduitException("verbs: no active port to use (" + String.join(", ", tried) + "); check "
                + VerbsConfig.DEVICE.nameAndVariable() + " and " + VerbsConfig.PORT.nameAndVariable()
                + ", and bring a link up (ip link set <netdev> up; ibstat)"
                + (unusable.isEmpty() ? "" : "; besides: " + String.join("; ", unusable)));
    }

    /**
     * The source GID: {@code verbs.gid.index} when set; on RoCE the first IPv4-mapped GID whose
     * type is RoCE v2. Drivers list each address twice, as RoCE v1 (an Ethernet frame, which no IP
     * router forwards) at the lower index and as RoCE v2 (UDP/IP) at the next; the GID bytes are the
     * same, only sysfs's {@code gid_attrs/types/<index>} tells them apart. Where a kernel has no
     * such file (before 4.5), the first IPv4-mapped GID, as before; on InfiniBand 0.
     */
    static int gidIndex(Verbs.Device device, String deviceName, int port, Verbs.PortAttributes p, int configured, Path sysfs,
                        System.Logger logger) {
        if (configured >= 0) {
            if (configured >= p.gidTableLength()) {
                throw new ConduitException("verbs: " + VerbsConfig.GID_INDEX.nameAndVariable() + " is " + configured
                        + " but the GID table of port " + port + " has " + p.gidTableLength() + " entries");
            }
            return configured;
        }
        if (p.linkLayer() != VerbsAbi.IBV_LINK_LAYER_ETHERNET) {
            return 0;
        }
        Path types = sysfs.resolve("class/infiniband").resolve(deviceName).resolve("ports").resolve(Integer.toString(port))
                .resolve("gid_attrs/types");
        int firstIpv4 = -1;
        boolean typesKnown = false;
        for (int i = 0; i < Math.min(p.gidTableLength(), 16); i++) {
            if (WireFormat.ipv4Of(device.gid(port, i)) == null) {
                continue;
            }
            if (firstIpv4 < 0) {
                firstIpv4 = i;
            }
            String type = gidType(types.resolve(Integer.toString(i)));
            typesKnown |= type != null;
            if (ROCE_V2.equals(type)) {
                return i;
            }
        }
        if (firstIpv4 < 0) {
            return 0;
        }
        if (typesKnown) {
            int chosen = firstIpv4;
            logger.log(System.Logger.Level.WARNING, () -> "verbs: " + deviceName + " port " + port + " has no IPv4 GID of type "
                    + ROCE_V2 + " among its first 16 (" + types + "): using index " + chosen + ", RoCE v1, which no IP router "
                    + "forwards; enable RoCE v2 on the device, or choose a GID with " + VerbsConfig.GID_INDEX.nameAndVariable());
        } else {
            int chosen = firstIpv4;
            logger.log(System.Logger.Level.DEBUG, () -> "verbs: " + types + " is missing (a kernel before 4.5, or sysfs not mounted): "
                    + "the GID types of " + deviceName + " port " + port + " are unknown, so the first IPv4-mapped GID, index "
                    + chosen + ", is used; it may be RoCE v1 (not routable): set " + VerbsConfig.GID_INDEX.nameAndVariable()
                    + " to choose");
        }
        return firstIpv4;
    }

    private static final String ROCE_V2 = "RoCE v2";

    /** The type the kernel gives GID entry {@code file} ("RoCE v2", "IB/RoCE v1"), or {@code null} where it says none. */
    private static String gidType(Path file) {
        try {
            return Files.readString(file, StandardCharsets.US_ASCII).strip();
        } catch (IOException e) {
            // Missing on old kernels; for an entry that holds no GID the kernel answers the read with EINVAL.
            return null;
        }
    }

    Verbs.Device device() {
        return device;
    }

    /**
     * An asynchronous event as the context read it: {@code sequence} is how many events it had read
     * before this one, which tells the connections handed over before it from those after
     * ({@link #takeAsyncEventsThen}).
     */
    record HeldEvent(Verbs.AsyncEvent event, long sequence) {
    }

    /**
     * A transport's share of the device's asynchronous events ({@link #subscribe}): those that can fail
     * its connections, held until its progress takes them. Thread-safe.
     */
    static final class Subscription {
        private final Verbs.CompletionQueue sendQueue;
        private final Verbs.CompletionQueue receiveQueue;
        private final Queue<HeldEvent> events = new ConcurrentLinkedQueue<>();

        private Subscription(Verbs.CompletionQueue sendQueue, Verbs.CompletionQueue receiveQueue) {
            this.sendQueue = sendQueue;
            this.receiveQueue = receiveQueue;
        }

        /** The next event to act on, or {@code null}. */
        HeldEvent poll() {
            return events.poll();
        }

        /** How many events wait to be acted on. */
        int size() {
            return events.size();
        }

        /**
         * Whether {@code event} can fail a connection of this transport: an error of one of its queue
         * pairs (every queue pair of a transport sends through its send queue) or of its completion
         * queues, the port in use going down, the device failing.
         */
        private boolean concerns(Verbs.AsyncEvent event, int portInUse) {
            return switch (event.type()) {
                case VerbsAbi.IBV_EVENT_QP_FATAL, VerbsAbi.IBV_EVENT_QP_REQ_ERR, VerbsAbi.IBV_EVENT_QP_ACCESS_ERR ->
                        event.queuePair() != null && owns(event.queuePair().sendQueue());
                case VerbsAbi.IBV_EVENT_CQ_ERR -> owns(event.completionQueue());
                case VerbsAbi.IBV_EVENT_PORT_ERR -> event.port() == portInUse;
                case VerbsAbi.IBV_EVENT_DEVICE_FATAL -> true;
                default -> false;
            };
        }

        private boolean owns(Verbs.CompletionQueue queue) {
            return queue != null && (queue == sendQueue || queue == receiveQueue);
        }

        /** Called under the context's lock only. */
        private void add(HeldEvent held) {
            // A link that flaps while its worker is not progressed would grow the queue for ever: one port error is held, the
            // latest, which fails every connection an earlier one would, and also those handed over between the two.
            if (held.event().type() == VerbsAbi.IBV_EVENT_PORT_ERR) {
                events.removeIf(e -> e.event().type() == VerbsAbi.IBV_EVENT_PORT_ERR);
            }
            events.add(held);
        }
    }

    /**
     * A subscription that {@link #takeAsyncEvents} fills from now on, until {@link #unsubscribe}, with
     * the asynchronous events of the device that can fail the connections of the transport whose
     * completion queues are {@code sendQueue} and {@code receiveQueue} ({@link Subscription#concerns}).
     */
    Subscription subscribe(Verbs.CompletionQueue sendQueue, Verbs.CompletionQueue receiveQueue) {
        Subscription subscription = new Subscription(sendQueue, receiveQueue);
        subscriptions.add(subscription);
        return subscription;
    }

    void unsubscribe(Subscription subscription) {
        subscriptions.remove(subscription);
    }

    /**
     * Takes every pending asynchronous event of the device (each acknowledged as it is taken) and
     * adds each to the subscriptions of the transports whose connections it can fail
     * ({@link Subscription#concerns}): whichever transport looks first reads them for all. Those that
     * concern no transport are logged here, once, at DEBUG. {@code IBV_EVENT_DEVICE_FATAL},
     * or {@code EIO} from reading them, marks the context failed ({@link #failure}), so that the next
     * {@link Holder#acquire} opens the device again; nothing is read after that.
     */
    synchronized void takeAsyncEvents() {
        if (fatal != null) {
            // Every user fails all it has on the context, so nothing it reports now changes anything; and once the kernel
            // detached the context, every read fails for ever.
            return;
        }
        while (true) {
            Verbs.AsyncEvent event;
            try {
                event = device.takeAsyncEvent();
            } catch (ErrnoException e) {
                if (e.errno() != Errno.EIO) {
                    throw e;
                }
                // The kernel detached the context (the device was removed or reset): it dropped the events not read, maybe
                // IBV_EVENT_DEVICE_FATAL with them, and answers EIO to every read, also non-blocking (Linux's "IB/uverbs: Fix
                // to consider event queue closing also upon non-blocking mode", 2023). This is all that says the device is gone.
                fatal = "the asynchronous events of device " + deviceName + " cannot be read (ibv_get_async_event: EIO): the kernel "
                        + "detached this process from the device (it was removed or reset, or its driver unloaded; see dmesg)";
                return;
            }
            if (event == null) {
                return;
            }
            if (event.type() == VerbsAbi.IBV_EVENT_DEVICE_FATAL) {
                fatal = VerbsAbi.eventType(event.type()) + " on device " + deviceName + ": the adapter stopped (a firmware or hardware "
                        + "error, or the device was removed; see dmesg)";
            }
            HeldEvent held = new HeldEvent(event, eventsRead++);
            boolean handedOut = false;
            for (Subscription subscription : subscriptions) {
                if (subscription.concerns(event, port)) {
                    subscription.add(held);
                    handedOut = true;
                }
            }
            if (!handedOut) {
                // Ports flapping and the subnet manager raise these all the process's life, and a worker's queue pairs fail
                // only its own connections: queued for a worker that is never progressed, they would be held for ever.
                Verbs.AsyncEvent informational = event;
                logger.log(System.Logger.Level.DEBUG, () -> "verbs: device " + deviceName + ": asynchronous event " + informational
                        + " (nothing of this worker fails)");
            }
        }
    }

    /**
     * Takes the pending events as {@link #takeAsyncEvents} does, then, still under the context's lock,
     * gives {@code handOver} how many events the context has read: the wire-up thread hands an inbound
     * connection over to its transport there, so that the events numbered below that count, read
     * before, spare it, and every event numbered from it on was read after the connection was in the
     * transport's queue (see the class's javadoc). A failure to read the events is not thrown here,
     * where it would cost the connection: the events not read count as after it, and the next
     * liveness look of a transport meets the failure in its own right.
     */
    synchronized void takeAsyncEventsThen(LongConsumer handOver) {
        try {
            takeAsyncEvents();
        } catch (RuntimeException unread) {
            // Left to the transports' liveness looks, which throw it from progress.
        } finally {
            // Also after an Error: the connection is built, and only its transport can close it.
            handOver.accept(eventsRead);
        }
    }

    /**
     * What made the device context unusable, naming the device and the cause, or {@code null} while
     * it works. Every transport of the context looks at it after its events, also one that
     * subscribed after {@code IBV_EVENT_DEVICE_FATAL} was handed out, or that never saw it because the
     * kernel dropped it.
     */
    String failure() {
        return fatal;
    }

    String deviceName() {
        return deviceName;
    }

    int port() {
        return port;
    }

    int gidIndex() {
        return gidIndex;
    }

    byte[] gid() {
        return gid.clone();
    }

    int lid() {
        return portAttributes.lid();
    }

    int activeMtu() {
        return portAttributes.activeMtu();
    }

    int linkLayer() {
        return portAttributes.linkLayer();
    }

    /** The port's {@code max_msg_sz}: the most bytes one work request moves. */
    long maxMessageSize() {
        return portAttributes.maxMessageSize();
    }

    /** Whether the device does RDMA atomics ({@code atomic_cap} not {@code IBV_ATOMIC_NONE}). */
    boolean atomics() {
        return deviceAttributes.atomicCap() != VerbsAbi.IBV_ATOMIC_NONE;
    }

    /**
     * The RDMA READs and atomics of its peer a queue pair of this device takes in flight: the
     * device's {@code max_qp_rd_atom}, at most {@link WireFormat#MAX_READ_DEPTH}. Each side
     * advertises it in its address; the peer keeps no more in flight towards it.
     */
    int responderDepth() {
        return Math.min(deviceAttributes.maxQpRdAtom(), WireFormat.MAX_READ_DEPTH);
    }

    /**
     * The RDMA READs and atomics a queue pair of this device keeps in flight towards a peer that
     * advertised {@code peerResponderDepth}: the smaller of that and the device's
     * {@code max_qp_init_rd_atom}, so at most {@link WireFormat#MAX_READ_DEPTH}, as an advertised
     * depth is a u8.
     */
    int initiatorDepth(int peerResponderDepth) {
        return Math.min(deviceAttributes.maxQpInitRdAtom(), peerResponderDepth);
    }

    /**
     * Why a queue pair of this device could do no RDMA READ or atomic, naming the device's
     * attribute that is 0, or {@code null} when both depths are at least 1.
     */
    String readDepthRefusal() {
        if (deviceAttributes.maxQpRdAtom() < 1) {
            return "max_qp_rd_atom " + deviceAttributes.maxQpRdAtom() + ": its queue pairs take no RDMA READ or atomic of a peer in flight";
        }
        if (deviceAttributes.maxQpInitRdAtom() < 1) {
            return "max_qp_init_rd_atom " + deviceAttributes.maxQpInitRdAtom() + ": its queue pairs keep no RDMA READ or atomic in flight";
        }
        return null;
    }

    int maxCompletionQueueEntries() {
        return deviceAttributes.maxCqe();
    }

    int atomicCap() {
        return deviceAttributes.atomicCap();
    }

    /** The protection domain of the pools' chunks and of inbound connections, through which peers do RMA on them. */
    Verbs.ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * The protection domain of outbound connections: their queue pairs, send rings and credit
     * words, and nothing else. The acceptor of a connection reaches, through its queue pair, only
     * what this domain holds with remote access: credit words, never a pool's chunks.
     */
    Verbs.ProtectionDomain outboundProtectionDomain() {
        return outboundPd;
    }

    /** The access flags of every registration: local write, remote read and write, and remote atomics when the device has them. */
    int access() {
        int access = VerbsAbi.IBV_ACCESS_LOCAL_WRITE | VerbsAbi.IBV_ACCESS_REMOTE_WRITE | VerbsAbi.IBV_ACCESS_REMOTE_READ;
        return atomics() ? access | VerbsAbi.IBV_ACCESS_REMOTE_ATOMIC : access;
    }
}
