package dev.conduit;

import dev.conduit.spi.ThreadMode;

import java.util.List;

/**
 * The entry point: the plugins this process found and selected, their configuration, and the
 * workers, pools and imported regions opened through it.
 *
 * <pre>{@code
 * try (Conduit conduit = Conduit.open();
 *      Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
 *     ...
 * }
 * }</pre>
 *
 * <p>A {@code Conduit} is thread-safe. {@link #close()} closes everything opened through it, in
 * reverse order of opening.
 */
public interface Conduit extends AutoCloseable {

    /** A {@code Conduit} configured from system properties, the environment and defaults. */
    static Conduit open() {
        return builder().build();
    }

    /** A builder, for configuration in code (the strongest source) and plugin directories. */
    static ConduitBuilder builder() {
        return new ConduitBuilder();
    }

    /**
     * Every plugin discovery found: selected, excluded by {@code transports} (not probed),
     * unavailable (with the reason), refused (SPI version), shadowed (by another plugin of the same
     * name) and broken, in preference order for the selected ones, then by name. A selected plugin's
     * {@link PluginInfo#unsupportedHere()} names the capabilities its probe ruled out here.
     */
    List<PluginInfo> plugins();

    /** The names of the selected, available plugins, most preferred first ({@code CONDUIT_TRANSPORTS}). */
    List<String> selectedPlugins();

    /** Every configuration key the runtime and the plugins declare, with value, source and doc, by name. */
    List<ConfigEntry> configuration();

    /**
     * A worker with a transport of every selected plugin that provides one here, used in
     * {@code mode}. A plugin whose probe ruled its transport out here is left out (memfd on a
     * shared directory this process cannot write, which still imports), and the thread-mode policy
     * is chosen from the others.
     *
     * @throws dev.conduit.spi.ConduitException when no selected plugin provides a transport here
     *         (the message names each one ruled out, and why), or a
     *         plugin cannot be used in {@code mode} (the message names plugin and modes, and the
     *         {@code thread.confine} key and its variable, CONDUIT_THREAD_CONFINE)
     */
    Worker newWorker(ThreadMode mode);

    /**
     * How a worker made now in {@code mode} would be guarded (the mode in force), without making
     * one: what {@link Worker#threadPolicy()} would say. {@code conduit info} shows it for every mode.
     *
     * @throws dev.conduit.spi.ConduitException when {@link #newWorker(ThreadMode)} would refuse {@code mode},
     *         with the same message
     */
    ThreadPolicy threadPolicy(ThreadMode mode);

    /**
     * A new pool over a memory provider of {@code plugin}, which must be selected and offer
     * {@link dev.conduit.spi.Capability#MEMORY} here (declare it, and its probe not rule it out:
     * {@link PluginInfo#unsupportedHere()}). Each call opens a pool with a provider of its own
     * (its own lease, and for memfd its own descriptor server): keep the pool rather than asking
     * for it again, and close it when done; what is still open is closed with this {@code Conduit}.
     *
     * @throws dev.conduit.spi.ConduitException naming the plugin, its status and what to do when it
     *         cannot provide memory here; a {@link dev.conduit.spi.NotSupportedException} when it is
     *         selected but offers no memory here
     */
    Pool pool(String plugin);

    /**
     * A new pool, as {@link #pool(String)}, over the most preferred selected plugin that provides
     * memory here (declares {@code MEMORY}, and its probe did not rule it out).
     *
     * @throws dev.conduit.spi.ConduitException when none does, naming each plugin whose probe ruled
     *         memory out here, and why
     */
    Pool pool();

    /**
     * Opens the region another process exported, from its IPC handle. Needs no provider, no pool and
     * no device parameter: the handle is validated field by field, routed by plugin name to that
     * plugin's importer, which may touch only what this process's configuration allows, and mapped
     * through the IPC cache (a repeated open of a cached export makes no system call).
     *
     * <p>A hit asks the producer nothing: a handle this {@code Conduit} imported before its producer
     * freed the chunk maps the old memory while the cache holds it (up to {@code ipc.cache.bytes} and
     * {@code ipc.cache.entries} of unused chunks, each for one to two {@code ipc.cache.idle} after
     * its last region closed), which no other
     * process shares any more (docs/runtime.md, "Consumer-only import and the IPC cache"). The producer's protocol
     * must say when a region is freed.
     *
     * <p>On a virtual thread, a miss runs the plugin's importer on a platform thread of the
     * runtime's while the virtual thread parks: an importer may wait in a native call for the
     * producer (memfd asks its descriptor server), which would pin the carrier for that long. An
     * interrupt reaches the importer there as it would on the caller, and the caller keeps it.
     *
     * <p>The handle is read in place, not copied (a hit allocates nothing): no thread may write the
     * array during the call. Bytes changed meanwhile never make a view outside a mapped chunk, but
     * may make one of a region neither the old nor the new handle names.
     *
     * @throws dev.conduit.spi.InvalidHandleException naming the field, for bytes that are not a valid handle
     * @throws dev.conduit.spi.ConduitException when the plugin is not available here, or the export is
     *         gone (the producer freed it; checked on a miss) or cannot be opened; nothing stays open
     */
    ImportedRegion importRegion(byte[] handle);

    /**
     * {@link #importRegion(byte[])} into {@code reuse}, a closed {@code ImportedRegion} this
     * {@code Conduit} returned before, which is reopened on the new region and returned: a hit of
     * the IPC cache then allocates nothing (Agrona's flyweight way; the one-argument form makes a
     * new {@code ImportedRegion} per import). For a consumer that imports a region per message and
     * closes it before the next:
     *
     * <pre>{@code
     * ImportedRegion region = null;
     * for (byte[] handle : handles) {
     *     region = conduit.importRegion(handle, region);
     *     try {
     *         consume(region.segment());
     *     } finally {
     *         region.close();
     *     }
     * }
     * }</pre>
     *
     * <p>Every reference to {@code reuse} sees the new region once this returns: hand back only a
     * region nothing else holds. A {@link java.lang.foreign.MemorySegment} taken from it before stays the old view.
     * When the import fails, {@code reuse} stays closed, with its old region.
     *
     * @param reuse a closed region to reopen, or {@code null} for a new one
     * @throws IllegalArgumentException when {@code reuse} was not returned by this {@code Conduit}'s
     *         {@code importRegion}
     * @throws IllegalStateException when {@code reuse} is still open (close it first), or another
     *         thread is reopening it
     * @throws dev.conduit.spi.InvalidHandleException as {@link #importRegion(byte[])}
     * @throws dev.conduit.spi.ConduitException as {@link #importRegion(byte[])}
     */
    ImportedRegion importRegion(byte[] handle, ImportedRegion reuse);

    /** The IPC cache's counters, and the bounds it keeps unused imports to. */
    IpcCacheStats ipcCacheStats();

    /**
     * Closes every worker and pool opened through this {@code Conduit}, newest first (but for
     * workers closed on their users' threads, below), then unmaps
     * every imported region. Errors are collected: one {@code ConduitException} is thrown with every
     * failure suppressed in it. Idempotent.
     *
     * <p>A worker that another thread may be inside right now (a {@code SINGLE} worker of another
     * live thread, a {@code SERIALIZED} worker, a {@code MULTI} worker the runtime serializes) is
     * not closed under that thread: it is asked to close, which wakes a thread asleep in
     * {@link Worker#await}; the call under way, or the next, closes it as it returns, on its own
     * thread, and later calls throw {@link IllegalStateException} saying the {@code Conduit} was
     * closed. A worker whose guard is free ({@code SERIALIZED}, or {@code MULTI} under the runtime's
     * lock), or whose {@code SINGLE} owner has ended, is closed at once. This method waits for the others,
     * all together, at most one second; what is still open then is closed from this thread, with
     * a WARNING, and calls under way on it may fail. A close a worker's user has started is waited
     * for to its end. So stop, or let finish, the threads that use
     * workers before closing their {@code Conduit}. Called from a message or error handler, or
     * from a {@code PayloadEncoder}, it closes everything else, and the worker running that
     * handler or encoder closes as the call that ran it returns (on a {@code MULTI} worker whose
     * plugins take concurrent calls, as the first call returns once no thread runs a handler or
     * encoder of it).
     *
     * <p>From the moment a close starts, {@link #newWorker}, {@link #pool} and {@link #importRegion}
     * throw {@link IllegalStateException}. Only the first close does the work: called while another
     * thread's call is closing it, it returns at once and touches nothing (imported regions stay
     * mapped until that call unmaps them), without waiting for that call to end: its thread may be
     * one that call waits for (docs/decisions.md). Close from one thread, or wait for the thread
     * that closes, to rely on everything being released.
     */
    @Override
    void close();
}
