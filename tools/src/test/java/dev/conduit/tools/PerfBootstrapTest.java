package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a client says of a bootstrap that no conduit perf server of its version gave: a file, or a TCP peer. */
class PerfBootstrapTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    @TempDir
    Path shared;

    private static PerfBootstrap bootstrap(long pid) {
        return new PerfBootstrap(pid, "host-" + pid, "SINGLE", 4096, new byte[] {1, 2, 3}, Map.of("memfd", new byte[] {4}));
    }

    /**
     * A complete bootstrap file on which no process holds the lock was left by a server that is gone, and a new server
     * replaces it, saying whose it was; the new file is locked until the server closes it, which removes it. A server
     * restarted after a kill -9 used to fail for good on such a file (helper h6).
     */
    @Test
    void aCompleteFileNobodyHoldsTheLockOnIsReplacedAndTheNewOneLockedUntilItsClose() throws Exception {
        Path file = PerfBootstrap.file(shared, "gone");
        Files.write(file, bootstrap(41).encode()); // as a killed server leaves it: whole, and its lock gone with it

        try (PerfBootstrap.Published published = bootstrap(42).publish(shared, "gone")) {
            assertThat(published.replaced()).isEqualTo("pid 41 on host-41");
            assertThat(PerfBootstrap.decode(Files.readAllBytes(file), file.toString(), "").pid()).isEqualTo(42);
            assertThatThrownBy(() -> bootstrap(43).publish(shared, "gone")).as("while its server runs")
                    .isInstanceOf(ConduitException.class).hasMessageContaining("exists, and the server that published it was not found gone");
            assertThat(PerfBootstrap.decode(Files.readAllBytes(file), file.toString(), "").pid()).as("kept").isEqualTo(42);
        }
        assertThat(file).as("removed by the close").doesNotExist();
    }

    /**
     * In a shared directory other kernels may see too (9p, virtiofs: a host and its container through one mounted
     * directory, the setup --server and --connect are for), a complete file nobody here holds the lock on, whose worker
     * holds no lease here, may be a live server's under another kernel, whose locks look free under this one: a second
     * server of that name leaves it and fails, naming the file system and the remedy. It removed the live server's file
     * and published its own, and that server's clients found the wrong one. Where the leases tell, it is replaced.
     */
    @Test
    void aFileWhoseServerMayRunUnderAnotherKernelIsNotReplaced() throws Exception {
        Path file = PerfBootstrap.file(shared, "guest");
        Files.write(file, bootstrap(41).encode()); // as a live server under another kernel looks here: whole, its lock free

        assertThatThrownBy(() -> bootstrap(42).publish(FileSystemType.answering(Libc.V9FS_MAGIC), shared, "guest"))
                .isInstanceOf(ConduitException.class)
                .hasMessage("cannot publish the perf server's address: " + file + " exists, and this server does not replace it: "
                        + shared + " is on 9p, which other kernels may see too (a VM's guest and its host, other hosts), where a lock "
                        + "held under another kernel may look free under this one, so the server that published it may run there: choose another --name, or remove the file by hand once sure that server is gone");
        assertThat(PerfBootstrap.decode(Files.readAllBytes(file), file.toString(), "").pid()).as("kept").isEqualTo(41);

        try (PerfBootstrap.Published published = bootstrap(42).publish(Linux.libc(), shared, "guest")) {
            assertThat(published.replaced()).as("where the leases tell").isEqualTo("pid 41 on host-41");
        }
    }

    /**
     * A server's close removes only the file it published: one that another server published under the same name after
     * this one's was removed (by hand, or by a program that cleans the shared directory) stays, for that server still
     * runs. {@code Published.close} deleted the name, whatever file it named by then, and the running server's clients
     * were told no perf server had published it.
     */
    @Test
    void aServersCloseLeavesTheFileAnotherServerPublishedUnderItsNameOnceItsOwnWasRemoved() throws Exception {
        Path file = PerfBootstrap.file(shared, "reused");
        try (PerfBootstrap.Published first = bootstrap(41).publish(shared, "reused")) {
            Files.delete(file);
            try (PerfBootstrap.Published second = bootstrap(42).publish(shared, "reused")) {
                first.close();

                assertThat(file).as("the file of the server that still runs, once the first server closed").exists();
                assertThat(PerfBootstrap.decode(Files.readAllBytes(file), file.toString(), "").pid()).isEqualTo(42);
            }
        }
        assertThat(file).as("removed by the close of the server that published it").doesNotExist();
    }

    /**
     * A complete file nobody holds the lock on whose worker still holds its lease is a live server's of a Conduit before
     * 2026-12-04, which locked nothing: it stays, and the new server fails naming it, until that worker closes. A new
     * server of a rolling upgrade took it for a gone server's and replaced it, saying so; the older server went on
     * unfound by new clients, and removed the new server's file by name when it exited. Over memfd and posix.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aFileNobodyLocksWhoseWorkerHoldsItsLeaseIsALiveOlderServersAndStays(String plugin) throws Exception {
        Path file = PerfBootstrap.file(shared, "older");
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new java.util.Properties())
                .sharedDirectory(shared).transports(plugin).build()) {
            Worker worker = conduit.newWorker(ThreadMode.SINGLE);
            try {
                // As a server of such a Conduit publishes it: whole, and unlocked while the server runs.
                Files.write(file, new PerfBootstrap(41, "host-41", "SINGLE", 4096, worker.address().toBytes(), Map.of(plugin, new byte[] {4})).encode());
                assertThatThrownBy(() -> bootstrap(42).publish(shared, "older")).as("while its worker lives")
                        .isInstanceOf(ConduitException.class).hasMessageContaining("exists, and the server that published it was not found gone")
                        .hasMessageContaining("whose worker holds no lease there");
                assertThat(PerfBootstrap.decode(Files.readAllBytes(file), file.toString(), "").pid()).as("kept").isEqualTo(41);
            } finally {
                worker.close();
            }
            try (PerfBootstrap.Published published = bootstrap(42).publish(shared, "older")) {
                assertThat(published.replaced()).as("once its worker closed").isEqualTo("pid 41 on host-41");
            }
        }
    }

    /**
     * A server's new file that another process removes before the server locks it (a spawned run removing a killed run's
     * directory, in which a server was started by hand, takes the empty unlocked file for the killed server's) is created
     * again, and published under its name. The server wrote its bootstrap into the removed file, said "published", and
     * no client could find it.
     */
    @Test
    void aNewFileRemovedByAnotherProcessBeforeItsLockIsCreatedAgain() throws Exception {
        Path file = PerfBootstrap.file(shared, "raced");
        int[] attempts = {0};

        try (PerfBootstrap.Published published = bootstrap(42).publish(shared, "raced", () -> {
            if (attempts[0]++ == 0) deleteQuietly(file);
        })) {
            assertThat(attempts[0]).isEqualTo(2);
            assertThat(published.replaced()).isNull();
            assertThat(PerfBootstrap.decode(Files.readAllBytes(file), file.toString(), "").pid()).isEqualTo(42);
        }
        assertThat(file).as("removed by the close").doesNotExist();
    }

    /**
     * A gone server's file that another process removes while the new server is about to judge it is not said to exist:
     * the server creates its own. It failed with "... exists, and the server that published it was not found gone", of a
     * file that was not there.
     */
    @Test
    void aGoneServersFileRemovedByAnotherProcessBeforeItIsJudgedIsNotSaidToExist() throws Exception {
        Path file = PerfBootstrap.file(shared, "gone");
        Files.write(file, bootstrap(41).encode());
        int[] attempts = {0};

        try (PerfBootstrap.Published published = bootstrap(42).publish(shared, "gone", () -> {
            if (attempts[0]++ == 0) deleteQuietly(file);
        })) {
            assertThat(published.replaced()).as("removed by the other process, not replaced by this one").isNull();
            assertThat(PerfBootstrap.decode(Files.readAllBytes(file), file.toString(), "").pid()).isEqualTo(42);
        }
    }

    /** A file removed at every attempt fails the publish after a few, saying by whom it may be and what to do; nothing is left. */
    @Test
    void aFileRemovedAtEveryAttemptFailsNamingWhoRemovesSuchFiles() {
        Path file = PerfBootstrap.file(shared, "always");

        assertThatThrownBy(() -> bootstrap(42).publish(shared, "always", () -> deleteQuietly(file))).isInstanceOf(ConduitException.class)
                .hasMessage("cannot publish the perf server's address: " + file + " was removed by another process as this server "
                        + "created it, 4 times in a row: a spawned conduit perf removes a killed run's directory (conduit-perf-XXXXXXXX) "
                        + "in which it finds every owner dead, and so may another program that cleans " + shared + ". Give "
                        + "--shared-dir a directory of your own, not a run's");
        assertThat(shared).isEmptyDirectory();
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** A file that is not a complete bootstrap (being written, or another program's) is not taken for a gone server's: it stays. */
    @Test
    void aFileThatIsNotACompleteBootstrapIsNotReplaced() throws Exception {
        Path file = PerfBootstrap.file(shared, "partial");
        byte[] whole = bootstrap(41).encode();
        for (byte[] text : java.util.List.of(java.util.Arrays.copyOf(whole, whole.length - 4), "garbage\n".getBytes(StandardCharsets.UTF_8))) {
            Files.write(file, text);
            assertThatThrownBy(() -> bootstrap(42).publish(shared, "partial")).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("or the file is incomplete or no server's");
            assertThat(Files.readAllBytes(file)).isEqualTo(text);
        }
    }

    /**
     * A file of another program under a server's file name is said to be one, at once: it was waited
     * for as a bootstrap being written, until --timeout said that no server had published a file that was there.
     * So is one whose first line only starts like a bootstrap's (the word, then no format's number): it was called
     * another format's.
     */
    @Test
    void aFileNoServerWroteIsSaidToBeOneWithWhatToDo() throws Exception {
        for (String first : List.of("garbage", "conduit-perf garbage", "conduit-perf ", "conduit-perf 1 2", "conduit-perf 99999999999")) {
            Path file = Files.writeString(PerfBootstrap.file(shared, "other"), first + "\n");
            assertThatThrownBy(() -> PerfBootstrap.await(shared, "other", TIMEOUT, () -> false)).as(first).isInstanceOf(ConduitException.class)
                    .hasMessage(file + " is not a conduit perf bootstrap of this version (first line '" + first + "', expected 'conduit-perf 1'): "
                            + "no conduit perf server wrote it; remove it, or choose another --name");
        }
    }

    /** A first line of another format's number names both formats and what to do. */
    @Test
    void anotherFormatIsNamedWithTheOneThisReads() throws Exception {
        Path file = Files.writeString(PerfBootstrap.file(shared, "newer"), "conduit-perf 2\n");
        assertThatThrownBy(() -> PerfBootstrap.await(shared, "newer", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessage(file + " is not a conduit perf bootstrap of this version (first line 'conduit-perf 2', expected 'conduit-perf 1'): "
                        + "the server runs a Conduit of bootstrap format 2, where this one reads only format 1; run both sides with the "
                        + "same Conduit version");
    }

    /**
     * What a bootstrap's writer put in a line is quoted with its control characters escaped, and a host name or thread mode,
     * which messages show as they are, must be printable: a hostile file's or port's escape sequences reached the error and
     * the terminal that printed it as they were.
     */
    @Test
    void controlCharactersOfABootstrapNeverReachAMessageAsTheyAre() throws Exception {
        Path file = Files.writeString(PerfBootstrap.file(shared, "escapes"), "\u001b[2Jgarbage\n");
        assertThatThrownBy(() -> PerfBootstrap.await(shared, "escapes", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith(file + " is not a conduit perf bootstrap of this version (first line '\\u001b[2Jgarbage', "
                        + "expected 'conduit-perf 1'): ");

        String whole = new String(bootstrap(45).encode(), StandardCharsets.UTF_8);
        // A C0 control sequence (OSC, which retitles a terminal) and a C1 control (CSI, which a terminal may read as ESC [),
        // each with the escaped form the message quotes it in.
        String[][] hostile = {{"\u001b]0;x\u0007", "\\u001b]0;x\\u0007"}, {"\u009b2J", "\\u009b2J"}};
        for (String[] value : hostile) {
            for (String line : List.of("host", "thread-mode")) {
                byte[] text = whole.replaceFirst("(?m)^" + line + " .*$", line + " " + value[0]).getBytes(StandardCharsets.UTF_8);
                assertThatThrownBy(() -> PerfBootstrap.decode(text, "the bootstrap", "check it")).isInstanceOf(ConduitException.class)
                        .hasMessageMatching("the bootstrap is malformed: line \\d \\('" + line + " " + Pattern.quote(value[1])
                                + "'\\): a (host name|thread mode) is one word of printable ASCII");
            }
        }
        byte[] badPid = whole.replaceFirst("(?m)^pid .*$", "pid \u001b[31m").getBytes(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> PerfBootstrap.decode(badPid, "the bootstrap", "check it")).isInstanceOf(ConduitException.class)
                .hasMessage("the bootstrap is malformed: line 2 ('pid \\u001b[31m'): For input string: \"\\u001b[31m\"");
    }

    /**
     * A region line's plugin name is shown as it is too: PerfClient's "the perf server exported no region through plugin
     * 'memfd' (it offers [...])" prints the bootstrap's names in its brackets, so a hostile file's or port's escape sequence
     * in one reached the terminal, which host and thread-mode refuse.
     */
    @Test
    void aRegionsPluginNameWithControlCharactersIsRefusedAsAHostNameIs() {
        String whole = new String(bootstrap(46).encode(), StandardCharsets.UTF_8);
        byte[] text = whole.replaceFirst("(?m)^region memfd ", "region \u001b]0;x\u0007 ").getBytes(StandardCharsets.UTF_8);

        assertThatThrownBy(() -> PerfBootstrap.decode(text, "the bootstrap", "check it")).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("the bootstrap is malformed: line 7 ('region \\u001b]0;x\\u0007 ");
    }

    /** A file a server began and never ended (it died while writing it) is named as there, with what to do. */
    @Test
    void aFileNoServerEndedIsSaidToBeThereNotMissing() throws Exception {
        Path file = Files.writeString(PerfBootstrap.file(shared, "cut"), "conduit-perf 1\npid 3\n");

        assertThatThrownBy(() -> PerfBootstrap.await(shared, "cut", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessage(file + " is there, but it was not written whole within 2s (21 bytes, without the line 'end' that ends a "
                        + "bootstrap): a server that died while writing it leaves such a file, which a new --server refuses to replace. "
                        + "If none runs, remove the file and start one");
    }

    /**
     * A TCP peer that is not a conduit perf server of this version: one that closes the connection without a word (a
     * server of another version does), one that resets it, or one that answers something else (HTTP). It said "failed:
     * java.io.IOException: connection closed after 0 of 4 bytes" and "java.io.IOException: frame of 1213486160 bytes
     * (at most 65536)", the JDK's class name and no remedy. Each peer reads the client's request first: a socket closed
     * with the request unread resets the connection, so whether the client saw the close or a reset was a race.
     */
    @Test
    void aTcpPeerThatIsNotAServerOfThisVersionIsToldWithWhatToCheck() throws Exception {
        try (ServerSocketChannel peer = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
            PerfParsing.HostPort at = new PerfParsing.HostPort("127.0.0.1", ((InetSocketAddress) peer.getLocalAddress()).getPort());
            String check = ": check that " + at + " is a 'conduit perf --server --listen' of this Conduit version (one of another version "
                    + "closes the connection, another program answers something else)";
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    try (SocketChannel closing = peer.accept()) {
                        PerfBootstrap.readFrame(closing);
                    }
                    try (SocketChannel resetting = peer.accept()) {
                        PerfBootstrap.readFrame(resetting);
                        resetting.setOption(StandardSocketOptions.SO_LINGER, 0);
                    }
                    try (SocketChannel http = peer.accept()) {
                        PerfBootstrap.readFrame(http);
                        http.write(ByteBuffer.wrap("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
                    }
                    try (SocketChannel allOnes = peer.accept()) {
                        PerfBootstrap.readFrame(allOnes);
                        allOnes.write(ByteBuffer.allocate(4).putInt(-1).flip());
                    }
                } catch (IOException e) {
                    // the assertions below say what the client got
                }
            });

            assertThatThrownBy(() -> PerfBootstrap.fetch(at, Duration.ofSeconds(30))).isInstanceOf(ConduitException.class)
                    .hasMessage("the TCP bootstrap with " + at + " failed: the connection was closed after 0 of 4 bytes" + check);
            assertThatThrownBy(() -> PerfBootstrap.fetch(at, Duration.ofSeconds(30))).isInstanceOf(ConduitException.class)
                    .hasMessage("the TCP bootstrap with " + at + " failed: Connection reset" + check);
            assertThatThrownBy(() -> PerfBootstrap.fetch(at, Duration.ofSeconds(30))).isInstanceOf(ConduitException.class)
                    .hasMessage("the TCP bootstrap with " + at + " failed: it sent a frame of 1213486160 bytes, more than a bootstrap's 65536"
                            + check);
            // Read unsigned: it was "a frame of -1 bytes, more than a bootstrap's 65536" (found by PerfClientTcpBootstrapFuzzTest).
            assertThatThrownBy(() -> PerfBootstrap.fetch(at, Duration.ofSeconds(30))).isInstanceOf(ConduitException.class)
                    .hasMessage("the TCP bootstrap with " + at + " failed: it sent a frame of 4294967295 bytes, more than a bootstrap's 65536"
                            + check);
        }
    }

    /**
     * A TCP peer that accepts the connection and then sends nothing, or part of a frame, and holds the connection open (a stuck
     * server, another program) is told at the client's --timeout with what arrived and what to check. It said "failed:
     * java.nio.channels.AsynchronousCloseException (--timeout 300ms passed)", the JDK's class name for the close of the
     * connection by the client's own timeout (found by PerfClientTcpBootstrapFuzzTest).
     */
    @Test
    void aTcpPeerThatAcceptsAndSaysNothingWholeIsToldAtTheTimeoutWithWhatArrived() throws Exception {
        try (ServerSocketChannel peer = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
            PerfParsing.HostPort at = new PerfParsing.HostPort("127.0.0.1", ((InetSocketAddress) peer.getLocalAddress()).getPort());
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    try (SocketChannel silent = peer.accept()) {
                        PerfBootstrap.readFrame(silent);
                        holdUntilClosed(silent);
                    }
                    try (SocketChannel cut = peer.accept()) {
                        PerfBootstrap.readFrame(cut);
                        cut.write(ByteBuffer.allocate(4 + 10).putInt(200).put("conduit-pe".getBytes(StandardCharsets.UTF_8)).flip());
                        holdUntilClosed(cut);
                    }
                } catch (IOException e) {
                    // the assertions below say what the client got
                }
            });
            String then = " when --timeout 300ms ran out: check that " + at + " is a 'conduit perf --server --listen' of this Conduit "
                    + "version (one of another version closes the connection, another program answers something else); a server "
                    + "that accepts and then says nothing is another program, or a stuck one";

            assertThatThrownBy(() -> PerfBootstrap.fetch(at, Duration.ofMillis(300))).isInstanceOf(ConduitException.class)
                    .hasMessage("the TCP bootstrap with " + at + " failed: the connection was accepted, but 0 of the 4 bytes of the frame's "
                            + "length had arrived" + then);
            assertThatThrownBy(() -> PerfBootstrap.fetch(at, Duration.ofMillis(300))).isInstanceOf(ConduitException.class)
                    .hasMessage("the TCP bootstrap with " + at + " failed: the connection was accepted, but 10 of the 200 bytes of the "
                            + "frame had arrived" + then);
        }
    }

    /** Reads until the client closes the connection (its timeout). */
    private static void holdUntilClosed(SocketChannel client) throws IOException {
        ByteBuffer any = ByteBuffer.allocate(1);
        while (client.read(any) >= 0) any.clear();
    }

    /**
     * A bootstrap whose line lacks its value, or has one that does not decode, is named by that line. It said "is malformed:
     * Index 1 out of bounds for length 1" and "is malformed: Illegal base64 character 21", neither which field was wrong
     * nor that it was one (found by PerfClientTcpBootstrapFuzzTest).
     */
    @Test
    void aLineWithoutItsValueOrWithOneThatDoesNotDecodeIsNamed() {
        String whole = new String(bootstrap(43).encode(), StandardCharsets.UTF_8);
        java.util.function.BiFunction<String, String, String> failure = (line, replacement) -> {
            byte[] text = whole.replaceFirst("(?m)^" + line + " .*$", java.util.regex.Matcher.quoteReplacement(replacement))
                    .getBytes(StandardCharsets.UTF_8);
            try {
                PerfBootstrap.decode(text, "the bootstrap", "check it");
            } catch (ConduitException e) {
                return e.getMessage();
            }
            throw new AssertionError("'" + replacement + "' was taken");
        };

        assertThat(failure.apply("pid", "pid")).isEqualTo("the bootstrap is malformed: line 2 ('pid'): 'pid' takes 1 value, it has 0");
        assertThat(failure.apply("pid", "pid ")).isEqualTo("the bootstrap is malformed: line 2 ('pid '): For input string: \"\"");
        assertThat(failure.apply("address", "address !!!")).isEqualTo("the bootstrap is malformed: line 6 ('address !!!'): Illegal "
                + "base64 character 21");
        assertThat(failure.apply("region", "region posix")).isEqualTo("the bootstrap is malformed: line 7 ('region posix'): 'region' "
                + "takes 2 values, it has 1");
        assertThat(failure.apply("region-size", "region-size 0")).isEqualTo("the bootstrap is malformed: line 5 ('region-size 0'): a "
                + "region size is above 0");
        assertThat(failure.apply("region-size", "region-size -4096")).isEqualTo("the bootstrap is malformed: line 5 ('region-size "
                + "-4096'): a region size is above 0");
    }

    /**
     * A bootstrap without a line it needs names each line it lacks: it said "lacks its address, thread mode, region size or
     * regions", and left the reader to find which (found by PerfClientTcpBootstrapFuzzTest).
     */
    @Test
    void aBootstrapWithoutALineItNeedsNamesEachLineItLacks() {
        String whole = new String(bootstrap(44).encode(), StandardCharsets.UTF_8);

        assertThatThrownBy(() -> PerfBootstrap.decode(whole.replaceFirst("address .*\n", "").getBytes(StandardCharsets.UTF_8), "the bootstrap",
                "check it")).isInstanceOf(ConduitException.class).hasMessage("the bootstrap is malformed: it lacks the line address (another "
                + "version of conduit perf wrote it, or it was damaged)");
        assertThatThrownBy(() -> PerfBootstrap.decode(whole.replaceFirst("thread-mode .*\n", "").replaceFirst("region .*\n", "")
                .getBytes(StandardCharsets.UTF_8), "the bootstrap", "check it")).isInstanceOf(ConduitException.class)
                .hasMessage("the bootstrap is malformed: it lacks the lines thread-mode, region (another version of conduit perf wrote it, "
                        + "or it was damaged)");
    }

    /**
     * A TCP server given an HTTP request (a browser, a port scanner) ignores it as a stranger: it said that a client went
     * away during the bootstrap, with the JDK's "java.io.IOException: frame of 1195725856 bytes (at most 65536)".
     */
    @Test
    void aTcpServerIgnoresAnHttpRequestAsAStranger() throws Exception {
        StringWriter said = new StringWriter();
        try (PerfBootstrap.Listener listener = new PerfBootstrap.Listener(new PerfParsing.HostPort("127.0.0.1", 0), Duration.ofSeconds(30),
                new PrintWriter(said, true))) {
            listener.serveInBackground(new PerfBootstrap(1, "host", "SINGLE", 4096, new byte[] {1}, Map.of("posix", new byte[] {2})), e -> { });
            try (SocketChannel browser = SocketChannel.open(new InetSocketAddress("127.0.0.1", listener.address().port()))) {
                browser.write(ByteBuffer.wrap("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
                // Until the server closes the connection, which it does once it said why: a reset too, as it leaves the request unread.
                HangGuard.await("the server's close", () -> {
                    try {
                        return browser.read(ByteBuffer.allocate(64));
                    } catch (IOException reset) {
                        return -1;
                    }
                });
            }
        }
        assertThat(said.toString()).isEqualTo("conduit perf server: ignored a TCP client that is not a conduit perf client of this version"
                + System.lineSeparator());
    }

    /**
     * A TCP client that connects and sends no whole request within the server's --timeout is said so, with how much of it
     * came: it was "a TCP client went away during the bootstrap (or took longer than 300 ms, --timeout):
     * java.nio.channels.AsynchronousCloseException", the JDK's class for the close by the server's own timeout.
     */
    @Test
    void aTcpClientThatSendsNoWholeRequestInTheTimeoutIsSaidToWithWhatCame() throws Exception {
        StringWriter said = new StringWriter();
        try (PerfBootstrap.Listener listener = new PerfBootstrap.Listener(new PerfParsing.HostPort("127.0.0.1", 0), Duration.ofMillis(300),
                new PrintWriter(said, true))) {
            listener.serveInBackground(new PerfBootstrap(1, "host", "SINGLE", 4096, new byte[] {1}, Map.of("posix", new byte[] {2})), e -> { });
            try (SocketChannel silent = SocketChannel.open(new InetSocketAddress("127.0.0.1", listener.address().port()))) {
                silent.write(ByteBuffer.allocate(6).putInt(30).put((byte) 'c').put((byte) 'o').flip());
                // Until the server's timeout closes the connection, which it does once it said why.
                HangGuard.await("the server's close", () -> {
                    try {
                        return silent.read(ByteBuffer.allocate(64));
                    } catch (IOException reset) {
                        return -1;
                    }
                });
            }
            HangGuard.await("the server's line", () -> {
                while (!said.toString().endsWith(System.lineSeparator())) Thread.onSpinWait();
                return null;
            });
        }
        assertThat(said.toString()).isEqualTo("conduit perf server: a TCP client sent no whole request within 300 ms (--timeout): 2 of "
                + "the 30 bytes of the frame had arrived" + System.lineSeparator());
    }

    /**
     * A FIFO of the file's name (a process that writes the shared directory, such as one in a container, can make one) is
     * said to be one at once: the client's read of it waited for a writer for ever, past --timeout (found by helper h35).
     */
    @Test
    void aFifoOfTheFilesNameIsSaidToBeOneWithoutWaitingOnIt() throws Exception {
        Path file = PerfBootstrap.file(shared, "fifo");
        org.assertj.core.api.Assumptions.assumeThat(new ProcessBuilder("mkfifo", file.toString()).inheritIO().start().waitFor())
                .as("mkfifo").isZero();

        HangGuard.await("a client's wait for a bootstrap file that is a FIFO", () -> {
            assertThatThrownBy(() -> PerfBootstrap.await(shared, "fifo", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                    .hasMessage(file + " is a FIFO, not a perf server's bootstrap file: remove it, or choose another --name");
            return null;
        });
    }

    /**
     * A symbolic link of the file's name is not followed: the client read what it led to, outside the shared directory
     * (a root client any file), and quoted its first line in its error; a link to /dev/zero filled its heap (found by
     * helper h35).
     */
    @Test
    void aSymbolicLinkOfTheFilesNameIsNotFollowed(@TempDir Path elsewhere) throws Exception {
        Path secret = Files.writeString(elsewhere.resolve("secret"), "first-line-of-a-file-outside\n");
        Path file = Files.createSymbolicLink(PerfBootstrap.file(shared, "link"), secret);

        assertThatThrownBy(() -> PerfBootstrap.await(shared, "link", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessage(file + " is a symbolic link, not a perf server's bootstrap file: remove it, or choose another --name");
    }

    /** A directory of that name: it said "cannot read FILE: java.io.IOException: Is a directory", the JDK's words and no remedy. */
    @Test
    void aDirectoryOfTheFilesNameIsSaidToBeOne() throws Exception {
        Path file = Files.createDirectory(PerfBootstrap.file(shared, "dir"));

        assertThatThrownBy(() -> PerfBootstrap.await(shared, "dir", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessage(file + " is a directory, not a perf server's bootstrap file: remove it, or choose another --name");
    }

    /**
     * A run's directory swapped for a symbolic link after it was opened (by a process that writes the shared directory)
     * leads the removal of its bootstrap file nowhere: the file judged and removed is the one in the directory held
     * open, and a gone server's file of that name where the link leads stays. By path, a root run removed that one.
     */
    @Test
    void aRunsDirectorySwappedForALinkLeadsTheRemovalOfItsBootstrapNowhereElse(@TempDir Path outside) throws Exception {
        Path run = Files.createDirectory(shared.resolve("conduit-perf-00000001"));
        Path inRun = Files.write(PerfBootstrap.file(run, "gone"), bootstrap(41).encode());
        Path outsideFile = Files.write(PerfBootstrap.file(outside, "gone"), bootstrap(51).encode());
        Path aside = shared.resolve("aside");

        try (var directory = dev.conduit.shm.SharedDirectory.open(dev.conduit.linux.Linux.libc(), run, "--shared-dir")) {
            Files.move(run, aside);
            Files.createSymbolicLink(run, outside);

            assertThat(PerfBootstrap.removeIfNoServerHoldsIt(directory, inRun.getFileName().toString())).isEqualTo("pid 41 on host-41");
        }
        assertThat(outsideFile).as("the file where the link leads").exists();
        assertThat(aside.resolve(inRun.getFileName())).as("the file in the directory held open").doesNotExist();
    }
}
