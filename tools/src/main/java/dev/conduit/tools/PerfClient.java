package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.Message;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.HdrHistogram.Histogram;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The measuring side of {@code conduit perf}: connects to a server, introduces itself, and runs
 * each test of a {@link PerfPlan} against it.
 *
 * <p>Measured loops allocate nothing: payloads, put sources and get destinations are slices of
 * one buffer made before the loop, handlers read messages through {@link Message}'s accessors and
 * only count, and latencies go into a pre-sized {@link Histogram}. Waiting loops call
 * {@code worker.progress()} (and, with {@code --wakeup await}, {@code worker.await} when it found
 * nothing); everything runs on the thread that created the worker, as {@code SINGLE} requires.
 */
final class PerfClient implements AutoCloseable {

    /** Whether no row has been measured yet: the first warms up longer, while both JVMs' JITs are busiest. */
    private boolean firstMeasurement = true;

    /** Latencies are recorded in nanoseconds, up to ten minutes, to 3 significant digits. */
    static final long HIGHEST_NANOS = 600_000_000_000L;
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final Duration AWAIT_SLICE = Duration.ofMillis(100);
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(2);
    /** What a bootstrap field that does not decode says of the bootstrap. */
    private static final String BOOTSTRAP_WRONG = " (another version of conduit perf wrote the bootstrap, or it was damaged)";
    /**
     * Where warm-ups record, and nobody reads: a warm-up runs the measuring code, the recording
     * included. One that skipped it (a null histogram, until 2026-12-05) left the recording a branch
     * the compiled loop had never taken, and the measurement's first sample deoptimized the loop.
     * It is of the measured rows' class for the same reason: a recording call that met a second
     * class at the first measured sample would be compiled again.
     */
    private final LatencyHistogram warmUpHistogram = new LatencyHistogram();

    private final Conduit conduit;
    private final Supplier<Conduit> uncachedConduits;
    private final PerfPlan plan;
    private final PerfProgress progress;
    /** Says a stop while connecting: before this client closes what it opened, after which the JVM exits. */
    private final Consumer<Stopped> sayStopped;
    private final boolean busy;
    private final long stallMask;
    private final long timeoutNanos;
    private final List<AutoCloseable> resources = new ArrayList<>();
    private final Worker worker;
    private final Endpoint ep;
    private final Region region;
    private final PeerRegion serverRegion;
    private final long serverRegionSize;
    private final MemorySegment buffer;
    /** Where a PONG's payload is copied: the client reads what it receives, as the peers it is compared with do. */
    private final MemorySegment received;
    private final MemorySegment oneByte;
    /** PUT_DONE's payload: the put_bw phase's end value. */
    private final MemorySegment endValueMessage;
    private final PerfRun.Peer self;
    private final PerfRun.Peer server;
    private Conduit uncached;
    private String phase = "connecting";

    // Written by message handlers, which run on this thread inside progress().
    private long pongs;
    private long acks;
    private long ackValue;
    private int readySeq = -1;
    private boolean readyOk;
    private String readyError;
    private byte[] readyHandle;
    private int endedSeq = -1;
    /** What the last ENDED said the server's thread allocated from READY to END; -1 when it could not say. */
    private long serverAllocated = -1;
    private PerfProtocol.Reader welcome;
    private PeerFailedException failure;
    /** Why the server ended the session on its side, as its FAILED said; null until then. */
    private String serverFailure;
    /**
     * Why the run did not complete, for BYE to tell the server: a session that ends unfinished is a
     * failed one there too, not one that ended as planned. Null once {@link #runAll} has completed.
     */
    private String unfinished = "the client stopped before its run completed";
    /** Whether the server welcomed this client: a session began, which BYE ends. */
    private boolean welcomed;
    /** Why the run was stopped from another thread (a signal); null while it runs. The loops look now and then. */
    private volatile String stoppedBecause;
    /** Counted down when everything this client opened is closed: the shutdown hook waits for it. */
    private final CountDownLatch closed = new CountDownLatch(1);
    private final Thread cleanup;

    // What the last loop did.
    private long doneIterations;
    private long doneNanos;
    private int seq;
    /** The header of BEGIN, END and BYE: the session number WELCOME gave, by which a --keep server tells this session from the next; empty from an older server. */
    private MemorySegment session = MemorySegment.NULL;

    /**
     * Connects to the server {@code bootstrap} describes and introduces itself.
     *
     * @param uncachedConduits opens a second Conduit like {@code conduit} but with {@code ipc.cache.bytes=0}, for ipc_import uncached
     * @param sayStopped       says a stop by a signal while connecting, which this constructor throws once it has closed what it
     *                         opened: the JVM exits as soon as it has (the shutdown hook waits for no more), so it is said first
     */
    PerfClient(Conduit conduit, Supplier<Conduit> uncachedConduits, PerfBootstrap bootstrap, ThreadMode mode, PerfPlan plan,
               PerfProgress progress, Consumer<Stopped> sayStopped) {
        this.conduit = conduit;
        this.uncachedConduits = uncachedConduits;
        this.plan = plan;
        this.progress = progress;
        this.sayStopped = sayStopped;
        this.busy = plan.wakeup() == PerfPlan.Wakeup.BUSY;
        this.stallMask = busy ? 0xFFFF : 0;
        this.timeoutNanos = plan.timeout().toNanos();
        // Ctrl-C or kill: the run stops at its next look, says why in BYE and closes its worker, pools and regions before the
        // JVM exits. Without it their files (a region's chunk, the worker's leases) stayed in the shared directory, where
        // only another process's reclaim of a dead owner's files removes them; a spawned server's directory goes anyway.
        cleanup = new Thread(() -> {
            if (closed.getCount() == 0) return;
            stop("stopped by a signal");
            PerfServer.awaitQuietly(closed, PerfServer.SHUTDOWN_WAIT_NANOS);
        }, "conduit-perf-client-cleanup");
        try {
            Runtime.getRuntime().addShutdownHook(cleanup);
        } catch (IllegalStateException shuttingDown) {
            // The signal came first (a spawned run's Ctrl-C while its server started): nothing is open yet, and it is a stop,
            // not the JVM's "Shutdown in progress" said as the run's failure (until 2026-12-05).
            stoppedBecause = "stopped by a signal";
        }
        try {
            checkStopped();
            Arena arena = Arena.ofShared();
            resources.add(arena);
            buffer = arena.allocate(plan.largestSize(), 64);
            for (long i = 0; i < buffer.byteSize(); i++) buffer.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            received = arena.allocate(plan.largestSize(), 64);
            oneByte = arena.allocate(1);
            endValueMessage = arena.allocate(ValueLayout.JAVA_LONG);

            worker = conduit.newWorker(mode);
            resources.add(worker);
            // A server's answer its protocol does not lay out so is Malformed, which ends the run naming it: an
            // IndexOutOfBoundsException out of a handler was taken for a size the transport cannot carry (the row skipped
            // with the index's words, and the run went on), or, from ENDED, ended the run as no ConduitException.
            worker.onMessage(PerfProtocol.PONG, m -> {
                if (m.payloadSize() > received.byteSize()) {
                    throw PerfProtocol.malformed("PONG", m.payloadSize() + " bytes, more than the largest PING of this run ("
                            + received.byteSize() + ")");
                }
                m.copyPayload(0, received, 0, m.payloadSize());
                pongs++;
            });
            worker.onMessage(PerfProtocol.ACK, m -> {
                // Judged in place, not by a Reader's copy: ACK ends each am_bw window, inside the measured loop.
                if (m.payloadSize() < Long.BYTES) throw PerfProtocol.malformed("ACK", m.payloadSize() + " bytes, not its 8-byte count");
                ackValue = m.payloadLong(0);
                acks++;
            });
            worker.onMessage(PerfProtocol.READY, this::onReady);
            worker.onMessage(PerfProtocol.ENDED, m -> {
                PerfProtocol.Reader ended = new PerfProtocol.Reader(m, "ENDED");
                int seq = ended.u32();
                serverAllocated = ended.u64();
                endedSeq = seq;
            });
            worker.onMessage(PerfProtocol.FAILED, m -> {
                serverFailure = new PerfProtocol.Reader(m, "FAILED").string();
                // Thrown from the handler, progress() throws it in whatever wait or loop called it: each calls progress,
                // and none need look for it. The server closes its endpoint next, which said only that its worker closed.
                throw new ConduitException("the perf server failed during " + phase + ", on its side: " + SharedFiles.shown(serverFailure));
            });
            worker.onMessage(PerfProtocol.WELCOME, m -> {
                // Keep a copy: the message is valid only during this call.
                welcome = new PerfProtocol.Reader(m, "WELCOME");
            });

            WorkerAddress serverAddress;
            try {
                serverAddress = WorkerAddress.fromBytes(bootstrap.address());
            } catch (InvalidHandleException e) {
                // Not a server that cannot be reached (whose file, --connect's caller was told, a server that is gone may have
                // left): the bootstrap itself is wrong, and said to be.
                throw new ConduitException("the perf server's bootstrap gives a worker address that does not decode: " + e.getMessage()
                        + BOOTSTRAP_WRONG, e);
            }
            try {
                ep = worker.connect(serverAddress, (endpoint, cause) -> failure = cause);
            } catch (ConduitException e) {
                throw new ServerUnreachable(e);
            }
            String transport = ep.transport();
            byte[] serverHandle = bootstrap.regions().get(transport);
            if (serverHandle == null) {
                throw new ConduitException("the perf server exported no region through plugin '" + transport + "' (it offers "
                        + bootstrap.regions().keySet() + "); select the same transports on both sides (-t)");
            }
            Pool pool = conduit.pool(transport);
            resources.add(pool);
            region = pool.allocate(plan.largestSize(), 64);
            resources.add(region);
            region.segment().fill((byte) 0);

            ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(PerfProtocol.VERSION).u64(ProcessHandle.current().pid())
                    .string(PerfCommand.hostName()).string(mode.name()).string(plan.wakeup().label()).string(transport)
                    .bytes(region.exportHandle()).bytes(worker.address().toBytes()).segment());
            try {
                waitUntil(() -> welcome != null, "WELCOME"); // "no WELCOME from the perf server within ..."
            } catch (Stopped e) {
                throw e;
            } catch (ConduitException e) {
                throw new ServerUnreachable(e);
            }
            PerfProtocol.Reader w = welcome;
            String error = w.string();
            if (!error.isEmpty()) throw new ConduitException("the perf server refused this session: " + SharedFiles.shown(error));
            welcomed = true;
            server = new PerfRun.Peer(w.u64(), w.string(), w.string(), w.string(), Arrays.asList(w.string().split(",")));
            if (w.more()) session = new PerfProtocol.Writer().u64(w.u64()).segment();
            self = new PerfRun.Peer(ProcessHandle.current().pid(), PerfCommand.hostName(), mode.name(), worker.threadPolicy().name(),
                    worker.address().transports());
            try {
                serverRegion = ep.peerRegion(serverHandle);
            } catch (InvalidHandleException e) {
                // It said "invalid Conduit IPC handle: field 'total.length': ...", and not whose handle that was.
                throw new ConduitException("the perf server's bootstrap gives a region handle for '" + transport + "' that does not decode: "
                        + e.getMessage() + BOOTSTRAP_WRONG, e);
            } catch (ConduitException e) {
                // A region freed or gone with its server: the runtime's "export gone: <file> does not exist" said not whose.
                throw new ConduitException("the perf server's region through '" + transport + "', which its bootstrap gives, cannot be "
                        + "opened: " + e.getMessage(), e);
            }
            resources.add(serverRegion);
            serverRegionSize = serverRegion.size();
            connectIdlePeers(serverAddress);
        } catch (RuntimeException | Error e) {
            if (welcomed) {
                // The server began the session: it is told why it ends, as after a run that failed.
                unfinished = reasonOf(e);
                try {
                    sayBye();
                } catch (RuntimeException bye) {
                    e.addSuppressed(bye);
                }
            }
            // Said before the close lets the shutdown hook, and with it the JVM, end: said after, by the caller, the line was
            // lost to the JVM's exit when no spawned server's hook held it (--connect; until 2026-12-05).
            if (e instanceof Stopped stop) sayStopped.accept(stop);
            closeResources(e);
            throw e;
        }
    }

    /**
     * {@code --peers}: connects {@code peers - 1} more workers of this process to the server's
     * worker, each sending it one message so that it tracks them as senders (a connection in its
     * receive queue, a lease it watches), then leaves them idle and open until the session ends.
     */
    private void connectIdlePeers(WorkerAddress serverAddress) {
        for (int i = 1; i < plan.peers(); i++) {
            Worker idle = conduit.newWorker(ThreadMode.SINGLE);
            resources.add(idle);
            Endpoint e;
            try {
                e = idle.connect(serverAddress);
                e.send(PerfProtocol.PEER, oneByte);
            } catch (ConduitException failed) {
                // Said as the runtime's "cannot connect to WorkerAddress[...]" alone, it named neither the perf server nor --peers.
                throw new ConduitException("idle peer " + i + " of --peers " + plan.peers() + " could not reach the perf server, which "
                        + "had welcomed this client: " + failed.getMessage(), failed);
            }
            long t0 = System.nanoTime();
            while (e.pending() > 0) {
                idle.progress();
                if (System.nanoTime() - t0 > timeoutNanos) {
                    throw new ConduitException("idle peer " + i + " of --peers " + plan.peers() + " could not send its message to the perf server within "
                            + ConfigKey.durationText(plan.timeout()) + " (--timeout)");
                }
            }
        }
    }

    PerfRun.Peer self() {
        return self;
    }

    PerfRun.Peer server() {
        return server;
    }

    String transport() {
        return ep.transport();
    }

    /** Stops the run from any thread: it throws at its next look, which closing it then follows. */
    private void stop(String because) {
        stoppedBecause = because;
        Worker w = worker;
        if (w != null) w.signal();
    }

    /** Throws when the run was stopped; called where the loops already look at the clock or at the progress line. */
    private void checkStopped() {
        String because = stoppedBecause;
        if (because != null) throw new Stopped(because + " during " + phase, welcomed);
    }

    /** The run was stopped by a signal, this JVM is exiting: said as such, also when it came before the run ("connecting"). */
    static final class Stopped extends ConduitException {
        private final boolean sessionBegan;

        Stopped(String message, boolean sessionBegan) {
            super(message);
            this.sessionBegan = sessionBegan;
        }

        /** Whether the server had welcomed the client: its session then ends with the client's BYE, which says why. */
        boolean sessionBegan() {
            return sessionBegan;
        }
    }

    /** The progress line's tick, and every 1024 iterations a look at whether the run was stopped. */
    private void tick(long iteration, long now) {
        progress.tick(iteration, now);
        if ((iteration & 1023) == 0) checkStopped();
    }

    /** Whether the run was stopped by a signal: this JVM is exiting. */
    boolean stopped() {
        return stoppedBecause != null;
    }

    /** What the run is doing or did last: a row's or warm-up's label ("am_lat 8", "ipc_import uncached 8"), or "connecting". */
    String phase() {
        return phase;
    }

    /**
     * Runs every test of the plan; {@code onTest} gets each test's rows as soon as they are measured. {@code beforeEachTest}
     * runs before each test: a look of the caller's own, which ends the run by throwing, as a failure does (its message is
     * what BYE tells the server).
     */
    List<PerfResult> runAll(Runnable beforeEachTest, Consumer<List<PerfResult>> onTest) {
        try {
            List<PerfResult> all = runEach(beforeEachTest, onTest);
            unfinished = null;
            return all;
        } catch (RuntimeException | Error e) {
            unfinished = reasonOf(e);
            throw e;
        }
    }

    private List<PerfResult> runEach(Runnable beforeEachTest, Consumer<List<PerfResult>> onTest) {
        List<PerfResult> all = new ArrayList<>();
        for (PerfTest test : plan.tests()) {
            List<String> variants = test == PerfTest.IPC_IMPORT ? List.of("cached", "uncached") : Arrays.asList((String) null);
            for (String variant : variants) {
                beforeEachTest.run();
                List<PerfResult> rows = new ArrayList<>();
                List<Long> sizes = test.sized() ? plan.sizes() : List.of(8L);
                if (sizes.size() > 1 && test != PerfTest.IPC_IMPORT) {
                    // Every size's path runs before any row is measured. A path first taken after the JIT compiled
                    // the loops without it (small messages after large ones take other branches in both JVMs)
                    // deoptimizes them, and on two busy cores the recompilation outlasted a row's own warm-up:
                    // am_bw of 8 B measured 5-10x slow after 1 MiB, and at full speed with a longer warm-up.
                    for (long size : sizes) warmUp(test, size);
                }
                for (long size : sizes) {
                    rows.add(run(test, variant, size));
                }
                progress.clear();
                onTest.accept(rows);
                all.addAll(rows);
            }
        }
        return all;
    }

    /**
     * The warm-up of one size of a message or RMA test, and no row: the pass over every size of the
     * test before its first row ({@link #runAll}). A size the row will report as skipped is passed over.
     */
    private void warmUp(PerfTest test, long size) {
        String label = test.label() + " " + PerfParsing.formatSize(size);
        phase = label;
        PerfPlan.Phase warm = plan.warmup(test, size, false, false);
        if (warm.none() || test.rma() && size > serverRegionSize || test == PerfTest.AM_LAT && size > ep.maxPayloadSize()) return;
        if (test == PerfTest.PUT_LAT) region.segment().asSlice(0, size).fill((byte) 0);
        int s = begin(test, size, label);
        if (readyOk) {
            current = warm;
            progress.start(label + " warm-up of every size", warm.iterations(), warm.nanos());
            try {
                switch (test) {
                    case AM_LAT -> amLat(size, warmUpHistogram);
                    case PUT_LAT -> putLat(size, warmUpHistogram);
                    case GET_LAT -> getLat(size, warmUpHistogram);
                    case ATOMIC_LAT -> atomicLat(warmUpHistogram);
                    case AM_BW -> amBw(size, warm);
                    case PUT_BW -> putBw(size, warm);
                    default -> throw new IllegalStateException(test + " has no warm-up of every size");
                }
            } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
                // A size the transport cannot carry: its row says so.
            }
        }
        end(s);
    }

    private PerfResult run(PerfTest test, String variant, long size) {
        String label = test.label() + (variant == null ? "" : " " + variant) + " " + PerfParsing.formatSize(size);
        phase = label;
        if (test.rma() && size > serverRegionSize) {
            return PerfResult.skipped(test, variant, size, "larger than the server's region (" + serverRegionSize
                    + " bytes): start the server with --region-size " + PerfParsing.formatSize(size) + " or more");
        }
        if (test == PerfTest.AM_LAT && size > ep.maxPayloadSize()) {
            // This side's own limit, judged before BEGIN: asked first, the server refused it as larger than it can answer and
            // said to start the server with a larger limit, also to a client whose server it spawned with its own settings.
            return PerfResult.skipped(test, variant, size, tooLargeToSend(size));
        }
        if (test == PerfTest.PUT_LAT) region.segment().asSlice(0, size).fill((byte) 0);
        boolean uncachedVariant = "uncached".equals(variant);
        int s = begin(test, size, label);
        PerfResult result;
        if (!readyOk) {
            result = PerfResult.skipped(test, variant, size, readyError);
        } else {
            PerfPlan.Phase warm = plan.warmup(test, size, uncachedVariant, firstMeasurement);
            firstMeasurement = false;
            PerfPlan.Phase measured = plan.measured(test, size, uncachedVariant);
            try {
                result = switch (test) {
                    case AM_LAT -> latency(test, variant, size, warm, measured, h -> amLat(size, h));
                    case PUT_LAT -> latency(test, variant, size, warm, measured, h -> putLat(size, h));
                    case GET_LAT -> latency(test, variant, size, warm, measured, h -> getLat(size, h));
                    case ATOMIC_LAT -> latency(test, variant, size, warm, measured, h -> atomicLat(h));
                    case IPC_IMPORT -> ipcImport(variant, size, warm, measured, readyHandle, uncachedVariant);
                    case AM_BW -> bandwidth(test, size, warm, measured, p -> amBw(size, p));
                    case PUT_BW -> bandwidth(test, size, warm, measured, p -> putBw(size, p));
                };
            } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
                // A size the transport cannot carry (e.g. larger than <plugin>.bounce.size), refused before anything was
                // sent: say so in the row, go on. Any other failure ends the run (and END is not sent).
                result = PerfResult.skipped(test, variant, size, e.getMessage());
            }
        }
        long serverAllocated = end(s);
        return result.isSkipped() || serverAllocated < 0 ? result : result.withCounter("serverAllocatedBytes", serverAllocated);
    }

    /**
     * Why an am_lat PING of {@code size} bytes, more than the endpoint carries, cannot be sent: the runtime's own refusal,
     * asked of a send it checks before anything is sent (its words name the key that raises the limit, as am_bw's row's do).
     */
    private String tooLargeToSend(long size) {
        try {
            ep.send(PerfProtocol.PING, MemorySegment.NULL, size, target -> 0);
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        throw new IllegalStateException("a PING of " + size + " bytes, over Endpoint.maxPayloadSize() " + ep.maxPayloadSize()
                + ", was not refused");
    }

    // ------------------------------------------------------------------ phases

    /** One measured loop over {@code phase}, recording into the histogram given (or, warming up, into none). */
    @FunctionalInterface
    private interface LatencyLoop {
        void run(Histogram histogram);
    }

    @FunctionalInterface
    private interface BandwidthLoop {
        void run(PerfPlan.Phase phase);
    }

    private PerfPlan.Phase current;

    private PerfResult latency(PerfTest test, String variant, long size, PerfPlan.Phase warm, PerfPlan.Phase measured, LatencyLoop loop) {
        long warmed = 0;
        if (!warm.none()) {
            current = warm;
            progress.start(phase + " warm-up", warm.iterations(), warm.nanos());
            loop.run(warmUpHistogram);
            warmed = doneIterations;
        }
        LatencyHistogram h = new LatencyHistogram();
        current = measured;
        progress.start(phase, measured.iterations(), measured.nanos());
        long allocatedBefore = ThreadAllocation.bytes();
        loop.run(h);
        long allocated = ThreadAllocation.since(allocatedBefore);
        return new PerfResult(test, variant, size, doneIterations, warmed, doneNanos, h, null, allocation(allocated));
    }

    private static Map<String, Long> allocation(long allocated) {
        return allocated < 0 ? Map.of() : Map.of("allocatedBytes", allocated);
    }

    private PerfResult bandwidth(PerfTest test, long size, PerfPlan.Phase warm, PerfPlan.Phase measured, BandwidthLoop loop) {
        long warmed = 0;
        if (!warm.none()) {
            progress.start(phase + " warm-up", warm.iterations(), warm.nanos());
            loop.run(warm);
            warmed = doneIterations;
        }
        progress.start(phase, measured.iterations(), measured.nanos());
        long allocatedBefore = ThreadAllocation.bytes();
        loop.run(measured);
        long allocated = ThreadAllocation.since(allocatedBefore);
        return new PerfResult(test, null, size, doneIterations, warmed, doneNanos, null, null, allocation(allocated));
    }

    private static void record(Histogram h, long nanos) {
        h.recordValue(Math.max(0, Math.min(nanos, HIGHEST_NANOS)));
    }

    // ------------------------------------------------------------------ the tests
    // Each test has its own measuring loop rather than one loop calling the test through a lambda:
    // a shared loop's call site would see every test and go megamorphic, adding a virtual call and
    // lost inlining inside every sample of the nanosecond-scale tests.
    //
    // Each sample is timed inside a method of its own (pingPong, putPingPong, timedGet, timedFetchAdd,
    // timedImport), which every iteration of warm-up and measurement calls, so that it is compiled by
    // its call count and stays compiled from one phase to the next. The loops around them are
    // compiled on the stack while they run, and such a compilation is dropped when its loop ends:
    // the next phase's loop starts in the interpreter and reaches compiled code again only after
    // thousands of iterations and a compilation, which outlasted a default row of 20,000 round trips
    // (8 ms at 8 B). Timed in the loop, those iterations' samples were of interpreted and profiling
    // code (docs/performance.md, "The measuring side's spin").

    /** When the last sample ended ({@link System#nanoTime}): its loop's clock for the deadline and the progress line. */
    private long sampleEnd;

    /** Ping-pong: send PING, progress until the PONG arrived; one-way latency is half the round trip. */
    private void amLat(long size, Histogram h) {
        MemorySegment payload = buffer.asSlice(0, size);
        PerfPlan.Phase p = current;
        long n = p.iterations();
        long start = System.nanoTime();
        long deadline = start + p.nanos();
        long now = start;
        long i = 0;
        while (i < n || now - deadline < 0) {
            record(h, pingPong(payload));
            now = sampleEnd;
            tick(++i, now);
        }
        doneIterations = i;
        doneNanos = now - start;
    }

    /** One PING and its PONG: half the round trip, in nanoseconds. */
    private long pingPong(MemorySegment payload) {
        long target = pongs + 1;
        long t0 = System.nanoTime();
        ep.send(PerfProtocol.PING, payload);
        long spins = 0;
        while (pongs < target) {
            poll();
            if ((++spins & stallMask) == 0) checkStall(t0);
        }
        long t1 = System.nanoTime();
        sampleEnd = t1;
        return (t1 - t0) >> 1;
    }

    /**
     * Put ping-pong (as ucx_perftest's put_lat): put {@code size} bytes whose last byte is a fresh
     * marker into the server's region and flush; the server, polling that byte, puts the same back
     * into ours; we poll our last byte. Memory is polled busily whatever {@code --wakeup} says: a put
     * wakes nobody.
     */
    private void putLat(long size, Histogram h) {
        MemorySegment source = buffer.asSlice(0, size);
        MemorySegment local = region.segment();
        long last = size - 1;
        PerfPlan.Phase p = current;
        long n = p.iterations();
        long start = System.nanoTime();
        long deadline = start + p.nanos();
        long now = start;
        long i = 0;
        while (i < n || now - deadline < 0) {
            record(h, putPingPong(source, local, last));
            now = sampleEnd;
            tick(++i, now);
        }
        doneIterations = i;
        doneNanos = now - start;
    }

    /** One put of {@code source} with a fresh marker in its {@code last} byte, and the server's put back into {@code local}: half the round trip. */
    private long putPingPong(MemorySegment source, MemorySegment local, long last) {
        byte marker = marker();
        source.set(ValueLayout.JAVA_BYTE, last, marker);
        long t0 = System.nanoTime();
        ep.put(source, serverRegion, 0);
        ep.flush();
        long spins = 0;
        while ((byte) BYTE.getVolatile(local, last) != marker) {
            if (failure != null) throw peerFailed();
            if (worker.progress() == 0) Thread.onSpinWait();
            if ((++spins & 0xFFFF) == 0) checkStall(t0);
        }
        long t1 = System.nanoTime();
        sampleEnd = t1;
        return (t1 - t0) >> 1;
    }

    /**
     * The puts of {@code source} that take the stream from {@code i} to {@code upTo} (at most to the
     * next multiple of 64), from a method compiled by its call count (as {@link #streamBlock}); {@code upTo}.
     */
    private long putBlock(MemorySegment source, long i, long upTo) {
        while (i < upTo) {
            ep.put(source, serverRegion, 0);
            i++;
            if ((i & 1023) == 0) tick(i, System.nanoTime());
        }
        return i;
    }

    private int markers;

    /** 1..255, never the same twice in a row, never 0 (a zeroed region). */
    private byte marker() {
        markers = markers % 255 + 1;
        return (byte) markers;
    }

    private void getLat(long size, Histogram h) {
        MemorySegment destination = buffer.asSlice(0, size);
        PerfPlan.Phase p = current;
        long n = p.iterations();
        long start = System.nanoTime();
        long deadline = start + p.nanos();
        long now = start;
        long i = 0;
        while (i < n || now - deadline < 0) {
            record(h, timedGet(destination));
            now = sampleEnd;
            tick(++i, now);
        }
        doneIterations = i;
        doneNanos = now - start;
    }

    private long timedGet(MemorySegment destination) {
        long t0 = System.nanoTime();
        ep.get(serverRegion, 0, destination);
        long t1 = System.nanoTime();
        sampleEnd = t1;
        return t1 - t0;
    }

    private void atomicLat(Histogram h) {
        PerfPlan.Phase p = current;
        long n = p.iterations();
        long start = System.nanoTime();
        long deadline = start + p.nanos();
        long now = start;
        long i = 0;
        while (i < n || now - deadline < 0) {
            record(h, timedFetchAdd());
            now = sampleEnd;
            tick(++i, now);
        }
        doneIterations = i;
        doneNanos = now - start;
    }

    private long timedFetchAdd() {
        long t0 = System.nanoTime();
        ep.fetchAdd(serverRegion, 0, 1);
        long t1 = System.nanoTime();
        sampleEnd = t1;
        return t1 - t0;
    }

    /**
     * importRegion + close of the handle the server exported for this size, reopening the region
     * closed before; uncached through a Conduit with ipc.cache.bytes=0.
     */
    private PerfResult ipcImport(String variant, long size, PerfPlan.Phase warm, PerfPlan.Phase measured, byte[] handle, boolean uncachedVariant) {
        Conduit c = uncachedVariant ? uncachedConduit() : conduit;
        IpcCacheStats before = c.ipcCacheStats();
        long warmed = 0;
        if (!warm.none()) {
            progress.start(phase + " warm-up", warm.iterations(), warm.nanos());
            importLoop(c, handle, warm, warmUpHistogram, uncachedVariant);
            warmed = doneIterations;
        }
        IpcCacheStats measuredFrom = c.ipcCacheStats();
        LatencyHistogram h = new LatencyHistogram();
        progress.start(phase, measured.iterations(), measured.nanos());
        long allocatedBefore = ThreadAllocation.bytes();
        importLoop(c, handle, measured, h, uncachedVariant);
        long allocated = ThreadAllocation.since(allocatedBefore);
        IpcCacheStats after = c.ipcCacheStats();
        if (uncachedVariant && after.hits() != measuredFrom.hits()) {
            throw new ConduitException("ipc_import uncached: the IPC cache served " + (after.hits() - measuredFrom.hits())
                    + " imports with ipc.cache.bytes=0 (a runtime bug)");
        }
        Map<String, Long> counters = new java.util.HashMap<>(allocation(allocated));
        counters.put("cacheHits", after.hits() - measuredFrom.hits());
        counters.put("cacheMisses", after.misses() - measuredFrom.misses());
        counters.put("warmupCacheMisses", measuredFrom.misses() - before.misses());
        return new PerfResult(PerfTest.IPC_IMPORT, variant, size, doneIterations, warmed, doneNanos, h, null, counters);
    }

    /**
     * The closed region each {@code Conduit} reopens at its next import, kept from one loop to the
     * next: a loop that began with none would import into a new one first, a path the compiled loop
     * of the warm-up had never taken, and run deoptimized for much of the row.
     */
    private ImportedRegion closedImport;
    private ImportedRegion closedUncachedImport;
    /** The closed region the running import loop reopens, {@link #closedImport} or {@link #closedUncachedImport}. */
    private ImportedRegion reopened;

    /** The closed region reopened ({@link #reopened}), as a hot path imports, allocating nothing on a hit, and closed again. */
    private long timedImport(Conduit c, byte[] handle) {
        long t0 = System.nanoTime();
        reopened = c.importRegion(handle, reopened);
        reopened.close();
        long t1 = System.nanoTime();
        sampleEnd = t1;
        return t1 - t0;
    }

    private void importLoop(Conduit c, byte[] handle, PerfPlan.Phase p, Histogram h, boolean uncachedVariant) {
        long n = p.iterations();
        long start = System.nanoTime();
        long deadline = start + p.nanos();
        long now = start;
        long i = 0;
        reopened = uncachedVariant ? closedUncachedImport : closedImport;
        while (i < n || now - deadline < 0) {
            record(h, timedImport(c, handle));
            now = sampleEnd;
            tick(++i, now);
        }
        ImportedRegion r = reopened;
        if (uncachedVariant) {
            closedUncachedImport = r;
        } else {
            closedImport = r;
        }
        doneIterations = i;
        doneNanos = now - start;
    }

    private Conduit uncachedConduit() {
        if (uncached == null) {
            uncached = uncachedConduits.get();
            resources.add(uncached);
        }
        return uncached;
    }

    /**
     * Streaming: DATA messages then one LAST; the server counts them and answers LAST with the count
     * (ACK). Elapsed time is from the first send to the ACK. The sender keeps no backlog: when the
     * peer's queue is full (the message went to the endpoint's local queue) it progresses until the
     * transport took it.
     */
    private void amBw(long size, PerfPlan.Phase p) {
        MemorySegment payload = buffer.asSlice(0, size);
        long n = p.iterations();
        long target = acks + 1;
        long start = System.nanoTime();
        long deadline = start + p.nanos();
        streamed = 0;
        while (!streamBlock(payload, n, p.nanos() == 0, deadline)) {
            // a block of messages a call, the last block's LAST included
        }
        long i = streamed;
        // The answer is waited for from the end of the stream: a stream longer than --timeout is no stall.
        long sent = System.nanoTime();
        long spins = 0;
        while (acks < target) {
            poll();
            if ((++spins & stallMask) == 0) checkStall(sent);
        }
        long end = System.nanoTime();
        if (ackValue != i) {
            throw new ConduitException(phase + ": the server counted " + ackValue + " messages, " + i + " were sent");
        }
        doneIterations = i;
        doneNanos = end - start;
    }

    /** Until the endpoint's local queue is empty. */
    private void drain() {
        long t0 = System.nanoTime();
        long spins = 0;
        while (ep.pending() > 0) {
            if (failure != null) throw peerFailed();
            worker.progress();
            if ((++spins & 0xFFFF) == 0) checkStall(t0);
        }
    }

    /** Messages of the running am_bw or put_bw stream sent so far. */
    private long streamed;

    /**
     * Up to {@value #STREAM_BLOCK} messages of an am_bw stream of {@code n} (or, when not
     * {@code counted}, of whole blocks of 64 until {@code deadline}), the last one LAST; whether it
     * was sent. The messages go out from this method, compiled by its call count, not from the
     * loop that calls it (see "the tests", above: such a loop starts each phase interpreted).
     */
    private boolean streamBlock(MemorySegment payload, long n, boolean counted, long deadline) {
        long i = streamed;
        for (int k = 0; k < STREAM_BLOCK; k++) {
            boolean last = i + 1 >= n && (counted || (i & 63) == 63 && System.nanoTime() - deadline >= 0);
            ep.send(last ? PerfProtocol.LAST : PerfProtocol.DATA, payload);
            i++;
            if (ep.pending() > 0) {
                drain();
            } else if ((i & 255) == 0) {
                worker.progress();
            }
            if ((i & 1023) == 0) tick(i, System.nanoTime());
            if (last) {
                streamed = i;
                return true;
            }
        }
        streamed = i;
        return false;
    }

    private static final int STREAM_BLOCK = 64;

    /**
     * Streaming puts of {@code size} bytes to offset 0 of the server's region, each ending with the
     * phase's end value ({@link PerfProtocol#newEndValue}), then flush and PUT_DONE naming it; the
     * server checks that its region ends with it and acknowledges. Elapsed time is from the first put to the ACK. A timed stream is whole blocks of
     * 64 puts, at least one.
     */
    private void putBw(long size, PerfPlan.Phase p) {
        MemorySegment source = buffer.asSlice(0, size);
        long endValue = PerfProtocol.newEndValue();
        PerfProtocol.writeEndValue(source, endValue);
        endValueMessage.set(ValueLayout.JAVA_LONG, 0, endValue);
        long n = p.iterations();
        long target = acks + 1;
        long start = System.nanoTime();
        long deadline = start + p.nanos();
        long i = 0;
        // A timed stream ends on a whole block of 64, as am_bw's does, and is never empty: a duration shorter than the
        // first look at the clock (-d 1ns) would send no put, and PUT_DONE would name an end value that none carried.
        while (i < n || p.nanos() > 0 && (i == 0 || (i & 63) != 0 || System.nanoTime() - deadline < 0)) {
            i = putBlock(source, i, i < n ? Math.min(n, (i | 63) + 1) : (i | 63) + 1);
        }
        ep.flush();
        ep.send(PerfProtocol.PUT_DONE, endValueMessage);
        long sent = System.nanoTime();
        long spins = 0;
        while (acks < target) {
            poll();
            if ((++spins & stallMask) == 0) checkStall(sent);
        }
        long end = System.nanoTime();
        if (ackValue != 1) throw new ConduitException(phase + ": the server did not find the end value of the phase's puts in its region");
        doneIterations = i;
        doneNanos = end - start;
    }

    // ------------------------------------------------------------------ waiting

    /**
     * One step of waiting for the server: progress, and when there was nothing, a spin-wait hint
     * (busy polling, as Agrona's {@code BusySpinIdleStrategy} does) or with --wakeup await sleep.
     */
    private void poll() {
        if (failure != null) throw peerFailed();
        if (busy) {
            if (worker.progress() == 0) Thread.onSpinWait();
        } else if (worker.progress() == 0) {
            worker.await(AWAIT_SLICE);
        }
    }

    private void checkStall(long since) {
        checkStopped();
        if (System.nanoTime() - since > timeoutNanos) {
            throw new ConduitException("no answer from the perf server for " + ConfigKey.durationText(plan.timeout()) + " during "
                    + phase + " (--timeout)");
        }
    }

    /** The server a bootstrap names could not be reached, or did not answer: no session began. */
    static final class ServerUnreachable extends ConduitException {
        @java.io.Serial private static final long serialVersionUID = 1L;

        ServerUnreachable(ConduitException cause) {
            super(cause.getMessage(), cause);
        }
    }

    private void waitUntil(BooleanSupplier condition, String what) {
        long t0 = System.nanoTime();
        while (!condition.getAsBoolean()) {
            checkStopped();
            poll();
            if (System.nanoTime() - t0 > timeoutNanos) {
                throw new ConduitException("no " + what + " from the perf server within " + ConfigKey.durationText(plan.timeout())
                        + " (" + phase + ", --timeout)");
            }
        }
    }

    private ConduitException peerFailed() {
        return new ConduitException("the perf server failed during " + phase + ": " + failure.getMessage(), failure);
    }

    private int begin(PerfTest test, long size, String label) {
        int s = ++seq;
        readyHandle = null;
        readyError = null;
        ep.send(PerfProtocol.BEGIN, session, new PerfProtocol.Writer().u32(s).u8(test.ordinal()).u64(size).segment());
        waitUntil(() -> readySeq == s, "READY for " + label);
        return s;
    }

    private void onReady(Message m) {
        PerfProtocol.Reader r = new PerfProtocol.Reader(m, "READY");
        int s = r.u32();
        readyOk = r.u8() == 1;
        if (readyOk) {
            byte[] handle = r.bytes();
            readyHandle = handle.length == 0 ? null : handle;
        } else {
            readyError = r.string();
        }
        readySeq = s;
    }

    /** Ends phase {@code s}; returns the bytes the server's thread allocated from READY to END, or -1 when it could not say. */
    private long end(int s) {
        if (failure != null) return -1;
        ep.send(PerfProtocol.END, session, new PerfProtocol.Writer().u32(s).segment());
        waitUntil(() -> endedSeq == s, "ENDED");
        return serverAllocated;
    }

    // ------------------------------------------------------------------ closing

    /**
     * Says goodbye, with why when the run did not complete (the server then ends the session as
     * failed), and releases everything. Nothing is said to a server that failed.
     */
    @Override
    public void close() {
        RuntimeException failed = null;
        try {
            sayBye();
        } catch (RuntimeException e) {
            failed = e;
        }
        closeResources(failed);
        if (failed != null) throw failed;
    }

    /** BYE, with why when the run did not complete ({@link #unfinished}); nothing to a server that failed. */
    private void sayBye() {
        if (failure == null && serverFailure == null && ep != null && !ep.isFailed()) {
            ep.send(PerfProtocol.BYE, session, unfinished == null ? MemorySegment.NULL : new PerfProtocol.Writer().string(PerfProtocol.abridged(unfinished)).segment());
            long deadline = System.nanoTime() + CLOSE_WAIT.toNanos();
            while (ep.pending() > 0 && System.nanoTime() < deadline) worker.progress();
        }
    }

    private static String reasonOf(Throwable failure) {
        return failure.getMessage() == null ? failure.toString() : failure.getMessage();
    }

    private void closeResources(Throwable primary) {
        for (AutoCloseable r : resources.reversed()) {
            try {
                r.close();
            } catch (Exception e) {
                if (primary != null) primary.addSuppressed(e);
            }
        }
        resources.clear();
        closed.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(cleanup);
        } catch (IllegalStateException e) {
            // shutting down: the hook, which waited for this, ends too
        }
    }
}
