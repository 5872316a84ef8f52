package dev.conduit.plugin.devdax;

import dev.conduit.linux.Errno;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.PageSize;
import dev.conduit.linux.SocketFlags;
import dev.conduit.linux.SocketPair;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.BlockedCalls;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static dev.conduit.plugin.devdax.Fixtures.UNIT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/** The provider over a file-backed device: allocation, export, free, close, and what it refuses. */
class DevdaxProviderTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path dir;

    private final DevdaxPlugin plugin = new DevdaxPlugin();

    private DevdaxProvider open(Path device, String... keyValues) {
        return (DevdaxProvider) plugin.openMemoryProvider(Fixtures.device("pmem0", device, keyValues));
    }

    @Test
    void allocatesZeroedChunksOfWholeUnitsPastTheMetadata() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
        try (DevdaxProvider provider = open(device)) {
            assertThat(provider.pageSize()).isEqualTo(UNIT);
            assertThat(provider.kind()).isEqualTo(Device.Kind.REGULAR_FILE);
            assertThat(provider.geometry().dataOffset()).as("header and 16 entries fit in the first unit").isEqualTo(UNIT);

            Chunk first = provider.allocate(UNIT);
            Chunk second = provider.allocate(2 * UNIT);
            assertThat(((DevdaxChunk) first).offset()).isEqualTo(UNIT);
            assertThat(((DevdaxChunk) second).offset()).isEqualTo(2 * UNIT);
            assertThat(second.segment().byteSize()).isEqualTo(2 * UNIT);
            assertThat(first.segment().address() % PageSize.get()).isZero();

            first.segment().fill((byte) 0x5A);
            second.segment().set(JAVA_LONG, 0, 42L);
            assertThat(Fixtures.readLong(device, 2 * UNIT)).as("MAP_SHARED: the file sees the write").isEqualTo(42L);

            provider.free(first);
            Fixtures.writeLong(device, 4 * UNIT, -1L); // what a previous owner of the next range left
            Chunk again = provider.allocate(UNIT);
            assertThat(((DevdaxChunk) again).offset()).as("next fit: after the last allocation, not the freed unit").isEqualTo(4 * UNIT);
            assertThat(again.segment().mismatch(java.lang.foreign.MemorySegment.ofArray(new byte[(int) UNIT]))).as("zeroed").isEqualTo(-1);
        }
    }

    /**
     * Device memory is physical: whoever still maps a freed chunk sees its next owner's data.
     * First fit from the lowest address made that next owner the very next allocation.
     */
    @Test
    void aFreedRangeIsHandedOutAgainOnlyAfterTheRestOfTheDevice() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB); // 7 units after the metadata
        try (DevdaxProvider provider = open(device)) {
            Chunk freed = provider.allocate(UNIT);
            provider.free(freed);
            for (long expected = 2 * UNIT; expected < 8 * UNIT; expected += UNIT) {
                assertThat(((DevdaxChunk) provider.allocate(UNIT)).offset()).isEqualTo(expected);
            }
            assertThat(((DevdaxChunk) provider.allocate(UNIT)).offset()).as("the end reached: around to the freed unit").isEqualTo(UNIT);
        }
    }

    /**
     * A range whose mapping failed was given back, but the next-fit search had already moved past
     * it: the next allocation skipped it, as if it had been handed out and freed, and it came
     * round again only after the rest of the device.
     */
    @Test
    void aRangeWhoseMappingFailedIsTheNextAllocationsNotSkipped() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        AtomicBoolean failing = new AtomicBoolean(true);
        Libc libc = FailingLibc.failing("mmapAligned", Errno.ENOMEM, args -> failing.get());
        try (DevdaxProvider provider = DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
            assertThatThrownBy(() -> provider.allocate(UNIT)).hasMessageContaining("ENOMEM");
            failing.set(false);
            assertThat(((DevdaxChunk) provider.allocate(UNIT)).offset()).as("the range the failed allocation took").isEqualTo(UNIT);
            assertThat(((DevdaxChunk) provider.allocate(UNIT)).offset()).isEqualTo(2 * UNIT);
        }
    }

    /** pageSize() promises aligned addresses, and pools rely on it for alignments up to it; a file's mapping is only page-aligned by the kernel. */
    @Test
    void chunksAreMappedAtAddressesAlignedToTheUnit() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
        try (DevdaxProvider provider = open(device)) {
            for (int i = 0; i < 6; i++) {
                Chunk chunk = provider.allocate(i % 2 == 0 ? UNIT : 2 * UNIT);
                assertThat(chunk.segment().address() % UNIT).as("address of chunk %d modulo the unit", i).isZero();
            }
        }
    }

    @Test
    void chunkSizesAreWholeUnitsOfTheAlignment() {
        try (MemoryProvider provider = open(Fixtures.deviceFile(dir, "dax.img", 16 * MIB))) {
            for (long size : new long[] {0, -UNIT, 4096, UNIT + 4096}) {
                assertThatThrownBy(() -> provider.allocate(size))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("not a positive multiple of the alignment " + UNIT);
            }
        }
    }

    @Test
    void theFileAlignmentIsConfigurable() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 4 * MIB);
        try (DevdaxProvider provider = open(device, "devdax.file.align", "64k")) {
            assertThat(provider.pageSize()).isEqualTo(64 * 1024);
            assertThat(provider.geometry().dataOffset()).isEqualTo(64 * 1024);
            assertThat(((DevdaxChunk) provider.allocate(64 * 1024)).offset()).isEqualTo(64 * 1024);
        }
        for (String bad : new String[] {"12k", "1024"}) {
            assertThatThrownBy(() -> open(device, "devdax.file.align", bad))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("devdax.file.align")
                    .hasMessageContaining("CONDUIT_DEVDAX_FILE_ALIGN");
        }
    }

    @Test
    void aFullDeviceSaysHowMuchIsFreeAndWhatToDo() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 8 * MIB + 12345); // the odd tail is not managed
        try (DevdaxProvider provider = open(device)) {
            assertThat(provider.geometry().size()).isEqualTo(8 * MIB);
            List<Chunk> chunks = new ArrayList<>();
            for (int i = 0; i < 3; i++) chunks.add(provider.allocate(UNIT));
            assertThatThrownBy(() -> provider.allocate(UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("has no free range of " + UNIT + " bytes: 0 bytes free")
                    .hasMessageContaining("pool.chunk.size")
                    .hasMessageContaining(device.toString());
            provider.free(chunks.get(0));
            provider.free(chunks.get(2));
            assertThatThrownBy(() -> provider.allocate(2 * UNIT)).hasMessageContaining(2 * UNIT + " bytes free, the longest free range "
                    + UNIT + " bytes");
            provider.free(chunks.get(1));
            assertThat(((DevdaxChunk) provider.allocate(3 * UNIT)).offset()).as("freed ranges merge").isEqualTo(UNIT);
        }
    }

    @Test
    void exportsAreStableAndOnlyForLiveChunksOfThisProvider() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Path other = Fixtures.deviceFile(dir, "other.img", 16 * MIB);
        try (DevdaxProvider provider = open(device); DevdaxProvider foreign = open(other)) {
            Chunk chunk = provider.allocate(UNIT);
            byte[] payload = provider.export(chunk);
            assertThat(provider.export(chunk)).isEqualTo(payload);
            DevdaxPayload decoded = DevdaxPayload.decode(Fixtures.reader(payload));
            assertThat(decoded.alias()).isEqualTo("pmem0");
            assertThat(decoded.offset()).isEqualTo(UNIT);
            assertThat(decoded.length()).isEqualTo(UNIT);
            assertThat(decoded.protection()).isEqualTo(DevdaxPayload.READ_WRITE);
            assertThat(decoded.layoutId()).isEqualTo(provider.layoutId());
            assertThat(decoded.generation()).isEqualTo(provider.generation());
            assertThat(new String(payload, java.nio.charset.StandardCharsets.ISO_8859_1)).doesNotContain(dir.toString());

            Chunk foreignChunk = foreign.allocate(UNIT);
            assertThatThrownBy(() -> provider.export(foreignChunk)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not allocated by this devdax provider");
            assertThatThrownBy(() -> provider.free(foreignChunk)).isInstanceOf(IllegalArgumentException.class);

            provider.free(chunk);
            assertThatThrownBy(() -> provider.export(chunk)).isInstanceOf(IllegalStateException.class).hasMessageContaining("was freed");
            assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(IllegalStateException.class).hasMessageContaining("freed already");
            assertThatThrownBy(() -> chunk.segment().get(JAVA_LONG, 0)).as("unmapped, not a crash").isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void closeFreesEverythingOnceAndRefusesFurtherUse() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        MemoryProvider provider = open(device);
        Chunk chunk = provider.allocate(UNIT);
        provider.close();
        provider.close();
        assertThatThrownBy(() -> chunk.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        provider.free(chunk); // after close: nothing to do
        assertThatThrownBy(() -> provider.allocate(UNIT)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> provider.export(chunk)).isInstanceOf(IllegalStateException.class);
        try (MemoryProvider next = open(device)) {
            assertThat(next.pageSize()).as("the lock was released").isEqualTo(UNIT);
        }
    }

    /**
     * A chunk another thread is inside a native call on cannot be unmapped. close() used to close
     * the descriptor anyway, dropping the lock while the memory was in use here, and to mark itself
     * closed, so that a retry did nothing. The chunks it could unmap are freed: the provider, still
     * open, hands their ranges out again.
     */
    @Test
    void aCloseThatCannotUnmapAChunkKeepsTheDeviceLockedAndCanBeRetried() throws Exception {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Libc libc = Linux.libc();
        DevdaxProvider provider = open(device);
        Chunk busy = provider.allocate(UNIT);
        Chunk idle = provider.allocate(UNIT);
        byte[] busyExport = provider.export(busy);
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(provider::close)
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot close devdax provider on regular file " + device)
                    .hasMessageContaining("1 chunk(s) could not be unmapped")
                    .hasMessageContaining("keeps the device locked")
                    .hasMessageContaining("then close it again");
            assertThatThrownBy(() -> open(device)).as("still locked").hasMessageContaining("is in use by another devdax provider");
            assertThatThrownBy(() -> idle.segment().get(JAVA_LONG, 0)).as("what could be freed was").isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> plugin.ipcImporter(Fixtures.device("pmem0", device)).map(Fixtures.reader(busyExport), UNIT))
                    .as("the busy chunk's exports are revoked").hasMessageStartingWith("export gone: ");
            assertThat(Fixtures.descriptorsOn(device)).isEqualTo(1);
            Chunk everyFreeUnit = provider.allocate(6 * UNIT);
            assertThat(((DevdaxChunk) everyFreeUnit).offset()).as("the idle chunk's range is free again").isEqualTo(2 * UNIT);
            provider.free(everyFreeUnit);
        }
        provider.close();
        assertThat(Fixtures.descriptorsOn(device)).isZero();
        assertThat(Fixtures.mappingsOf(device)).isZero();
        try (MemoryProvider next = open(device)) {
            assertThat(next.pageSize()).as("the retried close released the lock").isEqualTo(UNIT);
        }
    }

    /**
     * A free clears the chunk's table entry before it unmaps the chunk; when the unmap is refused
     * (another thread inside a native call on its memory) the chunk stays allocated with no entry.
     * Until 2026-12-07 export still handed out its payload, which every importer then refused as
     * "export gone": the exporter's error was found only by its peers, without the failed free.
     */
    @Test
    void anExportOfAChunkWhoseFreeFailedIsRefusedNamingThatFree() throws Exception {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Libc libc = Linux.libc();
        try (DevdaxProvider provider = open(device);
             SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM)) {
            Chunk busy = provider.allocate(UNIT);
            try (var _ = BlockedCalls.blockedRead(pair.first().fd(),
                    () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
                assertThatThrownBy(() -> provider.free(busy)).isInstanceOf(IllegalStateException.class);

                assertThatThrownBy(() -> provider.export(busy))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageStartingWith("cannot export " + busy + ": its free failed")
                        .hasMessageContaining("no importer would accept its export")
                        .hasMessageContaining("free it again");
            }
            provider.free(busy);
            assertThatThrownBy(() -> provider.export(busy)).isInstanceOf(IllegalStateException.class).hasMessageContaining("was freed");
        }
    }

    @Test
    void aRegularFileRefusesMapSyncAndTheProviderSaysSo() {
        try (DevdaxProvider provider = open(Fixtures.deviceFile(dir, "dax.img", 16 * MIB))) {
            assertThat(provider.mapSync()).isFalse();
            assertThat(provider.mapMode()).isEqualTo("MAP_SHARED (MAP_SYNC refused: EOPNOTSUPP)");
        }
    }

    @Test
    void aTruncatedDeviceFileIsRefusedInsteadOfCrashingWithSigbus() throws Exception {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        try (DevdaxProvider provider = open(device)) {
            provider.allocate(UNIT);
            Fixtures.resize(device, 4 * MIB);
            assertThatThrownBy(() -> provider.allocate(4 * UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("was truncated to " + 4 * MIB + " bytes")
                    .hasMessageContaining("SIGBUS");
        }
    }

    /**
     * A file truncated after the size check and before the chunk is zeroed faults the zeroing
     * (SIGBUS): the allocation escaped as the JDK's bare InternalError ("a fault occurred in an
     * unsafe memory access operation"), naming neither the file nor the cause. Nothing is in the
     * table for the range, which is free again once the file has its size back.
     */
    @Test
    void aFileTruncatedWhileAChunkIsZeroedIsNamedAndLeavesTheTableAndTheFreeSpaceAsBefore() throws Exception {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Libc libc = FailingLibc.runningBefore("mmapAligned", args -> true, () -> Fixtures.resize(device, UNIT));
        try (DevdaxProvider provider = DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
            assertThatThrownBy(() -> provider.allocate(UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("device file " + device + " (alias 'pmem0') was truncated to " + UNIT + " bytes")
                    .hasMessageContaining("SIGBUS")
                    .hasMessageContaining("restore its size or reopen the provider")
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement().isInstanceOf(InternalError.class));
            assertThat(Fixtures.mappingsOf(device)).as("the metadata only").isEqualTo(1);
            assertThat(Fixtures.readLong(device, Layout.TABLE_OFFSET + Layout.ENTRY_SIZE)).as("no table entry for the range").isZero();
            Fixtures.resize(device, 16 * MIB);
            assertThat(((DevdaxChunk) provider.allocate(UNIT)).offset()).as("the range is free again").isEqualTo(UNIT);
        }
    }

    /**
     * A device file truncated below its header, as another process with write access may (the lock
     * is advisory), makes every read of the provider's header fault (SIGBUS). allocate and free
     * check the owner there first, and until 2026-12-07 escaped as the JDK's bare InternalError,
     * not the "was truncated" refusal a truncation past the header gets.
     */
    @Test
    void aDeviceFileTruncatedBelowItsHeaderIsNamedByAllocateAndFree() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        DevdaxProvider provider = open(device);
        try {
            Chunk chunk = provider.allocate(UNIT);
            Fixtures.resize(device, 0);
            assertThatThrownBy(() -> provider.allocate(UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("cannot allocate: touching the metadata of device " + device)
                    .hasMessageContaining("was truncated to 0 bytes")
                    .hasMessageContaining("restore its size or reopen the provider");
            assertThatThrownBy(() -> provider.free(chunk))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("cannot free " + chunk)
                    .hasMessageContaining("was truncated to 0 bytes");
        } finally {
            provider.abandon(); // lets go without reading the header
        }
    }

    /**
     * Close reads the header first (was the device taken over?), which faults on a device file
     * truncated below it: until 2026-12-07 close threw the JDK's bare InternalError before it
     * released anything, and every later close the same. The descriptor, the device's lock and
     * every mapping stayed for the JVM's life, so the remedy allocate gives for a truncated file,
     * "reopen the provider", could not be followed: the reopen was refused, the lock held by this
     * process.
     */
    @Test
    void aProviderWhoseDeviceFileWasTruncatedToNothingStillLetsGoOfTheDeviceWhenClosed() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        DevdaxProvider provider = open(device);
        try {
            provider.allocate(UNIT);
            Fixtures.resize(device, 0);
            Throwable closing = catchThrowable(provider::close);
            assertThat(Fixtures.descriptorsOn(device)).as("the device's descriptor, and with it the lock").isZero();
            assertThat(Fixtures.mappingsOf(device)).as("the metadata and the chunk").isZero();
            assertThat(closing).as("a refusal that names the file, not a fault")
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("device file " + device + " (alias 'pmem0') was truncated to 0 bytes")
                    .hasMessageContaining("restore its size or reopen the provider")
                    .hasMessageEndingWith("This provider was closed without writing the table");
            Fixtures.resize(device, 16 * MIB);
            open(device).close(); // the remedy: the lock is free
        } finally {
            provider.abandon(); // lets go without reading the header
        }
    }

    /**
     * A close that finds the device file truncated below its header and cannot unmap a chunk (another
     * thread inside a native call on it) stays open and throws for the chunk. Until 2026-12-07 that
     * error did not name the truncation, which only the next close did: the operator, told to let the
     * calls return and close again, was not told that the table could not be written either.
     */
    @Test
    void aCloseThatFindsTheFileTruncatedAndCannotUnmapABusyChunkNamesBoth() throws Exception {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Libc libc = Linux.libc();
        DevdaxProvider provider = open(device);
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM)) {
            Chunk busy = provider.allocate(UNIT);
            try (var _ = BlockedCalls.blockedRead(pair.first().fd(),
                    () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
                Fixtures.resize(device, 0);

                assertThatThrownBy(provider::close)
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("1 chunk(s) could not be unmapped")
                        .hasMessageContaining("then close it again")
                        .hasMessageContaining("device file " + device + " (alias 'pmem0') was truncated to 0 bytes");
            }
        } finally {
            provider.abandon();
        }
    }

    /**
     * Writing a new layout touches every page of the table; a page of a sparse file that its file
     * system cannot supply (full: a 1 GiB file at 4 KiB units on a tmpfs with 64 KiB left does
     * this by hand), or that lies past a truncation, faults (SIGBUS), and until 2026-12-07 the open
     * escaped as the JDK's bare InternalError, naming neither the file nor the cause, where a
     * chunk's zeroing names both. Here the file loses all but its first page just before the metadata is
     * mapped, so the header reads as blank and the format faults on the table's second page.
     */
    @Test
    void aTableThatCannotBeWrittenIsNamedAtOpenAndLeavesNothingOpen() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 64 * MIB); // 16384 units of 4 KiB: a table of 65 pages
        Libc libc = FailingLibc.runningBefore("mmap", args -> (long) args[1] == 0,
                () -> Fixtures.resize(device, PageSize.get()));
        assertThatThrownBy(() -> DevdaxProvider.open(libc, Fixtures.device("pmem0", device, "devdax.file.align", "4k"), Sysfs.SYSTEM,
                LockHolders.PROC_LOCKS))
                .isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("cannot start a provider: touching the metadata of device " + device)
                .hasMessageContaining("SIGBUS")
                .hasMessageContaining("was truncated to " + PageSize.get() + " bytes");
        assertThat(Fixtures.descriptorsOn(device)).isZero();
        assertThat(Fixtures.mappingsOf(device)).isZero();
    }

    /** A failed fstat here used to be reported as "cannot map", though nothing was mapped. */
    @Test
    void aFailingSizeCheckIsReportedAsSuchNotAsAMappingFailure() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        AtomicBoolean failing = new AtomicBoolean();
        Libc libc = FailingLibc.failing("fstat", Errno.EIO, args -> failing.get());
        try (DevdaxProvider provider = DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
            failing.set(true);
            assertThatThrownBy(() -> provider.allocate(UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("cannot check the size of device file " + device + " (alias 'pmem0') before mapping")
                    .hasMessageContaining("EIO")
                    .hasMessageContaining("SIGBUS")
                    .hasMessageContaining("dmesg");
            assertThat(Fixtures.mappingsOf(device)).as("the metadata only").isEqualTo(1);
            failing.set(false);
            assertThat(provider.allocate(UNIT).segment().byteSize()).isEqualTo(UNIT);
        }
    }

    /** A fstat failing right after the open escaped as a bare errno, naming neither the alias nor the path. */
    @Test
    void aFailingFstatAtOpenNamesTheAliasAndThePath() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Libc libc = FailingLibc.failing("fstat", Errno.EIO, args -> true);
        long descriptors = Fixtures.openDescriptors();
        assertThatThrownBy(() -> DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS))
                .isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("cannot learn what device " + device + " (alias 'pmem0') is: ")
                .hasMessageContaining("EIO")
                .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
        assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
    }

    /** mmap of a device-DAX instance disabled under an open descriptor ({@code daxctl disable-device}) fails with ENXIO. */
    @Test
    void aDisabledDeviceIsNamedAsSuchWhenAChunkCannotBeMapped() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Libc libc = FailingLibc.failing("mmapAligned", Errno.ENXIO, args -> true);
        try (DevdaxProvider provider = DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
            assertThatThrownBy(() -> provider.allocate(UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot map [" + UNIT + ", " + 2 * UNIT + ") of device " + device + " (alias 'pmem0')")
                    .hasMessageContaining("ENXIO")
                    .hasMessageContaining("disabled or its driver unbound")
                    .hasMessageContaining("daxctl list");
            assertThat(Fixtures.mappingsOf(device)).as("the metadata only").isEqualTo(1);
        }
    }

    /** mmap of the metadata failing for a shortage (ENOMEM) or a file that cannot be mapped (ENODEV) named no remedy. */
    @Test
    void aMetadataMappingThatFailsForAShortageOrAnUnmappableFileSaysWhatToDo() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        long descriptors = Fixtures.openDescriptors();
        Libc shortOfMappings = FailingLibc.failing("mmap", Errno.ENOMEM, args -> true);
        assertThatThrownBy(() -> DevdaxProvider.open(shortOfMappings, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS))
                .isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("cannot map the metadata of device " + device + " (alias 'pmem0')")
                .hasMessageContaining("ENOMEM")
                .hasMessageContaining("out of address space or mappings")
                .hasMessageContaining("vm.max_map_count");
        Libc unmappable = FailingLibc.failing("mmap", Errno.ENODEV, args -> true);
        assertThatThrownBy(() -> DevdaxProvider.open(unmappable, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("ENODEV")
                .hasMessageContaining("nor a file that can be mapped")
                .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
        assertThat(Fixtures.mappingsOf(device)).isZero();
        assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
    }

    /** A chunk's mmap failing for ENODEV named no remedy; its ENOMEM did. */
    @Test
    void aChunkMappingThatFailsForAnUnmappableFileSaysWhatToDo() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        for (int errno : new int[] {Errno.ENOMEM, Errno.ENODEV}) {
            Libc libc = FailingLibc.failing("mmapAligned", errno, args -> true);
            try (DevdaxProvider provider = DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
                assertThatThrownBy(() -> provider.allocate(UNIT))
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("cannot map [" + UNIT + ", " + 2 * UNIT + ") of device " + device + " (alias 'pmem0')")
                        .hasMessageContaining(errno == Errno.ENOMEM ? "pool.chunk.size" : "nor a file that can be mapped");
            }
        }
    }

    /**
     * Every errno but ENXIO, ENOMEM and ENODEV got "check the alias in devdax.devices", which
     * cannot help when the alias leads to the device and the mapping is refused for another reason:
     * a security module's refusal (EACCES, EPERM), a locked-memory limit (EAGAIN), a range the device
     * does not map (EINVAL). Each now says what fits it; an errno with nothing specific to do (EBADF)
     * is named alone.
     */
    @Test
    void aChunkMappingRefusedForAnotherReasonThanTheDeviceSaysWhatFitsTheErrno() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        java.util.Map<Integer, String> remedies = java.util.Map.of(
                Errno.EACCES, "security module",
                Errno.EPERM, "security module",
                Errno.EAGAIN, "ulimit -l",
                Errno.EINVAL, "daxctl reconfigure-device");
        for (int errno : new int[] {Errno.EACCES, Errno.EPERM, Errno.EAGAIN, Errno.EINVAL, Errno.EBADF}) {
            Libc libc = FailingLibc.failing("mmapAligned", errno, args -> true);
            try (DevdaxProvider provider = DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
                assertThatThrownBy(() -> provider.allocate(UNIT))
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("cannot map [" + UNIT + ", " + 2 * UNIT + ") of device " + device + " (alias 'pmem0')")
                        .hasMessageContaining(Errno.name(errno))
                        .hasMessageNotContaining("devdax.devices")
                        .satisfies(e -> {
                            if (remedies.containsKey(errno)) assertThat(e.getMessage()).contains(remedies.get(errno));
                            else assertThat(e.getMessage()).as("the errno alone").endsWith("EBADF (Bad file descriptor)");
                        });
            }
        }
    }

    /**
     * Every open errno but ENOENT, EACCES, EPERM, EROFS, ENXIO and ENODEV got "check the alias in
     * devdax.devices", which cannot help when the process has no descriptor left (EMFILE) or another user
     * holds the device (EBUSY): each now says what fits it, and EMFILE that the alias is not at fault.
     */
    @Test
    void aDeviceThatCannotBeOpenedForAnotherReasonThanItsPathSaysWhatFitsTheErrno() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        java.util.Map<Integer, String> remedies = java.util.Map.of(
                Errno.EMFILE, "whatever the alias, this process has no file descriptor left: raise its open-file limit (ulimit -n",
                Errno.ENFILE, "whatever the alias, the system's open-file table is full: raise fs.file-max",
                Errno.EBUSY, "held open exclusively by another user");
        remedies.forEach((errno, remedy) -> {
            Libc libc = FailingLibc.failing("open", errno, args -> device.toString().equals(args[0]));
            assertThatThrownBy(() -> DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot open device " + device + " (alias 'pmem0')")
                    .hasMessageContaining(Errno.name(errno))
                    .hasMessageContaining(remedy)
                    .hasMessageNotContaining("check the alias");
        });
    }

    /**
     * A device the provider cannot open for writing because its file system is mounted read-only (EROFS: a file that
     * stands in for a device on a container's :ro bind mount) is told so. Device.openRemedy groups EROFS with EACCES and
     * EPERM, and the remedy sent the user to grant access to the device (its group, a udev rule, the container's device
     * cgroup), none of which makes a read-only mount writable.
     */
    @Test
    void aDeviceOnAReadOnlyMountIsNamedAsSuchNotAsAnAccessProblem() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 16 * MIB);
        Libc libc = FailingLibc.failing("open", Errno.EROFS, args -> device.toString().equals(args[0]));
        assertThatThrownBy(() -> DevdaxProvider.open(libc, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot open device " + device + " (alias 'pmem0')")
                .hasMessageContaining("EROFS")
                .hasMessageContaining("it lies on a read-only mount: remount it read-write")
                .hasMessageNotContaining("udev rule");
    }

    @Test
    void unusableDevicesAreRefusedWithTheReasonAndTheRemedy() throws Exception {
        Path missing = dir.resolve("missing.img");
        assertThatThrownBy(() -> open(missing))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot open device " + missing + " (alias 'pmem0')")
                .hasMessageContaining("ENOENT")
                .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
        Path empty = Fixtures.deviceFile(dir, "empty.img", 0);
        assertThatThrownBy(() -> open(empty)).hasMessageContaining("is empty").hasMessageContaining("truncate -s 1G");
        Path small = Fixtures.deviceFile(dir, "small.img", 3 * MIB);
        assertThatThrownBy(() -> open(small)).hasMessageContaining("too small").hasMessageContaining("devdax.file.align");
        Path directory = Files.createDirectory(dir.resolve("adir"));
        assertThatThrownBy(() -> open(directory)).hasMessageContaining("EISDIR");
        assertThatThrownBy(() -> open(Path.of("/dev/null")))
                .as("a character device that is not device DAX, checked against the real sysfs")
                .hasMessageContaining("/dev/null is not a device-DAX device")
                .hasMessageContaining("subsystem 'mem'");
    }

    /**
     * open(2) of a Unix domain socket fails with ENXIO, the errno Device.openRemedy takes for a device node without a
     * device behind it. Until 2026-12-07 an alias that leads to a socket (a path mistyped into a runtime directory) was
     * told that "the device was disabled or its driver unbound" and to run daxctl enable-device, for a path that is no
     * device at all; plugins.md says sockets are refused as such, as FIFOs and directories are.
     */
    @Test
    void anAliasThatLeadsToASocketIsToldItIsNoDeviceNotThatADeviceWasDisabled() throws Exception {
        Path socket = dir.resolve("a.sock");
        try (var server = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            server.bind(java.net.UnixDomainSocketAddress.of(socket));
            assertThatThrownBy(() -> open(socket))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith(socket + " (alias 'pmem0') is a socket")
                    .hasMessageNotContaining("daxctl enable-device")
                    .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
        }
    }

    @Test
    void theProvidersDeviceComesFromTheConfiguredTable() {
        Path a = Fixtures.deviceFile(dir, "a.img", 16 * MIB);
        Path b = Fixtures.deviceFile(dir, "b.img", 16 * MIB);
        String table = "pmem-a=" + a + ",pmem-b=" + b;
        assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("has no device")
                .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
        assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of("devdax.devices", table)))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("has 2 aliases [pmem-a, pmem-b]")
                .hasMessageContaining("devdax.device (CONDUIT_DEVDAX_DEVICE)");
        assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of("devdax.devices", table, "devdax.device", "pmem-c")))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("bad value 'pmem-c' for config key conduit.devdax.device (CONDUIT_DEVDAX_DEVICE) (from test "
                        + "configuration): alias 'pmem-c' is not in devdax.devices (CONDUIT_DEVDAX_DEVICES) [pmem-a, pmem-b]");
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of("devdax.devices", table, "devdax.device", "pmem-b"))) {
            assertThat(DevdaxPayload.decode(Fixtures.reader(provider.export(provider.allocate(UNIT)))).alias()).isEqualTo("pmem-b");
            assertThat(Fixtures.descriptorsOn(b)).isEqualTo(1);
            assertThat(Fixtures.descriptorsOn(a)).isZero();
        }
        for (String bad : new String[] {"pmem0", "pmem0=", "PMEM=/x", "0pmem=/x", "pmem0=relative/path", "a=/x,a=/y"}) {
            assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of("devdax.devices", bad)))
                    .as(bad)
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("devdax.devices");
        }
    }
}
