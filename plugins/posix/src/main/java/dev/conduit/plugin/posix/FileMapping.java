package dev.conduit.plugin.posix;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.MmapFlags;
import dev.conduit.shm.ExporterLease;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * One {@code MAP_SHARED} mapping of a whole chunk file, read-write (or read-only, with a read-only
 * segment: an import through a read-only mount), owned by a shared arena of its own: closing the
 * mapping closes the arena, which unmaps, after which any access through {@link #segment()}
 * throws {@link IllegalStateException} instead of reaching unmapped memory.
 *
 * <p>The provider's chunks and the importer's mappings are both this. The file descriptor is not
 * kept: a mapping stays valid after its descriptor is closed, and holding one descriptor per chunk
 * would only spend the process's descriptor limit.
 *
 * <p>Thread-safe; {@link #close()} is idempotent. Closing while another thread accesses the
 * segment fails that access, never the JVM.
 */
final class FileMapping implements ChunkMapping {

    private final Path path;
    private final Arena arena;
    private final MemorySegment segment;
    /** An import's: the lease of the provider that exported the chunk; null for the provider's own chunks. */
    private final ExporterLease exporter;
    private boolean closed;

    private FileMapping(Path path, Arena arena, MemorySegment segment, ExporterLease exporter) {
        this.path = path;
        this.arena = arena;
        this.segment = segment;
        this.exporter = exporter;
    }

    /**
     * Maps the first {@code length} bytes of {@code fd}, which the caller has checked to be a
     * regular file at least that long. The caller still owns and closes {@code fd}.
     *
     * @param writable         whether to map it for writing too ({@code fd} open for both), or for reading only
     * @param path             the file, for messages
     * @param directoryKeys    the key(s) that chose its directory, named in the remedy
     * @param exporter         an import's: the lease of the provider that exported it; null for a provider's own chunk
     * @throws ConduitException naming {@code mmap}, the errno, the file and the remedy; nothing stays mapped
     */
    static FileMapping map(Libc libc, FileDescriptor fd, long length, boolean writable, Path path, String directoryKeys,
                           ExporterLease exporter) {
        Arena arena = Arena.ofShared();
        try {
            int protection = writable ? MmapFlags.PROT_READ | MmapFlags.PROT_WRITE : MmapFlags.PROT_READ;
            MemorySegment segment = libc.mmap(fd, 0, length, protection, MmapFlags.MAP_SHARED, arena);
            return new FileMapping(path, arena, writable ? segment : segment.asReadOnly(), exporter);
        } catch (ErrnoException e) {
            arena.close();
            throw new ConduitException("cannot map " + path + " (" + length + " bytes): " + e.getMessage() + "; "
                    + remedy(e.errnoName(), directoryKeys), e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static String remedy(String errno, String directoryKeys) {
        return switch (errno) {
            case "ENOMEM" -> "the process is out of address space or mappings: raise vm.max_map_count or the address-space "
                    + "limit (ulimit -v), or keep fewer chunks mapped (a larger pool.chunk.size; in an importer, a lower ipc.cache.entries "
                    + "or ipc.cache.bytes)";
            case "ENODEV", "EACCES", "EPERM" -> "the file system of this directory cannot be mapped shared and writable: point " + directoryKeys + " at a tmpfs such as /dev/shm";
            default -> "check the directory set by " + directoryKeys;
        };
    }

    /** The chunk file this maps, as this process sees it. */
    Path path() {
        return path;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    /**
     * An import's: whether the provider that exported the chunk holds its lease
     * ({@code conduit-posix-<owner>.lease}, the owner its file name carries), judged from this
     * process's view of the directory; a provider's own chunk says {@link ExporterState#UNKNOWN}.
     */
    @Override
    public ExporterState exporterState() {
        return exporter == null ? ExporterState.UNKNOWN : exporter.state();
    }

    /**
     * Unmaps, once. If another thread is inside a native call on the segment, the arena refuses
     * ({@link IllegalStateException}) and the mapping stays open, so that a later close can succeed.
     * An import's unmap gives back the exporter's lease its looks kept open ({@link ExporterLease#close}).
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        arena.close();
        closed = true;
        if (exporter != null) exporter.close();
    }

    /** Whether {@link #close()} has unmapped it. */
    synchronized boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "mapping of " + path + " (" + segment.byteSize() + " bytes)";
    }
}
