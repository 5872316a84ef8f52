package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;

import java.util.Map;
import java.util.Set;

/** Chooses how the runtime enforces a requested thread mode over the plugins that will serve it. */
public final class ThreadPolicies {

    private ThreadPolicies() {
    }

    /** Whether a plugin that declares {@code declared} may be called in {@code mode} as it is. */
    public static boolean supports(Set<ThreadMode> declared, ThreadMode mode) {
        return switch (mode) {
            case SINGLE -> !declared.isEmpty();
            case SERIALIZED -> declared.contains(ThreadMode.SERIALIZED) || declared.contains(ThreadMode.MULTI);
            case MULTI -> declared.contains(ThreadMode.MULTI);
        };
    }

    /**
     * Whether the plugin must be confined to one runtime thread to serve {@code mode}: it declares
     * only {@code SINGLE} and {@code mode} shares the worker between threads.
     *
     * @throws ConduitException naming plugin, modes and the option, when confinement is needed but not allowed
     */
    public static boolean needsConfinement(String plugin, Set<ThreadMode> declared, ThreadMode mode, boolean allowed) {
        if (mode == ThreadMode.SINGLE || supports(declared, ThreadMode.SERIALIZED)) {
            return false;
        }
        if (!allowed) {
            throw new ConduitException("plugin '" + plugin + "' declares thread modes " + declared + " and cannot serve a " + mode
                    + " worker: it is thread-confined. Use ThreadMode.SINGLE, exclude it (CONDUIT_TRANSPORTS=^" + plugin
                    + "), or let the runtime run every call to it on one thread of its own (thread.confine=true, CONDUIT_THREAD_CONFINE=true).");
        }
        return true;
    }

    /**
     * The mode a plugin declaring {@code declared} is called in by a worker in {@code mode}, which
     * its transport's context tells it ({@code TransportContext.threadMode()}): one it serves
     * ({@link #supports}).
     * Confined, by one thread ({@code SINGLE}); under a {@code MULTI} worker's runtime lock, which
     * every plugin gets that does not declare {@code MULTI}, by one thread at a time
     * ({@code SERIALIZED}); else in the worker's mode. Until 2026-12-07 it was told the worker's
     * mode in every case, which such a plugin does not serve
     * (WorkerThreadModesTest#aTransportIsToldTheModeItIsCalledInWhichItDeclares).
     */
    public static ThreadMode calledIn(ThreadMode mode, Set<ThreadMode> declared, boolean confined) {
        if (confined) return ThreadMode.SINGLE;
        if (mode == ThreadMode.MULTI && !declared.contains(ThreadMode.MULTI)) return ThreadMode.SERIALIZED;
        return mode;
    }

    /** The guard for a worker in {@code mode} over plugins declaring {@code declaredByPlugin}. */
    public static ThreadGuard guard(ThreadMode mode, Map<String, Set<ThreadMode>> declaredByPlugin, String what) {
        return switch (mode) {
            case SINGLE -> new OwnerCheck(Thread.currentThread(), what);
            case SERIALIZED -> new OverlapCheck(what);
            case MULTI -> declaredByPlugin.values().stream().allMatch(d -> supports(d, ThreadMode.MULTI))
                    ? new PassThrough() : new RuntimeLock();
        };
    }

    /** The policy to report: confinement, when any plugin is confined, else the guard's. */
    public static ThreadPolicy reported(ThreadGuard guard, boolean anyConfined) {
        return anyConfined ? ThreadPolicy.CONFINED_THREAD : guard.policy();
    }
}
