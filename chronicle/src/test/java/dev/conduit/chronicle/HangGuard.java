package dev.conduit.chronicle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The tests' bound on work that may hang: it runs from the last progress, not from the start, so a
 * loaded machine's slower run passes and one that stops fails, naming where each thread stands. A
 * whole-test {@code @Timeout} did neither: it failed a slow run, and, on the test's own thread,
 * could not stop a loop that never looks at its interrupt.
 */
final class HangGuard {

    /** How long nothing may move: a hang guard, not a speed check. */
    static final Duration GUARD = Duration.ofSeconds(30);

    private HangGuard() {
    }

    /**
     * Runs each of {@code work} on a daemon thread of its own, all at once, to their end, failing
     * once {@code count} has not moved for {@link #GUARD}, with how far {@code what} got and where
     * each thread still running is; then throws what the first of them threw. Daemons, so a stuck
     * one keeps no JVM alive.
     */
    static void runWhileProgressing(String what, LongSupplier count, Runnable... work) throws InterruptedException {
        List<FutureTask<Void>> tasks = new ArrayList<>();
        Thread[] threads = new Thread[work.length];
        for (int i = 0; i < work.length; i++) {
            FutureTask<Void> task = new FutureTask<>(work[i], null);
            tasks.add(task);
            threads[i] = Thread.ofPlatform().name(work.length == 1 ? what : what + " (" + (i + 1) + ")").daemon().start(task);
        }
        awaitWhileProgressing(what, count, () -> tasks.stream().allMatch(FutureTask::isDone), threads);
        for (FutureTask<Void> task : tasks) {
            try {
                task.get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Error error) throw error;
                if (e.getCause() instanceof RuntimeException runtime) throw runtime;
                throw new AssertionError(e.getCause());
            }
        }
    }

    /**
     * Returns once {@code done}, failing once {@code count} has not moved for {@link #GUARD}, with
     * how far {@code what} got and where each of {@code threads} still running is.
     */
    static void awaitWhileProgressing(String what, LongSupplier count, BooleanSupplier done, Thread... threads)
            throws InterruptedException {
        long seen = count.getAsLong();
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (!done.getAsBoolean()) {
            Thread.sleep(10);
            long now = count.getAsLong();
            if (now != seen) {
                seen = now;
                deadline = System.nanoTime() + GUARD.toNanos();
            } else if (System.nanoTime() - deadline > 0 && !done.getAsBoolean()) {
                throw new AssertionError("no progress for the hang guard of " + GUARD + " at " + seen + " " + what + where(threads));
            }
        }
    }

    /**
     * Waits for {@code thread} to end after {@code event}, which should end it at once, so nothing
     * counts as progress: fails {@link #GUARD} after the call, naming where the thread is.
     */
    static void join(Thread thread, String event) throws InterruptedException {
        if (!thread.join(GUARD)) {
            throw new AssertionError("the thread did not end within the hang guard of " + GUARD + " after " + event + where(thread));
        }
    }

    private static String where(Thread... threads) {
        StringBuilder where = new StringBuilder();
        for (Thread thread : threads) {
            if (!thread.isAlive()) continue;
            where.append(threads.length == 1 ? ", the thread " : "; thread '" + thread.getName() + "' ").append(thread.getState()).append(':');
            for (StackTraceElement frame : thread.getStackTrace()) where.append("\n    at ").append(frame);
        }
        return where.toString();
    }
}
