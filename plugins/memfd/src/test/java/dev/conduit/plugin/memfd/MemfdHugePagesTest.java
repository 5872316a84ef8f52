package dev.conduit.plugin.memfd;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.RecordingLogger;
import dev.conduit.tck.HugePageReservation;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code memfd.hugepages}: chunks of huge pages with {@code yes}, a clean refusal naming the errno,
 * the key and the remedy when the pool is short, normal pages said once with {@code try}. Each test
 * sizes the kernel's pool itself ({@link HugePageReservation}, as root, which CI is) and gives it
 * back; where the kernel grants fewer pages than asked, the test checks the refusal instead.
 */
class MemfdHugePagesTest {
    private static final long HUGE_PAGE = 2L << 20;

    private final MemfdPlugin plugin = new MemfdPlugin();

    @TempDir
    Path shared;

    @Test
    void withYesAChunkIsHugePagesAndThePageSizeFollowsThem() throws Exception {
        try (HugePageReservation pool = HugePageReservation.withFree(2);
             MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared, Map.of("memfd.hugepages", "yes")))) {
            assertThat(provider.pageSize()).isEqualTo(HUGE_PAGE);
            assertThatThrownBy(() -> provider.allocate(64 * 1024)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("page size " + HUGE_PAGE);
            if (pool.free() < 2) {
                assertRefusedCleanly(provider, 2 * HUGE_PAGE);
                return;
            }
            Chunk chunk = provider.allocate(2 * HUGE_PAGE);
            chunk.segment().set(JAVA_LONG, 2 * HUGE_PAGE - 8, 4711);
            assertThat(HugePageReservation.kernelPageSizeOf(chunk.segment())).isEqualTo("KernelPageSize: 2048 kB");
            assertThat(pool.free()).as("every page taken at allocation").isZero();
            provider.free(chunk);
            assertThat(pool.free()).isEqualTo(2);
        }
    }

    @Test
    void withYesAndNoFreeHugePagesAnAllocationFailsNamingTheKeyAndTheRemedyAndLeavesNothing() throws Exception {
        try (HugePageReservation pool = HugePageReservation.withFree(0);
             MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared, Map.of("memfd.hugepages", "yes")))) {
            assertThat(pool.free()).isZero();
            assertRefusedCleanly(provider, HUGE_PAGE);
        }
    }

    /** The refusal of a pool that is short: the errno, the key, the sysctl, no descriptor or mapping left. */
    private static void assertRefusedCleanly(MemoryProvider provider, long size) throws Exception {
        long fds = Leaks.openFdsWhenQuiet();
        long descriptors = Leaks.memfdDescriptors();
        long mappings = Leaks.memfdMappings();
        assertThatThrownBy(() -> provider.allocate(size)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot allocate a memfd chunk of " + size + " bytes in huge pages (memfd.hugepages=yes)")
                .hasMessageContaining("ENOSPC")
                .hasMessageContaining("the chunk needs " + size / HUGE_PAGE + " pages of 2048 kB")
                .hasMessageContaining("sysctl vm.nr_hugepages=")
                .hasMessageContaining("/proc/sys/vm/nr_hugepages")
                .hasMessageContaining("hugetlb.2MB.max")
                .hasMessageContaining("memfd.hugepages=try");
        // Fewer is no leak: an fd server of an earlier test in this JVM may close a connection meanwhile.
        assertThat(Leaks.openFds()).isLessThanOrEqualTo(fds);
        assertThat(Leaks.memfdDescriptors()).isEqualTo(descriptors);
        assertThat(Leaks.memfdMappings()).isEqualTo(mappings);
    }

    /**
     * A chunk whose huge pages were taken but whose mapping finds no address space ({@code mmap}:
     * {@code ENOMEM}, as at {@code vm.max_map_count} or {@code ulimit -v}) is refused naming those,
     * as a chunk of normal pages is. Until 2026-12-07 every ENOMEM was taken for a shortage of huge
     * pages: the chunk was said to be refused by the cgroup's hugetlb limit, with a sysctl that
     * reserves pages the pool already had.
     */
    @Test
    void withYesAChunkWhoseMappingFindsNoAddressSpaceIsNotSaidToLackHugePages() throws Exception {
        dev.conduit.linux.Libc noAddressSpace = FailingLibc.failing("mmap", dev.conduit.linux.Errno.ENOMEM);
        try (HugePageReservation pool = HugePageReservation.withFree(1);
             MemoryProvider provider = MemfdProvider.open(noAddressSpace, TestContext.of(shared, Map.of("memfd.hugepages", "yes")))) {
            if (pool.free() < 1) {
                assertRefusedCleanly(provider, HUGE_PAGE);
                return;
            }
            assertThatThrownBy(() -> provider.allocate(HUGE_PAGE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("ENOMEM")
                    .hasMessageContaining("vm.max_map_count")
                    .hasMessageNotContaining("hugetlb limit of this process's cgroup refused them")
                    .hasMessageNotContaining("reserve more huge pages");
            assertThat(pool.free()).as("the chunk's page given back").isEqualTo(1);
        }
    }

    @Test
    void withTryAndNoFreeHugePagesChunksTakeNormalPagesSaidOnce() {
        RecordingLogger logged = new RecordingLogger();
        try (HugePageReservation pool = HugePageReservation.withFree(0);
             MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared, Map.of("memfd.hugepages", "try"))
                     .withLogger(logged))) {
            assertThat(provider.pageSize()).as("a pool's chunks stay multiples of the huge page size").isEqualTo(HUGE_PAGE);
            Chunk first = provider.allocate(HUGE_PAGE);
            Chunk second = provider.allocate(HUGE_PAGE);
            first.segment().set(JAVA_LONG, 0, 1);
            second.segment().set(JAVA_LONG, 0, 2);
            assertThat(HugePageReservation.kernelPageSizeOf(first.segment())).isEqualTo("KernelPageSize: 4 kB");
            assertThat(logged.at(System.Logger.Level.INFO)).singleElement().asString()
                    .startsWith("memfd.hugepages=try: a chunk of " + HUGE_PAGE + " bytes takes normal pages")
                    .contains("ENOSPC").contains("vm.nr_hugepages");
            assertThat(logged.warnings()).isEmpty();
        }
    }

    /**
     * With {@code try}, a chunk that gets no descriptor ({@code memfd_create}: {@code EMFILE}) is
     * refused naming the limit, and the INFO said once per pool, that chunks take normal pages where
     * huge pages run short, is neither said for it (it took no pages at all, and huge pages did not
     * run short) nor spent on it. Until 2026-12-07 any errno fell back to normal pages: the INFO
     * was logged, the normal memfd_create failed the same way, and a real shortage later went unsaid.
     */
    @Test
    void withTryAChunkRefusedForWantOfDescriptorsIsNotSaidToTakeNormalPages() {
        RecordingLogger logged = new RecordingLogger();
        dev.conduit.linux.Libc outOfDescriptors = FailingLibc.failing("memfdCreate", dev.conduit.linux.Errno.EMFILE);
        try (MemoryProvider provider = MemfdProvider.open(outOfDescriptors,
                TestContext.of(shared, Map.of("memfd.hugepages", "try")).withLogger(logged))) {
            assertThatThrownBy(() -> provider.allocate(HUGE_PAGE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("EMFILE").hasMessageContaining("ulimit -n");
            assertThat(logged.at(System.Logger.Level.INFO)).as("what the refused chunk had said")
                    .noneMatch(line -> line.contains("takes normal pages"));
        }
    }

    @Test
    void withTryAndFreeHugePagesAChunkIsHugePages() {
        try (HugePageReservation pool = HugePageReservation.withFree(1);
             MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared, Map.of("memfd.hugepages", "try")))) {
            Chunk chunk = provider.allocate(HUGE_PAGE);
            chunk.segment().set(JAVA_LONG, 0, 1);
            assertThat(HugePageReservation.kernelPageSizeOf(chunk.segment()))
                    .isEqualTo(pool.free() == 0 ? "KernelPageSize: 2048 kB" : "KernelPageSize: 4 kB");
        }
    }

    /**
     * A hole punched into a chunk of huge pages by any holder of its memfd (every importer holds
     * it read-write) gives the page back to the pool; once the pool is empty, an access there
     * faults with {@code SIGBUS}. So the importer says such a mapping may fault, and Conduit's RMA
     * on it reads before a compare-and-swap and takes the fault where the operation can report it.
     * Until 2026-12-07 every memfd import said it could not fault.
     */
    @Test
    void anImportedChunkOfHugePagesMayFaultAndOneOfNormalPagesCannot() throws Exception {
        try (HugePageReservation pool = HugePageReservation.withFree(1);
             MemoryProvider hugePages = plugin.openMemoryProvider(TestContext.of(shared, Map.of("memfd.hugepages", "yes")));
             MemoryProvider normalPages = plugin.openMemoryProvider(TestContext.of(shared))) {
            if (pool.free() < 1) {
                assertRefusedCleanly(hugePages, HUGE_PAGE);
                return;
            }
            IpcImporter importer = new MemfdPlugin().ipcImporter(TestContext.of(shared));
            Chunk huge = hugePages.allocate(HUGE_PAGE);
            Chunk normal = normalPages.allocate(HUGE_PAGE);
            try (ChunkMapping importedHuge = map(importer, hugePages.export(huge), HUGE_PAGE);
                 ChunkMapping importedNormal = map(importer, normalPages.export(normal), HUGE_PAGE)) {
                assertThat(importedHuge.mayFault()).as("huge pages: a punched hole may fault").isTrue();
                assertThat(importedNormal.mayFault()).as("normal pages: a punched hole reads zeros").isFalse();
            }
            hugePages.free(huge);
            normalPages.free(normal);
        }
    }

    private static ChunkMapping map(IpcImporter importer, byte[] payload, long chunkLength) {
        return importer.map(new PayloadReader(payload, 0, payload.length, "payload."), chunkLength);
    }

    /** EINVAL says which kernel feature is missing: a hugetlb memfd (Linux 4.14) or its seals (4.16); nothing is left open. */
    @Test
    void aKernelThatCannotMakeOrSealAHugetlbMemfdIsNamed() throws Exception {
        for (String[] failure : new String[][] {{"memfdCreate", "memfd_create", "MFD_HUGETLB needs Linux 4.14 or later"},
                {"addSeals", "fcntl", "this kernel cannot seal a hugetlb memfd (Linux 4.16 or later can)"}}) {
            dev.conduit.linux.Libc refusing = FailingLibc.throwing((name, args) -> name.equals(failure[0])
                    ? new dev.conduit.linux.ErrnoException(failure[1], dev.conduit.linux.Errno.EINVAL, "fake", "injected by the test") : null);
            try (MemoryProvider provider = MemfdProvider.open(refusing, TestContext.of(shared, Map.of("memfd.hugepages", "yes")))) {
                long fds = Leaks.openFdsWhenQuiet();
                assertThatThrownBy(() -> provider.allocate(HUGE_PAGE)).isInstanceOf(ConduitException.class)
                        .hasMessageContaining("(memfd.hugepages=yes): " + failure[1] + "(injected by the test): EINVAL")
                        .hasMessageContaining(failure[2]).hasMessageContaining("set memfd.hugepages=no");
                assertThat(Leaks.openFds()).isLessThanOrEqualTo(fds); // fewer is no leak, as above
            }
        }
    }

    @Test
    void withNoTheDefaultChunksAreNormalPages() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            assertThat(provider.pageSize()).isEqualTo(MemfdProvider.PAGE_SIZE);
            Chunk chunk = provider.allocate(64 * 1024);
            chunk.segment().set(JAVA_LONG, 0, 1);
            assertThat(HugePageReservation.kernelPageSizeOf(chunk.segment())).isEqualTo("KernelPageSize: 4 kB");
        }
    }

    @Test
    void aModeThatIsNotNoTryOrYesFailsNamingTheKeyAndTheForms() {
        for (String bad : new String[] {"maybe", "1", "", "huge"}) {
            assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of(shared, Map.of("memfd.hugepages", bad))))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("memfd.hugepages")
                    .hasMessageContaining("[no, try, yes]");
        }
        assertThat(Leaks.files(shared)).isEmpty();
    }

    /**
     * The transport's queues and rings keep normal pages whatever the key says: a worker's transport
     * opens, making its receive queue of a header past a power of two, with no huge page free.
     */
    @Test
    void theTransportIgnoresTheKey() {
        try (HugePageReservation pool = HugePageReservation.withFree(0);
             dev.conduit.spi.Transport transport = plugin.openTransport(TestContext.of(shared, Map.of("memfd.hugepages", "yes"))
                     .forTransport(dev.conduit.spi.ThreadMode.SINGLE, (id, h, ho, hl, p, po, pl) -> { }))) {
            assertThat(transport.address()).isNotEmpty();
        }
        assertThat(Leaks.files(shared)).isEmpty();
    }

    /**
     * On a kernel without huge pages (a meminfo naming no {@code Hugepagesize}, as one built without
     * {@code CONFIG_HUGETLBFS} has) a pool with {@code yes} cannot open, and the probe says so: it
     * rules memory out with the refusal of the pool's opening, the key and the remedy; {@code try}
     * falls back to normal pages and rules nothing out. The probe offered memory for {@code yes}
     * that the pool then refused.
     */
    @Test
    void withYesOnAKernelWithoutHugePagesTheProbeRulesMemoryOutNamingTheKeyAndTheRemedy(@TempDir Path proc) throws Exception {
        Path meminfo = java.nio.file.Files.writeString(proc.resolve("meminfo"),
                "MemTotal:        8000000 kB\nMemFree:         4000000 kB\nMemAvailable:    6000000 kB\n");
        dev.conduit.spi.Availability withYes = MemfdPlugin.probe(TestContext.of(shared, Map.of("memfd.hugepages", "yes")),
                dev.conduit.linux.Linux.libc(), dev.conduit.linux.Linux.availability(), meminfo);
        assertThat(withYes.isAvailable()).as("imports and the transport need no huge page").isTrue();
        assertThat(withYes.unsupportedHere()).containsOnlyKeys(dev.conduit.spi.Capability.MEMORY)
                .containsEntry(dev.conduit.spi.Capability.MEMORY, "memfd.hugepages=yes, but this kernel has no huge pages: none: the "
                        + "kernel names no Hugepagesize in /proc/meminfo (built without CONFIG_HUGETLBFS); set memfd.hugepages=try to "
                        + "fall back to normal pages, or no");
        assertThat(withYes.details().get("hugepages")).startsWith("memfd.hugepages=yes; none: ");

        dev.conduit.spi.Availability withTry = MemfdPlugin.probe(TestContext.of(shared, Map.of("memfd.hugepages", "try")),
                dev.conduit.linux.Linux.libc(), dev.conduit.linux.Linux.availability(), meminfo);
        assertThat(withTry.unsupportedHere()).isEmpty();
        assertThat(Leaks.files(shared)).isEmpty();
    }

    @Test
    void theProbeSaysTheModeAndTheFreeHugePages() {
        var details = plugin.probe(TestContext.of(shared, Map.of("memfd.hugepages", "try"))).details();
        assertThat(details.get("hugepages")).startsWith("memfd.hugepages=try; 2048 kB pages: ")
                .contains("HugePages_Free, HugePages_Total in /proc/meminfo");
    }
}
