package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link JucxStyleShuffle}, a SparkUCX-like shuffle fetch written for JUCX and ported to the public
 * API, between two processes: a mapper in a child JVM keeps blocks from 0 B to 3 MiB in a region it
 * exports; the reducer here asks for batches of them by active message, is answered on the reply
 * endpoint with the block table (and the small blocks inline, in the part of the answer it keeps),
 * fetches the rest by RMA {@code get} on three fetcher threads, and checks every block's CRC32C. A
 * mapper killed mid-fetch fails the fetch with {@link PeerFailedException}, leaves every block
 * fetched before it whole, and nothing in the shared directory once the reducer closes. Each wait
 * is a hang guard of its own event, not a bound on the test.
 */
class JucxStyleShuffleTest {

    private static final long SEED = 11;
    /** 0 B to 3 MiB, zero-length blocks first and last (the last one at the region's very end), around the 8 KiB inline limit and the 1 KiB header limit. */
    private static final long[] SIZES = {0, 1, 7, 1000, 1024, 4096, 8191, 8192, 8193, 65_536, 100_003, 1 << 20, (3 << 20) + 5, 12_345, 2 << 20, 0};
    private static final int PARALLELISM = 3;
    private static final long INLINE_MAX = 64 << 10;
    private static final Duration GUARD = JucxStyleShuffle.GUARD;

    private static Conduit conduit(Path shared, String plugin) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties()).sharedDirectory(shared).transports(plugin).build();
    }

    private static WorkerAddress mapper(ChildJvm process, String plugin) {
        String sizes = Arrays.stream(SIZES).mapToObj(Long::toString).collect(Collectors.joining(","));
        String reply = process.call("mapper", plugin, SEED, sizes);
        return WorkerAddress.fromBytes(HexFormat.of().parseHex(ChildJvm.parseFields(reply).get("address")));
    }

    private static int[] allBlocksShuffled() {
        List<Integer> ids = new java.util.ArrayList<>(java.util.stream.IntStream.range(0, SIZES.length).boxed().toList());
        java.util.Collections.shuffle(ids, new java.util.Random(SEED));
        return ids.stream().mapToInt(Integer::intValue).toArray();
    }

    private static void assertEveryBlockIsTheMappers(JucxStyleShuffle.FetchedBlocks fetched, int[] ids) {
        assertThat(fetched.count()).isEqualTo(ids.length);
        for (int id : ids) {
            MemorySegment block = fetched.block(id);
            assertThat(block.byteSize()).as("length of block %d", id).isEqualTo(SIZES[id]);
            assertThat(JucxStyleShuffle.crc(block)).as("CRC32C of block %d", id).isEqualTo(JucxStyleShuffle.expectedCrc(SEED, id, SIZES[id]));
        }
    }

    private static List<String> files(Path directory) {
        try (Stream<Path> s = Files.list(directory)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aReducerFetchesEveryBlockByRmaInParallelOrInlineAndEachHasTheMappersCrc(String plugin,
                                                                                 @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        int[] ids = allBlocksShuffled();
        try (ChildJvm mapperProcess = ChildJvm.builder(JucxStyleShufflePeer.class).sharedDirectory(shared).start();
             Conduit conduit = conduit(shared, plugin);
             JucxStyleShuffle.Reducer reducer = new JucxStyleShuffle.Reducer(conduit, mapper(mapperProcess, plugin), PARALLELISM)) {
            // Every block by RMA get, spread over the fetchers.
            Set<String> fetchers = ConcurrentHashMap.newKeySet();
            try (JucxStyleShuffle.FetchedBlocks byRma = reducer.fetch(ids, JucxStyleShuffle.NONE_INLINE,
                    (block, worker, toMapper, region) -> fetchers.add(Thread.currentThread().getName()))) {
                assertEveryBlockIsTheMappers(byRma, ids);
                assertThat(fetchers).as("the threads that got blocks").hasSize(PARALLELISM);
                for (int id : ids) assertThat(byRma.inline(id)).as("block %d inline", id).isFalse();
            }
            // The small ones inline in the answer, which the reducer kept; the rest by RMA, through the peer regions opened before.
            JucxStyleShuffle.FetchedBlocks mixed = reducer.fetch(ids, INLINE_MAX);
            try (mixed) {
                assertEveryBlockIsTheMappers(mixed, ids);
                for (int id : ids) assertThat(mixed.inline(id)).as("block %d inline", id).isEqualTo(SIZES[id] <= INLINE_MAX);
            }
            // An inline block lies in the answer kept where it arrived (the mapper's bounce ring, over memfd and posix): once
            // given back, its bytes are the transport's to reuse, readable but undefined (KeptPayload's javadoc); nothing to check.
            assertThatThrownBy(() -> mixed.block(SIZES.length - 4).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0))
                    .as("a block fetched by RMA once its memory was given back").isInstanceOf(IllegalStateException.class);

            // A batch of one block, the largest: one fetcher gets it, the others have nothing to do.
            try (JucxStyleShuffle.FetchedBlocks one = reducer.fetch(new int[] {12}, INLINE_MAX)) {
                assertEveryBlockIsTheMappers(one, new int[] {12});
            }
            assertThat(conduit.ipcCacheStats().entriesInUse()).as("the mapper's region, open on each fetcher's endpoint").isEqualTo(1);
            assertThat(reducer.mapper().failure()).isNull();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anUnknownBlockIsRefusedWithTheMappersReasonAndACorruptBlockFailsItsCrcCheck(String plugin,
                                                                                      @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (ChildJvm mapperProcess = ChildJvm.builder(JucxStyleShufflePeer.class).sharedDirectory(shared).start();
             Conduit conduit = conduit(shared, plugin);
             JucxStyleShuffle.Reducer reducer = new JucxStyleShuffle.Reducer(conduit, mapper(mapperProcess, plugin), PARALLELISM)) {
            assertThatThrownBy(() -> reducer.fetch(new int[] {3, SIZES.length, 4}, INLINE_MAX))
                    .isInstanceOf(UcxStyleService.RefusedException.class)
                    .hasMessage("no block " + SIZES.length + " in this map output: it has blocks 0.." + (SIZES.length - 1));
            assertThatThrownBy(() -> reducer.fetch(new int[] {-1}, INLINE_MAX)).isInstanceOf(UcxStyleService.RefusedException.class)
                    .hasMessageStartingWith("no block -1");
            assertThatThrownBy(() -> reducer.fetch(new int[] {5, 6, 5}, INLINE_MAX)).isInstanceOf(UcxStyleService.RefusedException.class)
                    .hasMessage("block 5 is asked for twice in one FETCH");

            mapperProcess.call("corrupt", 3, 500);      // inline
            mapperProcess.call("corrupt", 11, 700_000); // by RMA
            assertThatThrownBy(() -> reducer.fetch(new int[] {3}, INLINE_MAX)).isInstanceOf(JucxStyleShuffle.CorruptBlockException.class)
                    .hasMessageStartingWith("block 3 (inline) has CRC32C");
            assertThatThrownBy(() -> reducer.fetch(new int[] {10, 11, 12}, INLINE_MAX))
                    .isInstanceOf(JucxStyleShuffle.CorruptBlockException.class).hasMessageStartingWith("block 11 (fetched by RMA) has CRC32C");
            // The service goes on: the blocks left alone are still served whole.
            try (JucxStyleShuffle.FetchedBlocks rest = reducer.fetch(new int[] {0, 2, 10, 12, 15}, INLINE_MAX)) {
                assertEveryBlockIsTheMappers(rest, new int[] {0, 2, 10, 12, 15});
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aMapperKilledMidFetchFailsTheFetchWithPeerFailedExceptionAndLeavesNothingInTheSharedDirectory(String plugin,
                                                                                                      @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        int[] ids = allBlocksShuffled();
        AtomicInteger gets = new AtomicInteger();
        try (ChildJvm mapperProcess = ChildJvm.builder(JucxStyleShufflePeer.class).sharedDirectory(shared).start()) {
            try (Conduit conduit = conduit(shared, plugin);
                 JucxStyleShuffle.Reducer reducer = new JucxStyleShuffle.Reducer(conduit, mapper(mapperProcess, plugin), PARALLELISM)) {
                // A first fetch opens the mapper's region on every fetcher.
                reducer.fetch(ids, JucxStyleShuffle.NONE_INLINE).close();

                // Killed before the fourth get of the fetch: some blocks are in, and a get of this fetcher follows.
                long[] offsets = JucxStyleShuffle.offsets(SIZES);
                JucxStyleShuffle.BeforeGet killTheMapperOnce = (block, worker, toMapper, region) -> {
                    if (gets.incrementAndGet() != 4) return;
                    mapperProcess.kill();
                    // Until a progress() finds it dead, gets read the dead mapper's region, mapped here, whole.
                    try (Arena arena = Arena.ofConfined()) {
                        for (int b = 0; b < SIZES.length; b++) {
                            MemorySegment read = arena.allocate(Math.max(1, SIZES[b])).asSlice(0, SIZES[b]);
                            toMapper.get(region, offsets[b], read);
                            assertThat(JucxStyleShuffle.crc(read)).as("block %d read after the mapper was killed", b)
                                    .isEqualTo(JucxStyleShuffle.expectedCrc(SEED, b, SIZES[b]));
                        }
                    }
                    // Until this fetcher's worker has seen the death: its get then throws it.
                    long deadline = System.nanoTime() + GUARD.toNanos();
                    while (!toMapper.isFailed()) {
                        if (System.nanoTime() > deadline) throw new AssertionError("the fetcher did not see the mapper die within " + GUARD);
                        worker.await(GUARD);
                        worker.progress();
                    }
                };
                assertThatThrownBy(() -> reducer.fetch(ids, JucxStyleShuffle.NONE_INLINE, killTheMapperOnce))
                        .isInstanceOf(PeerFailedException.class).hasMessageContaining("peer worker died");

                // The reducer's own endpoint learns it at its worker's next progress, and says so from then on.
                long deadline = System.nanoTime() + GUARD.toNanos();
                while (!reducer.mapper().isFailed()) {
                    if (System.nanoTime() > deadline) throw new AssertionError("the reducer did not see the mapper die within " + GUARD);
                    reducer.worker().await(GUARD);
                    reducer.worker().progress();
                }
                assertThatThrownBy(() -> reducer.fetch(ids, INLINE_MAX)).isInstanceOf(PeerFailedException.class)
                        .hasMessageContaining("peer worker died");
            }
            assertThat(gets).as("gets begun, the one that met the failure included").hasValueGreaterThanOrEqualTo(4);
            assertThat(files(shared)).as("the shared directory once the reducer closed, its mapper killed").isEmpty();
        }
    }
}
