package dev.conduit.tools;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * A hang guard for a step of a test that waits for a run of {@code conduit perf} (in this JVM or in
 * processes it started): the step runs on a daemon thread of its own to its end, and fails only once
 * nothing has moved for {@link #GUARD}. No wall-clock bound on the step as a whole: a loaded
 * machine's slower run passes, one that stops fails, naming where its thread stands.
 *
 * <p>What moves: the step's thread uses CPU (a measuring loop, a wait that polls), or the step's own
 * count changes (lines read; {@link #childrenCpu} for a step that waits for processes it started).
 * Not the CPU of every process this JVM started: a spawned server spins while it waits for a client
 * that hangs, for good. A step blocked in a call that never returns moves nothing. The other test
 * classes' guards watch their own loops' counts (ChronicleMessagesTest, the porting tests), which
 * are not reachable from here.
 */
final class HangGuard {

    /**
     * How long nothing may move: longer than any one wait a step bounds itself (a process's exit, a server thread's
     * join: 60 s at most), so that such a wait fails first, with its own message.
     */
    static final Duration GUARD = Duration.ofSeconds(90);
    private static final long LOOK_MILLIS = 50;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private HangGuard() {
    }

    /** Runs {@code step} ({@code what} names it in a failure) to its end, unless nothing moves for {@link #GUARD}. */
    static <T> T await(String what, Callable<T> step) {
        return await(what, () -> 0, step);
    }

    /** The same, with {@code count} as one more sign of progress, e.g. the lines read of a server that says what it does. */
    static <T> T await(String what, LongSupplier count, Callable<T> step) {
        FutureTask<T> task = new FutureTask<>(step);
        Thread thread = Thread.ofPlatform().name("hang-guarded " + what).daemon().start(task);
        long[] seen = signs(thread, count);
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (true) {
            try {
                return task.get(LOOK_MILLIS, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                long[] now = signs(thread, count);
                if (!Arrays.equals(now, seen)) {
                    seen = now;
                    deadline = System.nanoTime() + GUARD.toNanos();
                } else if (System.nanoTime() - deadline > 0 && !task.isDone()) {
                    throw new AssertionError("nothing moved for the hang guard of " + GUARD + " in " + what + " (its thread used no CPU; the processes this JVM "
                            + "started: " + children() + "); its thread, " + thread.getState()
                            + ":" + List.of(thread.getStackTrace()).stream().map(f -> "\n    at " + f).collect(Collectors.joining()));
                }
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Error error) throw error;
                if (e.getCause() instanceof RuntimeException runtime) throw runtime;
                throw new AssertionError(what + " failed: " + e.getCause(), e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + what, e);
            }
        }
    }

    /** The step's thread's CPU time and {@code count}. */
    private static long[] signs(Thread thread, LongSupplier count) {
        return new long[] {THREADS.getThreadCpuTime(thread.threadId()), count.getAsLong()};
    }

    /**
     * The CPU time of the processes this JVM started that still run, in nanoseconds: the count of a step that waits for
     * one (its output, its end), whose thread is blocked meanwhile. It changes too when one of them ends.
     */
    static long childrenCpu() {
        return ProcessHandle.current().descendants().mapToLong(p -> p.info().totalCpuDuration().map(Duration::toNanos).orElse(0L)).sum();
    }

    private static String children() {
        List<String> all = ProcessHandle.current().descendants()
                .map(p -> p.pid() + " " + p.info().command().orElse("?")).toList();
        return all.isEmpty() ? "none" : all.toString();
    }
}
