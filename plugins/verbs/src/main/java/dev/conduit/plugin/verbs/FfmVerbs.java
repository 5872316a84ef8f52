package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

import static dev.conduit.plugin.verbs.VerbsAbi.*;
import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * {@link Verbs} over {@code libibverbs}, through FFM: the only class of this plugin that makes
 * downcalls, and every one through {@link #call}'s handles, which capture {@code errno}.
 *
 * <p>The library is opened by {@link #load(String)} on first use, never in a static initializer,
 * so a machine without it gets an {@link Unavailable} with the {@code dlopen} error instead of a
 * class that fails to initialize. For the same reason no static initializer here calls a
 * restricted method (such as {@code AddressLayout.withTargetLayout}): in a JVM that denies this
 * module native access that would be an {@link ExceptionInInitializerError}, not a probe reason
 * ({@code NativeAccessTest}). A library stays loaded once opened (one {@code dlopen} per
 * name per JVM; probes reuse it).
 */
final class FfmVerbs implements Verbs {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(groupElement("errno"));

    /** The functions bound, for the probe's message when one is missing. */
    static final List<String> FUNCTIONS = List.of("ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name",
            "ibv_open_device", "ibv_close_device", "ibv_query_device", "ibv_query_port", "ibv_query_gid", "ibv_alloc_pd",
            "ibv_dealloc_pd", "ibv_reg_mr", "ibv_dereg_mr", "ibv_create_comp_channel", "ibv_destroy_comp_channel", "ibv_create_cq",
            "ibv_destroy_cq", "ibv_get_cq_event", "ibv_ack_cq_events", "ibv_create_qp", "ibv_modify_qp", "ibv_destroy_qp",
            "ibv_get_async_event", "ibv_ack_async_event");

    private static final Map<String, FfmVerbs> LOADED = new ConcurrentHashMap<>();

    private final String library;
    private final MethodHandle getDeviceList;
    private final MethodHandle freeDeviceList;
    private final MethodHandle getDeviceName;
    private final MethodHandle openDevice;
    private final MethodHandle closeDevice;
    private final MethodHandle queryDevice;
    private final MethodHandle queryPort;
    private final MethodHandle queryGid;
    private final MethodHandle allocPd;
    private final MethodHandle deallocPd;
    private final MethodHandle regMr;
    private final MethodHandle deregMr;
    private final MethodHandle createCompChannel;
    private final MethodHandle destroyCompChannel;
    private final MethodHandle createCq;
    private final MethodHandle destroyCq;
    private final MethodHandle getCqEvent;
    private final MethodHandle ackCqEvents;
    private final MethodHandle createQp;
    private final MethodHandle modifyQp;
    private final MethodHandle destroyQp;
    private final MethodHandle getAsyncEvent;
    private final MethodHandle ackAsyncEvent;

    /** Why the library could not be used: the message says what to do. */
    static final class Unavailable extends ConduitException {
        @java.io.Serial private static final long serialVersionUID = 1L;

        Unavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private FfmVerbs(String library, SymbolLookup lookup) {
        this.library = library;
        getDeviceList = bind(lookup, "ibv_get_device_list", FunctionDescriptor.of(ADDRESS, ADDRESS));
        freeDeviceList = bind(lookup, "ibv_free_device_list", FunctionDescriptor.ofVoid(ADDRESS));
        getDeviceName = bind(lookup, "ibv_get_device_name", FunctionDescriptor.of(ADDRESS, ADDRESS));
        openDevice = bind(lookup, "ibv_open_device", FunctionDescriptor.of(ADDRESS, ADDRESS));
        closeDevice = bind(lookup, "ibv_close_device", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        queryDevice = bind(lookup, "ibv_query_device", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        // uint8_t port_num: the header's ___ibv_query_port falls back to this exported function.
        queryPort = bind(lookup, "ibv_query_port", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS));
        queryGid = bind(lookup, "ibv_query_gid", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS));
        allocPd = bind(lookup, "ibv_alloc_pd", FunctionDescriptor.of(ADDRESS, ADDRESS));
        deallocPd = bind(lookup, "ibv_dealloc_pd", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        // verbs.h's ibv_reg_mr macro calls the exported ibv_reg_mr when no optional access flag is given (we give none).
        regMr = bind(lookup, "ibv_reg_mr", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        deregMr = bind(lookup, "ibv_dereg_mr", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        createCompChannel = bind(lookup, "ibv_create_comp_channel", FunctionDescriptor.of(ADDRESS, ADDRESS));
        destroyCompChannel = bind(lookup, "ibv_destroy_comp_channel", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        createCq = bind(lookup, "ibv_create_cq", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        destroyCq = bind(lookup, "ibv_destroy_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getCqEvent = bind(lookup, "ibv_get_cq_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        ackCqEvents = bind(lookup, "ibv_ack_cq_events", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));
        createQp = bind(lookup, "ibv_create_qp", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        modifyQp = bind(lookup, "ibv_modify_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        destroyQp = bind(lookup, "ibv_destroy_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getAsyncEvent = bind(lookup, "ibv_get_async_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        ackAsyncEvent = bind(lookup, "ibv_ack_async_event", FunctionDescriptor.ofVoid(ADDRESS));
    }

    /**
     * Opens {@code library} ({@code dlopen}) and binds the functions, or reuses the instance that
     * already did.
     *
     * @throws Unavailable naming the library, the loader's words and the remedy: library missing,
     *                     a function missing, or native access denied to this module
     */
    static FfmVerbs load(String library) {
        FfmVerbs loaded = LOADED.get(library);
        if (loaded != null) {
            return loaded;
        }
        try {
            @SuppressWarnings("restricted") // this module is granted native access (DESIGN.md section 7)
            SymbolLookup lookup = SymbolLookup.libraryLookup(library, Arena.global());
            FfmVerbs verbs = new FfmVerbs(library, lookup);
            FfmVerbs raced = LOADED.putIfAbsent(library, verbs);
            return raced == null ? verbs : raced;
        } catch (IllegalCallerException e) {
            throw new Unavailable(nativeAccessDenied(FfmVerbs.class.getModule()), e);
        } catch (IllegalArgumentException e) {
            throw new Unavailable(library + " not found (dlopen: " + e.getMessage() + "): install rdma-core's libibverbs "
                    + "(Debian and Ubuntu: apt-get install libibverbs1; RHEL and Fedora: dnf install libibverbs), or name the "
                    + "library in " + VerbsConfig.LIBRARY.nameAndVariable(), e);
        } catch (MissingFunction e) {
            throw new Unavailable(library + " has no function " + e.getMessage() + ": it is not rdma-core's libibverbs "
                    + "(functions used: " + String.join(", ", FUNCTIONS) + "); check " + VerbsConfig.LIBRARY.nameAndVariable(), e);
        }
    }

    /** The sentence for a JVM that denies this module native access, with the exact flag to add. */
    static String nativeAccessDenied(Module module) {
        String target = module.isNamed() ? module.getName() : "ALL-UNNAMED";
        String who = module.isNamed() ? "module " + module.getName() : "code on the class path";
        return "the JVM denies native access to " + who + ": start it with --enable-native-access=" + target
                + (module.isNamed() ? " (besides dev.conduit.linux)" : "");
    }

    private static final class MissingFunction extends RuntimeException {
        @java.io.Serial private static final long serialVersionUID = 1L;

        MissingFunction(String name) {
            super(name, null, false, false);
        }
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
        return bind(lookup.find(name).orElseThrow(() -> new MissingFunction(name)), descriptor);
    }

    /** Every downcall handle, to an exported function or to a provider's function from the ops table, captures errno. */
    @SuppressWarnings("restricted") // this module is granted native access (DESIGN.md section 7)
    private static MethodHandle bind(MemorySegment function, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(function, descriptor, CAPTURE_ERRNO);
    }

    @Override
    public String library() {
        return library;
    }

    @Override
    public List<String> deviceNames() {
        return withDeviceList((capture, devices) -> {
            List<String> names = new ArrayList<>((int) (devices.byteSize() / ADDRESS.byteSize()));
            for (long i = 0; i < devices.byteSize() / ADDRESS.byteSize(); i++) {
                names.add(name(capture, devices.getAtIndex(ADDRESS, i)));
            }
            return List.copyOf(names);
        });
    }

    @Override
    public Device open(String name) {
        return withDeviceList((capture, devices) -> {
            for (long i = 0; i < devices.byteSize() / ADDRESS.byteSize(); i++) {
                MemorySegment device = devices.getAtIndex(ADDRESS, i);
                if (name(capture, device).equals(name)) {
                    // The context outlives the list: ibv_free_device_list leaves open devices alone.
                    MemorySegment context = (MemorySegment) openDevice.invokeExact(capture, device);
                    if (context.equals(MemorySegment.NULL)) {
                        throw new ErrnoException("ibv_open_device", errno(capture), name, name,
                                "check the permissions of /dev/infiniband/uverbs* and the memlock limit (ulimit -l)");
                    }
                    return opened(name, context);
                }
            }
            throw new IllegalArgumentException("no RDMA device named '" + name + "' in " + library);
        });
    }

    /**
     * The device over a context just opened, its {@code async_fd} made non-blocking first: the
     * transport looks for asynchronous events at each liveness check, where {@code ibv_get_async_event}
     * must answer {@code EAGAIN} rather than sleep until the next event.
     */
    private FfmDevice opened(String name, MemorySegment context) {
        int asyncFd = reinterpret(context, IBV_CONTEXT.byteSize()).get(JAVA_INT, CONTEXT_ASYNC_FD);
        try {
            // The descriptor belongs to libibverbs (ibv_close_device closes it): wrapped to set its flags, never closed here.
            Linux.libc().setNonBlocking(FileDescriptor.adopt(asyncFd, "async events of " + name), true);
        } catch (RuntimeException e) {
            try {
                checked("ibv_close_device", name, closeDevice, context);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return new FfmDevice(name, context);
    }

    /** What is done with the device list while it is held: {@code devices} is its array of {@code struct ibv_device *}. */
    private interface DeviceListUse<T> {
        T apply(MemorySegment capture, MemorySegment devices) throws Throwable;
    }

    /** Calls {@code use} with the device list ({@code ibv_get_device_list}), then frees the list. */
    private <T> T withDeviceList(DeviceListUse<T> use) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment list = (MemorySegment) getDeviceList.invokeExact(capture, count);
            if (list.equals(MemorySegment.NULL)) {
                int errno = errno(capture);
                throw new ErrnoException("ibv_get_device_list", errno, library, "&num_devices", hintForDeviceList(errno));
            }
            try {
                return use.apply(capture, reinterpret(list, ADDRESS.byteSize() * count.get(JAVA_INT, 0)));
            } finally {
                freeDeviceList.invokeExact(capture, list);
            }
        } catch (Throwable t) {
            throw propagate(t);
        }
    }

    /** What to do when the device list cannot be read. */
    static String hintForDeviceList(int errno) {
        if (errno == Errno.ENOSYS) {
            return "the kernel offers no RDMA verbs (/sys/class/infiniband_verbs is missing): load the driver of an RDMA "
                    + "adapter and ib_uverbs, or set up Soft-RoCE (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)";
        }
        return "see dmesg and rdma link for the state of the RDMA drivers";
    }

    private String name(MemorySegment capture, MemorySegment device) throws Throwable {
        MemorySegment name = (MemorySegment) getDeviceName.invokeExact(capture, device);
        // The name is struct ibv_device's char name[IBV_SYSFS_NAME_MAX], NUL-terminated within it.
        return name.equals(MemorySegment.NULL) ? "?" : reinterpret(name, IBV_SYSFS_NAME_MAX).getString(0, StandardCharsets.UTF_8);
    }

    private final class FfmDevice implements Device {
        private final String name;
        private final MemorySegment context;
        /** The queue pairs and completion queues of this context by address, for the {@code element} of their asynchronous events. */
        private final Map<Long, FfmQueuePair> queuePairs = new ConcurrentHashMap<>();
        private final Map<Long, FfmCompletionQueue> completionQueues = new ConcurrentHashMap<>();
        private final MemorySegment asyncCapture = Arena.ofAuto().allocate(CAPTURE_LAYOUT);
        private final MemorySegment asyncEvent = Arena.ofAuto().allocate(IBV_ASYNC_EVENT);
        private Ops ops;
        private volatile boolean closed;

        FfmDevice(String name, MemorySegment context) {
            this.name = name;
            this.context = context;
        }

        @Override
        public DeviceAttributes attributes() {
            check();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                MemorySegment attr = arena.allocate(IBV_DEVICE_ATTR);
                int rc = (int) queryDevice.invokeExact(capture, context, attr);
                if (rc != 0) {
                    throw new ErrnoException("ibv_query_device", errnoOf(rc, capture), name, name + ", &attr");
                }
                String firmware = attr.asSlice(DEVICE_FW_VER, 64).getString(0, StandardCharsets.UTF_8);
                return new DeviceAttributes(firmware, attr.get(BE64, DEVICE_NODE_GUID),
                        attr.get(JAVA_INT, DEVICE_VENDOR_ID), attr.get(JAVA_INT, DEVICE_VENDOR_PART_ID),
                        attr.get(JAVA_INT, DEVICE_MAX_QP), attr.get(JAVA_INT, DEVICE_MAX_CQE),
                        attr.get(java.lang.foreign.ValueLayout.JAVA_LONG, DEVICE_MAX_MR_SIZE), attr.get(JAVA_INT, DEVICE_ATOMIC_CAP),
                        Byte.toUnsignedInt(attr.get(JAVA_BYTE, DEVICE_PHYS_PORT_CNT)), attr.get(JAVA_INT, DEVICE_MAX_QP_RD_ATOM),
                        attr.get(JAVA_INT, DEVICE_MAX_QP_INIT_RD_ATOM));
            } catch (Throwable t) {
                throw propagate(t);
            }
        }

        @Override
        public PortAttributes port(int port) {
            check();
            checkPort(port);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                MemorySegment attr = arena.allocate(IBV_PORT_ATTR); // zeroed, as ___ibv_query_port does
                int rc = (int) queryPort.invokeExact(capture, context, (byte) port, attr);
                if (rc != 0) {
                    throw new ErrnoException("ibv_query_port", errnoOf(rc, capture), name, name + ", " + port + ", &attr");
                }
                return new PortAttributes(attr.get(JAVA_INT, PORT_STATE), attr.get(JAVA_INT, PORT_MAX_MTU),
                        attr.get(JAVA_INT, PORT_ACTIVE_MTU), attr.get(JAVA_INT, PORT_GID_TBL_LEN),
                        Short.toUnsignedInt(attr.get(JAVA_SHORT, PORT_LID)),
                        Byte.toUnsignedInt(attr.get(JAVA_BYTE, PORT_PHYS_STATE)),
                        Byte.toUnsignedInt(attr.get(JAVA_BYTE, PORT_LINK_LAYER)), Integer.toUnsignedLong(attr.get(JAVA_INT, PORT_MAX_MSG_SZ)));
            } catch (Throwable t) {
                throw propagate(t);
            }
        }

        @Override
        public byte[] gid(int port, int index) {
            check();
            checkPort(port);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                MemorySegment gid = arena.allocate(IBV_GID);
                int rc = (int) queryGid.invokeExact(capture, context, (byte) port, index, gid);
                if (rc != 0) {
                    throw new ErrnoException("ibv_query_gid", errnoOf(rc, capture), name, name + ", " + port + ", " + index + ", &gid");
                }
                return gid.toArray(JAVA_BYTE);
            } catch (Throwable t) {
                throw propagate(t);
            }
        }

        /** The provider's data-path functions from {@code context->ops}, bound on first use. */
        private Ops ops() {
            if (ops == null) {
                ops = Ops.of(context);
            }
            return ops;
        }

        @Override
        public ProtectionDomain allocateProtectionDomain() {
            check();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                MemorySegment pd = (MemorySegment) allocPd.invokeExact(capture, context);
                if (pd.equals(MemorySegment.NULL)) {
                    int errno = errno(capture);
                    throw new ErrnoException("ibv_alloc_pd", errno, name, name, switch (errno) {
                        case Errno.ENOMEM, Errno.EAGAIN -> "the device has no memory left for it: raise the locked-memory limit "
                                + "(ulimit -l, LimitMEMLOCK=), or close other pools and Conduits on " + name;
                        case Errno.EIO, Errno.ENODEV -> LOST_CONTEXT;
                        default -> Errno.remedy(errno, "the driver of " + name + " refused it: its kernel log (dmesg) says why");
                    });
                }
                return new FfmProtectionDomain(this, pd);
            } catch (Throwable t) {
                throw propagate(t);
            }
        }

        @Override
        public CompletionChannel createCompletionChannel() {
            check();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                MemorySegment channel = (MemorySegment) createCompChannel.invokeExact(capture, context);
                if (channel.equals(MemorySegment.NULL)) {
                    throw new ErrnoException("ibv_create_comp_channel", errno(capture), name, name);
                }
                MemorySegment struct = reinterpret(channel, IBV_COMP_CHANNEL.byteSize());
                int fd = struct.get(JAVA_INT, COMP_CHANNEL_FD);
                try {
                    // ibv_get_cq_event reads this descriptor: non-blocking, it returns EAGAIN instead of sleeping.
                    Linux.libc().setNonBlocking(FileDescriptor.adopt(fd, "comp channel of " + name), true);
                } catch (RuntimeException e) {
                    try {
                        checked("ibv_destroy_comp_channel", name, destroyCompChannel, struct);
                    } catch (RuntimeException suppressed) {
                        e.addSuppressed(suppressed);
                    }
                    throw e;
                }
                return new FfmCompletionChannel(name, struct, fd);
            } catch (Throwable t) {
                throw propagate(t);
            }
        }

        @Override
        public CompletionQueue createCompletionQueue(int entries, CompletionChannel channel) {
            check();
            MemorySegment channelPointer = channel == null ? MemorySegment.NULL : ((FfmCompletionChannel) channel).channel;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                // Before the create: a provider short of a data-path function throws here, with no queue made to leak.
                Ops ops = ops();
                MemorySegment cq = (MemorySegment) createCq.invokeExact(capture, context, entries, MemorySegment.NULL, channelPointer, 0);
                if (cq.equals(MemorySegment.NULL)) {
                    throw new ErrnoException("ibv_create_cq", errno(capture), name, name + ", " + entries + ", NULL, channel, 0",
                            "lower verbs.receive.buffers or verbs.send.buffers, or raise the memlock limit (ulimit -l)");
                }
                try {
                    FfmCompletionQueue queue = new FfmCompletionQueue(this, name, ops, cq);
                    completionQueues.put(cq.address(), queue);
                    return queue;
                } catch (RuntimeException | Error e) {
                    throw destroyedAfter(e, "ibv_destroy_cq", name, destroyCq, cq);
                }
            } catch (Throwable t) {
                throw propagate(t);
            }
        }

        @Override
        public synchronized AsyncEvent takeAsyncEvent() {
            check();
            try {
                int rc = (int) getAsyncEvent.invokeExact(asyncCapture, context, asyncEvent);
                if (rc != 0) {
                    int errno = errno(asyncCapture);
                    if (errno == Errno.EAGAIN) {
                        return null;
                    }
                    throw new ErrnoException("ibv_get_async_event", errno, name, name + ", &event",
                            "the device's event descriptor cannot be read: see dmesg for the adapter's state, then close and reopen the worker");
                }
                try {
                    int type = asyncEvent.get(JAVA_INT, ASYNC_EVENT_TYPE);
                    if (VerbsAbi.isQueuePairEvent(type)) {
                        return new AsyncEvent(type, queuePairs.get(asyncEvent.get(ADDRESS, ASYNC_EVENT_QP).address()), null, 0);
                    } else if (type == IBV_EVENT_CQ_ERR) {
                        return new AsyncEvent(type, null, completionQueues.get(asyncEvent.get(ADDRESS, ASYNC_EVENT_CQ).address()), 0);
                    } else if (VerbsAbi.isPortEvent(type)) {
                        return new AsyncEvent(type, null, null, asyncEvent.get(JAVA_INT, ASYNC_EVENT_PORT_NUM));
                    }
                    return new AsyncEvent(type, null, null, 0);
                } finally {
                    // Once it is copied out (the queue pair or queue may be destroyed on another thread as soon as this returns),
                    // and whatever the copy threw: ibv_destroy_qp and ibv_destroy_cq wait for every event of theirs to be acked.
                    ackAsyncEvent.invokeExact(asyncCapture, asyncEvent);
                }
            } catch (Throwable t) {
                throw propagate(t);
            }
        }

        /** Closed only once {@code ibv_close_device} succeeded, as every close here (see {@code FfmMemoryRegion.close}). */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            checked("ibv_close_device", name, closeDevice, context);
            closed = true;
        }

        private void check() {
            if (closed) {
                throw new IllegalStateException("device context of " + name + " is closed");
            }
        }

        private static void checkPort(int port) {
            if (port < 1 || port > 255) {
                throw new IllegalArgumentException("port " + port + " is not 1..255 (uint8_t port_num)");
            }
        }
    }

    /** The provider's functions behind verbs.h's inline {@code ibv_poll_cq}, {@code ibv_req_notify_cq}, {@code ibv_post_send}, {@code ibv_post_recv}. */
    private static final class Ops {
        final MethodHandle pollCq;
        final MethodHandle reqNotifyCq;
        final MethodHandle postSend;
        final MethodHandle postRecv;

        /** The ops table of {@code context} ({@code struct ibv_context *}). */
        static Ops of(MemorySegment context) {
            return new Ops(reinterpret(context, IBV_CONTEXT.byteSize()).asSlice(CONTEXT_OPS, IBV_CONTEXT_OPS.byteSize()));
        }

        private Ops(MemorySegment ops) {
            pollCq = bind(function(ops, OPS_POLL_CQ, "poll_cq"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            reqNotifyCq = bind(function(ops, OPS_REQ_NOTIFY_CQ, "req_notify_cq"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
            postSend = bind(function(ops, OPS_POST_SEND, "post_send"), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            postRecv = bind(function(ops, OPS_POST_RECV, "post_recv"), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        }

        private static MemorySegment function(MemorySegment ops, long offset, String name) {
            MemorySegment function = ops.get(ADDRESS, offset);
            if (function.equals(MemorySegment.NULL)) {
                throw new IllegalStateException("the verbs provider has no ops." + name + " in its struct ibv_context_ops");
            }
            return function;
        }
    }

    // For OpsTableTest only: the data-path objects over a context, queue pair and completion queue a C
    // shim made (compiled against verbs.h, its ops table pointing at the shim's functions), so that
    // what posting and polling write and read is checked by C code rather than by these layouts.
    // Never closed: their destroy functions would be called on the shim's static objects.

    QueuePair queuePairOver(MemorySegment context, MemorySegment qp) {
        return new FfmQueuePair(null, "shim", Ops.of(context), qp, reinterpret(qp, IBV_QP.byteSize()).get(JAVA_INT, QP_QP_NUM), null);
    }

    CompletionQueue completionQueueOver(MemorySegment context, MemorySegment cq) {
        return new FfmCompletionQueue(null, "shim", Ops.of(context), cq);
    }

    MemoryRegion registrationOver(MemorySegment memory, int lkey, int rkey) {
        return new FfmMemoryRegion("shim", memory, MemorySegment.NULL, lkey, rkey);
    }

    /** The remedy of an errno that says the device's context is gone. */
    private static final String LOST_CONTEXT = "the device context is lost (the device was reset or removed, or its driver "
            + "reloaded): close what uses it (the pool, or Conduit) and open it again once the device is back (ibv_devinfo lists it)";

    /**
     * Why {@code ibv_reg_mr} failed, and what to do: only a want of memory is the locked-memory limit's, or the caller's to
     * register {@code less}; the driver refuses a length or access flags with EINVAL.
     */
    private static String registrationRemedy(int errno, String less) {
        return switch (errno) {
            case Errno.ENOMEM, Errno.EAGAIN -> "the device could not pin the memory: raise the locked-memory limit (ulimit -l, "
                    + "LimitMEMLOCK=) or " + less;
            case Errno.EINVAL -> "the device refuses this length or these access flags (its max_mr_size, ibv_devinfo -v, bounds "
                    + "the length; a flag it does not support is refused too)";
            case Errno.EFAULT -> "the memory is not mapped readable and writable in this process: this is a bug in Conduit, "
                    + "please report it";
            case Errno.EIO, Errno.ENODEV -> LOST_CONTEXT;
            default -> Errno.remedy(errno, "the device's driver refused it: its kernel log (dmesg) says why");
        };
    }

    /**
     * A protection domain. Its registrations and queue pair creations are not the data path, but a
     * worker's close can meet one on the user's thread as its queue pairs' posts (a {@code connect}
     * under way as {@code Conduit.close()} closes the worker, the context's last user, which
     * deallocates the domain): so the domain's pointer lives in an arena of its own, which every
     * such call passes and its close closes first ({@link #closeWhenIdle}).
     */
    private final class FfmProtectionDomain implements ProtectionDomain {
        private final FfmDevice device;
        private final Arena arena = Arena.ofShared();
        /** {@code struct ibv_pd *}, in {@link #arena}: a call passing it holds the arena until it returns. */
        private final MemorySegment pd;
        /** The same pointer, outside the arena: what {@code ibv_dealloc_pd} is passed once the arena is closed. */
        private final MemorySegment handle;
        private boolean closed;

        FfmProtectionDomain(FfmDevice device, MemorySegment pd) {
            this.device = device;
            this.handle = pd;
            this.pd = reinterpret(pd, arena);
        }

        @Override
        public MemoryRegion register(MemorySegment memory, int access, String less) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                MemorySegment mr = (MemorySegment) regMr.invokeExact(capture, pd, memory, memory.byteSize(), access);
                if (mr.equals(MemorySegment.NULL)) {
                    int errno = errno(capture);
                    throw new ErrnoException("ibv_reg_mr", errno, device.name,
                            device.name + " pd, " + memory.byteSize() + " bytes, access 0x" + Integer.toHexString(access),
                            registrationRemedy(errno, less));
                }
                MemorySegment struct = reinterpret(mr, IBV_MR.byteSize());
                return new FfmMemoryRegion(device.name, memory, mr, struct.get(JAVA_INT, MR_LKEY), struct.get(JAVA_INT, MR_RKEY));
            } catch (Throwable t) {
                throw propagate(t, arena, device.name + " pd");
            }
        }

        /**
         * The queues' locks are held through the create, which names them by pointer only: their close, on the
         * worker's closing thread, waits for it, and one closed before is refused here rather than handed to the
         * library freed.
         */
        @Override
        public QueuePair createQueuePair(CompletionQueue sendQueue, CompletionQueue receiveQueue, int maxSendRequests, int maxReceiveRequests) {
            FfmCompletionQueue send = (FfmCompletionQueue) sendQueue;
            FfmCompletionQueue receive = (FfmCompletionQueue) receiveQueue;
            synchronized (send) {
                synchronized (receive) {
                    send.checkOpen();
                    receive.checkOpen();
                    return create(send, receive, maxSendRequests, maxReceiveRequests);
                }
            }
        }

        private QueuePair create(FfmCompletionQueue sendQueue, FfmCompletionQueue receiveQueue, int maxSendRequests, int maxReceiveRequests) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                MemorySegment attr = arena.allocate(IBV_QP_INIT_ATTR);
                attr.set(ADDRESS, QP_INIT_SEND_CQ, sendQueue.cq);
                attr.set(ADDRESS, QP_INIT_RECV_CQ, receiveQueue.cq);
                attr.set(JAVA_INT, QP_INIT_MAX_SEND_WR, maxSendRequests);
                attr.set(JAVA_INT, QP_INIT_MAX_RECV_WR, maxReceiveRequests);
                attr.set(JAVA_INT, QP_INIT_MAX_SEND_SGE, 1);
                attr.set(JAVA_INT, QP_INIT_MAX_RECV_SGE, 1);
                attr.set(JAVA_INT, QP_INIT_QP_TYPE, IBV_QPT_RC);
                attr.set(JAVA_INT, QP_INIT_SQ_SIG_ALL, 1);
                // Before the create: a provider short of a data-path function throws here, with no queue pair made to leak.
                Ops ops = device.ops();
                MemorySegment qp = (MemorySegment) createQp.invokeExact(capture, pd, attr);
                if (qp.equals(MemorySegment.NULL)) {
                    throw new ErrnoException("ibv_create_qp", errno(capture), device.name, device.name + " pd, RC, send " + maxSendRequests
                            + ", recv " + maxReceiveRequests, "lower verbs.send.buffers or verbs.receive.buffers (the device's max_qp_wr)");
                }
                try {
                    int number = reinterpret(qp, IBV_QP.byteSize()).get(JAVA_INT, QP_QP_NUM);
                    FfmQueuePair queuePair = new FfmQueuePair(device, device.name, ops, qp, number, sendQueue);
                    device.queuePairs.put(qp.address(), queuePair);
                    return queuePair;
                } catch (RuntimeException | Error e) {
                    throw destroyedAfter(e, "ibv_destroy_qp", device.name, destroyQp, qp);
                }
            } catch (Throwable t) {
                throw propagate(t, this.arena, device.name + " pd");
            }
        }

        /** Waits for a registration or queue pair creation under way on another thread, and takes none after: see {@link #closeWhenIdle}. */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closeWhenIdle(arena);
            checked("ibv_dealloc_pd", device.name, deallocPd, handle);
            closed = true;
        }
    }

    /**
     * Destroys {@code object}, created by the provider but not handed out because making its Java
     * side failed (out of memory for its buffers), so that it does not stay on the device; a failure
     * to destroy it is added to {@code failure}, which is returned to be thrown.
     */
    private static <T extends Throwable> T destroyedAfter(T failure, String call, String device, MethodHandle destroy, MemorySegment object) {
        try {
            checked(call, device, destroy, object);
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
        return failure;
    }

    /** Calls {@code int destroy(void *)} (the {@code ibv_close_device} / {@code ibv_destroy_*} / {@code ibv_dealloc_*} shape), throwing on a non-zero result. */
    private static void checked(String call, String device, MethodHandle destroy, MemorySegment object) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            int rc = (int) destroy.invokeExact(capture, object);
            if (rc != 0) {
                throw new ErrnoException(call, errnoOf(rc, capture), device, device);
            }
        } catch (Throwable t) {
            throw propagate(t);
        }
    }

    private final class FfmMemoryRegion implements MemoryRegion {
        private final String device;
        private final MemorySegment memory;
        private final MemorySegment mr;
        private final int lkey;
        private final int rkey;
        private boolean closed;

        FfmMemoryRegion(String device, MemorySegment memory, MemorySegment mr, int lkey, int rkey) {
            this.device = device;
            this.memory = memory;
            this.mr = mr;
            this.lkey = lkey;
            this.rkey = rkey;
        }

        @Override
        public MemorySegment memory() {
            return memory;
        }

        @Override
        public int localKey() {
            return lkey;
        }

        @Override
        public int remoteKey() {
            return rkey;
        }

        /**
         * Closed only once {@code ibv_dereg_mr} succeeded: a failed one leaves the region registered
         * (the device may still write to its memory), so it must not read closed, and a retry calls
         * it again. Synchronized, so that two threads closing at once never both deregister, the
         * second on a {@code struct ibv_mr} the first freed.
         */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            checked("ibv_dereg_mr", device, deregMr, mr);
            closed = true;
        }
    }

    private final class FfmCompletionChannel implements CompletionChannel {
        private final String device;
        private final MemorySegment channel;
        private final int fd;
        /** What taking an event passes: closed once no call is under way, as the close begins ({@link #closeWhenIdle}). */
        private final Arena arena = Arena.ofShared();
        private final MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
        private final MemorySegment eventQueue = arena.allocate(ADDRESS);
        private final MemorySegment eventContext = arena.allocate(ADDRESS);
        private boolean closed;

        FfmCompletionChannel(String device, MemorySegment channel, int fd) {
            this.device = device;
            this.channel = channel;
            this.fd = fd;
        }

        @Override
        public int fd() {
            return fd;
        }

        @Override
        public boolean takeEvent() {
            try {
                int rc = (int) getCqEvent.invokeExact(capture, channel, eventQueue, eventContext);
                if (rc != 0) {
                    int errno = errno(capture);
                    if (errno == Errno.EAGAIN) {
                        return false;
                    }
                    throw new ErrnoException("ibv_get_cq_event", errno, device, device + " channel");
                }
                ackCqEvents.invokeExact(capture, eventQueue.get(ADDRESS, 0), 1);
                return true;
            } catch (Throwable t) {
                throw propagate(t, arena, device + " completion channel");
            }
        }

        /** Waits for an event being taken on another thread, and takes none after: see {@link #closeWhenIdle}. */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closeWhenIdle(arena);
            checked("ibv_destroy_comp_channel", device, destroyCompChannel, channel);
            closed = true;
        }
    }

    private final class FfmCompletionQueue implements CompletionQueue {
        private static final int BATCH = 32;
        /** The device that created it, where its asynchronous events find it; {@code null} for the ops shim's. */
        private final FfmDevice owner;
        private final String device;
        private final Ops ops;
        private final MemorySegment cq;
        private final Arena arena = Arena.ofShared();
        private final MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
        private final MemorySegment wc = arena.allocate(IBV_WC.byteSize() * BATCH, 8);
        private boolean closed;

        FfmCompletionQueue(FfmDevice owner, String device, Ops ops, MemorySegment cq) {
            this.owner = owner;
            this.device = device;
            this.ops = ops;
            this.cq = cq;
        }

        @Override
        public int poll(Completions into) {
            try {
                int n = (int) ops.pollCq.invokeExact(capture, cq, Math.min(BATCH, into.capacity()), wc);
                if (n < 0) {
                    // Providers return their own negative code (mlx4 and mlx5: -2) and leave errno as an earlier call set it.
                    throw new ConduitException("verbs: ibv_poll_cq(" + device + " cq) returned " + n + ": the provider could not read "
                            + "the completion queue (poll_cq sets no errno; the value is the provider's code): its connections "
                            + "cannot complete work; see dmesg for the adapter's state, then close and reopen the worker");
                }
                for (int i = 0; i < n; i++) {
                    long at = i * IBV_WC.byteSize();
                    into.requestId[i] = wc.get(JAVA_LONG, at + WC_WR_ID);
                    into.status[i] = wc.get(JAVA_INT, at + WC_STATUS);
                    into.opcode[i] = wc.get(JAVA_INT, at + WC_OPCODE);
                    into.vendorError[i] = wc.get(JAVA_INT, at + WC_VENDOR_ERR);
                    into.byteLength[i] = wc.get(JAVA_INT, at + WC_BYTE_LEN);
                    into.queuePair[i] = wc.get(JAVA_INT, at + WC_QP_NUM);
                }
                return n;
            } catch (Throwable t) {
                throw propagate(t, arena, device + " cq");
            }
        }

        @Override
        public void requestNotification() {
            try {
                int rc = (int) ops.reqNotifyCq.invokeExact(capture, cq, 0);
                if (rc != 0) {
                    throw new ErrnoException("ibv_req_notify_cq", errnoOf(rc, capture), device, device + " cq, 0");
                }
            } catch (Throwable t) {
                throw propagate(t, arena, device + " cq");
            }
        }

        /** Refuses a queue pair on this queue once its close began, as the data path is ({@link #propagate(Throwable, Arena, String)}). */
        private void checkOpen() {
            if (!arena.scope().isAlive()) {
                throw new IllegalStateException("verbs: " + device + " cq is closed");
            }
        }

        /** Waits for a poll under way on another thread, and polls none after, also when the destroy fails: see {@link #closeWhenIdle}. */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closeWhenIdle(arena);
            checked("ibv_destroy_cq", device, destroyCq, cq);
            closed = true;
            if (owner != null) {
                // This queue only: once destroyed, its address may already be a new queue's, created on another worker's thread.
                owner.completionQueues.remove(cq.address(), this);
            }
        }
    }

    private final class FfmQueuePair implements QueuePair {
        /** The device that created it, where its asynchronous events find it; {@code null} for the ops shim's. */
        private final FfmDevice owner;
        private final String device;
        private final Ops ops;
        private final MemorySegment qp;
        private final int number;
        /** {@code null} for the ops shim's, which no transport owns. */
        private final CompletionQueue sendQueue;
        private final Arena arena = Arena.ofShared();
        private final MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
        private final MemorySegment sendWr = arena.allocate(IBV_SEND_WR);
        private final MemorySegment sendSge = arena.allocate(IBV_SGE);
        private final MemorySegment recvWr = arena.allocate(IBV_RECV_WR);
        private final MemorySegment recvSge = arena.allocate(IBV_SGE);
        private final MemorySegment badWr = arena.allocate(ADDRESS);
        /** What {@link #modify} fills: in the arena, so that a modify too is waited for by a close, and refused after it. */
        private final MemorySegment attr = arena.allocate(IBV_QP_ATTR);
        private boolean closed;

        FfmQueuePair(FfmDevice owner, String device, Ops ops, MemorySegment qp, int number, CompletionQueue sendQueue) {
            this.owner = owner;
            this.device = device;
            this.ops = ops;
            this.qp = qp;
            this.number = number;
            this.sendQueue = sendQueue;
            sendWr.set(ADDRESS, SEND_WR_SG_LIST, sendSge);
            sendWr.set(JAVA_INT, SEND_WR_NUM_SGE, 1);
            sendWr.set(JAVA_INT, SEND_WR_SEND_FLAGS, IBV_SEND_SIGNALED);
            recvWr.set(ADDRESS, RECV_WR_SG_LIST, recvSge);
            recvWr.set(JAVA_INT, RECV_WR_NUM_SGE, 1);
        }

        @Override
        public int number() {
            return number;
        }

        @Override
        public CompletionQueue sendQueue() {
            return sendQueue;
        }

        @Override
        public void toInit(int port, int access) {
            modify("INIT", attr -> {
                attr.set(JAVA_INT, QP_ATTR_QP_STATE, IBV_QPS_INIT);
                attr.set(JAVA_SHORT, QP_ATTR_PKEY_INDEX, (short) 0);
                attr.set(JAVA_BYTE, QP_ATTR_PORT_NUM, (byte) port);
                attr.set(JAVA_INT, QP_ATTR_ACCESS_FLAGS, access);
                return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
            });
        }

        @Override
        public void toReadyToReceive(PeerPath peer, int port, int gidIndex, int responderDepth) {
            modify("RTR", attr -> {
                attr.set(JAVA_INT, QP_ATTR_QP_STATE, IBV_QPS_RTR);
                attr.set(JAVA_INT, QP_ATTR_PATH_MTU, peer.mtu());
                attr.set(JAVA_INT, QP_ATTR_DEST_QP_NUM, peer.queuePair());
                attr.set(JAVA_INT, QP_ATTR_RQ_PSN, peer.packetSequence());
                attr.set(JAVA_BYTE, QP_ATTR_MAX_DEST_RD_ATOMIC, (byte) responderDepth);
                attr.set(JAVA_BYTE, QP_ATTR_MIN_RNR_TIMER, (byte) 12);
                attr.set(JAVA_SHORT, QP_ATTR_AH_DLID, (short) peer.lid());
                attr.set(JAVA_BYTE, QP_ATTR_AH_PORT_NUM, (byte) port);
                if (peer.global()) {
                    attr.set(JAVA_BYTE, QP_ATTR_AH_IS_GLOBAL, (byte) 1);
                    MemorySegment.copy(peer.gid(), 0, attr, JAVA_BYTE, QP_ATTR_AH_DGID, 16);
                    attr.set(JAVA_BYTE, QP_ATTR_AH_SGID_INDEX, (byte) gidIndex);
                    attr.set(JAVA_BYTE, QP_ATTR_AH_HOP_LIMIT, (byte) 64);
                }
                return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC
                        | IBV_QP_MIN_RNR_TIMER;
            });
        }

        @Override
        public void toReadyToSend(int packetSequence, int initiatorDepth) {
            modify("RTS", attr -> {
                attr.set(JAVA_INT, QP_ATTR_QP_STATE, IBV_QPS_RTS);
                attr.set(JAVA_INT, QP_ATTR_SQ_PSN, packetSequence);
                attr.set(JAVA_BYTE, QP_ATTR_TIMEOUT, (byte) 14);
                attr.set(JAVA_BYTE, QP_ATTR_RETRY_CNT, (byte) 7);
                // 6, not 7 (which retries without end): credits keep a correct peer's receives posted, so a SEND finds none
                // only at a broken or hostile peer, which must fail the endpoint rather than stall its sends and flush for good.
                attr.set(JAVA_BYTE, QP_ATTR_RNR_RETRY, (byte) 6);
                attr.set(JAVA_BYTE, QP_ATTR_MAX_RD_ATOMIC, (byte) initiatorDepth);
                return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
            });
        }

        /** Fills a zeroed {@code struct ibv_qp_attr} and returns the attribute mask. */
        private interface Attributes {
            int fill(MemorySegment attr);
        }

        /** Called by one thread at a time (the wire-up thread, then the progress thread), as posting is. */
        private void modify(String state, Attributes fill) {
            try {
                attr.fill((byte) 0);
                int mask = fill.fill(attr);
                int rc = (int) modifyQp.invokeExact(capture, qp, attr, mask);
                if (rc != 0) {
                    throw new ErrnoException("ibv_modify_qp", errnoOf(rc, capture), device, device + " qp " + number + " to " + state
                            + ", mask 0x" + Integer.toHexString(mask), "check the port (verbs.port), its GID (verbs.gid.index) and that the peer's link is up");
                }
            } catch (Throwable t) {
                throw propagate(t, arena, device + " qp " + number);
            }
        }

        @Override
        public void postReceive(long requestId, MemoryRegion region, long offset, int length) {
            FfmMemoryRegion mr = (FfmMemoryRegion) region;
            try {
                recvWr.set(JAVA_LONG, RECV_WR_ID, requestId);
                recvSge.set(JAVA_LONG, SGE_ADDR, mr.memory.address() + offset);
                recvSge.set(JAVA_INT, SGE_LENGTH, length);
                recvSge.set(JAVA_INT, SGE_LKEY, mr.lkey);
                int rc = (int) ops.postRecv.invokeExact(capture, qp, recvWr, badWr);
                if (rc != 0) {
                    throw new ErrnoException("ibv_post_recv", errnoOf(rc, capture), device, device + " qp " + number);
                }
            } catch (Throwable t) {
                throw propagate(t, arena, device + " qp " + number);
            }
        }

        @Override
        public void postSend(long requestId, int opcode, MemoryRegion region, long offset, int length, long remoteAddress, int remoteKey,
                             long compareAdd, long swap) {
            FfmMemoryRegion mr = (FfmMemoryRegion) region;
            try {
                sendWr.set(JAVA_LONG, SEND_WR_ID, requestId);
                sendWr.set(JAVA_INT, SEND_WR_OPCODE, opcode);
                sendSge.set(JAVA_LONG, SGE_ADDR, mr.memory.address() + offset);
                sendSge.set(JAVA_INT, SGE_LENGTH, length);
                sendSge.set(JAVA_INT, SGE_LKEY, mr.lkey);
                if (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
                    sendWr.set(JAVA_LONG, SEND_WR_ATOMIC_REMOTE_ADDR, remoteAddress);
                    sendWr.set(JAVA_LONG, SEND_WR_ATOMIC_COMPARE_ADD, compareAdd);
                    sendWr.set(JAVA_LONG, SEND_WR_ATOMIC_SWAP, swap);
                    sendWr.set(JAVA_INT, SEND_WR_ATOMIC_RKEY, remoteKey);
                } else {
                    sendWr.set(JAVA_LONG, SEND_WR_RDMA_REMOTE_ADDR, remoteAddress);
                    sendWr.set(JAVA_INT, SEND_WR_RDMA_RKEY, remoteKey);
                }
                int rc = (int) ops.postSend.invokeExact(capture, qp, sendWr, badWr);
                if (rc != 0) {
                    throw new ErrnoException("ibv_post_send", errnoOf(rc, capture), device, device + " qp " + number + ", opcode " + opcode);
                }
            } catch (Throwable t) {
                throw propagate(t, arena, device + " qp " + number);
            }
        }

        /** Waits for a post or modify under way on another thread, and takes none after, also when the destroy fails: see {@link #closeWhenIdle}. */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closeWhenIdle(arena);
            checked("ibv_destroy_qp", device, destroyQp, qp);
            closed = true;
            // Not before: a queue pair that could not be destroyed may still have events, which must still find it. This one
            // only: once destroyed, its address may already be a new queue pair's, created on another worker's thread.
            if (owner != null) {
                owner.queuePairs.remove(qp.address(), this);
            }
        }
    }

    @SuppressWarnings("restricted") // only reached once load() bound the library, i.e. with native access
    private static MemorySegment reinterpret(MemorySegment pointer, long size) {
        return pointer.reinterpret(size);
    }

    /** {@code pointer} in {@code arena}'s lifetime: a downcall passing it holds the arena open until it returns. */
    @SuppressWarnings("restricted") // as above
    private static MemorySegment reinterpret(MemorySegment pointer, Arena arena) {
        return pointer.reinterpret(arena, null);
    }

    /**
     * The errno of a failed verbs call that returns an int: the query functions and the providers'
     * {@code post_send}, {@code post_recv} and {@code req_notify_cq} return the errno itself,
     * {@code ibv_query_gid} returns -1 and leaves it in {@code errno}, and some providers return a
     * negated errno. Only -1 reads {@code errno}: a provider that returns a code sets none, and what
     * {@code errno} holds then is an earlier call's.
     */
    private static int errnoOf(int rc, MemorySegment capture) {
        if (rc > 0) {
            return rc;
        }
        if (rc < -1) {
            return -rc;
        }
        int errno = errno(capture);
        return errno != 0 ? errno : -rc;
    }

    private static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    /**
     * Closes {@code arena}, which holds what every data-path call of one queue pair, completion
     * queue or channel passes to the library, once no such call is under way: the runtime may close
     * a worker from another thread while its user is still inside a call ({@code Conduit.close()},
     * a second after asking the user to close it), and the destroy that follows frees what a call
     * under way would go on using, a crash of the JVM rather than an exception. A downcall keeps
     * the arena of each segment it is passed in use until it returns, so the close fails while one
     * is under way (tried again after a pause: such calls take microseconds), and every call after
     * it throws {@link IllegalStateException} before reaching the library ({@link #propagate(Throwable, Arena, String)}).
     * Closed before the destroy, also when that then fails: a call on an object being closed is
     * refused either way, and the object stays closable again. This costs the data path nothing:
     * each of its downcalls holds the arena for the duration anyway.
     */
    private static void closeWhenIdle(Arena arena) {
        if (!arena.scope().isAlive()) {
            return; // closed by an earlier close whose destroy failed
        }
        while (true) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException inUse) {
                LockSupport.parkNanos(CALL_UNDER_WAY_PAUSE_NANOS);
            }
        }
    }

    /** How long a close pauses before it looks again whether a call of the data path it waits for has returned. */
    private static final long CALL_UNDER_WAY_PAUSE_NANOS = 10_000;

    /** {@link #propagate(Throwable)}, naming {@code object} closed when its {@code arena} is ({@link #closeWhenIdle}). */
    private static RuntimeException propagate(Throwable thrown, Arena arena, String object) {
        if (thrown instanceof IllegalStateException && !arena.scope().isAlive()) {
            throw new IllegalStateException("verbs: " + object + " is closed", thrown);
        }
        throw propagate(thrown);
    }

    private static RuntimeException propagate(Throwable thrown) {
        if (thrown instanceof RuntimeException e) {
            throw e;
        }
        if (thrown instanceof Error e) {
            throw e;
        }
        throw new AssertionError("a downcall threw a checked exception", thrown);
    }
}
