package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A real {@link PerfServer}, run in this JVM on a thread of its own, driven by a bare Conduit worker
 * that speaks {@link PerfProtocol} as {@link PerfClient} does (HELLO, BEGIN, the measured messages,
 * END, BYE) but looks at what comes back, which the measuring client only copies and counts. No
 * {@code @Timeout} bounds a whole test: each answer and the server's end have bounds of their own,
 * and the client's side runs under a {@link HangGuard}, so a slower run passes and one that stops fails.
 */
class PerfServerTest {

    /** Empty, inline (up to {@code inline.max}, 8 KiB) and through the bounce ring (64 KiB, 1 MiB). */
    private static final long[] SIZES = {0, 8, 4 << 10, 64 << 10, 1 << 20};
    /** PINGs of each size, each with a pattern of its own: a PONG carrying an earlier PING's bytes does not pass. */
    private static final int PINGS_PER_SIZE = 3;
    /** How long any one answer may take before the test gives up waiting (a hang guard, not a measurement). */
    private static final long ANSWER_WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final String NAME = "echo";

    /**
     * am_lat reads on both sides (the comparison with the C ping-pong and UCX is fair only so): the
     * server answers a PING with a PONG carrying that PING's own payload. A PONG of the right length
     * whose bytes are whatever the transport's memory held (zeros, an earlier message) fails here.
     */
    @ParameterizedTest
    @ValueSource(strings = {"posix", "memfd"})
    void theServerAnswersEachPingWithAPongCarryingThatPingsPayloadByteForByte(String transport) throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "conduit-perf-echo");
        StringWriter serverOut = new StringWriter();
        StringWriter serverErr = new StringWriter();
        AtomicInteger serverExit = new AtomicInteger(Integer.MIN_VALUE);
        AtomicReference<Throwable> serverThrew = new AtomicReference<>();
        Supplier<String> serverSaid = () -> "the server said: " + serverOut + serverErr + (serverThrew.get() == null ? "" : "; it threw " + serverThrew.get());
        try {
            // A hang guard, not a bound on the whole test: each answer has its own (ANSWER_WAIT_NANOS), and a call that
            // never returns (a connect, a close) fails it, naming where.
            HangGuard.await(transport + ": a session of PINGs of every size", () -> {
                try (Conduit serverConduit = conduit(transport, shared); Conduit clientConduit = conduit(transport, shared)) {
                    PerfServer server = new PerfServer(serverConduit, new PerfServer.Options(ThreadMode.SINGLE, 1L << 20, false, shared, NAME, null, false,
                            Duration.ofSeconds(10)), new PrintWriter(serverOut, true), new PrintWriter(serverErr, true));
                    Thread serverThread = runInThread(server, serverExit, serverThrew);
                    try {
                        PerfBootstrap bootstrap;
                        try {
                            bootstrap = PerfBootstrap.await(shared, NAME, Duration.ofSeconds(30), () -> !serverThread.isAlive());
                        } catch (RuntimeException e) {
                            throw new AssertionError(e.getMessage() + "; " + serverSaid.get(), e);
                        }
                        try (Session session = new Session(clientConduit, bootstrap, serverSaid)) {
                            assertThat(session.ep.transport()).as("the transport this run is about").isEqualTo(transport);
                            session.hello();
                            int message = 0;
                            for (long size : SIZES) {
                                int seq = session.begin(PerfTest.AM_LAT, size);
                                for (int k = 0; k < PINGS_PER_SIZE; k++, message++) {
                                    byte[] ping = pattern(size, message);

                                    byte[] pong = session.ping(ping);

                                    String what = transport + ": the PONG of PING #" + message + " (" + size + " bytes)";
                                    assertThat(pong.length).as(what + ": its length").isEqualTo(ping.length);
                                    assertThat(firstDifference(pong, ping)).as(what + ": the first byte that differs from the PING's"
                                            + describe(pong, ping)).isEqualTo(-1);
                                }
                                long allocated = session.end(seq);
                                // HotSpot counts each thread's allocation, and this JVM is the server's.
                                assertThat(allocated).as("ENDED: what the server's thread allocated from READY to END").isNotNegative();
                            }
                            assertThat(session.pongs).as("one PONG per PING, no more").hasSize(message);
                            session.bye();
                        }
                    } finally {
                        // Also after a failure: the client's worker is closed by now, which ends the server's session (the
                        // server serves one client); its Conduit is closed only once the server is done with it.
                        serverThread.join(TimeUnit.SECONDS.toMillis(30));
                    }
                    assertThat(serverThread.isAlive()).as("the server ends its one session after BYE; " + serverSaid.get()).isFalse();
                    assertThat(serverExit.get()).as(serverSaid.get()).isEqualTo(ConduitCommand.EXIT_OK);
                }
                return null;
            });
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    /**
     * A server that can export a region through none of its worker's transports (here the pool's pool.max.size is below
     * --region-size) fails saying so, having said each transport's reason with its remedy, and publishes no bootstrap: a
     * bootstrap without regions would have every client refused, each told only that the server offers none.
     */
    @Test
    void aServerThatCanExportNoRegionFailsSayingWhyAndPublishesNoBootstrap() throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "conduit-perf-noregion");
        StringWriter serverErr = new StringWriter();
        AtomicInteger serverExit = new AtomicInteger(Integer.MIN_VALUE);
        AtomicReference<Throwable> serverThrew = new AtomicReference<>();
        try (Conduit serverConduit = conduit("posix", shared, Map.of("pool.max.size", "64k"))) {
            PerfServer server = new PerfServer(serverConduit, new PerfServer.Options(ThreadMode.SINGLE, 1L << 20, false, shared, NAME, null,
                    false, Duration.ofSeconds(10)), new PrintWriter(new StringWriter(), true), new PrintWriter(serverErr, true));
            Thread serverThread = runInThread(server, serverExit, serverThrew);
            serverThread.join(TimeUnit.SECONDS.toMillis(60)); // a hang guard: the server fails as it starts, or serves for good
            if (serverThread.isAlive()) {
                server.stop("the test is over");
                serverThread.join(TimeUnit.SECONDS.toMillis(30));
                throw new AssertionError("the server serves; it said: " + serverErr);
            }

            assertThat(serverThrew.get()).as("what run() threw; the server said: " + serverErr).isInstanceOf(ConduitException.class)
                    .hasMessage("no transport plugin of this worker [posix] could allocate and export a region");
            assertThat(serverErr.toString()).contains("conduit perf server: no region through 'posix': pool of plugin 'posix' holds 0 bytes "
                    + "of chunks; a chunk of 1048576 bytes more (a region of its own) would take it past pool.max.size (65536 bytes)");
            assertThat(PerfBootstrap.file(shared, NAME)).as("the bootstrap file").doesNotExist();
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    /**
     * A client of another conduit perf version (a rolling upgrade: one side's conduit upgraded,
     * the other's not; their queue layouts the same, as between builds of fdfa993^ and 8f25f9c^) is
     * refused in WELCOME, and the server says so too: both protocol versions, whose conduit is the
     * older, and what to upgrade, each from its own side. WELCOME said "protocol version 2, this server
     * speaks 3", and the server only "client pid N on H speaks protocol version 2", without its own.
     */
    @Test
    void aClientOfAnOlderProtocolIsRefusedNamingBothVersionsAndWhatToUpgrade() throws Exception {
        AtomicReference<String> refusal = new AtomicReference<>();

        ServerRun server = serveOneClient((clientConduit, bootstrap, serverErr) -> {
            try (Session session = new Session(clientConduit, bootstrap, serverErr::toString)) {
                refusal.set(session.hello(PerfProtocol.VERSION - 1));
            }
        });

        // The client prints WELCOME's error as its own ("the perf server refused this session: ..."): there "this process" is
        // the client. It read "the client runs an older Conduit than this process; upgrade the client, or run this process
        // with the older one", the server's words, which a client's user takes the wrong way round.
        assertThat(refusal.get()).as("WELCOME's error, read by the client").isEqualTo("the server's conduit perf protocol version "
                + PerfProtocol.VERSION + ", where this process's Conduit reads only version " + (PerfProtocol.VERSION - 1)
                + ": the server runs a newer Conduit than this process; upgrade this process, or run the server with the older one "
                + "(docs/runtime.md, \"Processes of different Conduit versions\")");
        assertThat(server.err()).as("the server's own line").contains("could not start a session: client pid "
                + ProcessHandle.current().pid() + " on " + PerfCommand.hostName() + ": the client's conduit perf protocol version "
                + (PerfProtocol.VERSION - 1) + ", where this process's Conduit reads only version " + PerfProtocol.VERSION
                + ": the client runs an older Conduit than this process; upgrade the client, or run this process with the older one "
                + "(docs/runtime.md, \"Processes of different Conduit versions\")");
        assertThat(server.exit()).isEqualTo(ConduitCommand.EXIT_FAILED);
    }

    /**
     * A client whose HELLO is laid out otherwise past its version (a later protocol may change any
     * field) is refused by its version, judged first: the server's line names both versions and what
     * to upgrade. It said "malformed HELLO message from the perf peer", read from the fields after
     * the version, which did not parse.
     */
    @Test
    void aHelloOfANewerProtocolLaidOutOtherwiseIsRefusedByItsVersionNotAsMalformed() throws Exception {
        ServerRun server = serveOneClient((clientConduit, bootstrap, serverErr) -> {
            try (Session session = new Session(clientConduit, bootstrap, serverErr::toString)) {
                session.ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(PerfProtocol.VERSION + 1).u8(0xFF).segment());
                // The session stays open until the server has judged the HELLO, as a client waiting for WELCOME would.
                session.progressUntil(() -> serverErr.toString().contains("could not start a session"), "the server's refusal");
            }
        });

        assertThat(server.err()).contains("could not start a session: a client's HELLO: the client's conduit perf protocol "
                        + "version " + (PerfProtocol.VERSION + 1) + ", where this process's Conduit reads only version " + PerfProtocol.VERSION
                        + ": the client runs a newer Conduit than this process; upgrade this process, or run the client with the older "
                        + "one (docs/runtime.md, \"Processes of different Conduit versions\") (its HELLO is laid out otherwise, so it "
                        + "was not told; it stops at its own timeout)")
                .doesNotContain("malformed");
        assertThat(server.exit()).isEqualTo(ConduitCommand.EXIT_FAILED);
    }

    /**
     * A run that fails on the client's side (here its output; an answer it found wrong, a stall past
     * --timeout) ends the server's session as failed, with the client's reason on the server's line.
     * The client said BYE as after a completed run, so the server, the spawned one too, exited with 0
     * and "session ... ended" (found by review).
     */
    @Test
    void aRunThatFailsOnTheClientsSideEndsTheServersSessionAsFailedSayingWhy() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L), 100L, null, new PerfParsing.Warmup(10, null),
                PerfPlan.Wakeup.BUSY, Duration.ofSeconds(30), 1);

        ServerRun server = serveOneClient((clientConduit, bootstrap, serverErr) -> assertThatThrownBy(() -> {
            try (PerfClient client = new PerfClient(clientConduit, () -> clientConduit, bootstrap, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { })) {
                client.runAll(() -> { }, rows -> {
                    throw new IllegalStateException("the table could not be printed");
                });
            }
        }).hasMessage("the table could not be printed"));

        assertThat(server.err()).contains("failed after 1 phase, on the client's side: the table could not be printed")
                .doesNotContain("ended after");
        assertThat(server.exit()).isEqualTo(ConduitCommand.EXIT_FAILED);
    }

    /**
     * A client that fails once the server welcomed it, before its run (here on the server's region
     * handle, which it cannot open), tells the server why in BYE too. It closed without a word, and
     * the server said only that its peer's worker died, once it noticed (found by review).
     */
    @Test
    void aClientThatFailsAfterTheWelcomeTellsTheServerWhy() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L), 100L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
                Duration.ofSeconds(30), 1);
        AtomicReference<Throwable> clientFailed = new AtomicReference<>();

        ServerRun server = serveOneClient((clientConduit, bootstrap, serverErr) -> {
            PerfBootstrap unopenable = new PerfBootstrap(bootstrap.pid(), bootstrap.host(), bootstrap.threadMode(), bootstrap.regionSize(),
                    bootstrap.address(), Map.of("posix", new byte[] {1, 2, 3}));
            try {
                new PerfClient(clientConduit, () -> clientConduit, unopenable, ThreadMode.SINGLE, plan,
                        PerfProgress.off(), stop -> { }).close();
            } catch (RuntimeException e) {
                clientFailed.set(e);
            }
        });

        assertThat(clientFailed.get()).as("the client's failure to open the server's region").isNotNull();
        assertThat(server.err()).contains("failed after 0 phases, on the client's side: " + clientFailed.get().getMessage());
        assertThat(server.exit()).isEqualTo(ConduitCommand.EXIT_FAILED);
    }

    /**
     * A message of a --keep server's previous client that comes after its session ended (a BYE crossing the server's end
     * of the session, what an older client, which drops FAILED, still sends, the rest of an am_bw stream) is dropped, and
     * the next client is served as if it had not come. A PING, LAST or PUT_DONE was a NullPointerException out of the
     * serving loop, which ended the server; a DATA larger than the last phase's buffer an IndexOutOfBoundsException; a BYE
     * with a reason ended the next session at once as "failed after 0 phases, on the client's side: <the old reason>"; a
     * BEGIN was the next session's first phase, an END an ENDED for a phase the next client had not begun (found by review).
     */
    @ParameterizedTest
    @ValueSource(ints = {PerfProtocol.PING, PerfProtocol.DATA, PerfProtocol.LAST, PerfProtocol.PUT_DONE, PerfProtocol.BYE, PerfProtocol.BEGIN,
            PerfProtocol.END})
    void aMessageOfAnEndedSessionIsDroppedAndTheKeepServerServesTheNextClient(int late) throws Exception {
        lateMessageThenTheNextClient(late, false);
    }

    /**
     * A BYE or END of a --keep server's previous client that comes after the next client's HELLO (a client judged hung
     * that was not, going on) is told from the next client's by the session number in its header, which WELCOME gave, and
     * dropped. A BYE with a reason ended the next session as "failed after 0 phases, on the client's side: <the previous
     * client's reason>", an END was an ENDED of no phase to it (found by review). A BEGIN is judged so too, but here it
     * was not seen before either: read in one progress call with the next client's, only the later one was kept.
     */
    @ParameterizedTest
    @ValueSource(ints = {PerfProtocol.BYE, PerfProtocol.END})
    void aControlMessageOfAnEarlierSessionAfterTheNextHelloIsDropped(int late) throws Exception {
        lateMessageThenTheNextClient(late, true);
    }

    /**
     * A --keep server in this JVM: a client's session of one am_lat phase, then message {@code late} from that client, sent
     * before the next client's HELLO or after it, then the next client's session of one am_lat phase, which must go as
     * if the late message had not come.
     */
    private static void lateMessageThenTheNextClient(int late, boolean afterTheNextHello) throws Exception {
        withKeepServer("a late message to a --keep server, then its next client", (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            try (Session previous = new Session(clientConduit, bootstrap, serverSaid)) {
                previous.hello();
                int previousSeq = previous.begin(PerfTest.AM_LAT, 8);
                previous.ping(new byte[8]);
                previous.end(previousSeq);
                previous.bye();
                previous.progressUntil(() -> serverErr.toString().contains("ended after 1 phase"), "the end of the first session");
                // Handed to the server's one receive queue before the next client's HELLO, so read before it.
                if (!afterTheNextHello) sendLate(previous, late);

                try (Session next = new Session(clientConduit, bootstrap, serverSaid)) {
                    next.hello();
                    if (afterTheNextHello) sendLate(previous, late);
                    int seq = next.begin(PerfTest.AM_LAT, 8);
                    assertThat(next.ping(new byte[] {1, 2, 3, 4, 5, 6, 7, 8})).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
                    // A stale ENDED, sent before the READY, would have been this one, of no phase: -1.
                    assertThat(next.end(seq)).as("ENDED: what the server's thread allocated in the next client's phase")
                            .isNotNegative();
                    assertThat(next.endeds).as("ENDED messages to the next client, which ended one phase").isEqualTo(1);
                    next.bye();
                    next.progressUntil(() -> serverErr.toString().indexOf("ended after 1 phase") != serverErr.toString()
                            .lastIndexOf("ended after 1 phase"), "the end of the next session");
                }
            }
            assertThat(serverErr.toString()).as(serverSaid.get()).doesNotContain("failed");
        });
    }

    /**
     * A --keep server refuses in READY a BEGIN whose size no conduit perf client sends (past 1 GiB, negative, or 0 for a test
     * that puts into the server's region), naming the size and that the client is not conduit perf's or is broken, and serves
     * the same client's next phase and the next client. An am_bw size of 2^62 was an OutOfMemoryError out of the serving
     * loop, which ended the --keep server; a negative one, or a put_lat of 0 bytes, ended the session "on a bug of conduit
     * perf" with a stack trace (found by helper h35).
     */
    @Test
    void aBeginOfASizeNoClientSendsIsRefusedInReadyAndTheKeepServerServesOn() throws Exception {
        againstAKeepServer("sizes no conduit perf client sends", (hostile, serverErr) -> {
            hostile.hello();
            for (PerfTest test : List.of(PerfTest.AM_BW, PerfTest.AM_LAT, PerfTest.IPC_IMPORT)) {
                for (long size : new long[] {1L << 62, Long.MIN_VALUE, -1, PerfParsing.MAX_SIZE + 1}) {
                    assertThat(hostile.beginRefused(test, size)).as("READY's error for " + test.label() + " " + size)
                            .isEqualTo("size " + size + " is outside what a conduit perf client asks for " + test.label()
                                    + " (0 to 1073741824 bytes): the client is not conduit perf's, or a broken one");
                }
            }
            for (PerfTest test : List.of(PerfTest.PUT_LAT, PerfTest.PUT_BW)) {
                assertThat(hostile.beginRefused(test, 0)).as("READY's error for " + test.label() + " 0")
                        .isEqualTo("size 0 is outside what a conduit perf client asks for " + test.label()
                                + " (1 to 1073741824 bytes): the client is not conduit perf's, or a broken one");
            }
            hostile.amLatPhaseThenBye(serverErr); // the same client's next phase
            assertThat(serverErr.toString()).doesNotContain("bug").doesNotContain("failed");
        });
    }

    /**
     * A BEGIN of a test this server does not know (a later conduit perf's) is refused in READY, naming its number, and the
     * session goes on. Without the check, the test's number indexed past the tests this server knows, which ended the
     * session "on a bug of conduit perf".
     */
    @Test
    void aBeginOfATestThisServerDoesNotKnowIsRefusedInReadyAndTheSessionGoesOn() throws Exception {
        againstAKeepServer("a test this server does not know", (hostile, serverErr) -> {
            hostile.hello();
            int unknown = PerfTest.values().length;
            assertThat(hostile.beginOfAnUnknownTestRefused(unknown)).as("READY's error")
                    .isEqualTo("unknown test #" + unknown + " (another version of conduit perf?)");
            hostile.amLatPhaseThenBye(serverErr); // the same client's next phase
            assertThat(serverErr.toString()).doesNotContain("bug").doesNotContain("failed");
        });
    }

    /**
     * A phase that puts into the server's region may be as large as that region, and is served; one byte more is refused in
     * READY, naming the region's size and the --region-size that would serve it, and the session goes on.
     */
    @Test
    void aPhaseAsLargeAsTheServersRegionIsServedAndOneByteMoreIsRefusedNamingTheRegionSize() throws Exception {
        againstAKeepServer("a phase of the server's region size and one byte more", (hostile, serverErr) -> {
            hostile.hello();
            assertThat(hostile.beginRefused(PerfTest.PUT_BW, (1L << 20) + 1)).as("READY's error").isEqualTo("larger than the "
                    + "server's region (1048576 bytes): start the server with --region-size 1048577 or more");
            int seq = hostile.begin(PerfTest.PUT_BW, 1L << 20);
            hostile.end(seq);
            hostile.bye();
            hostile.progressUntil(() -> serverErr.toString().contains("ended after 2 phases"), "the end of the session");
        });
    }

    /**
     * A put_bw phase is acknowledged as whole only when the server's region ends with the whole of the value PUT_DONE names:
     * a phase whose puts landed nothing, after a phase that landed the same value, and one whose puts landed the value's
     * last byte but not the rest, are answered 0. The server compared one byte of the region with a marker of 1 to 255,
     * which a region left as the phase before left it, or holding other bytes, matched once in 255 phases by chance.
     */
    @Test
    void aPutBwIsAcknowledgedOnlyWhenTheRegionEndsWithTheWholeValueItsPutDoneNames() throws Exception {
        againstAKeepServer("put_bw phases whose puts landed nothing or the wrong bytes", (hostile, serverErr) -> {
            hostile.hello();
            // Its first and last bytes alike: the one byte an end check of a single byte compares is then the same.
            long value = 0x5A0102030405065AL;
            assertThat(hostile.putBwPhase(64, value, value)).as("the ACK of a phase whose puts landed the value").isEqualTo(1);

            assertThat(hostile.putBwPhase(64, null, value)).as("the ACK of a phase whose puts landed nothing").isZero();
            assertThat(hostile.putBwPhase(64, value ^ 0xFFL << 8, value)).as("the ACK of a phase whose puts landed the value's "
                    + "last byte and not the rest").isZero();
            hostile.bye();
            hostile.progressUntil(() -> serverErr.toString().contains("ended after 3 phases"), "the end of the session");
            assertThat(serverErr.toString()).doesNotContain("bug").doesNotContain("failed");
        });
    }

    /**
     * A put_lat phase larger than the region the client's HELLO named, into which the server puts its answers, is refused
     * in READY, and the session goes on: the server's first answer failed to fit, and the session ended "on a bug of
     * conduit perf" (found by helper h35). A conduit perf client's region is as large as its largest size.
     */
    @Test
    void aPutLatLargerThanTheClientsRegionIsRefusedInReady() throws Exception {
        againstAKeepServer("a put_lat larger than the client's region", (hostile, serverErr) -> {
            hostile.hello();
            assertThat(hostile.beginRefused(PerfTest.PUT_LAT, 8192)).as("READY's error").isEqualTo("larger than the region of 4096 bytes "
                    + "the client's HELLO named, into which the server puts its answers: the client is not conduit perf's, or a broken one");
            int seq = hostile.begin(PerfTest.PUT_LAT, 4096);
            hostile.end(seq);
            hostile.bye();
            hostile.progressUntil(() -> serverErr.toString().contains("ended after 2 phases"), "the end of the session");
        }, 4096);
    }

    /**
     * A --keep server ends the session of a client that sends a message its protocol does not lay out so (an END without
     * its sequence number, a PUT_DONE without its end value, a DATA or PING larger than the phase's size, a BEGIN cut short, a
     * BYE whose reason's length is negative), saying that the client broke the protocol and which message, and serves the
     * next client. The first three were an IndexOutOfBoundsException in a handler, which the server reported as "a bug of
     * conduit perf (report it with the stack trace below)", and told the client so; a short BEGIN "failed on this server's
     * side" (found by helper h35). A PING was echoed whatever its size, and one larger than the server's endpoint carries
     * (a client of a larger posix.bounce.size) was an IllegalArgumentException in the PING handler, again "a bug of conduit
     * perf" (found by review while writing PerfProtocolFuzzTest, whose seed ping-larger-than-the-server-carries replays it).
     * A negative length is refused as such: taken as any other, it would be a NegativeArraySizeException, "a bug" again.
     */
    @ParameterizedTest
    @ValueSource(ints = {PerfProtocol.END, PerfProtocol.PUT_DONE, PerfProtocol.DATA, PerfProtocol.PING, PerfProtocol.BEGIN,
            PerfProtocol.BYE})
    void aMalformedMessageEndsTheSessionAsTheClientsBreachAndTheKeepServerServesTheNextClient(int message) throws Exception {
        againstAKeepServer("a malformed message", (hostile, serverErr) -> {
            hostile.hello();
            switch (message) {
                case PerfProtocol.PUT_DONE -> hostile.begin(PerfTest.PUT_BW, 64);
                case PerfProtocol.DATA -> hostile.begin(PerfTest.AM_BW, 64);
                case PerfProtocol.PING -> hostile.begin(PerfTest.AM_LAT, 64);
                default -> { }
            }
            hostile.ep.send(message, hostile.sessionHeader, switch (message) {
                case PerfProtocol.DATA, PerfProtocol.PING -> MemorySegment.ofArray(new byte[65]);
                case PerfProtocol.BEGIN -> new PerfProtocol.Writer().u32(1).segment();
                case PerfProtocol.BYE -> new PerfProtocol.Writer().u32(-1).segment();
                default -> MemorySegment.NULL;
            });
            hostile.progressUntil(() -> serverErr.toString().contains("broke the protocol"), "the server's end of the session");
            String name = switch (message) {
                case PerfProtocol.END -> "END";
                case PerfProtocol.PUT_DONE -> "PUT_DONE";
                case PerfProtocol.DATA -> "DATA";
                case PerfProtocol.PING -> "PING";
                case PerfProtocol.BYE -> "BYE";
                default -> "BEGIN";
            };
            assertThat(serverErr.toString()).as("the server's line").contains("failed after").contains("the client broke the "
                    + "protocol: malformed " + name + " message from the perf peer").doesNotContain("bug");
        });
    }

    /**
     * A BEGIN while the phase before it is not ended (no conduit perf client sends one) is refused in READY, naming the open
     * phase, which goes on: the client's END ends it, and the session and the next client are served. An ipc_import's
     * BEGIN replaced the open phase's exported region without closing it, so that a client could make a --keep server
     * hold region after region (found by review while writing PerfProtocolFuzzTest); in put_lat the BEGIN waited
     * unanswered for the phase's END (PerfProtocolFuzzTest found that in its first run).
     */
    @ParameterizedTest
    @EnumSource(value = PerfTest.class, names = {"IPC_IMPORT", "PUT_LAT", "AM_BW"})
    void aBeginWhileAPhaseIsOpenIsRefusedInReadyAndThePhaseGoesOn(PerfTest open) throws Exception {
        againstAKeepServer("a BEGIN while a phase is open", (hostile, serverErr) -> {
            hostile.hello();
            int seq = hostile.begin(open, 4096);

            String refusal = hostile.beginRefused(PerfTest.IPC_IMPORT, 4096);

            assertThat(refusal).as("READY's error").isEqualTo("phase " + seq + " (" + open.label() + " 4096) is not ended: a conduit "
                    + "perf client ENDs each phase before its next BEGIN; the client is not conduit perf's, or a broken one");
            assertThat(hostile.end(seq)).as("ENDED of the open phase").isNotNegative();
            hostile.amLatPhaseThenBye(serverErr);
            assertThat(serverErr.toString()).doesNotContain("bug").doesNotContain("failed");
        });
    }

    /**
     * A HELLO that names the server's own worker address (which its bootstrap gives every client) is refused, saying so, and
     * the --keep server serves the next client. The server connected to itself and served that session, answering itself,
     * until the client said BYE: one that never did kept the server busy for good, every next client told it was busy
     * (PerfProtocolFuzzTest found it).
     */
    @Test
    void aHelloNamingTheServersOwnAddressIsRefusedAndTheKeepServerServesTheNextClient() throws Exception {
        againstAKeepServer("a HELLO naming the server's own address", (hostile, serverErr) -> {
            hostile.ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(PerfProtocol.VERSION).u64(ProcessHandle.current().pid())
                    .string(PerfCommand.hostName()).string(ThreadMode.SINGLE.name()).string(PerfPlan.Wakeup.BUSY.label()).string("posix")
                    .bytes(hostile.region.exportHandle()).bytes(hostile.bootstrap.address()).segment());

            hostile.progressUntil(() -> serverErr.toString().contains("could not start a session"), "the server's refusal");

            assertThat(serverErr.toString()).contains("could not start a session: client pid " + ProcessHandle.current().pid() + " on "
                    + PerfCommand.hostName() + " named this server's own worker address as its own: the client is not conduit perf's, "
                    + "or a broken one");
        });
    }

    /**
     * A HELLO naming a transport through which the server exported no region (a client that is not conduit perf's: one looks
     * for that region in the bootstrap first) is refused in WELCOME naming it, and the --keep server serves the next client.
     */
    @Test
    void aHelloThroughATransportWithoutARegionHereIsRefusedInWelcomeNamingIt() throws Exception {
        againstAKeepServer("a HELLO through a transport without a region", (hostile, serverErr) -> {
            hostile.ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(PerfProtocol.VERSION).u64(ProcessHandle.current().pid())
                    .string(PerfCommand.hostName()).string(ThreadMode.SINGLE.name()).string(PerfPlan.Wakeup.BUSY.label()).string("memfd")
                    .bytes(hostile.region.exportHandle()).bytes(hostile.worker.address().toBytes()).segment());

            hostile.progressUntil(() -> hostile.welcome != null, "WELCOME");

            assertThat(hostile.welcome.string()).as("WELCOME's error").isEqualTo("this server exported no region through 'memfd'");
            // The server says it after sending WELCOME.
            hostile.progressUntil(() -> serverErr.toString().contains("which has no region here"), "the server's line");
            assertThat(serverErr.toString()).contains("could not start a session: client pid " + ProcessHandle.current().pid() + " on "
                    + PerfCommand.hostName() + " connected through 'memfd', which has no region here");
        });
    }

    /**
     * A HELLO's host and transport reach the server's lines escaped: they are the client's words, whose control characters
     * (a terminal's escape sequence, a newline forging a line of the log) were printed as they came.
     */
    @Test
    void aHellosControlCharactersReachTheServersLinesEscaped() throws Exception {
        againstAKeepServer("a HELLO whose host and transport hold control characters", (hostile, serverErr) -> {
            hostile.ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(PerfProtocol.VERSION).u64(ProcessHandle.current().pid())
                    .string("evil\u001b]0;x\u0007\nhost").string(ThreadMode.SINGLE.name()).string(PerfPlan.Wakeup.BUSY.label())
                    .string("memfd\r").bytes(hostile.region.exportHandle()).bytes(hostile.worker.address().toBytes()).segment());

            hostile.progressUntil(() -> serverErr.toString().contains("which has no region here"), "the server's line");

            assertThat(serverErr.toString()).contains("client pid " + ProcessHandle.current().pid() + " on evil\\u001b]0;x\\u0007\\u000ahost connected through 'memfd\\u000d', which has no region here");
        });
    }

    /**
     * A HELLO whose host is longer than any host name starts no session: the server says the HELLO is malformed, naming
     * the field, and serves the next client. The server repeats the host in its lines and in its refusal of a second
     * client, a control message that must stay small: until 2026-12-07 such a HELLO was served, and a host of 1 MiB of
     * control characters (six characters each as the lines show them) made the busy answer 6 MiB, more than the server's
     * endpoint carries; the send threw, a second client was told nothing, and the endpoint the refusal had connected
     * stayed open, mapping that client's queue.
     */
    @Test
    void aHelloNamingAHostLongerThanAnyHostNameStartsNoSessionAndTheNextClientIsServed() throws Exception {
        againstAKeepServer("a HELLO naming a host of 1 MiB", (hostile, serverErr) -> {
            int said = serverErr.getBuffer().length();
            hostile.sayHelloAs("\u0001".repeat(1 << 20));
            hostile.progressUntil(() -> serverErr.getBuffer().indexOf("could not start a session", said) >= 0, "the server's refusal");
            assertThat(serverErr.getBuffer().substring(said)).contains("could not start a session: malformed HELLO message from the perf "
                    + "peer: its host is 1048576 bytes long, more than " + PerfProtocol.MAX_HOST);
        });
    }

    /**
     * A conduit perf client that a --keep server turns away while it serves another fails with the server's words: the
     * session was refused, and why.
     */
    @Test
    void aClientTurnedAwayWhileTheKeepServerServesAnotherSaysTheServersReason() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L), 2L, null, PerfParsing.Warmup.NONE, PerfPlan.Wakeup.BUSY,
                Duration.ofSeconds(30), 1);
        withKeepServer("a client turned away", (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            try (Session served = new Session(clientConduit, bootstrap, serverSaid)) {
                served.hello();

                assertThatThrownBy(() -> new PerfClient(clientConduit, () -> clientConduit, bootstrap, ThreadMode.SINGLE, plan,
                        PerfProgress.off(), stop -> { }))
                        .isExactlyInstanceOf(ConduitException.class).hasMessage("the perf server refused this session: busy with another "
                        + "client (pid " + ProcessHandle.current().pid() + " on " + PerfCommand.hostName() + ")");
                served.amLatPhaseThenBye(serverErr);
            }
        });
    }

    /**
     * A HELLO naming the server's own worker in other bytes than its address's is refused too: the runtime's connect reaches a
     * worker through the entry of the first of its own transports that the address lists, and looks at neither the worker id
     * nor the other entries, so another id, or an entry of a plugin the server lacks before or after its own, name the same
     * worker. The check compared the bytes, and the server served itself until the session's --timeout.
     */
    @ParameterizedTest
    @ValueSource(strings = {"another worker id", "another plugin's entry first", "another plugin's entry last"})
    void aHelloNamingTheServersOwnWorkerInOtherBytesIsRefusedToo(String how) throws Exception {
        againstAKeepServer("a HELLO naming the server's own worker with " + how, (hostile, serverErr) -> {
            byte[] own = hostile.bootstrap.address();
            byte[] other = switch (how) {
                case "another worker id" -> reencoded(own, true, false, false);
                case "another plugin's entry first" -> reencoded(own, false, true, true);
                default -> reencoded(own, false, true, false);
            };
            assertThat(other).isNotEqualTo(own);
            assertThat(WorkerAddress.fromBytes(other).transports()).contains("posix");
            hostile.ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(PerfProtocol.VERSION).u64(ProcessHandle.current().pid())
                    .string(PerfCommand.hostName()).string(ThreadMode.SINGLE.name()).string(PerfPlan.Wakeup.BUSY.label()).string("posix")
                    .bytes(hostile.region.exportHandle()).bytes(other).segment());

            hostile.progressUntil(() -> serverErr.toString().contains("could not start a session"), "the server's refusal");

            assertThat(serverErr.toString()).contains("named this server's own worker address as its own");
        });
    }

    /**
     * A worker address (laid out as {@link WorkerAddress} says) encoded again: with its worker id's bits flipped, and with an
     * entry of plugin "zz" (which no worker here has) before or after its own; the length and CRC32C made to fit.
     */
    private static byte[] reencoded(byte[] address, boolean anotherId, boolean extraEntry, boolean extraFirst) {
        java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate(address.length + 16).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        out.put(address, 0, 8);
        for (int i = 8; i < 24; i++) out.put((byte) (anotherId ? ~address[i] : address[i]));
        out.put((byte) (address[24] + (extraEntry ? 1 : 0)));
        byte[] extra = java.nio.ByteBuffer.allocate(9).order(java.nio.ByteOrder.LITTLE_ENDIAN).putShort((short) 2).put((byte) 'z')
                .put((byte) 'z').putShort((short) 3).put(new byte[] {1, 2, 3}).array();
        if (extraEntry && extraFirst) out.put(extra);
        out.put(address, 25, address.length - 25 - 4);
        if (extraEntry && !extraFirst) out.put(extra);
        int length = out.position() + 4;
        out.putShort(6, (short) length);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(out.array(), 0, out.position());
        out.putInt((int) crc.getValue());
        return java.util.Arrays.copyOf(out.array(), length);
    }

    /**
     * A flood of HELLOs while a session runs: at most {@link PerfServer#MAX_WAITING_HELLOS} wait to be told the server is
     * busy, the rest are dropped unanswered, which the server says naming the bound, and the session and the next client
     * are served. The list grew without bound, each refusal waiting up to 2 s for its answer to leave.
     */
    @Test
    void aFloodOfHellosWhileASessionRunsIsBoundedAndTheKeepServerServesTheNextClient() throws Exception {
        int flood = 10 * PerfServer.MAX_WAITING_HELLOS;
        againstAKeepServer("a flood of HELLOs", (served, serverErr) -> {
            served.hello();
            try (Session flooding = new Session(served.conduit, served.bootstrap, () -> "the server said: " + serverErr)) {
                AtomicInteger busy = new AtomicInteger();
                flooding.worker.onMessage(PerfProtocol.WELCOME, m -> {
                    if (new PerfProtocol.Reader(m, "WELCOME").string().startsWith("busy with another client")) busy.incrementAndGet();
                });
                for (int i = 0; i < flood; i++) flooding.sayHello();
                flooding.progressUntil(() -> flooding.ep.pending() == 0, "the HELLOs handed to the transport");
                int seq = served.begin(PerfTest.AM_LAT, 8); // the server's session loop takes the HELLOs in meanwhile
                assertThat(served.ping(new byte[] {1, 2, 3, 4, 5, 6, 7, 8})).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
                served.end(seq);
                // Each HELLO refused or said dropped before the session ends: one left waiting would be the next session's client.
                flooding.progressUntil(() -> busy.get() + dropped(serverErr) == flood, "every HELLO refused or dropped");
                served.bye();
                served.progressUntil(() -> serverErr.toString().contains("ended after 1 phase"), "the end of the session");
                assertThat(busy.get()).as("the clients told the server is busy").isBetween(PerfServer.MAX_WAITING_HELLOS, flood - 1);
                assertThat(serverErr.toString()).contains("while " + PerfServer.MAX_WAITING_HELLOS + " clients already waited")
                        .contains("(at most " + PerfServer.MAX_WAITING_HELLOS + " wait;");
            }
        });
    }

    /**
     * HELLOs of the served client in its own session, followed at once by its BYE, are ignored, each said on the server's
     * standard error, and start no session of their own: the --keep server serves the next client. The server turned away
     * one waiting HELLO per pass of its loop and ended the session on BYE, so the HELLOs still waiting then became a
     * second session of the same client (found by review).
     */
    @Test
    void hellosOfTheServedClientInItsOwnSessionAreIgnoredAndStartNoSessionAfterItsBye() throws Exception {
        int hellos = 3;
        withKeepServer("HELLOs of the served client, then its BYE", (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            try (Session served = new Session(clientConduit, bootstrap, serverSaid)) {
                served.hello();
                for (int i = 0; i < hellos; i++) served.sayHello();
                served.bye();
                served.progressUntil(() -> serverErr.toString().contains("ended after 0 phases"), "the end of the session");
            }
            serveTheNextClient(clientConduit, bootstrap, serverErr, serverSaid);
            String said = serverErr.toString();
            assertThat(occurrences(said, " (thread mode SINGLE, wakeup busy, transport posix)")).as("sessions started; " + serverSaid.get())
                    .isEqualTo(2);
            assertThat(occurrences(said, "ignored a HELLO of pid " + ProcessHandle.current().pid() + " on " + PerfCommand.hostName()
                    + " in its own session 1: a conduit perf client says HELLO once, before its session (the client is not conduit "
                    + "perf's, or a broken one)")).as("HELLOs said ignored; " + serverSaid.get()).isEqualTo(hellos);
            assertThat(said).as(serverSaid.get()).doesNotContain("failed").doesNotContain("could not");
        });
    }

    /**
     * A client that says HELLO and then nothing, or nothing after a phase's ENDED, holds a --keep server for its
     * {@code --timeout} at most: the session is ended, saying why, and the next client is served. Such a client, or a HELLO
     * naming another live worker's address (which that worker never follows with BEGIN), held the server while it lived, and
     * every next client was told the server was busy.
     */
    @Test
    void aClientSilentBetweenPhasesForTheTimeoutHasItsSessionEndedAndTheKeepServerServesTheNextClient() throws Exception {
        withKeepServer("clients that go silent", Duration.ofSeconds(2), (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            try (Session quiet = new Session(clientConduit, bootstrap, serverSaid)) {
                quiet.hello();
                quiet.progressUntil(() -> serverErr.toString().contains("failed after 0 phases"), "the end of the silent session");
            }
            try (Session quietAfterAPhase = new Session(clientConduit, bootstrap, serverSaid)) {
                quietAfterAPhase.hello();
                int seq = quietAfterAPhase.begin(PerfTest.AM_LAT, 8);
                assertThat(quietAfterAPhase.ping(new byte[] {8, 7, 6, 5, 4, 3, 2, 1})).containsExactly(8, 7, 6, 5, 4, 3, 2, 1);
                quietAfterAPhase.end(seq);
                quietAfterAPhase.progressUntil(() -> serverErr.toString().contains("failed after 1 phase"), "the end of the second silent session");
            }
            assertThat(serverErr.toString()).contains("failed after 0 phases: the client sent nothing for 2s after its WELCOME, where it "
                    + "owes BEGIN or BYE (this server's --timeout)").contains("failed after 1 phase: the client sent nothing for 2s after "
                    + "this server's answer to its last phase, where it owes BEGIN or BYE (this server's --timeout)");
            serveTheNextClient(clientConduit, bootstrap, serverErr, serverSaid);
        });
    }

    /**
     * A client that connects the idle workers of {@code --peers} after its WELCOME is not silent: each PEER they send
     * restarts the server's {@code --timeout}, so connecting many of them, together longer than that timeout but each
     * within it, does not end the session before its first phase. Only the WELCOME started the clock, and a run with a
     * large {@code --peers} and a short {@code --timeout} had its session ended "sent nothing ... after its WELCOME".
     */
    @Test
    void theIdlePeersMessagesAfterTheWelcomeKeepTheSessionFromTheSilentClientsTimeout() throws Exception {
        withKeepServer("a client connecting idle peers", Duration.ofSeconds(3), (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            List<Worker> idle = new ArrayList<>();
            try (Session session = new Session(clientConduit, bootstrap, serverSaid)) {
                session.hello();
                // 10 PEERs 0.5 s apart: 5 s after the WELCOME in all, 2 s past the server's --timeout, and each 2.5 s within
                // it: margins a loaded machine's stalls do not close either way.
                for (int i = 0; i < 10; i++) {
                    Worker peer = clientConduit.newWorker(ThreadMode.SINGLE);
                    idle.add(peer);
                    Endpoint e = peer.connect(WorkerAddress.fromBytes(bootstrap.address()));
                    e.send(PerfProtocol.PEER, MemorySegment.ofArray(new byte[1]));
                    while (e.pending() > 0) peer.progress();
                    Thread.sleep(500);
                }
                assertThat(serverErr.toString()).as(serverSaid.get()).doesNotContain("sent nothing");
                session.amLatPhaseThenBye(serverErr);
            } finally {
                idle.forEach(Worker::close);
            }
            assertThat(serverErr.toString()).contains("session with pid " + ProcessHandle.current().pid()).contains("ended after 1 phase");
        });
    }

    /**
     * The region a --keep server allocates and exports for each ipc_import phase is freed when the phase ends: after three
     * phases its shared directory holds the chunk files it held before the first. A phase of 1 MiB has a chunk of its own
     * (past a quarter of pool.chunk.size), whose file is there while the phase is open and gone once ENDED came.
     */
    @Test
    void aKeepServerFreesEachIpcImportPhasesRegionWhenThePhaseEnds() throws Exception {
        withKeepServer("ipc_import phases", (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            try (Session session = new Session(clientConduit, bootstrap, serverSaid)) {
                session.hello();
                long before = chunkFiles(shared);
                for (int phase = 1; phase <= 3; phase++) {
                    int seq = session.begin(PerfTest.IPC_IMPORT, 1 << 20);
                    assertThat(chunkFiles(shared)).as("chunk files while ipc_import phase " + phase + " is open: its region's one more")
                            .isEqualTo(before + 1);

                    session.end(seq);

                    assertThat(chunkFiles(shared)).as("chunk files once ipc_import phase " + phase + " ended").isEqualTo(before);
                }
                session.bye();
                session.progressUntil(() -> serverErr.toString().contains("ended after 3 phases"), "the end of the session");
            }
        });
    }

    /**
     * A session that ends while an ipc_import phase is open (a BYE before its END, as a client stopped mid-run sends) frees
     * the phase's region: once the --keep server has served the next client, its shared directory holds the chunk files it
     * held before the session.
     */
    @Test
    void aSessionEndedWhileAnIpcImportPhaseIsOpenFreesThePhasesRegion() throws Exception {
        withKeepServer("a BYE while an ipc_import phase is open", (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            long before = chunkFiles(shared);
            try (Session leaving = new Session(clientConduit, bootstrap, serverSaid)) {
                leaving.hello();
                leaving.begin(PerfTest.IPC_IMPORT, 1 << 20);
                leaving.bye();
            }

            serveTheNextClient(clientConduit, bootstrap, serverErr, serverSaid); // served once the server ended the session before

            assertThat(chunkFiles(shared)).as("chunk files after the session, both clients' regions closed").isEqualTo(before);
        });
    }

    /** The posix chunk files in {@code shared}: the servers' and the clients' regions that have a chunk of their own. */
    private static long chunkFiles(Path shared) throws IOException {
        try (Stream<Path> files = Files.list(shared)) {
            return files.filter(file -> file.getFileName().toString().endsWith(".chunk")).count();
        }
    }

    /** How many times {@code line} occurs in {@code said}, word for word. */
    private static int occurrences(String said, String line) {
        return said.split(java.util.regex.Pattern.quote(line), -1).length - 1;
    }

    /** How many HELLOs the server said it dropped. */
    private static int dropped(StringWriter serverErr) {
        java.util.regex.Matcher said = java.util.regex.Pattern.compile("dropped (\\d+) HELLO").matcher(serverErr.toString());
        int n = 0;
        while (said.find()) n += Integer.parseInt(said.group(1));
        return n;
    }

    /** What a hostile client does to a --keep server, given the server's standard error so far. */
    @FunctionalInterface
    private interface Hostile {
        void run(Session hostile, StringWriter serverErr) throws Exception;
    }

    /**
     * A --keep server in this JVM: {@code hostile} does what it does as a client, then the next client's session of one
     * am_lat phase must go as if it had not come, and the server must still serve, having thrown nothing.
     */
    private static void againstAKeepServer(String what, Hostile hostile) throws Exception {
        againstAKeepServer(what, hostile, 1L << 20);
    }

    /** As {@link #againstAKeepServer(String, Hostile)}, the hostile client's HELLO naming a region of {@code regionSize} bytes. */
    private static void againstAKeepServer(String what, Hostile hostile, long regionSize) throws Exception {
        withKeepServer(what + " to a --keep server, then its next client", (shared, clientConduit, bootstrap, serverErr, serverSaid) -> {
            try (Session bad = new Session(clientConduit, bootstrap, serverSaid, regionSize)) {
                hostile.run(bad, serverErr);
            }
            serveTheNextClient(clientConduit, bootstrap, serverErr, serverSaid);
        });
    }

    /** The next client of a --keep server: a session of one am_lat phase, which must go as if no client had come before. */
    private static void serveTheNextClient(Conduit clientConduit, PerfBootstrap bootstrap, StringWriter serverErr, Supplier<String> serverSaid) {
        try (Session next = new Session(clientConduit, bootstrap, serverSaid)) {
            next.hello();
            next.amLatPhaseThenBye(serverErr);
        }
    }

    /**
     * Clients of a --keep server: given the shared directory (where the server's chunk files are), their Conduit, the server's
     * bootstrap, its standard error so far and all it said.
     */
    @FunctionalInterface
    private interface KeepServerClients {
        void run(Path shared, Conduit clientConduit, PerfBootstrap bootstrap, StringWriter serverErr, Supplier<String> serverSaid)
                throws Exception;
    }

    /**
     * A posix --keep server in this JVM, in a shared directory of its own, serving {@code clients}: after them it must still
     * serve, then stop when told, having thrown nothing.
     */
    private static void withKeepServer(String what, KeepServerClients clients) throws Exception {
        withKeepServer(what, Duration.ofSeconds(10), clients);
    }

    /** As {@link #withKeepServer(String, KeepServerClients)}, the server's {@code --timeout} {@code timeout}. */
    private static void withKeepServer(String what, Duration timeout, KeepServerClients clients) throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "conduit-perf-keep");
        StringWriter serverErr = new StringWriter();
        AtomicInteger serverExit = new AtomicInteger(Integer.MIN_VALUE);
        AtomicReference<Throwable> serverThrew = new AtomicReference<>();
        Supplier<String> serverSaid = () -> "the server said: " + serverErr + (serverThrew.get() == null ? "" : "; it threw " + serverThrew.get());
        try {
            HangGuard.await(what, () -> {
                try (Conduit serverConduit = conduit("posix", shared); Conduit clientConduit = conduit("posix", shared)) {
                    PerfServer server = new PerfServer(serverConduit, new PerfServer.Options(ThreadMode.SINGLE, 1L << 20, true, shared, NAME, null,
                            false, timeout), new PrintWriter(new StringWriter(), true), new PrintWriter(serverErr, true));
                    Thread serverThread = runInThread(server, serverExit, serverThrew);
                    try {
                        PerfBootstrap bootstrap = PerfBootstrap.await(shared, NAME, Duration.ofSeconds(30), () -> !serverThread.isAlive());
                        clients.run(shared, clientConduit, bootstrap, serverErr, serverSaid);
                        assertThat(serverThread.isAlive()).as("the --keep server still serves; " + serverSaid.get()).isTrue();
                    } finally {
                        server.stop("the test is over");
                        serverThread.join(TimeUnit.SECONDS.toMillis(30));
                    }
                    assertThat(serverThread.isAlive()).as("the server stops when told; " + serverSaid.get()).isFalse();
                    assertThat(serverThrew.get()).as(serverSaid.get()).isNull();
                }
                return null;
            });
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    /** Sends message {@code id} as {@code client}'s (its session's header), with a payload of that message's form, and waits until the transport took it. */
    private static void sendLate(Session client, int id) {
        client.ep.send(id, client.sessionHeader, switch (id) {
            case PerfProtocol.BYE -> new PerfProtocol.Writer().string("the previous client's reason").segment();
            case PerfProtocol.BEGIN -> new PerfProtocol.Writer().u32(1).u8(PerfTest.AM_LAT.ordinal()).u64(8).segment();
            case PerfProtocol.END -> new PerfProtocol.Writer().u32(1).segment();
            // Larger than the 1 MiB buffer of the phases so far.
            case PerfProtocol.DATA -> MemorySegment.ofArray(new byte[2 << 20]);
            default -> MemorySegment.ofArray(new byte[8]);
        });
        client.progressUntil(() -> client.ep.pending() == 0, "the late message handed to the transport");
    }

    /**
     * An am_lat size whose PONG the server cannot send (larger than its endpoint's largest payload: a server started with a
     * smaller posix.bounce.size than the client's) is refused in READY, naming the size, the server's limit, the key that
     * sets it with its value on the server, and what to do: the client's row says so and the run goes on. The PONG's send
     * threw IllegalArgumentException in the PING handler, and the server ended the session "on a bug of conduit perf", its
     * stack trace printed, which the client repeated in its error (found by review).
     */
    @Test
    void anAmLatSizeLargerThanTheServerCanAnswerIsRefusedInReadyNamingItsLimitAndKey() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L, 128L << 10), 10L, null, new PerfParsing.Warmup(2, null),
                PerfPlan.Wakeup.BUSY, Duration.ofSeconds(30), 1);
        List<PerfResult> rows = new ArrayList<>();

        ServerRun server = serveOneClient(Map.of("posix.bounce.size", "64k"), (clientConduit, bootstrap, serverErr) -> {
            try (PerfClient client = new PerfClient(clientConduit, () -> clientConduit, bootstrap, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { })) {
                rows.addAll(client.runAll(() -> { }, measured -> { }));
            }
        });

        assertThat(server.err()).as("the server's line").contains("ended after").doesNotContain("failed").doesNotContain("bug");
        assertThat(server.exit()).isEqualTo(ConduitCommand.EXIT_OK);
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0).isSkipped()).as("am_lat 8: " + rows.get(0).skipped()).isFalse();
        assertThat(rows.get(1).skipped()).as("am_lat 128k's row").isEqualTo("larger than the server can answer: its PONG of 131072 bytes "
                + "would exceed the largest payload the server's endpoint carries through 'posix' (65536 bytes); start the server with "
                + "--set posix.bounce.size=128k or more (or conduit.posix.bounce.size, CONDUIT_POSIX_BOUNCE_SIZE)");
    }

    /**
     * An am_lat size larger than the client's own endpoint carries is skipped before BEGIN, with the runtime's refusal of
     * such a send, which names the key of this side that raises it: the server, asked first, refused it as larger than it
     * can answer and said to start the server with a larger limit, also to a client whose server it had spawned with its
     * own settings (helper h4, `./conduit perf am_lat -s 8,64m`).
     */
    @Test
    void anAmLatSizeLargerThanTheClientCanSendIsSkippedWithTheRuntimesWordsNotTheServers() throws Exception {
        PerfPlan plan = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L, 128L << 10), 10L, null, new PerfParsing.Warmup(2, null),
                PerfPlan.Wakeup.BUSY, Duration.ofSeconds(30), 1);
        List<PerfResult> rows = new ArrayList<>();

        // Both sides alike, as a server the client spawned is.
        ServerRun server = serveOneClient(Map.of("posix.bounce.size", "64k"), Map.of("posix.bounce.size", "64k"), (clientConduit, bootstrap, serverErr) -> {
            try (PerfClient client = new PerfClient(clientConduit, () -> clientConduit, bootstrap, ThreadMode.SINGLE, plan,
                    PerfProgress.off(), stop -> { })) {
                rows.addAll(client.runAll(() -> { }, measured -> { }));
            }
        });

        assertThat(server.exit()).as(server.err()).isEqualTo(ConduitCommand.EXIT_OK);
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0).isSkipped()).as("am_lat 8: " + rows.get(0).skipped()).isFalse();
        assertThat(rows.get(1).skipped()).as("am_lat 128k's row")
                .isEqualTo("payload (maxLength) of 131072 bytes is larger than transport 'posix' carries on this endpoint (65536 bytes, "
                        + "Endpoint.maxPayloadSize()); send less, or split it; or raise the limit: posix.bounce.size "
                        + "(CONDUIT_POSIX_BOUNCE_SIZE) of this process, the sender, sets it (rounded up to a power of two); at most 1g");
    }

    /** What a one-session server said on its standard error, and its exit code. */
    private record ServerRun(int exit, String err) {
    }

    /** A client of a one-session server: its Conduit, the server's bootstrap, and what the server says so far. */
    @FunctionalInterface
    private interface Client {
        void run(Conduit clientConduit, PerfBootstrap bootstrap, StringWriter serverErr) throws Exception;
    }

    /**
     * Runs {@code client} against a posix server of one session in a shared directory of its own, in
     * this JVM, and waits for the server to end.
     */
    private static ServerRun serveOneClient(Client client) throws Exception {
        return serveOneClient(Map.of(), client);
    }

    /** As {@link #serveOneClient(Client)}, the server's Conduit built with {@code serverSettings} (keys and values) besides. */
    private static ServerRun serveOneClient(Map<String, String> serverSettings, Client client) throws Exception {
        return serveOneClient(serverSettings, Map.of(), client);
    }

    /** As {@link #serveOneClient(Map, Client)}, the client's Conduit built with {@code clientSettings} besides. */
    private static ServerRun serveOneClient(Map<String, String> serverSettings, Map<String, String> clientSettings, Client client)
            throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "conduit-perf-echo");
        StringWriter serverErr = new StringWriter();
        AtomicInteger serverExit = new AtomicInteger(Integer.MIN_VALUE);
        try {
            // A hang guard, not a bound on the whole test: the client's waits bound each answer, the server's end has its
            // own bound, and a call that never returns (a connect, a close) fails it, naming where.
            return HangGuard.await("a client of a one-session server", () -> {
                try (Conduit serverConduit = conduit("posix", shared, serverSettings); Conduit clientConduit = conduit("posix", shared, clientSettings)) {
                    Thread serverThread = startServer(serverConduit, shared, serverErr, serverExit);
                    try {
                        client.run(clientConduit, PerfBootstrap.await(shared, NAME, Duration.ofSeconds(30), () -> !serverThread.isAlive()),
                                serverErr);
                    } finally {
                        // Also after a failure: the client's worker is closed by now, which ends the server's session.
                        serverThread.join(TimeUnit.SECONDS.toMillis(60));
                    }
                    assertThat(serverThread.isAlive()).as("the server ends its one session; " + serverErr).isFalse();
                    return new ServerRun(serverExit.get(), serverErr.toString());
                }
            });
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    /** Starts a server of one session on {@code shared}, its errors to {@code serverErr} and its exit code to {@code serverExit}. */
    private static Thread startServer(Conduit serverConduit, Path shared, StringWriter serverErr, AtomicInteger serverExit) {
        PerfServer server = new PerfServer(serverConduit, new PerfServer.Options(ThreadMode.SINGLE, 1L << 20, false, shared, NAME, null, false,
                Duration.ofSeconds(10)), new PrintWriter(new StringWriter(), true), new PrintWriter(serverErr, true));
        return Thread.ofPlatform().daemon().name("perf-server-under-test").start(() -> serverExit.set(server.run()));
    }

    /** Runs {@code server} on a thread of its own: its exit code to {@code serverExit}, or what it threw to {@code serverThrew}. */
    private static Thread runInThread(PerfServer server, AtomicInteger serverExit, AtomicReference<Throwable> serverThrew) {
        return Thread.ofPlatform().daemon().name("perf-server-under-test").start(() -> {
            try {
                serverExit.set(server.run());
            } catch (Throwable t) {
                serverThrew.set(t);
            }
        });
    }

    private static Conduit conduit(String transport, Path shared) {
        return conduit(transport, shared, Map.of());
    }

    private static Conduit conduit(String transport, Path shared, Map<String, String> settings) {
        ConduitBuilder builder = CommandRunner.discovering().builder().transports(transport).sharedDirectory(shared);
        settings.forEach(builder::set);
        return builder.build();
    }

    /**
     * Message {@code message}'s bytes: a pattern no other message of the run has (they differ at byte 0 already), and which
     * does not repeat every 256 bytes, so that bytes from elsewhere in the PING do not pass either.
     */
    private static byte[] pattern(long size, int message) {
        byte[] b = new byte[Math.toIntExact(size)];
        for (int i = 0; i < b.length; i++) b[i] = (byte) (message * 37 + 1 + i * 7 + (i >>> 8) * 3);
        return b;
    }

    private static int firstDifference(byte[] actual, byte[] expected) {
        int n = Math.min(actual.length, expected.length);
        for (int i = 0; i < n; i++) {
            if (actual[i] != expected[i]) return i;
        }
        return actual.length == expected.length ? -1 : n;
    }

    private static String describe(byte[] actual, byte[] expected) {
        int at = firstDifference(actual, expected);
        if (at < 0) return "";
        int to = Math.min(at + 16, Math.min(actual.length, expected.length));
        HexFormat hex = HexFormat.of();
        return " (from byte " + at + ": got " + hex.formatHex(actual, at, to) + ", the PING had " + hex.formatHex(expected, at, to) + ")";
    }

    /** The client's half of a session: one worker, its endpoint to the server, and what came back. */
    private static final class Session implements AutoCloseable {
        private final Worker worker;
        final Endpoint ep;
        final Conduit conduit;
        final PerfBootstrap bootstrap;
        private final Pool pool;
        private final Region region;
        private final Supplier<String> serverOutput;
        final List<byte[]> pongs = new ArrayList<>();
        private PerfProtocol.Reader welcome;
        /** The header of BEGIN, END and BYE, as PerfClient's: the session number WELCOME gave. */
        MemorySegment sessionHeader = MemorySegment.NULL;
        private int readySeq = -1;
        private boolean readyOk;
        private String readyError;
        private int endedSeq = -1;
        int endeds;
        private long serverAllocated = Long.MIN_VALUE;
        private PeerFailedException failure;
        private int seq;
        private long acks;
        private long lastAck;

        Session(Conduit conduit, PerfBootstrap bootstrap, Supplier<String> serverOutput) {
            this(conduit, bootstrap, serverOutput, 1L << 20);
        }

        /** A session whose HELLO names a region of {@code regionSize} bytes, where put_lat's answers go. */
        Session(Conduit conduit, PerfBootstrap bootstrap, Supplier<String> serverOutput, long regionSize) {
            this.serverOutput = serverOutput;
            this.conduit = conduit;
            this.bootstrap = bootstrap;
            worker = conduit.newWorker(ThreadMode.SINGLE);
            Pool p = null;
            try {
                // Handlers keep copies: a message is valid only during its handler.
                worker.onMessage(PerfProtocol.WELCOME, m -> welcome = new PerfProtocol.Reader(m, "WELCOME"));
                worker.onMessage(PerfProtocol.READY, m -> {
                    PerfProtocol.Reader r = new PerfProtocol.Reader(m, "READY");
                    int s = r.u32();
                    readyOk = r.u8() == 1;
                    readyError = readyOk ? null : r.string();
                    readySeq = s;
                });
                worker.onMessage(PerfProtocol.ENDED, m -> {
                    serverAllocated = m.payloadLong(4);
                    endedSeq = m.payloadInt(0);
                    endeds++;
                });
                worker.onMessage(PerfProtocol.PONG, m -> pongs.add(m.payloadToArray()));
                worker.onMessage(PerfProtocol.ACK, m -> {
                    lastAck = m.payloadLong(0);
                    acks++;
                });
                ep = worker.connect(WorkerAddress.fromBytes(bootstrap.address()), (endpoint, cause) -> failure = cause);
                // HELLO carries a region of ours, as PerfClient's does (the server opens it for put_lat's answers).
                p = conduit.pool(ep.transport());
                pool = p;
                region = pool.allocate(regionSize, 64);
            } catch (RuntimeException | Error e) {
                if (p != null) p.close();
                worker.close();
                throw e;
            }
        }

        void hello() {
            assertThat(hello(PerfProtocol.VERSION)).as("WELCOME's error").isEmpty();
        }

        /** Says HELLO as a client of protocol {@code version}; returns WELCOME's error, empty when the session began. */
        String hello(int version) {
            sayHello(version);
            progressUntil(() -> welcome != null, "WELCOME");
            String error = welcome.string();
            if (error.isEmpty()) {
                welcome.u64();
                for (int field = 0; field < 4; field++) welcome.string();
                if (welcome.more()) sessionHeader = new PerfProtocol.Writer().u64(welcome.u64()).segment();
            }
            return error;
        }

        /** Sends a HELLO naming {@code host} as this client's host, without waiting for its WELCOME. */
        void sayHelloAs(String host) {
            ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(PerfProtocol.VERSION).u64(ProcessHandle.current().pid()).string(host)
                    .string(ThreadMode.SINGLE.name()).string(PerfPlan.Wakeup.BUSY.label()).string(ep.transport())
                    .bytes(region.exportHandle()).bytes(worker.address().toBytes()).segment());
        }

        /** Sends a HELLO of this version without waiting for its WELCOME. */
        void sayHello() {
            sayHello(PerfProtocol.VERSION);
        }

        private void sayHello(int version) {
            ep.send(PerfProtocol.HELLO, new PerfProtocol.Writer().u8(version).u64(ProcessHandle.current().pid())
                    .string(PerfCommand.hostName()).string(ThreadMode.SINGLE.name()).string(PerfPlan.Wakeup.BUSY.label()).string(ep.transport())
                    .bytes(region.exportHandle()).bytes(worker.address().toBytes()).segment());
        }

        int begin(PerfTest test, long size) {
            int s = ready(test, size);
            assertThat(readyOk).as("READY for " + test.label() + " " + size + ": " + readyError).isTrue();
            return s;
        }

        /** Says BEGIN for a phase the server is to refuse; returns READY's error. */
        String beginRefused(PerfTest test, long size) {
            ready(test, size);
            assertThat(readyOk).as("READY for " + test.label() + " " + size).isFalse();
            return readyError;
        }

        /** Says BEGIN for test number {@code ordinal}, which no test of this version has; returns READY's error. */
        String beginOfAnUnknownTestRefused(int ordinal) {
            ready(ordinal, 8, "test #" + ordinal);
            assertThat(readyOk).as("READY for test #" + ordinal).isFalse();
            return readyError;
        }

        /** Says BEGIN and waits for its READY; returns the phase's sequence number. */
        private int ready(PerfTest test, long size) {
            return ready(test.ordinal(), size, test.label() + " " + size);
        }

        private int ready(int ordinal, long size, String what) {
            int s = ++seq;
            ep.send(PerfProtocol.BEGIN, sessionHeader, new PerfProtocol.Writer().u32(s).u8(ordinal).u64(size).segment());
            progressUntil(() -> readySeq == s, "READY for " + what);
            return s;
        }

        /** Sends one PING and returns the payload of the PONG that answers it. */
        byte[] ping(byte[] payload) {
            int before = pongs.size();
            ep.send(PerfProtocol.PING, MemorySegment.ofArray(payload));
            progressUntil(() -> pongs.size() > before, "PONG for a PING of " + payload.length + " bytes");
            return pongs.getLast();
        }

        /**
         * One put_bw phase of {@code size} bytes (8 or more): when {@code landed} is not null, a put of {@code size} bytes
         * whose last 8 hold it, little-endian, into the server's region, flushed; then PUT_DONE naming
         * {@code named}. Returns the server's ACK: 1 when it found the value named.
         */
        long putBwPhase(long size, Long landed, long named) {
            int s = begin(PerfTest.PUT_BW, size);
            if (landed != null) {
                try (Arena arena = Arena.ofConfined(); PeerRegion server = ep.peerRegion(bootstrap.regions().get(ep.transport()))) {
                    MemorySegment source = arena.allocate(size);
                    source.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), size - Long.BYTES, landed);
                    ep.put(source, server, 0);
                    ep.flush();
                }
            }
            long before = acks;
            ep.send(PerfProtocol.PUT_DONE, new PerfProtocol.Writer().u64(named).segment());
            progressUntil(() -> acks > before, "ACK of PUT_DONE");
            end(s);
            return lastAck;
        }

        /** Ends phase {@code s}; returns what ENDED says the server's thread allocated from READY to END. */
        long end(int s) {
            ep.send(PerfProtocol.END, sessionHeader, new PerfProtocol.Writer().u32(s).segment());
            progressUntil(() -> endedSeq == s, "ENDED " + s);
            return serverAllocated;
        }

        /**
         * One am_lat phase of 8 bytes, its PONG checked, then BYE; waits until the server says that one more session ended
         * (its standard error, {@code serverErr}, may hold earlier sessions' lines).
         */
        void amLatPhaseThenBye(StringWriter serverErr) {
            int seq = begin(PerfTest.AM_LAT, 8);
            assertThat(ping(new byte[] {1, 2, 3, 4, 5, 6, 7, 8})).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
            end(seq);
            int ended = sessionsEnded(serverErr);
            bye();
            progressUntil(() -> sessionsEnded(serverErr) > ended, "the end of the session");
        }

        private static int sessionsEnded(StringWriter serverErr) {
            return serverErr.toString().split("ended after", -1).length - 1;
        }

        void bye() {
            ep.send(PerfProtocol.BYE, sessionHeader, MemorySegment.NULL);
            progressUntil(() -> ep.pending() == 0, "BYE handed to the transport");
        }

        private void progressUntil(BooleanSupplier done, String what) {
            long start = System.nanoTime();
            while (!done.getAsBoolean()) {
                if (failure != null) throw new AssertionError("the server failed while this client waited for " + what + ": " + failure
                        + "; " + serverOutput.get(), failure);
                if (System.nanoTime() - start > ANSWER_WAIT_NANOS) {
                    throw new AssertionError("no " + what + " from the server; " + serverOutput.get());
                }
                if (worker.progress() == 0) worker.await(Duration.ofMillis(10));
            }
        }

        @Override
        public void close() {
            worker.close();
            region.close();
            pool.close();
        }
    }
}
