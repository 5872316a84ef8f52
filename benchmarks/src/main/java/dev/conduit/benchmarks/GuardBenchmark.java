package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
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

import java.util.concurrent.TimeUnit;

/**
 * What the runtime's thread-mode guard costs per call: {@code worker.progress()} in each
 * {@link ThreadPolicy}, against calling the same plugin transport's {@code progress()} directly.
 *
 * <p>The transport is {@link GuardBenchPlugin}'s, which only increments a field, so the difference
 * between {@link #worker} and {@link #direct} is what the runtime adds to every call: the guard's
 * {@code enter}/{@code exit} and the worker's own bookkeeping around the transport (its state
 * word, message-delivery context, in-transport count; this worker has one transport, which it
 * calls without a loop). Comparing the policies with each other
 * isolates the guards; comparing {@code OWNER_CHECK} with {@code direct} is the target.
 * Results are returned, so JMH's Blackhole consumes them. {@link #workerDelivering} has the
 * transport hand the runtime one message at each call, which a handler counts: the guards then
 * differ also by what they add around a call-back ({@code PASS_THROUGH} counts the threads inside
 * handlers, which a close of the worker waits for).
 *
 * <table class="striped">
 * <caption>Cases ({@code policy} parameter of {@link #worker})</caption>
 * <tr><th>policy</th><th>worker mode</th><th>plugin declares</th><th>guard</th></tr>
 * <tr><td>{@code OWNER_CHECK}</td><td>SINGLE</td><td>all modes</td><td>one thread comparison</td></tr>
 * <tr><td>{@code OVERLAP_CHECK}</td><td>SERIALIZED</td><td>all modes</td><td>CAS on an in-use flag, release store</td></tr>
 * <tr><td>{@code PASS_THROUGH}</td><td>MULTI</td><td>MULTI</td><td>none</td></tr>
 * <tr><td>{@code RUNTIME_LOCK}</td><td>MULTI</td><td>SERIALIZED only</td><td>{@code RuntimeLock} (the runtime's own fair lock since 2026-12-02, a {@code ReentrantLock} before), uncontended: a read of its contender count, owner and queue, one CAS, and a volatile write and a look at the queue to let go</td></tr>
 * </table>
 *
 * <p><b>Targets</b> (from the issue): the {@code SINGLE} guard costs at most 2 ns over the direct
 * call; the runtime lock for {@code MULTI} over a {@code SERIALIZED} plugin at most 25 ns,
 * uncontended.
 *
 * <p>One thread only: the machines this project runs on have 2 cores, too few to measure
 * contention meaningfully (the JMH harness itself needs a core), so the lock is measured
 * uncontended.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
public class GuardBenchmark {

    /** The baseline: the plugin's transport called without the runtime in between. */
    @State(Scope.Thread)
    public static class DirectState {
        Conduit conduit;
        Worker worker;
        Transport transport;

        @Setup(Level.Trial)
        public void open() {
            GuardBenchPlugin plugin = GuardBenchPlugin.threadSafe();
            conduit = Conduit.builder().discoverPlugins(false).addPlugin(plugin).build();
            worker = conduit.newWorker(ThreadMode.SINGLE);
            transport = plugin.lastOpened();
            if (transport == null) throw new IllegalStateException("the runtime opened no transport of " + plugin.name());
        }

        @TearDown(Level.Trial)
        public void close() {
            conduit.close();
        }
    }

    /** A worker guarded by {@link #policy}, over the one benchmark plugin that policy needs. */
    @State(Scope.Thread)
    public static class WorkerState {
        @Param({"OWNER_CHECK", "OVERLAP_CHECK", "PASS_THROUGH", "RUNTIME_LOCK"})
        public ThreadPolicy policy;

        Conduit conduit;
        Worker worker;
        GuardBenchPlugin plugin;

        /** Runs on the benchmark thread (thread-scoped state), which so owns a SINGLE worker. */
        @Setup(Level.Trial)
        public void open() {
            open(false);
        }

        void open(boolean delivering) {
            ThreadMode mode = switch (policy) {
                case OWNER_CHECK -> ThreadMode.SINGLE;
                case OVERLAP_CHECK -> ThreadMode.SERIALIZED;
                case PASS_THROUGH, RUNTIME_LOCK -> ThreadMode.MULTI;
                default -> throw new IllegalArgumentException("not benchmarked: " + policy);
            };
            plugin = policy == ThreadPolicy.RUNTIME_LOCK ? GuardBenchPlugin.serializedOnly() : GuardBenchPlugin.threadSafe();
            if (delivering) plugin = plugin.delivering();
            conduit = Conduit.builder().discoverPlugins(false).addPlugin(plugin).build();
            worker = conduit.newWorker(mode);
            if (worker.threadPolicy() != policy) {
                throw new IllegalStateException("a " + mode + " worker over " + plugin.name() + " is guarded by "
                        + worker.threadPolicy() + ", not " + policy);
            }
        }

        @TearDown(Level.Trial)
        public void close() {
            long calls = plugin.lastOpened().calls();
            conduit.close();
            if (calls == 0) throw new IllegalStateException("worker.progress() never reached the transport");
        }
    }

    /**
     * {@link WorkerState} whose transport delivers one message at each {@code progress()} to a
     * handler that counts it: the guard's cost around a call-back (under {@code PASS_THROUGH}, the
     * count of threads inside handlers that a close waits for) and the runtime's dispatch.
     */
    @State(Scope.Thread)
    public static class DeliveringState {
        @Param({"OWNER_CHECK", "OVERLAP_CHECK", "PASS_THROUGH", "RUNTIME_LOCK"})
        public ThreadPolicy policy;

        /** Not inherited: JMH would run the setup and tear-down of both classes. */
        final WorkerState guarded = new WorkerState();
        long handled;

        @Setup(Level.Trial)
        public void open() {
            guarded.policy = policy;
            guarded.open(true);
            guarded.worker.onMessage(GuardBenchPlugin.CountingTransport.MESSAGE_ID, m -> handled++);
        }

        @TearDown(Level.Trial)
        public void close() {
            guarded.close();
            if (handled == 0) throw new IllegalStateException("no message reached the handler");
        }
    }

    @Benchmark
    public int direct(DirectState s) {
        return s.transport.progress();
    }

    @Benchmark
    public int worker(WorkerState s) {
        return s.worker.progress();
    }

    @Benchmark
    public int workerDelivering(DeliveringState s) {
        return s.guarded.worker.progress();
    }
}
