package dev.conduit.benchmarks;

import dev.conduit.Conduit;
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
 * What one {@code pool.allocate(size)} followed by {@code region.close()} costs, over the
 * {@code memfd} and {@code posix} pools, for 64 B, 1 KiB and 64 KiB.
 *
 * <p>All three sizes are size classes of the default pool (classes go up to a quarter of
 * {@code pool.chunk.size}, 2 MiB by default), so in steady state this is the pool's own fast path:
 * take the region freed last off the class's free list, make a new {@code Region} of its slot
 * (with the segment it had: same size), push that back at its close. The provider (a system call)
 * is only reached when a class takes a new chunk, which happens during the first warm-up
 * invocations and then never again, since a freed slot is reused at once. The memory is not
 * touched.
 *
 * <p><b>Target</b> (from the issue): at most 50 ns per allocate + free. Run with {@code -prof gc}
 * to see the bytes allocated per operation.
 *
 * <p>The shared directory is a fresh directory under the configured {@code shared.dir} ({@code /dev/shm} unless
 * {@code CONDUIT_SHARED_DIR} or {@code -Dconduit.shared.dir} says otherwise), {@link BenchmarkDirectory}: removed at the
 * trial's end, and by a shutdown hook when the run is stopped or the measured call fails (JMH then runs no tear-down),
 * so that no posix chunk or plugin lease stays behind. One thread.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
@State(Scope.Thread)
public class PoolBenchmark {

    @Param({"memfd", "posix"})
    public String plugin;

    @Param({"64", "1024", "65536"})
    public long size;

    private Path dir;
    private Conduit conduit;
    private Pool pool;

    @Setup(Level.Trial)
    public void open() throws IOException {
        // Fails here, naming the parameter, rather than in the first measured call, after which JMH runs no tear-down.
        if (size <= 0) throw new IllegalArgumentException("-p size must be a positive number of bytes: " + size);
        dir = BenchmarkDirectory.create();
        try {
            conduit = Conduit.builder().transports(plugin).sharedDirectory(dir).build();
            pool = conduit.pool(plugin);
        } catch (RuntimeException | Error e) {
            Trials.tearDownAfter(e, this::close);
            throw e;
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        try {
            if (conduit != null) conduit.close(); // closes the pool, which frees its chunks
        } finally {
            BenchmarkDirectory.delete(dir);
        }
    }

    @Benchmark
    public void allocateAndFree(Blackhole bh) {
        Region region = pool.allocate(size);
        bh.consume(region);
        region.close();
    }
}
