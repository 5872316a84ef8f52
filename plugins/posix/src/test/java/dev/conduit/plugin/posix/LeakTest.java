package dev.conduit.plugin.posix;

import dev.conduit.linux.Errno;
import dev.conduit.linux.Libc;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every path, successful or failing, leaves no descriptor, mapping or file behind. */
class LeakTest {

    private static final int ROUNDS = 50;

    @TempDir(factory = ShmTempDirFactory.class)
    Path shared;

    private final PosixPlugin plugin = new PosixPlugin();

    @Test
    void allocateExportImportFreeAndCloseLeaveNothing() {
        roundTrip(); // warm up class loading and lazily opened JDK descriptors
        long descriptors = ProcessResources.openDescriptors();

        for (int i = 0; i < 5; i++) roundTrip();

        assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
        assertThat(ProcessResources.chunkDescriptors(shared)).isZero();
        assertThat(ProcessResources.mappingsOf(shared)).isZero();
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    @SuppressWarnings("try") // the mapping only has to exist
    private void roundTrip() {
        IpcImporter importer = plugin.ipcImporter(TestContext.of(shared));
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            for (int i = 0; i < ROUNDS; i++) {
                Chunk chunk = provider.allocate(provider.pageSize());
                byte[] payload = provider.export(chunk);
                try (ChunkMapping mapping = importer.map(reader(payload), provider.pageSize())) {
                    assertThat(ProcessResources.mappingsOf(shared)).as("the chunk twice, and the kept ones").isEqualTo(2 + i / 2);
                    assertThat(ProcessResources.chunkDescriptors(shared)).as("descriptors are closed after mmap").isZero();
                }
                if (i % 2 == 0) provider.free(chunk);
            }
            assertThat(ProcessResources.mappingsOf(shared)).isEqualTo(ROUNDS / 2);
        }
    }

    @Test
    void failedImportsLeaveNothing() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            IpcImporter importer = plugin.ipcImporter(TestContext.of(shared));
            long page = provider.pageSize();
            Chunk freed = provider.allocate(page);
            byte[] gone = provider.export(freed);
            provider.free(freed);
            byte[] live = provider.export(provider.allocate(page));
            assertThatThrownBy(() -> importer.map(reader(gone), page)).hasMessageContaining("export gone");
            long descriptors = ProcessResources.openDescriptors();

            for (int i = 0; i < ROUNDS; i++) {
                assertThatThrownBy(() -> importer.map(reader(gone), page)).hasMessageContaining("export gone");
                assertThatThrownBy(() -> importer.map(reader(live), 2 * page)).hasMessageContaining("SIGBUS");
            }

            assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
            assertThat(ProcessResources.mappingsOf(shared)).isEqualTo(1);
        }
    }

    @Test
    void failedAllocationsLeaveNothing() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            long tooLarge = Long.MAX_VALUE & -provider.pageSize();
            assertThatThrownBy(() -> provider.allocate(tooLarge)).hasMessageContaining("not enough space");
            long descriptors = ProcessResources.openDescriptors();
            for (int i = 0; i < ROUNDS; i++) {
                assertThatThrownBy(() -> provider.allocate(tooLarge)).hasMessageContaining("not enough space");
            }
            assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
            assertThat(ProcessResources.files(shared)).filteredOn(n -> n.endsWith(".chunk")).isEmpty();
        }
    }

    /**
     * A provider that fails to open gives back what it had taken: its directory's descriptor when it
     * cannot create its lease, and the lease too (file and lock) when it fails after taking it (here
     * reading its directory's identity fails).
     */
    @Test
    void providersFailingToOpenLeaveNothing() {
        for (String call : new String[] {"openBeneath", "birthTimeNanos"}) {
            Libc libc = FailingLibc.failing(call, Errno.EIO);
            assertThatThrownBy(() -> PosixMemoryProvider.open(TestContext.of(shared), libc)).as(call).hasMessageContaining("EIO");
            long descriptors = ProcessResources.openDescriptors();
            for (int i = 0; i < ROUNDS; i++) {
                assertThatThrownBy(() -> PosixMemoryProvider.open(TestContext.of(shared), libc)).as(call).hasMessageContaining("EIO");
            }
            assertThat(ProcessResources.openDescriptors()).as(call).isEqualTo(descriptors);
            assertThat(ProcessResources.files(shared)).as(call).isEmpty();
        }
    }

    @Test
    void allocationsFailingAfterTheFileIsCreatedRemoveItAndCloseEverything() {
        for (String call : new String[] {"ftruncate", "mmap"}) {
            Libc libc = FailingLibc.failing(call, call.equals("mmap") ? Errno.ENOMEM : Errno.ENOSPC);
            try (MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared), libc)) {
                assertThatThrownBy(() -> provider.allocate(provider.pageSize())).as(call).isInstanceOf(ConduitException.class);
                long descriptors = ProcessResources.openDescriptors();
                for (int i = 0; i < ROUNDS; i++) {
                    assertThatThrownBy(() -> provider.allocate(provider.pageSize()))
                            .as(call)
                            .hasMessageContaining(call + "(")
                            .hasMessageContaining(shared.toString())
                            .hasMessageContaining(call.equals("mmap") ? "vm.max_map_count" : "pool.chunk.size");
                }
                assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
                assertThat(ProcessResources.mappingsOf(shared)).isZero();
                assertThat(ProcessResources.files(shared)).filteredOn(n -> n.endsWith(".chunk")).isEmpty();
            }
        }
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    @Test
    void importsFailingToMapCloseTheirDescriptor() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            long page = provider.pageSize();
            byte[] payload = provider.export(provider.allocate(page));
            IpcImporter importer = new PosixImporter(FailingLibc.failing("mmap", Errno.ENOMEM), PosixConfig.of(TestContext.of(shared)), true);
            assertThatThrownBy(() -> importer.map(reader(payload), page)).hasMessageContaining("ENOMEM");
            long descriptors = ProcessResources.openDescriptors();
            for (int i = 0; i < ROUNDS; i++) {
                assertThatThrownBy(() -> importer.map(reader(payload), page))
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("cannot map " + shared)
                        .hasMessageContaining("mmap(")
                        .hasMessageContaining("ENOMEM")
                        .hasMessageContaining("in an importer, a lower ipc.cache.entries or ipc.cache.bytes");
            }
            assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
            assertThat(ProcessResources.mappingsOf(shared)).isEqualTo(1);
        }
    }

    private static PayloadReader reader(byte[] payload) {
        return new PayloadReader(payload, 0, payload.length, "payload.");
    }
}
