package dev.conduit.plugin.devdax;

import dev.conduit.spi.Cleanup;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.MappingCount;
import dev.conduit.linux.MmapFlags;
import dev.conduit.plugin.devdax.Layout.Entry;
import dev.conduit.plugin.devdax.Layout.Geometry;
import dev.conduit.plugin.devdax.Layout.Header;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.PayloadReader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;

/**
 * Maps ranges of devices that a devdax provider, in this process or another, exported. Needs no
 * provider and takes no lock: it only reads the device's metadata and maps the exported range.
 * Stateless apart from this process's device table, and thread-safe.
 *
 * <p>For each handle (the runtime's IPC cache calls this only on a miss) it:
 * <ol>
 *   <li>decodes the payload ({@link DevdaxPayload}) and checks that its length is the handle's
 *       chunk length;</li>
 *   <li>resolves the alias through this process's own table ({@code devdax.devices}), refusing an
 *       alias it does not list: which devices a consumer touches is its own configuration, never
 *       the handle's word;</li>
 *   <li>opens the device ({@code O_RDWR}, or {@code O_RDONLY} for a read-only export), learns its
 *       shape (sysfs for device DAX, {@code fstat} for a regular file), and maps its first unit
 *       read-only to read the header ({@link Layout}): there must be a valid layout, with the
 *       export's layout id (else the alias leads here to another device than the producer's, or
 *       the device got a new layout since, which forgot the export's allocation), that fits the
 *       device;</li>
 *   <li>checks the range against the layout: offset and length multiples of the alignment, past
 *       the metadata region, inside the device ({@link InvalidHandleException} naming
 *       {@code payload.offset} or {@code payload.length}; "export gone" when the layout is of a later
 *       generation than the export's, which a reset for another alignment or size may have made the
 *       range not fit);</li>
 *   <li>checks that the allocation table holds the export's allocation id with this length at
 *       this offset (else "export gone": freed, the provider closed, or the owner restarted with
 *       {@code reset});</li>
 *   <li>maps exactly the range, {@code MAP_SHARED} ({@code MAP_SYNC} where accepted), into a
 *       shared arena of its own, and closes the descriptor;</li>
 *   <li>reads the table entry again: if the allocation was freed between the check and the
 *       {@code mmap} (and its range perhaps allocated again), the mapping is of someone else's
 *       memory, so it is unmapped and the export reported gone. Whatever fails, nothing stays open
 *       or mapped.</li>
 * </ol>
 *
 * <p>What this cannot do: notice a free <em>after</em> it returned. Device memory is physical,
 * so a mapping of a freed range aliases whatever its next owner puts there (posix and memfd
 * keep a freed chunk's pages for whoever still maps them; a device has no such pages). An
 * importer must stop using a region when its exporter frees it, or restarts with
 * {@code devdax.on.start=reset}.
 *
 * <p>The device is opened per call rather than kept open: an importer has no close, so a kept
 * descriptor would live as long as the JVM; a miss already costs an {@code open} and two
 * {@code mmap}s.
 */
final class DevdaxImporter implements IpcImporter {

    private final Libc libc;
    private final Map<String, Path> devices;
    private final Sysfs sysfs;

    DevdaxImporter(Libc libc, Map<String, Path> devices, Sysfs sysfs) {
        this.libc = libc;
        this.devices = Map.copyOf(devices);
        this.sysfs = sysfs;
    }

    /**
     * @throws InvalidHandleException if the payload is malformed, names an alias this process does not
     *                                know, or a range that is misaligned or outside the device
     * @throws ConduitException       if the allocation is gone ("export gone"), the alias leads to another
     *                                device than the producer's, or the device cannot be opened or mapped
     */
    @Override
    public ChunkMapping map(PayloadReader reader, long chunkLength) {
        DevdaxPayload payload = DevdaxPayload.decode(reader);
        if (payload.length() != chunkLength) {
            throw reader.invalid("length", "the payload's length " + payload.length() + " differs from the handle's chunk length "
                    + chunkLength + ": the handle is corrupt or was made for another chunk");
        }
        Path path = devices.get(payload.alias());
        if (path == null) {
            throw reader.invalid("alias", "alias '" + payload.alias() + "' is not in this process's device table "
                    + devices.keySet() + "; refused: an importer maps only devices its own configuration names. If this process "
                    + "should map it, add " + payload.alias() + "=<the path where this process sees the device> to "
                    + DevdaxConfig.DEVICES.nameAndVariable());
        }
        DaxMapping mapping = null;
        try (Device device = Device.open(libc, payload.alias(), path, payload.writable(), sysfs);
             Arena views = Arena.ofConfined()) {
            // The metadata is read through read-only mappings of whole units, unmapped when this returns.
            MemorySegment first = mapReadOnly(device, 0, device.mapUnit(), views);
            Header header = readHeader(Layout.read(first), device, payload);
            if (payload.generation() > header.generation()) {
                // exporterState() judges the exporter by this generation: one the device never reached is no exporter's.
                throw reader.invalid("generation", "generation " + payload.generation() + " is later than device "
                        + device.describe() + "'s, " + header.generation() + ": no owner of it exported this; refused");
            }
            checkRange(reader, payload, header, device);
            MemorySegment entryView = checkAllocation(first, views, device, header, payload);
            mapping = mapRange(device, payload);
            // The entry may have been freed, and its range allocated again, while the range was being mapped.
            if (!holdsAllocation(entryView, device, header, payload)) {
                throw gone(device, header, payload, " while this process mapped it");
            }
            // A reset to another size or alignment keeps the layout id, and clears only the new table: the old table's
            // entries past its end stay, and the entry read again above may be one of them, over a range the new owner
            // allocated since. So the layout must still be the one the range was checked against.
            if (!(Layout.read(first) instanceof Layout.Valid(Header now)) || now.layoutId() != header.layoutId()
                    || !now.geometry().equals(header.geometry())) {
                throw gone(device, header, payload, " while this process mapped it: the device's layout was written again meanwhile");
            }
        } catch (RuntimeException | Error e) {
            // Also when closing the device or the views fails once the range is mapped: the mapping is this call's to undo.
            DaxMapping made = mapping;
            if (made != null) Cleanup.run(e, made::close);
            throw e;
        }
        return mapping;
    }

    /** The device's header, from {@code found} (its first unit, read), once it is known to be the producer's device and to fit what this process sees. */
    static Header readHeader(Layout.Found found, Device device, DevdaxPayload payload) {
        Header header = switch (found) {
            case Layout.Valid(Header valid) -> valid;
            case Layout.Blank() -> throw new ConduitException("cannot import from device " + device.describe() + ": it holds no "
                    + "devdax layout, so no provider allocated from it since it was last wiped, or a provider starting on it is "
                    + "writing a new one now, which forgets every allocation made before. Does " + DevdaxConfig.DEVICES.nameAndVariable()
                    + " lead this process to the producer's device?");
            case Layout.BeingWritten(String reason) -> throw new ConduitException("cannot import from device " + device.describe()
                    + ": its owner was writing a new devdax layout on it while this process read it (" + reason + "). A new layout "
                    + "forgets every allocation of the old one, so an export made before it does not import any more: ask the "
                    + "producer for a new one once its provider has started");
            case Layout.Damaged(String reason) -> throw new ConduitException("cannot import from device " + device.describe()
                    + ": its devdax layout is damaged (" + reason + "); its owner rewrites it when it next opens with "
                    + DevdaxConfig.ON_START.nameAndVariable() + " = reset");
        };
        if (header.layoutId() != payload.layoutId()) {
            throw new ConduitException("cannot import from device " + device.describe() + ": its layout (id "
                    + Long.toHexString(header.layoutId()) + ") is not the one the export was made on (id "
                    + Long.toHexString(payload.layoutId()) + "): either this process's " + DevdaxConfig.DEVICES.nameAndVariable()
                    + " leads alias '" + payload.alias() + "' to another device than the producer's, or a new layout was written "
                    + "over the device since the export was made (its owner found it blank or damaged when it started, the device is "
                    + "at generation " + header.generation() + "), which forgot every allocation of the old one");
        }
        Geometry geometry = header.geometry();
        if (geometry.size() > device.size() || geometry.alignment() % device.mapUnit() != 0) {
            throw new ConduitException("cannot import from device " + device.describe() + ": its layout describes "
                    + geometry.size() + " bytes in units of " + geometry.alignment() + ", but this process sees a " + device.kind()
                    + " of " + device.size() + " bytes mapped in units of " + device.mapUnit()
                    + (device.kind() == Device.Kind.REGULAR_FILE ? ": the file was truncated" : "") + ". Mapping it would "
                    + "crash this process with SIGBUS or fail; its owner adapts the layout when it next opens with "
                    + DevdaxConfig.ON_START.nameAndVariable() + " = reset");
        }
        return header;
    }

    /**
     * Refuses a range that does not fit the layout: a corrupt handle, unless the layout is of a later generation than
     * the export's. A reset to another alignment or a smaller size keeps the layout id, and an export's range, whole
     * units of the old layout inside it, may be misaligned for the new one or past its end: stale, and gone as every
     * allocation the reset forgot, not the "invalid handle" of a corrupt or hostile one.
     */
    private static void checkRange(PayloadReader reader, DevdaxPayload payload, Header header, Device device) {
        Geometry geometry = header.geometry();
        try {
            checkRange(reader, payload, geometry, device);
        } catch (InvalidHandleException outside) {
            if (payload.generation() == header.generation()) throw outside;
            ConduitException gone = gone(device, header, payload, ", and its range [" + payload.offset() + ", "
                    + (payload.offset() + payload.length()) + ") does not fit the layout written since, " + geometry.size()
                    + " bytes in units of " + geometry.alignment() + " with data from offset " + geometry.dataOffset()
                    + ", for another alignment (" + DevdaxConfig.FILE_ALIGN.nameAndVariable() + ", or the device's) or size");
            gone.addSuppressed(outside);
            throw gone;
        }
    }

    private static void checkRange(PayloadReader reader, DevdaxPayload payload, Geometry geometry, Device device) {
        long alignment = geometry.alignment();
        long offset = payload.offset();
        long length = payload.length();
        if (offset % alignment != 0) {
            throw reader.invalid("offset", "offset " + offset + " is not a multiple of the alignment " + alignment + " of device "
                    + device.describe() + "; refused: ranges are whole alignment units");
        }
        if (offset < geometry.dataOffset()) {
            throw reader.invalid("offset", "offset " + offset + " lies in the metadata region of device " + device.describe()
                    + " (its first " + geometry.dataOffset() + " bytes), which is never exported; refused");
        }
        if (offset >= geometry.size()) {
            throw reader.invalid("offset", "offset " + offset + " is past the end of device " + device.describe() + " ("
                    + geometry.size() + " bytes); refused");
        }
        if (length % alignment != 0) {
            throw reader.invalid("length", "length " + length + " is not a multiple of the alignment " + alignment + " of device "
                    + device.describe() + "; refused: ranges are whole alignment units");
        }
        if (length > geometry.size() - offset) {
            throw reader.invalid("length", "range [" + offset + ", " + offset + " + " + length + ") runs past the end of device "
                    + device.describe() + " (" + geometry.size() + " bytes); refused");
        }
    }

    /**
     * Fails with "export gone" unless the table holds the export's allocation.
     *
     * @return a mapping of the unit that holds the entry, for reading it again
     */
    private MemorySegment checkAllocation(MemorySegment first, Arena views, Device device, Header header, DevdaxPayload payload) {
        Geometry geometry = header.geometry();
        long unit = device.mapUnit();
        long viewStart = entryViewStart(geometry, unit, payload);
        MemorySegment view = viewStart == 0 ? first : mapReadOnly(device, viewStart, unit, views);
        if (holdsAllocation(view, device, header, payload)) {
            return view;
        }
        throw gone(device, header, payload, "");
    }

    private static long entryViewStart(Geometry geometry, long unit, DevdaxPayload payload) {
        return geometry.entryOffset(payload.offset()) / unit * unit;
    }

    private static boolean holdsAllocation(MemorySegment view, Device device, Header header, DevdaxPayload payload) {
        Geometry geometry = header.geometry();
        Entry entry = Layout.readEntry(view, entryViewStart(geometry, device.mapUnit(), payload), geometry, payload.offset());
        return entry != null && entry.id() == payload.allocationId() && entry.length() == payload.length();
    }

    private static ConduitException gone(Device device, Header header, DevdaxPayload payload, String when) {
        return new ConduitException("export gone: device " + device.describe() + " holds no allocation "
                + Long.toHexString(payload.allocationId()) + " of " + payload.length() + " bytes at offset " + payload.offset()
                + " any more" + when + ". Its producer freed the chunk or closed its provider, or the device's owner restarted with "
                + DevdaxConfig.ON_START.nameAndVariable() + " = reset (the export is from generation " + payload.generation()
                + ", the device is at generation " + header.generation() + ")");
    }

    private DaxMapping mapRange(Device device, DevdaxPayload payload) {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment segment = Mapper.mapPreferringSync(libc, device.fd(), payload.offset(), payload.length(),
                    payload.protection(), arena).segment();
            return new DaxMapping(device.path(), payload.offset(), arena, payload.writable() ? segment : segment.asReadOnly(),
                    device.kind() == Device.Kind.REGULAR_FILE, () -> exporterState(payload));
        } catch (ErrnoException e) {
            arena.close();
            throw new ConduitException("cannot map [" + payload.offset() + ", " + (payload.offset() + payload.length())
                    + ") of device " + device.describe() + " " + MmapFlags.describeProtection(payload.protection()) + ": "
                    + e.getMessage() + Device.mapRemedy(e, MappingCount.FEWER_IMPORTED_MAPPINGS), e);
        } catch (RuntimeException | Error e) {
            Cleanup.run(e, arena::close);
            throw e;
        }
    }

    /**
     * What this process can tell of the life of the provider that exported {@code payload}, from the
     * device's header, read as an import reads it (the device opened read-only, its first unit mapped
     * read-only, both released before this returns): {@code DEAD} once the header is at another
     * generation or layout than the export's, for every owner's start moves the generation (a
     * {@code reset} or a {@code recover}, a format too) and an owner starts only once its
     * predecessor's lock is gone (died or closed), or its table is no longer the exporter's (a second
     * node of the device, DevdaxProvider). {@code UNKNOWN} otherwise: the allocation table names
     * allocations, not an owner, and the owner's claim is its {@code flock} on the device, which a
     * look cannot judge honestly. Testing it takes the lock, for an instant, which makes a new
     * owner's open fail ("held by pid" of this importer); and a lock belongs to an inode, so an
     * importer reaching the device through another node (a container's {@code mknod}) would see
     * no lock and call a live exporter dead. So a dead owner nobody succeeded reads as
     * {@code UNKNOWN}, and so does a device without a valid layout (blank, damaged, a format under
     * way): nothing there says whose it is.
     *
     * @throws ConduitException when the device cannot be opened or mapped, naming it, the errno and the remedy
     */
    ExporterState exporterState(DevdaxPayload payload) {
        try (Device device = Device.open(libc, payload.alias(), devices.get(payload.alias()), false, sysfs);
             Arena views = Arena.ofConfined()) {
            if (Layout.read(mapReadOnly(device, 0, device.mapUnit(), views)) instanceof Layout.Valid(Header header)
                    && (header.layoutId() != payload.layoutId() || header.generation() != payload.generation())) {
                return ExporterState.DEAD;
            }
            return ExporterState.UNKNOWN;
        }
    }

    /** Maps {@code [offset, offset + length)} read-only into {@code arena}, as a read-only segment. */
    private MemorySegment mapReadOnly(Device device, long offset, long length, Arena arena) {
        try {
            return libc.mmap(device.fd(), offset, length, MmapFlags.PROT_READ, Mapper.SHARED_FLAGS, arena).asReadOnly();
        } catch (ErrnoException e) {
            throw new ConduitException("cannot map the metadata of device " + device.describe() + " to check an export: "
                    + e.getMessage() + Device.mapRemedy(e, MappingCount.FEWER_IMPORTED_MAPPINGS), e);
        }
    }

    @Override
    public String toString() {
        return "devdax importer of " + devices;
    }
}
