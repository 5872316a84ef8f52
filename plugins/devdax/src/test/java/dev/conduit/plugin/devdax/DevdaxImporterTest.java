package dev.conduit.plugin.devdax;

import dev.conduit.linux.Errno;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static dev.conduit.plugin.devdax.Fixtures.UNIT;
import static dev.conduit.plugin.devdax.Fixtures.reader;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The importer in this process: what it maps, and every handle it refuses, with nothing left open. */
class DevdaxImporterTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path dir;

    private final DevdaxPlugin plugin = new DevdaxPlugin();
    private Path device;

    @BeforeEach
    void createDevice() {
        device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
    }

    private MemoryProvider provider() {
        return plugin.openMemoryProvider(Fixtures.device("pmem0", device));
    }

    private IpcImporter importer(Path path) {
        return plugin.ipcImporter(Fixtures.device("pmem0", path));
    }

    @Test
    void anImportSharesTheChunkBothWays() {
        try (MemoryProvider provider = provider()) {
            provider.allocate(UNIT);
            Chunk chunk = provider.allocate(2 * UNIT);
            chunk.segment().set(JAVA_LONG, 0, 41L);
            try (ChunkMapping mapping = importer(device).map(reader(provider.export(chunk)), 2 * UNIT)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(2 * UNIT);
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(41L);
                mapping.segment().set(JAVA_LONG, 2 * UNIT - 8, 42L);
                assertThat(chunk.segment().get(JAVA_LONG, 2 * UNIT - 8)).isEqualTo(42L);
                assertThat(mapping.toString()).contains("[" + 2 * UNIT + ", " + 4 * UNIT + ")");
                assertThat(mapping.mayFault()).as("a regular file named as the device, which its writers may truncate").isTrue();
            }
        }
    }

    /** A container sees the device at another path: a symbolic link or a second hard link to the same file. */
    @Test
    void theConsumersAliasMayLeadToTheDeviceByAnotherPath() throws Exception {
        Path symlink = Files.createSymbolicLink(dir.resolve("symlink.img"), device);
        Path hardLink = Files.createLink(dir.resolve("hardlink.img"), device);
        try (MemoryProvider provider = provider()) {
            Chunk chunk = provider.allocate(UNIT);
            byte[] payload = provider.export(chunk);
            long value = 7;
            for (Path view : new Path[] {symlink, hardLink}) {
                chunk.segment().set(JAVA_LONG, 0, ++value);
                try (ChunkMapping mapping = importer(view).map(reader(payload), UNIT)) {
                    assertThat(mapping.segment().get(JAVA_LONG, 0)).as(view.toString()).isEqualTo(value);
                }
            }
        }
    }

    @Test
    void anAliasTheConsumerDoesNotListIsRefused() {
        try (MemoryProvider provider = provider()) {
            byte[] payload = provider.export(provider.allocate(UNIT));
            long descriptors = Fixtures.openDescriptors();
            assertThatThrownBy(() -> plugin.ipcImporter(Fixtures.device("other", device)).map(reader(payload), UNIT))
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.alias"))
                    .hasMessageContaining("alias 'pmem0' is not in this process's device table [other]")
                    .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
            assertThatThrownBy(() -> plugin.ipcImporter(TestContext.of()).map(reader(payload), UNIT))
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.alias"));
            assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
        }
    }

    @Test
    void misalignedAndOutOfRangeHandlesAreRefusedNamingTheField() {
        try (DevdaxProvider provider = (DevdaxProvider) provider()) {
            DevdaxPayload good = DevdaxPayload.decode(reader(provider.export(provider.allocate(UNIT))));
            long size = 32 * MIB;
            assertRefused(good, good.offset() + 4096, UNIT, "payload.offset", "is not a multiple of the alignment " + UNIT);
            assertRefused(good, 0, UNIT, "payload.offset", "lies in the metadata region");
            assertRefused(good, size, UNIT, "payload.offset", "past the end");
            assertRefused(good, Long.MAX_VALUE & -UNIT, UNIT, "payload.offset", "past the end");
            assertRefused(good, good.offset(), UNIT + 4096, "payload.length", "is not a multiple of the alignment");
            assertRefused(good, size - UNIT, 2 * UNIT, "payload.length", "runs past the end");
            assertRefused(good, good.offset(), Long.MAX_VALUE & -UNIT, "payload.length", "runs past the end");
            assertThat(Fixtures.mappingsOf(device)).as("the provider's metadata and chunk only").isEqualTo(2);
        }
    }

    private void assertRefused(DevdaxPayload good, long offset, long length, String field, String message) {
        byte[] payload = new DevdaxPayload(good.alias(), good.layoutId(), offset, length, good.protection(), good.allocationId(),
                good.generation()).encode();
        long descriptors = Fixtures.openDescriptors();
        assertThatThrownBy(() -> importer(device).map(reader(payload), length))
                .as(offset + "+" + length)
                .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo(field))
                .hasMessageContaining(message)
                .hasMessageContaining(device.toString());
        assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
    }

    @Test
    void malformedPayloadsAreRefusedNamingTheFieldBeforeAnythingIsOpened() {
        try (MemoryProvider provider = provider()) {
            byte[] good = provider.export(provider.allocate(UNIT));
            IpcImporter importer = importer(device);
            long descriptors = Fixtures.openDescriptors();

            for (int length = 0; length < good.length; length++) {
                byte[] truncated = Arrays.copyOf(good, length);
                assertThatThrownBy(() -> importer.map(reader(truncated), UNIT)).as("truncated to " + length)
                        .isInstanceOf(InvalidHandleException.class).hasMessageContaining("truncated");
            }
            byte[] trailing = Arrays.copyOf(good, good.length + 1);
            assertField(importer, trailing, UNIT, "payload.end");
            assertField(importer, with(good, 0, 2), UNIT, "payload.version");
            assertField(importer, payload("Pmem0", 1, UNIT, UNIT, 3, 1, 1), UNIT, "payload.alias");
            assertField(importer, payload("../../etc/passwd", 1, UNIT, UNIT, 3, 1, 1), UNIT, "payload.alias");
            assertField(importer, payload("/dev/mem", 1, UNIT, UNIT, 3, 1, 1), UNIT, "payload.alias");
            assertField(importer, payload("pmem0", 0, UNIT, UNIT, 3, 1, 1), UNIT, "payload.layout");
            assertField(importer, payload("pmem0", 1, -UNIT, UNIT, 3, 1, 1), UNIT, "payload.offset");
            assertField(importer, payload("pmem0", 1, UNIT, 0, 3, 1, 1), 0, "payload.length");
            for (int protection : new int[] {0, 2, 4, 7, 255}) {
                assertField(importer, payload("pmem0", 1, UNIT, UNIT, protection, 1, 1), UNIT, "payload.protection");
            }
            assertField(importer, payload("pmem0", 1, UNIT, UNIT, 3, 0, 1), UNIT, "payload.allocation");
            assertField(importer, payload("pmem0", 1, UNIT, UNIT, 3, 1, 0), UNIT, "payload.generation");
            assertField(importer, good, 2 * UNIT, "payload.length");
            assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
        }
    }

    private static void assertField(IpcImporter importer, byte[] payload, long chunkLength, String field) {
        assertThatThrownBy(() -> importer.map(reader(payload), chunkLength))
                .as(field)
                .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo(field));
    }

    private static byte[] payload(String alias, long layout, long offset, long length, int protection, long allocation, long generation) {
        return new PayloadWriter().u8(DevdaxPayload.VERSION).string(alias).u64(layout).u64(offset).u64(length).u8(protection)
                .u64(allocation).u64(generation).toByteArray();
    }

    private static byte[] with(byte[] payload, int index, int value) {
        byte[] copy = payload.clone();
        copy[index] = (byte) value;
        return copy;
    }

    @Test
    void anExportFreedOrClosedIsGone() {
        IpcImporter importer = importer(device);
        byte[] closedPayload;
        try (MemoryProvider provider = provider()) {
            Chunk chunk = provider.allocate(UNIT);
            byte[] payload = provider.export(chunk);
            provider.free(chunk);
            assertThatThrownBy(() -> importer.map(reader(payload), UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("export gone: device " + device + " (alias 'pmem0') holds no allocation")
                    .hasMessageContaining("freed the chunk or closed its provider");
            Chunk reused;
            do {
                reused = provider.allocate(UNIT); // next fit: the freed range comes round again once the rest is taken
            } while (((DevdaxChunk) reused).offset() != ((DevdaxChunk) chunk).offset());
            assertThatThrownBy(() -> importer.map(reader(payload), UNIT)).hasMessageStartingWith("export gone: ");
            closedPayload = provider.export(reused);
        }
        assertThatThrownBy(() -> importer.map(reader(closedPayload), UNIT)).hasMessageStartingWith("export gone: ");
        assertThat(Fixtures.mappingsOf(device)).isZero();
        assertThat(Fixtures.descriptorsOn(device)).isZero();
    }

    /**
     * A handle with its allocation's id and offset but a longer length would map past the
     * allocation, into the one after it: the table's entry has another length, so it is gone.
     */
    @Test
    void aHandleLongerThanItsAllocationIsGoneNotAMappingOfTheNextAllocation() {
        IpcImporter importer = importer(device);
        try (MemoryProvider provider = provider()) {
            Chunk chunk = provider.allocate(UNIT);
            provider.allocate(UNIT); // right after it, where a longer mapping would reach
            DevdaxPayload real = DevdaxPayload.decode(reader(provider.export(chunk)));
            byte[] longer = new DevdaxPayload(real.alias(), real.layoutId(), real.offset(), 2 * UNIT, real.protection(),
                    real.allocationId(), real.generation()).encode();
            assertThatThrownBy(() -> importer.map(reader(longer), 2 * UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("export gone: device " + device + " (alias 'pmem0') holds no allocation "
                            + Long.toHexString(real.allocationId()) + " of " + 2 * UNIT + " bytes at offset " + real.offset());
            assertThat(Fixtures.mappingsOf(device)).as("the provider's metadata and its two chunks").isEqualTo(3);
        }
    }

    /**
     * A chunk far into a device of small units has its table entry past the page the header is on
     * (4096-byte units: from the 249th unit on): the import reads the entry where it is.
     */
    @Test
    void aChunkWhoseTableEntryLiesPastTheHeadersPageImports() {
        try (MemoryProvider provider = plugin.openMemoryProvider(Fixtures.device("pmem0", device, "devdax.file.align", "4k"))) {
            provider.allocate(300 * 4096L);
            Chunk far = provider.allocate(4096);
            assertThat(((DevdaxChunk) far).offset() / 4096).as("its unit, whose entry is past the first page").isGreaterThan(248);
            try (ChunkMapping mapping = importer(device).map(reader(provider.export(far)), 4096)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(4096);
            }
        }
    }

    /**
     * A device file truncated below the size its layout describes is refused, naming the
     * truncation: a mapping of the range would reach past the file's end, where a touch kills the
     * process with SIGBUS.
     */
    @Test
    void aDeviceFileTruncatedBelowItsLayoutIsRefusedNamingTheTruncation() {
        try (MemoryProvider provider = provider()) {
            byte[] export = provider.export(provider.allocate(UNIT));
            Fixtures.resize(device, 16 * MIB);
            try {
                assertThatThrownBy(() -> importer(device).map(reader(export), UNIT))
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("its layout describes " + 32 * MIB + " bytes in units of " + UNIT + ", but this process "
                                + "sees a regular file of " + 16 * MIB + " bytes")
                        .hasMessageContaining("the file was truncated");
            } finally {
                Fixtures.resize(device, 32 * MIB);
            }
        }
    }

    /**
     * A layout made in units smaller than the unit a device-DAX device maps in (its align raised
     * since the layout was written) is refused naming both units: no range of it can be mapped
     * (the kernel's mmap answers a bare EINVAL), and the owner adapts the layout at its next reset.
     * The device here is /dev/zero, which the fixture sysfs calls device DAX with a 2 MiB align.
     */
    @Test
    void aLayoutInUnitsSmallerThanTheDevicesMappingUnitIsRefusedNamingBoth() throws Exception {
        FileStatus zero;
        try (var fd = Linux.libc().open("/dev/zero", 0, 0)) {
            zero = Linux.libc().fstat(fd);
        }
        Path sys = dir.resolve("sys");
        SysfsTest.daxEntry(sys, zero.rdevMajor(), zero.rdevMinor(), Long.toString(16 * MIB), Long.toString(2 * MIB), "dax");
        Layout.Found smallerUnits = new Layout.Valid(new Layout.Header(0x1111, new Layout.Geometry(16 * MIB, 4096), 1));
        DevdaxPayload payload = new DevdaxPayload("pmem0", 0x1111, 2 * MIB, 2 * MIB, DevdaxPayload.READ_WRITE, 0x2222, 1);
        try (Device device = Device.open(Linux.libc(), "pmem0", Path.of("/dev/zero"), false, new Sysfs(sys))) {
            assertThatThrownBy(() -> DevdaxImporter.readHeader(smallerUnits, device, payload))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("its layout describes " + 16 * MIB + " bytes in units of 4096, but this process sees a "
                            + "device-DAX of " + 16 * MIB + " bytes mapped in units of " + 2 * MIB)
                    .hasMessageContaining("= reset");
        }
    }

    /**
     * Freed between the table check and the mmap, and handed to a new owner: the mapping made is
     * of the new owner's memory. It used to be returned as the export's.
     */
    @Test
    void anAllocationFreedWhileItIsBeingMappedIsGoneNotTheNextOwnersMemory() {
        Path small = Fixtures.deviceFile(dir, "small.img", 4 * MIB); // one unit after the metadata: a freed range is reused at once
        try (MemoryProvider provider = plugin.openMemoryProvider(Fixtures.device("pmem0", small))) {
            Chunk chunk = provider.allocate(UNIT);
            byte[] payload = provider.export(chunk);
            long offset = ((DevdaxChunk) chunk).offset();
            Chunk[] next = new Chunk[1];
            Libc racing = FailingLibc.runningBefore("mmap", args -> (long) args[1] == offset, () -> {
                provider.free(chunk);
                next[0] = provider.allocate(UNIT);
                next[0].segment().set(JAVA_LONG, 0, 0xBADL);
            });
            IpcImporter importer = new DevdaxImporter(racing, Map.of("pmem0", small), Sysfs.SYSTEM);
            long descriptors = Fixtures.openDescriptors();

            assertThatThrownBy(() -> importer.map(reader(payload), UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("export gone: device " + small + " (alias 'pmem0') holds no allocation")
                    .hasMessageContaining("while this process mapped it");
            assertThat(((DevdaxChunk) next[0]).offset()).as("the race happened: the range has a new owner").isEqualTo(offset);
            assertThat(Fixtures.mappingsOf(small)).as("the provider's metadata and new chunk only").isEqualTo(2);
            assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
        }
    }

    /**
     * The exporter dies between the table check and the mmap, and its successor resets the device
     * to another alignment and allocates over the export's range. That reset keeps the layout id
     * and clears only its own, shorter table, so the export's entry, read again after the mmap,
     * still matched, and the new owner's memory was returned as the export's. The layout is now
     * read again too.
     */
    @Test
    void anImportRacingAResetToAnotherAlignmentIsGoneNotTheNewOwnersMemory() {
        Path file = Fixtures.deviceFile(dir, "dax.img", 64 * MIB);
        DevdaxProvider first = (DevdaxProvider) plugin.openMemoryProvider(Fixtures.device("pmem0", file, "devdax.file.align", "4k"));
        first.allocate(2 * MIB - first.geometry().dataOffset()); // so that the next chunk starts at 2 MiB
        Chunk exported = first.allocate(2 * MIB);
        long offset = ((DevdaxChunk) exported).offset();
        byte[] payload = first.export(exported);
        MemoryProvider[] successor = new MemoryProvider[1];
        Chunk[] next = new Chunk[1];
        Libc racing = FailingLibc.runningBefore("mmap", args -> (long) args[1] == offset, () -> {
            first.abandon(); // killed
            // The successor starts with the default alignment, 2 MiB, and resets: its table ends long before the old entry.
            successor[0] = plugin.openMemoryProvider(Fixtures.device("pmem0", file));
            next[0] = successor[0].allocate(62 * MIB); // from its data offset, 2 MiB: over the export's range
            next[0].segment().set(JAVA_LONG, 0, 0xBADL);
        });
        IpcImporter importer = new DevdaxImporter(racing, Map.of("pmem0", file), Sysfs.SYSTEM);
        try {
            long descriptors = Fixtures.openDescriptors();
            assertThatThrownBy(() -> importer.map(reader(payload), 2 * MIB))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("export gone: device " + file + " (alias 'pmem0') holds no allocation")
                    .hasMessageContaining("the device's layout was written again meanwhile");
            assertThat(((DevdaxChunk) next[0]).offset()).as("the race happened: the range has a new owner").isEqualTo(offset);
            assertThat(Fixtures.mappingsOf(file)).as("the successor's metadata and chunk only").isEqualTo(2);
            assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
        } finally {
            if (successor[0] != null) successor[0].close();
        }
    }

    /** mmap of a device-DAX instance disabled under an open descriptor ({@code daxctl disable-device}) fails with ENXIO. */
    @Test
    void aDisabledDeviceIsNamedAsSuchWhenItCannotBeMapped() {
        try (MemoryProvider provider = provider()) {
            Chunk chunk = provider.allocate(UNIT);
            byte[] payload = provider.export(chunk);
            long offset = ((DevdaxChunk) chunk).offset();
            for (long failingAt : new long[] {0, offset}) { // the header, the range
                Libc disabled = FailingLibc.failing("mmap", Errno.ENXIO, args -> (long) args[1] == failingAt);
                IpcImporter importer = new DevdaxImporter(disabled, Map.of("pmem0", device), Sysfs.SYSTEM);
                assertThatThrownBy(() -> importer.map(reader(payload), UNIT))
                        .as("mmap at " + failingAt)
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining(device + " (alias 'pmem0')")
                        .hasMessageContaining("ENXIO")
                        .hasMessageContaining("disabled or its driver unbound")
                        .hasMessageContaining("daxctl list");
            }
            assertThat(Fixtures.mappingsOf(device)).isEqualTo(2);
        }
    }

    /**
     * mmap failing for a shortage (ENOMEM) or a file that cannot be mapped (ENODEV) named the errno
     * and nothing to do when the metadata was being mapped; the range's ENOMEM alone had a remedy.
     */
    @Test
    void aMappingThatFailsForAShortageOrAnUnmappableFileSaysWhatToDo() {
        try (MemoryProvider provider = provider()) {
            Chunk chunk = provider.allocate(UNIT);
            byte[] payload = provider.export(chunk);
            long offset = ((DevdaxChunk) chunk).offset();
            for (long failingAt : new long[] {0, offset}) { // the header, the range
                Libc shortOfMappings = FailingLibc.failing("mmap", Errno.ENOMEM, args -> (long) args[1] == failingAt);
                assertThatThrownBy(() -> new DevdaxImporter(shortOfMappings, Map.of("pmem0", device), Sysfs.SYSTEM).map(reader(payload), UNIT))
                        .as("mmap at " + failingAt)
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining(device + " (alias 'pmem0')")
                        .hasMessageContaining("ENOMEM")
                        .hasMessageContaining("out of address space or mappings")
                        .hasMessageContaining("vm.max_map_count")
                        .hasMessageContaining("ipc.cache.entries (CONDUIT_IPC_CACHE_ENTRIES) or ipc.cache.bytes")
                        .hasMessageContaining("pool.chunk.size");
                Libc unmappable = FailingLibc.failing("mmap", Errno.ENODEV, args -> (long) args[1] == failingAt);
                assertThatThrownBy(() -> new DevdaxImporter(unmappable, Map.of("pmem0", device), Sysfs.SYSTEM).map(reader(payload), UNIT))
                        .as("mmap at " + failingAt)
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("ENODEV")
                        .hasMessageContaining("nor a file that can be mapped")
                        .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
            }
            assertThat(Fixtures.mappingsOf(device)).isEqualTo(2);
        }
    }

    /**
     * An import that finds the layout being written (its owner's format had not ended 100 ms into
     * the read) says so, and that the export is to be asked for again; one that finds none names a
     * provider writing one now besides a table that leads elsewhere. Both were told the device holds
     * no layout, or a damaged one, and asked whether the device table leads to the producer's device.
     */
    @Test
    void anImportThatReadsALayoutBeingWrittenSaysSoAndToAskForANewExport() {
        DevdaxPayload payload = new DevdaxPayload("pmem0", 0x1111, UNIT, UNIT, 3, 7, 1);
        try (Device opened = Device.open(dev.conduit.linux.Linux.libc(), "pmem0", device, false, Sysfs.SYSTEM)) {
            assertThatThrownBy(() -> DevdaxImporter.readHeader(new Layout.BeingWritten("what the read found"), opened, payload))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("its owner was writing a new devdax layout on it while this process read it (what the read "
                            + "found)")
                    .hasMessageContaining("ask the producer for a new one once its provider has started")
                    .hasMessageNotContaining("damaged");
            assertThatThrownBy(() -> DevdaxImporter.readHeader(new Layout.Blank(), opened, payload))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("holds no devdax layout")
                    .hasMessageContaining("or a provider starting on it is writing a new one now");
        }
    }

    @Test
    void anAliasThatLeadsToAnotherDeviceIsNamedAsSuch() {
        Path other = Fixtures.deviceFile(dir, "other.img", 32 * MIB);
        try (MemoryProvider provider = provider()) {
            byte[] payload = provider.export(provider.allocate(UNIT));
            assertThatThrownBy(() -> importer(other).map(reader(payload), UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("holds no devdax layout");
            try (MemoryProvider otherProvider = plugin.openMemoryProvider(Fixtures.device("pmem0", other))) {
                otherProvider.allocate(UNIT);
                assertThatThrownBy(() -> importer(other).map(reader(payload), UNIT))
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("is not the one the export was made on")
                        .hasMessageContaining("leads alias 'pmem0' to another device than the producer's");
            }
        }
    }

    @Test
    void aReadOnlyExportIsMappedReadOnly() {
        try (MemoryProvider provider = provider()) {
            Chunk chunk = provider.allocate(UNIT);
            chunk.segment().set(JAVA_LONG, 0, 99L);
            DevdaxPayload rw = DevdaxPayload.decode(reader(provider.export(chunk)));
            byte[] readOnly = new DevdaxPayload(rw.alias(), rw.layoutId(), rw.offset(), rw.length(), 1, rw.allocationId(),
                    rw.generation()).encode();
            try (ChunkMapping mapping = importer(device).map(reader(readOnly), UNIT)) {
                assertThat(mapping.segment().isReadOnly()).isTrue();
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(99L);
                assertThatThrownBy(() -> mapping.segment().set(JAVA_LONG, 0, 1L)).as("refused, not a SIGSEGV")
                        .isInstanceOf(IllegalArgumentException.class);
            }
        }
    }

    @Test
    void closingAMappingUnmapsItAndLaterAccessThrows() {
        try (MemoryProvider provider = provider()) {
            byte[] payload = provider.export(provider.allocate(UNIT));
            ChunkMapping mapping = importer(device).map(reader(payload), UNIT);
            assertThat(Fixtures.mappingsOf(device)).isEqualTo(3);
            mapping.close();
            mapping.close();
            assertThat(Fixtures.mappingsOf(device)).isEqualTo(2);
            assertThatThrownBy(() -> mapping.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void anImportHoldsNoLockOnTheDevice() {
        MemoryProvider provider = provider();
        Chunk chunk = provider.allocate(UNIT);
        chunk.segment().set(JAVA_LONG, 0, 5L);
        try (ChunkMapping mapping = importer(device).map(reader(provider.export(chunk)), UNIT)) {
            provider.close();
            try (MemoryProvider next = provider()) {
                assertThat(next.pageSize()).as("a new owner can lock the device while the import is mapped").isEqualTo(UNIT);
            }
            assertThat(mapping.segment().get(JAVA_LONG, 0)).as("mappings outlive the export").isEqualTo(5L);
        }
    }
}
