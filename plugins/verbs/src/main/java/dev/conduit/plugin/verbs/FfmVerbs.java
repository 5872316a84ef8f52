package dev.conduit.plugin.verbs;

import dev.conduit.linux.ErrnoException;
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

import static dev.conduit.plugin.verbs.VerbsAbi.*;
import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
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
            "ibv_open_device", "ibv_close_device", "ibv_query_device", "ibv_query_port", "ibv_query_gid");

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
                    + "library in " + VerbsConfig.describe(VerbsConfig.LIBRARY), e);
        } catch (MissingFunction e) {
            throw new Unavailable(library + " has no function " + e.getMessage() + ": it is not rdma-core's libibverbs "
                    + "(functions used: " + String.join(", ", FUNCTIONS) + "); check " + VerbsConfig.describe(VerbsConfig.LIBRARY), e);
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

    @SuppressWarnings("restricted") // this module is granted native access (DESIGN.md section 7)
    private static MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new MissingFunction(name));
        return LINKER.downcallHandle(symbol, descriptor, CAPTURE_ERRNO);
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
                    return new FfmDevice(name, context);
                }
            }
            throw new IllegalArgumentException("no RDMA device named '" + name + "' in " + library);
        });
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
        if (errno == dev.conduit.linux.Errno.ENOSYS) {
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
        private boolean closed;

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
                        Byte.toUnsignedInt(attr.get(JAVA_BYTE, DEVICE_PHYS_PORT_CNT)));
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
                        Byte.toUnsignedInt(attr.get(JAVA_BYTE, PORT_LINK_LAYER)));
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

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
                int rc = (int) closeDevice.invokeExact(capture, context);
                if (rc != 0) {
                    throw new ErrnoException("ibv_close_device", errnoOf(rc, capture), name, name);
                }
            } catch (Throwable t) {
                throw propagate(t);
            }
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

    @SuppressWarnings("restricted") // only reached once load() bound the library, i.e. with native access
    private static MemorySegment reinterpret(MemorySegment pointer, long size) {
        return pointer.reinterpret(size);
    }

    /**
     * The errno of a failed verbs call that returns an int: the query functions return the errno
     * itself, {@code ibv_query_gid} returns -1 and leaves it in {@code errno}, and some providers
     * return a negated errno.
     */
    private static int errnoOf(int rc, MemorySegment capture) {
        if (rc > 0) {
            return rc;
        }
        int errno = errno(capture);
        return errno != 0 ? errno : -rc;
    }

    private static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
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
