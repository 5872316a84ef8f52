package dev.conduit.tck;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What every suite of the TCK needs from the author: the plugin and its configuration. Subclass one
 * of the suites, not this class.
 *
 * <p>Each test gets a fresh shared directory ({@link #newSharedDirectory()}); after the test, once
 * everything it opened is closed, the directory must hold exactly what it held before the test
 * (a plugin that leaves files behind fails); it is deleted in any case, also when a close threw or
 * files were left. Every object the test opened is closed, also after another's close threw (an
 * {@code Error} too); the test fails with the first failure, the others suppressed in it.
 *
 * <p>Every test has a {@link Timeout} of {@value #TEST_TIMEOUT_MINUTES} minutes, run on a thread of
 * its own: a call into the plugin that blocks fails the test (JUnit's {@code TimeoutException}) instead
 * of hanging the author's build. It is a hang guard, far above what any test needs; a subclass annotated
 * with its own {@code @Timeout} replaces it. The same guard bounds the calls into the plugin before and
 * after a test, each run on a thread of its own: the suites' {@code @BeforeEach} methods, which probe
 * and open the plugin ({@link TestThreads}), and the closes of what the test opened. Threads a test started, and the test's own thread when it
 * timed out, are interrupted and joined (for at most {@link #progressGuard()}) before what the test
 * opened is closed, and once more after; one still running then fails the test with its stack.
 *
 * <p>Every thread the plugin started during a test must end once what the test opened is closed
 * ({@code close} stops them): one still alive {@link #progressGuard()} (at least 5 s; 5 s in the
 * suite's tests after one that left a thread) after the close fails the test, named with its daemon
 * status and its stack. The test method runs on a thread of a thread
 * group of its own, which every thread started from it inherits, the plugin's and the runtime's,
 * and their threads' threads: so the TCK tells them from the JDK's (in the JDK's own groups, or
 * the common pool's), JUnit's and those of other tests running in the same JVM (in theirs).
 * Virtual threads are in none of those groups (the JDK puts them all in one): the TCK finds them in
 * the JDK's thread dump ({@link VirtualThreads}), and counts those alive after the test that were
 * not before it. Where the dump does not list them all ({@code -Djdk.trackAllThreads=false}) every
 * test fails saying so.
 *
 * <p>In a suite that {@link #checksDescriptors() checks them} (the transport suite), a descriptor
 * of this process opened during a test and still open once what it opened is closed fails the
 * test, named with its {@code /proc/self/fd} link target.
 */
@Timeout(value = PluginContract.TEST_TIMEOUT_MINUTES, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@ExtendWith(PluginContract.TestThreads.class)
public abstract class PluginContract {

    /** Minutes a test may run: a guard against a plugin call that never returns, never a speed check. */
    static final long TEST_TIMEOUT_MINUTES = 5;

    // Both are touched by the test's thread and by the thread that runs @AfterEach (another one: the
    // test runs on a thread of its own, which may still be inside the plugin when a timeout ended it).
    private final List<AutoCloseable> opened = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final List<ExecutorService> executors = new CopyOnWriteArrayList<>();
    private volatile boolean ending;
    /** Whether JUnit's timeouts are on ({@link TestThreads#timeoutsEnabled}), for the hang guard of the closes after a test. */
    private volatile boolean hangGuardOn = true;
    /** The group of the thread that runs the test method, inherited by every thread started from it: what the test started. */
    private volatile ThreadGroup testThreadGroup;
    private Path sharedDirectory;
    private Set<String> filesBefore;
    /** This process's descriptors before the test, where the suite {@link #checksDescriptors() checks them}; else null. */
    private Map<String, String> descriptorsBefore;
    /** The virtual threads alive before the test, by id ({@link VirtualThreads}); null when the JDK does not list them all. */
    private Set<Long> virtualThreadsBefore;
    private static boolean jdkDescriptorsOpened;

    PluginContract() {
    }

    /** A new instance of the plugin under test, as {@link java.util.ServiceLoader} would make it. */
    protected abstract ConduitPlugin newPlugin();

    /**
     * The configuration the plugin needs here, by key name ({@code "posix.queue.size" -> "64k"}),
     * given the test's shared directory. Used for the plugin's own context and for the runtime.
     */
    protected Map<String, String> configuration(Path sharedDirectory) {
        return Map.of();
    }

    /**
     * A new, empty shared directory for one test. The default is a temporary directory; override it
     * when the plugin needs a particular file system (e.g. tmpfs under {@code /dev/shm}).
     */
    protected Path newSharedDirectory() throws IOException {
        return Files.createTempDirectory("conduit-tck-");
    }

    /**
     * How long a test waits for progress it expects (a message, a failure, a wake-up, the plugin's
     * threads ending after the close, for which it waits at least 5 s whatever this returns) before
     * it fails: a guard against hangs, never a speed check.
     */
    protected Duration progressGuard() {
        return Duration.ofSeconds(60);
    }

    /**
     * How long a second JVM of the tests that start one (the memory suite's importer and exporters,
     * the transport suite's workers) may run, or take to say it is ready, before the test fails: a
     * hang guard, never a speed check.
     */
    protected Duration secondProcessGuard() {
        return ChildJvm.TIMEOUT;
    }

    /**
     * Calls {@code progress} until {@code done}, while messages keep arriving ({@code arrived} counts
     * them): fails when none arrived for {@link #progressGuard()}. The guard runs from the last
     * arrival, not from the first: it catches a stream that stopped, and a loaded machine's slower
     * stream is none ({@link #progressGuard()} is a hang guard, and one that bounded a whole stream
     * failed a plugin delivering 1,000 messages a millisecond apart under a guard of 500 ms).
     */
    final <E extends Exception> void progressWhileArriving(Supplier<String> waitingFor, BooleanSupplier done, IntSupplier arrived,
            Inbox.Call<?, E> progress) throws E {
        long deadline = System.nanoTime() + progressGuard().toNanos();
        int before = arrived.getAsInt();
        while (!done.getAsBoolean()) {
            progress.call();
            int now = arrived.getAsInt();
            if (now != before) {
                before = now;
                deadline = System.nanoTime() + progressGuard().toNanos();
            } else if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("no message arrived for " + progressGuard() + " waiting for " + waitingFor.get());
            }
        }
    }

    /**
     * This process's descriptors, number to target ({@code /proc/self/fd}); not the listing's own
     * (which may get other numbers once a leak took the earlier ones), nor the jars a class loader
     * opened meanwhile to load the plugin's classes, which it keeps for later loads. Used by the
     * check after each test of a suite that {@link #checksDescriptors() checks them}, and by the
     * memory suite's import of a killed exporter's chunk.
     */
    static Map<String, String> openDescriptors() throws IOException {
        Path listed = Path.of("/proc/self/fd").toRealPath();
        Map<String, String> descriptors = new TreeMap<>();
        try (Stream<Path> entries = Files.list(listed)) {
            for (Path entry : entries.toList()) {
                try {
                    String target = Files.readSymbolicLink(entry).toString();
                    if (!target.endsWith(".jar") && !target.equals(listed.toString())) {
                        descriptors.put(entry.getFileName().toString(), target);
                    }
                } catch (IOException closedMeanwhile) {
                    // One another thread closed since the listing: nothing left open.
                }
            }
        }
        return descriptors;
    }

    /** How long a descriptor opened since a listing may take to close before it counts as left open. */
    private static final long SETTLE_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(2);

    /**
     * The descriptors opened since {@code before} ({@link #openDescriptors}) that stay open: those
     * still open, to the same target, when looked at again for up to two seconds. The JVM opens
     * files of its own for an instant ({@code /proc/sys/vm/overcommit_memory}, read as it reserves
     * memory), which one listing taken at that instant counted as the plugin's (a CI run of
     * 2026-12-07, a test that did nothing but skip); what a plugin left open stays open. A bound on
     * a wait, not a measure.
     */
    static Map<String, String> descriptorsLeftSince(Map<String, String> before) throws IOException, InterruptedException {
        Map<String, String> left = openDescriptors();
        left.entrySet().removeAll(before.entrySet());
        for (long deadline = System.nanoTime() + SETTLE_NANOS; !left.isEmpty() && System.nanoTime() - deadline < 0; ) {
            Thread.sleep(10);
            left.entrySet().retainAll(openDescriptors().entrySet());
        }
        return left;
    }

    /**
     * Whether the check after each test compares this process's descriptors with those before it
     * ({@link #openDescriptors}): the transport suite's, whose every test closes what it opened.
     */
    boolean checksDescriptors() {
        return false;
    }

    /**
     * Opens, once per JVM, what the JDK opens on its first use and keeps open for the JVM's life, so
     * that the check after a test does not take it for the plugin's: the socket pair of
     * {@code sun.nio.ch}'s pre-close (the first channel), the epoll instances of the pollers that park
     * virtual threads on I/O (the first virtual thread that waits on a channel), the epoll instance
     * and pipe of the default group of asynchronous channels (the first
     * {@code AsynchronousServerSocketChannel} or {@code AsynchronousSocketChannel} opened without a
     * group of its own), and {@code /dev/random} and {@code /dev/urandom} ({@code SecureRandom}'s
     * first use). Each seen with {@code /proc/self/fd} before and after such a first use. Anything
     * else the JDK keeps open for the JVM's life once used must be opened here too, or the first
     * transport test to use it fails as if the plugin had left it open (until 2026-12-07 the
     * asynchronous channels' group did, {@code TckDescriptorCheckOfTheJdksOwnTest}).
     */
    private static synchronized void openWhatTheJdkKeepsOpen() throws IOException, InterruptedException {
        if (jdkDescriptorsOpened) return;
        new java.security.SecureRandom().nextBytes(new byte[8]);
        java.nio.channels.AsynchronousServerSocketChannel.open().close();
        java.nio.channels.Pipe pipe = java.nio.channels.Pipe.open();
        try (var source = pipe.source(); var sink = pipe.sink()) {
            Thread reader = Thread.ofVirtual().name("tck opens the JDK's pollers").start(() -> {
                try {
                    source.read(java.nio.ByteBuffer.allocate(1)); // waits, parked through a poller, until the write below
                } catch (IOException ignored) {
                    // The pipe closed under it: the pollers started all the same.
                }
            });
            while (reader.getState() != Thread.State.WAITING && reader.isAlive()) Thread.onSpinWait();
            sink.write(java.nio.ByteBuffer.wrap(new byte[1]));
            reader.join();
        }
        jdkDescriptorsOpened = true;
    }

    @BeforeEach
    final void openSharedDirectory() throws IOException, InterruptedException {
        ending = false;
        testThreadGroup = null;
        threads.removeIf(t -> !t.isAlive()); // a subclass may keep one instance for all its tests
        sharedDirectory = newSharedDirectory();
        filesBefore = listing(sharedDirectory);
        if (checksDescriptors()) {
            openWhatTheJdkKeepsOpen();
            descriptorsBefore = openDescriptors();
        }
        virtualThreadsBefore = VirtualThreads.allTracked() ? Set.copyOf(VirtualThreads.alive().keySet()) : null;
    }

    @AfterEach
    final void closeAndCheckSharedDirectory() throws Exception {
        ending = true;
        Path directory = sharedDirectory;
        Throwable failure = null;
        Thread closes = null;
        try {
            // Threads first: closing what a thread is still using would be concurrent use the plugin never promised to survive.
            stopTestThreads(progressGuard());
            List<AutoCloseable> closing = List.copyOf(opened.reversed());
            opened.clear();
            List<Throwable> closeFailures = new CopyOnWriteArrayList<>();
            closes = Thread.ofPlatform().daemon(false).name("tck close").start(() -> {
                for (AutoCloseable c : closing) {
                    try {
                        Inbox.calling("close()", () -> {
                            c.close();
                            return null;
                        });
                    } catch (Exception | Error e) { // an Error too (a fault on mapped memory, a missing class): the rest still get closed
                        closeFailures.add(e);
                    }
                }
            });
            boolean closed = joinUnderTheHangGuard(closes, getClass(), hangGuardOn);
            for (Throwable e : closeFailures) failure = add(failure, e);
            if (!closed) {
                // The checks below would only report what the unfinished close has yet to stop and remove.
                throw new TimeoutException("close() timed out after " + hangGuardText(getClass()) + " (the suite's @Timeout, a hang "
                        + "guard): a close of the plugin's that does not return; it is still running:" + describe(closes));
            }
            // A thread blocked in a plugin call may have been released by the close.
            Duration afterClose = Duration.ofSeconds(5);
            List<Thread> alive = stopTestThreads(afterClose);
            if (!alive.isEmpty()) {
                failure = add(failure, new AssertionError(alive.size() + " thread(s) of the test still running after it ended, they were "
                        + "interrupted and joined for " + progressGuard() + ", everything the test opened was closed, and they were joined "
                        + "for " + afterClose + " more: a call into the "
                        + "plugin that does not return (the SPI's calls never block, or bound what they wait for):"
                        + alive.stream().map(t -> "\n  " + t.getName() + " in " + t.getState() + Arrays.stream(t.getStackTrace())
                                .map(e -> "\n      at " + e).collect(Collectors.joining())).collect(Collectors.joining())));
            }
            Duration threadsEnding = threadsEndingBound();
            long threadsDeadline = System.nanoTime() + threadsEnding.toNanos();
            List<Thread> left = threadsTheTestStartedStillAlive(threadsEnding);
            List<VirtualThreads.Seen> virtualLeft = virtualThreadsTheTestStartedStillAlive(threadsDeadline);
            if (virtualThreadsBefore == null) {
                failure = add(failure, new AssertionError("the TCK cannot see the virtual threads started during the test: "
                        + "jdk.trackAllThreads is false, so the JDK's thread dump, the only list of them, leaves out those started "
                        + "with Thread.ofVirtual() (a plugin's close() that left one running would pass); run the TCK without "
                        + "-Djdk.trackAllThreads=false"));
            }
            if (!left.isEmpty() || !virtualLeft.isEmpty()) {
                boolean first = SUITES_THAT_LEFT_THREADS.add(getClass());
                failure = add(failure, new AssertionError(left.size() + virtualLeft.size() + " thread(s) started during the test (by the "
                        + "plugin, or by the runtime for it) still alive " + threadsEnding + " after everything the test opened was closed: close() stops "
                        + "every thread the plugin started, and its threads are daemon threads (one left running keeps the "
                        + "application's JVM from exiting)" + (first && threadsEnding.compareTo(THREADS_ENDING_AT_LEAST) > 0
                        ? " (the suite's later tests wait " + THREADS_ENDING_AT_LEAST + " for threads to end, not " + threadsEnding + ")" : "")
                        + ":" + left.stream().map(PluginContract::describe).collect(Collectors.joining())
                        + virtualLeft.stream().map(PluginContract::describe).collect(Collectors.joining())));
            }
            Set<String> after = listing(directory);
            after.removeAll(filesBefore);
            if (!after.isEmpty()) {
                failure = add(failure, new AssertionError("files the plugin left in the shared directory " + directory
                        + " after everything it opened was closed: " + after + " (close() must remove what the plugin created there)"));
            }
            if (descriptorsBefore != null) {
                Map<String, String> descriptorsLeft = descriptorsLeftSince(descriptorsBefore);
                if (!descriptorsLeft.isEmpty()) {
                    failure = add(failure, new AssertionError(descriptorsLeft.size() + " descriptor(s) opened during the test still open after "
                            + "everything it opened was closed: close() releases what the plugin opened (a socket, a file, an epoll "
                            + "instance), which otherwise stays taken for the JVM's life:" + descriptorsLeft.entrySet().stream()
                            .map(d -> "\n  descriptor " + d.getKey() + " -> " + d.getValue()).collect(Collectors.joining())));
                }
            }
        } catch (Exception | Error e) {
            failure = add(failure, e);
        } finally {
            // Always, so that a failed test leaves nothing behind (under /dev/shm that would be memory): the listing is recorded above.
            try {
                deleteRecursively(directory);
            } catch (IOException e) {
                failure = add(failure, closes != null && closes.isAlive() ? new IOException("the shared directory " + directory
                        + " may be held by the close still running: delete it once its process ended", e) : e);
            }
        }
        if (failure instanceof Exception e) throw e;
        if (failure instanceof Error e) throw e;
    }

    /**
     * Joins {@code call}, a call into the plugin made on a thread of its own, for at most the hang guard of {@code suite}
     * (its {@link Timeout}, inherited: PluginContract's at least), or for as long as it takes when {@code guardOn} is
     * false; whether it ended. One that did not is interrupted, and left.
     */
    private static boolean joinUnderTheHangGuard(Thread call, Class<?> suite, boolean guardOn) throws InterruptedException {
        Timeout guard = suite.getAnnotation(Timeout.class);
        try {
            if (!guardOn) {
                call.join();
                return true;
            }
            if (call.join(Duration.of(guard.value(), guard.unit().toChronoUnit()))) return true;
        } catch (InterruptedException e) {
            call.interrupt();
            throw e;
        }
        call.interrupt();
        return false;
    }

    /** The hang guard of {@code suite} as JUnit's timeout failures say it: "5 minutes". */
    private static String hangGuardText(Class<?> suite) {
        Timeout guard = suite.getAnnotation(Timeout.class);
        return guard.value() + " " + guard.unit().toString().toLowerCase(java.util.Locale.ROOT);
    }

    private static Throwable add(Throwable first, Throwable next) {
        if (next == null) return first;
        if (first == null) return next;
        first.addSuppressed(next);
        return first;
    }

    /**
     * Interrupts the threads the test started (and the test's own thread if a timeout left it running)
     * and joins them for at most {@code bound} in all; returns those still alive.
     */
    private List<Thread> stopTestThreads(Duration bound) throws InterruptedException {
        executors.forEach(ExecutorService::shutdownNow);
        threads.forEach(Thread::interrupt);
        long deadline = System.nanoTime() + bound.toNanos();
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            if (left > 0) t.join(Duration.ofNanos(left));
        }
        return threads.stream().filter(Thread::isAlive).toList();
    }

    /**
     * How long the check after a test waits for the threads the test started to end: {@link
     * #progressGuard()}, and never less than {@link #THREADS_ENDING_AT_LEAST}, for threads end on
     * their own a while after a close (conduit-linux's {@code conduit-unmapper} a second after the
     * last unmap) whatever guard a suite sets against hangs. Once a test of this suite left a thread
     * running, the later ones wait {@link #THREADS_ENDING_AT_LEAST} only: a plugin that leaks one in
     * every test cost every test the whole guard (a minute by default), and a suite of thirty half
     * an hour, for a failure the first one had already named.
     */
    private Duration threadsEndingBound() {
        Duration guard = progressGuard();
        if (guard.compareTo(THREADS_ENDING_AT_LEAST) < 0 || SUITES_THAT_LEFT_THREADS.contains(getClass())) return THREADS_ENDING_AT_LEAST;
        return guard;
    }

    /** The suites one of whose tests left a thread of the plugin's running ({@link #threadsEndingBound()}). */
    private static final Set<Class<?>> SUITES_THAT_LEFT_THREADS = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** The least {@link #threadsEndingBound()} waits: a second of conduit-unmapper's grace, with room for a loaded machine. */
    static final Duration THREADS_ENDING_AT_LEAST = Duration.ofSeconds(5);

    /**
     * The threads started during the test, from its method's thread or from threads it started, that
     * are still alive, waiting at most {@code bound} for them to end (a thread may end a moment after
     * the close that stopped it). Not the test's own threads (joined above), nor threads of the JDK's
     * common pool, which the JDK makes in the current group and keeps for later users.
     */
    private List<Thread> threadsTheTestStartedStillAlive(Duration bound) throws InterruptedException {
        ThreadGroup group = testThreadGroup;
        if (group == null) return List.of(); // the test method never ran
        long deadline = System.nanoTime() + bound.toNanos();
        while (true) {
            Thread[] found = new Thread[group.activeCount() + 16];
            int count = group.enumerate(found, true);
            List<Thread> alive = Arrays.stream(found, 0, count)
                    .filter(t -> t.isAlive() && !threads.contains(t) && !ofTheCommonPool(t)).toList();
            if (alive.isEmpty() || System.nanoTime() - deadline > 0) return alive;
            Thread.sleep(10);
        }
    }

    /**
     * The virtual threads started during the test that are still alive, waiting until {@code deadline} ({@link
     * System#nanoTime}) for them to end: those the JDK's thread dump lists now and did not before the test ({@link
     * VirtualThreads}), which {@link #threadsTheTestStartedStillAlive} cannot find (no virtual thread is in the test's
     * group). None when the dump does not list them all ({@link #virtualThreadsBefore} null), which the check says.
     */
    private List<VirtualThreads.Seen> virtualThreadsTheTestStartedStillAlive(long deadline) throws IOException, InterruptedException {
        Set<Long> before = virtualThreadsBefore;
        if (before == null) return List.of();
        while (true) {
            List<VirtualThreads.Seen> alive = VirtualThreads.alive().values().stream()
                    .filter(t -> !before.contains(t.tid()) && !t.isTheJdksPoller()).toList();
            if (alive.isEmpty() || System.nanoTime() - deadline > 0) return alive;
            Thread.sleep(50); // a dump walks every thread's stack: fewer looks than for the platform threads
        }
    }

    /** A virtual thread left running: its id, name, state and the top of its stack. */
    private static String describe(VirtualThreads.Seen t) {
        int shown = Math.min(t.stack().size(), 12);
        return "\n  virtual thread #" + t.tid() + " '" + t.name() + "' in " + t.state()
                + t.stack().stream().limit(shown).map(e -> "\n      at " + e).collect(Collectors.joining())
                + (t.stack().size() > shown ? "\n      ... " + (t.stack().size() - shown) + " more" : "");
    }

    /**
     * Whether {@code t} is a thread of the JDK's common pool: its workers are in a group of the JDK's,
     * but its delay scheduler (the timer of {@code CompletableFuture.orTimeout} and {@code delayedExecutor})
     * is made in the group of the thread that first needs it, and lives as long as the JVM.
     */
    private static boolean ofTheCommonPool(Thread t) {
        if (t instanceof ForkJoinWorkerThread worker) return worker.getPool() == ForkJoinPool.commonPool();
        return t.getClass().getName().equals("java.util.concurrent.DelayScheduler") && t.getName().startsWith("ForkJoinPool.commonPool-");
    }

    /** A thread left running: its name, whether it is a daemon, its state and the top of its stack. */
    private static String describe(Thread t) {
        StackTraceElement[] stack = t.getStackTrace();
        ThreadGroup group = t.getThreadGroup(); // null once it ended
        int shown = Math.min(stack.length, 12);
        return "\n  '" + t.getName() + "' (" + (t.isDaemon() ? "a daemon" : "not a daemon")
                + (group == null ? "" : ", group '" + group.getName() + "'") + ") in " + t.getState()
                + Arrays.stream(stack, 0, shown).map(e -> "\n      at " + e).collect(Collectors.joining())
                + (stack.length > shown ? "\n      ... " + (stack.length - shown) + " more" : "");
    }

    /** Whether {@code t} is a thread of the test's own (its method's, or one it started through {@link #startTestThread}). */
    final boolean startedByTheTest(Thread t) {
        return threads.contains(t);
    }

    /** Starts {@code body} on a platform thread that the test's end interrupts and joins ({@link #testEnding()}). */
    final Thread startTestThread(String name, Runnable body) {
        Thread t = Thread.ofPlatform().name(name).unstarted(body);
        threads.add(t);
        t.start();
        return t;
    }

    /** A single-thread executor whose thread the test's end shuts down and joins. */
    final ExecutorService newTestExecutor(String name) {
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = Thread.ofPlatform().name(name).unstarted(r);
            threads.add(t);
            return t;
        });
        executors.add(executor);
        return executor;
    }

    /** Whether the test has ended: loops on threads it started stop then, even if the test did not wait for them. */
    final boolean testEnding() {
        return ending || Thread.currentThread().isInterrupted();
    }

    /**
     * Runs each test method on a thread of a new thread group ({@link #testThreadGroup}), which every
     * thread started from it inherits, and records that thread, so that the test's end joins it too:
     * JUnit's thread ({@link Timeout.ThreadMode#SEPARATE_THREAD}) waits for it, and is abandoned with it
     * when the timeout fires. Runs the other {@code @BeforeEach} and {@code @AfterEach} methods under the
     * suite's hang guard.
     */
    static final class TestThreads implements InvocationInterceptor {
        @Override
        public void interceptBeforeEachMethod(Invocation<Void> invocation, ReflectiveInvocationContext<Method> context,
                                              ExtensionContext extensionContext) throws Throwable {
            underTheHangGuard(invocation, context, extensionContext);
        }

        @Override
        public void interceptAfterEachMethod(Invocation<Void> invocation, ReflectiveInvocationContext<Method> context,
                                             ExtensionContext extensionContext) throws Throwable {
            if (context.getExecutable().getDeclaringClass() == PluginContract.class) {
                // Its own waits (for the test's threads, for the plugin's to end) are bounded apart: it bounds its closes itself.
                ((PluginContract) extensionContext.getRequiredTestInstance()).hangGuardOn = timeoutsEnabled(extensionContext);
                invocation.proceed();
            } else {
                underTheHangGuard(invocation, context, extensionContext);
            }
        }

        /**
         * Runs a lifecycle method (the suites probe and open the plugin in {@code @BeforeEach}) on a thread of its own,
         * bounded by the suite's {@link Timeout}: JUnit applies a class's {@code @Timeout} to its test methods only, and
         * a call into the plugin that never returned there hung the build. JUnit's {@code junit.jupiter.execution.timeout.mode}
         * turns it off as it does the tests' guard.
         */
        private static void underTheHangGuard(Invocation<Void> invocation, ReflectiveInvocationContext<Method> context,
                                              ExtensionContext extensionContext) throws Throwable {
            String method = context.getExecutable().getName() + "()";
            Throwable[] thrown = new Throwable[1];
            // Not a daemon, as the test's own thread is not (interceptTestMethod): the plugin's threads inherit it.
            Thread call = Thread.ofPlatform().daemon(false).name("tck " + method).start(() -> {
                try {
                    invocation.proceed();
                } catch (Throwable e) {
                    thrown[0] = e;
                }
            });
            Class<?> suite = extensionContext.getRequiredTestClass();
            if (!joinUnderTheHangGuard(call, suite, timeoutsEnabled(extensionContext))) {
                throw new TimeoutException(method + " timed out after " + hangGuardText(suite) + " (the suite's @Timeout, a hang "
                        + "guard): a call into the plugin that does not return; it is still running:" + describe(call));
            }
            if (thrown[0] != null) throw thrown[0];
        }

        /** Whether JUnit's timeouts are on: {@code junit.jupiter.execution.timeout.mode} is not {@code disabled}, nor {@code disabled_on_debug} under a debugger. */
        private static boolean timeoutsEnabled(ExtensionContext extensionContext) {
            String mode = extensionContext.getConfigurationParameter("junit.jupiter.execution.timeout.mode").orElse("enabled").strip();
            if (mode.equalsIgnoreCase("disabled")) return false;
            return !mode.equalsIgnoreCase("disabled_on_debug") || ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                    .noneMatch(a -> a.startsWith("-agentlib:jdwp") || a.startsWith("-Xrunjdwp"));
        }

        @Override
        public void interceptTestMethod(Invocation<Void> invocation, ReflectiveInvocationContext<Method> context,
                                        ExtensionContext extensionContext) throws Throwable {
            PluginContract test = (PluginContract) extensionContext.getRequiredTestInstance();
            ThreadGroup group = new ThreadGroup("tck " + context.getExecutable().getName());
            test.testThreadGroup = group;
            Throwable[] thrown = new Throwable[1];
            // Not a daemon, as an application's main thread is not: a plugin thread made with new Thread() inherits that,
            // and a leak report then says the thread would keep the JVM from exiting.
            Thread body = Thread.ofPlatform().group(group).daemon(false).name("tck-test " + context.getExecutable().getName())
                    .unstarted(() -> {
                        try {
                            invocation.proceed();
                        } catch (Throwable e) {
                            thrown[0] = e;
                        }
                    });
            test.threads.add(body);
            body.start();
            try {
                body.join();
            } catch (InterruptedException e) {
                // JUnit gave up on the test: its end interrupts and joins the body, still recorded.
                body.interrupt();
                throw e;
            }
            test.threads.remove(body);
            if (thrown[0] != null) throw thrown[0];
        }
    }

    /** The shared directory of the current test. */
    protected final Path sharedDirectory() {
        return sharedDirectory;
    }

    /** Closes {@code resource} after the test (newest first), before the shared directory is checked. */
    protected final <T extends AutoCloseable> T closeAfterTest(T resource) {
        opened.add(resource);
        return resource;
    }

    /**
     * Fails, naming why, when the probe of {@code plugin} rules {@code capability} out here
     * ({@code Availability.without}): the suite that tests it runs where the plugin offers it.
     */
    final void requireOfferedHere(ConduitPlugin plugin, Capability capability) {
        Availability availability = plugin.probe(pluginContext());
        // The runtime never opens an unavailable plugin: testing it anyway would pass tests of objects no application gets.
        if (availability == null || !availability.isAvailable()) {
            throw new AssertionError("the probe of '" + plugin.name() + "' says it is unavailable here ("
                    + (availability == null ? "probe() returned null" : availability.reason())
                    + "), and the runtime opens no " + capability + " of an unavailable plugin: its tests need it; "
                    + "run the TCK where the plugin can work");
        }
        String why = availability.unsupportedHere().get(capability);
        if (why != null) {
            throw new AssertionError("the probe of '" + plugin.name() + "' rules capability " + capability + " out here (" + why
                    + "): its tests need it; run the TCK where the plugin offers it");
        }
    }

    /** An operation of the plugin that may throw, and may return what it made. */
    @FunctionalInterface
    interface Operation {
        Object call() throws Exception;
    }

    /**
     * Fails unless {@code operation} throws {@link NotSupportedException}: {@code called} names the call, the plugin and
     * the capability ("ipcImporter() without IPC (plugin 'x' does not declare it)"), {@code rule} why it must say "not
     * supported". One
     * that returns instead fails naming what it returned and the rule, and what it returned is closed (a provider, a
     * transport): an assertion on a refusal that never came only said "Expecting actual not to be null", which tells the
     * author neither what the plugin did nor what it should have done. One that throws anything else fails naming it,
     * with it as the cause.
     */
    static void assertNotSupported(String called, String rule, Operation operation) {
        Object returned;
        try {
            returned = operation.call();
        } catch (NotSupportedException expected) {
            return;
        } catch (Exception | Error e) {
            throw new AssertionError(called + " threw " + e + " instead of NotSupportedException: " + rule, e);
        }
        String what = returned == null ? "returned" : "returned " + describeReturned(returned);
        AssertionError failure = new AssertionError(called + " " + what + " instead of throwing NotSupportedException: " + rule);
        if (returned instanceof AutoCloseable opened) {
            try {
                opened.close();
            } catch (Exception | Error e) {
                failure.addSuppressed(e);
            }
        }
        throw failure;
    }

    /** A value as a failure shows it: a number or a flag as it is, an object by the SPI type it implements, or its class. */
    private static String describeReturned(Object returned) {
        if (returned instanceof Number || returned instanceof Boolean) return returned.toString();
        for (Class<?> type : List.of(MemoryProvider.class, IpcImporter.class, Transport.class, ChunkMapping.class)) {
            if (type.isInstance(returned)) return article(type.getSimpleName()) + " (" + returned.getClass().getName() + ")";
        }
        return article(returned.getClass().getName());
    }

    private static String article(String name) {
        return ("AEIOUaeiou".indexOf(name.charAt(0)) >= 0 ? "an " : "a ") + name;
    }

    /** A plugin context as the runtime would give it: this test's shared directory and configuration. */
    protected final PluginContext pluginContext() {
        return TestContext.of(sharedDirectory, configuration(sharedDirectory));
    }

    /** A transport context delivering to {@code sink}, in {@code mode}. RMA through it is not supported: the suites check RMA through the runtime. */
    protected final TransportContext transportContext(ThreadMode mode, MessageSink sink) {
        return TestContext.of(sharedDirectory, configuration(sharedDirectory)).forTransport(mode, sink);
    }

    /** A runtime that knows only the plugin under test (discovery off), configured like {@link #pluginContext()}. */
    protected final Conduit newConduit() {
        return closeAfterTest(conduitBuilder().build());
    }

    /** The builder {@link #newConduit()} uses, for tests that change a setting. */
    protected final ConduitBuilder conduitBuilder() {
        ConduitBuilder builder = Conduit.builder().discoverPlugins(false).addPlugin(newPlugin())
                .sharedDirectory(sharedDirectory).environment(Map.of());
        configuration(sharedDirectory).forEach(builder::set);
        return builder;
    }

    /** Every path under {@code directory}, itself included. */
    static Set<Path> filesIn(Path directory) throws IOException {
        try (Stream<Path> files = Files.walk(directory)) {
            return files.collect(Collectors.toSet());
        }
    }

    static Set<Path> appearedSince(Path directory, Set<Path> before) throws IOException {
        Set<Path> appeared = filesIn(directory);
        appeared.removeAll(before);
        return appeared;
    }

    /** The names of {@code files} relative to {@code directory}, sorted: what a failure shows. */
    static List<String> namesIn(Path directory, Stream<Path> files) {
        return files.map(f -> directory.relativize(f).toString()).sorted().toList();
    }

    /** Starts a child JVM of the plugin, for a check that needs a process of its own. */
    @FunctionalInterface
    interface ChildStart {
        ChildJvm.Started start() throws IOException;
    }

    /**
     * Starts {@code main} in a child JVM with the plugin's name and class, the shared directory,
     * {@code arguments}, then the suite's configuration as {@code key=value}: the command line the
     * TCK's children read.
     */
    final ChildJvm.Started startChild(Class<?> main, ConduitPlugin plugin, String... arguments) throws IOException {
        List<String> command = new ArrayList<>(List.of(plugin.name(), plugin.getClass().getName(), sharedDirectory.toString()));
        command.addAll(List.of(arguments));
        configuration(sharedDirectory).forEach((k, v) -> command.add(k + "=" + v));
        return ChildJvm.start(main, command);
    }

    /**
     * The checks of a killed process's files (a killed exporter's, {@code MemoryProviderContract};
     * a killed worker's, {@code TransportContract}): a child ({@code start}) makes its files in the
     * shared directory, which it tells by a line beginning {@code ready}; a second child makes its
     * own; the first is killed with {@code SIGKILL}, and while what {@code trigger} opened is open,
     * none of the first's files may be left and all of the second's must be there. Skipped, with
     * what {@code noFiles} makes of the first child's line, when that child made no file. The
     * killed child's files that the plugin left are removed after the check, so that the check of
     * the directory after the test does not report them twice.
     */
    final void checkAKilledOwnersFilesAreReclaimed(String plugin, ChildStart start, String ready, Function<String, String> noFiles,
                                                   Callable<AutoCloseable> trigger, String owner, String hook, String byDefault)
            throws Exception {
        Path shared = sharedDirectory;
        Set<Path> beforeTheOwners = filesIn(shared);
        Set<Path> killedOwnersFiles = Set.of();
        ChildJvm.Started killed = start.start();
        try {
            String line = killed.awaitLine(ready, secondProcessGuard());
            killedOwnersFiles = appearedSince(shared, beforeTheOwners);
            Assumptions.assumeTrue(!killedOwnersFiles.isEmpty(), noFiles.apply(line));
            Set<Path> beforeTheLiveOwner = filesIn(shared);
            try (ChildJvm.Started live = start.start()) {
                live.awaitLine(ready, secondProcessGuard());
                Set<Path> liveOwnersFiles = appearedSince(shared, beforeTheLiveOwner);
                killed.kill(secondProcessGuard());
                try (AutoCloseable opened = trigger.call()) {
                    assertOnlyTheDeadOwnersFilesWereReclaimed(plugin, shared, killedOwnersFiles, liveOwnersFiles, owner, hook, byDefault);
                }
            } // its stdin ends: the live child closes what it opened, which removes its files
        } finally {
            killed.close();
            if (killed.killed()) removeDeepestFirst(killedOwnersFiles);
        }
    }

    /**
     * What the checks of a killed process's files ask once the plugin's reclaim trigger ran: none of
     * {@code deadOwnersFiles} is left in {@code directory}, and all of {@code liveOwnersFiles} are.
     * {@code owner} names the kind of process ("an exporting process"), {@code hook} the suite's hook
     * that names the trigger, {@code byDefault} the trigger it runs unless overridden.
     */
    private static void assertOnlyTheDeadOwnersFilesWereReclaimed(String plugin, Path directory, Set<Path> deadOwnersFiles,
                                                                  Set<Path> liveOwnersFiles, String owner, String hook, String byDefault)
            throws IOException {
        String trigger = hook + ": by default " + byDefault;
        Set<Path> now = filesIn(directory);
        List<String> left = namesIn(directory, deadOwnersFiles.stream().filter(now::contains));
        if (!left.isEmpty()) {
            throw new AssertionError("files of " + owner + " of plugin '" + plugin + "' killed with SIGKILL are still in the shared "
                    + "directory " + directory + " after the plugin's reclaim trigger ran (" + trigger + "): " + left + ". A killed "
                    + "process closes nothing: the plugin removes a dead owner's files when it next opens on the directory, telling "
                    + "them from a live owner's by a lock the kernel drops with the process (memfd and posix hold an OwnerLease), or "
                    + "its TCK test overrides " + hook + " with the trigger its documentation names; else every crash leaves them "
                    + "for good (under /dev/shm, memory)");
        }
        List<String> removed = namesIn(directory, liveOwnersFiles.stream().filter(f -> !now.contains(f)));
        if (!removed.isEmpty()) {
            throw new AssertionError("the reclaim trigger of plugin '" + plugin + "' (" + trigger + ") removed files of " + owner
                    + " that lives from the shared directory " + directory + ": " + removed + ". Only a dead owner's files are "
                    + "reclaimed: judge the owner by a lock the kernel drops with its process, never by a pid or a file's age");
        }
    }

    /** Removes {@code files}, what is inside a directory before it. */
    static void removeDeepestFirst(Set<Path> files) throws IOException {
        for (Path p : files.stream().sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
    }

    private static Set<String> listing(Path directory) throws IOException {
        try (Stream<Path> s = Files.walk(directory)) {
            Set<String> names = new TreeSet<>();
            s.filter(p -> !p.equals(directory)).forEach(p -> names.add(directory.relativize(p).toString()));
            return names;
        }
    }

    /** Deletes everything it can, then reports what it could not. */
    private static void deleteRecursively(Path directory) throws IOException {
        if (directory == null || !Files.exists(directory)) return;
        List<Path> paths;
        try (Stream<Path> s = Files.walk(directory)) {
            paths = s.sorted(Comparator.reverseOrder()).toList();
        }
        IOException failure = null;
        for (Path p : paths) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                if (failure == null) failure = new IOException("cannot delete the test's shared directory " + directory + " entirely", e);
                else failure.addSuppressed(e);
            }
        }
        if (failure != null) throw failure;
    }
}
