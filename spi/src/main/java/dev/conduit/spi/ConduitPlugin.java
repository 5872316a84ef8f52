package dev.conduit.spi;

import java.util.List;
import java.util.Set;

/**
 * A Conduit plugin: a named, versioned service that provides memory, IPC, transports, or several
 * of them. This is the one service type the runtime looks up with {@link java.util.ServiceLoader}.
 *
 * <p><b>Who implements it:</b> plugin authors, with a public no-argument constructor (or a public
 * static {@code provider()} method on the module path), declared with
 * {@code provides dev.conduit.spi.ConduitPlugin with ...} in {@code module-info.java} and in
 * {@code META-INF/services/dev.conduit.spi.ConduitPlugin} for class-path users.
 *
 * <p><b>Who calls it:</b> the runtime only. It reads the metadata once at discovery, on the thread
 * that builds the {@code Conduit}, not bounded in time: the constructor, the metadata methods and
 * {@link #checkConfig} return at once and wait for nothing (a file, a device, a lock), or the build
 * waits with them, for ever if they never return. Unless the
 * {@code transports} setting leaves the plugin out, it calls {@link #probe(PluginContext)}, bounded
 * in time: a probe that throws or hangs makes the plugin unavailable, and never makes discovery
 * fail. Then it calls the {@code open...} operations of the capabilities the plugin
 * {@linkplain #capabilities() declares} and its probe did not rule out here
 * ({@link Availability#without}). The runtime wraps every object a plugin returns with its
 * thread-mode policy ({@link ThreadMode}), so a plugin is only ever called in the modes it
 * {@linkplain #threadModes() declares}.
 *
 * <p>Optional operations follow UMF's provider ops: an operation of a capability the plugin does
 * not declare keeps its default, which throws {@link NotSupportedException}.
 */
public interface ConduitPlugin {

    /**
     * The SPI version this interface describes. A plugin returns it from {@link #spiVersion()}: as a
     * compile-time constant it is inlined into the plugin's class file, so the runtime learns which
     * SPI the plugin was compiled against and refuses a different major version.
     */
    String SPI_VERSION = "1.1";

    /**
     * The plugin's name: lower-case letters, digits and {@code -}, at most 32 characters, starting
     * with a letter, and not {@code runtime}, which owns the runtime's own configuration keys, nor
     * {@code conduit}: a key set in the builder may be given as its property, {@code conduit.}
     * dropped, so that the keys {@code conduit.x} of a plugin of that name could not be set there by
     * their names (ConfigurationTest#aPluginCalledConduitIsRefusedSinceTheBuilderCouldNotSetItsKeysByTheirNames).
     * It names the plugin in configuration ({@code CONDUIT_TRANSPORTS=memfd,posix}), in IPC handles
     * and worker addresses, and prefixes its configuration keys.
     */
    String name();

    /** The plugin's own version; of two plugins with one name the higher one is used. */
    Version version();

    /**
     * The SPI version the plugin was compiled against. Implement it as
     * {@code return ConduitPlugin.SPI_VERSION;} and nothing else.
     */
    String spiVersion();

    /** One line on what the plugin is, for {@code conduit info}. */
    default String description() {
        return "";
    }

    /**
     * Whether the plugin can work in this process, and if not, why, in words a person can act on;
     * an available plugin may rule some of its declared capabilities out here
     * ({@link Availability#without}), and the runtime then never asks for them. Must not allocate
     * resources that outlive the call. The runtime bounds its duration ({@code conduit.probe.timeout}, and
     * up to six times it while the probes, or the JVM, keep using processor time) and treats an exception as
     * "unavailable".
     */
    Availability probe(PluginContext context);

    /** What the plugin can do. The TCK checks that it implements exactly these operations. */
    Set<Capability> capabilities();

    /**
     * The thread modes the plugin's objects really support. A plugin that declares only
     * {@link ThreadMode#SINGLE} is treated as thread-confined: the runtime never calls one of its
     * objects from two threads, even one after the other, unless it confines calls to one thread of
     * its own. Three exceptions hold for every plugin: {@link Transport#signal()} comes from any
     * thread, so does the action {@link Transport#keepDelivered()} returns (the application closes
     * its kept payload where it likes, also while {@code progress()} runs on another thread), and
     * {@code Conduit.close()} closes a worker's transports and endpoints from the
     * closing thread when the worker's owner thread has ended, or has not returned from its call
     * within a second of being asked to close (with a WARNING; that call may then fail). The
     * {@code ConduitPlugin} itself is called from several threads (discovery, probes, each worker's
     * owner) and must be thread-safe.
     */
    Set<ThreadMode> threadModes();

    /**
     * The configuration keys this plugin reads; names start with {@code name() + "."}, each name
     * once, and none is a runtime key's ({@code shared.dir} of a plugin called {@code shared}): the
     * runtime refuses a plugin that breaks one of these rules.
     */
    default List<ConfigKey<?>> configKeys() {
        return List.of();
    }

    /**
     * Checks rules between this plugin's keys that no one key can ({@link ConfigKey#withCheck}
     * checks a value alone), such as "devdax.device names an alias of devdax.devices". The runtime
     * calls it when the {@code Conduit} is built, after every key has parsed, for every plugin whose
     * keys it declared, whether or not the plugin is then probed or used, so that a bad
     * combination fails the build, not the first open. It must only read {@code config}, and
     * return at once: it runs on the building thread, not bounded in time. A
     * {@link ConfigException} fails the build: make it with {@link ConfigKey#badValue} and
     * {@link Config#sourceOf}, so it names key, variable, value, source, the other key and the
     * remedy; any other exception, an {@code Error} too but the JVM's own (out of memory, a stack
     * overflow), is a fault of the plugin, not of a value, and marks the plugin {@code BROKEN},
     * naming the exception and the keys it had read with their sources (its WARNING carries the
     * exception). The default checks nothing.
     * Since SPI 1.1.
     */
    default void checkConfig(Config config) {
    }

    /**
     * Preference among available plugins when the user names none ({@code CONDUIT_TRANSPORTS}
     * unset): higher first. Shared-memory transports use 100..199, cross-host ones 0..99.
     */
    default int priority() {
        return 0;
    }

    /**
     * Opens a memory provider ({@link Capability#MEMORY}). The runtime does not call it where the
     * probe ruled {@code MEMORY} out ({@link Availability#without}); an implementation called there
     * anyway (by the plugin's own tests, say) should throw {@link NotSupportedException} with the
     * same reason.
     */
    default MemoryProvider openMemoryProvider(PluginContext context) {
        throw new NotSupportedException("plugin '" + name() + "' provides no memory (capability MEMORY)");
    }

    /**
     * The stateless importer of this plugin's IPC handles ({@link Capability#IPC}). It must work in
     * a process that opened no provider of this plugin: what it may touch comes from
     * {@code context}'s configuration, never from the handle. The runtime does not call it where the
     * probe ruled {@code IPC} out; an implementation called there anyway should throw
     * {@link NotSupportedException} with the same reason.
     */
    default IpcImporter ipcImporter(PluginContext context) {
        throw new NotSupportedException("plugin '" + name() + "' imports no IPC handles (capability IPC)");
    }

    /**
     * Opens this plugin's transport for one worker ({@link Capability#AM}). The runtime does not
     * call it where the probe ruled {@code AM} out ({@link Availability#without}): the worker then
     * opens over the other plugins' transports. An implementation called there anyway should throw
     * {@link NotSupportedException} with the same reason. Any exception fails the worker.
     */
    default Transport openTransport(TransportContext context) {
        throw new NotSupportedException("plugin '" + name() + "' provides no transport (capability AM)");
    }
}
