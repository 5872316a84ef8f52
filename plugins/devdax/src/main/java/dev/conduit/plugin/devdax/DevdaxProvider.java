package dev.conduit.plugin.devdax;

import dev.conduit.spi.Cleanup;
import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.LockFlags;
import dev.conduit.plugin.devdax.DevdaxConfig.DeviceChoice;
import dev.conduit.plugin.devdax.DevdaxConfig.OnStart;
import dev.conduit.plugin.devdax.Layout.Entry;
import dev.conduit.plugin.devdax.Layout.Geometry;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MappedMemoryFault;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

/**
 * Allocates ranges of one device: a device-DAX character device, or a regular file of the same
 * shape. The provider owns the whole device while it is open:
 *
 * <ul>
 *   <li><b>Exclusive lock.</b> It holds {@code flock(LOCK_EX|LOCK_NB)} on the device for its whole
 *       life, so a second provider on the same device, in this process or any other, fails at once,
 *       naming the device and, from {@code /proc/locks}, the holder's pid. The kernel drops the
 *       lock when the owner dies, however it dies. A {@code flock} belongs to an inode: processes
 *       that reach the device through the same node (any path to it, a symbolic link, a bind mount
 *       into a container) exclude each other; a second node made for the same device with
 *       {@code mknod} (as container runtimes usually do for {@code docker run --device}) is another
 *       inode, whose lock this one does not see. Two providers can then own one device; the second
 *       one's start moves the generation in the header, and the first one's next
 *       {@link #allocate}, {@link #free} or {@link #close()} sees that and fails naming both
 *       generations, without writing the table, which is no longer its own.</li>
 *   <li><b>Metadata on the device.</b> The first alignment unit(s) hold the header and the
 *       allocation table ({@link Layout}), mapped for the provider's life. Every allocation is an
 *       entry there, written before the chunk is handed out and cleared when it is freed; an
 *       export is valid exactly as long as its entry is.</li>
 *   <li><b>Restart policy</b> ({@code devdax.on.start}). {@code reset} (the default) forgets the
 *       allocations it finds, so every earlier export is refused from then on. {@code recover}
 *       re-adopts them: their ranges stay allocated and their exports keep importing until this
 *       provider closes, which frees them like its own. Either way the generation counter goes up.
 *       A device without a layout is formatted under both; a damaged layout, or one made for
 *       another size or alignment, is reformatted by {@code reset} and refused by
 *       {@code recover}, which never discards allocations silently.</li>
 *   <li><b>Chunks</b> are whole alignment units ({@link #pageSize()} is the device's alignment),
 *       placed next-fit ({@link Extents}; where the search stands is kept in the header, so a
 *       restarted owner goes on after its predecessor's last allocation), mapped
 *       {@code MAP_SHARED} one mapping per chunk ({@code MAP_SYNC} where the kernel accepts it: it
 *       is tried once, on the metadata, and the answer used for every chunk), and zeroed.</li>
 *   <li><b>Freed memory is reused.</b> Device memory is physical: a process that still maps a
 *       freed chunk (or one an owner's {@code reset} forgot) sees the data of the range's next
 *       owner. Unlike posix and memfd, where a freed chunk's pages live on for whoever maps them,
 *       an importer must stop using a region when its exporter frees it. Next fit delays the
 *       reuse; it cannot prevent it.</li>
 * </ul>
 *
 * <p>Closing frees every chunk (and every re-adopted allocation), unmaps, and closes the
 * descriptor, which drops the lock. A crash frees nothing: the table keeps the allocations for
 * the next owner to reset or recover.
 *
 * <p>Thread-safe: every operation holds the provider's monitor (the runtime serializes calls
 * anyway). A chunk's virtual address is aligned to the alignment, as {@link #pageSize()} promises,
 * on both kinds of device: every chunk is mapped with {@link Libc#mmapAligned} (the kernel would
 * align a device-DAX mapping by itself, but not a regular file's).
 */
final class DevdaxProvider implements MemoryProvider {

    private static final int READ_WRITE = PROT_READ | PROT_WRITE;

    private final Libc libc;
    private final Device device;
    private final Geometry geometry;
    private final long layoutId;
    private final long generation;
    private final Mapper.Mapped metadataMapping;
    private final Arena metadataArena;
    private final MemorySegment metadata;
    private final Extents free;
    private final SecureRandom random;
    private final Set<DevdaxChunk> live = new HashSet<>();
    /** Allocations of a previous owner re-adopted by {@code recover}: held until {@link #close()}. */
    private final List<Entry> adopted;
    private boolean closed;

    private DevdaxProvider(Libc libc, Device device, Geometry geometry, Start start, Mapper.Mapped metadataMapping,
                           Arena metadataArena, SecureRandom random) {
        this.libc = libc;
        this.device = device;
        this.geometry = geometry;
        this.layoutId = start.layoutId();
        this.generation = start.generation();
        this.metadataMapping = metadataMapping;
        this.metadataArena = metadataArena;
        this.metadata = metadataMapping.segment();
        this.random = random;
        this.adopted = new ArrayList<>(start.adopted());
        this.free = new Extents(geometry.dataOffset(), geometry.size());
        for (Entry entry : adopted) free.reserve(entry.offset(), entry.length());
        free.startAt(start.next());
    }

    /**
     * Why a provider cannot allocate from {@code device} laid out as {@code geometry}: no unit left after the
     * metadata, with the remedy; {@code null} when it can. The provider's refusal, and the probe's, which rules
     * memory out for such a provider device ({@code conduit info} showed it selected with memory available, and
     * only {@code pool("devdax")} failed: helper h5, a 64 MiB file at {@code devdax.file.align} 1g).
     */
    static String tooSmall(Device device, Geometry geometry) {
        if (geometry.hasRoomForData()) return null;
        return "device " + device.describe() + " is too small: " + device.size() + " bytes in units of " + geometry.alignment()
                + " leave no unit after the metadata (" + geometry.dataOffset() + " bytes). Use a larger device"
                + (device.kind() == Device.Kind.REGULAR_FILE ? " or a smaller " + DevdaxConfig.FILE_ALIGN.nameAndVariable() : "");
    }

    /**
     * Opens the configured device ({@code devdax.device} in {@code devdax.devices}), locks it, and
     * resets or recovers its allocation table.
     *
     * @param sysfs     where device-DAX attributes are read
     * @param procLocks where the holder of a refused lock is looked up
     * @throws ConduitException naming the device, the call, the errno and the key to set, or why the metadata cannot be
     *                          written (the file truncated meanwhile, or its file system full); nothing stays open or locked
     */
    static DevdaxProvider open(Libc libc, PluginContext context, Sysfs sysfs, Path procLocks) {
        // Configuration first: a bad value fails before anything is opened.
        DeviceChoice choice = DevdaxConfig.providerDevice(context.config());
        OnStart onStart = context.config().get(DevdaxConfig.ON_START);
        long fileAlignment = DevdaxConfig.fileAlignment(context.config());

        Device device = Device.open(libc, choice.alias(), choice.path(), true, sysfs);
        try {
            lock(libc, device, procLocks);
            long alignment = device.kind() == Device.Kind.DEVICE_DAX ? device.mapUnit() : fileAlignment;
            Geometry geometry = Geometry.of(device.size(), alignment);
            String tooSmall = tooSmall(device, geometry);
            if (tooSmall != null) throw new ConduitException(tooSmall);
            Arena arena = Arena.ofShared();
            try {
                Mapper.Mapped mapped = mapMetadata(libc, device, geometry, arena);
                SecureRandom random = new SecureRandom();
                // A format or reset writes every page of the table: a sparse file's full file system cannot supply them all.
                Start start = onMetadata(libc, device, geometry, "start a provider",
                        () -> start(Layout.read(mapped.segment()), mapped.segment(), geometry, onStart, device, random));
                DevdaxProvider provider = new DevdaxProvider(libc, device, geometry, start, mapped, arena, random);
                context.logger().log(INFO, () -> provider + ": " + device.size() + " bytes, alignment " + alignment + ", "
                        + mapped.describe() + ", generation " + start.generation() + ", " + start.what());
                if (!start.dropped().isEmpty()) {
                    context.logger().log(WARNING, () -> provider + ": cleared " + start.dropped().size() + " allocation table entries "
                            + "that cannot describe an allocation (corruption?): " + start.dropped());
                }
                return provider;
            } catch (RuntimeException | Error e) {
                Cleanup.run(e, arena::close);
                throw e;
            }
        } catch (RuntimeException | Error e) {
            Cleanup.run(e, device::close); // closing the descriptor drops the lock, if it was taken
            throw e;
        }
    }

    private static void lock(Libc libc, Device device, Path procLocks) {
        boolean locked;
        try {
            locked = libc.tryFlock(device.fd(), LockFlags.LOCK_EX);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot lock device " + device.describe() + ": " + e.getMessage() + "; a provider allocates "
                    + "only from a device it holds locked, so that no other provider hands out the same memory: " + lockRemedy(e), e);
        }
        if (!locked) {
            throw new ConduitException("device " + device.describe() + " is in use by another devdax provider: "
                    + "flock(LOCK_EX|LOCK_NB) refused it (EWOULDBLOCK), " + LockHolders.describeHolder(procLocks, device.status(), libc.getpid())
                    + ". One provider allocates from a device at a time: close that provider, or give this one another device ("
                    + DevdaxConfig.DEVICE.nameAndVariable() + ")");
        }
    }

    /** What to do when {@code flock} fails for another reason than a held lock. */
    private static String lockRemedy(ErrnoException e) {
        if (e.errno() == Errno.ENOLCK) {
            // A device node's locks are the kernel's own; a regular file on NFS needs its lock service.
            return "the kernel is out of memory for lock records, or the file lies on a network file system whose lock service "
                    + "(NFS's lockd) did not answer; retry when memory is free, and keep a file that stands in for a device on a "
                    + "local file system (e.g. /dev/shm)";
        }
        return "check that the alias in " + DevdaxConfig.DEVICES.nameAndVariable() + " leads to a device-DAX device or to a "
                + "regular file on a local file system";
    }

    private static Mapper.Mapped mapMetadata(Libc libc, Device device, Geometry geometry, Arena arena) {
        try {
            return Mapper.mapPreferringSync(libc, device.fd(), 0, geometry.dataOffset(), READ_WRITE, arena);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot map the metadata of device " + device.describe() + " (" + geometry.dataOffset()
                    + " bytes): " + e.getMessage() + Device.mapRemedy(e, null), e);
        }
    }

    /**
     * What opening did to the device's layout.
     *
     * @param next    where the first allocation search starts: where the previous owner's next one would have
     * @param what    for the log: formatted, reset or recovered
     * @param dropped table entries cleared because they cannot describe an allocation
     */
    record Start(long layoutId, long generation, List<Entry> adopted, long next, String what, List<String> dropped) {
    }

    /** What the start of an owner does with {@code found}, the layout read from {@code metadata}, the device's first unit(s). */
    static Start start(Layout.Found found, MemorySegment metadata, Geometry geometry, OnStart onStart, Device device,
                       SecureRandom random) {
        String remedy = ". To discard its allocations and write a new layout, open it once with "
                + DevdaxConfig.ON_START.nameAndVariable() + " = reset";
        if (found instanceof Layout.Valid(Layout.Header header) && header.generation() == Layout.MAX_GENERATION) {
            // Moved on, it would be a generation every reader takes for damage: every export of this owner refused by every
            // importer for as long as it lived. Only a word written outside the CRC brings a layout here.
            found = new Layout.Damaged("generation " + header.generation() + ", the largest a layout may hold, which no owner's "
                    + "start can move on");
        }
        return switch (found) {
            case Layout.Valid(Layout.Header header) when header.geometry().equals(geometry) -> {
                long nextGeneration = header.generation() + 1;
                List<String> dropped = new ArrayList<>();
                List<Entry> adopted = List.of();
                if (onStart == OnStart.RECOVER) {
                    adopted = Layout.adoptable(metadata, geometry, dropped);
                } else {
                    Layout.clearTable(metadata, geometry);
                }
                Layout.writeGeneration(metadata, nextGeneration);
                String what = onStart == OnStart.RECOVER
                        ? "recovered " + adopted.size() + " allocation(s) of generation(s) up to " + header.generation()
                        : "reset: allocations of generation(s) up to " + header.generation() + " forgotten";
                yield new Start(header.layoutId(), nextGeneration, adopted, Layout.nextOffset(metadata, geometry), what, dropped);
            }
            case Layout.Valid(Layout.Header header) -> {
                if (onStart == OnStart.RECOVER) {
                    throw new ConduitException("cannot recover the allocations on device " + device.describe() + ": its layout was "
                            + "made for " + header.geometry().size() + " bytes in units of " + header.geometry().alignment()
                            + ", but the device now has " + geometry.size() + " bytes in units of " + geometry.alignment() + remedy);
                }
                // Offsets are bytes of the same device under any alignment: the new layout goes on where the old one stood.
                long next = Layout.nextOffset(metadata, geometry);
                Layout.format(metadata, geometry, header.layoutId(), header.generation() + 1);
                Layout.writeNextOffset(metadata, next);
                yield new Start(header.layoutId(), header.generation() + 1, List.of(), next,
                        "reset: new layout for the device's new size or alignment", List.of());
            }
            case Layout.Blank() -> {
                long id = nonZero(random);
                Layout.format(metadata, geometry, id, 1);
                yield new Start(id, 1, List.of(), geometry.dataOffset(), onStart == OnStart.RECOVER
                        ? "nothing to recover: the device held no layout, so a new one was written" : "new layout written", List.of());
            }
            case Layout.Damaged(String reason) -> {
                if (onStart == OnStart.RECOVER) {
                    throw new ConduitException("cannot recover the allocations on device " + device.describe() + ": " + reason + remedy);
                }
                long id = nonZero(random);
                Layout.format(metadata, geometry, id, 1);
                yield new Start(id, 1, List.of(), geometry.dataOffset(), "reset: a damaged layout (" + reason + ") was replaced", List.of());
            }
            // Under this provider's lock only a provider that reached the device through another node writes it.
            case Layout.BeingWritten(String reason) -> throw new ConduitException("cannot start on device " + device.describe()
                    + ": another process was writing a layout on it while this provider, holding the device's lock, read it ("
                    + reason + "): another devdax provider, which reached the device through another device node (the flock is per "
                    + "node: a node made with mknod, as docker run --device does, is another inode), is starting on it. "
                    + onePerDevice(device));
        };
    }

    /** What to do when two providers reach one device through two nodes. */
    private static String onePerDevice(Device device) {
        return "Run one provider per device: close one of them, and let every process that allocates from the device reach it "
                + "through one node (bind-mount the host's /dev/daxX.Y instead of --device) or give each its own device ("
                + DevdaxConfig.DEVICE.nameAndVariable() + ")";
    }

    private static long nonZero(SecureRandom random) {
        long value;
        do {
            value = random.nextLong();
        } while (value == 0);
        return value;
    }

    /** The device's alignment: chunk sizes are multiples of it, and chunks start at multiples of it on the device. */
    @Override
    public long pageSize() {
        return geometry.alignment();
    }

    /**
     * Takes a free range of {@code size} bytes, next fit ({@link Extents}), maps it, zeroes it, and
     * records it in the device's allocation table.
     *
     * @throws IllegalArgumentException if {@code size} is not a positive multiple of {@link #pageSize()}
     * @throws IllegalStateException    if the provider is closed
     * @throws ConduitException         when the device has no free range that large, the range cannot be mapped
     *                                  ({@code ENXIO}: the device was disabled) or zeroed (a regular file truncated
     *                                  meanwhile, or its file system full), the table cannot be read or written (the
     *                                  file truncated below the metadata), or another provider took the device over;
     *                                  a failed allocation leaves no table entry and its range free
     */
    @Override
    public synchronized Chunk allocate(long size) {
        if (size <= 0 || size % geometry.alignment() != 0) {
            throw new IllegalArgumentException("chunk size " + size + " is not a positive multiple of the alignment "
                    + geometry.alignment() + " of device " + device.describe());
        }
        ensureOpen();
        ensureStillOwner("allocate");
        long searchFrom = free.next();
        long offset = free.take(size);
        if (offset < 0) {
            throw new ConduitException("device " + device.describe() + " has no free range of " + size + " bytes: " + free.freeBytes()
                    + " bytes free, the longest free range " + free.largest() + " bytes. Free chunks, use smaller ones "
                    + "(pool.chunk.size), or give this provider a larger device (" + DevdaxConfig.DEVICE.nameAndVariable() + ")");
        }
        Arena arena = Arena.ofShared();
        DevdaxChunk chunk = null;
        try {
            checkFileStillCovers(offset + size);
            // Aligned to the unit, as pageSize() promises and pools rely on: a DAX device gets that from the kernel, a file would not.
            MemorySegment segment = libc.mmapAligned(device.fd(), offset, size, geometry.alignment(), READ_WRITE, metadataMapping.flags(), arena);
            zero(segment, offset);
            long allocationId = nonZero(random);
            byte[] payload = new DevdaxPayload(device.alias(), layoutId, offset, size, READ_WRITE, allocationId, generation).encode();
            chunk = new DevdaxChunk(this, offset, new DaxMapping(device.path(), offset, arena, segment,
                    device.kind() == Device.Kind.REGULAR_FILE, null), payload);
            live.add(chunk);
            // Last: the catches below give the range back, which must then have no entry in the table.
            onMetadata("allocate", () -> {
                Layout.publish(metadata, geometry, offset, allocationId, size);
                Layout.writeNextOffset(metadata, free.next());
                return null;
            });
            return chunk;
        } catch (ErrnoException e) {
            arena.close();
            untake(offset, size, searchFrom);
            throw new ConduitException("cannot map [" + offset + ", " + (offset + size) + ") of device " + device.describe() + ": "
                    + e.getMessage() + Device.mapRemedy(e, "keep fewer chunks (pool.chunk.size)"), e);
        } catch (RuntimeException | Error e) {
            live.remove(chunk);
            Cleanup.run(e, arena::close);
            untake(offset, size, searchFrom);
            throw e;
        }
    }

    /**
     * Gives back a range that a failed allocation took, and puts the search back where it started:
     * the range was never handed out, so the next allocation may have it, where a range freed after
     * use comes round again only after the rest of the device.
     */
    private void untake(long offset, long size, long searchFrom) {
        free.give(offset, size);
        free.startAt(searchFrom);
    }

    /**
     * Zeroes a chunk just mapped at {@code offset}. A page that is gone faults ({@code SIGBUS}, which
     * the JDK throws as an {@link InternalError}): the file was truncated after
     * {@link #checkFileStillCovers}, a full file system could not supply a page of a sparse file, or
     * the device was disabled since it was mapped.
     */
    private void zero(MemorySegment segment, long offset) {
        try {
            segment.fill((byte) 0);
        } catch (InternalError fault) {
            long end = offset + segment.byteSize();
            throw faulted(libc, device, geometry, fault, "cannot zero [" + offset + ", " + end + ") of device " + device.describe()
                    + ", just mapped: touching it faulted (SIGBUS)", end);
        }
    }

    /**
     * What a fault ({@code SIGBUS}, which the JDK throws as an {@link InternalError}) on the device's
     * memory below {@code end} means, said after {@code failed}: the device was disabled since it
     * was mapped; the file was truncated below {@code end}; or, the file still covering it, the file
     * system that holds it could not supply a page of the sparse file (full?). Any other
     * {@code InternalError} is rethrown.
     */
    private static ConduitException faulted(Libc libc, Device device, Geometry geometry, InternalError fault, String failed,
                                            long end) {
        if (!MappedMemoryFault.is(fault)) throw fault;
        if (device.kind() == Device.Kind.DEVICE_DAX) return new ConduitException(failed + "; " + Device.UNBOUND, fault);
        try {
            checkFileStillCovers(libc, device, geometry, end);
        } catch (ConduitException check) {
            ConduitException named = new ConduitException(failed + ": " + check.getMessage(), check.getCause());
            named.addSuppressed(fault);
            return named;
        }
        return new ConduitException(failed + ", though the file still covers it: the file system that holds it could not "
                + "supply a page of the sparse file (full?). Free space there, or give the file its blocks up front "
                + "(fallocate -l " + geometry.size() + " " + device.path() + ")", fault);
    }

    /**
     * Runs {@code access} on the metadata mapping: a regular file truncated below the metadata, or
     * on a full file system, makes it fault, which is named here ({@link #faulted}) instead of
     * escaping as the JDK's bare {@code InternalError}. Every read and write of the header and the
     * table goes through here, the start's included.
     *
     * @param what what fails, after "cannot": "allocate", "free …", "close …", "start a provider"
     */
    private static <T> T onMetadata(Libc libc, Device device, Geometry geometry, String what, Supplier<T> access) {
        try {
            return access.get();
        } catch (InternalError fault) {
            throw faulted(libc, device, geometry, fault, "cannot " + what + ": touching the metadata of device " + device.describe()
                    + " (its first " + geometry.dataOffset() + " bytes) faulted (SIGBUS)", geometry.dataOffset());
        }
    }

    private <T> T onMetadata(String what, Supplier<T> access) {
        return onMetadata(libc, device, geometry, what, access);
    }

    private void checkFileStillCovers(long end) {
        checkFileStillCovers(libc, device, geometry, end);
    }

    /**
     * A regular file can be truncated under the lock (it is advisory), and touching a page past its
     * end would kill this process with {@code SIGBUS}; a device cannot shrink.
     */
    private static void checkFileStillCovers(Libc libc, Device device, Geometry geometry, long end) {
        if (device.kind() != Device.Kind.REGULAR_FILE) return;
        FileStatus status;
        try {
            status = libc.fstat(device.fd());
        } catch (ErrnoException e) {
            // Not a mapping failure, which the caller would report it as: without the size, a map might reach past the end.
            throw new ConduitException("cannot check the size of device file " + device.describe() + " before mapping or touching "
                    + "more of it: " + e.getMessage() + "; refusing to touch what may lie past its end (SIGBUS). Check the file "
                    + "system that holds it (dmesg), then reopen the provider", e);
        }
        if (status.size() < end) {
            throw new ConduitException("device file " + device.describe() + " was truncated to " + status.size() + " bytes while "
                    + "this provider used it (it manages " + geometry.size() + "): refusing to touch it past its end, which would "
                    + "crash this process with SIGBUS. Nothing else may write the file; restore its size or reopen the provider");
        }
    }

    /**
     * The payload naming the chunk's range ({@link DevdaxPayload}); nothing changes on the device.
     *
     * @throws IllegalStateException    if the chunk was freed, a free of it failed (having cleared the table entry
     *                                  importers check, or found the table truncated or another provider's), or
     *                                  the provider closed
     * @throws IllegalArgumentException if the chunk is not this provider's
     */
    @Override
    public synchronized byte[] export(Chunk chunk) {
        ensureOpen();
        DevdaxChunk own = own(chunk);
        if (!live.contains(own)) {
            throw new IllegalStateException(own + " was freed; it cannot be exported");
        }
        if (own.freeFailure() != null) {
            throw new IllegalStateException("cannot export " + own + ": its free failed (" + own.freeFailure().getMessage()
                    + "), so no importer would accept its export. It is still allocated here: free it again", own.freeFailure());
        }
        return own.payload();
    }

    /**
     * Clears the chunk's table entry, which refuses its exports from then on, unmaps it here, and
     * returns its range for reuse. Processes that mapped it keep their mapping, which from then on
     * aliases the data of the range's next owner (device memory is physical: nothing keeps the
     * freed pages for them, as a posix or memfd file does): exports are for memory that stays
     * allocated while peers use it. After {@link #close()}, which freed every chunk, this does nothing.
     *
     * @throws IllegalStateException    if the chunk was freed already, or another thread is inside a native call
     *                                  on its memory (the chunk then stays allocated, its exports revoked, and
     *                                  can be freed again; {@link #export} refuses it, naming this failure)
     * @throws IllegalArgumentException if the chunk is not this provider's
     * @throws ConduitException         if another provider took the device over, or the table cannot be read or
     *                                  written (the file truncated below the metadata); nothing changes but
     *                                  that {@link #export} refuses the chunk, naming this failure
     */
    @Override
    public synchronized void free(Chunk chunk) {
        DevdaxChunk own = own(chunk);
        if (!live.contains(own)) {
            if (closed) return;
            throw new IllegalStateException(own + " was freed already");
        }
        try {
            ensureStillOwner("free " + own);
            onMetadata("free " + own, () -> {
                Layout.revoke(metadata, geometry, own.offset());
                return null;
            });
            own.mapping().close();
        } catch (RuntimeException failed) {
            own.freeFailed(failed);
            throw failed;
        }
        live.remove(own);
        free.give(own.offset(), own.length());
    }

    private DevdaxChunk own(Chunk chunk) {
        if (chunk instanceof DevdaxChunk own && own.provider() == this) {
            return own;
        }
        throw new IllegalArgumentException(chunk + " was not allocated by this devdax provider on " + device.describe());
    }

    /**
     * Frees every chunk still allocated and every re-adopted allocation, unmaps the metadata, and
     * closes the device, which drops the lock. Idempotent.
     *
     * <p>If a chunk cannot be unmapped (another thread is inside a native call on its memory), the
     * provider stays open: every chunk's exports are revoked and those that could be unmapped are
     * freed, but the metadata stays mapped and the device locked, since dropping the lock would let
     * another provider hand out memory this process still uses. It throws, and a later close tries
     * again. If another provider took the device over (see {@link #allocate}), or the device file
     * was truncated below the metadata, so that touching the table faults, the table is left alone,
     * everything here is released, and it throws naming both generations, or the file's new size;
     * when a chunk cannot be unmapped besides, the error of the close that stays open names that too.
     *
     * @throws ConduitException if a chunk could not be unmapped (the provider is then still open), the device
     *                          was taken over, its file truncated below the metadata, or releasing the metadata
     *                          or the descriptor failed
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        ConduitException tableLeft = whyTheTableIsLeftAlone();
        RuntimeException unmapFailure = null;
        for (DevdaxChunk chunk : List.copyOf(live)) {
            if (tableLeft == null) tableLeft = revokeAtClose(chunk.offset());
            try {
                chunk.mapping().close();
                live.remove(chunk);
                free.give(chunk.offset(), chunk.length());
            } catch (RuntimeException e) {
                if (unmapFailure == null) unmapFailure = e;
                else unmapFailure.addSuppressed(e);
            }
        }
        if (!live.isEmpty()) {
            ConduitException busy = new ConduitException("cannot close " + this + ": " + live.size() + " chunk(s) could not be "
                    + "unmapped (" + unmapFailure.getMessage() + ": another thread is inside a native call on their memory). "
                    + (tableLeft == null ? "Their exports are revoked, but the" : "The") + " provider stays open and keeps the "
                    + "device locked, so that no other provider hands out memory this process still uses: let those calls return, "
                    + "then close it again" + (tableLeft == null ? "" : ". The table is left as it is: " + tableLeft.getMessage()),
                    unmapFailure);
            // The fault (SIGBUS) behind a truncation, for the trace.
            if (tableLeft != null) busy.addSuppressed(tableLeft);
            throw busy;
        }
        for (Entry entry : adopted) {
            if (tableLeft == null) tableLeft = revokeAtClose(entry.offset());
        }
        adopted.clear();
        closed = true;
        RuntimeException failure = Cleanup.collect(null, metadataArena::close);
        failure = Cleanup.collect(failure, device::close);
        if (tableLeft != null) {
            ConduitException left = new ConduitException(tableLeft.getMessage() + ". This provider was closed without writing the "
                    + "table", tableLeft.getCause());
            for (Throwable fault : tableLeft.getSuppressed()) left.addSuppressed(fault);
            if (failure != null) left.addSuppressed(failure);
            throw left;
        }
        if (failure != null) throw failure;
    }

    /**
     * Lets go of the device as a crash would: unmaps and closes the descriptor (dropping the
     * lock) but leaves the allocation table as it is, for the next owner to reset or recover.
     * What {@code kill -9} does, for tests of the restart policies in one process; the SPI's
     * {@link #close()} frees instead.
     */
    synchronized void abandon() {
        if (closed) return;
        closed = true;
        RuntimeException failure = null;
        for (DevdaxChunk chunk : live) {
            failure = Cleanup.collect(failure, chunk.mapping()::close);
        }
        live.clear();
        adopted.clear();
        failure = Cleanup.collect(failure, metadataArena::close);
        failure = Cleanup.collect(failure, device::close);
        if (failure != null) throw failure;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("devdax provider on " + device.describe() + " is closed");
        }
    }

    /**
     * Why {@link #close()} must leave the table as it is: another provider took the device over, or the
     * file was truncated below the metadata (reading the header faulted); {@code null} while it is
     * this provider's to clear.
     */
    private ConduitException whyTheTableIsLeftAlone() {
        try {
            String takenOver = onMetadata("close " + this, this::takenOver);
            return takenOver == null ? null : new ConduitException(takenOver);
        } catch (ConduitException gone) {
            return gone;
        }
    }

    /** Clears the entry at {@code offset} for {@link #close()}: {@code null}, or why it could not (the file truncated meanwhile). */
    private ConduitException revokeAtClose(long offset) {
        try {
            onMetadata("close " + this, () -> {
                Layout.revoke(metadata, geometry, offset);
                return null;
            });
            return null;
        } catch (ConduitException gone) {
            return gone;
        }
    }

    /** Fails, changing nothing, unless the table is still this provider's to write. */
    private void ensureStillOwner(String what) {
        String takenOver = onMetadata(what, this::takenOver);
        if (takenOver != null) {
            throw new ConduitException("cannot " + what + ": " + takenOver);
        }
    }

    /**
     * {@code null} while the device's header carries the generation and layout id this provider
     * started it with; otherwise what happened. Only another provider's start changes them, and the
     * lock excludes every provider that reaches the device through the same node as this one.
     */
    private String takenOver() {
        long nowGeneration = Layout.generation(metadata);
        long nowLayout = Layout.layoutId(metadata);
        if (nowGeneration == generation && nowLayout == layoutId) return null;
        boolean sameLayout = nowLayout == layoutId;
        return "device " + device.describe() + " was taken over by another devdax provider: its header is at generation "
                + nowGeneration + (sameLayout ? "" : " of layout " + Long.toHexString(nowLayout)) + ", but this provider started "
                + "it at generation " + generation + (sameLayout ? "" : " of layout " + Long.toHexString(layoutId))
                + ". The other provider reached the device through another device node (the flock is per node: a node made with "
                + "mknod, as docker run --device does, is another inode) and started over it (reset, or recover of what it found), so memory this provider "
                + "handed out may be handed out again there. " + onePerDevice(device);
    }

    /** How chunks are mapped: {@code MAP_SHARED_VALIDATE|MAP_SYNC}, or {@code MAP_SHARED} and why not sync. */
    String mapMode() {
        return metadataMapping.describe();
    }

    /** Whether the kernel accepted {@code MAP_SYNC} for this device. */
    boolean mapSync() {
        return metadataMapping.sync();
    }

    long generation() {
        return generation;
    }

    long layoutId() {
        return layoutId;
    }

    /** Allocations re-adopted from a previous owner and not released yet. */
    synchronized int adoptedCount() {
        return adopted.size();
    }

    Geometry geometry() {
        return geometry;
    }

    Device.Kind kind() {
        return device.kind();
    }

    @Override
    public String toString() {
        return "devdax provider on " + device;
    }
}
