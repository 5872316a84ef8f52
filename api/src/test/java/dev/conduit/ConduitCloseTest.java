package dev.conduit;

import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.HangGuard;
import dev.conduit.testing.RecordingTransport;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** Closing a {@code Conduit} closes what it opened, newest first, and collects every failure. */
class ConduitCloseTest {

    /** A plugin whose n-th transport records "name#n" into {@code closed} when closed, optionally throwing. */
    private static TestPlugin plugin(String name, List<String> closed, boolean throwOnClose) {
        AtomicInteger n = new AtomicInteger();
        return TestPlugin.named(name).transports(c -> {
            String id = name + "#" + n.incrementAndGet();
            return new RecordingTransport().onClose(() -> {
                closed.add(id);
                if (throwOnClose) throw new IllegalStateException("cannot close " + id);
            });
        });
    }

    /**
     * A thread that creates a SINGLE worker of {@code conduit} and loops on its await until a call
     * throws, which goes to {@code ownerSaw}; returned once the worker exists.
     */
    private static Thread ownerAwaitingInALoop(Conduit conduit, AtomicReference<RuntimeException> ownerSaw) throws InterruptedException {
        CountDownLatch using = new CountDownLatch(1);
        Thread owner = Thread.ofPlatform().name("owner").start(() -> {
            Worker worker = conduit.newWorker(ThreadMode.SINGLE);
            using.countDown();
            try {
                while (true) worker.await(Duration.ofHours(1));
            } catch (RuntimeException e) {
                ownerSaw.set(e);
            }
        });
        using.await();
        return owner;
    }

    private static Conduit conduitRecordingTheThreadThatClosesATransport(AtomicReference<Thread> closedOn) {
        return isolated().addPlugin(TestPlugin.named("a").transports(c ->
                new RecordingTransport().onClose(() -> closedOn.set(Thread.currentThread())))).build();
    }

    /** A SERIALIZED worker whose {@code user} thread is inside its progress() until {@code leave} is counted down. */
    private record InProgress(RecordingTransport transport, Conduit conduit, Worker worker, Thread user, CountDownLatch leave) {
        static InProgress start() throws InterruptedException {
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch leave = new CountDownLatch(1);
            RecordingTransport transport = new RecordingTransport().onProgress(() -> {
                inside.countDown();
                try {
                    leave.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            Conduit conduit = isolated().addPlugin(TestPlugin.named("a").transports(c -> transport)).build();
            Worker worker = conduit.newWorker(ThreadMode.SERIALIZED);
            Thread user = Thread.ofPlatform().start(worker::progress);
            inside.await();
            return new InProgress(transport, conduit, worker, user, leave);
        }
    }

    @Test
    void closingTheConduitClosesWorkersNewestFirstAndTheirTransportsInReverseOrder() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        Conduit conduit = isolated().addPlugin(plugin("a", closed, false).priority(2)).addPlugin(plugin("b", closed, false).priority(1))
                .build();
        conduit.newWorker(ThreadMode.SINGLE);
        conduit.newWorker(ThreadMode.SERIALIZED);
        conduit.newWorker(ThreadMode.MULTI);
        conduit.close();
        assertThat(closed).containsExactly("b#3", "a#3", "b#2", "a#2", "b#1", "a#1");
    }

    /**
     * Conduit.close(): "Closes every worker and pool opened through this Conduit, newest first ...,
     * then unmaps every imported region": pools and workers in one order, newest first, and the
     * imports after them all. Each transport's close notes how many pools were closed and how many
     * mappings unmapped by then.
     */
    @Test
    void closingTheConduitClosesPoolsAndWorkersTogetherNewestFirstThenUnmapsImportedRegions() {
        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger n = new AtomicInteger();
        TestPlugin transports = TestPlugin.named("a").transports(c -> {
            String id = "worker#" + n.incrementAndGet();
            return new RecordingTransport().onClose(() -> closed.add(id + ": pools closed " + memory.providersClosed.get()
                    + ", mappings unmapped " + memory.unmaps.get()));
        });
        Conduit conduit = isolated().addPlugin(transports).addPlugin(memory).build();
        conduit.newWorker(ThreadMode.SINGLE);
        Pool first = conduit.pool("inproc");
        conduit.newWorker(ThreadMode.SINGLE);
        Pool second = conduit.pool("inproc");
        ImportedRegion imported = conduit.importRegion(first.allocate(64).exportHandle());
        second.allocate(64);

        conduit.close();

        assertThat(closed).containsExactly("worker#2: pools closed 1, mappings unmapped 0", "worker#1: pools closed 2, mappings unmapped 0");
        assertThat(memory.unmaps).as("the import, last").hasValue(1);
        assertThat(imported.isOpen()).isFalse();
    }

    @Test
    void closingTheConduitFromAnotherThreadClosesASingleThreadedWorkerToo() throws Exception {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        Conduit conduit = isolated().addPlugin(plugin("a", closed, false)).build();
        Thread owner = Thread.ofPlatform().start(() -> conduit.newWorker(ThreadMode.SINGLE).progress());
        owner.join();
        conduit.close();
        assertThat(closed).containsExactly("a#1");
    }

    /**
     * ConduitPlugin.threadModes: the one close of a thread-confined (SINGLE-only) plugin's transport
     * on another thread than its owner's is Conduit.close()'s, once that owner has ended. It comes
     * after the owner's last call, and from the closing thread.
     */
    @Test
    void aThreadConfinedPluginsTransportIsClosedOnTheClosingThreadOnceItsOwnerHasEnded() throws Exception {
        AtomicReference<Thread> closedOn = new AtomicReference<>();
        Conduit conduit = isolated().addPlugin(TestPlugin.named("confined").threadModes(ThreadMode.SINGLE).transports(c ->
                new RecordingTransport().onClose(() -> closedOn.set(Thread.currentThread())))).build();
        Thread owner = Thread.ofPlatform().start(() -> conduit.newWorker(ThreadMode.SINGLE).progress());
        owner.join();
        conduit.close();
        assertThat(closedOn.get()).isSameAs(Thread.currentThread());
    }

    /**
     * The common shutdown: a thread loops on its SINGLE worker while another closes the Conduit.
     * The close asks, and the owner's next call closes the worker on the owner's thread and fails
     * naming the cause. (It used to close the worker's transports from the closing thread while
     * the owner was inside a call on them.)
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void closingTheConduitWhileTheOwnerOfASingleWorkerUsesItHasTheOwnerCloseIt() throws Exception {
        AtomicReference<Thread> closedOn = new AtomicReference<>();
        Conduit conduit = conduitRecordingTheThreadThatClosesATransport(closedOn);
        AtomicReference<RuntimeException> ownerSaw = new AtomicReference<>();
        Thread owner = ownerAwaitingInALoop(conduit, ownerSaw);

        conduit.close();

        owner.join();
        assertThat(closedOn.get()).as("the thread that closed the transport").isSameAs(owner);
        assertThat(ownerSaw.get()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("its Conduit was closed (Conduit.close() on thread '" + Thread.currentThread().getName() + "')")
                .hasMessageContaining("open another Conduit and make a worker of it to go on");
    }

    /**
     * An owner that lives on but never calls its SINGLE worker again does not keep the Conduit
     * open: after the wait, the closing thread closes the worker itself (with a WARNING).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aSingleWorkerWhoseLiveOwnerNeverCallsAgainIsClosedByTheClosingThreadAfterTheWait() throws Exception {
        AtomicReference<Thread> closedOn = new AtomicReference<>();
        Conduit conduit = conduitRecordingTheThreadThatClosesATransport(closedOn);
        CountDownLatch created = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread owner = Thread.ofPlatform().start(() -> {
            conduit.newWorker(ThreadMode.SINGLE);
            created.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        created.await();

        conduit.close();

        assertThat(closedOn.get()).isSameAs(Thread.currentThread());
        release.countDown();
        owner.join();
    }

    /**
     * A SERIALIZED worker busy on another thread when the Conduit closes is closed once that call
     * returns. It used to fail the close with ConcurrentUseException and stay open, untracked.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aSerializedWorkerInUseWhenTheConduitClosesIsClosedOnceTheCallReturns() throws Exception {
        InProgress busy = InProgress.start();
        RecordingTransport transport = busy.transport();
        Conduit conduit = busy.conduit();
        Worker worker = busy.worker();
        Thread user = busy.user();
        CountDownLatch leave = busy.leave();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = Thread.ofPlatform().start(() -> {
            try {
                conduit.close();
            } catch (Throwable t) {
                closeFailed.set(t);
            }
        });
        Thread.sleep(50); // not a measurement: the closer is waiting for the call meanwhile
        assertThat(transport.closes()).as("closed under a call under way").isZero();
        leave.countDown();
        user.join();
        closer.join();

        assertThat(closeFailed.get()).isNull();
        assertThat(transport.closes()).isEqualTo(1);
        assertThatThrownBy(worker::progress).isInstanceOf(IllegalStateException.class).hasMessageContaining("its Conduit was closed");
    }

    /**
     * A worker whose transport's signal throws a checked exception it does not declare (a plugin in
     * Kotlin whose wake writes to a pipe) does not end the asking of the other workers. It used to:
     * the loop that asks each worker caught RuntimeException and Error only, so the workers after
     * it were never asked, and one busy on another thread was closed without asking, which a
     * SERIALIZED worker in use refuses: it stayed open for good, its transport with it, and the
     * IOException came out of {@code Conduit.close()} itself instead of its collected failure.
     */
    @Test
    void aWorkerWhoseSignalThrowsACheckedExceptionDoesNotKeepTheConduitsCloseFromAskingTheNext() throws Exception {
        java.io.IOException brokenPipe = new java.io.IOException("Broken pipe");
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch leave = new CountDownLatch(1);
        RecordingTransport failingWake = new RecordingTransport() {
            @Override
            public void signal() {
                throw PluginThrowingCheckedTest.sneaky(brokenPipe);
            }
        };
        AtomicInteger busySignals = new AtomicInteger();
        RecordingTransport busy = new RecordingTransport() {
            @Override
            public void signal() {
                busySignals.incrementAndGet();
            }
        }.onProgress(() -> {
            inside.countDown();
            try {
                leave.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        AtomicInteger opened = new AtomicInteger();
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").capabilities(Capability.AM, Capability.WAKEUP)
                .transports(c -> opened.incrementAndGet() == 1 ? failingWake : busy)).build();
        conduit.newWorker(ThreadMode.SERIALIZED); // the oldest, asked first
        Worker busyWorker = conduit.newWorker(ThreadMode.SERIALIZED);
        Thread user = Thread.ofPlatform().start(busyWorker::progress);
        inside.await();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = Thread.ofPlatform().start(() -> {
            try {
                conduit.close();
            } catch (Throwable t) {
                closeFailed.set(t);
            }
        });
        try {
            HangGuard.until(() -> !closer.isAlive() || LockSupport.getBlocker(closer) == busyWorker,
                    "the close, waiting for the busy worker's call or done");
        } finally {
            leave.countDown();
        }
        HangGuard.join(user, "the busy worker's call");
        HangGuard.join(closer, "the Conduit's close");

        assertThat(busySignals.get()).as("signals of the busy worker, asked to close").isPositive();
        assertThat(busy.closes()).as("closes of the busy worker's transport").isEqualTo(1);
        assertThat(failingWake.closes()).as("closes of the failing wake's transport").isEqualTo(1);
        assertThat(closeFailed.get()).isInstanceOf(ConduitException.class).hasMessageContaining("closing Conduit failed");
        assertThat(closeFailed.get().getSuppressed()).containsExactly(brokenPipe);
        assertThatThrownBy(busyWorker::progress).isInstanceOf(IllegalStateException.class).hasMessageContaining("its Conduit was closed");
    }

    /**
     * {@code signal()} may be called from any thread at any time, also while the worker closes:
     * the close waits for a signal under way before its transports go, so that a wake never
     * reaches memory or a descriptor the close released (a descriptor number may be reused at
     * once). It used to close the transport under the signal.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aCloseWaitsForASignalUnderWayBeforeItsTransportsGo() throws Exception {
        CountDownLatch signalling = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").capabilities(Capability.AM, Capability.WAKEUP).transports(c ->
                new RecordingTransport() {
                    @Override
                    public void signal() {
                        signalling.countDown();
                        try {
                            release.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        order.add("signal returned");
                    }
                }.onClose(() -> order.add("transport closed")))).build();
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Thread signaller = Thread.ofPlatform().start(worker::signal);
        signalling.await();
        Thread releaser = Thread.ofPlatform().start(() -> {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // not a measurement: the close is waiting meanwhile
            release.countDown();
        });

        worker.close();

        signaller.join();
        releaser.join();
        assertThat(order).containsExactly("signal returned", "transport closed");
        worker.signal(); // after the close: nothing to wake, no error
        conduit.close();
    }

    /**
     * A thread that keeps calling a SERIALIZED worker while the Conduit closes sees the close as
     * an IllegalStateException naming it, also when the closing thread is the one inside (it found
     * the worker free and closes it): never as the ConcurrentUseException of an overlap it did not
     * make. The user pauses between calls, so that the closing thread mostly finds the worker
     * free, and the transport takes a while to close, so that the user calls meanwhile.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aThreadCallingASerializedWorkerThroughTheCloseSeesItAsTheClose() throws Exception {
        for (int round = 0; round < 10; round++) {
            RecordingTransport transport = new RecordingTransport().onClose(() -> LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)));
            Conduit conduit = isolated().addPlugin(TestPlugin.named("a").transports(c -> transport)).build();
            Worker worker = conduit.newWorker(ThreadMode.SERIALIZED);
            AtomicReference<RuntimeException> userSaw = new AtomicReference<>();
            CountDownLatch calling = new CountDownLatch(1);
            Thread user = Thread.ofPlatform().start(() -> {
                try {
                    while (true) {
                        worker.progress();
                        calling.countDown();
                        LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(200));
                    }
                } catch (RuntimeException e) {
                    userSaw.set(e);
                }
            });
            calling.await();

            conduit.close();

            user.join();
            assertThat(userSaw.get()).as("round " + round).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("its Conduit was closed");
            assertThat(transport.closes()).isEqualTo(1);
        }
    }

    /**
     * A MULTI worker under the runtime lock, with a thread looping on await: the close is served
     * as that await returns, not left to win the lock against it.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aMultiWorkerUnderTheRuntimeLockIsClosedWhileAThreadLoopsOnAwait() throws Exception {
        RecordingTransport transport = new RecordingTransport();
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").threadModes(ThreadMode.SERIALIZED).transports(c -> transport)).build();
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
        AtomicReference<RuntimeException> userSaw = new AtomicReference<>();
        CountDownLatch awaiting = new CountDownLatch(1);
        Thread user = Thread.ofPlatform().start(() -> {
            try {
                while (true) {
                    awaiting.countDown();
                    worker.await(Duration.ofHours(1));
                }
            } catch (RuntimeException e) {
                userSaw.set(e);
            }
        });
        awaiting.await();

        conduit.close();

        user.join();
        assertThat(userSaw.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("its Conduit was closed");
        assertThat(transport.closes()).isEqualTo(1);
    }

    /**
     * A thread asleep in a SERIALIZED worker's await when the Conduit closes is woken, and its
     * await returns {@code true}, woken, as the worker closes on that thread; the thread's next call
     * throws. Worker.await's javadoc said that the await itself threw IllegalStateException, which
     * only an await under PASS_THROUGH does, whose worker the Conduit's close closes at once.
     */
    @Test
    void anAwaitAskedToCloseByTheConduitReturnsTrueAndTheWorkerIsClosedAsItReturns() throws Exception {
        RecordingTransport transport = new RecordingTransport();
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").transports(c -> transport)).build();
        Worker worker = conduit.newWorker(ThreadMode.SERIALIZED);
        AtomicReference<Object> awaited = new AtomicReference<>();
        Thread user = Thread.ofPlatform().start(() -> {
            try {
                awaited.set(worker.await(Duration.ofHours(1)));
            } catch (RuntimeException e) {
                awaited.set(e);
            }
        });
        HangGuard.until(() -> user.getState() == Thread.State.TIMED_WAITING && LockSupport.getBlocker(user) == worker,
                "the thread asleep in the worker's await");

        conduit.close();

        HangGuard.join(user, "the await's return");
        assertThat(awaited.get()).as("what the await returned").isEqualTo(true);
        assertThat(transport.closes()).isEqualTo(1);
        assertThatThrownBy(worker::progress).isInstanceOf(IllegalStateException.class).hasMessageContaining("its Conduit was closed");
    }

    /**
     * A worker its user is closing when the Conduit closes: the Conduit waits for that close and
     * reports no failure of its own. It used to collect an IllegalStateException (the user was
     * inside the SERIALIZED worker) and return while the close went on.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aWorkerItsUserIsClosingWhenTheConduitClosesIsWaitedFor() throws Exception {
        CountDownLatch closing = new CountDownLatch(1);
        AtomicBoolean closeFinished = new AtomicBoolean();
        RecordingTransport transport = new RecordingTransport().onClose(() -> {
            closing.countDown();
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // not a measurement: a close that takes a while
            closeFinished.set(true);
        });
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").transports(c -> transport)).build();
        Worker worker = conduit.newWorker(ThreadMode.SERIALIZED);
        Thread user = Thread.ofPlatform().start(worker::close);
        closing.await();

        conduit.close();

        assertThat(closeFinished).as("the user's close, when the Conduit's returned").isTrue();
        assertThat(transport.closes()).isEqualTo(1);
        user.join();
    }

    /**
     * A close called while another thread's close is under way returns at once and touches
     * nothing: a region imported through the Conduit stays mapped until the first close, after
     * its workers, unmaps it; from the first close's start the Conduit refuses new work. The
     * second close used to unmap the IPC cache at once, under the workers the first waited for,
     * and the Conduit took new work until its resources were marked closed.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aCloseWhileAnotherIsUnderWayReturnsAtOnceAndUnmapsNothing() throws Exception {
        CountDownLatch closing = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        RecordingTransport transport = new RecordingTransport().onClose(() -> {
            closing.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").transports(c -> transport)).addPlugin(new InProcessMemoryPlugin())
                .build();
        byte[] handle = conduit.pool("inproc").allocate(4096).exportHandle();
        ImportedRegion imported = conduit.importRegion(handle);
        Worker worker = conduit.newWorker(ThreadMode.SERIALIZED);
        Thread user = Thread.ofPlatform().start(worker::close);
        closing.await();
        AtomicReference<Throwable> firstFailed = new AtomicReference<>();
        Thread first = Thread.ofPlatform().start(() -> {
            try {
                conduit.close();
            } catch (Throwable t) {
                firstFailed.set(t);
            }
        });
        while (opensAnImport(conduit, handle)) Thread.onSpinWait(); // until the first close has started

        conduit.close();

        assertThat(first.isAlive()).as("the first close, waiting for the user's close of its worker").isTrue();
        assertThat(imported.segment().get(ValueLayout.JAVA_BYTE, 0)).as("a byte of the imported region, still mapped").isZero();
        release.countDown();
        first.join();
        user.join();
        assertThat(firstFailed.get()).isNull();
        assertThatThrownBy(() -> imported.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Conduit is closed");
    }

    private static boolean opensAnImport(Conduit conduit, byte[] handle) {
        try (ImportedRegion ignored = conduit.importRegion(handle)) {
            return true;
        } catch (IllegalStateException closed) {
            return false;
        }
    }

    /**
     * A close the Conduit asked for, which the worker's owner ran and which failed, is reported
     * by the Conduit's close too, not only by the owner's next call.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aFailedCloseThatTheOwnerRanWhenAskedIsReportedByTheConduitsClose() throws Exception {
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").transports(c -> new RecordingTransport().onClose(() -> {
            throw new IllegalStateException("cannot close a#1");
        }))).build();
        AtomicReference<RuntimeException> ownerSaw = new AtomicReference<>();
        Thread owner = ownerAwaitingInALoop(conduit, ownerSaw);

        ConduitException e = catchThrowableOfType(ConduitException.class, conduit::close);

        owner.join();
        assertThat(e).isNotNull();
        assertThat(e.getSuppressed()).hasSize(1);
        assertThat(e.getSuppressed()[0].getSuppressed()).extracting(Throwable::getMessage).containsExactly("cannot close a#1");
        assertThat(ownerSaw.get()).hasMessageContaining("its Conduit was closed")
                .satisfies(t -> assertThat(t.getSuppressed()).hasSize(1));
    }

    /**
     * A SINGLE owner whose own close starts just after the Conduit's wait for it ran out, while the
     * closing thread logs its WARNING, wins the race: a failure of that close is thrown by the
     * Conduit's close too, as when the owner closes in time. It was kept only by the worker.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aFailedCloseOfAnOwnerThatWinsTheRaceAfterTheWaitIsReportedByTheConduitsClose() throws Exception {
        Conduit conduit = isolated().addPlugin(TestPlugin.named("a").transports(c -> new RecordingTransport().onClose(() -> {
            throw new IllegalStateException("cannot close a#1");
        }))).build();
        CountDownLatch created = new CountDownLatch(1);
        CountDownLatch closeNow = new CountDownLatch(1);
        CountDownLatch ownerClosed = new CountDownLatch(1);
        Thread owner = Thread.ofPlatform().start(() -> {
            Worker worker = conduit.newWorker(ThreadMode.SINGLE);
            created.countDown();
            try {
                closeNow.await();
                worker.close();
            } catch (InterruptedException | RuntimeException expected) {
                // the close's failure is what the Conduit's close must report
            } finally {
                ownerClosed.countDown();
            }
        });
        created.await();
        java.util.logging.Logger log = java.util.logging.Logger.getLogger("dev.conduit");
        Handler closeOnTheWarning = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel() != Level.WARNING || !record.getMessage().contains("was still in use")) return;
                closeNow.countDown();
                try {
                    ownerClosed.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(closeOnTheWarning);
        ConduitException e;
        try {
            e = catchThrowableOfType(ConduitException.class, conduit::close);
        } finally {
            log.removeHandler(closeOnTheWarning);
        }

        owner.join();
        assertThat(ownerClosed.getCount()).as("the owner closed while the Conduit's close logged").isZero();
        assertThat(e).isNotNull();
        assertThat(e.getSuppressed()).hasSize(1);
        assertThat(e.getSuppressed()[0].getSuppressed()).extracting(Throwable::getMessage).containsExactly("cannot close a#1");
    }

    @Test
    void aFailingCloseIsCollectedAndEverythingElseIsStillClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        Conduit conduit = isolated().addPlugin(plugin("good", closed, false).priority(2)).addPlugin(plugin("bad", closed, true).priority(1))
                .build();
        conduit.newWorker(ThreadMode.SINGLE);
        conduit.newWorker(ThreadMode.SINGLE);

        ConduitException e = catchThrowableOfType(ConduitException.class, conduit::close);
        assertThat(e).isNotNull().hasMessageContaining("closing Conduit failed");
        assertThat(closed).containsExactly("bad#2", "good#2", "bad#1", "good#1");

        List<Throwable> causes = new ArrayList<>();
        for (Throwable workerFailure : e.getSuppressed()) {
            assertThat(workerFailure).hasMessageContaining("closing the worker's transports failed");
            causes.addAll(List.of(workerFailure.getSuppressed()));
        }
        assertThat(causes).extracting(Throwable::getMessage).containsExactly("cannot close bad#2", "cannot close bad#1");

        conduit.close(); // idempotent: nothing left to fail
    }

    @Test
    void aClosedConduitOpensNothingMore() {
        Conduit conduit = isolated().addPlugin(TestPlugin.named("p")).build();
        conduit.close();
        assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    /**
     * A worker made while its Conduit closes is refused by the Conduit and closed; when a
     * transport's close failed there, the worker's close exception replaced the refusal's
     * IllegalStateException.
     */
    @Test
    void aWorkerRefusedByItsClosingConduitSaysSoAlsoWhenClosingItFails() {
        AtomicReference<Conduit> conduit = new AtomicReference<>();
        conduit.set(isolated().addPlugin(TestPlugin.named("a").transports(c -> {
            conduit.get().close();
            return new RecordingTransport().onClose(() -> {
                throw new IllegalStateException("cannot close the transport, on purpose");
            });
        })).build());
        assertThatThrownBy(() -> conduit.get().newWorker(ThreadMode.SINGLE)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Conduit is closed")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().satisfies(closeFailure -> assertThat(closeFailure)
                        .hasStackTraceContaining("cannot close the transport, on purpose")));
    }

    /**
     * From the moment a close starts, a pool and an import are refused as a worker is. Conduit.pool()
     * looked for a plugin that provides memory first, so a closed Conduit without one threw the
     * ConduitException "no selected plugin provides memory", which sends its user looking at the
     * plugins, not at the close.
     */
    @Test
    void aClosedConduitRefusesPoolsAndImportsAsItRefusesWorkers() {
        Conduit withoutMemory = isolated().addPlugin(TestPlugin.named("p")).build();
        withoutMemory.close();
        assertThatThrownBy(withoutMemory::pool).isInstanceOf(IllegalStateException.class)
                .hasMessage("Conduit is closed: it opens nothing more once its close has started; open another Conduit to go on");

        InProcessMemoryPlugin memory = new InProcessMemoryPlugin();
        Conduit conduit = isolated().addPlugin(TestPlugin.named("p")).addPlugin(memory).build();
        byte[] handle = conduit.pool("inproc").allocate(64).exportHandle();
        conduit.close();
        assertThatThrownBy(conduit::pool).isInstanceOf(IllegalStateException.class).hasMessageContaining("Conduit is closed");
        assertThatThrownBy(() -> conduit.pool("inproc")).isInstanceOf(IllegalStateException.class).hasMessageContaining("Conduit is closed");
        assertThatThrownBy(() -> conduit.importRegion(handle)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Conduit is closed");
        assertThat(memory.maps).as("nothing was mapped").hasValue(0);
    }

    @Test
    void aWorkerClosedByItselfIsNotClosedAgainAndRefusesFurtherUse() {
        RecordingTransport t = new RecordingTransport();
        Conduit conduit = isolated().addPlugin(TestPlugin.named("p").transports(c -> t)).build();
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        worker.close();
        worker.close();
        assertThatThrownBy(worker::progress).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        conduit.close();
        assertThat(t.closes()).isEqualTo(1);
    }

    /**
     * Worker's javadoc: once closed, every call through the guard throws IllegalStateException but
     * close, which does nothing more; signal does nothing, and threadMode, threadPolicy and
     * unhandledMessages answer, from any thread (unhandledMessages: "also after the close").
     */
    @Test
    void aClosedWorkerRefusesEveryGuardedCallAndStillAnswersTheOthersFromAnyThread() throws Exception {
        RecordingTransport t = new RecordingTransport();
        try (Conduit conduit = isolated().addPlugin(TestPlugin.named("p").transports(c -> t)).build()) {
            Worker worker = conduit.newWorker(ThreadMode.SINGLE);
            WorkerAddress address = worker.address();
            worker.close();

            List<Runnable> refused = List.of(worker::address, () -> worker.connect(address), () -> worker.connect(address, (e, c) -> { }),
                    () -> worker.onMessage(1, m -> { }), worker::progress, () -> worker.await(Duration.ofMillis(1)));
            for (Runnable call : refused) {
                assertThatThrownBy(call::run).isInstanceOf(IllegalStateException.class)
                        .hasMessage("worker is closed: it takes no more calls; make another with Conduit.newWorker to go on");
            }
            worker.close();
            assertThat(t.closes()).as("a second close does nothing").isEqualTo(1);
            assertThat(t.progressCalls()).as("no refused call reached the transport").isZero();

            AtomicReference<Object> answers = new AtomicReference<>();
            Thread other = Thread.ofPlatform().start(() -> {
                worker.signal();
                answers.set(List.of(worker.threadMode(), worker.threadPolicy(), worker.unhandledMessages()));
            });
            other.join();
            assertThat(answers.get()).isEqualTo(List.of(ThreadMode.SINGLE, ThreadPolicy.OWNER_CHECK, 0L));
        }
    }

    @Test
    void whenOpeningATransportFailsTheOnesAlreadyOpenedAreClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        TestPlugin failing = TestPlugin.named("failing").priority(1).transports(c -> {
            throw new ConduitException("cannot create the receive queue");
        });
        try (Conduit conduit = isolated().addPlugin(plugin("first", closed, false).priority(2)).addPlugin(failing).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .as("the plugin's refusal, and that the worker opens without it (helper h6)")
                    .hasMessage("cannot create the receive queue; or open workers without 'failing' (every selected transport opens in "
                            + "each worker): leave it out, transports=^failing (CONDUIT_TRANSPORTS)")
                    .cause().hasMessage("cannot create the receive queue");
            assertThat(closed).containsExactly("first#1");
        }
    }

    /** An Error too (a plugin missing one of its classes): the transports opened before it hold files and mappings. */
    @Test
    void whenOpeningATransportFailsWithAnErrorTheOnesAlreadyOpenedAreClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        TestPlugin failing = TestPlugin.named("failing").priority(1).transports(c -> {
            throw new NoClassDefFoundError("org/example/transport/Missing");
        });
        try (Conduit conduit = isolated().addPlugin(plugin("first", closed, false).priority(2)).addPlugin(failing).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(NoClassDefFoundError.class);
            assertThat(closed).containsExactly("first#1");
        }
    }

    /** An Error from one transport's close (a fault in mapped memory is an InternalError) leaves no other open. */
    @Test
    void anErrorFromClosingATransportIsCollectedAndEverythingElseIsStillClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        TestPlugin faulting = TestPlugin.named("faulting").priority(1).transports(c -> new RecordingTransport().onClose(() -> {
            closed.add("faulting");
            throw new InternalError("a fault occurred in an unsafe memory access");
        }));
        Conduit conduit = isolated().addPlugin(plugin("good", closed, false).priority(2)).addPlugin(faulting).build();
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        conduit.newWorker(ThreadMode.SINGLE);

        ConduitException byWorker = catchThrowableOfType(ConduitException.class, worker::close);
        assertThat(byWorker).isNotNull().hasMessageContaining("closing the worker's transports failed");
        assertThat(byWorker.getSuppressed()).singleElement().isInstanceOf(InternalError.class);
        assertThat(closed).containsExactly("faulting", "good#1");

        ConduitException byConduit = catchThrowableOfType(ConduitException.class, conduit::close);
        assertThat(byConduit).isNotNull().hasMessageContaining("closing Conduit failed");
        assertThat(closed).containsExactly("faulting", "good#1", "faulting", "good#2");
    }

    /**
     * A checked exception one transport's close throws undeclared (a plugin in Kotlin whose close
     * closes a channel: IOException) leaves no other open either. It used to leave the close at
     * once, bare: the worker's transports after it stayed open for good, and the worker stayed
     * tracked by its Conduit, whose close met the worker closed and closed nothing more of it.
     */
    @Test
    void aCheckedExceptionFromClosingATransportIsCollectedAndEverythingElseIsStillClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        java.io.IOException closeFailed = new java.io.IOException("Input/output error");
        TestPlugin failing = TestPlugin.named("failing").priority(1).transports(c -> new RecordingTransport().onClose(() -> {
            closed.add("failing");
            throw PluginThrowingCheckedTest.sneaky(closeFailed);
        }));
        Conduit conduit = isolated().addPlugin(plugin("good", closed, false).priority(2)).addPlugin(failing).build();
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);

        ConduitException byWorker = catchThrowableOfType(ConduitException.class, worker::close);
        assertThat(byWorker).isNotNull().hasMessageContaining("closing the worker's transports failed");
        assertThat(byWorker.getSuppressed()).containsExactly(closeFailed);
        assertThat(closed).containsExactly("failing", "good#1");
        conduit.close();
        assertThat(closed).as("nothing closed twice").containsExactly("failing", "good#1");
    }

    /**
     * The JVM's own errors are not collected into the close's ConduitException, where a caller
     * that catches it would swallow an OutOfMemoryError: the rest is still closed, then the error
     * is thrown as it is, the other failures suppressed in it.
     */
    @Test
    void anOutOfMemoryErrorFromClosingATransportIsThrownAsItIsOnceEverythingElseIsClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        OutOfMemoryError oom = new OutOfMemoryError("Java heap space");
        TestPlugin exhausted = TestPlugin.named("exhausted").priority(1).transports(c -> new RecordingTransport().onClose(() -> {
            closed.add("exhausted");
            throw oom;
        }));
        Conduit conduit = isolated().addPlugin(plugin("failing", closed, true).priority(2)).addPlugin(exhausted).build();
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);

        assertThatThrownBy(worker::close).isSameAs(oom);

        assertThat(closed).containsExactly("exhausted", "failing#1");
        assertThat(oom.getSuppressed()).singleElement().satisfies(rest -> assertThat(rest.getSuppressed())
                .extracting(Throwable::getMessage).containsExactly("cannot close failing#1"));
        conduit.close();
    }

    @Test
    void aWorkerNeedsAPluginWithATransport() {
        try (Conduit conduit = isolated().addPlugin(TestPlugin.named("memonly").capabilities(Capability.MEMORY)).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no selected plugin provides a transport").hasMessageContaining("[memonly]");
        }
    }
}
