package dev.conduit.tck;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The TCK's own well-behaved memory plugin: chunks are files in the shared directory, mapped
 * shared; an export names the file and its length. The broken fixtures ({@link BrokenPlugins})
 * are subclasses that break one rule each.
 *
 * <p>Each provider holds a lease, {@code tck-<owner>.lease}, locked for its life with
 * {@link FileChannel#lock()} (a POSIX record lock, which the kernel drops with the process), and
 * names its chunk files {@code tck-<owner>-<random>.chunk}. Opening a provider reclaims the files
 * of every owner whose lease it can lock: a dead one's, as a plugin must (a process killed with
 * SIGKILL closes nothing).
 */
public class FileMemoryPlugin implements ConduitPlugin {

    static final long PAGE = 4096;

    @Override
    public String name() {
        return "tck-file";
    }

    @Override
    public Version version() {
        return Version.parse("1.0.0");
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public Availability probe(PluginContext context) {
        return Files.isDirectory(context.sharedDirectory()) ? Availability.available()
                : Availability.unavailable("shared directory " + context.sharedDirectory() + " does not exist; set CONDUIT_SHARED_DIR");
    }

    @Override
    public Set<Capability> capabilities() {
        return Set.of(Capability.MEMORY, Capability.IPC);
    }

    @Override
    public Set<ThreadMode> threadModes() {
        return Set.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED);
    }

    @Override
    public MemoryProvider openMemoryProvider(PluginContext context) {
        return new Provider(context.sharedDirectory());
    }

    @Override
    public IpcImporter ipcImporter(PluginContext context) {
        return (payload, chunkLength) -> map(context.sharedDirectory(), payload, chunkLength);
    }

    /** Decodes the payload: the chunk's file name, then its length; nothing after it. */
    ChunkMapping map(Path directory, PayloadReader payload, long chunkLength) {
        String name = payload.relativePath("file");
        long length = payload.u64("length");
        payload.end("end");
        if (length != chunkLength) throw payload.invalid("length", "the payload says " + length + " bytes, the handle " + chunkLength);
        Path file = directory.resolve(name);
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS))) {
            if (channel.size() != length) throw new ConduitException("chunk file " + file + " has " + channel.size() + " bytes, not " + length);
            MemorySegment segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, length, arena);
            return new ChunkMapping() {
                @Override
                public MemorySegment segment() {
                    return segment;
                }

                @Override
                public void close() {
                    if (arena.scope().isAlive()) arena.close();
                }
            };
        } catch (NoSuchFileException e) {
            arena.close();
            throw new ConduitException("chunk file " + file + " is gone: its chunk was freed (stale handle)");
        } catch (IOException | RuntimeException e) {
            arena.close();
            if (e instanceof ConduitException c) throw c;
            throw new ConduitException("cannot map chunk file " + file + ": " + e, e);
        }
    }

    record FileChunk(Path file, Arena arena, MemorySegment segment) implements Chunk {
    }

    private static final Pattern LEASE = Pattern.compile("tck-(\\p{XDigit}{16})\\.lease");

    /**
     * The leases the providers of this JVM hold: a reclaim never opens them. A POSIX lock is the
     * process's, so this JVM's tryLock on one would not tell it is held (the JDK throws
     * OverlappingFileLockException), and closing the channel of that look would drop the holder's lock.
     */
    private static final Set<Path> LEASES_HELD_HERE = ConcurrentHashMap.newKeySet();

    /** Removes the chunk files and the lease of every owner in {@code directory} whose lease is not locked: owners that died. */
    static void reclaimDeadOwners(Path directory) {
        List<Path> leases;
        try (Stream<Path> files = Files.list(directory)) {
            leases = files.filter(f -> LEASE.matcher(f.getFileName().toString()).matches()).toList();
        } catch (IOException e) {
            throw new ConduitException("cannot list the shared directory " + directory + " to reclaim dead owners' files: " + e, e);
        }
        for (Path lease : leases) {
            if (LEASES_HELD_HERE.contains(lease)) continue;
            try (FileChannel channel = FileChannel.open(lease, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
                if (channel.tryLock() == null) continue; // another process holds it: a live owner
                String owner = lease.getFileName().toString().replace(".lease", "");
                try (Stream<Path> files = Files.list(directory)) {
                    for (Path f : files.filter(f -> f.getFileName().toString().startsWith(owner + "-")).toList()) Files.deleteIfExists(f);
                }
                Files.deleteIfExists(lease);
            } catch (NoSuchFileException | OverlappingFileLockException goneOrHeldHere) {
                // Its owner closed meanwhile, or another reclaim of this JVM looks at it.
            } catch (IOException e) {
                throw new ConduitException("cannot reclaim the files of the dead owner of " + lease + ": " + e, e);
            }
        }
    }

    class Provider implements MemoryProvider {
        final Path directory;
        final Set<FileChunk> chunks = new HashSet<>();
        final String owner = "tck-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
        private final Path lease;
        private final FileChannel leaseChannel;
        private boolean closed;

        Provider(Path directory) {
            this(directory, true);
        }

        /**
         * Takes the lease under a name of its own first and gives it its name once locked, so that no
         * reclaim ever finds it unlocked while its owner lives; then reclaims what dead owners left,
         * unless {@code reclaimsDeadOwners} is false (a broken fixture's).
         */
        Provider(Path directory, boolean reclaimsDeadOwners) {
            this.directory = directory;
            this.lease = directory.resolve(owner + ".lease");
            Path taking = directory.resolve(owner + ".lease-taking");
            FileChannel channel = null;
            try {
                channel = FileChannel.open(taking, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                channel.lock();
                LEASES_HELD_HERE.add(lease);
                Files.move(taking, lease, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                LEASES_HELD_HERE.remove(lease);
                try {
                    if (channel != null) channel.close();
                    Files.deleteIfExists(taking);
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw new ConduitException("cannot take the lease " + lease + ": " + e, e);
            }
            this.leaseChannel = channel;
            if (reclaimsDeadOwners) reclaimDeadOwners(directory);
        }

        @Override
        public long pageSize() {
            return PAGE;
        }

        @Override
        public Chunk allocate(long size) {
            if (size <= 0 || size % PAGE != 0) {
                throw new IllegalArgumentException("chunk size " + size + " is not a positive multiple of the page size " + PAGE);
            }
            Path file = newChunkFile(size);
            Arena arena = Arena.ofShared();
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                channel.truncate(size);
                channel.write(java.nio.ByteBuffer.allocate(1), size - 1);
                FileChunk chunk = new FileChunk(file, arena, channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena));
                chunks.add(chunk);
                return chunk;
            } catch (IOException e) {
                arena.close();
                throw new ConduitException("cannot create chunk file " + file + ": " + e, e);
            }
        }

        /** A name no chunk of any owner had before, so that no handle of a freed chunk names a later one. */
        Path newChunkFile(long size) {
            return directory.resolve(owner + "-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong()) + ".chunk");
        }

        @Override
        public byte[] export(Chunk chunk) {
            FileChunk c = (FileChunk) chunk;
            return new PayloadWriter().string(c.file().getFileName().toString()).u64(c.segment().byteSize()).toByteArray();
        }

        @Override
        public void free(Chunk chunk) {
            FileChunk c = (FileChunk) chunk;
            if (!chunks.remove(c)) throw new IllegalArgumentException("chunk " + c.file() + " is not allocated by this provider");
            c.arena().close();
            try {
                Files.deleteIfExists(c.file());
            } catch (IOException e) {
                throw new ConduitException("cannot delete chunk file " + c.file() + ": " + e, e);
            }
        }

        /** Frees every chunk, then gives the lease up: its file first, so that no reclaim finds it unlocked. */
        @Override
        public void close() {
            for (FileChunk c : List.copyOf(chunks)) free(c);
            if (closed) return;
            closed = true;
            try {
                Files.deleteIfExists(lease);
                leaseChannel.close();
            } catch (IOException e) {
                throw new ConduitException("cannot give the lease " + lease + " up: " + e, e);
            } finally {
                LEASES_HELD_HERE.remove(lease);
            }
        }
    }
}
