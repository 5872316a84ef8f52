package dev.conduit.tck;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The TCK's memory fixture over a medium that is not a file, as devdax's device is not: one region of
 * this JVM's memory stands in for the device, and a device-wide allocation table, which outlives every
 * provider, names each chunk by an allocation id. An export is that id; the importer looks it up in the
 * table. What revokes an export is clearing its entry, so nothing in the shared directory shows a
 * provider that failed to revoke one (the check after each test finds a file-backed fixture's). The
 * medium is one JVM's: an import maps in the exporting process only, so the suite's checks of a
 * second process are not its ({@link WellBehavedVariantsTckTest} runs the others). The broken
 * fixtures ({@link BrokenPlugins}) are subclasses that break one rule each.
 */
public class TableMemoryPlugin implements ConduitPlugin {

    static final long PAGE = 4096;
    private static final long DEVICE_SIZE = 16L << 20;

    /** The device: memory of the JVM's life, as a device outlives the processes that map it. */
    private static final MemorySegment DEVICE = Arena.global().allocate(DEVICE_SIZE, PAGE);
    /** The device's allocation table, allocation id to range: the one thing an import trusts. */
    private static final Map<Long, Range> TABLE = new ConcurrentHashMap<>();
    /** The ranges of the device in use, by offset: what an allocation must not overlap. Guarded by itself. */
    private static final TreeMap<Long, Long> IN_USE = new TreeMap<>();
    private static final AtomicLong ALLOCATION_IDS = new AtomicLong();

    record Range(long offset, long size) {
    }

    record TableChunk(long allocationId, long offset, Arena arena, MemorySegment segment) implements Chunk {
    }

    @Override
    public String name() {
        return "tck-table";
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
        return Availability.available();
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
        return new Provider();
    }

    /**
     * Decodes the payload: the allocation id, the chunk's offset on the device, its length; nothing after it. The offset
     * must be the table's: ids are handed out in turn, so a payload with one bit of its id changed names a neighbour.
     */
    @Override
    public IpcImporter ipcImporter(PluginContext context) {
        return (payload, chunkLength) -> {
            long allocationId = payload.u64("allocation");
            long offset = payload.u64("offset");
            long length = payload.u64("length");
            payload.end("end");
            if (length != chunkLength) throw payload.invalid("length", "the payload says " + length + " bytes, the handle " + chunkLength);
            Range range = TABLE.get(allocationId);
            if (range == null) {
                throw new ConduitException("allocation " + allocationId + " is not in the device's allocation table: its chunk was "
                        + "freed or its provider closed (stale handle)");
            }
            if (range.offset() != offset || range.size() != length) {
                throw new ConduitException("allocation " + allocationId + " is " + range.size() + " bytes at offset " + range.offset()
                        + " of the device, not " + length + " at " + offset);
            }
            Arena arena = Arena.ofShared();
            MemorySegment segment = DEVICE.asSlice(range.offset(), range.size()).reinterpret(arena, null);
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
        };
    }

    class Provider implements MemoryProvider {
        final Set<TableChunk> chunks = new HashSet<>();

        @Override
        public long pageSize() {
            return PAGE;
        }

        @Override
        public Chunk allocate(long size) {
            if (size <= 0 || size % PAGE != 0) {
                throw new IllegalArgumentException("chunk size " + size + " is not a positive multiple of the page size " + PAGE);
            }
            long offset = take(size);
            Arena arena = Arena.ofShared();
            MemorySegment segment = DEVICE.asSlice(offset, size).reinterpret(arena, null);
            segment.fill((byte) 0);
            TableChunk chunk = new TableChunk(ALLOCATION_IDS.incrementAndGet(), offset, arena, segment);
            TABLE.put(chunk.allocationId(), new Range(offset, size));
            chunks.add(chunk);
            return chunk;
        }

        @Override
        public byte[] export(Chunk chunk) {
            TableChunk c = (TableChunk) chunk;
            return new PayloadWriter().u64(c.allocationId()).u64(c.offset()).u64(c.segment().byteSize()).toByteArray();
        }

        /** Clears the chunk's table entry first, which revokes its export also when the chunk is busy here. */
        @Override
        public void free(Chunk chunk) {
            TableChunk c = (TableChunk) chunk;
            if (!chunks.contains(c)) throw new IllegalArgumentException("allocation " + c.allocationId() + " is not this provider's");
            TABLE.remove(c.allocationId());
            unmapAndGiveBack(c);
        }

        /** Unmaps {@code c} here and gives its range of the device back; the table is left as it is. */
        final void unmapAndGiveBack(TableChunk c) {
            c.arena().close();
            chunks.remove(c);
            synchronized (IN_USE) {
                IN_USE.remove(c.offset());
            }
        }

        @Override
        public void close() {
            for (TableChunk c : List.copyOf(chunks)) free(c);
        }
    }

    /** The lowest offset of the device where {@code size} bytes are free, now in use. */
    private static long take(long size) {
        synchronized (IN_USE) {
            long offset = 0;
            for (Map.Entry<Long, Long> used : IN_USE.entrySet()) {
                if (used.getKey() - offset >= size) break;
                offset = Math.max(offset, used.getKey() + used.getValue());
            }
            if (DEVICE_SIZE - offset < size) {
                throw new ConduitException("the TCK's table device of " + DEVICE_SIZE + " bytes has no " + size + " bytes free");
            }
            IN_USE.put(offset, size);
            return offset;
        }
    }
}
