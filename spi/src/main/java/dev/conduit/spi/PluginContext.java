package dev.conduit.spi;

import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * What the runtime gives a plugin when it probes it or opens one of its objects.
 *
 * <p>Implemented by the runtime; used by plugins. It is the plugin's only view of the runtime.
 */
public interface PluginContext {

    /** The configuration, including this plugin's own declared keys. */
    Config config();

    /**
     * This process's view of the shared directory ({@code CONDUIT_SHARED_DIR}) where plugins
     * publish files and sockets. A host and a container may mount it at different paths: every path
     * a plugin puts into a handle or an address is relative to it.
     */
    Path sharedDirectory();

    /** A logger named after the plugin. */
    System.Logger logger();

    /**
     * Makes {@code call}, which may wait in a native call (an FFM downcall: {@code poll},
     * {@code recvmsg}, a futex wait, a blocking {@code connect}) for something outside this
     * process, and returns its result; its exceptions propagate unchanged. A virtual thread cannot
     * leave its carrier during a native call, and the JDK adds no carrier for one as it does for its
     * own blocking I/O: as many virtual threads waiting in such calls as the scheduler has carriers
     * stop every other virtual thread of the JVM. So the runtime makes the call of a virtual thread
     * on a platform thread of its own while the virtual thread parks; a platform thread's call is
     * made by that thread itself, as fast as a direct call.
     *
     * <p>Wrap in it each operation that may wait on another process or a device for longer than a
     * system call takes (memfd wraps its exchange with the exporter's descriptor server, up to
     * {@code memfd.connect.timeout}); not a call that returns at once ({@code mmap}, a
     * non-blocking {@code send}, {@code flock(LOCK_NB)}): each hand-off costs a thread's wake-up.
     * The call behaves as if made by the caller: it runs with the caller's context class loader
     * (its {@code ServiceLoader.load(Class)} and logging bridges see what the caller's would), an
     * interrupt of the caller, before or during the call, interrupts the thread that makes it while
     * it does, and the caller's interrupt status is kept; a native call sees no interrupt on either thread, so bound it by a timeout of the
     * plugin's own. The call must not depend on being made on the caller's thread: no state
     * confined to it (a confined arena, a thread-local, a lock the caller holds). Everything it
     * opens and returns is the caller's: the runtime never drops a result. When no platform thread
     * can be started for a virtual thread's call (the process's or its cgroup's limit of threads),
     * the call is not made and a {@link ConduitException} says so ({@link ThreadStart#failed}).
     *
     * <p>The default makes the call directly (a plugin's tests, the TCK's context), so a plugin
     * may call it whatever context it is given. Since SPI 1.1.
     */
    default <T> T blockingCall(Supplier<T> call) {
        return call.get();
    }
}
