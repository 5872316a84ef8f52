package dev.conduit.plugin.devdax;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static dev.conduit.plugin.devdax.Fixtures.UNIT;
import static dev.conduit.plugin.devdax.Fixtures.reader;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What a restarted owner does with the allocation table its predecessor left: {@code recover}
 * re-adopts it, {@code reset} (the default) forgets it. A crash is simulated in this process with
 * {@link DevdaxProvider#abandon()}, which lets go of the device without freeing; the
 * cross-process variant with {@code kill -9} is in {@link DeviceLockTest}.
 */
class RestartPolicyTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path dir;

    private final DevdaxPlugin plugin = new DevdaxPlugin();
    private Path device;
    private IpcImporter importer;

    @BeforeEach
    void createDevice() {
        device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
        importer = plugin.ipcImporter(Fixtures.device("pmem0", device));
    }

    private DevdaxProvider open(String onStart, String... keyValues) {
        String[] all = new String[keyValues.length + 2];
        all[0] = "devdax.on.start";
        all[1] = onStart;
        System.arraycopy(keyValues, 0, all, 2, keyValues.length);
        return (DevdaxProvider) plugin.openMemoryProvider(Fixtures.device("pmem0", device, all));
    }

    /**
     * A layout being written while the starting owner, holding the device's lock, reads it is
     * another provider's start, through another device node: neither mode writes over it (a read
     * that gave up took it for blank, over which either mode wrote a new layout, or for damaged,
     * which reset replaced); both refuse, naming it and the remedy, and leave the device as it is.
     */
    @Test
    void aLayoutAnotherProviderIsWritingIsNotWrittenOverInEitherMode() {
        Layout.Geometry geometry = Layout.Geometry.of(32 * MIB, UNIT);
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
             Device opened = Device.open(dev.conduit.linux.Linux.libc(), "pmem0", device, true, Sysfs.SYSTEM)) {
            java.lang.foreign.MemorySegment metadata = arena.allocate(geometry.dataOffset(), 4096);
            Layout.format(metadata, geometry, 0x1111, 7);
            Layout.Found before = Layout.read(metadata);
            for (DevdaxConfig.OnStart mode : DevdaxConfig.OnStart.values()) {
                assertThatThrownBy(() -> DevdaxProvider.start(new Layout.BeingWritten("what the read found"), metadata, geometry, mode,
                        opened, new java.security.SecureRandom()))
                        .as("start with %s", mode)
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("another process was writing a layout on it while this provider, holding the device's lock, "
                                + "read it (what the read found)")
                        .hasMessageContaining("reached the device through another device node")
                        .hasMessageContaining("Run one provider per device");
                assertThat(Layout.read(metadata)).as("the layout after a start with %s", mode).isEqualTo(before);
            }
        }
    }

    @Test
    void recoverReadoptsTheAllocationsOfAnOwnerThatDidNotClose() {
        DevdaxProvider crashed = open("reset");
        Chunk kept = crashed.allocate(2 * UNIT);
        Chunk freed = crashed.allocate(UNIT);
        kept.segment().set(JAVA_LONG, 0, 1234L);
        byte[] keptExport = crashed.export(kept);
        byte[] freedExport = crashed.export(freed);
        crashed.free(freed);
        long generation = crashed.generation();
        crashed.abandon(); // as kill -9 would: nothing freed, lock dropped

        try (DevdaxProvider recovered = open("recover")) {
            assertThat(recovered.generation()).isEqualTo(generation + 1);
            assertThat(recovered.layoutId()).isEqualTo(DevdaxPayload.decode(reader(keptExport)).layoutId());
            assertThat(recovered.adoptedCount()).isEqualTo(1);
            try (ChunkMapping mapping = importer.map(reader(keptExport), 2 * UNIT)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).as("the old export still imports").isEqualTo(1234L);
            }
            assertThatThrownBy(() -> importer.map(reader(freedExport), UNIT)).hasMessageStartingWith("export gone: ");

            assertThat(DevdaxPayload.decode(reader(keptExport)).offset()).isEqualTo(UNIT);
            Chunk fresh = recovered.allocate(2 * UNIT);
            assertThat(((DevdaxChunk) fresh).offset()).as("past the re-adopted [UNIT, 3 UNIT), and past the freed [3 UNIT, 4 UNIT), "
                    + "where the predecessor stopped").isEqualTo(4 * UNIT);
        }
        assertThatThrownBy(() -> importer.map(reader(keptExport), 2 * UNIT))
                .as("closing frees re-adopted allocations like its own")
                .hasMessageStartingWith("export gone: ");
    }

    /** An allocation that ends where the device ends is whole: recover re-adopts it, not drops it as running past the end. */
    @Test
    void recoverReadoptsAnAllocationThatEndsWhereTheDeviceEnds() {
        DevdaxProvider crashed = open("reset");
        long everyDataUnit = 32 * MIB - UNIT;
        byte[] export = crashed.export(crashed.allocate(everyDataUnit));
        crashed.abandon();

        try (DevdaxProvider recovered = open("recover")) {
            assertThat(recovered.adoptedCount()).isEqualTo(1);
            try (ChunkMapping mapping = importer.map(reader(export), everyDataUnit)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(everyDataUnit);
            }
        }
    }

    /**
     * What an importer can tell of its devdax exporter's life: nothing while the device's header is
     * at the export's generation, the exporter alive or killed (the table names no owner, and its
     * lock is not for an importer to judge: DevdaxImporter#exporterState), and DEAD, for good, once
     * another owner started, under {@code recover} as under {@code reset}; the mapping keeps what the
     * dead exporter wrote, and looks leave nothing open on the device.
     */
    @ParameterizedTest
    @ValueSource(strings = {"recover", "reset"})
    void anImportSaysUnknownWhileItsExportersGenerationHoldsAndDeadOnceAnotherOwnerStarted(String successorStart) {
        DevdaxProvider crashed = open("reset");
        Chunk chunk = crashed.allocate(UNIT);
        chunk.segment().set(JAVA_LONG, 0, 4321L);
        ChunkMapping mapping = importer.map(reader(crashed.export(chunk)), UNIT);
        try {
            assertThat(mapping.exporterState()).as("its exporter lives").isEqualTo(ExporterState.UNKNOWN);
            crashed.abandon(); // as kill -9 would: nothing freed, lock dropped
            assertThat(mapping.exporterState()).as("its exporter died, and no owner started since").isEqualTo(ExporterState.UNKNOWN);
            try (DevdaxProvider successor = open(successorStart)) {
                assertThat(mapping.exporterState()).as("another owner started (%s)", successorStart).isEqualTo(ExporterState.DEAD);
                assertThat(mapping.segment().get(JAVA_LONG, 0)).as("what the dead exporter wrote").isEqualTo(4321L);
            }
            assertThat(mapping.exporterState()).as("once the successor closed too").isEqualTo(ExporterState.DEAD);
        } finally {
            mapping.close();
        }
        assertThat(mapping.exporterState()).as("after the mapping's close").isEqualTo(ExporterState.DEAD);
        assertThat(Fixtures.descriptorsOn(device)).isZero();
        assertThat(Fixtures.mappingsOf(device)).isZero();
    }

    /** An exporter that closed its provider is no more known dead than one killed, until another owner starts. */
    @Test
    void anExporterThatClosedItsProviderIsUnknownUntilAnotherOwnerStarts() {
        ChunkMapping mapping;
        try (DevdaxProvider exporter = open("reset")) {
            mapping = importer.map(reader(exporter.export(exporter.allocate(UNIT))), UNIT);
        }
        try (mapping) {
            assertThat(mapping.exporterState()).isEqualTo(ExporterState.UNKNOWN);
            open("reset").close();
            assertThat(mapping.exporterState()).isEqualTo(ExporterState.DEAD);
        }
    }

    /**
     * An owner that found the layout damaged writes a new one at generation 1, which may be the
     * export's own generation: the other layout id tells that the exporter is dead.
     */
    @Test
    void anExporterWhoseLayoutANewOwnerRewroteAtItsOwnGenerationIsDead() {
        DevdaxProvider exporter = open("reset");
        ChunkMapping mapping = importer.map(reader(exporter.export(exporter.allocate(UNIT))), UNIT);
        try (mapping) {
            exporter.abandon();
            Fixtures.writeLong(device, Layout.OFFSET_SIZE, 3 * UNIT); // breaks the header's checksum: the next start rewrites it
            try (DevdaxProvider successor = open("reset")) {
                assertThat(successor.generation()).as("the exporter's generation").isEqualTo(1);
                assertThat(mapping.exporterState()).isEqualTo(ExporterState.DEAD);
            }
        }
    }

    /**
     * The exporter's generation is the handle's word, which the importer judges the exporter by: one
     * the device never reached names no exporter and is refused; one a look cannot check (the device
     * gone) fails naming the device and the remedy, leaving nothing open.
     */
    @Test
    void aHandleFromALaterGenerationIsRefusedAndALookThatCannotReadTheDeviceSaysWhy() throws Exception {
        try (DevdaxProvider exporter = open("reset")) {
            byte[] export = exporter.export(exporter.allocate(UNIT));
            DevdaxPayload real = DevdaxPayload.decode(reader(export));
            DevdaxPayload later = new DevdaxPayload(real.alias(), real.layoutId(), real.offset(), real.length(), real.protection(),
                    real.allocationId(), real.generation() + 1);
            assertThatThrownBy(() -> importer.map(reader(later.encode()), UNIT))
                    .isInstanceOf(dev.conduit.spi.InvalidHandleException.class)
                    .hasMessageContaining("payload.generation")
                    .hasMessageContaining("generation " + (real.generation() + 1) + " is later than device " + device);
            try (ChunkMapping mapping = importer.map(reader(export), UNIT)) {
                Path moved = device.resolveSibling("moved.img");
                java.nio.file.Files.move(device, moved);
                try {
                    assertThatThrownBy(mapping::exporterState).isInstanceOf(ConduitException.class)
                            .hasMessageContaining(device.toString()).hasMessageContaining("ENOENT");
                } finally {
                    java.nio.file.Files.move(moved, device);
                }
                assertThat(mapping.exporterState()).isEqualTo(ExporterState.UNKNOWN);
            }
        }
    }

    @Test
    void resetForgetsThemAndSaysSoInTheError() {
        DevdaxProvider crashed = open("reset");
        byte[] export = crashed.export(crashed.allocate(UNIT));
        crashed.abandon();

        try (DevdaxProvider reset = open("reset")) {
            assertThat(reset.generation()).isEqualTo(2);
            assertThat(reset.adoptedCount()).isZero();
            assertThatThrownBy(() -> importer.map(reader(export), UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("export gone: ")
                    .hasMessageContaining("devdax.on.start (CONDUIT_DEVDAX_ON_START) = reset")
                    .hasMessageContaining("the export is from generation 1, the device is at generation 2");
            assertThat(((DevdaxChunk) reset.allocate(UNIT)).offset()).as("the range is free again, but the search goes on where "
                    + "the predecessor stopped").isEqualTo(2 * UNIT);
        }
    }

    /**
     * A consumer that keeps its mapping of a chunk across its producer's restart sees whatever the
     * range's next owner writes (device memory is physical). The restarted owner used to allocate
     * from the lowest address again, so its first chunk was that range.
     */
    @Test
    void aRestartedOwnerGoesOnWhereItsPredecessorStoppedInsteadOfReusingItsRangesAtOnce() {
        DevdaxProvider first = open("reset");
        Chunk chunk = first.allocate(UNIT);
        chunk.segment().set(JAVA_LONG, 0, 1L);
        try (ChunkMapping kept = importer.map(reader(first.export(chunk)), UNIT)) {
            first.close(); // frees it: the table is empty, only the search position is left
            try (DevdaxProvider second = open("reset")) {
                Chunk next = second.allocate(UNIT);
                next.segment().set(JAVA_LONG, 0, 2L);
                assertThat(((DevdaxChunk) next).offset()).isEqualTo(2 * UNIT);
                assertThat(kept.segment().get(JAVA_LONG, 0)).as("not (yet) the next owner's data").isEqualTo(1L);
            }
            try (DevdaxProvider third = open("recover")) {
                assertThat(((DevdaxChunk) third.allocate(UNIT)).offset()).isEqualTo(3 * UNIT);
            }
        }
    }

    @Test
    void aSearchPositionThatCannotBeOneIsIgnored() {
        open("reset").close();
        for (long bad : new long[] {-UNIT, 0, 12345, UNIT - 4096, 32 * MIB, Long.MAX_VALUE}) {
            Fixtures.writeLong(device, Layout.OFFSET_NEXT, bad);
            try (DevdaxProvider provider = open("reset")) {
                assertThat(((DevdaxChunk) provider.allocate(UNIT)).offset()).as(Long.toString(bad)).isEqualTo(UNIT);
            }
        }
        Fixtures.writeLong(device, Layout.OFFSET_NEXT, 5 * UNIT + 4096);
        try (DevdaxProvider provider = open("reset")) {
            assertThat(((DevdaxChunk) provider.allocate(UNIT)).offset()).as("rounded up to the unit").isEqualTo(6 * UNIT);
        }
    }

    @Test
    void resetIsTheDefault() {
        open("reset").abandon();
        DevdaxProvider crashed = (DevdaxProvider) plugin.openMemoryProvider(Fixtures.device("pmem0", device));
        byte[] export = crashed.export(crashed.allocate(UNIT));
        crashed.abandon();
        try (MemoryProvider next = plugin.openMemoryProvider(Fixtures.device("pmem0", device))) {
            assertThatThrownBy(() -> importer.map(reader(export), UNIT)).hasMessageStartingWith("export gone: ");
        }
    }

    @Test
    void aGracefulCloseLeavesNothingToRecover() {
        DevdaxProvider first = open("recover");
        assertThat(first.generation()).as("a blank device is formatted under recover too").isEqualTo(1);
        byte[] export = first.export(first.allocate(UNIT));
        first.close();
        try (DevdaxProvider second = open("recover")) {
            assertThat(second.generation()).isEqualTo(2);
            assertThat(second.adoptedCount()).isZero();
            assertThatThrownBy(() -> importer.map(reader(export), UNIT)).hasMessageStartingWith("export gone: ");
        }
    }

    @Test
    void recoverRefusesADamagedLayoutWhichResetRewrites() {
        DevdaxProvider first = open("reset");
        long layoutId = first.layoutId();
        first.abandon();
        Fixtures.writeLong(device, Layout.OFFSET_SIZE, 3 * UNIT); // breaks the header's checksum

        assertThatThrownBy(() -> open("recover"))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot recover the allocations on device " + device)
                .hasMessageContaining("checksum")
                .hasMessageContaining("devdax.on.start (CONDUIT_DEVDAX_ON_START) = reset");
        try (DevdaxProvider reset = open("reset")) {
            assertThat(reset.generation()).isEqualTo(1);
            assertThat(reset.layoutId()).as("a damaged layout's id is not trusted").isNotEqualTo(layoutId);
        }
    }

    /**
     * The generation lies outside the checksum. One that cannot be moved on was trusted: at the
     * largest value (2^63-1) the next owner's start wrapped it to a negative one, and every export
     * it made was refused by every importer as a malformed handle ("payload.generation"); at the
     * largest valid one (2^63-2) the start stored 2^63-1, which every reader takes for damage, so
     * every export of that owner was refused ("inconsistent header ... generation
     * 9223372036854775807") for as long as it lived, while the owner itself allocated on. Both are
     * damage that recover refuses and reset rewrites.
     */
    @ParameterizedTest
    @CsvSource({"9223372036854775807, recover", "9223372036854775807, reset", "9223372036854775806, recover",
            "9223372036854775806, reset"})
    void aGenerationThatCannotBeMovedOnIsDamageThatRecoverRefusesAndResetRewrites(long generation, String onStart) {
        open("reset").abandon();
        Fixtures.writeLong(device, Layout.OFFSET_GENERATION, generation);

        if (onStart.equals("recover")) {
            assertThatThrownBy(() -> open("recover"))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot recover the allocations on device " + device)
                    .hasMessageContaining("generation " + generation)
                    .hasMessageContaining("devdax.on.start (CONDUIT_DEVDAX_ON_START) = reset");
        }
        try (DevdaxProvider reset = open("reset")) {
            assertThat(reset.generation()).isEqualTo(1);
            Chunk chunk = reset.allocate(UNIT);
            try (ChunkMapping mapping = importer.map(reader(reset.export(chunk)), UNIT)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(UNIT);
            }
        }
    }

    /**
     * An export made before its device got a new layout (its owner found it damaged or blank) was
     * refused as if the consumer's device table led the alias to another device: a consumer whose
     * table was right was sent to fix it, and not told that the allocation is gone.
     */
    @Test
    void anExportFromALayoutWrittenOverSinceSaysSoNotOnlyThatTheAliasMayLeadElsewhere() {
        DevdaxProvider first = open("reset");
        byte[] export = first.export(first.allocate(UNIT));
        first.abandon();
        Fixtures.writeLong(device, Layout.OFFSET_SIZE, 3 * UNIT); // breaks the header's checksum: reset writes a new layout

        try (DevdaxProvider reset = open("reset")) {
            reset.allocate(UNIT);
            assertThatThrownBy(() -> importer.map(reader(export), UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("is not the one the export was made on")
                    .hasMessageContaining("leads alias 'pmem0' to another device than the producer's")
                    .hasMessageContaining("or a new layout was written over the device since the export was made");
        }
    }

    @Test
    void recoverRefusesALayoutMadeForAnotherAlignmentWhichResetAdapts() {
        DevdaxProvider first = open("reset");
        long layoutId = first.layoutId();
        byte[] export = first.export(first.allocate(UNIT));
        first.abandon();

        assertThatThrownBy(() -> open("recover", "devdax.file.align", "4m"))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("made for " + 32 * MIB + " bytes in units of " + UNIT)
                .hasMessageContaining("now has " + 32 * MIB + " bytes in units of " + 2 * UNIT);
        try (DevdaxProvider adapted = open("reset", "devdax.file.align", "4m")) {
            assertThat(adapted.pageSize()).isEqualTo(2 * UNIT);
            assertThat(adapted.layoutId()).as("still the same device").isEqualTo(layoutId);
            assertThat(adapted.generation()).isEqualTo(2);
            assertThatThrownBy(() -> importer.map(reader(export), UNIT)).isInstanceOf(ConduitException.class);
        }
    }

    /**
     * An export made before its device's owner restarted with a layout for another alignment or a
     * smaller size is stale, not corrupt: its range, whole units of the old layout inside it, may
     * be misaligned for the new one or past its end. It is gone, as any export a reset forgot,
     * naming both generations and the new layout; until 2026-12-07 it was an
     * {@code InvalidHandleException} ("invalid handle: field 'payload.offset' ... not a multiple of
     * the alignment"), the refusal of a corrupt or hostile handle.
     */
    @Test
    void anExportFromBeforeAResetToAnotherAlignmentOrSizeIsGoneNotAnInvalidHandle() {
        DevdaxProvider first = open("reset");
        byte[] misaligned = first.export(first.allocate(UNIT)); // [2 MiB, 4 MiB): not whole units of 4 MiB
        first.abandon();
        try (DevdaxProvider adapted = open("reset", "devdax.file.align", "4m")) {
            assertThatThrownBy(() -> importer.map(reader(misaligned), UNIT))
                    .isInstanceOf(ConduitException.class)
                    .isNotInstanceOf(dev.conduit.spi.InvalidHandleException.class)
                    .hasMessageStartingWith("export gone: device " + device)
                    .hasMessageContaining("its range [" + UNIT + ", " + 2 * UNIT + ") does not fit the layout written since, "
                            + 32 * MIB + " bytes in units of " + 2 * UNIT)
                    .hasMessageContaining("the export is from generation 1, the device is at generation 2");
        }

        DevdaxProvider large = open("reset");
        long offset = -1;
        byte[] pastTheNewEnd = null;
        while (offset < 16 * MIB) {
            Chunk chunk = large.allocate(UNIT);
            offset = ((DevdaxChunk) chunk).offset();
            pastTheNewEnd = large.export(chunk);
        }
        large.abandon();
        Fixtures.resize(device, 16 * MIB);
        try (DevdaxProvider shrunk = open("reset")) {
            byte[] stale = pastTheNewEnd;
            assertThatThrownBy(() -> importer.map(reader(stale), UNIT))
                    .isInstanceOf(ConduitException.class)
                    .isNotInstanceOf(dev.conduit.spi.InvalidHandleException.class)
                    .hasMessageStartingWith("export gone")
                    .hasMessageContaining("does not fit the layout written since, " + 16 * MIB + " bytes in units of " + UNIT);
        }
    }

    /**
     * A reset that writes a new layout for a new alignment goes on where the old layout's search
     * stood, and keeps that on the device: an owner after it that allocated nothing (it crashed at
     * once) hands out the old owner's ranges only after the rest of the device, as after any start.
     */
    @Test
    void aNewLayoutForAnotherAlignmentKeepsWhereTheSearchStoodForTheNextOwner() {
        DevdaxProvider first = open("reset");
        first.allocate(UNIT);
        first.allocate(UNIT); // [UNIT, 3 UNIT): the search stands at 3 UNIT, 8 MiB once rounded up to the new 4 MiB unit
        first.abandon();
        open("reset", "devdax.file.align", "4m").abandon(); // writes the new layout, allocates nothing

        try (DevdaxProvider next = open("reset", "devdax.file.align", "4m")) {
            assertThat(((DevdaxChunk) next.allocate(2 * UNIT)).offset()).as("not the first owner's ranges from 4 MiB on")
                    .isEqualTo(4 * UNIT);
        }
    }

    /** A new layout for another alignment forgets the old table: a recover after it finds nothing of the old layout's to re-adopt. */
    @Test
    void aNewLayoutForAnotherAlignmentLeavesNothingOfTheOldTableToRecover() {
        DevdaxProvider first = open("reset");
        first.allocate(2 * UNIT); // [UNIT, 3 UNIT): its entry, read in units of 4 MiB, would be an allocation of [4 MiB, 8 MiB)
        first.abandon();
        open("reset", "devdax.file.align", "4m").abandon();

        try (DevdaxProvider recovered = open("recover", "devdax.file.align", "4m")) {
            assertThat(recovered.adoptedCount()).isZero();
        }
    }

    @Test
    void tableEntriesThatCannotBeAllocationsAreDroppedOnRecover() {
        DevdaxProvider first = open("reset");
        Layout.Geometry geometry = first.geometry();
        byte[] export = first.export(first.allocate(2 * UNIT));
        first.abandon();
        long inside = geometry.entryOffset(2 * UNIT); // an entry inside the first allocation: overlaps it
        Fixtures.writeLong(device, inside + 8, UNIT);
        Fixtures.writeLong(device, inside, 0x77L);
        long metadataEntry = geometry.entryOffset(0); // the metadata region is never allocated
        Fixtures.writeLong(device, metadataEntry + 8, UNIT);
        Fixtures.writeLong(device, metadataEntry, 0x78L);
        long partUnit = geometry.entryOffset(4 * UNIT); // a free unit, but a length that is not whole units
        Fixtures.writeLong(device, partUnit + 8, UNIT + 4096);
        Fixtures.writeLong(device, partUnit, 0x79L);

        try (DevdaxProvider recovered = open("recover")) {
            assertThat(recovered.adoptedCount()).isEqualTo(1);
            assertThat(Fixtures.readLong(device, inside)).isZero();
            assertThat(Fixtures.readLong(device, metadataEntry)).isZero();
            assertThat(Fixtures.readLong(device, partUnit)).isZero();
            try (ChunkMapping mapping = importer.map(reader(export), 2 * UNIT)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(2 * UNIT);
            }
        }
    }
}
