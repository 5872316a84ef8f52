package dev.conduit.plugin.posix;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.ThreadMode;
import dev.conduit.tck.HugePageReservation;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A chunk directory on a hugetlbfs mount (the test mounts one, as root, which CI is, and sizes the
 * kernel's pool itself): chunks of huge pages of the mount's size, every page taken at allocation,
 * a clean refusal naming the errno, the key and the remedy when the pool is short, and no transport
 * there, saying why.
 */
class PosixHugePagesTest {
    private static final long HUGE_PAGE = 2L << 20;

    private final PosixPlugin plugin = new PosixPlugin();

    @TempDir
    Path mount;

    @BeforeEach
    void mountHugetlbfs() throws IOException, InterruptedException {
        Mounts.mount("hugetlbfs", "defaults", mount);
    }

    @AfterEach
    void unmount() throws IOException, InterruptedException {
        Mounts.unmount(mount);
    }

    @Test
    void chunksOnAHugetlbfsMountAreHugePagesAndImportAsAnyChunk() {
        try (HugePageReservation pool = HugePageReservation.withFree(2);
             MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(mount))) {
            assertThat(provider.pageSize()).isEqualTo(HUGE_PAGE);
            if (pool.free() < 2) {
                assertThatThrownBy(() -> provider.allocate(2 * HUGE_PAGE)).hasMessageContaining("ENOSPC");
                return;
            }
            Chunk chunk = provider.allocate(2 * HUGE_PAGE);
            assertThat(pool.free()).as("every page taken at allocation").isZero();
            chunk.segment().set(JAVA_LONG, 2 * HUGE_PAGE - 8, 4711);
            assertThat(HugePageReservation.kernelPageSizeOf(chunk.segment())).isEqualTo("KernelPageSize: 2048 kB");
            byte[] export = provider.export(chunk);
            try (ChunkMapping imported = plugin.ipcImporter(TestContext.of(mount)).map(new PayloadReader(export), 2 * HUGE_PAGE)) {
                assertThat(imported.segment().get(JAVA_LONG, 2 * HUGE_PAGE - 8)).isEqualTo(4711);
                assertThat(HugePageReservation.kernelPageSizeOf(imported.segment())).isEqualTo("KernelPageSize: 2048 kB");
            }
            provider.free(chunk);
            assertThat(pool.free()).isEqualTo(2);
        }
        assertThat(ProcessResources.files(mount)).isEmpty();
    }

    @Test
    void withoutFreeHugePagesAnAllocationFailsNamingTheKeyAndTheRemedyAndLeavesNothing() {
        try (HugePageReservation pool = HugePageReservation.withFree(0);
             MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(mount))) {
            long descriptors = ProcessResources.openDescriptors();
            assertThatThrownBy(() -> provider.allocate(HUGE_PAGE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot take the huge pages of chunk file " + mount)
                    .hasMessageContaining("is a hugetlbfs mount): fallocate(")
                    .hasMessageContaining("ENOSPC")
                    .hasMessageContaining("the chunk needs 1 pages of 2048 kB")
                    .hasMessageContaining("sysctl vm.nr_hugepages=")
                    .hasMessageContaining("/proc/sys/vm/nr_hugepages")
                    .hasMessageContaining("to a tmpfs directory (such as /dev/shm) for normal pages");
            // Fewer is no leak: descriptors of earlier tests in this JVM may close meanwhile.
            assertThat(ProcessResources.openDescriptors()).isLessThanOrEqualTo(descriptors);
            assertThat(ProcessResources.chunkDescriptors(mount)).isZero();
            assertThat(ProcessResources.mappingsOf(mount)).isZero();
            assertThat(ProcessResources.files(mount)).as("only the lease").allMatch(name -> name.endsWith(".lease"));
        }
    }

    /**
     * A hugetlbfs mounted without {@code size=} reports no blocks, as ramfs does, but it is no file
     * system without a limit: the kernel's pool of huge pages bounds it, which may hold none. Until
     * 2026-12-07 {@code conduit info} said "free bytes: no size limit (hugetlbfs reports no blocks)"
     * there, beside the hugepages line that showed the pool empty.
     */
    @Test
    void theProbeSaysTheHugePagePoolBoundsAMountWithoutASizeNotThatItHasNoLimit() {
        Availability availability = plugin.probe(TestContext.of(mount));
        assertThat(availability.details().get("free bytes"))
                .isEqualTo("no size of its own (hugetlbfs mounted without size=): the kernel's pool of huge pages bounds it (the hugepages line)");
    }

    @Test
    void theProbeShowsTheHugePagesAndRulesTheTransportOutThere() {
        Availability availability = plugin.probe(TestContext.of(mount));
        assertThat(availability.isAvailable()).isTrue();
        assertThat(availability.details()).containsEntry("page size", Long.toString(HUGE_PAGE)).containsEntry("file system", "hugetlbfs");
        assertThat(availability.details().get("hugepages")).startsWith("2048 kB pages: ");
        assertThat(availability.unsupportedHere()).containsOnlyKeys(Capability.AM, Capability.RMA, Capability.ATOMICS, Capability.WAKEUP);
        assertThat(availability.unsupportedHere().get(Capability.AM)).contains("is a hugetlbfs mount").contains("transports=memfd");
        assertThatThrownBy(() -> plugin.openTransport(TestContext.of(mount).forTransport(ThreadMode.SINGLE, (id, h, ho, hl, p, po, pl) -> { })))
                .isInstanceOf(NotSupportedException.class)
                .hasMessageStartingWith("posix offers no transport here: the chunk directory " + mount + " is a hugetlbfs mount");
        assertThat(ProcessResources.files(mount)).isEmpty();
    }
}
