package dev.conduit.tck;

import dev.conduit.Conduit;
import dev.conduit.PluginInfo;
import dev.conduit.ThreadPolicy;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.spi.Version;
import dev.conduit.tck.internal.Addresses;
import dev.conduit.tck.internal.Patterns;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntSupplier;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract of a plugin's metadata: name, versions and configuration keys well formed; the
 * probe honest (available here, and then every declared capability opens unless the probe ruled
 * it out here with {@code Availability.without}, and every undeclared or ruled-out one throws
 * {@link NotSupportedException}); the runtime accepting it as declared; and the declared
 * thread modes holding under stress: a plugin that declares {@link ThreadMode#MULTI} is hammered
 * from several threads at once, one that declares {@link ThreadMode#SERIALIZED} is called from
 * several threads in turn, and for one that does not declare {@code MULTI} the runtime is shown to
 * lock for it.
 *
 * <p>The probe must say "available" where the TCK runs: run the TCK where the plugin can work.
 */
public abstract class PluginMetadataContract extends PluginContract {

    private static final int THREADS = 4;

    private ConduitPlugin plugin;

    @BeforeEach
    final void makePlugin() {
        plugin = newPlugin();
    }

    @Test
    public void namesAndVersionsItself() {
        assertThat(plugin.name()).as("name()").isNotNull().hasSizeBetween(1, 32);
        assertThat(PayloadReader.isName(plugin.name())).as("name '%s' is lower-case letters, digits and '-', starting with a letter", plugin.name()).isTrue();
        assertThat(plugin.version()).as("version()").isNotNull();
        assertThat(Version.parse(plugin.spiVersion()).major()).as("major of spiVersion() '%s'", plugin.spiVersion())
                .isEqualTo(Version.parse(ConduitPlugin.SPI_VERSION).major());
        assertThat(plugin.capabilities()).as("capabilities()").isNotEmpty();
        assertThat(plugin.threadModes()).as("threadModes()").isNotEmpty();
        assertThat(plugin.description()).as("description()").isNotNull();
    }

    /**
     * Whether the plugin is one that {@link java.util.ServiceLoader} is meant to find, as every
     * plugin shipped in a jar is: {@link #itsJarDeclaresItForServiceLoader} then checks its
     * declarations. Override to return {@code false} only for a plugin that is only ever added in
     * code ({@code ConduitBuilder.addPlugin}), such as a test fixture.
     */
    protected boolean foundByServiceLoader() {
        return true;
    }

    /**
     * The plugin's jar declares it, both ways: {@code provides dev.conduit.spi.ConduitPlugin with}
     * its class in the module descriptor (read on the module path and in a plugin directory), and
     * its class named in {@code META-INF/services/dev.conduit.spi.ConduitPlugin} (read on the class
     * path, and for a jar without a module descriptor). A jar missing the one its path reads is
     * not found there, and the runtime cannot say so: it does not know the jar holds a plugin. The
     * declared class may be a superclass of what {@link #newPlugin()} returns (a suite's subclass),
     * and a module's provider may be a factory ({@code provider()}), which is called to see what it
     * makes; a module that provides the service with other classes only fails.
     */
    @Test
    public void itsJarDeclaresItForServiceLoader() throws java.io.IOException {
        assumeTrue(foundByServiceLoader(), "the suite says plugin '" + plugin.name() + "' is only added in code (foundByServiceLoader)");
        Class<?> type = plugin.getClass();
        String service = ConduitPlugin.class.getName();
        Module module = type.getModule();
        if (module.isNamed()) {
            Set<String> types = new HashSet<>();
            for (Class<?> c = type; c != null; c = c.getSuperclass()) types.add(c.getName());
            // The module's provides (derived from the services file for an automatic module): the plugin's class, a superclass,
            // or a provider factory that makes one. A module providing another class of its own (a second plugin) passed.
            List<String> providers = module.getDescriptor().provides().stream().filter(p -> p.service().equals(service))
                    .flatMap(p -> p.providers().stream()).toList();
            assertThat(providers.stream().anyMatch(types::contains) || aFactoryMakesIt(module, providers, types))
                    .as("module %s declares 'provides %s with %s;' (or a superclass, or a provider factory whose provider() makes "
                            + "one): it provides %s, so the module path and a plugin directory never find plugin '%s', and nothing "
                            + "says why", module.getName(), service, type.getName(),
                            providers.isEmpty() ? "no " + service : "it with " + providers + " only", plugin.name())
                    .isTrue();
            String file = "META-INF/services/" + service;
            List<String> named = servicesFile(module.getResourceAsStream(file));
            assertThat(named).as("the classes that %s in module %s names (%s): without %s there, a jar of it on the class path is "
                    + "never found, and nothing says why", file, module.getName(), named == null ? "there is no such file" : named,
                    type.getName()).isNotNull().containsAnyElementsOf(types);
        } else {
            // On the class path: what ServiceLoader finds through the plugin's class loader (its services files, wherever the
            // build put its resources).
            boolean listed = java.util.ServiceLoader.load(ConduitPlugin.class, type.getClassLoader()).stream()
                    .anyMatch(p -> p.type().isAssignableFrom(type));
            assertThat(listed).as("a META-INF/services/%s file names %s (or a superclass): without it the class path never finds "
                    + "plugin '%s', and nothing says why", service, type.getName(), plugin.name()).isTrue();
        }
    }

    /**
     * Whether one of {@code providers}, classes of {@code module}, is a provider factory (a public static {@code provider()})
     * whose plugin is of one of {@code types}. ServiceLoader names a factory's plugin only by {@code provider()}'s declared
     * type, often {@code ConduitPlugin} itself: the factories of that type in the module's layer are called, as the runtime's
     * discovery calls them, to see what they make.
     */
    private static boolean aFactoryMakesIt(Module module, List<String> providers, Set<String> types) {
        Set<Class<?>> made = new HashSet<>();
        for (String provider : providers) {
            Class<?> c = Class.forName(module, provider);
            if (c == null) continue;
            for (java.lang.reflect.Method m : c.getMethods()) {
                if (m.getName().equals("provider") && m.getParameterCount() == 0 && java.lang.reflect.Modifier.isStatic(m.getModifiers())) {
                    made.add(m.getReturnType());
                }
            }
        }
        if (made.isEmpty() || module.getLayer() == null) return false;
        return java.util.ServiceLoader.load(module.getLayer(), ConduitPlugin.class).stream().filter(p -> made.contains(p.type()))
                .anyMatch(p -> types.contains(p.get().getClass().getName()));
    }

    /** The class names in a services file, comments and blanks left out; null when there is none. */
    private static List<String> servicesFile(java.io.InputStream in) throws java.io.IOException {
        if (in == null) return null;
        try (java.io.BufferedReader lines = new java.io.BufferedReader(new java.io.InputStreamReader(in,
                java.nio.charset.StandardCharsets.UTF_8))) {
            return lines.lines().map(l -> l.replaceFirst("#.*", "").strip()).filter(l -> !l.isEmpty()).toList();
        }
    }

    @Test
    public void declaresItsConfigKeysUnderItsName() {
        Set<String> names = new HashSet<>();
        for (ConfigKey<?> key : plugin.configKeys()) {
            assertThat(key.name()).as("config key of plugin '%s'", plugin.name()).startsWith(plugin.name() + ".");
            assertThat(key.doc()).as("doc of config key %s", key.name()).isNotBlank();
            assertThat(names.add(key.name())).as("config key %s declared once", key.name()).isTrue();
        }
    }

    @Test
    public void probeIsAvailableHereAndHonest() {
        Availability availability = plugin.probe(pluginContext());
        assertThat(availability).as("probe()").isNotNull();
        assertThat(availability.isAvailable()).as("probe() of '%s' said unavailable: %s (run the TCK where the plugin can work)",
                plugin.name(), availability.reason()).isTrue();
        Set<Capability> declared = plugin.capabilities();
        Map<Capability, String> notHere = availability.unsupportedHere();
        assertThat(declared).as("capabilities the probe of '%s' rules out here (Availability.without) must be declared ones",
                plugin.name()).containsAll(notHere.keySet());
        // A capability ruled out here is honest only if its operation then says "not supported", never half-works.
        if (notHere.containsKey(Capability.MEMORY)) {
            ruledOut(Capability.MEMORY, notHere, "openMemoryProvider()", () -> plugin.openMemoryProvider(pluginContext()));
        } else if (declared.contains(Capability.MEMORY)) {
            declaredWorks(Capability.MEMORY, "openMemoryProvider(), allocate(pageSize()), free() and close()", () -> {
                try (MemoryProvider provider = plugin.openMemoryProvider(pluginContext())) {
                    provider.free(provider.allocate(provider.pageSize()));
                }
            });
        } else {
            undeclared(Capability.MEMORY, "openMemoryProvider()", () -> plugin.openMemoryProvider(pluginContext()));
        }
        if (notHere.containsKey(Capability.IPC)) {
            ruledOut(Capability.IPC, notHere, "ipcImporter()", () -> plugin.ipcImporter(pluginContext()));
        } else if (declared.contains(Capability.IPC)) {
            declaredWorks(Capability.IPC, "ipcImporter()", () -> assertThat(plugin.ipcImporter(pluginContext())).as("ipcImporter()").isNotNull());
        } else {
            undeclared(Capability.IPC, "ipcImporter()", () -> plugin.ipcImporter(pluginContext()));
        }
        if (notHere.containsKey(Capability.AM)) {
            ruledOut(Capability.AM, notHere, "openTransport()", () -> plugin.openTransport(transportContext(ThreadMode.SERIALIZED, new Inbox())));
        } else if (declared.contains(Capability.AM)) {
            declaredWorks(Capability.AM, "openTransport(), address(), progress() and close()", () -> {
                try (Transport transport = plugin.openTransport(transportContext(ThreadMode.SERIALIZED, new Inbox()))) {
                    assertThat(transport.address()).as("address() of an opened transport").isNotEmpty();
                    transport.progress();
                    if (notHere.containsKey(Capability.WAKEUP)) {
                        ruledOut(Capability.WAKEUP, notHere, "await()", () -> transport.await(1_000_000));
                    } else if (declared.contains(Capability.WAKEUP)) {
                        declaredWorks(Capability.WAKEUP, "signal() and await()", () -> {
                            transport.signal();
                            transport.await(1_000_000);
                        });
                    } else {
                        undeclared(Capability.WAKEUP, "await()", () -> transport.await(1_000_000));
                    }
                }
            });
        } else {
            undeclared(Capability.AM, "openTransport()", () -> plugin.openTransport(transportContext(ThreadMode.SERIALIZED, new Inbox())));
        }
    }

    private void ruledOut(Capability capability, Map<Capability, String> notHere, String operation, Operation use) {
        assertNotSupported(operation + " of '" + plugin.name() + "', whose probe ruled " + capability + " out here ("
                        + notHere.get(capability) + "),",
                "the runtime never calls it where the probe rules its capability out (Availability.without), and a direct call "
                        + "says so with the same reason", use);
    }

    /** An operation of a capability the plugin does not declare: it keeps the SPI's default, which says "not supported". */
    private void undeclared(Capability capability, String operation, Operation use) {
        assertNotSupported(operation + " without " + capability + " (plugin '" + plugin.name() + "' does not declare it)",
                "an operation of an undeclared capability keeps the SPI's default, which throws it; declare " + capability
                + " if the plugin implements it", use);
    }

    private void declaredWorks(Capability capability, String operations, Runnable use) {
        try {
            use.run();
        } catch (RuntimeException e) {
            throw new AssertionError("plugin '" + plugin.name() + "' declares capability " + capability + " and its probe says available, but "
                    + operations + " failed: " + e, e);
        }
    }

    @Test
    public void theRuntimeSelectsItAsDeclared() {
        Conduit conduit = newConduit();
        PluginInfo info = conduit.plugins().stream().filter(p -> p.name().equals(plugin.name())).findFirst().orElseThrow();
        assertThat(info.status()).as("status of '%s' in the runtime (reason: %s)", plugin.name(), info.reason()).isEqualTo(PluginInfo.Status.SELECTED);
        assertThat(info.capabilities()).isEqualTo(plugin.capabilities());
        assertThat(info.unsupportedHere()).as("what the runtime knows its probe ruled out here")
                .isEqualTo(plugin.probe(pluginContext()).unsupportedHere());
        assertThat(info.threadModes()).isEqualTo(plugin.threadModes());
        assertThat(conduit.selectedPlugins()).contains(plugin.name());
    }

    @Test
    public void theRuntimeGuardsTheModesItDoesNotDeclare() {
        assumeTrue(plugin.capabilities().contains(Capability.AM), "plugin '" + plugin.name() + "' does not declare AM: it has no workers to guard");
        Set<ThreadMode> modes = plugin.threadModes();
        if (modes.contains(ThreadMode.MULTI)) {
            assertThat(newConduit().threadPolicy(ThreadMode.MULTI)).isEqualTo(ThreadPolicy.PASS_THROUGH);
        } else if (modes.contains(ThreadMode.SERIALIZED)) {
            assertThat(newConduit().threadPolicy(ThreadMode.MULTI)).as("a MULTI worker over a SERIALIZED plugin").isEqualTo(ThreadPolicy.RUNTIME_LOCK);
        } else {
            Conduit conduit = newConduit();
            assertThat(catchThrowable(() -> conduit.newWorker(ThreadMode.SERIALIZED).close())).as("a SERIALIZED worker over a SINGLE-only plugin")
                    .isInstanceOf(ConduitException.class).hasMessageContaining(plugin.name());
        }
    }

    @Test
    public void aSerializedPluginWorksFromThreadsTakingTurns() throws Exception {
        Set<ThreadMode> modes = plugin.threadModes();
        assumeTrue(modes.contains(ThreadMode.SERIALIZED) || modes.contains(ThreadMode.MULTI),
                "plugin '" + plugin.name() + "' declares only SINGLE: it is never called from two threads");
        List<ExecutorService> threads = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) threads.add(newTestExecutor("tck-turn-" + i));
        Turns turns = new Turns(threads);
        try {
            if (plugin.capabilities().contains(Capability.MEMORY)) {
                MemoryProvider provider = closeAfterTest(plugin.openMemoryProvider(pluginContext()));
                for (int i = 0; i < 20; i++) {
                    Chunk chunk = turns.call("allocate(pageSize())", () -> provider.allocate(provider.pageSize()));
                    long seed = i;
                    turns.call("writing the chunk", () -> Patterns.fill(chunk.segment(), seed));
                    assertThat(turns.call("reading the chunk", () -> Patterns.mismatch(chunk.segment(), seed))).isEqualTo(-1);
                    turns.call("free()", () -> provider.free(chunk));
                }
            }
            if (plugin.capabilities().contains(Capability.AM)) {
                Inbox inbox = new Inbox();
                Transport receiver = closeAfterTest(plugin.openTransport(transportContext(ThreadMode.SERIALIZED, inbox)));
                Transport sender = closeAfterTest(plugin.openTransport(transportContext(ThreadMode.SERIALIZED, new Inbox())));
                TransportEndpoint ep = turns.call("connect()", () -> sender.connect(Addresses.reader(plugin.name(), receiver.address()), cause -> { }));
                for (int i = 0; i < 200; i++) {
                    int id = i;
                    long accepted = System.nanoTime() + progressGuard().toNanos();
                    while (!turns.call("trySend()", () -> ep.trySend(id, MemorySegment.NULL, Patterns.segment(64, id)))) {
                        if (System.nanoTime() > accepted) {
                            throw new AssertionError("message " + id + " not accepted within " + progressGuard()
                                    + " while the receiver and the sender progressed, calls made from threads in turn");
                        }
                        // trySend may refuse for the transport's own buffers, which the sender's progress reclaims (TransportEndpoint.trySend).
                        turns.call("the receiver's progress()", receiver::progress);
                        turns.call("the sender's progress()", sender::progress);
                    }
                    turns.call("the receiver's progress()", receiver::progress);
                }
                progressWhileArriving(() -> "200 messages sent from threads in turn: " + inbox.size() + " arrived", () -> inbox.size() >= 200,
                        inbox::size, () -> {
                            turns.call("the receiver's progress()", receiver::progress);
                            return turns.call("the sender's progress()", sender::progress);
                        });
                assertThat(inbox.messages()).extracting(Inbox.Received::id).as("ids delivered, calls made from threads in turn")
                        .containsExactlyElementsOf(java.util.stream.IntStream.range(0, 200).boxed().toList());
            }
        } finally {
            threads.forEach(ExecutorService::shutdownNow);
        }
    }

    /** Calls made from the threads in turn, one at a time: what SERIALIZED allows. A call that does not return fails the test. */
    private final class Turns {
        private final List<ExecutorService> threads;
        private int turn;

        Turns(List<ExecutorService> threads) {
            this.threads = threads;
        }

        <T> T call(String what, Callable<T> call) throws Exception {
            Future<T> result = threads.get(turn++ % threads.size()).submit(call);
            try {
                return result.get(progressGuard().toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError(what + " on plugin '" + plugin.name() + "' did not return within " + progressGuard()
                        + " (the SPI's calls never block)");
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Exception cause) throw cause;
                if (e.getCause() instanceof Error cause) throw cause;
                throw e;
            }
        }

        void call(String what, Runnable call) throws Exception {
            call(what, () -> {
                call.run();
                return null;
            });
        }
    }

    @Test
    public void aMultiPluginWithstandsConcurrentCalls() throws Exception {
        assumeTrue(plugin.threadModes().contains(ThreadMode.MULTI),
                "plugin '" + plugin.name() + "' does not declare MULTI: the runtime serializes calls to it");
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        // What each thread is at and when it last got there: a thread whose call does not return fails the test, naming the call.
        Map<Thread, String> doing = new ConcurrentHashMap<>();
        Map<Thread, Long> since = new ConcurrentHashMap<>();
        if (plugin.capabilities().contains(Capability.MEMORY)) {
            MemoryProvider provider = closeAfterTest(plugin.openMemoryProvider(pluginContext()));
            for (int t = 0; t < THREADS; t++) {
                long thread = t;
                threads.add(startTestThread("tck-multi-memory-" + t, () -> {
                    try {
                        start.await();
                        for (int i = 0; i < 200 && !testEnding(); i++) {
                            at(doing, since, "allocate() " + i + " of 200");
                            Chunk chunk = provider.allocate(provider.pageSize());
                            Patterns.fill(chunk.segment(), thread * 1000 + i);
                            Thread.yield();
                            long mismatch = Patterns.mismatch(chunk.segment(), thread * 1000 + i);
                            if (mismatch >= 0) throw new AssertionError("a chunk allocated concurrently was overwritten at byte " + mismatch);
                            at(doing, since, "free() " + i + " of 200");
                            provider.free(chunk);
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }));
            }
        }
        Map<Integer, List<Integer>> received = new ConcurrentHashMap<>();
        int perThread = 2000;
        Transport receiver = null;
        if (plugin.capabilities().contains(Capability.AM)) {
            receiver = closeAfterTest(plugin.openTransport(transportContext(ThreadMode.MULTI, (id, hb, ho, hl, pb, po, pl) ->
                    // Synchronized: progress() runs on several threads here, and a lost add would look like a lost message.
                    received.computeIfAbsent(id, k -> Collections.synchronizedList(new ArrayList<>()))
                            .add(pb.get(ValueLayout.JAVA_INT_UNALIGNED, po)))));
            Transport sender = closeAfterTest(plugin.openTransport(transportContext(ThreadMode.MULTI, new Inbox())));
            TransportEndpoint ep = sender.connect(Addresses.reader(plugin.name(), receiver.address()), cause -> { });
            Transport peer = receiver;
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                threads.add(startTestThread("tck-multi-sender-" + t, () -> {
                    try {
                        start.await();
                        MemorySegment payload = MemorySegment.ofArray(new int[1]);
                        for (int i = 0; i < perThread && !testEnding(); i++) {
                            payload.set(ValueLayout.JAVA_INT, 0, i);
                            at(doing, since, "sending message " + i + " of " + perThread);
                            long accepted = System.nanoTime() + progressGuard().toNanos();
                            while (!ep.trySend(thread, MemorySegment.NULL, payload)) {
                                if (System.nanoTime() > accepted) {
                                    throw new AssertionError("message " + i + " of thread " + thread + " not accepted within " + progressGuard()
                                            + " while the receiver and the sender progressed, " + THREADS + " threads sending at once");
                                }
                                if (testEnding()) return;
                                // MULTI: any thread may progress either transport, also while others send.
                                peer.progress();
                                sender.progress();
                            }
                            peer.progress();
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }));
            }
        }
        threads.forEach(t -> since.put(t, System.nanoTime()));
        start.countDown();
        for (Thread t : threads) {
            while (!t.join(Duration.ofMillis(100))) {
                long stuck = System.nanoTime() - since.getOrDefault(t, System.nanoTime());
                // The senders bound each wait for acceptance by progressGuard() themselves: this catches a call that never returns.
                if (stuck > progressGuard().plusSeconds(5).toNanos()) {
                    throw new AssertionError(t.getName() + " has not got past " + doing.getOrDefault(t, "its start") + " for "
                            + Duration.ofNanos(stuck) + " (plugin '" + plugin.name() + "' declares MULTI; its calls never block):"
                            + Arrays.stream(t.getStackTrace()).map(e -> "\n    at " + e).collect(Collectors.joining()));
                }
            }
        }
        // The threads' own failures first: they say what the plugin did wrong (a message it never accepted, a chunk overwritten).
        assertThat(errors).as("failures under concurrent calls to a plugin that declares MULTI").isEmpty();
        if (receiver != null) {
            IntSupplier arrived = () -> received.values().stream().mapToInt(List::size).sum();
            progressWhileArriving(() -> THREADS * perThread + " messages from " + THREADS + " threads: " + arrived.getAsInt() + " arrived",
                    () -> arrived.getAsInt() >= THREADS * perThread, arrived, receiver::progress);
            for (int t = 0; t < THREADS; t++) {
                List<Integer> got = received.get(t);
                String wrong = firstWrong(got, perThread);
                assertThat(wrong).as("messages thread %d sent concurrently with %d others (0 to %d, in order), as delivered: %d arrived",
                        t, THREADS - 1, perThread - 1, got == null ? 0 : got.size()).isNull();
            }
        }
    }

    /** What is first wrong in {@code got} against 0 to {@code count - 1} in order (a list too long to read whole); null when nothing is. */
    private static String firstWrong(List<Integer> got, int count) {
        List<Integer> messages = got == null ? List.of() : got;
        for (int i = 0; i < Math.min(messages.size(), count); i++) {
            if (messages.get(i) != i) {
                int at = i;
                String which = messages.subList(0, i).contains(messages.get(i)) ? "a duplicate of " + messages.get(i)
                        : messages.get(i) > i ? messages.get(i) + ", while " + i + " is missing or comes later" : "" + messages.get(i);
                return "message " + at + " arrived as " + which;
            }
        }
        if (messages.size() < count) return "messages " + messages.size() + " to " + (count - 1) + " never arrived";
        if (messages.size() > count) return (messages.size() - count) + " more messages than were sent arrived, first " + messages.get(count);
        return null;
    }

    private static void at(Map<Thread, String> doing, Map<Thread, Long> since, String what) {
        doing.put(Thread.currentThread(), what);
        since.put(Thread.currentThread(), System.nanoTime());
    }
}
