package dev.conduit.tools;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.Conduit;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The TCP bootstrap of {@code conduit perf --connect HOST:PORT} against a hostile server of it: a socket that answers the
 * client's request with the bootstrap a real {@code conduit perf --server --listen --keep} serves, or with that bootstrap
 * mutated (its text cut short in a whole frame, a frame cut short and closed or left open, bytes of the text overwritten, a
 * line replaced, another length), or that closes the connection unread. The client fetches the bootstrap
 * ({@link PerfBootstrap#fetch}) and runs a {@link PerfClient} against the server it names, as {@code --connect} does.
 * Whatever the socket does, the run ends in rows or a {@link ConduitException} whose message names what was wrong (a
 * failure of the bootstrap names the server's HOST:PORT, a malformed text the line that is wrong or the lines it lacks, a
 * worker address or region handle that does not decode the bootstrap as its source, and no JDK exception class stands for
 * the cause): never another exception, an {@code Error}, or a hang past the client's {@code --timeout}; and the client
 * leaves nothing in the shared directory. Its first runs found the silent socket said as
 * "java.nio.channels.AsynchronousCloseException", lines said by the JDK's words alone, a negative frame length and the
 * undecodable address taken for an unreachable server (seeds {@code silent}, {@code pid-without-its-value},
 * {@code address-not-a-worker-address}; PerfBootstrapTest and PerfClientTest hold the fixes' tests).
 *
 * <p>The input is a script (a spent one reads 0): its first byte says what the socket does (mod 8: 0 serves the bootstrap
 * as it is, 1 a whole frame of the text cut short, 2 the frame cut short then closed, 3 the frame cut short then held open
 * (nothing at all when cut at 0: a silent server), 4 closes the connection without reading the request, 5 overwrites bytes
 * of the text, 6 replaces one of its lines, 7 gives the frame another length), the bytes after it how.
 */
class PerfClientTcpBootstrapFuzzTest {

    /** am_lat of 8 bytes, twice, with a --timeout short enough for a fuzzer: a silent socket costs it. */
    private static final PerfPlan PLAN = new PerfPlan(List.of(PerfTest.AM_LAT), List.of(8L), 2L, null, PerfParsing.Warmup.NONE,
            PerfPlan.Wakeup.BUSY, Duration.ofMillis(300), 1);
    /** How long one run, or the hostile socket's thread, may take (a hang guard, not a measurement: the --timeout is 300 ms). */
    private static final long HANG_GUARD_SECONDS = 30;

    private static Path shared;
    private static Conduit serverConduit;
    private static Conduit clientConduit;
    private static PerfServer server;
    private static Thread serverThread;
    private static final StringWriter serverOutput = new StringWriter();
    /** The text the real server's bootstrap is, which the hostile socket serves or mutates. */
    private static byte[] bootstrap;
    /** What the shared directory holds with the server up and no client: a client's run must leave it so. */
    private static List<String> serverFiles;
    private static ServerSocketChannel hostile;
    private static PerfParsing.HostPort hostileAt;

    @BeforeAll
    static void startTheServer() throws Exception {
        shared = Files.createTempDirectory("conduit-perf-tcp-bootstrap-fuzz-");
        serverConduit = PerfFuzzDirectory.conduit(shared).build();
        clientConduit = PerfFuzzDirectory.conduit(shared).build();
        PrintWriter out = new PrintWriter(serverOutput, true);
        server = new PerfServer(serverConduit, new PerfServer.Options(ThreadMode.SINGLE, 1 << 20, true, shared, "fuzz",
                new PerfParsing.HostPort("127.0.0.1", 0), false, Duration.ofSeconds(5)), out, out);
        serverThread = Thread.ofPlatform().daemon().name("perf-server").start(server::run);
        PerfParsing.HostPort serverAt = null;
        for (int round = 0; serverAt == null; round++) {
            java.util.regex.Matcher listening = java.util.regex.Pattern.compile("listening on (\\S+):(\\d+);").matcher(serverOutput.toString());
            if (listening.find()) {
                serverAt = new PerfParsing.HostPort(listening.group(1), Integer.parseInt(listening.group(2)));
            } else if (round == PerfFuzzDirectory.WAIT_ROUNDS) {
                throw new AssertionError("the server did not say where it listens in " + round + " rounds; it said: " + serverOutput);
            } else {
                Thread.sleep(10);
            }
        }
        bootstrap = PerfBootstrap.fetch(serverAt, Duration.ofSeconds(HANG_GUARD_SECONDS)).encode();
        serverFiles = PerfFuzzDirectory.files(shared);
        hostile = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
        hostileAt = new PerfParsing.HostPort("127.0.0.1", ((InetSocketAddress) hostile.getLocalAddress()).getPort());
    }

    @AfterAll
    static void stopTheServer() throws Exception {
        try {
            if (hostile != null) hostile.close();
            if (server != null) server.stop("the fuzz target ended");
            if (serverThread != null) serverThread.join(TimeUnit.SECONDS.toMillis(HANG_GUARD_SECONDS));
            assertThat(serverThread.isAlive()).as("the server's thread ends when told").isFalse();
            clientConduit.close();
            serverConduit.close();
            assertThat(PerfFuzzDirectory.files(shared)).as("files left in the shared directory").isEmpty();
        } finally {
            PerfPeer.deleteTree(shared);
        }
    }

    @FuzzTest(maxExecutions = 300, maxDuration = "15s")
    void aHostileBootstrapEndsTheRunInRowsOrAConduitExceptionNamingTheCause(byte[] input) throws Exception {
        ByteBuffer script = ByteBuffer.wrap(input).order(ByteOrder.LITTLE_ENDIAN);
        AtomicReference<Throwable> socketThrew = new AtomicReference<>();
        Thread socket = Thread.ofPlatform().daemon().name("hostile-bootstrap-socket").start(() -> {
            try (SocketChannel client = hostile.accept()) {
                serve(client, script);
            } catch (IOException gone) {
                // The client closed first (its timeout): what the client did is what this test judges.
            } catch (Throwable t) {
                socketThrew.set(t);
            }
        });
        CompletableFuture<Void> run = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("perf-client").start(() -> {
            try {
                runTheClient();
                run.complete(null);
            } catch (Throwable t) {
                run.completeExceptionally(t);
            }
        });
        try {
            run.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        } finally {
            socket.join(TimeUnit.SECONDS.toMillis(HANG_GUARD_SECONDS));
        }
        assertThat(socket.isAlive()).as("the hostile socket's thread ends").isFalse();
        assertThat(socketThrew.get()).as("the hostile socket's own failure (a bug of this test)").isNull();
        PerfFuzzDirectory.awaitFiles(shared, serverFiles, "the shared directory once the client closed (the server's own files stay)");
    }

    /** As {@code --connect HOST:PORT}: the bootstrap, then the run against the server it names. */
    private static void runTheClient() {
        PerfBootstrap fetched;
        try {
            fetched = PerfBootstrap.fetch(hostileAt, PLAN.timeout());
        } catch (ConduitException e) {
            assertThat(e.getMessage()).as("the client's error line").contains(hostileAt.toString()).doesNotContainPattern("java\\.\\w+\\.");
            if (e.getMessage().contains(" is malformed: ")) {
                assertThat(e.getMessage()).as("the client's error line").containsPattern(" is malformed: (line \\d+ |it lacks the line)");
            }
            return;
        }
        try (PerfClient client = new PerfClient(clientConduit, () -> PerfFuzzDirectory.conduit(shared).build(), fetched, ThreadMode.SINGLE, PLAN,
                PerfProgress.off(), stop -> { })) {
            client.runAll(() -> { }, tested -> { });
        } catch (ConduitException e) {
            assertThat(e.getMessage()).as("the client's error line").isNotBlank().doesNotContainPattern("java\\.\\w+\\.");
            if (e.getMessage().contains("invalid Conduit")) {
                assertThat(e.getMessage()).as("the client's error line").startsWith("the perf server's bootstrap gives ");
            }
        }
    }

    /** Answers the client's request as the script says. */
    private static void serve(SocketChannel client, ByteBuffer script) throws IOException {
        int what = u8(script) % 8;
        if (what == 4) return; // closed unread
        PerfBootstrap.readFrame(client);
        byte[] text = bootstrap.clone();
        int length = text.length;
        int sent = text.length;
        boolean holdOpen = false;
        switch (what) {
            case 1 -> {
                text = java.util.Arrays.copyOf(text, u16(script) % text.length);
                length = text.length;
                sent = length;
            }
            case 2 -> sent = u16(script) % text.length;
            case 3 -> {
                sent = u16(script) % text.length;
                holdOpen = true;
            }
            case 5 -> {
                for (int n = u8(script) % 8 + 1; n > 0; n--) text[u16(script) % text.length] = (byte) u8(script);
            }
            case 6 -> {
                text = replaceALine(text, script);
                length = text.length;
                sent = length;
            }
            case 7 -> length = script.remaining() >= Integer.BYTES ? script.getInt() : u8(script);
            default -> { } // 0: as it is
        }
        ByteBuffer frame = ByteBuffer.allocate(4 + text.length).putInt(length).put(text).flip();
        if (what == 3 && sent == 0) frame.limit(0); // silent: not even the length
        else frame.limit(Math.min(frame.limit(), 4 + sent));
        while (frame.hasRemaining()) client.write(frame);
        if (holdOpen) {
            // Held until the client gives up (its timeout closes the connection): read returns -1 then.
            ByteBuffer any = ByteBuffer.allocate(1);
            while (client.read(any) >= 0) any.clear();
        }
    }

    /** One line of the bootstrap replaced by its first word (or none) and bytes of the script, which may hold any character. */
    private static byte[] replaceALine(byte[] text, ByteBuffer script) {
        List<String> lines = new java.util.ArrayList<>(List.of(new String(text, StandardCharsets.UTF_8).split("\n", -1)));
        int index = u8(script) % (lines.size() - 1); // not the empty string after the last newline
        String first = lines.get(index).split(" ")[0];
        byte[] tail = new byte[Math.min(u8(script) % 80, script.remaining())];
        script.get(tail);
        lines.set(index, (u8(script) % 2 == 0 ? first + " " : "") + new String(tail, StandardCharsets.ISO_8859_1));
        return String.join("\n", lines).getBytes(StandardCharsets.UTF_8);
    }

    private static int u8(ByteBuffer script) {
        return script.hasRemaining() ? script.get() & 0xFF : 0;
    }

    private static int u16(ByteBuffer script) {
        return script.remaining() >= 2 ? script.getShort() & 0xFFFF : u8(script);
    }

}
