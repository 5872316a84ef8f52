package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An interrupt ends {@code worker.await} over the shared-memory transports, as it ends a
 * {@code Selector.select} or a park, and the interrupt status is kept: the transport sleeps in a
 * futex wait, which an interrupt does not reach. Until 2026-12-01 an interrupted thread slept the
 * whole timeout there (and returned {@code false}), while without a transport that sleeps it
 * returned at once. The liveness interval is an hour, so that no liveness check ends the sleep;
 * nothing is timed: an await that ran out returns {@code false}.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class AwaitInterruptTest {

    private static final Duration LONG = Duration.ofSeconds(20);

    private record Outcome(boolean woke, boolean stillInterrupted) {
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anAwaitOfAnInterruptedThreadReturnsAtOnceKeepingTheInterrupt(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h")) {
            CompletableFuture<Outcome> outcome = new CompletableFuture<>();
            Thread t = Thread.ofPlatform().start(() -> {
                try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                    Thread.currentThread().interrupt();
                    boolean woke = worker.await(LONG);
                    outcome.complete(new Outcome(woke, Thread.interrupted()));
                } catch (Throwable e) {
                    outcome.completeExceptionally(e);
                }
            });
            Outcome o = outcome.get(120, TimeUnit.SECONDS);
            t.join();
            assertThat(o.woke()).as("await of an interrupted thread returned true (false: it slept the whole %s)", LONG).isTrue();
            assertThat(o.stillInterrupted()).as("the interrupt status is kept").isTrue();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anInterruptWakesAThreadAsleepInAwait(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h")) {
            CompletableFuture<Outcome> outcome = new CompletableFuture<>();
            Thread t = Thread.ofPlatform().start(() -> {
                try (Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                    boolean woke = worker.await(LONG);
                    outcome.complete(new Outcome(woke, Thread.interrupted()));
                } catch (Throwable e) {
                    outcome.completeExceptionally(e);
                }
            });
            // Interrupt it once it sleeps in the futex wait, not before.
            Setup.waitUntil(() -> Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getMethodName().contains("futexWait")), Duration.ofSeconds(60),
                    () -> "the thread asleep in the futex wait: " + Arrays.toString(t.getStackTrace()));
            t.interrupt();
            Outcome o = outcome.get(120, TimeUnit.SECONDS);
            t.join();
            assertThat(o.woke()).as("await interrupted in its sleep returned true (false: it slept the whole %s)", LONG).isTrue();
            assertThat(o.stillInterrupted()).as("the interrupt status is kept").isTrue();
        }
    }
}
