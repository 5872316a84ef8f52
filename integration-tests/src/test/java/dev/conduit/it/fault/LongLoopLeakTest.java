package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.it.LoadTest;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Long loops of what an application does over and over — a worker connects, sends, closes; a
 * region is allocated, exported, imported, closed and freed — leave descriptors, mappings, threads,
 * shared-directory entries and heap where they were after a warm-up: nothing grows with the
 * number of cycles.
 */
@LoadTest
class LongLoopLeakTest {

    private static final int WARM_UP = 20;
    private static final int CYCLES = 300;
    /** Heap the loop may leave behind (JIT, class data, caches sized once), far below what a per-cycle leak would add. */
    private static final long HEAP_SLACK = 16 << 20;

    @TempDir
    Path shared;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "memfd"})
    void connectSendCloseAndImportCloseLoopsKeepEverythingFlat(String plugin) throws IOException, InterruptedException {
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
             Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
             Arena arena = Arena.ofConfined()) {
            long[] received = {0};
            receiver.onMessage(1, m -> received[0]++);
            Pool pool = conduit.pool(plugin);
            MemorySegment payload = arena.allocate(256);

            for (int i = 0; i < WARM_UP; i++) cycle(conduit, pool, receiver, payload, received);
            OpenResources before = settled();
            List<String> filesBefore = files();
            int threadsBefore = Thread.activeCount();
            long heapBefore = usedHeapAfterGc();

            for (int i = 0; i < CYCLES; i++) cycle(conduit, pool, receiver, payload, received);

            OpenResources after = settled();
            assertThat(received[0]).isEqualTo(WARM_UP + CYCLES);
            // Conduit's own descriptors and mappings exactly; the process's total may only shrink (JUnit and
            // earlier tests' leftovers close meanwhile), never grow.
            String context = "after " + CYCLES + " cycles: " + after.format() + ", before: " + before.format();
            assertThat(after.conduitFds()).as(context).isEqualTo(before.conduitFds());
            assertThat(after.socketFds()).as(context).isEqualTo(before.socketFds());
            assertThat(after.conduitMappings()).as(context).isEqualTo(before.conduitMappings());
            assertThat(after.fds()).as(context).isLessThanOrEqualTo(before.fds());
            assertThat(files()).as("shared-directory entries").isEqualTo(filesBefore);
            assertThat(Thread.activeCount()).as("threads").isLessThanOrEqualTo(threadsBefore);
            assertThat(usedHeapAfterGc()).as("heap in use").isLessThan(heapBefore + HEAP_SLACK);
        }
        assertThat(files()).as("files left after close").isEmpty();
    }

    private void cycle(Conduit conduit, Pool pool, Worker receiver, MemorySegment payload, long[] received) {
        long expected = received[0] + 1;
        try (Worker sender = conduit.newWorker(ThreadMode.SINGLE)) {
            try (Endpoint endpoint = sender.connect(receiver.address())) {
                endpoint.send(1, payload);
                for (int spin = 0; received[0] < expected && spin < 1_000_000; spin++) {
                    sender.progress();
                    receiver.progress();
                }
            }
        }
        // The receiver reads the departed sender's CLOSE and lets go of what it had mapped of it.
        for (int i = 0; i < 4; i++) receiver.progress();
        try (Region region = pool.allocate(64 << 10);
             ImportedRegion imported = conduit.importRegion(region.exportHandle())) {
            imported.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, expected);
        }
    }

    /**
     * The process's descriptors and mappings once they stopped changing: two looks 20 ms apart that
     * agree (at most 250 looks, a guard against looking for ever). memfd's fd server closes its end
     * of an import's connection on its own thread, after the importer has its descriptor, so a
     * single look right after a cycle may still count that socket, or not: the run of 12-05 00:45
     * counted it before the loop and not after, one socket fewer, which is no leak.
     */
    private static OpenResources settled() throws InterruptedException {
        OpenResources last = OpenResources.ofThisProcess();
        for (int look = 0; look < 250; look++) {
            Thread.sleep(20);
            OpenResources now = OpenResources.ofThisProcess();
            if (now.equals(last)) return now;
            last = now;
        }
        return last;
    }

    private List<String> files() throws IOException {
        try (Stream<Path> s = Files.list(shared)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) System.gc();
        return Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory();
    }
}
