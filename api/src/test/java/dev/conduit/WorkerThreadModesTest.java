package dev.conduit;

import dev.conduit.spi.ConcurrentUseException;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.RecordingTransport;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.conduit.spi.ThreadMode.MULTI;
import static dev.conduit.spi.ThreadMode.SERIALIZED;
import static dev.conduit.spi.ThreadMode.SINGLE;
import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The runtime enforces a worker's thread mode for every plugin (DESIGN §5). Overlaps are made
 * deterministic with latches: no assertion depends on timing. Latch waits are bounded only so that
 * a regression fails instead of hanging the build.
 */
class WorkerThreadModesTest {

    /** Bounds every wait, so that a broken guard fails the test instead of hanging it. */
    private static final long WAIT_SECONDS = 30;

    private final ExecutorService threads = Executors.newCachedThreadPool(Thread.ofPlatform().name("test-caller-", 0).factory());
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : toClose.reversed()) c.close();
        threads.shutdownNow();
    }

    private Conduit conduit(TestPlugin... plugins) {
        return conduit(false, plugins);
    }

    private Conduit conduit(boolean confine, TestPlugin... plugins) {
        ConduitBuilder b = isolated().threadConfinement(confine);
        for (TestPlugin p : plugins) b.addPlugin(p);
        Conduit c = b.build();
        toClose.add(c);
        return c;
    }

    private <T> T onAnotherThread(Callable<T> call) throws Exception {
        try {
            return threads.submit(call).get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception ex) throw ex;
            throw e;
        }
    }

    private static void await(CountDownLatch latch) throws InterruptedException {
        assertThat(latch.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("latch released").isTrue();
    }

    @Test
    void singleRefusesEveryOtherThreadWithWrongThreadException() throws Exception {
        RecordingTransport transport = new RecordingTransport();
        Conduit conduit = conduit(TestPlugin.named("p").threadModes(SINGLE).transports(c -> transport));
        Worker worker = conduit.newWorker(SINGLE);
        assertThat(worker.threadMode()).isEqualTo(SINGLE);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.OWNER_CHECK);
        assertThat(worker.progress()).isEqualTo(1);

        String owner = Thread.currentThread().getName();
        assertThatThrownBy(() -> onAnotherThread(worker::progress))
                .isInstanceOf(WrongThreadException.class)
                .hasMessageContaining("SINGLE")
                .hasMessageContaining("'" + owner + "'")
                .hasMessageContaining("test-caller-");
        assertThatThrownBy(() -> onAnotherThread(() -> {
            worker.close();
            return null;
        })).isInstanceOf(WrongThreadException.class);
        assertThat(transport.progressCalls()).as("refused calls never reach the plugin").isEqualTo(1);
        assertThat(transport.closes()).isZero();

        assertThat(worker.progress()).isEqualTo(1);
        worker.close();
        assertThat(transport.closes()).isEqualTo(1);
    }

    @Test
    void singleOverAThreadConfinedPluginOpensItsTransportOnTheOwnerThread() {
        TestPlugin p = TestPlugin.named("p").threadModes(SINGLE);
        Worker worker = conduit(p).newWorker(SINGLE);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.OWNER_CHECK);
        assertThat(p.openThreads).containsExactly(Thread.currentThread());
        assertThat(p.transportContexts.getFirst().threadMode()).isEqualTo(SINGLE);
    }

    @Test
    void serializedDetectsAnOverlappingCallAndTheLoserDoesNothing() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        RecordingTransport transport = new RecordingTransport().onProgress(() -> {
            inside.countDown();
            try {
                release.await(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Worker worker = conduit(TestPlugin.named("p").threadModes(SERIALIZED).transports(c -> transport)).newWorker(SERIALIZED);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.OVERLAP_CHECK);

        Future<Integer> holder = threads.submit(worker::progress);
        await(inside);
        try {
            assertThatThrownBy(worker::progress)
                    .isInstanceOf(ConcurrentUseException.class)
                    .hasMessageContaining("SERIALIZED")
                    .hasMessageContaining("'" + Thread.currentThread().getName() + "'")
                    .hasMessageContaining("test-caller-");
            assertThat(transport.progressCalls()).as("the overlapping call did not reach the plugin").isEqualTo(1);
        } finally {
            release.countDown();
        }
        assertThat(holder.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(transport.maxInside()).isEqualTo(1);

        transport.onProgress(() -> { });
        assertThat(worker.progress()).as("usable again once the other thread left").isEqualTo(1);
    }

    /**
     * A call that overlaps another thread's await on a SERIALIZED worker says that the thread inside
     * is in await() and that signal() makes it return: it said only "serialize the calls", while the
     * thread inside may keep the worker for its whole timeout (a close from another thread was
     * refused so, and the await slept on). Once signalled, the await returns and the call goes
     * through.
     */
    @Test
    void aCallThatOverlapsAnotherThreadsAwaitSaysSoAndNamesSignal() throws Exception {
        CountDownLatch sleeping = new CountDownLatch(1);
        RecordingTransport idle = new RecordingTransport() {
            @Override
            public int progress() {
                super.progress();
                return 0; // nothing to do: the await sleeps on
            }
        };
        // Without a WAKEUP transport the await parks in slices and progresses the transport between them: then it is inside.
        idle.onProgress(sleeping::countDown);
        Worker worker = conduit(TestPlugin.named("p").threadModes(SERIALIZED).transports(c -> idle)).newWorker(SERIALIZED);
        Future<Boolean> sleeper = threads.submit(() -> worker.await(java.time.Duration.ofSeconds(WAIT_SECONDS)));
        await(sleeping);
        assertThatThrownBy(worker::close)
                .isInstanceOf(ConcurrentUseException.class)
                .hasMessageContaining("was inside")
                .hasMessageMatching("(?s).*Thread 'test-caller-\\d+' is in await\\(\\).*")
                .hasMessageContaining("call signal() (any thread may, at any time) to make it return");
        worker.signal();
        assertThat(sleeper.get(WAIT_SECONDS, TimeUnit.SECONDS)).as("the await, signalled").isTrue();
        worker.close();
        assertThat(idle.closes()).isEqualTo(1);
    }

    @Test
    void serializedAllowsSequentialUseFromDifferentThreads() throws Exception {
        RecordingTransport transport = new RecordingTransport().recordThreads();
        Worker worker = conduit(TestPlugin.named("p").threadModes(SERIALIZED).transports(c -> transport)).newWorker(SERIALIZED);
        for (int i = 0; i < 5; i++) {
            assertThat(onAnotherThread(worker::progress)).isEqualTo(1);
            assertThat(worker.progress()).isEqualTo(1);
        }
        assertThat(transport.callThreads.stream().distinct().count()).isGreaterThan(1);
        assertThat(transport.overlaps()).isZero();
        onAnotherThread(() -> {
            worker.close();
            return null;
        });
        assertThat(transport.closes()).isEqualTo(1);
    }

    @Test
    void serializedOverAMultiPluginStillChecksOverlap() {
        Worker worker = conduit(TestPlugin.named("p").threadModes(MULTI)).newWorker(SERIALIZED);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.OVERLAP_CHECK);
    }

    @Test
    void multiOverASerializedPluginNeverLetsTwoThreadsIn() throws Exception {
        RecordingTransport transport = new RecordingTransport().onProgress(() -> {
            for (int i = 0; i < 4; i++) Thread.onSpinWait(); // widen the window a missing lock would leave open
        });
        Worker worker = conduit(TestPlugin.named("p").threadModes(SINGLE, SERIALIZED).transports(c -> transport)).newWorker(MULTI);
        assertThat(worker.threadMode()).isEqualTo(MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);

        int threadCount = 8;
        int callsPerThread = 125_000; // 10^6 calls in all
        CyclicBarrier start = new CyclicBarrier(threadCount);
        List<Future<Long>> results = new ArrayList<>();
        for (int t = 0; t < threadCount; t++) {
            results.add(threads.submit(() -> {
                start.await();
                long events = 0;
                for (int i = 0; i < callsPerThread; i++) events += worker.progress();
                return events;
            }));
        }
        // The guard runs from the last call that returned, never over the million: a loaded machine's calls come
        // slower, a lock that lost a wake-up stops them.
        long seen = -1;
        long deadline = 0;
        while (!results.stream().allMatch(Future::isDone)) {
            long calls = transport.progressCalls();
            if (calls != seen) {
                seen = calls;
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
            } else if (System.nanoTime() > deadline) {
                throw new AssertionError("no progress() call of the " + threadCount + " threads returned for the hang guard of "
                        + WAIT_SECONDS + " s, at " + seen + " of 1000000 calls");
            }
            Thread.sleep(10);
        }
        long events = 0;
        for (Future<Long> f : results) events += f.get();

        assertThat(events).isEqualTo(1_000_000L);
        assertThat(transport.progressCalls()).isEqualTo(1_000_000L);
        assertThat(transport.overlaps()).as("calls that found another thread inside the plugin").isZero();
        assertThat(transport.maxInside()).isEqualTo(1);
    }

    @Test
    void multiOverMultiPluginsPassesCallsThroughConcurrently() throws Exception {
        CountDownLatch bothInside = new CountDownLatch(2);
        RecordingTransport transport = new RecordingTransport().onProgress(() -> {
            bothInside.countDown();
            try {
                bothInside.await(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Worker worker = conduit(TestPlugin.named("p").threadModes(MULTI).transports(c -> transport),
                TestPlugin.named("q").threadModes(SERIALIZED, MULTI)).newWorker(MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);

        Future<Integer> a = threads.submit(worker::progress);
        Future<Integer> b = threads.submit(worker::progress);
        a.get(WAIT_SECONDS, TimeUnit.SECONDS);
        b.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(bothInside.getCount()).as("both calls were inside the plugin at once").isZero();
        assertThat(transport.maxInside()).isEqualTo(2);
    }

    @Test
    void multiOverAMixOfMultiAndSerializedPluginsUsesTheRuntimeLock() {
        Worker worker = conduit(TestPlugin.named("p").threadModes(MULTI), TestPlugin.named("q").threadModes(SERIALIZED))
                .newWorker(MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
    }

    @ParameterizedTest
    @EnumSource(value = ThreadMode.class, names = {"SERIALIZED", "MULTI"})
    void aSharedWorkerOverASingleOnlyPluginIsRefusedNamingPluginModesAndTheOption(ThreadMode mode) {
        TestPlugin confined = TestPlugin.named("confined").threadModes(SINGLE);
        Conduit conduit = conduit(confined, TestPlugin.named("other"));
        assertThatThrownBy(() -> conduit.newWorker(mode))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("plugin 'confined'")
                .hasMessageContaining("[SINGLE]")
                .hasMessageContaining(mode.name())
                .hasMessageContaining("thread.confine")
                .hasMessageContaining("CONDUIT_THREAD_CONFINE");
        assertThat(confined.opened).as("nothing was opened").isEmpty();
    }

    /**
     * Conduit.threadPolicy(mode): what newWorker(mode).threadPolicy() would say, without opening a
     * transport; and where newWorker would refuse the mode, the same refusal with the same message.
     * Over every kind of plugin set: all MULTI, a SERIALIZED one, a mix, a SINGLE one with and
     * without thread confinement.
     */
    @ParameterizedTest
    @EnumSource(ThreadMode.class)
    void theConduitSaysHowAWorkerWouldBeGuardedWithoutMakingOne(ThreadMode mode) {
        for (boolean confine : new boolean[] {false, true}) {
            List<List<TestPlugin>> pluginSets = List.of(
                    List.of(TestPlugin.named("multi")),
                    List.of(TestPlugin.named("serialized").threadModes(SINGLE, SERIALIZED)),
                    List.of(TestPlugin.named("multi"), TestPlugin.named("serialized").threadModes(SINGLE, SERIALIZED)),
                    List.of(TestPlugin.named("confined").threadModes(SINGLE)));
            for (List<TestPlugin> plugins : pluginSets) {
                Conduit conduit = conduit(confine, plugins.toArray(TestPlugin[]::new));
                String what = plugins.stream().map(TestPlugin::name).toList() + (confine ? " with thread.confine" : "");
                Throwable refusal = null;
                ThreadPolicy said = null;
                try {
                    said = conduit.threadPolicy(mode);
                } catch (ConduitException e) {
                    refusal = e;
                }
                assertThat(plugins).as("%s: threadPolicy opened no transport", what).allSatisfy(p -> assertThat(p.opened).isEmpty());
                if (refusal == null) {
                    Worker worker = conduit.newWorker(mode);
                    assertThat(worker.threadPolicy()).as(what).isEqualTo(said);
                    worker.close();
                } else {
                    String message = refusal.getMessage();
                    assertThatThrownBy(() -> conduit.newWorker(mode)).as(what).isInstanceOf(ConduitException.class).hasMessage(message);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = ThreadMode.class, names = {"SERIALIZED", "MULTI"})
    void withThreadConfinementEveryCallToASingleOnlyPluginRunsOnOneRuntimeThread(ThreadMode mode) throws Exception {
        RecordingTransport transport = new RecordingTransport().recordThreads();
        TestPlugin confined = TestPlugin.named("confined").threadModes(SINGLE).transports(c -> transport);
        Worker worker = conduit(true, confined).newWorker(mode);
        assertThat(worker.threadMode()).isEqualTo(mode);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);

        worker.progress();
        onAnotherThread(worker::progress);
        onAnotherThread(worker::progress);
        worker.close();

        List<Thread> calls = new ArrayList<>(confined.openThreads);
        calls.addAll(transport.callThreads);
        assertThat(calls).hasSize(1 + 3 + 1); // openTransport, three progress calls, close
        assertThat(calls.stream().distinct().toList()).singleElement().satisfies(t -> {
            assertThat(t).isNotEqualTo(Thread.currentThread());
            assertThat(t.getName()).contains("confined");
        });
        assertThat(transport.closes()).isEqualTo(1);
    }

    @Test
    void threadConfinementLeavesPluginsThatSupportTheModeAlone() {
        RecordingTransport shared = new RecordingTransport().recordThreads();
        TestPlugin serial = TestPlugin.named("serial").threadModes(SERIALIZED).transports(c -> shared);
        Worker worker = conduit(true, serial).newWorker(SERIALIZED);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.OVERLAP_CHECK);
        worker.progress();
        assertThat(serial.openThreads).containsExactly(Thread.currentThread());
        assertThat(shared.callThreads).containsExactly(Thread.currentThread());
    }

    /**
     * A transport is told the mode it is called in, one it serves (TransportContext.threadMode,
     * which said "the transport is only called in a mode it declares"): a plugin that declares only
     * SERIALIZED, under a MULTI worker's runtime lock, is called by one thread at a time, and a
     * plugin that declares only SINGLE, confined (thread.confine), by its one thread. Both were told
     * the worker's mode, MULTI or SERIALIZED, which they do not serve: a plugin that picks its
     * internals by it, as the javadoc invites, or checks it against what it declares, met a mode
     * it had said it could not serve.
     */
    @Test
    void aTransportIsToldTheModeItIsCalledInWhichItDeclares() {
        TestPlugin serial = TestPlugin.named("serial").threadModes(SINGLE, SERIALIZED);
        try (Worker w = conduit(serial).newWorker(MULTI)) {
            assertThat(w.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
            assertThat(serial.transportContexts.getLast().threadMode()).as("under the runtime lock").isEqualTo(SERIALIZED);
        }
        TestPlugin confined = TestPlugin.named("confined").threadModes(SINGLE);
        Conduit confining = conduit(true, confined);
        for (ThreadMode mode : List.of(SERIALIZED, MULTI)) {
            try (Worker w = confining.newWorker(mode)) {
                assertThat(w.threadPolicy()).isEqualTo(ThreadPolicy.CONFINED_THREAD);
                assertThat(confined.transportContexts.getLast().threadMode()).as("confined, in a " + mode + " worker").isEqualTo(SINGLE);
            }
        }
    }

    @Test
    void transportsAreToldTheModeInForce() {
        TestPlugin p = TestPlugin.named("p").threadModes(MULTI);
        Conduit conduit = conduit(p);
        try (Worker w = conduit.newWorker(SERIALIZED)) {
            assertThat(p.transportContexts.getLast().threadMode()).isEqualTo(SERIALIZED);
        }
        try (Worker w = conduit.newWorker(MULTI)) {
            assertThat(p.transportContexts.getLast().threadMode()).isEqualTo(MULTI);
        }
    }
}
