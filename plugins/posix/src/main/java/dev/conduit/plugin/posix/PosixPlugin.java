package dev.conduit.plugin.posix;

import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.shm.ShmPlugins;
import dev.conduit.shm.ShmTransport;
import dev.conduit.shm.ShmTransportConfig;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.Version;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The posix plugin: shared memory as files in a directory that producer and consumers both see
 * (by default the shared directory, {@code /dev/shm}), mapped by name.
 *
 * <ul>
 *   <li><b>Memory</b> ({@link PosixMemoryProvider}): each chunk is a file
 *       {@code conduit-posix-<owner>-<random>.chunk}, created {@code 0600}, sized with
 *       {@code ftruncate} and mapped {@code MAP_SHARED}. A lease file held under {@code flock} marks
 *       the owner alive; the files of dead owners are removed by the next provider that opens.</li>
 *   <li><b>IPC</b> ({@link PosixImporter}): an export is the file's name relative to the directory
 *       ({@link ExportPayload}); the importer needs no provider, opens the name beneath its own view
 *       of the directory without following links, checks type, owner and size, and maps it.</li>
 *   <li><b>Transport</b> ({@link ShmTransport}): each worker's receive queue and each connection's
 *       bounce ring are chunks of this plugin, so a peer reaches a worker exactly as it imports a
 *       region: by name, beneath its own view of the directory.</li>
 * </ul>
 *
 * <p><b>Trust model: for trusted peers.</b> Chunk files are ordinary files: a peer with write
 * access to one (its owner, or root) can truncate it while others have it mapped, and their next
 * access to the lost pages raises {@code SIGBUS}. The JVM survives it: where Conduit touches the
 * memory itself the affected endpoint or operation fails with a Conduit exception, while application
 * code reading such a segment gets the JDK's {@code InternalError} (docs/guarantees.md). The
 * importer checks the size once, when it maps, and only maps files of its own user or of users
 * listed in {@code posix.trusted.uids}. Where peers are not trusted use the memfd plugin, whose
 * chunks are sealed against resizing.
 *
 * <table class="striped">
 * <caption>Configuration keys</caption>
 * <tr><th>key</th><th>environment</th><th>default</th><th>meaning</th></tr>
 * <tr><td>{@code shared.dir} (runtime)</td><td>{@code CONDUIT_SHARED_DIR}</td><td>{@code /dev/shm}</td>
 *     <td>the shared directory; chunk files live there unless {@code posix.dir} is set</td></tr>
 * <tr><td>{@code posix.dir}</td><td>{@code CONDUIT_POSIX_DIR}</td><td>unset</td>
 *     <td>another directory for chunk files, as this process sees it (e.g. a bind mount); a relative
 *     path is the working directory's, resolved as {@code shared.dir} is</td></tr>
 * <tr><td>{@code posix.trusted.uids}</td><td>{@code CONDUIT_POSIX_TRUSTED_UIDS}</td><td>empty</td>
 *     <td>users besides this one whose chunk files the importer maps</td></tr>
 * </table>
 */
public final class PosixPlugin implements ConduitPlugin {

    /** Chunk directories {@link #tellIfWrittenBack} told of. */
    private final Set<Path> toldWrittenBack = ConcurrentHashMap.newKeySet();

    private static final Version VERSION = Version.parse("0.1.0");

    /** Found by {@link java.util.ServiceLoader}. */
    public PosixPlugin() {
    }

    @Override
    public String name() {
        return "posix";
    }

    @Override
    public Version version() {
        return VERSION;
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public String description() {
        return "Shared memory as files in a shared directory (default /dev/shm), mapped by name; for trusted peers";
    }

    /**
     * Available when Linux system calls work and this user can create and remove files in the
     * chunk directory; on a read-only mount, available for imports only (every other capability
     * ruled out here, naming the mount); details for {@code conduit info} as {@link DirectoryProbe}
     * lists them.
     */
    @Override
    public Availability probe(PluginContext context) {
        return DirectoryProbe.probe(context);
    }

    @Override
    public Set<Capability> capabilities() {
        return ShmPlugins.CAPABILITIES;
    }

    /** See {@link ShmPlugins#THREAD_MODES}. */
    @Override
    public Set<ThreadMode> threadModes() {
        return ShmPlugins.THREAD_MODES;
    }

    @Override
    public List<ConfigKey<?>> configKeys() {
        return ShmPlugins.configKeys(name(), PosixConfig.KEYS);
    }

    /** A shared-memory plugin: priorities 100..199. */
    @Override
    public int priority() {
        return 100;
    }

    @Override
    public MemoryProvider openMemoryProvider(PluginContext context) {
        DirectoryProbe.requireOffered(context, Capability.MEMORY, "memory provider (pool)");
        PosixMemoryProvider provider = PosixMemoryProvider.open(context);
        tellIfWrittenBack(provider, context.logger());
        return provider;
    }

    /**
     * Says, once per directory, that pools and workers opened on a file system with storage: it works, and costs the
     * writes back of every chunk page, which only {@code conduit info} showed (helper h3, on ext4).
     */
    private void tellIfWrittenBack(PosixMemoryProvider provider, System.Logger logger) {
        String fileSystem = provider.fileSystemWrittenBack();
        if (fileSystem != null && toldWrittenBack.add(provider.directory())) {
            logger.log(System.Logger.Level.INFO, "the chunk directory " + provider.directory() + " is on " + fileSystem
                    + ": set " + provider.directoryKeys() + " to a directory on one");
        }
    }

    /** Maps chunks read-only through a read-only mount, for consumers that only read (PosixImporter). */
    @Override
    public IpcImporter ipcImporter(PluginContext context) {
        return new PosixImporter(Linux.libc(), PosixConfig.of(context), true);
    }

    /** Its importer maps peers' queues and bounce rings, which it must write: never read-only. */
    @Override
    public Transport openTransport(TransportContext context) {
        DirectoryProbe.requireOffered(context, Capability.AM, "transport");
        return openTransport(context, Linux.libc());
    }

    /**
     * {@link #openTransport(TransportContext)} through {@code libc}, which tests may put a fake in front of. Its failures
     * add what the chunk directory's file system means for a peer under another kernel ({@link DirectoryProbe#acrossKernels}).
     */
    Transport openTransport(TransportContext context, Libc libc) {
        ShmTransportConfig config = ShmTransportConfig.read(context.config(), name());
        PosixImporter importer = new PosixImporter(libc, PosixConfig.of(context), false);
        PosixMemoryProvider provider = PosixMemoryProvider.open(context, libc);
        tellIfWrittenBack(provider, context.logger());
        return new ShmTransport(name(), libc, context, config, provider, importer, provider.acrossKernels());
    }
}
