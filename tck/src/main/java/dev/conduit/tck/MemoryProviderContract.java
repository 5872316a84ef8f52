package dev.conduit.tck;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PluginContext;
import dev.conduit.tck.internal.ExportingChild;
import dev.conduit.tck.internal.Patterns;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract of a memory provider ({@link Capability#MEMORY}) and, when the plugin declares
 * {@link Capability#IPC}, of its exports and its importer: allocate, free, close, export, import
 * here and in a second process, bad and stale handles; then the same plugin under the runtime's
 * pool and IPC cache.
 *
 * <pre>{@code
 * class MyProviderTest extends MemoryProviderContract {
 *     protected ConduitPlugin newPlugin() { return new MyPlugin(); }
 * }
 * }</pre>
 *
 * The IPC tests are part of the contract only for a plugin that declares {@code IPC}: for any other
 * they end as "aborted" with the assumption's message naming the undeclared capability.
 */
public abstract class MemoryProviderContract extends PluginContract {

    private ConduitPlugin plugin;
    private MemoryProvider provider;

    @BeforeEach
    final void openProvider() {
        plugin = newPlugin();
        assertThat(plugin.capabilities()).as("capabilities of '%s': the memory-provider suite is for plugins that declare MEMORY", plugin.name())
                .contains(Capability.MEMORY);
        requireOfferedHere(plugin, Capability.MEMORY);
        provider = closeAfterTest(plugin.openMemoryProvider(pluginContext()));
    }

    /** The size of the chunks the suite allocates; a small multiple of the page size by default. */
    protected long chunkSize(MemoryProvider provider) {
        return 2 * provider.pageSize();
    }

    private void assumeIpc() {
        assumeTrue(plugin.capabilities().contains(Capability.IPC),
                "plugin '" + plugin.name() + "' does not declare capability IPC: exports and imports are not part of its contract");
        requireOfferedHere(plugin, Capability.IPC);
    }

    private IpcImporter importer() {
        try {
            return plugin.ipcImporter(pluginContext());
        } catch (NotSupportedException e) {
            throw declaredButMissing("ipcImporter()", e);
        }
    }

    private byte[] export(MemoryProvider provider, Chunk chunk) {
        try {
            return provider.export(chunk);
        } catch (NotSupportedException e) {
            throw declaredButMissing("its memory provider's export()", e);
        }
    }

    private byte[] exportHandle(Region region) {
        try {
            return region.exportHandle();
        } catch (NotSupportedException e) {
            throw declaredButMissing("a pool region's exportHandle(), through its provider's export(),", e);
        }
    }

    /** An operation of IPC that the plugin declares and its probe offers here, but that says it is not supported. */
    private AssertionError declaredButMissing(String operation, NotSupportedException e) {
        return new AssertionError("plugin '" + plugin.name() + "' declares capability IPC and its probe offers it here, but "
                + operation + " threw NotSupportedException (" + e.getMessage() + "): implement MemoryProvider.export and "
                + "ConduitPlugin.ipcImporter, or do not declare IPC", e);
    }

    private static PayloadReader reader(byte[] payload) {
        return new PayloadReader(payload, 0, payload.length, "payload.");
    }

    @Test
    public void allocatesZeroedWritablePageAlignedChunks() {
        long page = provider.pageSize();
        assertThat(page).as("pageSize()").isPositive();
        assertThat(Long.bitCount(page)).as("pageSize() %d is a power of two", page).isEqualTo(1);
        long size = chunkSize(provider);
        List<Chunk> chunks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Chunk chunk = provider.allocate(size);
            chunks.add(chunk);
            MemorySegment s = chunk.segment();
            assertThat(s.byteSize()).as("length of the chunk allocate(%d) of plugin '%s' returned (exactly the size asked for: the runtime's "
                    + "pools refuse another)", size, plugin.name()).isEqualTo(size);
            assertThat(s.address() % page).as("chunk address modulo the page size").isZero();
            assertThat(Patterns.mismatch(s, Long.MIN_VALUE)).isNotNegative(); // not already our pattern
            for (long o = 0; o < size; o += 8) {
                assertThat(s.get(ValueLayout.JAVA_LONG, o)).as("byte %d of a fresh chunk", o).isZero();
            }
            Patterns.fill(s, i);
        }
        for (int i = 0; i < chunks.size(); i++) {
            assertThat(Patterns.mismatch(chunks.get(i).segment(), i)).as("chunk %d kept what was written to it (chunks do not overlap)", i).isEqualTo(-1);
        }
        chunks.forEach(provider::free);
    }

    /**
     * "Zeroed" holds for memory that was used before too: a provider that keeps freed chunks (or
     * ranges of a device) for later allocations must clear them. Each round takes several chunks of
     * the size just freed, checks every byte, dirties them and frees them again.
     */
    @Test
    public void chunksMadeOfFreedMemoryAreZeroedToo() {
        long size = chunkSize(provider);
        Chunk first = provider.allocate(size);
        first.segment().fill((byte) 0x5A);
        provider.free(first);
        for (int round = 0; round < 3; round++) {
            List<Chunk> chunks = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Chunk chunk = provider.allocate(size);
                chunks.add(chunk);
                MemorySegment s = chunk.segment();
                for (long o = 0; o < size; o += 8) {
                    long word = s.get(ValueLayout.JAVA_LONG_UNALIGNED, o);
                    if (word != 0) {
                        throw new AssertionError("byte " + (o + Long.numberOfTrailingZeros(word) / 8) + " of chunk " + i + " allocated in round "
                                + round + " after chunks of the same size were filled and freed is not zero (word " + Long.toHexString(word)
                                + "): allocate() must hand out zeroed memory also when it reuses what free() gave back");
                    }
                }
            }
            for (Chunk chunk : chunks) {
                chunk.segment().fill((byte) (0xA0 + round));
                provider.free(chunk);
            }
        }
    }

    @Test
    public void refusesSizesThatAreNotPositiveMultiplesOfThePageSize() {
        long page = provider.pageSize();
        for (long bad : new long[]{0, -page, page + 1, page / 2}) {
            if (bad == 0 && page == 1) continue;
            Throwable refusal = refusalToAllocate(bad);
            assertThat(refusal).as("allocate(%d) with page size %d", bad, page)
                    .isInstanceOfAny(IllegalArgumentException.class, ConduitException.class);
            // The size as a number of its own: "0" is in "4096", and "must be positive" does not say which size was asked for.
            assertThat(namesNumber(refusal.getMessage(), bad))
                    .as("the refusal of allocate(%d) names that size as a number of its own; its message: %s", bad, refusal.getMessage()).isTrue();
        }
    }

    /**
     * What {@code allocate(size)} throws for a size it must refuse. One that allocates instead fails here, naming the chunk
     * it made, which is freed: an assertion on a refusal that never came only said "Expecting actual not to be null".
     */
    private Throwable refusalToAllocate(long size) {
        Chunk chunk;
        try {
            chunk = provider.allocate(size);
        } catch (Throwable refusal) {
            return refusal;
        }
        AssertionError failure = new AssertionError("allocate(" + size + ") of plugin '" + plugin.name() + "' (page size "
                + provider.pageSize() + ") returned " + (chunk == null ? "null" : "a chunk of " + chunk.segment().byteSize() + " bytes")
                + " instead of refusing the size: MemoryProvider.allocate takes a positive multiple of pageSize() and refuses any "
                + "other size with an IllegalArgumentException or a ConduitException naming it");
        if (chunk != null) {
            try {
                provider.free(chunk);
            } catch (RuntimeException | Error e) {
                failure.addSuppressed(e);
            }
        }
        throw failure;
    }

    /** Whether {@code message} holds {@code n} as a whole number: not part of another number, a decimal or a word. */
    static boolean namesNumber(String message, long n) {
        return message != null && Pattern.compile("(?<![\\w.-])" + Pattern.quote(Long.toString(n)) + "(?![\\w]|\\.\\d)").matcher(message).find();
    }

    @Test
    public void freeUnmapsTheChunk() {
        Chunk chunk = provider.allocate(chunkSize(provider));
        MemorySegment s = chunk.segment();
        provider.free(chunk);
        Throwable late = catchThrowable(() -> s.get(ValueLayout.JAVA_BYTE, 0));
        if (late == null) {
            throw new AssertionError("reading a freed chunk of plugin '" + plugin.name() + "' succeeded: MemoryProvider.free unmaps "
                    + "the chunk (closes the arena of its segment), so that a late access throws IllegalStateException instead of "
                    + "reading memory the provider may hand out again");
        }
        assertThat(late).as("reading a freed chunk").isInstanceOf(IllegalStateException.class);
    }

    @Test
    public void closeFreesEveryChunkAndIsIdempotent() {
        List<MemorySegment> segments = new ArrayList<>();
        for (int i = 0; i < 3; i++) segments.add(provider.allocate(chunkSize(provider)).segment());
        provider.close();
        for (MemorySegment s : segments) {
            assertThat(s.scope().isAlive()).as("a chunk still mapped after the provider was closed (a leak)").isFalse();
        }
        provider.close();
    }

    @Test
    public void anExportMapsInThisProcessAsTheSameMemory() {
        assumeIpc();
        long size = chunkSize(provider);
        Chunk chunk = provider.allocate(size);
        byte[] payload = export(provider, chunk);
        assertThat(payload.length).as("export payload length").isBetween(1, MemoryProvider.MAX_EXPORT_LENGTH);
        Patterns.fill(chunk.segment(), 5);
        MemorySegment mapped;
        try (ChunkMapping mapping = importer().map(reader(payload), size)) {
            mapped = mapping.segment();
            assertThat(mapped.byteSize()).as("mapping length").isEqualTo(size);
            assertThat(Patterns.mismatch(mapped, 5)).as("first byte the importer's mapping differs from the chunk").isEqualTo(-1);
            Patterns.fill(mapped, 6);
            assertThat(Patterns.mismatch(chunk.segment(), 6)).as("a write through the mapping is seen in the chunk").isEqualTo(-1);
        }
        assertThat(mapped.scope().isAlive()).as("whether the segment of an importer's mapping of plugin '%s' is still mapped after "
                + "ChunkMapping.close(), which unmaps it (closes the arena of its segment): the IPC cache closes a mapping once no "
                + "region uses it, and a mapping close leaves mapped stays until the process exits", plugin.name()).isFalse();
        provider.free(chunk);
    }

    /**
     * {@link IpcImporter} is stateless and thread-safe: the runtime's IPC cache calls a plugin's one importer from
     * every thread that imports a chunk not mapped here yet, at once. Four threads, each with a chunk of its own,
     * import it through one importer at the same time, 25 times each, and check each mapping holds their chunk; an
     * importer that keeps what it parsed of a payload in a field (a decoder or reader reused for every call) is right
     * one call at a time, which every other test makes, and maps for one thread the chunk another asked for.
     */
    @Test
    public void oneImporterMapsForSeveralThreadsAtOnceEachItsOwnChunk() throws Exception {
        assumeIpc();
        long size = chunkSize(provider);
        int threads = 4;
        int rounds = 25;
        long firstSeed = 61;
        List<Chunk> chunks = new ArrayList<>();
        List<byte[]> payloads = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Chunk chunk = provider.allocate(size);
            chunks.add(chunk);
            Patterns.fill(chunk.segment(), firstSeed + t);
            payloads.add(export(provider, chunk));
        }
        IpcImporter importer = importer();
        List<String> failures = new CopyOnWriteArrayList<>();
        List<Throwable> thrown = new CopyOnWriteArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> importers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int own = t;
            importers.add(startTestThread("tck-import-" + t, () -> {
                try {
                    start.await();
                    for (int round = 0; round < rounds && !testEnding(); round++) {
                        try (ChunkMapping mapping = importer.map(reader(payloads.get(own)), size)) {
                            String wrong = whoseChunk(mapping.segment(), size, firstSeed, threads, own);
                            if (wrong != null) {
                                failures.add("import " + round + " of thread " + own + " mapped " + wrong);
                                return;
                            }
                        }
                    }
                } catch (Throwable e) {
                    failures.add("import of thread " + own + " threw " + e);
                    thrown.add(e);
                }
            }));
        }
        start.countDown();
        for (Thread t : importers) {
            // A hang guard only: an import of a chunk this process exported waits for nobody.
            if (!t.join(progressGuard().multipliedBy(2))) {
                throw new AssertionError(t.getName() + " has not finished its " + rounds + " imports through the importer of plugin '"
                        + plugin.name() + "' within " + progressGuard().multipliedBy(2) + " while " + threads + " threads imported at once");
            }
        }
        if (!failures.isEmpty()) {
            AssertionError failure = new AssertionError(threads + " threads importing each its own chunk through one importer of plugin '"
                    + plugin.name() + "' at once: " + String.join("; ", failures) + ". IpcImporter: stateless and thread-safe (the "
                    + "runtime's IPC cache calls one importer from every thread that imports at once): keep what a call parses in "
                    + "its own variables, not in fields of the importer");
            thrown.forEach(failure::addSuppressed);
            throw failure;
        }
        chunks.forEach(provider::free);
    }

    /** What {@code mapped} is if not the chunk of thread {@code own}, filled with {@code firstSeed + own}; null if it is. */
    private static String whoseChunk(MemorySegment mapped, long size, long firstSeed, int threads, int own) {
        if (mapped.byteSize() != size) return mapped.byteSize() + " bytes, not its chunk's " + size;
        long differs = Patterns.mismatch(mapped, firstSeed + own);
        if (differs < 0) return null;
        for (int other = 0; other < threads; other++) {
            if (other != own && Patterns.mismatch(mapped, firstSeed + other) < 0) return "the chunk of thread " + other;
        }
        return "memory that is not its chunk (byte " + differs + " differs)";
    }

    /**
     * Optional ({@link ChunkMapping#exporterState()}, SPI 1.1): a mapping that can tell whether its
     * exporter lives says {@code ALIVE} while the exporting provider is open and {@code DEAD} once it
     * closed (which frees every chunk: the exporter gave the chunk up as a dead process does), and
     * still after its own close. A plugin whose mappings say {@code UNKNOWN} skips it.
     */
    @Test
    public void anImportThatCanTellItsExportersLifeSaysDeadOnceTheExportingProviderClosed() {
        assumeIpc();
        long size = chunkSize(provider);
        byte[] payload = export(provider, provider.allocate(size));
        ChunkMapping mapping = importer().map(reader(payload), size);
        try {
            ExporterState before = mapping.exporterState();
            assumeTrue(before != ExporterState.UNKNOWN, "the mappings of plugin '" + plugin.name() + "' cannot tell their "
                    + "exporter's life (ChunkMapping.exporterState() is UNKNOWN): an optional operation");
            assertThat(before).as("ChunkMapping.exporterState() of plugin '%s' while the exporting provider is open", plugin.name())
                    .isEqualTo(ExporterState.ALIVE);
            provider.close();
            assertThat(mapping.exporterState()).as("ChunkMapping.exporterState() of plugin '%s' once the exporting provider closed, "
                    + "which frees its chunks: a plugin that can tell says DEAD", plugin.name()).isEqualTo(ExporterState.DEAD);
        } finally {
            mapping.close();
        }
        assertThat(mapping.exporterState()).as("ChunkMapping.exporterState() of plugin '%s' after the mapping's close, which it "
                + "must answer as before", plugin.name()).isEqualTo(ExporterState.DEAD);
    }

    /**
     * Optional, as the check above ({@link ChunkMapping#exporterState()}, SPI 1.1), and the one an
     * importer needs most: the exporter is another process ({@link ExportingChild}), killed with
     * {@code SIGKILL}, so nothing of it closes anything. A mapping that can tell says {@code ALIVE}
     * while that process lives and {@code DEAD} after the kill, asked until it does for at most
     * {@link #progressGuard()} (a hang guard: no time is asserted); the mapping still holds what the
     * dead exporter wrote; and its close unmaps it and leaves no descriptor open. A plugin whose
     * mappings say {@code UNKNOWN} skips it, the exporter then ended by closing its provider. What
     * the killed exporter left in the shared directory is the plugin's to reclaim later, which
     * {@link #aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay} checks, not this
     * check's: the test removes it.
     */
    @Test
    public void anImportThatCanTellItsExportersLifeSaysDeadOnceTheExportingProcessIsKilledAndKeepsItsData() throws Exception {
        assumeIpc();
        long size = chunkSize(provider);
        provider.close(); // a provider may own its resource exclusively (a device): the exporting process opens its own
        Set<Path> filesBeforeTheExporter = filesIn(sharedDirectory());
        long seed = 41;
        ChildJvm.Started exporter = startExporter(size, seed);
        try {
            byte[] payload = Patterns.unhex(exporter.awaitLine(ExportingChild.EXPORTED, secondProcessGuard()));
            Map<String, String> descriptorsBefore = openDescriptors();
            ChunkMapping mapping = importer().map(reader(payload), size);
            MemorySegment mapped = mapping.segment();
            try {
                assertThat(Patterns.mismatch(mapped, seed)).as("first byte of the import that differs from what the exporting process "
                        + "wrote").isEqualTo(-1);
                ExporterState alive = mapping.exporterState();
                assumeTrue(alive != ExporterState.UNKNOWN, "the mappings of plugin '" + plugin.name() + "' cannot tell their "
                        + "exporter's life (ChunkMapping.exporterState() is UNKNOWN): an optional operation");
                assertThat(alive).as("ChunkMapping.exporterState() of plugin '%s' while the exporting process lives", plugin.name())
                        .isEqualTo(ExporterState.ALIVE);
                exporter.kill(secondProcessGuard());
                ExporterState dead = awaitExporterState(mapping, ExporterState.DEAD);
                assertThat(dead).as("ChunkMapping.exporterState() of plugin '%s' asked for %s after the exporting process was "
                        + "killed with SIGKILL: a plugin that can tell says DEAD, judged by something the kernel drops with the "
                        + "process (a lock), never a pid", plugin.name(), progressGuard()).isEqualTo(ExporterState.DEAD);
                assertThat(Patterns.mismatch(mapped, seed)).as("first byte of the import that no longer holds what its exporter wrote "
                        + "before it was killed: the mapping keeps the memory").isEqualTo(-1);
            } finally {
                mapping.close();
            }
            assertThat(mapped.scope().isAlive()).as("whether the import of a killed exporter's chunk is still mapped after "
                    + "ChunkMapping.close(), which unmaps it").isFalse();
            assertThat(mapping.exporterState()).as("ChunkMapping.exporterState() of plugin '%s' after the mapping's close, which it "
                    + "must answer as before", plugin.name()).isEqualTo(ExporterState.DEAD);
            Map<String, String> left = descriptorsLeftSince(descriptorsBefore);
            assertThat(left).as("descriptors opened since the import of plugin '%s' and still open after the mapping's close, "
                    + "exporterState() asked before and after the exporter's death (a look keeps nothing open)", plugin.name()).isEmpty();
        } finally {
            try {
                exporter.close();
            } finally {
                if (exporter.killed()) removeWhatAppeared(sharedDirectory(), filesBeforeTheExporter);
            }
        }
    }

    /**
     * What makes the plugin reclaim the files that exporters which died left in the shared directory, as
     * the plugin documents it: {@link #aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay}
     * looks at the directory while what this returns is open, and closes it after. By default the next
     * memory provider opened with {@code context} on the directory, as a restarted service's first pool
     * opens one (where memfd and posix reclaim). Override it for another trigger the plugin documents
     * (its transport's open, a command of its own), returning what to close; a plugin whose dead
     * exporters' files something outside it clears, which its documentation names, skips the check with
     * {@code Assumptions.abort("why")}.
     */
    protected AutoCloseable reclaimTheFilesOfDeadExporters(ConduitPlugin plugin, PluginContext context) {
        return plugin.openMemoryProvider(context);
    }

    /**
     * Optional, as the checks of a killed exporter above: what an exporting process killed with
     * {@code SIGKILL} left in the shared directory (chunk files, sockets, leases: nothing of it closed
     * anything) is gone once the plugin's reclaim trigger ran ({@link #reclaimTheFilesOfDeadExporters},
     * by default the next provider opened on the directory), and the files of a second exporting
     * process, which lives on, are all still there. Without it every crash of an application leaves
     * its files for good, and under {@code /dev/shm} they are memory. A plugin whose exporting process
     * made no file in the shared directory (devdax: its memory is a device's) skips it, saying so. The
     * killed process's files that the plugin left are removed after the check, so that the check of
     * the directory after the test does not report them twice.
     *
     * <p>A plugin without IPC is checked the same way, its process allocating without exporting: its
     * memory is private to the process, which a kill ends, so nothing of it may outlive the process
     * in the shared directory past the plugin's reclaim trigger (a chunk kept as a file there would
     * be memory, under {@code /dev/shm}, that no one can use or free); one whose memory is anonymous,
     * making no file, skips it, saying so.
     */
    @Test
    public void aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay() throws Exception {
        boolean exports = plugin.capabilities().contains(Capability.IPC);
        if (exports) requireOfferedHere(plugin, Capability.IPC);
        String process = exports ? "exporting process" : "allocating process (a plugin without IPC, whose memory is private to it)";
        long size = chunkSize(provider);
        provider.close(); // a provider may own its resource exclusively (a device): the exporting processes open their own
        checkAKilledOwnersFilesAreReclaimed(plugin.name(), () -> startExporter(size, 43), exports ? ExportingChild.EXPORTED : ExportingChild.ALLOCATED,
                line -> "the " + process + " of plugin '" + plugin.name() + "' made no file in the shared directory " + sharedDirectory()
                        + ": nothing of a killed " + (exports ? "exporter" : "process") + "'s for the plugin to reclaim there",
                () -> reclaimTheFilesOfDeadExporters(plugin, pluginContext()),
                "an " + process, "reclaimTheFilesOfDeadExporters", "the next memory provider opened on the directory");
    }

    /** Starts an {@link ExportingChild} of the plugin on the shared directory, exporting a chunk of {@code size} bytes filled with {@code seed}. */
    private ChildJvm.Started startExporter(long size, long seed) throws IOException {
        return startChild(ExportingChild.class, plugin, Long.toString(size), Long.toString(seed));
    }

    /** Asks {@code mapping} until it says {@code wanted}, for at most {@link #progressGuard()}: its last answer. */
    private ExporterState awaitExporterState(ChunkMapping mapping, ExporterState wanted) throws InterruptedException {
        long deadline = System.nanoTime() + progressGuard().toNanos();
        ExporterState answer = mapping.exporterState();
        while (answer != wanted && System.nanoTime() - deadline < 0) {
            Thread.sleep(20);
            answer = mapping.exporterState();
        }
        return answer;
    }

    /** Removes what appeared in {@code directory} since {@code before} was listed. */
    private static void removeWhatAppeared(Path directory, Set<Path> before) throws IOException {
        removeDeepestFirst(appearedSince(directory, before));
    }

    @Test
    public void anExportMapsInASecondProcess() throws Exception {
        assumeIpc();
        long size = chunkSize(provider);
        Chunk chunk = provider.allocate(size);
        byte[] payload = export(provider, chunk);
        Patterns.fill(chunk.segment(), 11);
        assertTheOtherProcessSawAndWrote(Patterns.hex(payload), size, "-", 0, chunk.segment(), 11, "OK spi");
        provider.free(chunk);
    }

    @Test
    public void aRegionHandleImportsInASecondProcessThroughTheRuntime() throws Exception {
        assumeIpc();
        provider.close(); // a provider may own its resource exclusively (a device): the runtime's pool opens its own
        Conduit conduit = newConduit();
        Region region = closeAfterTest(conduit.pool(plugin.name()).allocate(4096));
        Patterns.fill(region.segment(), 12);
        assertTheOtherProcessSawAndWrote("-", 0, Patterns.hex(exportHandle(region)), region.size(), region.segment(), 12, "OK runtime");
    }

    /** Runs the importing process; it checks the pattern {@code seed} and writes its complement, which this checks. */
    private void assertTheOtherProcessSawAndWrote(String payloadHex, long chunkLength, String handleHex, long regionLength,
                                                 MemorySegment memory, long seed, String expectedReport) throws Exception {
        List<String> arguments = new ArrayList<>(List.of(plugin.name(), plugin.getClass().getName(),
                sharedDirectory().toString(), payloadHex, Long.toString(chunkLength), handleHex, Long.toString(regionLength),
                Long.toString(seed)));
        configuration(sharedDirectory()).forEach((k, v) -> arguments.add(k + "=" + v));
        ChildJvm.Result result = ChildJvm.run(arguments, secondProcessGuard());
        assertThat(result.stdout()).as("the importing process's report; its stderr:%n%s", result.stderr()).containsExactly(expectedReport);
        assertThat(result.exitCode()).isZero();
        for (long i = 0; i < memory.byteSize(); i++) {
            if (memory.get(ValueLayout.JAVA_BYTE, i) != (byte) ~Patterns.at(seed, i)) {
                throw new AssertionError("byte " + i + " the other process wrote did not arrive in the exported memory");
            }
        }
    }

    /**
     * What the importer throws for {@code payload} mapped as {@code chunkLength} bytes, which it must refuse. One that maps it
     * instead fails here, naming what it mapped and the rule: an assertion on a refusal that never came would only say
     * "Expecting actual not to be null", which tells the author neither what the importer did nor what it should have done.
     */
    private Throwable refusalToMap(byte[] payload, long chunkLength, String what, String rule) {
        IpcImporter importer = importer();
        ChunkMapping mapping;
        try {
            mapping = importer.map(reader(payload), chunkLength);
        } catch (Throwable refusal) {
            return refusal;
        }
        long mapped = mapping.segment().byteSize();
        mapping.close();
        throw new AssertionError("the importer of plugin '" + plugin.name() + "' mapped " + what + " (" + mapped
                + " bytes) instead of refusing it: " + rule);
    }

    @Test
    public void anExportOfAFreedChunkNoLongerMaps() {
        assumeIpc();
        long size = chunkSize(provider);
        Chunk chunk = provider.allocate(size);
        byte[] payload = export(provider, chunk);
        provider.free(chunk);
        assertThat(refusalToMap(payload, size, "the export of a freed chunk",
                "MemoryProvider.free revokes the chunk's export, so that IpcImporter.map then refuses it with a ConduitException "
                        + "saying the chunk is gone (a stale handle)"))
                .as("mapping the export of a freed chunk").isInstanceOf(ConduitException.class)
                .hasMessageNotContaining("null");
        // A provider that names chunks by their place (an offset, a slot) gives the next chunk of the size the freed one's name.
        Chunk next = provider.allocate(size);
        Patterns.fill(next.segment(), 53);
        assertThat(refusalToMap(payload, size, "the export of a freed chunk once a chunk of its size was allocated after it",
                "an export names its chunk alone, never a place a later chunk takes (an offset, a slot): the old handle mapped "
                        + "that chunk, another region's memory; make each export unique (a random name, an allocation id)"))
                .as("mapping the export of a freed chunk once a chunk of its size was allocated after it")
                .isInstanceOf(ConduitException.class).hasMessageNotContaining("null");
        provider.free(next);
    }

    /**
     * {@link MemoryProvider#close()} frees every chunk still allocated, and a free revokes the chunk's export: the export of a
     * chunk the close found allocated is refused from then on, also once the plugin's next provider allocated a chunk of its
     * size. A file-backed provider that forgets one leaves its file, which the check of the shared directory after each
     * test finds; one whose chunks are entries of a device's table (devdax) leaves nothing there, and a close that unmapped
     * but left the entries passed while a peer's import mapped memory the device handed out again
     * ({@code BrokenPlugins.KeepsExportsPastClose}).
     */
    @Test
    public void anExportOfAChunkStillAllocatedWhenItsProviderClosedNoLongerMaps() {
        assumeIpc();
        long size = chunkSize(provider);
        Chunk chunk = provider.allocate(size);
        byte[] payload = export(provider, chunk);
        provider.close();
        String rule = "MemoryProvider.close frees every chunk still allocated, and a free revokes the chunk's export, so that "
                + "IpcImporter.map then refuses it with a ConduitException saying the chunk is gone (a stale handle): a close "
                + "that unmaps the chunks but keeps their exports (a device's table entries) lets a peer map memory no one "
                + "holds out any more, which a later allocation hands to another region";
        assertThat(refusalToMap(payload, size, "the export of a chunk still allocated when its provider closed", rule))
                .as("mapping the export of a chunk still allocated when its provider closed").isInstanceOf(ConduitException.class)
                .hasMessageNotContaining("null");
        // The plugin's next provider (its device's next owner) takes the memory the closed one gave back.
        MemoryProvider next = closeAfterTest(plugin.openMemoryProvider(pluginContext()));
        Chunk taken = next.allocate(size);
        assertThat(refusalToMap(payload, size, "the export of a chunk still allocated when its provider closed, once the plugin's "
                + "next provider allocated a chunk of its size", rule + "; an export names its chunk alone, never a place a later "
                + "owner's chunk takes"))
                .as("mapping the export of a chunk still allocated when its provider closed, once the next provider allocated")
                .isInstanceOf(ConduitException.class).hasMessageNotContaining("null");
        next.free(taken);
    }

    @Test
    public void truncatedPayloadsAreRefusedNamingTheField() {
        assumeIpc();
        long size = chunkSize(provider);
        Chunk chunk = provider.allocate(size);
        byte[] payload = export(provider, chunk);
        for (int length = 0; length < payload.length; length++) {
            byte[] truncated = Arrays.copyOf(payload, length);
            assertThat(refusalToMap(truncated, size, "a payload cut to " + length + " of its " + payload.length + " bytes",
                    "IpcImporter.map reads its payload with the PayloadReader it is given, which refuses a field cut short with "
                            + "InvalidHandleException naming it"))
                    .as("mapping a payload cut to %d of its %d bytes", length, payload.length)
                    .isInstanceOf(InvalidHandleException.class)
                    .hasMessageContaining("payload.");
        }
        byte[] longer = Arrays.copyOf(payload, payload.length + 1);
        assertThat(refusalToMap(longer, size, "a payload with a byte after its end",
                "IpcImporter.map reads its payload up to PayloadReader.end, which refuses bytes after the last field with "
                        + "InvalidHandleException"))
                .as("mapping a payload with a byte too many").isInstanceOf(InvalidHandleException.class);
        provider.free(chunk);
    }

    /**
     * Every payload with one bit flipped (bit 0 and bit 7 of each byte) is refused, or still maps the exported chunk
     * itself (a bit of unused padding): a mapping is checked to hold the chunk's bytes, not those of a neighbour
     * allocated after it with others (until 2026-12-07 any mapping passed, and an importer that mapped another chunk
     * for a name it could not find, {@code BrokenPlugins.MapsAnotherChunkForAnUnknownName}, passed the suite). Then
     * wrong lengths.
     */
    @Test
    public void alteredPayloadsAndLengthsFailCleanly() {
        assumeIpc();
        long size = chunkSize(provider);
        Chunk chunk = provider.allocate(size);
        byte[] payload = export(provider, chunk);
        Patterns.fill(chunk.segment(), 51);
        Chunk neighbour = provider.allocate(size);
        Patterns.fill(neighbour.segment(), 52);
        for (int i = 0; i < payload.length; i++) {
            for (int bit : new int[]{0, 7}) {
                byte[] altered = payload.clone();
                altered[i] ^= (byte) (1 << bit);
                ChunkMapping mapping;
                try {
                    mapping = importer().map(reader(altered), size);
                } catch (Throwable t) {
                    // IpcImporter.map promises InvalidHandleException when the change makes the payload malformed, and a
                    // ConduitException when it names a chunk that is not there (as a stale payload does): which, only the plugin knows.
                    assertThat(t).as("mapping a payload with bit %d of byte %d flipped (IpcImporter.map refuses it with a ConduitException, "
                            + "an InvalidHandleException when malformed)", bit, i).isInstanceOf(ConduitException.class)
                            .hasMessageNotContaining("null");
                    continue;
                }
                try {
                    long differs = Patterns.mismatch(mapping.segment(), 51);
                    if (mapping.segment().byteSize() != size || differs != -1) {
                        throw new AssertionError("the importer of plugin '" + plugin.name() + "' mapped a payload with bit " + bit
                                + " of byte " + i + " flipped as " + mapping.segment().byteSize() + " bytes that are not the exported "
                                + "chunk's (" + (differs < 0 ? "its length differs" : "byte " + differs + " differs") + "): a changed "
                                + "payload is refused (IpcImporter.map: InvalidHandleException when malformed, a ConduitException when "
                                + "it names no chunk there) or still names this very chunk; mapping other memory hands the importer "
                                + "a region no handle named");
                    }
                } finally {
                    mapping.close();
                }
            }
        }
        // A length short of the chunk's too: a mapping of the chunk's first bytes faults nowhere, but is not the chunk exported.
        for (long wrong : new long[]{0, size - provider.pageSize(), size + provider.pageSize(), -1}) {
            assertThat(refusalToMap(payload, wrong, "the export of a " + size + "-byte chunk as " + wrong + " bytes",
                    "IpcImporter.map refuses a chunkLength that is not the exported chunk's with a ConduitException: its mapping is "
                            + "exactly chunkLength long, and the handle's length is a peer's word"))
                    .as("mapping a %d-byte chunk as %d bytes", size, wrong).isInstanceOf(ConduitException.class);
        }
        provider.free(neighbour);
        provider.free(chunk);
    }

    /**
     * An application reaches the provider only through the runtime's pools, also one that exports nothing: a plugin whose
     * provider passes every test above may still get no pool (one that declares only SINGLE: a pool is called by any
     * thread), and would pass the TCK while no application could allocate from it.
     */
    @Test
    public void theRuntimeGivesPoolsOverIt() {
        provider.close(); // a provider may own its resource exclusively (a device): the runtime's pool opens its own
        Conduit conduit = newConduit();
        Pool pool;
        try {
            pool = closeAfterTest(conduit.pool(plugin.name()));
        } catch (ConduitException e) {
            throw new AssertionError("the runtime gives no pool over plugin '" + plugin.name() + "', and an application allocates "
                    + "its memory only from one: " + e.getMessage(), e);
        }
        assertThat(pool.plugin()).isEqualTo(plugin.name());
        Region region = closeAfterTest(pool.allocate(1000));
        Patterns.fill(region.segment(), 31);
        assertThat(Patterns.mismatch(region.segment(), 31)).as("first byte a pool region of plugin '%s' did not keep", plugin.name())
                .isEqualTo(-1);
    }

    @Test
    public void theRuntimePoolsAndCachesItsRegions() {
        assumeIpc();
        provider.close();
        Conduit conduit = newConduit();
        Pool pool = closeAfterTest(conduit.pool(plugin.name()));
        Region aligned = closeAfterTest(pool.allocate(64, pool.pageSize()));
        assertThat(aligned.segment().address() % pool.pageSize()).as("address of a pool region allocated with the alignment pageSize() %d", pool.pageSize()).isZero();
        Region region = closeAfterTest(pool.allocate(1000));
        Patterns.fill(region.segment(), 21);
        byte[] handle = exportHandle(region);
        IpcCacheStats before = conduit.ipcCacheStats();
        try (ImportedRegion first = conduit.importRegion(handle); ImportedRegion second = conduit.importRegion(handle)) {
            assertThat(first.plugin()).isEqualTo(plugin.name());
            assertThat(Patterns.mismatch(first.segment(), 21)).isEqualTo(-1);
            assertThat(Patterns.mismatch(second.segment(), 21)).isEqualTo(-1);
        }
        IpcCacheStats after = conduit.ipcCacheStats();
        assertThat(after.misses() - before.misses()).as("IPC cache misses: one mapping per chunk").isEqualTo(1);
        assertThat(after.hits() - before.hits()).as("IPC cache hits").isEqualTo(1);
        byte[] bad = handle.clone();
        bad[bad.length / 2] ^= 1;
        assertThatThrownBy(() -> conduit.importRegion(bad)).isInstanceOf(InvalidHandleException.class);
    }
}
