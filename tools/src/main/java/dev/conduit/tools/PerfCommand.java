package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ThreadMode;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.Stack;
import java.util.concurrent.Callable;
import java.util.function.IntSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * {@code conduit perf}: two processes measured against each other, as {@code ucx_perftest} does
 * for UCX. Without {@code --server} or {@code --connect} it starts its own server process
 * ({@link PerfPeer}); {@code --server} waits for a client; {@code --connect} measures against one.
 * See docs/tools.md ("conduit perf") for the tests, their methods and the output.
 */
@Command(name = "perf",
        mixinStandardHelpOptions = true,
        versionProvider = ToolVersion.class,
        header = "Measures latency and bandwidth between two processes: active messages, put, get, atomics, IPC import.",
        description = {
                "Without --server or --connect, starts its own server process (the same JVM and module path) with a private "
                        + "shared directory under the configured shared.dir (/dev/shm by default), and runs the tests against it.",
                "--server publishes its address in the shared directory (file conduit-perf-NAME.addr) or serves it over TCP "
                        + "(--listen), then serves one client (--keep: one after another). --connect reads that file, or asks "
                        + "HOST:PORT, and runs the tests.",
                "",
                "Tests: am_lat, am_bw, put_lat, put_bw, get_lat, atomic_lat, ipc_import, or all. "
                        + "Default: every test but put_lat."},
        footerHeading = "%nExit codes:%n",
        footer = {
                "  0  success",
                "  1  Conduit or the peer failed: the message goes to standard error",
                "  2  usage error: unknown test, malformed size or duration, options that",
                "     exclude each other, a -t that selects no plugin that carries messages",
                "",
                "Examples:",
                "  conduit perf                                  default suite, spawned peer",
                "  conduit perf am_lat -s 8,4k,1m -d 2s -t memfd",
                "  conduit perf --server --shared-dir /mnt/shm   (in a container)",
                "  conduit perf --connect --shared-dir /srv/shm am_lat am_bw",
                "  conduit perf --server --listen 127.0.0.1:7777",
                "  conduit perf --connect 127.0.0.1:7777 --json --plot perf.png"})
final class PerfCommand implements Callable<Integer> {

    private static final String DEFAULT_SIZES = "8,4k,64k,1m";
    private static final String DEFAULT_NAME = "default";

    @Parameters(paramLabel = "TEST", arity = "0..*",
            description = "Tests to run, in the order given: am_lat, am_bw, put_lat, put_bw, get_lat, atomic_lat, ipc_import; all for each in this order. "
                    + "Default: all but put_lat.")
    private List<String> testNames = new ArrayList<>();

    @Option(names = {"-s", "--sizes"}, split = ",", paramLabel = "SIZE", converter = PerfParsing.SizeConverter.class,
            description = "Message sizes, comma-separated, with an optional suffix k, m, g (powers of 1024). Default: " + DEFAULT_SIZES + ".")
    private List<Long> sizes = new ArrayList<>();

    @Option(names = {"-n", "--iterations"}, paramLabel = "N",
            description = "Measured iterations per test and size. Default: per test and size (see docs/tools.md).")
    private Long iterations;

    @Option(names = {"-d", "--duration"}, paramLabel = "DURATION", converter = PerfParsing.DurationConverter.class,
            description = "Measure each test and size for this long instead of -n iterations, e.g. 2s, 500ms.")
    private Duration duration;

    @Option(names = {"-w", "--warmup"}, paramLabel = "N|DURATION", converter = PerfParsing.WarmupConverter.class,
            description = "Warm-up before each measurement, not recorded: iterations (0 for none) or a duration. "
                    + "Default: a tenth of the measurement, at least 300 ms, and 2 s for the first row.")
    private PerfParsing.Warmup warmup;

    @Option(names = {"-t", "--transport"}, paramLabel = "PLUGIN",
            description = "Transport plugin(s) to use, e.g. memfd or posix: sets the runtime's transports (CONDUIT_TRANSPORTS). "
                    + "Default: the runtime's selection.")
    private String transport;

    /** The most --peers: each is a worker with its own receive queue and lease in this process. */
    static final int MAX_PEERS = 1024;

    @Option(names = "--peers", paramLabel = "N",
            description = "Workers connected to the server's worker while measuring: this one, and N-1 more of this process that "
                    + "each send one message and stay idle, so the server's worker tracks N senders. Default: 1.")
    private int peers = 1;

    @Option(names = "--thread-mode", paramLabel = "MODE", converter = ThreadModeConverter.class,
            description = "The workers' thread mode: single, serialized or multi. Default: single.")
    private ThreadMode threadMode = ThreadMode.SINGLE;

    @Option(names = "--wakeup", paramLabel = "HOW", converter = WakeupConverter.class,
            description = "How waiting loops wait: busy (progress in a loop) or await (worker.await when there is nothing). Default: busy.")
    private PerfPlan.Wakeup wakeup;

    @Option(names = "--server", description = "Wait for a client and answer it, instead of measuring.")
    private boolean server;

    @Option(names = "--connect", arity = "0..1", paramLabel = "HOST:PORT", parameterConsumer = ConnectConsumer.class,
            description = "Measure against a running server: the one whose file is in the shared directory (--shared-dir, --name), "
                    + "or the one at HOST:PORT (TCP bootstrap).")
    private String connect;

    @Option(names = "--listen", paramLabel = "HOST:PORT", converter = PerfParsing.HostPortConverter.class,
            description = "Server: hand out the bootstrap over TCP at HOST:PORT (or PORT on 127.0.0.1) instead of a file.")
    private PerfParsing.HostPort listen;

    @Option(names = "--shared-dir", paramLabel = "DIR",
            description = "The directory shared with the peer: where the server's file is, and this process's shared.dir. "
                    + "Without a peer option: where the private directory of the spawned server is made (default: the "
                    + "configured shared.dir). It must exist.")
    private Path sharedDir;

    @Option(names = "--name", paramLabel = "NAME",
            description = "The server's name in its file conduit-perf-NAME.addr. Default: " + DEFAULT_NAME + ".")
    private String name;

    @Option(names = "--keep", description = "Server: serve client after client until stopped, instead of exiting after one.")
    private boolean keep;

    @Option(names = "--region-size", paramLabel = "SIZE", converter = PerfParsing.SizeConverter.class,
            description = "Server: the size of the regions it exports for put, get and atomics: the largest size those tests can use. "
                    + "Default: 1m.")
    private Long regionSize;

    @Option(names = "--timeout", paramLabel = "DURATION", converter = PerfParsing.DurationConverter.class,
            description = "How long to wait for the peer: its bootstrap, each answer; a server: each client's TCP bootstrap exchange, "
                    + "and a client's silence between phases. Default: 30s.")
    private Duration timeout = Duration.ofSeconds(30);

    @Option(names = "--json", description = "Writes one JSON document instead of the tables (after a failure: the rows measured before it, and error).")
    private boolean json;

    @Option(names = "--plot", paramLabel = "FILE.png", description = "Also draws the latency distributions and bandwidth by size into a PNG.")
    private Path plot;

    @Option(names = "--exit-with-stdin", hidden = true, description = "Server: exit when standard input ends (the spawning client is gone).")
    private boolean exitWithStdin;

    @Mixin
    private ConduitOptions options;

    @ParentCommand
    private ConduitCommand conduit;

    @Spec
    private CommandSpec spec;

    @Override
    public Integer call() {
        List<PerfTest> tests = validate();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if ((server || connect != null) && sharedDir != null) sharedDirectory = absolute(sharedDir);
        // A spawned server's --shared-dir is the private directory its client made: its client names the user's choice.
        if (server) return namingTheSharedDirOption(exitWithStdin ? null : sharedDirectory, () -> serve(out, err));
        PerfPlan plan = new PerfPlan(tests, sizes.isEmpty() ? defaultSizes() : sizes, iterations, duration, warmup,
                wakeup == null ? PerfPlan.Wakeup.BUSY : wakeup, timeout, peers);
        if (connect != null) return namingTheSharedDirOption(sharedDirectory, () -> connectTo(plan, out, err));
        return namingTheSharedDirOption(sharedDir != null ? absolute(sharedDir) : null, () -> spawned(plan, out, err));
    }

    /**
     * Runs a side whose {@code shared.dir} this command may set from {@code --shared-dir}. A plugin
     * that cannot use the directory (read-only, not writable for this user) says to "set shared.dir
     * (CONDUIT_SHARED_DIR)", which does nothing here: the option is set in the builder, above
     * {@code -D shared.dir} and the variable. Such a failure is told that the option set the key and
     * to give another directory with it. Until 2026-12-03 {@code conduit perf --server --shared-dir
     * DIR} on a read-only DIR gave the plugins' remedy alone, as the spawned run's private directory
     * did until 2026-12-02 (PerfRunTest#aServersSharedDirOptionThatNoPluginCanUseIsNamedAsTheOption). A client
     * without the option that cannot reach its server there is told to give it the server's directory with it: over
     * TCP too, only the bootstrap goes through the socket (PerfRunTest#aTcpClientInAnotherSharedDirectoryThanItsServers...).
     * A spawned run names the --shared-dir its user gave, in which it made the private directory both sides use: until
     * 2026-12-05 its server named that private directory as its --shared-dir, also when the user had given none but
     * {@code -D shared.dir}, whose remedy it then denied (PerfRunTest#aSpawnedRunsSharedDirThatNoPluginCanUseIsNamedAsTheUserGaveIt).
     *
     * @param option the directory the user gave with --shared-dir, which set shared.dir here; null when none did
     */
    private int namingTheSharedDirOption(Path option, IntSupplier side) {
        try {
            return side.getAsInt();
        } catch (ConduitException e) {
            // A ConfigException names a value of the key, not a directory a plugin could not use; the command adds to it itself.
            String message = e.getMessage();
            if (e instanceof ConfigException || e instanceof ConduitCommand.AlreadySaid || message == null
                    || !message.contains("shared.dir") || !message.contains("CONDUIT_SHARED_DIR")) {
                throw e;
            }
            if (option != null) {
                throw new ConduitException(message + " (here --shared-dir " + option + " sets shared.dir, above -D shared.dir "
                        + "and CONDUIT_SHARED_DIR: choose another directory with --shared-dir)", e);
            }
            if (connect != null) {
                // Over TCP too: only the bootstrap goes through the socket, the transports meet in the server's directory.
                throw new ConduitException(message + " (a client meets its server in the server's shared directory, also over TCP: "
                        + "give it the directory the server was given, with --shared-dir)", e);
            }
            throw e;
        }
    }

    private static List<Long> defaultSizes() {
        List<Long> s = new ArrayList<>();
        for (String part : DEFAULT_SIZES.split(",")) s.add(PerfParsing.size(part));
        return s;
    }

    // ------------------------------------------------------------------ validation (exit code 2)

    private List<PerfTest> validate() {
        if (server && connect != null) throw usage("--server and --connect exclude each other: a process is one side or the other");
        if (sharedDir != null && !Files.isDirectory(sharedDir)) {
            // Checked here: Conduit would only say that no plugin is available, and a client would wait its whole --timeout.
            throw usage("--shared-dir " + sharedDir + (Files.exists(sharedDir) ? " is not a directory" : " does not exist")
                    + ": give a directory both processes see (a tmpfs such as /dev/shm), or create it");
        }
        if (spec.commandLine().getParseResult().hasMatchedOption("--sizes")) {
            // picocli drops an empty size at the end ("-s 1m," measured 1m alone, "-s ," the default sizes): refused as ",," is.
            for (String given : spec.commandLine().getParseResult().matchedOption("--sizes").originalStringValues()) {
                if (given.strip().endsWith(",")) {
                    throw usage("-s '" + given + "' names an empty size: give sizes separated by commas, e.g. -s 8,4k,1m");
                }
            }
        }
        if (iterations != null && duration != null) throw usage("-n and -d exclude each other: measure a number of iterations or for a duration");
        if (iterations != null && (iterations < 1 || iterations > PerfParsing.MAX_ITERATIONS)) {
            throw usage("-n must be from 1 to " + PerfParsing.MAX_ITERATIONS + ", not " + iterations);
        }
        if (peers < 1 || peers > MAX_PEERS) throw usage("--peers must be from 1 to " + MAX_PEERS + ", not " + peers);
        if (!server) {
            if (listen != null) throw usage("--listen is for --server; a client gives --connect HOST:PORT");
            if (keep) throw usage("--keep is for --server");
            if (regionSize != null) throw usage("--region-size is for --server");
            if (exitWithStdin) throw usage("--exit-with-stdin is for --server");
        } else {
            List<String> clientOnly = new ArrayList<>();
            if (!testNames.isEmpty()) clientOnly.add("tests " + testNames);
            if (!sizes.isEmpty()) clientOnly.add("-s");
            if (iterations != null) clientOnly.add("-n");
            if (duration != null) clientOnly.add("-d");
            if (warmup != null) clientOnly.add("-w");
            if (wakeup != null) clientOnly.add("--wakeup");
            if (peers != 1) clientOnly.add("--peers");
            if (json) clientOnly.add("--json");
            if (plot != null) clientOnly.add("--plot");
            if (!clientOnly.isEmpty()) {
                throw usage(String.join(", ", clientOnly) + ": the client chooses what to measure and how (the server follows its --wakeup); "
                        + "give these to the client, not to --server");
            }
        }
        if (plot != null) {
            // Checked before the run, not after it: a chart that cannot be written would fail a finished run. Where the
            // plot lands: a symbolic link's own directory says nothing of the one its file is made in.
            Path landing;
            try {
                landing = PerfPlot.landing(plot);
            } catch (IOException e) {
                throw usage("--plot " + plot + ": " + e.getMessage());
            }
            Path parent = landing.getParent();
            if (!Files.isDirectory(parent)) throw usage("--plot " + plot + ": the directory " + parent + " does not exist");
            if (Files.isDirectory(plot)) throw usage("--plot " + plot + " is a directory: give a file name, e.g. perf.png");
            String why = PerfPlot.whyNoFileIn(parent);
            if (why != null) throw usage("--plot " + plot + ": the directory " + parent + " cannot hold a file: " + why);
        }
        boolean tcp = listen != null || (connect != null && !connect.isEmpty());
        if (name != null) {
            if (!server && connect == null) throw usage("--name names a server's file: it goes with --server or --connect");
            if (tcp) throw usage("--name names the bootstrap file, which TCP (--listen, --connect HOST:PORT) does not use");
            try {
                PerfBootstrap.checkName(name);
            } catch (IllegalArgumentException e) {
                throw usage(e.getMessage());
            }
        }
        if (connect != null && !connect.isEmpty()) {
            PerfParsing.HostPort at;
            try {
                at = PerfParsing.hostPort(connect);
            } catch (IllegalArgumentException e) {
                throw usage("--connect: " + e.getMessage());
            }
            if (at.port() == 0) {
                // Port 0 asks the kernel for a free port when listening; connecting to it reaches no server.
                throw usage("--connect " + connect + ": port 0 is no server's port: give the port the server listens on "
                        + "(a server started with --listen HOST:0 prints the port it got)");
            }
        }
        Set<PerfTest> tests = new LinkedHashSet<>();
        for (String t : testNames) {
            if (t.equalsIgnoreCase("all")) {
                tests.addAll(List.of(PerfTest.values()));
                continue;
            }
            try {
                tests.add(PerfTest.byLabel(t));
            } catch (IllegalArgumentException e) {
                // --connect takes its value only as HOST:PORT: a bare port or host lands here, as a test's name ("--connect=HOST"
                // too: picocli hands the consumer the value apart from the option).
                boolean aPort = t.chars().allMatch(Character::isDigit);
                boolean aHost = !aPort && t.matches("[A-Za-z0-9.-]+") && (t.contains(".") || t.equalsIgnoreCase("localhost"));
                throw usage(e.getMessage() + ", or all" + (aPort ? "; to connect to a server's TCP port, give --connect HOST:PORT"
                        : aHost ? "; to connect to a server on host '" + t + "', give its port too: --connect " + t + ":PORT, the port "
                        + "of the server's --listen" : ""));
            }
        }
        return tests.isEmpty() ? PerfTest.DEFAULT_SUITE : List.copyOf(tests);
    }

    private CommandLine.ParameterException usage(String message) {
        return new CommandLine.ParameterException(spec.commandLine(), message);
    }

    // ------------------------------------------------------------------ the three ways to run

    private int serve(PrintWriter out, PrintWriter err) {
        Path dir;
        int exit;
        PerfServer server;
        try (Conduit c = open(Map.of())) {
            requireATransport(c);
            dir = sharedDirectoryOf(c);
            PerfServer.Options o = new PerfServer.Options(threadMode, regionSize != null ? regionSize : 1L << 20, keep, dir,
                    name != null ? name : DEFAULT_NAME, listen, exitWithStdin, timeout);
            server = new PerfServer(c, conduit.libc(), o, out, err);
            exit = server.run();
        }
        if (server.stoppedByStdin() && listen == null && PerfPeer.isPrivateDirectory(dir)) {
            // Spawned into its private directory by a client that is gone (killed, or it gave up on this server): nobody
            // else uses the directory, and the client may not have lived to remove it, with its files in it. Any other
            // directory (the default shared.dir, a directory given by hand) is left as it is: it holds others' files.
            PerfPeer.deleteTree(dir);
        }
        return exit;
    }

    private int connectTo(PerfPlan plan, PrintWriter out, PrintWriter err) {
        try (Conduit c = open(Map.of())) {
            requireATransport(c);
            PerfBootstrap bootstrap;
            String how;
            Path file = null;
            if (connect.isEmpty()) {
                Path dir = sharedDirectoryOf(c);
                String n = name != null ? name : DEFAULT_NAME;
                // After the first look, so that the directory's own errors come first (a missing one is none: it is waited
                // for, and it makes memfd and posix unavailable, which this names with their reason).
                bootstrap = PerfBootstrap.await(dir, n, plan.timeout(), () -> false,
                        () -> requireAnAvailableTransport(c, "so this client did not wait for a server"));
                file = PerfBootstrap.file(dir, n);
                how = "bootstrap through the shared directory " + dir + ", file " + file.getFileName();
            } else {
                PerfParsing.HostPort at = PerfParsing.hostPort(connect);
                requireAnAvailableTransport(c, "so this client did not wait for a server");
                bootstrap = PerfBootstrap.fetch(at, plan.timeout());
                how = "bootstrap over TCP from " + at;
            }
            PerfRun run;
            try {
                run = measure(c, bootstrap, plan, how, e -> e, out, err);
            } catch (PerfClient.ServerUnreachable e) {
                // Only a hint, held back from a server that evidently runs (it refused for another reason: no transport in
                // common, a security module): one that holds the lock on its file, which a server in a container does too, or
                // one whose pid runs here (a server of a Conduit before 2026-12-04 locked nothing). A pid says nothing across
                // PID namespaces, so it alone sent a container's client to start a server beside a live one.
                boolean runsHere = bootstrap.host().equals(hostName())
                        && ProcessHandle.of(bootstrap.pid()).map(ProcessHandle::isAlive).orElse(false);
                // Another user's server refuses this client's workers whether it runs or not, which the error says with both
                // uids and the remedy: "may be gone ... start one" sent a container's root client to start a server beside it.
                if (file == null || runsHere || PerfBootstrap.ofAnotherUser(file) || PerfBootstrap.heldByItsServer(file)) throw e;
                // A free lock proves nothing where other kernels see the directory, and a new --server does not replace the file there.
                String underAnotherKernel = PerfBootstrap.mayRunUnderAnotherKernel(conduit.libc(), file);
                if (underAnotherKernel != null) {
                    throw new ConduitException(e.getMessage() + ". The server that published " + file + " (pid " + bootstrap.pid()
                            + " on " + bootstrap.host() + ") may be gone, or run under another kernel: " + underAnotherKernel, e);
                }
                throw new ConduitException(e.getMessage() + ". The server that published " + file + " (pid " + bootstrap.pid() + " on "
                        + bootstrap.host() + ") may be gone: a server that was killed leaves its file, which a new --server replaces "
                        + "(the lock the server held on it went with it). If none runs, start one", e);
            }
            report(run, out, err);
            return ConduitCommand.EXIT_OK;
        }
    }

    private int spawned(PerfPlan plan, PrintWriter out, PrintWriter err) {
        List<String> serverArguments = new ArrayList<>(List.of("--thread-mode", threadMode.name().toLowerCase(Locale.ROOT),
                "--region-size", Long.toString(plan.largestSize()), "--timeout", ConfigKey.durationText(plan.timeout())));
        if (transport != null) serverArguments.addAll(List.of("-t", transport));
        options.settings().forEach((k, v) -> serverArguments.addAll(List.of("--set", k + "=" + v)));
        PerfPeer.Place place;
        // Opened before the server is started: a configuration error (-t, --set) is reported once, from here, and the
        // server's private directory goes into the configured shared.dir (--set, system property, CONDUIT_SHARED_DIR).
        try (Conduit c = open(Map.of())) {
            requireATransport(c);
            Path parent = sharedDirectoryOf(c);
            String gone = PerfPeer.removeDirectoriesOfGoneRuns(conduit.libc(), parent);
            if (gone != null) err.println(gone);
            String oneCpu = oneCpuWarning(Runtime.getRuntime().availableProcessors(), plan.wakeup());
            if (oneCpu != null) err.println(oneCpu);
            // The directory first: a shared.dir missing or read-only also makes memfd and posix unavailable, and its own
            // error names it as the user set it, with the remedy.
            place = PerfPeer.makePlace(parent, sharedDir != null ? PerfPeer.ParentSource.OPTION : PerfPeer.ParentSource.CONFIGURATION);
            try {
                requireAnAvailableTransport(c, "so no server was started");
            } catch (RuntimeException | Error e) {
                place.abandon();
                throw e;
            }
        }
        PerfPeer peer = PerfPeer.start(place, serverArguments);
        PerfRun run;
        try {
            sharedDirectory = peer.directory();
            try (Conduit c = open(Map.of())) {
                // Not the remedy of a server started by hand (start one in this directory): this one was started here, in a
                // directory removed with it, and the start of its JVM is what --timeout bounded.
                PerfBootstrap bootstrap = PerfBootstrap.await(peer.directory(), PerfPeer.NAME, plan.timeout(), () -> !peer.isAlive(),
                        "the server this process started had not published it yet, and the start of its JVM counts against "
                                + "--timeout: give a longer --timeout");
                run = measure(c, bootstrap, plan, "spawned by this process, private shared directory " + peer.directory(),
                        e -> withServerOutput(peer, e), out, err);
            }
        } catch (SpawnedRunFailed e) {
            throw e; // measure said it, with the server's output, in the document too
        } catch (ConduitCommand.AlreadySaid e) {
            // Stopped by a signal or by output that could not be written, said already: the run stops its server in order
            // (the client's BYE said why, and it exits by itself), which a signal's shutdown hook waits for
            // (PerfPeer.cleanupHook). Without this stop the hook waited its whole 15 s, and so did the JVM's exit. A signal before
            // the server welcomed this client leaves no BYE to wait for: until 2026-12-05 the stop gave the server 2 s to read one.
            if (e.getCause() instanceof PerfClient.Stopped stop && !stop.sessionBegan()) {
                peer.stopWithoutSession();
            } else {
                peer.stopAfterFailure();
            }
            throw e;
        } catch (RuntimeException | Error e) {
            throw withServerOutput(peer, e);
        }
        int exit = peer.stop();
        if (exit != 0) {
            err.println("conduit perf: warning: the server process (pid " + peer.pid() + ", " + PeerExit.describe(exit)
                    + ") did not end as after a completed session; it said: " + indent(peer.output()));
        }
        report(run, out, err);
        return ConduitCommand.EXIT_OK;
    }

    /** A spawned run's failure, with what its server said: the message standard error and the JSON {@code error} give. */
    private static final class SpawnedRunFailed extends ConduitException {
        SpawnedRunFailed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * {@code e} with the spawned server's last lines, once the server has exited: it was told why in the client's BYE (when
     * the session had begun), so they say how its side ended. An Error too (OutOfMemoryError, StackOverflowError, a
     * LinkageError): it left the server running until this JVM's exit, and its output, which says what the server saw, unshown.
     */
    private static SpawnedRunFailed withServerOutput(PerfPeer peer, Throwable e) {
        int exit = peer.stopAfterFailure();
        String what = e instanceof Error || e.getMessage() == null ? "unexpected failure: " + e : e.getMessage();
        return new SpawnedRunFailed(what + "; the server process (pid " + peer.pid() + ", " + PeerExit.describe(exit) + ") said: "
                + indent(peer.output()), e);
    }

    private static String indent(String text) {
        return text.contains("\n") ? "\n  " + text.replace("\n", "\n  ") : text;
    }

    /**
     * Connects, measures, prints the tables as they come (unless --json). A run that fails once connected
     * still writes the JSON document and the chart of the rows measured before ({@link #report}): a
     * failure in the last test lost minutes of measurement, which the text tables had already shown.
     *
     * @param explain what a failure is thrown as, and said as in the document: {@code e} itself, or with the spawned
     *                server's output ({@link #withServerOutput}); given once the client is closed, its BYE said
     */
    private PerfRun measure(Conduit c, PerfBootstrap bootstrap, PerfPlan plan, String how, UnaryOperator<Throwable> explain,
                            PrintWriter out, PrintWriter err) {
        Instant date = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        double timer = timerNanos();
        PerfProgress progress = PerfProgress.onTerminal(err);
        Supplier<Conduit> uncached = () -> open(Map.of("ipc.cache.bytes", "0"));
        PerfRun stopped = null; // the rows measured before a failure in the run; null when it did not get that far
        String during = null;
        try (PerfClient client = new PerfClient(c, uncached, bootstrap, threadMode, plan, progress, stop -> sayStopped(stop, progress, err))) {
            PerfRun header = new PerfRun(ToolVersion.current(), date, client.transport(), plan.wakeup().label(), plan.peers(), client.self(), client.server(),
                    how, timer, PerfRun.Machine.current(), List.of());
            if (!json) PerfText.header(header, out);
            List<PerfResult> done = new ArrayList<>();
            try {
                return header.withResults(client.runAll(() -> {
                    // The reader of the tables is gone (head -1) or the disk is full: nothing measured next would be read. The
                    // run ends here, its BYE says why, and the command's report says that the output is incomplete. Until
                    // 2026-12-05 it measured the whole suite first. --json writes nothing before the end, where it finds out.
                    if (out.checkError()) {
                        throw new ConduitCommand.AlreadySaid(new ConduitException("standard output could not be written"));
                    }
                }, rows -> {
                    done.addAll(rows);
                    if (!json) PerfText.table(rows, out);
                }));
            } catch (RuntimeException | Error e) {
                stopped = header.withResults(done);
                during = client.phase();
                if (client.stopped()) {
                    // A signal: the JVM exits once the client is closed (its shutdown hook waits for that, no more) and a
                    // spawned server has stopped (the caller stops it, the peer's hook waits for that), so the document is written
                    // now, with the client's words, or never; and so is the line that says why, which text mode otherwise lacked.
                    progress.clear();
                    reportStopped(stopped, during, e, out, err);
                    out.flush();
                    sayStopped(e, progress, err);
                    throw new ConduitCommand.AlreadySaid(e);
                }
                throw e;
            }
        } catch (RuntimeException | Error e) {
            progress.clear();
            // Explained after the client's close: a spawned server has then read the BYE that told it why, and said so.
            if (e instanceof ConduitCommand.AlreadySaid) throw e;
            if (e instanceof PerfClient.Stopped) {
                // Stopped while connecting, before the session began: no document (none is written before it), but the line
                // that says why, which the client said before it closed (sayStopped), as for a stop during the run. Said as a
                // failure, it was lost to the JVM's exit, or, for a signal before the client began, said as "Shutdown in
                // progress" and the server's lines (until 2026-12-05).
                throw new ConduitCommand.AlreadySaid(e);
            }
            Throwable told = explain.apply(e);
            if (stopped != null) reportStopped(stopped, during, told, out, err);
            if (told instanceof Error error) throw error;
            throw (RuntimeException) told;
        } finally {
            progress.clear();
        }
    }

    /**
     * The line that says why a run stopped by a signal ended, said before its client is closed: the JVM exits as soon as
     * it is (the client's shutdown hook waits for no more), so it is said then or never.
     */
    private static void sayStopped(Throwable stop, PerfProgress progress, PrintWriter err) {
        progress.clear();
        err.println("conduit: " + stop.getMessage());
        err.flush();
    }

    /** The document and chart of the rows measured before {@code failure} stopped the run {@code during} a row or warm-up. */
    private void reportStopped(PerfRun run, String during, Throwable failure, PrintWriter out, PrintWriter err) {
        try {
            report(run, new PerfJson.Stop(during, failure.getMessage() == null ? failure.toString() : failure.getMessage()), out, err);
        } catch (RuntimeException | Error reportFailure) {
            failure.addSuppressed(reportFailure);
        }
    }

    /** The JSON document and the chart, once the peer is done. */
    private void report(PerfRun run, PrintWriter out, PrintWriter err) {
        report(run, null, out, err);
    }

    /**
     * The JSON document and the chart of {@code run}, completed ({@code stop} null) or stopped by a failure,
     * whose rows measured before it are written: the failure itself goes to standard error as any does.
     */
    private void report(PerfRun run, PerfJson.Stop stop, PrintWriter out, PrintWriter err) {
        if (json) PerfJson.write(run, stop, out);
        if (plot != null) {
            if (PerfPlot.hasData(run)) {
                PerfPlot.write(run, plot);
                if (!json) {
                    out.println();
                    out.println("chart: " + plot + (stop == null ? "" : " (of the rows measured before the failure)"));
                }
            } else if (stop == null) {
                // The run completed, and a run with skipped rows exits with 0: an empty chart is no reason to fail it.
                err.println("conduit perf: warning: --plot " + plot + ": every row was skipped, so there is no chart to draw; "
                        + "the file was not written");
            } else {
                err.println("conduit perf: --plot " + plot + ": no row was measured before the failure, so there is no chart to draw; "
                        + "the file was not written");
            }
        }
        out.flush();
        err.flush();
    }

    /**
     * Refuses at once a selection under which no plugin carries messages: every test runs over an endpoint between the two
     * workers, its session's BEGIN, READY and END too, ipc_import's included. A spawned run started its server's JVM first and
     * failed with that server's error wrapped in "the perf server exited before it published ...", and a --connect client
     * waited its whole --timeout for a bootstrap file before it found it had no transport. A selection of plugins that
     * declare none (devdax alone: it provides memory) is the command line's fault when -t or --set made it, so a usage
     * error. One whose plugins declare one that is unusable here (verbs without an RDMA device, a shared directory that is
     * missing or not writable) is left to the run ({@link #requireAnAvailableTransport}, once the directory's own errors,
     * which name it as the user gave it with the remedy, could be said).
     */
    private void requireATransport(Conduit c) {
        List<PluginInfo> chosen = c.plugins().stream().filter(p -> p.status() != PluginInfo.Status.EXCLUDED).toList();
        // Empty capabilities: not known (its metadata could not be read), so not taken for none.
        if (chosen.stream().anyMatch(p -> p.capabilities().isEmpty() || p.capabilities().contains(Capability.AM))) return;
        ConfigEntry transports = transportsOf(c);
        StringBuilder why = new StringBuilder(selection(transports)).append(" selects no plugin that carries messages: ");
        if (chosen.isEmpty()) why.append("it leaves every plugin out");
        for (int i = 0; i < chosen.size(); i++) {
            PluginInfo p = chosen.get(i);
            why.append(i == 0 ? "" : "; ").append(p.name()).append(" declares ")
                    .append(String.join(", ", p.capabilities().stream().sorted().map(Enum::name).toList())).append(" and no AM (a transport)");
        }
        why.append(", and every conduit perf test runs over an endpoint between two workers; ").append(whatWouldCarry(chosen));
        if (transport != null || transports.source() == ConfigEntry.Source.BUILDER) throw usage(why.toString());
        throw new ConduitException(why.toString());
    }

    /**
     * Refuses a run at once when no plugin of its selection offers a transport here, each named with why (verbs without an
     * RDMA device): a spawned run started its server's JVM, which failed as this one would, and said that server's error
     * wrapped in "the perf server exited before it published ..."; a --connect client waited its whole --timeout for a
     * bootstrap (until 2026-12-07). Not a usage error: the selection is right, the machine lacks what it needs. A spawned run
     * checks once its private directory is made ({@link PerfPeer#makePlace}), a client once it looked for the bootstrap
     * file: the directory's own errors, which name it as the user set it, come first.
     *
     * @param consequence what the run did not do for it, said after the reasons
     */
    private void requireAnAvailableTransport(Conduit c, String consequence) {
        Predicate<PluginInfo> carries = p -> p.status() == PluginInfo.Status.SELECTED && p.capabilities().contains(Capability.AM)
                && !p.unsupportedHere().containsKey(Capability.AM);
        if (c.plugins().stream().anyMatch(carries)) return;
        List<PluginInfo> chosen = c.plugins().stream().filter(p -> p.status() != PluginInfo.Status.EXCLUDED).toList();
        List<String> whyNot = new ArrayList<>();
        for (PluginInfo p : chosen) {
            if (!p.capabilities().isEmpty() && !p.capabilities().contains(Capability.AM)) continue;
            whyNot.add(p.status() == PluginInfo.Status.SELECTED ? p.name() + " offers none here: " + p.unsupportedHere().get(Capability.AM)
                    : p.name() + " is " + p.status() + ": " + p.reason());
        }
        throw new ConduitException(selection(transportsOf(c)) + " selects no plugin that carries messages here: " + String.join("; ", whyNot)
                + "; every conduit perf test runs over an endpoint between two workers, " + consequence + "; " + whatWouldCarry(chosen));
    }

    private static ConfigEntry transportsOf(Conduit c) {
        return c.configuration().stream().filter(e -> e.key().equals("transports")).findFirst().orElseThrow();
    }

    /** The selection as the user made it: -t, or transports where it was set. */
    private String selection(ConfigEntry transports) {
        return transport != null ? "-t " + transport
                : switch (transports.source()) {
                    case BUILDER -> "--set transports=" + transports.value();
                    case SYSTEM_PROPERTY -> "the system property " + transports.property() + "=" + transports.value();
                    case ENVIRONMENT -> transports.environment() + "=" + transports.value();
                    case DEFAULT -> "transports, not set (every plugin found here),";
                };
    }

    /** The -t values whose plugin offers a transport here, each probed as an empty transports would; {@code chosen} the selection's. */
    private String whatWouldCarry(List<PluginInfo> chosen) {
        List<String> carriers;
        try (Conduit all = open(Map.of("transports", ""))) {
            carriers = all.plugins().stream().filter(p -> p.status() == PluginInfo.Status.SELECTED
                    && p.capabilities().contains(Capability.AM) && !p.unsupportedHere().containsKey(Capability.AM)).map(PluginInfo::name).toList();
        }
        if (carriers.isEmpty()) return "no plugin here offers one ('conduit info --set transports=' says why each does not)";
        String other = chosen.stream().map(PluginInfo::name).filter(n -> !carriers.contains(n)).findFirst().map(n -> "," + n).orElse("");
        return "here " + String.join(" or ", carriers.stream().map(n -> "-t " + n).toList()) + " would (or a list with "
                + (carriers.size() == 1 ? "it" : "one of them") + ", e.g. -t " + carriers.getFirst() + other + ")";
    }

    /** Opens Conduit with --set, then -t, the shared directory of this run and {@code extra} on top. */
    private Conduit open(Map<String, String> extra) {
        ConduitBuilder b = conduit.newBuilder(options);
        if (transport != null) b.set("transports", transport);
        if (sharedDirectory != null) b.set("shared.dir", sharedDirectory.toString());
        extra.forEach(b::set);
        return b.build();
    }

    /** This process's shared.dir when this run sets it: --shared-dir with a peer option, or the spawned server's directory. */
    private Path sharedDirectory;

    /**
     * The directory this run shares with its peer: {@code --shared-dir}, else {@code c}'s shared.dir.
     * Absolute, as the output and the errors name it: a relative one means nothing to a reader in
     * another directory, the server's own user included.
     */
    private Path sharedDirectoryOf(Conduit c) {
        if (sharedDir != null) return absolute(sharedDir);
        for (ConfigEntry e : c.configuration()) {
            if (e.key().equals("shared.dir") && e.value() != null) return absolute(Path.of(e.value()));
        }
        return Path.of("/dev/shm");
    }

    /** {@code dir} as given when absolute; a relative one resolved as the kernel resolves it (a ".." after a symbolic link too). */
    private static Path absolute(Path dir) {
        if (dir.isAbsolute()) return dir;
        try {
            return dir.toRealPath();
        } catch (java.io.IOException e) {
            return dir.toAbsolutePath().normalize(); // not there: the error that follows names it, the best this can say
        }
    }

    /**
     * What a spawned run that may use one CPU says before it starts its server, or {@code null}: the server inherits the
     * client's affinity (taskset) and cgroup, and two sides that busy-poll on one CPU take turns at the scheduler's time
     * slice, so that a round trip of a microsecond or two measured 5-10 ms, and nothing in the table said why.
     */
    static String oneCpuWarning(int processors, PerfPlan.Wakeup wakeup) {
        if (processors > 1 || wakeup != PerfPlan.Wakeup.BUSY) return null;
        return "conduit perf: warning: this process may use 1 CPU (its affinity, as taskset sets it, or its cgroup's CPU limit), "
                + "and the server it starts inherits it: the two sides poll busily and take turns on that CPU a scheduler time slice "
                + "(milliseconds) at a time, which is what the latencies will show, not the transport's. Give it 2 CPUs or more "
                + "(taskset -c 0,1), or wait with --wakeup await, or start the server apart (--server) on another CPU";
    }

    /** The cost of one System.nanoTime() call, in nanoseconds (after a short warm-up). */
    static double timerNanos() {
        long sink = 0;
        double best = Double.MAX_VALUE;
        for (int round = 0; round < 5; round++) {
            int n = 100_000;
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) sink += System.nanoTime();
            long elapsed = System.nanoTime() - start;
            best = Math.min(best, (double) elapsed / n);
        }
        if (sink == 42) System.out.print(""); // keep the loop
        return best;
    }

    /** This process's host name as its UTS namespace says (a container's own), without a DNS lookup. */
    static String hostName() {
        try {
            String h = Files.readString(Path.of("/proc/sys/kernel/hostname"), StandardCharsets.UTF_8).trim();
            if (!h.isEmpty()) return h;
        } catch (java.io.IOException | RuntimeException e) {
            // fall through
        }
        String env = System.getenv("HOSTNAME");
        return env == null || env.isBlank() ? "unknown" : env;
    }

    // ------------------------------------------------------------------ picocli helpers

    /**
     * {@code --connect} takes a value only when the next argument looks like {@code HOST:PORT}, so
     * that {@code --connect am_lat} reads the file and runs am_lat.
     */
    static final class ConnectConsumer implements CommandLine.IParameterConsumer {
        @Override
        public void consumeParameters(Stack<String> args, ArgSpec argSpec, CommandSpec commandSpec) {
            String value = "";
            if (!args.isEmpty() && PerfParsing.looksLikeHostPort(args.peek())) value = args.pop();
            argSpec.setValue(value);
        }
    }

    static final class ThreadModeConverter implements ITypeConverter<ThreadMode> {
        @Override
        public ThreadMode convert(String value) {
            try {
                return ThreadMode.valueOf(value.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("'" + value + "' is not a thread mode: single, serialized or multi");
            }
        }
    }

    static final class WakeupConverter implements ITypeConverter<PerfPlan.Wakeup> {
        @Override
        public PerfPlan.Wakeup convert(String value) {
            try {
                return PerfPlan.Wakeup.valueOf(value.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("'" + value + "' is not a wakeup: busy or await");
            }
        }
    }
}
