package dev.conduit.plugin.devdax;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static dev.conduit.plugin.devdax.Fixtures.UNIT;
import static dev.conduit.plugin.devdax.Fixtures.reader;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every path, successful or failing, leaves no descriptor or mapping behind. */
class LeakTest {

    private static final int ROUNDS = 40;

    @TempDir(factory = ShmTempDirFactory.class)
    Path dir;

    private final DevdaxPlugin plugin = new DevdaxPlugin();
    private Path device;

    @BeforeEach
    void createDevice() {
        device = Fixtures.deviceFile(dir, "dax.img", 64 * MIB);
    }

    private MemoryProvider provider(String... keyValues) {
        return plugin.openMemoryProvider(Fixtures.device("pmem0", device, keyValues));
    }

    @Test
    void allocateExportImportFreeAndCloseLeaveNothing() {
        roundTrip(); // warm up class loading and lazily opened JDK descriptors
        long descriptors = Fixtures.openDescriptors();

        for (int i = 0; i < 3; i++) roundTrip();

        assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
        assertThat(Fixtures.descriptorsOn(device)).isZero();
        assertThat(Fixtures.mappingsOf(device)).isZero();
    }

    @SuppressWarnings("try") // the mapping only has to exist
    private void roundTrip() {
        IpcImporter importer = plugin.ipcImporter(Fixtures.device("pmem0", device));
        try (MemoryProvider provider = provider()) {
            assertThat(Fixtures.descriptorsOn(device)).as("the provider's one descriptor, which holds the lock").isEqualTo(1);
            for (int i = 0; i < ROUNDS; i++) {
                Chunk chunk = provider.allocate(UNIT);
                try (ChunkMapping mapping = importer.map(reader(provider.export(chunk)), UNIT)) {
                    assertThat(Fixtures.mappingsOf(device)).as("metadata, the chunk twice, and the kept ones").isEqualTo(3 + i / 2);
                    assertThat(Fixtures.descriptorsOn(device)).as("the importer closed its descriptor").isEqualTo(1);
                }
                if (i % 2 == 0) provider.free(chunk);
            }
            assertThat(Fixtures.mappingsOf(device)).isEqualTo(1 + ROUNDS / 2);
        }
    }

    @Test
    void failedImportsLeaveNothing() {
        Path other = Fixtures.deviceFile(dir, "other.img", 16 * MIB);
        try (MemoryProvider provider = provider(); MemoryProvider otherProvider = plugin.openMemoryProvider(Fixtures.device("pmem0", other))) {
            Chunk freed = provider.allocate(UNIT);
            byte[] gone = provider.export(freed);
            provider.free(freed);
            byte[] live = provider.export(provider.allocate(UNIT));
            DevdaxPayload decoded = DevdaxPayload.decode(reader(live));
            byte[] misaligned = new DevdaxPayload("pmem0", decoded.layoutId(), decoded.offset() + 4096, UNIT, 3, 1, 1).encode();
            IpcImporter importer = plugin.ipcImporter(Fixtures.device("pmem0", device));
            IpcImporter wrongDevice = plugin.ipcImporter(Fixtures.device("pmem0", other));
            IpcImporter unknownAlias = plugin.ipcImporter(Fixtures.device("other", device));
            IpcImporter missingPath = plugin.ipcImporter(Fixtures.device("pmem0", dir.resolve("missing.img")));
            assertThatThrownBy(() -> importer.map(reader(gone), UNIT)).hasMessageContaining("export gone");
            long descriptors = Fixtures.openDescriptors();
            long mappings = Fixtures.mappingsOf(device);

            for (int i = 0; i < ROUNDS; i++) {
                assertThatThrownBy(() -> importer.map(reader(gone), UNIT)).hasMessageContaining("export gone");
                assertThatThrownBy(() -> importer.map(reader(misaligned), UNIT)).hasMessageContaining("payload.offset");
                assertThatThrownBy(() -> wrongDevice.map(reader(live), UNIT)).hasMessageContaining("another device");
                assertThatThrownBy(() -> unknownAlias.map(reader(live), UNIT)).hasMessageContaining("payload.alias");
                assertThatThrownBy(() -> missingPath.map(reader(live), UNIT)).hasMessageContaining("ENOENT");
            }

            assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
            assertThat(Fixtures.mappingsOf(device)).isEqualTo(mappings);
            assertThat(Fixtures.mappingsOf(other)).as("the other provider's metadata").isEqualTo(1);
        }
    }

    @Test
    void failedOpensLeaveNothing() {
        try (MemoryProvider owner = provider()) {
            assertThatThrownBy(this::provider).hasMessageContaining("in use");
            long descriptors = Fixtures.openDescriptors();
            for (int i = 0; i < ROUNDS; i++) {
                assertThatThrownBy(this::provider).hasMessageContaining("in use");
            }
            assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
            assertThat(Fixtures.descriptorsOn(device)).isEqualTo(1);
            assertThat(Fixtures.mappingsOf(device)).isEqualTo(1);
        }
        Fixtures.writeLong(device, Layout.OFFSET_SIZE, 1); // a damaged header, which recover refuses after mapping it
        assertThatThrownBy(() -> provider("devdax.on.start", "recover")).hasMessageContaining("checksum");
        long descriptors = Fixtures.openDescriptors();
        for (int i = 0; i < ROUNDS; i++) {
            assertThatThrownBy(() -> provider("devdax.on.start", "recover")).hasMessageContaining("checksum");
        }
        assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
        assertThat(Fixtures.descriptorsOn(device)).isZero();
        assertThat(Fixtures.mappingsOf(device)).isZero();
    }

    @Test
    void abandoningTheDeviceReleasesThisProcessHoldOnIt() {
        DevdaxProvider provider = (DevdaxProvider) provider();
        provider.allocate(UNIT);
        provider.allocate(2 * UNIT);
        assertThat(Fixtures.mappingsOf(device)).isEqualTo(3);
        provider.abandon();
        assertThat(Fixtures.descriptorsOn(device)).isZero();
        assertThat(Fixtures.mappingsOf(device)).isZero();
    }
}
