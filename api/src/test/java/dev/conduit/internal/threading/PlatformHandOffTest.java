package dev.conduit.internal.threading;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A plugin's blocking call ({@code PluginContext.blockingCall}) as the runtime makes it: by a
 * platform thread itself; for a virtual thread, on a platform thread of the runtime's, as if made
 * by the caller: result, exceptions and interrupts. Nothing is timed: every wait is a hang guard.
 */
class PlatformHandOffTest {

    /** How long a call may take to come back: a hang guard, not a speed check. */
    private static final Duration GUARD = Duration.ofSeconds(60);
    /** Longer than any guard: a sleep that ends only by an interrupt. */
    private static final long LONG_MILLIS = Duration.ofMinutes(5).toMillis();

    /** Runs {@code body} on a fresh virtual thread and returns what it returned, within the guard. */
    private static <T> T onAVirtualThread(java.util.concurrent.Callable<T> body) throws Exception {
        CompletableFuture<T> outcome = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                outcome.complete(body.call());
            } catch (Throwable e) {
                outcome.completeExceptionally(e);
            }
        });
        return outcome.get(GUARD.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void aPlatformThreadMakesItsBlockingCallItself() {
        assertThat(PlatformHandOff.blockingCall(Thread::currentThread)).isSameAs(Thread.currentThread());
    }

    @Test
    void aVirtualThreadsBlockingCallIsMadeOnAPlatformThreadOfTheRuntimesAndGivesBackItsResult() throws Exception {
        Thread maker = onAVirtualThread(() -> PlatformHandOff.blockingCall(Thread::currentThread));
        assertThat(maker.isVirtual()).isFalse();
        assertThat(maker.getName()).startsWith("conduit-await-");
    }

    @Test
    void aVirtualThreadsBlockingCallThrowsWhatTheCallThrewUnchanged() throws Exception {
        IllegalStateException thrown = new IllegalStateException("the call's own");
        Throwable caught = onAVirtualThread(() -> {
            try {
                PlatformHandOff.blockingCall(() -> {
                    throw thrown;
                });
                return null;
            } catch (IllegalStateException e) {
                return e;
            }
        });
        assertThat(caught).isSameAs(thrown);
        StackOverflowError error = new StackOverflowError("an error");
        assertThat(onAVirtualThread(() -> {
            try {
                PlatformHandOff.blockingCall(() -> {
                    throw error;
                });
                return null;
            } catch (StackOverflowError e) {
                return e;
            }
        })).isSameAs(error);
    }

    /**
     * A checked exception that the call throws undeclared (a plugin in Kotlin, or with
     * {@code @SneakyThrows}) comes back unchanged too, as it does from a platform thread's call,
     * which the thread makes itself. Until 2026-12-07 it came back wrapped in an
     * {@code IllegalStateException}, which the runtime reads from a plugin's call as "closed under
     * the call": a confined plugin's checked exception was neither named as its fault nor told apart
     * from a close.
     */
    @Test
    void aVirtualThreadsBlockingCallThrowsACheckedExceptionThrownUndeclaredUnchanged() throws Exception {
        java.io.IOException thrown = new java.io.IOException("/dev/shm/conduit-memfd.sock: Connection reset by peer");
        java.util.function.Supplier<Object> sneaky = () -> {
            throw PlatformHandOffTest.<RuntimeException>sneaky(thrown);
        };
        Throwable onPlatform;
        try {
            PlatformHandOff.blockingCall(sneaky);
            onPlatform = null;
        } catch (Exception e) {
            onPlatform = e;
        }
        assertThat(onPlatform).as("a platform thread's own call").isSameAs(thrown);
        assertThat(onAVirtualThread(() -> {
            try {
                PlatformHandOff.blockingCall(sneaky);
                return null;
            } catch (Exception e) {
                return e;
            }
        })).isSameAs(thrown);
    }

    /**
     * A virtual thread's call, a plugin's blocking call or its transport's sleep, runs with the
     * caller's context class loader, as a platform thread's call, made by that thread itself, does:
     * the plugin's lookups through it (ServiceLoader.load, a logging bridge) see the application's
     * classes in a fat jar or an application server. The platform threads inherit nothing of the
     * threads that made them, which gave them the system class loader. Each call gives its thread
     * back the loader it had, so that an idle thread keeps no application's loader.
     */
    @Test
    void aVirtualThreadsCallRunsWithTheCallersContextClassLoaderAndLeavesItNotOnThePlatformThread() throws Exception {
        ClassLoader application = new ClassLoader(getClass().getClassLoader()) { };
        Object[] seen = onAVirtualThread(() -> {
            Thread.currentThread().setContextClassLoader(application);
            return new Object[] {
                    PlatformHandOff.blockingCall(() -> Thread.currentThread().getContextClassLoader()),
                    PlatformHandOff.call(() -> Thread.currentThread().getContextClassLoader())};
        });
        assertThat(seen[0]).as("the context class loader of a blocking call").isSameAs(application);
        assertThat(seen[1]).as("the context class loader of a handed-off call (an await's sleep)").isSameAs(application);
        assertThat(Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("conduit-await-"))
                .filter(t -> t.getContextClassLoader() == application).map(Thread::getName).toList())
                .as("platform threads that kept the caller's loader after its call").isEmpty();
    }

    /**
     * An interrupt of the virtual thread while its call runs on the platform thread reaches the
     * call, as it would on the caller: a sleep in it ends with {@code InterruptedException}, and the
     * caller's interrupt status is kept. Without the interrupt passed on, the sleep went on for its
     * 5 minutes (this test's guard ran out).
     */
    @Test
    void anInterruptOfTheCallerDuringTheCallReachesItAndIsKept() throws Exception {
        CompletableFuture<Object[]> outcome = new CompletableFuture<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                String how = PlatformHandOff.blockingCall(() -> {
                    try {
                        Thread.sleep(LONG_MILLIS);
                        return "slept";
                    } catch (InterruptedException e) {
                        return "interrupted";
                    }
                });
                outcome.complete(new Object[] {how, Thread.interrupted()});
            } catch (Throwable e) {
                outcome.completeExceptionally(e);
            }
        });
        waitUntil(() -> Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().startsWith("conduit-await-")
                && Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getMethodName().equals("sleep"))));
        caller.interrupt();
        Object[] o = outcome.get(GUARD.toSeconds(), TimeUnit.SECONDS);
        assertThat(o[0]).as("the call's sleep").isEqualTo("interrupted");
        assertThat(o[1]).as("the caller's interrupt status").isEqualTo(true);
    }

    /**
     * A virtual thread interrupted before its call makes it with the interrupt status set, as it
     * would itself, and keeps its own; the platform thread's next call, for a caller not
     * interrupted, does not see that interrupt, nor one the call set on its thread itself.
     */
    @Test
    void anInterruptSetBeforeTheCallReachesItAndNotTheNextCall() throws Exception {
        Object[] o = onAVirtualThread(() -> {
            Thread.currentThread().interrupt();
            boolean seen = PlatformHandOff.blockingCall(() -> {
                boolean interrupted = Thread.currentThread().isInterrupted();
                Thread.currentThread().interrupt(); // as a call that catches InterruptedException and sets it again
                return interrupted;
            });
            boolean kept = Thread.interrupted();
            boolean seenByTheNext = PlatformHandOff.blockingCall(() -> Thread.currentThread().isInterrupted());
            return new Object[] {seen, kept, seenByTheNext};
        });
        assertThat(o[0]).as("the call saw the caller's interrupt").isEqualTo(true);
        assertThat(o[1]).as("the caller's interrupt status").isEqualTo(true);
        assertThat(o[2]).as("the next call saw an interrupt").isEqualTo(false);
    }

    /**
     * A call that ends at once, before its caller waits for it, still sees an interrupt set before
     * it: the wait collects a finished call without a look at the caller's status, so the interrupt
     * is passed on before the call is submitted. Many calls, for the race is a narrow one.
     */
    @Test
    void anInterruptSetBeforeACallThatEndsAtOnceReachesItEveryTime() throws Exception {
        Object[] o = onAVirtualThread(() -> {
            int missed = 0;
            for (int i = 0; i < CALLS_THAT_END_AT_ONCE; i++) {
                Thread.currentThread().interrupt();
                if (!PlatformHandOff.blockingCall(() -> Thread.currentThread().isInterrupted())) missed++;
                Thread.interrupted();
            }
            return new Object[] {missed};
        });
        assertThat(o[0]).as("calls of " + CALLS_THAT_END_AT_ONCE + " that did not see the caller's interrupt").isEqualTo(0);
    }

    private static final int CALLS_THAT_END_AT_ONCE = 20_000;

    /**
     * A virtual thread's blocking call, and a worker's await handed off, when no platform thread
     * can be started (the process's or its cgroup's limit of threads): a ConduitException names
     * the call, the limit and the remedy, the JVM's error its cause, and the call is not made.
     * The JVM's bare OutOfMemoryError came out.
     */
    @Test
    void aCallForWhichNoPlatformThreadCanStartSaysWhichLimitToRaise() throws Exception {
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached (injected by the test)");
        java.util.concurrent.ExecutorService none = java.util.concurrent.Executors.newCachedThreadPool(task -> {
            throw noThread; // what starting the pool's thread throws at the limit
        });
        try {
            java.util.concurrent.atomic.AtomicBoolean made = new java.util.concurrent.atomic.AtomicBoolean();
            Throwable[] thrown = onAVirtualThread(() -> new Throwable[] {
                    org.assertj.core.api.Assertions.catchThrowable(() -> PlatformHandOff.blockingCall(() -> made.getAndSet(true), none)),
                    org.assertj.core.api.Assertions.catchThrowable(() -> PlatformHandOff.call(() -> made.getAndSet(true), none))});
            assertThat(thrown).allSatisfy(e -> assertThat(e).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageContaining("conduit-await-").hasMessageContaining("blocking call")
                    .hasMessageContaining("unable to create native thread").hasMessageContaining("ulimit -u")
                    .hasMessageContaining("pids.max").hasCause(noThread));
            assertThat(made).as("the call was made").isFalse();
        } finally {
            none.shutdownNow();
        }
    }

    /** Throws {@code e}, checked or not, where the compiler would not let a checked one through: as Kotlin does. */
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
        throw (E) e;
    }

    private static void waitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) throw new AssertionError("not within the hang guard of " + GUARD);
            Thread.sleep(10);
        }
    }
}
