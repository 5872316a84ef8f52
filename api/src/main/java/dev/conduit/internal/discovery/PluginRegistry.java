package dev.conduit.internal.discovery;

import dev.conduit.PluginInfo.Status;
import dev.conduit.internal.CloseFailures;
import dev.conduit.internal.RuntimeKeys;
import dev.conduit.internal.RuntimeSettings;
import dev.conduit.internal.config.ConfigResolver;
import dev.conduit.internal.install.PluginInstall;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadStart;
import dev.conduit.spi.Version;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The plugins of one {@code Conduit}: discovered, validated, de-duplicated, left out by
 * {@code transports} or probed, and selected, in that order. Immutable once built.
 */
public final class PluginRegistry {

    private static final Version RUNTIME_SPI = Version.parse(ConduitPlugin.SPI_VERSION);
    private static final Set<String> RUNTIME_KEYS = RuntimeKeys.ALL.stream().map(ConfigKey::name).collect(Collectors.toUnmodifiableSet());
    /** The runtime's keys by the environment variable that sets each. */
    private static final Map<String, String> RUNTIME_VARIABLES = RuntimeKeys.ALL.stream()
            .collect(Collectors.toUnmodifiableMap(ConfigKey::environmentName, ConfigKey::name));

    private final List<PluginRecord> all;
    private final List<PluginRecord> selected;

    private PluginRegistry(List<PluginRecord> all, List<PluginRecord> selected) {
        this.all = all;
        this.selected = selected;
    }

    /**
     * Discovers and validates plugins. {@link #leaveOut}, {@link #declareKeys}, {@link #checkConfig}
     * and {@link #probeAndSelect} follow, in that order.
     */
    public static List<PluginRecord> discover(RuntimeSettings settings, String pluginPath, String pluginPathSource) {
        List<Candidate> candidates = new ArrayList<>();
        for (ConduitPlugin p : settings.extraPlugins()) {
            candidates.add(Candidate.of(p, "added in code (" + p.getClass().getName() + ")"));
        }
        if (settings.discover()) {
            candidates.addAll(ServiceDiscovery.discover(settings.classLoader()));
        }
        if (pluginPath != null) {
            for (Path dir : PluginDirectory.distinct(RuntimeKeys.pluginDirectories(pluginPath))) {
                candidates.addAll(PluginDirectory.load(dir, pluginPathSource));
            }
        }
        List<PluginRecord> records = new ArrayList<>();
        for (Candidate c : candidates) records.add(validate(c));
        shadowDuplicates(records);
        return records;
    }

    /** Reads a candidate's metadata once and checks it; any failure refuses or breaks only this plugin. */
    private static PluginRecord validate(Candidate c) {
        if (c.plugin() == null) {
            return new PluginRecord(null, c.label(), null, null, "", c.origin(), EnumSet.noneOf(dev.conduit.spi.Capability.class),
                    EnumSet.noneOf(dev.conduit.spi.ThreadMode.class), 0, Status.BROKEN, c.error());
        }
        ConduitPlugin p = c.plugin();
        String name = c.label();
        try {
            name = p.name();
            Version version = p.version();
            String spi = p.spiVersion();
            String description = Optional.ofNullable(p.description()).orElse("");
            // Each method is called once: a plugin whose answers change must not confuse the runtime later.
            var declaredCapabilities = p.capabilities();
            var capabilities = declaredCapabilities == null || declaredCapabilities.isEmpty()
                    ? EnumSet.noneOf(dev.conduit.spi.Capability.class) : EnumSet.copyOf(declaredCapabilities);
            var declaredModes = p.threadModes();
            var modes = declaredModes == null || declaredModes.isEmpty()
                    ? EnumSet.noneOf(dev.conduit.spi.ThreadMode.class) : EnumSet.copyOf(declaredModes);
            int priority = p.priority();
            List<ConfigKey<?>> declaredKeys = p.configKeys();
            List<ConfigKey<?>> keys = declaredKeys == null ? List.of() : List.copyOf(declaredKeys);
            PluginRecord r = new PluginRecord(p, name == null ? c.label() : name, version, spi, description, c.origin(),
                    capabilities, modes, priority, null, "");
            r.configKeys = keys;
            String problem = problem(name, version, spi, capabilities.isEmpty(), modes.isEmpty(), keys);
            if (problem != null) {
                r.status = Status.REFUSED;
                r.reason = problem;
            }
            return r;
        } catch (Throwable e) { // an Error too (a class missing from the plugin), and a checked one thrown undeclared (Kotlin)
            CloseFailures.rethrowIfTheJvmsOwn(e);
            // The class too: a missing class's message is its path alone ("org/example/NativeLib"); its WARNING carries e.
            PluginRecord r = new PluginRecord(null, name == null ? c.label() : name, null, null, "", c.origin(),
                    EnumSet.noneOf(dev.conduit.spi.Capability.class), EnumSet.noneOf(dev.conduit.spi.ThreadMode.class), 0,
                    Status.BROKEN, "reading its metadata failed: " + e.getClass().getName() + " (" + ServiceDiscovery.describe(e) + ")");
            r.failure = e;
            return r;
        }
    }

    /** The first word of every system property Conduit reads, {@code conduit.}: ConduitBuilder#set drops it from a key. */
    private static final String RESERVED_FOR_PROPERTIES = "conduit";

    private static String problem(String name, Version version, String spi, boolean noCapabilities, boolean noModes,
            List<ConfigKey<?>> keys) {
        if (name == null) return "name() returned null: return the plugin's name, lower-case letters, digits and '-', starting with a letter";
        if (!PayloadReader.isName(name)) {
            return "invalid plugin name '" + name + "': lower-case letters, digits and '-', starting with a letter, at most 32";
        }
        if (name.equals(ConfigResolver.RUNTIME)) {
            // Its keys and the runtime's would be one owner's: listed as each other's, and its breaking would forget the runtime's.
            return "plugin name '" + name + "' is reserved: it owns the runtime's own config keys (ConfigEntry.owner); name the plugin "
                    + "otherwise";
        }
        if (name.equals(RESERVED_FOR_PROPERTIES)) {
            // ConduitBuilder#set takes a key as its property too, dropping "conduit.": its keys conduit.x would become x there.
            return "plugin name '" + name + "' is reserved: a key set in the builder may be given as its system property, whose "
                    + "leading 'conduit.' is dropped, so this plugin's keys (conduit.x) could not be set there by their names; name the "
                    + "plugin otherwise";
        }
        if (version == null) return "version() returned null";
        Version spiVersion;
        try {
            spiVersion = Version.parse(spi);
        } catch (RuntimeException e) {
            return "spiVersion() '" + spi + "' is not a version; implement it as 'return ConduitPlugin.SPI_VERSION;'";
        }
        if (spiVersion.major() != RUNTIME_SPI.major()) {
            return "built for SPI " + spiVersion + ", this runtime implements SPI " + RUNTIME_SPI
                    + " (major versions differ); use a version of the plugin built for SPI " + RUNTIME_SPI.major() + ".x";
        }
        if (spiVersion.minor() > RUNTIME_SPI.minor()) {
            return "built for SPI " + spiVersion + ", newer than this runtime's SPI " + RUNTIME_SPI
                    + "; upgrade Conduit or use an older version of the plugin";
        }
        // Selected, it would offer nothing, and what needs a capability would fail naming none of this plugin's.
        if (noCapabilities) {
            return "declares no capabilities (capabilities() returned null or an empty set): declare what it implements, "
                    + "Capability.AM for a transport, MEMORY and IPC for a memory provider";
        }
        if (noModes) return "declares no thread modes";
        Set<String> names = new LinkedHashSet<>();
        Map<String, String> variables = new LinkedHashMap<>();
        for (ConfigKey<?> k : keys) {
            if (!k.name().startsWith(name + ".")) {
                return "config key '" + k.name() + "' must start with the plugin's name: '" + name + ".'";
            }
            // A key is read by its name, and the first declaration of a name wins: the plugin would read the runtime's
            // value, or its other key's of another type, and a setting meant for it would set the runtime's.
            if (RUNTIME_KEYS.contains(k.name())) {
                return "config key '" + k.name() + "' is the runtime's: a plugin declares keys of its own, named otherwise";
            }
            if (!names.add(k.name())) {
                return "config key '" + k.name() + "' is declared twice: each key of a plugin needs a name of its own";
            }
            // '.' and '-' both become '_' in a variable: two names can share one, which would set both keys at once.
            String variable = k.environmentName();
            String other = RUNTIME_VARIABLES.containsKey(variable) ? "the runtime's key '" + RUNTIME_VARIABLES.get(variable) + "'"
                    : variables.containsKey(variable) ? "its key '" + variables.get(variable) + "'" : null;
            if (other != null) {
                return "config key '" + k.name() + "' is set by environment variable " + variable + ", as " + other
                        + " is ('.' and '-' both become '_'): a plugin names its keys so that each has a variable of its own";
            }
            variables.put(variable, k.name());
        }
        return null;
    }

    /** Of two usable plugins with one name the higher version wins; ties keep the first found. */
    private static void shadowDuplicates(List<PluginRecord> records) {
        Map<String, PluginRecord> best = new LinkedHashMap<>();
        for (PluginRecord r : records) {
            if (!r.isCandidate()) continue;
            PluginRecord current = best.get(r.name);
            if (current == null || r.version.compareTo(current.version) > 0) best.put(r.name, r);
        }
        // Each by the winner of its name: one shadowed before a higher version came was named as shadowed by the one between.
        for (PluginRecord r : records) {
            if (r.isCandidate() && best.get(r.name) != r) shadow(r, best.get(r.name));
        }
    }

    private static void shadow(PluginRecord loser, PluginRecord winner) {
        loser.status = Status.SHADOWED;
        loser.reason = "shadowed by version " + winner.version + " from " + winner.origin;
        loser.shadowedBy = winner;
    }

    /**
     * Lets the best plugin a refused or broken one shadowed stand in for it: shadowing is decided
     * at discovery, before {@link #declareKeys} may refuse the winner (a key's variable is one of a
     * plugin in use's) or {@link #checkConfig} break it, and until 2026-12-07 the others of its
     * name stayed SHADOWED by a plugin nothing could use, though one of them would work. The
     * stand-in (the higher version, the first found of equal ones) is left in or out as
     * {@code transports} leaves its name ({@link #leaveOut}), and its keys are declared and checked
     * as any other's; refused or broken in turn, it leaves the name to the next. The reason of the
     * one it stands in for says so. Runs after {@link #checkConfig}'s own checks, so after
     * {@link ConfigResolver#rejectUnknownBuilderKeys}, which runs again once stand-ins declared their
     * keys: a builder key only the one stood in for declared is left unread, as that plugin's keys
     * are, and one that neither declares (a misspelling) fails the build as unknown.
     */
    private static void standIn(List<PluginRecord> records, ConfigResolver config) {
        for (PluginRecord standIn = nextStandIn(records); standIn != null; standIn = nextStandIn(records)) {
            PluginRecord out = standIn.shadowedBy;
            out.reason += "; version " + standIn.version + " from " + standIn.origin + ", which it shadowed, stands in for it";
            standIn.status = standIn.leftOut == null ? null : Status.EXCLUDED;
            standIn.reason = standIn.leftOut == null ? "" : standIn.leftOut;
            standIn.shadowedBy = null;
            for (PluginRecord r : records) {
                if (r.status == Status.SHADOWED && r.shadowedBy == out) shadow(r, standIn);
            }
            Map<String, Claim> variables = new LinkedHashMap<>();
            Set<String> declared = new LinkedHashSet<>();
            for (PluginRecord r : records) {
                if (!r.keysDeclared) continue;
                for (ConfigKey<?> k : r.configKeys) variables.put(k.environmentName(), new Claim(k, r));
                declared.add(r.name);
            }
            declareKeys(standIn, variables, config, declared);
            if (!standIn.keysDeclared) {
                config.leaveUnread(standIn.name, standIn.configKeys, whyUnread(standIn));
                continue;
            }
            // Its name no longer that of a plugin left unread: a builder key under it that it does not declare is unknown.
            config.rejectUnknownBuilderKeys();
            ConfigException failed = config.validate().get(standIn.name);
            if (failed != null) {
                broken(standIn, failed.getMessage(), failed);
                config.forget(standIn.name);
            } else {
                check(standIn, config);
            }
        }
    }

    /** The best SHADOWED plugin whose shadower is refused or broken, or null. */
    private static PluginRecord nextStandIn(List<PluginRecord> records) {
        PluginRecord best = null;
        for (PluginRecord r : records) {
            if (r.status != Status.SHADOWED || (r.shadowedBy.status != Status.REFUSED && r.shadowedBy.status != Status.BROKEN)) continue;
            if (best == null || best.shadowedBy == r.shadowedBy && r.version.compareTo(best.version) > 0) best = r;
        }
        return best;
    }

    /**
     * The config keys of every candidate, and of every plugin {@code transports} left out, so that a
     * setting for one is not taken for a misspelt key. Runs after {@link #leaveOut}: '.' and '-' both
     * become '_' in a variable, so {@code dev.dax.path} of a plugin called {@code dev} and
     * {@code dev-dax.path} of one called {@code dev-dax} are both {@code CONDUIT_DEV_DAX_PATH}, and
     * which plugin the variable sets must not depend on the order they were found in while one is
     * left out. The plugins in use claim their variables first: of two in use, the one found later
     * is refused; a plugin left out whose key's variable is claimed keeps its status, and its keys
     * are neither declared nor read (it is never probed or opened, so nothing else reads them).
     * Settings under the name of a plugin found refused or broken, or left out so, are left unread,
     * not refused as unknown, and so are the variables of its keys where known.
     */
    public static void declareKeys(List<PluginRecord> records, ConfigResolver config) {
        Set<String> declared = new LinkedHashSet<>();
        Map<String, Claim> variables = new LinkedHashMap<>();
        for (PluginRecord r : records) {
            if (r.name != null && PayloadReader.isName(r.name)) config.pluginFound(r.name);
        }
        for (PluginRecord r : records) {
            if (r.isCandidate()) declareKeys(r, variables, config, declared);
        }
        for (PluginRecord r : records) {
            if (r.status == Status.EXCLUDED) declareKeys(r, variables, config, declared);
        }
        // A refused or broken plugin's keys are not declared (they may break the rules, or be unknown), but a setting for
        // it is no misspelt key: it is left unread with the plugin, which its WARNING reports.
        for (PluginRecord r : records) {
            if ((r.status == Status.REFUSED || r.status == Status.BROKEN || r.status == Status.EXCLUDED) && r.name != null
                    && PayloadReader.isName(r.name) && !declared.contains(r.name)) {
                config.leaveUnread(r.name, r.configKeys, whyUnread(r));
            }
        }
    }

    /** Why a plugin's keys are not read, as "which is ..." ends ({@link ConfigResolver#leaveUnread(String, Collection, String)}). */
    private static String whyUnread(PluginRecord r) {
        return switch (r.status) {
            case EXCLUDED -> "left out by transports";
            case REFUSED -> "refused";
            default -> "broken";
        };
    }

    /** The key of a plugin whose keys are declared that an environment variable sets. */
    private record Claim(ConfigKey<?> key, PluginRecord owner) {
        @Override
        public String toString() {
            return "key '" + key.name() + "' of plugin " + owner.name + " (" + owner.origin + ")";
        }
    }

    private static void declareKeys(PluginRecord r, Map<String, Claim> variables, ConfigResolver config, Set<String> declared) {
        Optional<ConfigKey<?>> shared = r.configKeys.stream().filter(k -> variables.containsKey(k.environmentName())).findFirst();
        if (shared.isPresent()) {
            ConfigKey<?> k = shared.get();
            Claim other = variables.get(k.environmentName());
            String clash = "config key '" + k.name() + "' is set by environment variable " + k.environmentName() + ", as "
                    + other + " is ('.' and '-' both become '_')";
            if (r.status == Status.EXCLUDED) {
                r.reason += "; its keys are not read, since " + clash + ", and that variable sets the other's; used beside "
                        + other.owner().name + ", it would be refused";
            } else {
                r.status = Status.REFUSED;
                r.reason = clash + ": use one of the two, leaving the other out by transports (^" + r.name + " or ^"
                        + other.owner().name + "), or remove one, or have their keys named apart";
            }
            return;
        }
        for (ConfigKey<?> k : r.configKeys) variables.put(k.environmentName(), new Claim(k, r));
        config.declareAll(r.configKeys, r.name);
        r.keysDeclared = true;
        declared.add(r.name);
    }

    /**
     * Parses every declared key ({@link ConfigResolver#validate}), then runs
     * {@link ConduitPlugin#checkConfig} of each plugin whose keys are declared: a malformed value, or
     * a rule between a plugin's keys, fails the build, also for a plugin {@code transports} leaves
     * out. A check that throws anything but a {@link ConfigException} (a key's: anything but an
     * {@link IllegalArgumentException}) is a fault of the plugin, not of a value: it breaks that
     * plugin alone, whose reason names the check, the keys and where their values come from, and
     * whose WARNING carries what was thrown. Then the best plugin a refused or broken one shadowed
     * stands in for it ({@link #standIn}).
     */
    public static void checkConfig(List<PluginRecord> records, ConfigResolver config) {
        Map<String, ConfigException> failedChecks = config.validate();
        for (PluginRecord r : records) {
            ConfigException failed = r.keysDeclared ? failedChecks.get(r.name) : null;
            if (failed != null) {
                broken(r, failed.getMessage(), failed);
                config.forget(r.name);
            }
        }
        for (PluginRecord r : records) {
            if (r.keysDeclared) check(r, config);
        }
        standIn(records, config);
    }

    /** Runs {@code r}'s {@link ConduitPlugin#checkConfig}: a {@link ConfigException} fails the build, anything else breaks {@code r}. */
    private static void check(PluginRecord r, ConfigResolver config) {
        List<ConfigKey<?>> read = new ArrayList<>();
        Config recording = new Config() {
            @Override
            public <T> T get(ConfigKey<T> key) {
                read.add(key);
                return config.get(key);
            }

            @Override
            public String sourceOf(ConfigKey<?> key) {
                return config.sourceOf(key);
            }
        };
        try {
            r.plugin.checkConfig(recording);
        } catch (ConfigException e) {
            throw e;
        } catch (Throwable e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
            CloseFailures.rethrowIfTheJvmsOwn(e);
            // The keys it read, the last most likely the one it choked on: what a user may try other values of meanwhile.
            String keys = read.stream().distinct().map(k -> k.name() + " (from " + config.sourceOf(k) + ")")
                    .collect(Collectors.joining(", "));
            broken(r, "its checkConfig threw " + e.getClass().getName() + " (" + ServiceDiscovery.describe(e) + ")"
                    + (keys.isEmpty() ? " before reading any config key" : " after reading config keys " + keys)
                    + ": a fault of the plugin, not of the values; report it to its author, or try other values", e);
            config.forget(r.name);
        }
    }

    private static void broken(PluginRecord r, String reason, Throwable failure) {
        r.status = Status.BROKEN;
        r.reason = reason;
        r.failure = failure;
        r.keysDeclared = false;
    }

    /**
     * Probes the candidates {@link #leaveOut} left in at once, each bounded by {@code timeout} (set in
     * {@code timeoutSource}, {@link dev.conduit.spi.Config#sourceOf}), and
     * selects those that are available, in {@code preference} order ({@link #leaveOut}'s) or, when it
     * is empty, by priority. A plugin left out is never probed.
     */
    public static PluginRegistry probeAndSelect(List<PluginRecord> records, Function<String, PluginContext> contexts,
                                                Duration timeout, String timeoutSource, List<String> preference) {
        return probeAndSelect(records, contexts, timeout, timeoutSource, preference, PROBE_THREADS);
    }

    /** With {@code threads} making each probe's thread: a test's may throw what Thread.start throws at the limit of threads. */
    static PluginRegistry probeAndSelect(List<PluginRecord> records, Function<String, PluginContext> contexts,
                                         Duration timeout, String timeoutSource, List<String> preference, ThreadFactory threads) {
        probe(records, contexts, timeout, timeoutSource, threads);
        List<PluginRecord> selected = select(records, preference);
        for (PluginRecord r : selected) r.status = Status.SELECTED;
        return new PluginRegistry(List.copyOf(records), List.copyOf(selected));
    }

    /**
     * How many times {@code probe.timeout} a probe that keeps making progress past it is waited for
     * at most: one that spins for good must not hold the build for ever.
     */
    static final int PROGRESS_WAIT_FACTOR = 6;
    /** How long a probe past {@code probe.timeout} must run without any progress ({@link ProbeProgress}) to be judged stuck. */
    private static final long PROGRESS_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final String PROBE_THREAD_PREFIX = "conduit-probe-";
    private static final ThreadFactory PROBE_THREADS = Thread.ofPlatform().daemon().name(PROBE_THREAD_PREFIX, 0).factory();

    private static void probe(List<PluginRecord> records, Function<String, PluginContext> contexts, Duration timeout, String timeoutSource,
            ThreadFactory threads) {
        ExecutorService executor = Executors.newThreadPerTaskExecutor(threads);
        try {
            Map<PluginRecord, RunningProbe> running = new LinkedHashMap<>();
            for (PluginRecord r : records) {
                if (!r.isCandidate()) continue;
                PluginContext context = contexts.apply(r.name);
                RunningProbe probe = new RunningProbe();
                try {
                    probe.result = CompletableFuture.supplyAsync(() -> {
                        probe.thread = Thread.currentThread();
                        return r.plugin.probe(context);
                    }, executor);
                } catch (OutOfMemoryError noThread) {
                    // The executor starts the thread on the JDK's path, not through ThreadStart: at the process's or its cgroup's
                    // limit of threads, this plugin's probe failed, reported as any other's; the others still get their try.
                    probe.result = CompletableFuture.failedFuture(ThreadStart.failed("cannot start the thread (" + PROBE_THREAD_PREFIX
                            + "*) that runs plugin " + r.name + "'s probe", noThread));
                }
                running.put(r, probe);
            }
            long start = System.nanoTime();
            long deadline = start + timeout.toNanos();
            long window = Math.min(PROGRESS_WINDOW_NANOS, timeout.toNanos());
            // Compared by difference, as nanoTime is: a sum that wraps still orders right within 2^63 ns.
            long lastChance = start + (timeout.toNanos() >= Long.MAX_VALUE / PROGRESS_WAIT_FACTOR ? Long.MAX_VALUE
                    : timeout.toNanos() * PROGRESS_WAIT_FACTOR);
            ProbeProgress progress = new ProbeProgress(running.values());
            for (var e : running.entrySet()) {
                PluginRecord r = e.getKey();
                try {
                    Availability a = e.getValue().await(deadline, window, lastChance, progress);
                    if (a == null) {
                        unavailable(r, "probe returned null");
                    } else {
                        r.details = a.details();
                        if (!a.isAvailable()) unavailable(r, a.reason());
                        // Only what it declares: a capability it never offered needs no ruling out.
                        Map<Capability, String> notHere = new EnumMap<>(Capability.class);
                        a.unsupportedHere().forEach((c, why) -> {
                            if (r.capabilities.contains(c)) notHere.put(c, why);
                        });
                        r.unsupportedHere = java.util.Collections.unmodifiableMap(notHere);
                    }
                } catch (TimeoutException ex) {
                    // Named where it was set: a user who set it in the builder has no variable to change.
                    unavailable(r, "probe did not finish within " + ConfigKey.durationText(timeout) + " (probe.timeout, from "
                            + timeoutSource + ")" + ex.getMessage() + ". Raise probe.timeout if the probe is slow here, or leave the "
                            + "plugin out (transports=^" + r.name + ")");
                } catch (ExecutionException ex) {
                    Throwable cause = ex.getCause();
                    unavailable(r, "probe failed: " + cause.getClass().getSimpleName() + ": " + ServiceDiscovery.describe(cause));
                } catch (InterruptedException ex) {
                    // Not a plugin's fault: marking the rest unavailable would open a Conduit with whichever probes had ended.
                    Thread.currentThread().interrupt();
                    throw new ConduitException("interrupted while probing plugins (waiting for " + r.name
                            + "): no Conduit was built; the thread's interrupt status is kept, clear it and build again");
                }
            }
        } finally {
            // A hung probe keeps its daemon thread; interrupting is all that can be done for it.
            executor.shutdownNow();
        }
    }

    /**
     * A probe under way, and the wait for it. {@code probe.timeout} bounds probes that are stuck, not
     * ones that are slow: past it, a probe is waited for while the probes make progress (one used
     * processor time, started or ended, or the JVM worked: {@link ProbeProgress}), each second, up to
     * {@link #PROGRESS_WAIT_FACTOR} times the timeout. JVMs that start at once on a few busy cores (a host's services after a
     * reboot) run their probes for many seconds each; with the plain deadline, eight such JVMs on two
     * cores found every probe past 5 s and none of them a plugin to use. The probes are judged
     * together, since one waits for another where they initialize a class both use (the native
     * bindings). Probes blocked in a call (a hung file system, a driver) in an otherwise idle JVM
     * make none, and time out at the deadline, or a second after the last progress.
     */
    private static final class RunningProbe {
        CompletableFuture<Availability> result;
        /** The probe's thread, once it runs: set by it. */
        volatile Thread thread;
        /** The processor time its thread had used at the last {@link ProbeProgress#madeSince} (the caller's thread only). */
        long processorTime = -1;
        /** Whether it had ended at the last {@link ProbeProgress#madeSince}. */
        boolean ended;

        /**
         * The probe's result, waited for until {@code deadline}, then on while each last {@code window}
         * (a second, or the timeout if shorter) saw the probes make {@code progress}, until {@code lastChance}.
         */
        Availability await(long deadline, long window, long lastChance, ProbeProgress progress)
                throws InterruptedException, ExecutionException, TimeoutException {
            long sampledAt = deadline - window;
            try {
                return result.get(Math.max(0, sampledAt - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException beforeTheLastWindow) {
                // The probes' progress is looked at from here on.
            }
            sampledAt = System.nanoTime();
            progress.madeSince();
            while (true) {
                long next = lastChance - (sampledAt + window) < 0 ? lastChance : sampledAt + window;
                try {
                    return result.get(Math.max(0, next - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (TimeoutException stillRunning) {
                    if (next == lastChance) {
                        throw new TimeoutException(", nor within " + PROGRESS_WAIT_FACTOR + " times that while the probes kept making "
                                + "progress (a probe is waited for past probe.timeout while they do)");
                    }
                }
                sampledAt = System.nanoTime();
                if (!progress.madeSince() && !result.isDone()) {
                    throw new TimeoutException(" and no probe made progress in the last " + ConfigKey.durationText(Duration.ofNanos(window))
                            + " (none used processor time, started or ended): it is stuck in a call (a file system or device that does "
                            + "not answer) or waits for something");
                }
            }
        }
    }

    /**
     * Whether the probes of one build make progress: the JVM's count of each probe thread's
     * processor time, and their starts and ends. Read by the thread that waits for them only.
     */
    private static final class ProbeProgress {
        /**
         * The JVM's clocks, first read only once a probe runs into the last window before the
         * deadline: loading the management classes took 30 to 80 ms of the build's thread in every
         * build, with its probes long done.
         */
        private static final class Clocks {
            static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();
            static final java.lang.management.OperatingSystemMXBean SYSTEM =
                    java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        }

        /** The share of one core, in parts per 100, the JVM must use between two looks to count as progress of its own. */
        private static final long JVM_SHARE_PERCENT = 1;

        private final Collection<RunningProbe> probes;
        private long jvmTime = -1;
        private long lookedAt = System.nanoTime();

        ProbeProgress(Collection<RunningProbe> probes) {
            this.probes = probes;
        }

        /**
         * Whether, since the last call, a probe used processor time, ended, or has still not started
         * (its thread waits for a core: starved, not stuck), or the JVM used at least 1 % of a core
         * (class loading, compiling and collecting on behalf of probes that wait for it: eight JVMs
         * starting at once on two busy cores saw a probe use no time of its own for a second while
         * its JVM worked). A thread whose time the JVM cannot tell shows no progress of its own.
         */
        boolean madeSince() {
            long now = System.nanoTime();
            long jvm = Clocks.SYSTEM instanceof com.sun.management.OperatingSystemMXBean os ? os.getProcessCpuTime() : -1;
            boolean progress = jvmTime >= 0 && jvm - jvmTime >= (now - lookedAt) / 100 * JVM_SHARE_PERCENT;
            jvmTime = jvm;
            lookedAt = now;
            for (RunningProbe p : probes) {
                if (p.ended) continue;
                if (p.result.isDone()) {
                    p.ended = true;
                    progress = true;
                    continue;
                }
                Thread t = p.thread;
                if (t == null) {
                    progress = true;
                    continue;
                }
                long time = Clocks.THREADS.isThreadCpuTimeSupported() ? Clocks.THREADS.getThreadCpuTime(t.threadId()) : -1;
                if (time > p.processorTime) progress = true;
                p.processorTime = Math.max(time, p.processorTime);
            }
            return progress;
        }
    }

    private static void unavailable(PluginRecord r, String reason) {
        r.status = Status.UNAVAILABLE;
        r.reason = reason;
    }

    /**
     * Applies {@code transports} (preference order, {@code ^name} exclusion, or unset: every available
     * plugin by priority): checks it against the plugins found and marks every candidate it leaves
     * out {@link Status#EXCLUDED}, before any plugin key is declared ({@link #declareKeys}) or read,
     * and before any probe runs. {@code transports} is the runtime's key, and no plugin key may have
     * a runtime key's variable ({@link #discover} refuses one), so its value is the same whichever
     * plugins are left out.
     *
     * @return the names to use in preference order; empty when every available plugin is used by priority
     */
    public static List<String> leaveOut(List<PluginRecord> records, List<String> transports, String source) {
        if (transports.isEmpty()) return List.of();
        List<String> names = named(records, transports, source, EnumSet.of(Status.BROKEN, Status.REFUSED));
        boolean exclude = transports.getFirst().startsWith("^");
        String setting = setting(transports, source);
        for (PluginRecord r : records) {
            r.excludedByName = exclude && names.contains(r.name);
            if ((r.isCandidate() || r.status == Status.SHADOWED) && names.contains(r.name) == exclude) {
                String reason = (exclude ? "excluded by " : "not named by ") + setting + ", so not probed; "
                        + (exclude ? "take it out of that list" : "name it there") + " to use it";
                // A shadowed one keeps it for when it stands in for its shadower (standIn).
                if (r.isCandidate()) {
                    r.status = Status.EXCLUDED;
                    r.reason = reason;
                } else {
                    r.leftOut = reason;
                }
            }
        }
        return exclude ? List.of() : names;
    }

    /**
     * Fails, as {@link #leaveOut} does, if {@code transports} names to use a plugin now
     * {@code BROKEN}: {@link #checkConfig}, which runs after {@link #leaveOut}, may have broken one.
     * Not one {@link #declareKeys} has since {@code REFUSED}: of two plugins named to use whose keys
     * share a variable, the one found later is refused and the other used, as docs/runtime.md says.
     */
    public static void requireNamedUsable(List<PluginRecord> records, List<String> transports, String source) {
        if (!transports.isEmpty()) named(records, transports, source, EnumSet.of(Status.BROKEN));
    }

    /**
     * The plugins {@code transports} names, once each in its order; fails for one not found, or
     * found but in one of the {@code unusable} statuses, and named to use. Until 2026-12-07
     * {@link #leaveOut} let one {@code REFUSED} at discovery (built for another SPI) pass, and the
     * build selected nothing.
     */
    private static List<String> named(List<PluginRecord> records, List<String> transports, String source,
            Set<Status> unusableStatuses) {
        Set<String> known = new LinkedHashSet<>();
        Map<String, PluginRecord> unusable = new LinkedHashMap<>();
        for (PluginRecord r : records) {
            if (unusableStatuses.contains(r.status)) {
                unusable.putIfAbsent(r.name, r);
            } else if (r.status != Status.SHADOWED) {
                known.add(r.name);
            }
        }
        // As UCX_TLS: a leading ^ makes the whole list one of names to exclude (^verbs,devdax; ^verbs,^devdax too).
        boolean exclude = transports.getFirst().startsWith("^");
        String setting = setting(transports, source);
        List<String> names = new ArrayList<>();
        for (String t : transports) {
            boolean excluded = t.startsWith("^");
            if (excluded && !exclude) {
                throw new ConfigException(setting + " mixes names to use and names to exclude; write either memfd,posix or ^verbs,devdax");
            }
            // Blanks around an item are dropped by the list; those after its ^ too, or '^ verbs' would name plugin ' verbs'.
            String name = excluded ? t.substring(1).strip() : t;
            // Excluding a plugin that is installed but broken or refused is how a user who cannot remove it silences it.
            if (!known.contains(name) && !(exclude && unusable.containsKey(name))) {
                PluginRecord found = unusable.get(name);
                throw new ConfigException(setting + " names plugin '" + name + "', which "
                        + (found != null ? "was found but is " + found.status + " (" + found.reason + ")" : "was not found") + "; found: "
                        + (known.isEmpty() ? "none" : String.join(", ", known))
                        + (found != null || exclude ? "" : "; to use it, " + PluginInstall.howToInstall("it")));
            }
            if (!names.contains(name)) names.add(name);
        }
        return names;
    }

    /** Named with where it was set: a user who typed conduit perf -t, or set a system property, is not sent to a variable they never set. */
    private static String setting(List<String> transports, String source) {
        return "transports=" + String.join(",", transports) + " (from " + source + ")";
    }

    /**
     * Higher priority first, then by name. Not by the negated priority: {@code -Integer.MIN_VALUE}
     * is itself, so a plugin whose priority said "last resort" sorted first.
     */
    private static final Comparator<PluginRecord> BY_PRIORITY_THEN_NAME =
            Comparator.comparingInt((PluginRecord r) -> r.priority).reversed().thenComparing(r -> r.name);

    /** The candidates whose probes said yes: in {@code preference} order, or by priority then name when it is empty. */
    private static List<PluginRecord> select(List<PluginRecord> records, List<String> preference) {
        List<PluginRecord> available = records.stream().filter(PluginRecord::isCandidate)
                .sorted(BY_PRIORITY_THEN_NAME).toList();
        if (preference.isEmpty()) return available;
        List<PluginRecord> chosen = new ArrayList<>();
        for (String name : preference) {
            // One candidate per name: shadowing left the highest version.
            available.stream().filter(r -> r.name.equals(name)).findFirst().ifPresent(chosen::add);
        }
        return chosen;
    }

    /**
     * Says what became of each plugin not in use. A plugin someone installed and cannot use
     * ({@code BROKEN}, {@code REFUSED}) is a mistake to fix, unlike an unavailable one (no device
     * here), so it is said where it is seen by default, as a WARNING, unless {@code transports}
     * excludes it by name: then its user knows, and may not be able to remove it. Only an entry
     * named as a plugin is told so: a {@code plugin.path} problem (labelled by its path or jar) or a
     * bad service declaration ({@code ?}) is no plugin, its remedy in its reason, and until
     * 2026-12-07 it was told to add {@code ^/opt/plugns} to a list of plugin names.
     */
    public void report(System.Logger log) {
        for (PluginRecord r : all()) {
            Status status = r.status;
            if ((status == Status.BROKEN || status == Status.REFUSED) && !r.excludedByName) {
                String exclusion = PayloadReader.isName(r.name) ? " (to stop this warning without removing it, exclude it: add ^" + r.name
                        + " to an exclusion list in transports, CONDUIT_TRANSPORTS, such as ^" + r.name + " alone)" : "";
                // With what the plugin threw, if it did, for its author: the stack trace says where.
                log.log(System.Logger.Level.WARNING, () -> "plugin " + r.name + " " + status + ": " + r.reason + exclusion, r.failure);
            } else if (status != Status.SELECTED && status != Status.EXCLUDED) {
                log.log(System.Logger.Level.DEBUG, () -> "plugin " + r.name + " " + status + ": " + r.reason
                        + (r.excludedByName ? " (excluded by transports)" : ""));
            }
        }
    }

    /**
     * Why no selected plugin offers {@code capability} here, for the error that says so: the
     * selected plugins, what rules the capability out for each one that declares it, and why
     * each other plugin is not in use; or that no plugin was found at all. An application may not
     * have {@code conduit info} at hand, and the tool's JVM may see other plugins and options.
     * The plugins not in use come in the order an empty {@code transports} prefers (priority, then
     * name); those that do not declare the capability, which would not have offered it anyway, come
     * last and are named without their reasons: with a missing shared directory, a worker's error
     * began with devdax's advice to set its devices, before memfd's and posix's real cause (helper h6).
     */
    public String whyNoneOffers(Capability capability) {
        if (all.isEmpty()) {
            return "no Conduit plugin was found: " + PluginInstall.howToInstallOne();
        }
        // "selected: []" read as a listing gone wrong (helper h7): none is said in words.
        StringBuilder b = new StringBuilder(selected.isEmpty() ? "no plugin is selected"
                : "selected: " + selected.stream().map(r -> r.name).toList());
        List<String> without = new ArrayList<>();
        List<PluginRecord> inOrder = new ArrayList<>(selected);
        // The others as an empty transports would have preferred them: by priority, then name.
        all.stream().filter(r -> !selected.contains(r))
                .sorted(BY_PRIORITY_THEN_NAME).forEach(inOrder::add);
        for (PluginRecord r : inOrder) {
            if (r.status == Status.SELECTED) {
                String why = r.unsupportedHere.get(capability);
                if (why != null) b.append("; ").append(r.name).append(" offers none here: ").append(why);
            } else if (!r.capabilities.isEmpty() && !r.capabilities.contains(capability)) { // empty: not known (its metadata failed)
                without.add(r.name + " (" + r.status + ")");
            } else {
                b.append("; ").append(r.name).append(" is ").append(r.status).append(": ").append(r.reason);
            }
        }
        if (!without.isEmpty()) b.append("; ").append(String.join(", ", without)).append(" would offer no ").append(capability).append(" anyway");
        return b.append(" (Conduit.plugins() and 'conduit info' list every plugin)").toString();
    }

    /**
     * Why this process has no transport of plugin {@code name}, which a peer's address offers, for
     * the refusal of a connect to it: what keeps it out here and so the remedy, said here because
     * {@code conduit info} runs in another JVM, which may see other plugins and another
     * {@code transports}. One left out names that setting and where it was set; one not found
     * where to install it.
     */
    public String whyNoTransport(String name) {
        Optional<PluginRecord> found = find(name);
        if (found.isEmpty()) return "'" + name + "' is not installed here: " + PluginInstall.howToInstall("it");
        PluginRecord r = found.get();
        return switch (r.status) {
            case SELECTED -> {
                String why = r.unsupportedHere.get(Capability.AM);
                yield "'" + name + "' is selected here but offers no transport here: " + (why != null ? why
                        : "its version here (" + r.version + ") declares no capability AM");
            }
            case EXCLUDED -> "'" + name + "' is " + r.reason; // "not named by transports=... (from ...), so not probed; name it there ..."
            default -> "'" + name + "' is " + r.status + " here: " + r.reason;
        };
    }

    /** Every plugin: selected ones in preference order, then the rest by name. */
    public List<PluginRecord> all() {
        List<PluginRecord> out = new ArrayList<>(selected);
        all.stream().filter(r -> !selected.contains(r)).sorted(Comparator.comparing(r -> r.name)).forEach(out::add);
        return out;
    }

    /** Selected plugins, most preferred first. */
    public List<PluginRecord> selected() {
        return selected;
    }

    /** The selected plugin called {@code name}. */
    public Optional<PluginRecord> selected(String name) {
        return selected.stream().filter(r -> r.name.equals(name)).findFirst();
    }

    /**
     * The plugin called {@code name} that speaks for the name: the one in use; else the copy that
     * was in the running (left out by {@code transports}, or unavailable); else a refused, shadowed
     * or broken one.
     */
    public Optional<PluginRecord> find(String name) {
        return all().stream().filter(r -> r.name.equals(name)).min(Comparator.comparingInt(PluginRegistry::standing));
    }

    private static int standing(PluginRecord r) {
        return switch (r.status) {
            case SELECTED -> 0;
            case EXCLUDED, UNAVAILABLE -> 1;
            case REFUSED, SHADOWED, BROKEN -> 2;
        };
    }
}
