package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.Pool;
import dev.conduit.Region;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * What one {@code conduit.importRegion(handle)} followed by {@code close()} costs, on the consumer
 * side, over the {@code memfd} and {@code posix} plugins, with the IPC cache hitting or not:
 * {@code importAndClose} with a new {@code ImportedRegion} per import, {@code importIntoClosedAndClose}
 * reopening the one closed before ({@code importRegion(handle, closed)}).
 *
 * <ul>
 *   <li>{@code cached}: the consumer's IPC cache keeps the chunk mapped (default
 *       {@code ipc.cache.bytes}), so after the first import every import is a hit: validate the
 *       handle's bytes in place (CRC32C included, nothing decoded), look the export up, count it,
 *       slice the region.
 *       No system call. <b>Target</b>: at most 100 ns and allocation-free ({@code -prof gc}:
 *       {@code gc.alloc.rate.norm} 0 B/op), which {@code importIntoClosedAndClose} is;
 *       {@code importAndClose} allocates its {@code ImportedRegion}.</li>
 *   <li>{@code uncached}: the consumer has {@code ipc.cache.bytes=0}, so closing the region evicts
 *       and unmaps the chunk, and the next import maps it again. For {@code memfd} that is a connect
 *       to the producer's Unix socket, the token, the fd received by {@code SCM_RIGHTS}, {@code mmap};
 *       for {@code posix} an {@code openat2} of the chunk's file and {@code mmap}. Both then pay the
 *       unmap (closing the mapping's arena) at close. No target: it is what a miss costs.</li>
 * </ul>
 *
 * <p>Producer and consumer are two {@code Conduit} instances in this one JVM: the importer does not
 * care, it only sees the handle's bytes and its own configuration. The producer exports a 1 KiB
 * region of a pool chunk (2 MiB, {@code pool.chunk.size}); what is mapped on a miss is the whole
 * chunk whatever the region's size, so region size is not a parameter here. For {@code memfd} the
 * producer's fd server runs in this JVM too, on a thread of its own, so a miss also pays a thread
 * hand-off that two processes would pay as a context switch. The shared directory of both is a fresh directory under
 * the configured {@code shared.dir} ({@code /dev/shm} unless {@code CONDUIT_SHARED_DIR} or {@code -Dconduit.shared.dir}
 * says otherwise), {@link BenchmarkDirectory}: removed at the trial's end, and by a shutdown hook when the run is stopped
 * or a measured call fails, so that no posix chunk or plugin lease stays behind. One thread.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
@State(Scope.Thread)
public class ImportBenchmark {

    @Param({"memfd", "posix"})
    public String plugin;

    @Param({"cached", "uncached"})
    public String cache;

    static final long REGION_SIZE = 1024;

    private Path dir;
    private Conduit producer;
    private Conduit consumer;
    private Region exported;
    private byte[] handle;

    @Setup(Level.Trial)
    public void open() throws IOException {
        var consumerBuilder = Conduit.builder().transports(plugin);
        switch (cache) {
            case "cached" -> { }
            case "uncached" -> consumerBuilder.set("ipc.cache.bytes", "0");
            default -> throw new IllegalArgumentException("cache must be cached or uncached: " + cache);
        }
        // JMH skips the tear-down of a trial whose set-up failed: what was opened is closed here.
        dir = BenchmarkDirectory.create();
        consumerBuilder.sharedDirectory(dir);
        try {
            producer = Conduit.builder().transports(plugin).sharedDirectory(dir).build();
            Pool pool = producer.pool(plugin);
            exported = pool.allocate(REGION_SIZE);
            handle = exported.exportHandle();
            consumer = consumerBuilder.build();
            // Fails here, not in the measurement, if the handle does not import.
            try (ImportedRegion r = consumer.importRegion(handle)) {
                if (r.size() != REGION_SIZE) throw new IllegalStateException("imported " + r.size() + " bytes, exported " + REGION_SIZE);
            }
        } catch (RuntimeException | Error e) {
            for (Conduit opened : new Conduit[] {consumer, producer}) {
                if (opened == null) continue;
                try {
                    opened.close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            try {
                BenchmarkDirectory.delete(dir);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Checks that the cache behaved as this case says: all hits, or all misses. */
    @TearDown(Level.Trial)
    public void close() throws IOException {
        try {
            IpcCacheStats stats = consumer.ipcCacheStats();
            boolean asIntended = "cached".equals(cache)
                    ? stats.misses() == 1 && stats.hits() > 0
                    : stats.hits() == 0 && stats.misses() > 1 && stats.evictions() >= stats.misses() - 1;
            if (!asIntended) {
                throw new IllegalStateException("the '" + cache + "' case did not measure what it says: cache " + stats);
            }
        } finally {
            try {
                consumer.close();
            } finally {
                try {
                    exported.close();
                    producer.close();
                } finally {
                    BenchmarkDirectory.delete(dir);
                }
            }
        }
    }

    @Benchmark
    public void importAndClose(Blackhole bh) {
        ImportedRegion region = consumer.importRegion(handle);
        bh.consume(region.segment());
        region.close();
    }

    private ImportedRegion closed;

    @Benchmark
    public void importIntoClosedAndClose(Blackhole bh) {
        ImportedRegion region = consumer.importRegion(handle, closed);
        bh.consume(region.segment());
        region.close();
        closed = region;
    }
}
