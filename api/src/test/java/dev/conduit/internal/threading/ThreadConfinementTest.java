package dev.conduit.internal.threading;

import dev.conduit.testing.HangGuard;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A confined plugin's thread ({@code thread.confine}) on its own: what it keeps of the thread that
 * made it, a call after its close, and a close interrupted under a call. Nothing is timed: every
 * wait is a hang guard.
 */
class ThreadConfinementTest {

    /** How long a call may take to come back: a hang guard, not a speed check. */
    private static final Duration HANG_GUARD = Duration.ofSeconds(60);

    /**
     * A confinement whose thread cannot start (the process, or its cgroup, at its limit of threads)
     * fails with a ConduitException naming the thread, the limit and the remedy: it threw the JVM's
     * bare OutOfMemoryError out of the worker's creation. The pool starts its thread on the JDK's own
     * path, not through Thread.start, so the test's factory throws what the start would.
     */
    @Test
    void aConfinementWhoseThreadCannotStartSaysWhichLimitToRaise() {
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached (injected by the test)");
        assertThatThrownBy(() -> new ThreadConfinement("conduit-test-confined", r -> {
            throw noThread;
        })).isInstanceOf(dev.conduit.spi.ConduitException.class).hasCause(noThread)
                .hasMessageStartingWith("cannot start conduit-test-confined, the thread that runs every call of a thread-confined plugin")
                .hasMessageContaining("limit of threads").hasMessageContaining("ulimit -u").hasMessageContaining("pids.max");
    }

    @Test
    void theConfinedThreadKeepsNoInheritableThreadLocalOfTheThreadThatOpenedTheWorker() {
        // A request-scoped context (a tenant, a trace, an MDC map) set on the thread that opened the worker: the
        // confined thread lives as long as the worker and must not pin it, as conduit-await-N and Periodic do not.
        InheritableThreadLocal<String> requestContext = new InheritableThreadLocal<>();
        requestContext.set("the context of request 42");
        try (ThreadConfinement confinement = new ThreadConfinement("conduit-test-confined")) {
            assertThat(confinement.call(requestContext::get)).as("the opening thread's inheritable thread-local, seen on the confined thread").isNull();
        } finally {
            requestContext.remove();
        }
    }

    /**
     * The confined thread has its opener's context class loader, as an unconfined plugin's calls,
     * made on the application's threads, have theirs (the loader ConduitBuilder finds plugins with by
     * default). Not inheriting inheritable thread-locals also stops a thread from taking it
     * (java.lang.Thread then defaults it to the system class loader), which in a Spring Boot fat jar
     * or an application server sees neither the plugin nor the application: so it was, between two
     * commits of 2026-12-07, until a review of the day found it.
     */
    @Test
    void theConfinedThreadHasTheContextClassLoaderOfTheThreadThatOpenedTheWorker() {
        ClassLoader original = Thread.currentThread().getContextClassLoader();
        ClassLoader application = new ClassLoader(original) { };
        Thread.currentThread().setContextClassLoader(application);
        try (ThreadConfinement confinement = new ThreadConfinement("conduit-test-confined")) {
            assertThat(confinement.call(() -> Thread.currentThread().getContextClassLoader()))
                    .as("the context class loader a confined plugin's call runs with").isSameAs(application);
        } finally {
            Thread.currentThread().setContextClassLoader(original);
        }
    }

    @Test
    void aCallAfterTheConfinementClosedFailsAsACallOnAClosedTransportDoesWithIllegalStateException() {
        // RuntimeEndpoint and RuntimeWorker take an IllegalStateException from a transport call for "closed under the
        // call" (a forced Conduit.close()) and any other RuntimeException for the plugin's own failure.
        ThreadConfinement confinement = new ThreadConfinement("conduit-test-confined");
        confinement.close();
        assertThatThrownBy(() -> confinement.call(() -> "never made")).isInstanceOf(IllegalStateException.class);
    }

    /**
     * A checked exception of the plugin's call (one a Kotlin or {@code @SneakyThrows} plugin throws
     * undeclared) comes back unchanged, from another thread's call and from one made on the confined
     * thread itself (a handler's connect), as from an unconfined plugin's call: the runtime names it
     * the plugin's fault. Until 2026-12-07 it came back wrapped in an {@code IllegalStateException},
     * which the runtime takes for "closed under the call" (above).
     */
    @Test
    void aCallsCheckedExceptionComesBackUnchangedNotAsTheIllegalStateExceptionOfAClose() {
        java.io.IOException thrown = new java.io.IOException("/dev/infiniband/uverbs0: No such device");
        try (ThreadConfinement confinement = new ThreadConfinement("conduit-test-confined")) {
            assertThat(catchThrowable(() -> confinement.call(() -> {
                throw thrown;
            }))).as("from another thread").isSameAs(thrown);
            assertThat(confinement.call(() -> catchThrowable(() -> confinement.call(() -> {
                throw thrown;
            })))).as("from the confined thread itself").isSameAs(thrown);
        }
    }

    @Test
    void aCloseInterruptedWhileACallIsUnderWayLeavesNoCallQueuedBehindItWaitingForever() throws Exception {
        ThreadConfinement confinement = new ThreadConfinement("conduit-test-confined");
        CountDownLatch inCall = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Object> first = CompletableFuture.supplyAsync(() -> confinement.call(() -> {
            inCall.countDown();
            release.await(); // a plugin call under way: ended below, whether interrupted or not
            return "first";
        }));
        assertThat(inCall.await(HANG_GUARD.toSeconds(), TimeUnit.SECONDS)).as("hang guard: the first call started").isTrue();
        CompletableFuture<Object> queued = new CompletableFuture<>();
        Thread queuedCaller = Thread.ofPlatform().daemon().start(() -> { // a daemon: it stays blocked should the test fail
            try {
                queued.complete(confinement.call(() -> "queued"));
            } catch (Throwable e) {
                queued.completeExceptionally(e);
            }
        });
        waitUntilWaiting(queuedCaller);
        Thread closer = Thread.ofPlatform().daemon().start(confinement::close);
        waitUntilWaiting(closer);
        closer.interrupt(); // the thread closing the Conduit is interrupted (an executor's shutdownNow)
        waitUntilItTookTheInterrupt(closer);
        release.countDown(); // the call under way ends, unless the close interrupted it
        HangGuard.join(closer, "the close");
        try {
            queued.get(HANG_GUARD.toSeconds(), TimeUnit.SECONDS); // made, or refused: either way it comes back
        } catch (ExecutionException refused) {
            // refused is fine: the caller goes on
        } catch (TimeoutException hung) {
            throw new AssertionError("the call queued behind the one under way never came back: " + queuedCaller.getState(), hung);
        }
        first.handle((r, e) -> r).get(HANG_GUARD.toSeconds(), TimeUnit.SECONDS);
    }

    /** Until {@code t}'s wait has thrown the interrupt and {@code t} waits again, or has ended. */
    private static void waitUntilItTookTheInterrupt(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + HANG_GUARD.toNanos();
        while (t.getState() != Thread.State.TERMINATED
                && (t.isInterrupted() || t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING)) {
            if (System.nanoTime() - deadline > 0) throw new AssertionError(t + " did not take its interrupt: " + t.getState());
            Thread.sleep(1);
        }
    }

    private static void waitUntilWaiting(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + HANG_GUARD.toNanos();
        while (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING) {
            if (System.nanoTime() - deadline > 0) throw new AssertionError(t + " did not come to wait: " + t.getState());
            Thread.sleep(1);
        }
    }
}
