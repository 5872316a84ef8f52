package dev.conduit.tools;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hostile client of a {@code --keep} {@link PerfServer}, which serves any process that can open its shared directory. The
 * client follows the transport (it is a real worker, as any such process can make) and lies in every field of
 * {@link PerfProtocol}: HELLO's version, strings, region handle and worker address, cut short or not; BEGIN's test and size;
 * END's and BYE's session header and payload; PING, DATA, LAST and PUT_DONE of any size in any phase; puts into the server's
 * region; a second HELLO; message ids no version sends; and it leaves with BYE, a BYE giving a reason, or without a word.
 *
 * <p>Whatever it sends ends in one of the outcomes docs/tools.md gives ("The session"): a phase refused in READY, the session
 * ended as the client's breach ({@code the client broke the protocol: malformed ...}) or failure, or served. Never a bug of
 * conduit perf (an unexpected exception: the server prints a stack trace), an {@code Error} out of the server's thread, a
 * hang, or a file or mapping of the shared directory left behind; and the server then serves the next honest client, a
 * session of one am_lat phase.
 *
 * <p>The server runs in this JVM, on a thread of its own, as {@code PerfServerTest} runs it; its posix endpoints carry
 * payloads of at most 64 KiB (its {@code posix.bounce.size}), the hostile client's 4 MiB (the default), for a client chooses
 * its own settings. Sizes that a conduit perf client may ask for but that would make each input allocate megabytes (am_bw's
 * buffer, ipc_import's region) are folded below 1 MiB: asking for them is no breach, only slow.
 */
class PerfProtocolFuzzTest {

    private static final String NAME = "fuzz";
    /** The server's largest payload: smaller than the hostile client's, so that the fuzzer may send what the server cannot echo. */
    private static final String SERVER_BOUNCE_SIZE = "64k";
    /** The region the hostile client's HELLO names, where put_lat's answers go. */
    private static final long CLIENT_REGION_SIZE = 64 << 10;
    private static final long SERVER_REGION_SIZE = 1 << 20;
    private static final String CHUNK = ".chunk";
    /**
     * A pool's shared chunks ({@code pool.chunk.size}), one per size class at most (from 64 B to a quarter of it), which it
     * keeps until it closes; a region larger than a quarter has a chunk of its own, given back at its close.
     */
    private static final long POOL_CHUNK_SIZE = 2 << 20;
    private static final int SIZE_CLASSES = 14;
    /** How long any one answer may take before the input fails as a hang (a hang guard, not a measurement). */
    private static final long ANSWER_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Payload sizes that cross the inline limit (8 KiB), the server's largest payload (64 KiB) and its region (1 MiB). */
    private static final int[] BULK_SIZES = {0, 1, 8, 8 << 10, (8 << 10) + 1, 64 << 10, (64 << 10) + 1, 1 << 20};
    /** What the server may say about a session a hostile client had, line by line (docs/tools.md, "The session"). */
    private static final List<Pattern> DOCUMENTED = Stream.of(
            "session with .* \\(thread mode .*",
            "session with .* ended after \\d+ phases? .*",
            "the session with .* failed after \\d+ phases?: the client broke the protocol: malformed .*",
            "the session with .* failed after \\d+ phases?, on the client's side: .*",
            "the session with .* failed after \\d+ phases?: the client failed: .*",
            "the session with .* failed after \\d+ phases?: the client sent nothing for .*",
            "could not start a session: .*",
            "could not turn away a second client: .*",
            "dropped \\d+ HELLOs? unanswered .*",
            "ignored a HELLO of .* in its own session \\d+: a conduit perf client says HELLO once, .*").map(p -> Pattern.compile("conduit perf server: " + p)).toList();

    private static Path shared;
    private static Conduit serverConduit;
    private static Conduit clientConduit;
    private static PerfServer server;
    private static Thread serverThread;
    private static final StringWriter serverErr = new StringWriter();
    private static final AtomicReference<Throwable> serverThrew = new AtomicReference<>();
    private static final AtomicInteger serverExit = new AtomicInteger(Integer.MIN_VALUE);
    private static PerfBootstrap bootstrap;
    /** The server's own files in the shared directory once it serves, which every input must leave as they were. */
    private static List<String> serverFiles;
    private static int honestClients;

    @BeforeAll
    static void startKeepServer() throws IOException {
        shared = Files.createTempDirectory("conduit-perf-fuzz-");
        serverConduit = PerfFuzzDirectory.conduit(shared).set("posix.bounce.size", SERVER_BOUNCE_SIZE).build();
        clientConduit = PerfFuzzDirectory.conduit(shared).build();
        server = new PerfServer(serverConduit, new PerfServer.Options(ThreadMode.SINGLE, SERVER_REGION_SIZE, true, shared, NAME, null, false,
                Duration.ofSeconds(10)), new PrintWriter(new StringWriter(), true), new PrintWriter(serverErr, true));
        serverThread = Thread.ofPlatform().daemon().name("perf-server-under-fuzz").start(() -> {
            try {
                serverExit.set(server.run());
            } catch (Throwable t) {
                serverThrew.set(t);
            }
        });
        bootstrap = PerfBootstrap.await(shared, NAME, Duration.ofSeconds(30), () -> !serverThread.isAlive());
        serverFiles = PerfFuzzDirectory.files(shared);
    }

    @AfterAll
    static void stopKeepServer() throws Exception {
        try {
            server.stop("the fuzz run is over");
            serverThread.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(serverThread.isAlive()).as("the server stops when told; " + serverErr).isFalse();
            assertThat(serverThrew.get()).as(serverErr.toString()).isNull();
            clientConduit.close();
            serverConduit.close();
            assertThat(PerfFuzzDirectory.files(shared)).as("files left in the shared directory").isEmpty();
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    @FuzzTest(maxExecutions = 1_000, maxDuration = "45s")
    void aHostileClientEndsInADocumentedOutcomeAndTheNextClientIsServed(byte[] input) {
        int said = serverErr.getBuffer().length();
        try (Client hostile = new Client()) {
            hostile.run(new Script(input));
        }
        honestSession();
        String lines = serverErr.getBuffer().substring(said);
        assertThat(serverThread.isAlive()).as("the --keep server still serves; it said: " + lines + "; it threw " + serverThrew.get())
                .isTrue();
        for (String line : lines.split("\n")) {
            assertThat(DOCUMENTED.stream().anyMatch(p -> p.matcher(line).matches()))
                    .as("an outcome docs/tools.md gives, not: %s%nall the server said: %s", line, lines).isTrue();
        }
        assertNothingOfTheClientsLeft();
    }

    /**
     * The clients' files and mappings are gone (the server's end of a session, which closes the client's region it mapped,
     * comes just after its line, so this waits for it, bounded). The server keeps its own files; its pool may also keep a
     * shared chunk per size class that ipc_import allocated, until it closes (docs/runtime.md, {@code pool.max.size}), but no
     * chunk of a region of its own, which it gives back at the region's close.
     */
    private static void assertNothingOfTheClientsLeft() {
        long start = System.nanoTime();
        while (!(theServersFilesOnly() && theServersMappingsOnly()) && System.nanoTime() - start < ANSWER_WAIT_NANOS) {
            Thread.onSpinWait();
        }
        assertThat(PerfFuzzDirectory.files(shared))
                .as("the shared directory's files once the clients are gone, the server's at its start being " + serverFiles)
                .matches(files -> theServersFilesOnly());
        assertThat(mappings()).as("this JVM's mappings of the shared directory once the clients are gone: the server's files, once each")
                .matches(mappings -> theServersMappingsOnly());
    }

    private static boolean theServersFilesOnly() {
        List<String> files = PerfFuzzDirectory.files(shared);
        List<String> chunks = files.stream().filter(f -> f.endsWith(CHUNK)).toList();
        return files.stream().filter(f -> !f.endsWith(CHUNK)).toList().equals(serverFiles.stream().filter(f -> !f.endsWith(CHUNK)).toList())
                && chunks.stream().allMatch(c -> serverFiles.contains(c.substring(0, c.lastIndexOf('-')) + ".lease"))
                && chunks.stream().filter(c -> !serverFiles.contains(c)).allMatch(c -> size(c) == POOL_CHUNK_SIZE)
                && chunks.size() <= serverFiles.stream().filter(f -> f.endsWith(CHUNK)).count() + SIZE_CLASSES;
    }

    /** The size of file {@code name} of the shared directory; -1 when it is gone. */
    private static long size(String name) {
        try {
            return Files.size(shared.resolve(name));
        } catch (IOException gone) {
            return -1;
        }
    }

    private static boolean theServersMappingsOnly() {
        List<String> mappings = mappings();
        List<String> files = PerfFuzzDirectory.files(shared);
        return mappings.stream().distinct().count() == mappings.size()
                && mappings.stream().allMatch(m -> files.contains(shared.relativize(Path.of(m)).toString()));
    }

    /**
     * The next client, an honest one: it may be told the server is still busy with the hostile one (its end can take the
     * server's look at a lease); it says HELLO again until served, then one am_lat phase whose PONG echoes its PING, and BYE.
     */
    private static void honestSession() {
        String host = "the-next-honest-client-" + ++honestClients;
        try (Client honest = new Client()) {
            long start = System.nanoTime();
            while (true) {
                honest.welcome = null;
                honest.sayHello(PerfProtocol.VERSION, host);
                honest.progressUntil(() -> honest.welcome != null, "WELCOME to the next honest client");
                if (honest.welcome.isEmpty()) break;
                assertThat(honest.welcome).as("WELCOME's error to the next honest client").startsWith("busy with another client");
                if (System.nanoTime() - start > ANSWER_WAIT_NANOS) {
                    throw new AssertionError("the --keep server still busy with the hostile client; " + theServersState(honest));
                }
                honest.worker.await(Duration.ofMillis(5));
            }
            honest.send(PerfProtocol.BEGIN, honest.sessionHeader, new PerfProtocol.Writer().u32(1).u8(PerfTest.AM_LAT.ordinal()).u64(8).segment());
            honest.progressUntil(() -> honest.readySeq == 1, "READY to the next honest client");
            assertThat(honest.readyError).as("READY's error to the next honest client").isNull();
            byte[] ping = {1, 2, 3, 4, 5, 6, 7, 8};
            honest.send(PerfProtocol.PING, MemorySegment.NULL, MemorySegment.ofArray(ping));
            honest.progressUntil(() -> honest.lastPong != null, "PONG to the next honest client");
            assertThat(honest.lastPong).isEqualTo(ping);
            honest.send(PerfProtocol.END, honest.sessionHeader, new PerfProtocol.Writer().u32(1).segment());
            honest.progressUntil(() -> honest.endedSeq == 1, "ENDED to the next honest client");
            honest.send(PerfProtocol.BYE, honest.sessionHeader, MemorySegment.NULL);
            String ended = "session with pid " + ProcessHandle.current().pid() + " on " + host + " ended after 1 phase";
            honest.progressUntil(() -> serverErr.toString().contains(ended), "the end of the next honest client's session");
        }
    }

    /**
     * What a client that waited in vain is told of the server: what it said, whether its thread still runs (where, if so)
     * or what it threw, and how the client's endpoint to it failed, if it did ({@link Client#send} drops a message on a
     * failed endpoint without a word). The server's lines alone could not tell a server that stopped, a client whose HELLO
     * never left, and an answer that never came.
     */
    private static String theServersState(Client client) {
        StringWriter state = new StringWriter();
        PrintWriter out = new PrintWriter(state);
        Throwable threw = serverThrew.get();
        if (serverThread.isAlive()) {
            out.println("its thread runs, at:");
            for (StackTraceElement frame : serverThread.getStackTrace()) out.println("\tat " + frame);
        } else {
            out.println("its thread ended" + (threw == null ? ", having thrown nothing" : ", having thrown:"));
            if (threw != null) threw.printStackTrace(out);
        }
        if (client.endpointFailure != null) out.println("this client's endpoint to it failed: " + client.endpointFailure);
        out.print("it said: " + serverErr);
        out.flush();
        return state.toString();
    }

    /** This JVM's mappings of files in the shared directory, by path (the clients' are gone with them). */
    private static List<String> mappings() {
        try (Stream<String> maps = Files.lines(Path.of("/proc/self/maps"))) {
            return maps.filter(l -> l.contains(shared.toString())).map(l -> l.substring(l.indexOf(shared.toString()))).sorted().toList();
        } catch (IOException e) {
            throw new AssertionError("cannot read /proc/self/maps", e);
        }
    }

    /**
     * A client: a worker of its own, with a region its HELLO names, that sends what a script says (the hostile one) or a
     * session of conduit perf's (the next honest one), and reads every answer as conduit perf's client does.
     */
    private static final class Client implements AutoCloseable {
        final Worker worker;
        final Endpoint ep;
        final Pool pool;
        final Region region;
        final PeerRegion serverRegion;
        MemorySegment sessionHeader = MemorySegment.NULL;
        long sessionNumber;
        String welcome;
        int readySeq = -1;
        String readyError;
        int endedSeq = -1;
        byte[] lastPong;
        String failed;
        Throwable endpointFailure;

        Client() {
            worker = clientConduit.newWorker(ThreadMode.SINGLE);
            Pool p = null;
            Region r = null;
            try {
                // Handlers read what they got as conduit perf's client does, a malformed answer being the server's fault.
                worker.onMessage(PerfProtocol.WELCOME, m -> {
                    PerfProtocol.Reader w = new PerfProtocol.Reader(m, "WELCOME");
                    String error = w.string();
                    if (error.isEmpty()) {
                        w.u64();
                        for (int field = 0; field < 4; field++) w.string();
                        sessionNumber = w.u64();
                        sessionHeader = new PerfProtocol.Writer().u64(sessionNumber).segment();
                    }
                    welcome = error;
                });
                worker.onMessage(PerfProtocol.READY, m -> {
                    PerfProtocol.Reader ready = new PerfProtocol.Reader(m, "READY");
                    int s = ready.u32();
                    if (ready.u8() == 1) {
                        ready.bytes();
                        readyError = null;
                    } else {
                        readyError = ready.string();
                    }
                    readySeq = s;
                });
                worker.onMessage(PerfProtocol.ENDED, m -> {
                    PerfProtocol.Reader ended = new PerfProtocol.Reader(m, "ENDED");
                    int s = ended.u32();
                    ended.u64();
                    endedSeq = s;
                });
                worker.onMessage(PerfProtocol.PONG, m -> lastPong = m.payloadToArray());
                worker.onMessage(PerfProtocol.ACK, m -> assertThat(m.payloadSize()).as("ACK's count").isEqualTo(8));
                worker.onMessage(PerfProtocol.FAILED, m -> failed = new PerfProtocol.Reader(m, "FAILED").string());
                ep = worker.connect(WorkerAddress.fromBytes(bootstrap.address()), (endpoint, cause) -> endpointFailure = cause);
                p = clientConduit.pool("posix");
                r = p.allocate(CLIENT_REGION_SIZE, 64);
                pool = p;
                region = r;
                serverRegion = ep.peerRegion(bootstrap.regions().get("posix"));
            } catch (RuntimeException | Error e) {
                if (r != null) r.close();
                if (p != null) p.close();
                worker.close();
                throw e;
            }
        }

        /**
         * Plays {@code script}: HELLO ({@link #hello}); once welcomed, a count of actions (mod 25), each an opcode (mod 11:
         * 0 BEGIN, 1 END, 2 PING, 3 DATA, 4 LAST, 5 PUT_DONE, 6 a put into the server's region, 7 another HELLO, 8 a message
         * of any id near the protocol's, 9 PEER, 10 BYE) and its fields ({@link #act}), as long as the server keeps the
         * session; then, unless it said BYE, a byte: even leaves with BYE, odd vanishes without a word.
         */
        void run(Script script) {
            int said = serverErr.getBuffer().length();
            hello(script);
            progressUntil(() -> welcome != null || saidSince(said, "could not start a session"), "WELCOME or the server's refusal");
            if (welcome == null || !welcome.isEmpty()) return;
            boolean bye = false;
            int actions = script.u8() % 25;
            for (int i = 0; i < actions && !bye && !sessionOver(said); i++) {
                bye = act(script);
            }
            if (!bye && script.u8() % 2 == 0) {
                // Leaves with an honest BYE, unless the script says to vanish without a word (the server sees its lease go).
                send(PerfProtocol.BYE, sessionHeader, MemorySegment.NULL);
            }
            progressUntil(() -> ep.isFailed() || ep.pending() == 0, "the hostile client's messages handed to the transport");
        }

        /** Whether the server has ended the session (it said so, or told this client). */
        private boolean sessionOver(int said) {
            return failed != null || saidSince(said, "ended after") || saidSince(said, "failed after");
        }

        /** HELLO: a flag byte says which fields lie (none: an honest HELLO) and whether it is cut short. */
        private void hello(Script script) {
            int lies = script.u8();
            int version = (lies & 1) != 0 ? script.u8() : PerfProtocol.VERSION;
            String transport = (lies & 2) != 0 ? script.word(8) : "posix";
            byte[] handle = (lies & 4) != 0 ? script.bytes(64) : region.exportHandle();
            byte[] address = worker.address().toBytes();
            if ((lies & 8) != 0) {
                int flip = script.u8();
                // The server's own address (its bootstrap gives it to all), or this client's with a byte flipped.
                if (flip == 0) address = bootstrap.address();
                else address[flip % address.length] ^= (byte) (script.u8() | 1);
            }
            long pid = (lies & 16) != 0 ? script.u64() : ProcessHandle.current().pid();
            String threadMode = (lies & 32) != 0 ? script.word(8) : ThreadMode.SINGLE.name();
            String wakeup = (lies & 64) != 0 ? script.word(8) : script.u8() % 2 == 0 ? "busy" : "await";
            MemorySegment payload = new PerfProtocol.Writer().u8(version).u64(pid).string(script.word(12)).string(threadMode).string(wakeup)
                    .string(transport).bytes(handle).bytes(address).segment();
            if ((lies & 128) != 0) payload = script.cut(payload);
            send(PerfProtocol.HELLO, MemorySegment.NULL, payload);
        }

        /** Sends HELLO of protocol {@code version} with this client's real region and address (the next honest client's). */
        void sayHello(int version, String host) {
            send(PerfProtocol.HELLO, MemorySegment.NULL, new PerfProtocol.Writer().u8(version).u64(ProcessHandle.current().pid()).string(host)
                    .string(ThreadMode.SINGLE.name()).string("busy").string("posix").bytes(region.exportHandle())
                    .bytes(worker.address().toBytes()).segment());
        }

        /** One message (or put) the script says; true when it was this session's BYE, after which a client sends nothing. */
        private boolean act(Script script) {
            switch (script.u8() % 11) {
                case 0 -> {
                    int seq = script.u32();
                    PerfProtocol.Writer begin = new PerfProtocol.Writer().u32(seq).u8(script.u8() % (PerfTest.values().length + 1))
                            .u64(size(script));
                    MemorySegment header = header(script);
                    MemorySegment payload = script.cut(begin.segment());
                    readySeq = -1;
                    send(PerfProtocol.BEGIN, header, payload);
                    // A conduit perf client waits for READY; a BEGIN the server drops (another session's header) or judges
                    // malformed gets none, and this one goes on without.
                    if (payload.byteSize() == 13 && ofThisSession(header)) {
                        int said = serverErr.getBuffer().length();
                        progressUntil(() -> readySeq == seq || sessionOver(said), "READY " + seq);
                    }
                }
                case 1 -> send(PerfProtocol.END, header(script), script.cut(new PerfProtocol.Writer().u32(script.u32()).segment()));
                case 2 -> send(PerfProtocol.PING, MemorySegment.NULL, bulk(script));
                case 3 -> send(PerfProtocol.DATA, MemorySegment.NULL, bulk(script));
                case 4 -> send(PerfProtocol.LAST, MemorySegment.NULL, bulk(script));
                case 5 -> send(PerfProtocol.PUT_DONE, MemorySegment.NULL, MemorySegment.ofArray(script.bytes(Long.BYTES + 1)));
                case 6 -> {
                    long offset = Long.remainderUnsigned(script.u64(), SERVER_REGION_SIZE);
                    long length = 1 + Long.remainderUnsigned(script.u64(), SERVER_REGION_SIZE - offset);
                    ep.put(MemorySegment.ofArray(new byte[Math.toIntExact(length)]).fill((byte) script.u8()), serverRegion, offset);
                    ep.flush();
                }
                case 7 -> {
                    int version = script.u8();
                    sayHello(version == 0 ? PerfProtocol.VERSION : version, script.word(12));
                }
                case 8 -> send(PerfProtocol.HELLO - 1 + script.u8() % (PerfProtocol.PUT_DONE - PerfProtocol.HELLO + 3), header(script),
                        MemorySegment.ofArray(script.bytes(64)));
                case 9 -> send(PerfProtocol.PEER, MemorySegment.NULL, MemorySegment.NULL);
                default -> {
                    MemorySegment header = header(script);
                    send(PerfProtocol.BYE, header, script.u8() % 2 == 0 ? new PerfProtocol.Writer().string(script.word(40)).segment()
                            : MemorySegment.ofArray(script.bytes(8)));
                    return ofThisSession(header); // another session's BYE is dropped: this client may still send
                }
            }
            return false;
        }

        /** Whether the server takes a BEGIN, END or BYE of this header as this session's. */
        private boolean ofThisSession(MemorySegment header) {
            return header.byteSize() < Long.BYTES || header.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) == sessionNumber;
        }

        /**
         * BEGIN's size: one that crosses a limit, or any. One in the range a conduit perf client asks for past the server's
         * region is folded below it (see the class's javadoc).
         */
        private static long size(Script script) {
            long size = script.u8() % 2 == 0 ? BULK_SIZES[script.u8() % BULK_SIZES.length] : script.u64();
            return size > SERVER_REGION_SIZE && size <= PerfParsing.MAX_SIZE ? size % SERVER_REGION_SIZE : size;
        }

        /** The header of BEGIN, END or BYE: the session's (as conduit perf's client sends it), none (an older client's), or another. */
        private MemorySegment header(Script script) {
            return switch (script.u8() % 4) {
                case 0 -> sessionHeader;
                case 1 -> MemorySegment.NULL;
                case 2 -> new PerfProtocol.Writer().u64(script.u64()).segment();
                default -> MemorySegment.ofArray(script.bytes(16));
            };
        }

        /** A measured message's payload: a size that crosses a limit, filled with one byte, or a few bytes of the script. */
        private static MemorySegment bulk(Script script) {
            if (script.u8() % 2 == 1) return MemorySegment.ofArray(script.bytes(64));
            return MemorySegment.ofArray(new byte[BULK_SIZES[script.u8() % BULK_SIZES.length]]).fill((byte) script.u8());
        }

        void send(int id, MemorySegment header, MemorySegment payload) {
            if (ep.isFailed()) return; // the server ended the session and closed its side; the transport says so, no more
            try {
                ep.send(id, header, payload);
            } catch (dev.conduit.spi.PeerFailedException gone) {
                // the server closed this session's endpoints between the look and the send
            }
        }

        private static boolean saidSince(int mark, String what) {
            return serverErr.getBuffer().indexOf(what, mark) >= 0;
        }

        void progressUntil(BooleanSupplier done, String what) {
            long start = System.nanoTime();
            while (!done.getAsBoolean()) {
                if (System.nanoTime() - start > ANSWER_WAIT_NANOS) throw new AssertionError("no " + what + " from the server; " + theServersState(this));
                if (worker.progress() == 0) worker.await(Duration.ofMillis(1));
            }
        }

        @Override
        public void close() {
            worker.close();
            region.close();
            pool.close();
        }
    }

    /**
     * The input, read as what the hostile client does: each read takes the next bytes (a number little-endian) and yields 0
     * once the input is spent, so that any prefix is a script and the empty one an honest HELLO and BYE. The seeds in
     * {@code src/test/resources/dev/conduit/tools/PerfProtocolFuzzTestInputs/} are the real messages of each test's phase
     * written so, one session each (their names say which); {@link Client#run} says what each byte means.
     */
    private static final class Script {
        private final ByteBuffer in;

        Script(byte[] input) {
            in = ByteBuffer.wrap(input).order(ByteOrder.LITTLE_ENDIAN);
        }

        int u8() {
            return in.hasRemaining() ? in.get() & 0xFF : 0;
        }

        int u32() {
            return in.remaining() >= Integer.BYTES ? in.getInt() : u8();
        }

        long u64() {
            return in.remaining() >= Long.BYTES ? in.getLong() : u8();
        }

        /** Up to {@code max} bytes, their count first. */
        byte[] bytes(int max) {
            byte[] b = new byte[Math.min(u8() % (max + 1), in.remaining())];
            in.get(b);
            return b;
        }

        /**
         * A string of letters: the server prints the strings of HELLO and BYE in its lines, which this test judges line by
         * line, and what they say is no input the server acts on.
         */
        String word(int max) {
            StringBuilder s = new StringBuilder();
            for (byte b : bytes(max)) s.append((char) ('a' + Math.floorMod(b, 26)));
            return s.toString();
        }

        /** {@code payload} whole (a 0), or cut to fewer bytes. */
        MemorySegment cut(MemorySegment payload) {
            int cut = u8();
            return cut == 0 ? payload : payload.asSlice(0, (cut - 1) % payload.byteSize());
        }
    }
}
