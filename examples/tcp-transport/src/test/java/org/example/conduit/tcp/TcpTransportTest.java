package org.example.conduit.tcp;

import dev.conduit.spi.ConduitException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.RecordingLogger;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the TCK does not check: how the transport treats a stranger that connects to its port, and what it hands its sink. */
// A hang guard, not a speed check: several tests spin on progress() until a peer's bytes arrive.
@Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class TcpTransportTest {

    /**
     * A stranger can connect as fast as it likes: each connection it makes with a wrong token is
     * closed unanswered, but the warnings are not one per connection (plugin-authoring.md: what a
     * peer or a stranger can repeat goes through RepeatedWarning).
     */
    @Test
    void strangersThatPresentAWrongTokenAreDroppedWithoutFloodingTheLog(@TempDir Path shared) throws IOException {
        RecordingLogger recording = new RecordingLogger();
        List<String> warnings = recording.warnings();
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared).withLogger(recording)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            InetSocketAddress listening = listeningAddress(transport);
            int strangers = 20;
            for (int i = 0; i < strangers; i++) {
                try (SocketChannel stranger = SocketChannel.open(listening)) {
                    stranger.write(ByteBuffer.wrap(new byte[Frame.TOKEN_LENGTH]));
                    assertEquals(-1, stranger.read(ByteBuffer.allocate(1)), "what a stranger with a wrong token reads: the end, no acknowledgement");
                }
            }
            assertEquals(1, warnings.size(), "warnings logged for " + strangers + " connections with a wrong token, made one after "
                    + "another within a minute: " + warnings);
            assertTrue(warnings.getFirst().contains("wrong token"), warnings.getFirst());
        }
    }

    /**
     * A connector that presents the right token but announces an address no transport has (empty,
     * or longer than Transport.MAX_ADDRESS_LENGTH) is closed unanswered naming the length, before it
     * gets a key or a frame buffer; the sink is told of no sender. Each case on a transport of its own, so
     * that each has its warning (at most one a minute per transport).
     */
    @ParameterizedTest
    @ValueSource(ints = {0, Transport.MAX_ADDRESS_LENGTH + 1})
    void aHelloWithAnAddressOfNoLengthOrTooLongIsDropped(int length, @TempDir Path shared) throws IOException {
        RecordingLogger recording = new RecordingLogger();
        List<String> warnings = recording.warnings();
        List<Long> ended = new CopyOnWriteArrayList<>();
        MessageSink sink = new MessageSink() {
            @Override
            public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl) {
                throw new AssertionError("a message delivered from a connection whose hello was refused");
            }

            @Override
            public void onSenderClosed(long sender) {
                ended.add(sender);
            }
        };
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared).withLogger(recording)
                .forTransport(ThreadMode.SERIALIZED, sink));
             SocketChannel peer = SocketChannel.open(listeningAddress(transport))) {
            // Nothing after the length: bytes the transport never read would make its close a reset, not an end of stream.
            ByteBuffer hello = ByteBuffer.allocate(Frame.HELLO_PREFIX).order(ByteOrder.LITTLE_ENDIAN)
                    .put(tokenOf(transport)).putShort((short) length).flip();
            while (hello.hasRemaining()) peer.write(hello);
            assertEquals(-1, peer.read(ByteBuffer.allocate(1)), "what the connector reads: the end, no acknowledgement");
            transport.progress();
            assertEquals(List.of("tcp: refused a connection from " + peer.getLocalAddress() + ": it announced an address of " + length
                    + " bytes (1 to 1024)"), warnings);
            assertTrue(ended.isEmpty(), "onSenderClosed for a connection that never announced a sender: " + ended);
        }
    }

    /**
     * A hello that arrives a byte at a time (TCP may cut it anywhere) is put together across
     * progress() calls: the token judged once whole, then the address's length, then the address,
     * which the transport acknowledges; the message after it (which the acknowledgement's reader
     * leaves to progress()) is delivered with the connection's key, for which senderAddress gives
     * the address the hello carried, until the connection ends, which the sink is told once.
     */
    @Test
    void aHelloThatArrivesAByteAtATimeNamesItsSender(@TempDir Path shared) throws IOException {
        List<Long> keys = new CopyOnWriteArrayList<>();
        List<Long> ended = new CopyOnWriteArrayList<>();
        MessageSink sink = new MessageSink() {
            @Override
            public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl) {
                throw new AssertionError("a message delivered without its sender's key");
            }

            @Override
            public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl, long sender) {
                keys.add(sender);
            }

            @Override
            public void onSenderClosed(long sender) {
                ended.add(sender);
            }
        };
        byte[] announced = "an address".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared).forTransport(ThreadMode.SERIALIZED, sink))) {
            try (SocketChannel peer = SocketChannel.open(listeningAddress(transport))) {
                ByteBuffer stream = ByteBuffer.allocate(Frame.HELLO_PREFIX + announced.length + Frame.PREFIX).order(ByteOrder.LITTLE_ENDIAN)
                        .put(tokenOf(transport)).putShort((short) announced.length).put(announced)
                        .putInt(Frame.PREFIX).putInt(7).putInt(0).flip(); // one frame: id 7, no header, no payload
                while (stream.hasRemaining()) {
                    peer.write(stream.slice(stream.position(), 1));
                    stream.position(stream.position() + 1);
                    for (int i = 0; i < 3; i++) transport.progress();
                }
                ByteBuffer ack = ByteBuffer.allocate(Frame.ACK.length);
                while (ack.hasRemaining() && peer.read(ack) >= 0) {
                    // blocking: the acknowledgement comes from the transport's own thread
                }
                assertArrayEquals(Frame.ACK, ack.array(), "the answer to the hello");
                while (keys.isEmpty()) transport.progress();
                long key = keys.getFirst();
                assertTrue(key != 0, "the key of a connection that announced its sender: never 0");
                assertArrayEquals(announced, transport.senderAddress(key), "senderAddress of the hello's connection");
            }
            while (ended.isEmpty()) transport.progress();
            assertEquals(keys, ended, "the end told once, for the connection's key");
            assertNull(transport.senderAddress(keys.getFirst()), "senderAddress once the end was told");
        }
    }

    /**
     * An open that fails once its socket listens, here on the acceptor's thread that cannot start (a process out of threads:
     * an OutOfMemoryError "unable to create native thread"), closes the listening socket and the acceptor's selector, and
     * throws that failure as it came. Only an IOException was caught: the socket and the selector stayed open.
     */
    @Test
    void anOpenWhoseAcceptorThreadCannotStartClosesItsSocketAndSelector(@TempDir Path shared) throws IOException {
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached");
        List<String> before = socketsAndEventDescriptors();

        OutOfMemoryError thrown = assertThrows(OutOfMemoryError.class, () -> TcpTransport.open(TestContext.of(shared)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }), "127.0.0.1", 1 << 16, Duration.ofSeconds(5),
                serve -> {
                    throw noThread;
                }));

        assertSame(noThread, thrown);
        assertEquals(before, socketsAndEventDescriptors(), "this process's sockets, pipes and event descriptors after the failed open");
    }

    /** This process's descriptors that a listening socket or a selector holds (a socket; an epoll, an eventfd or a pipe), each with its target. */
    private static List<String> socketsAndEventDescriptors() throws IOException {
        try (Stream<Path> descriptors = Files.list(Path.of("/proc/self/fd"))) {
            return descriptors.map(TcpTransportTest::describeDescriptor)
                    .filter(d -> d.contains("socket:") || d.contains("anon_inode:") || d.contains("pipe:")).sorted().toList();
        }
    }

    private static String describeDescriptor(Path descriptor) {
        try {
            return descriptor.getFileName() + " -> " + Files.readSymbolicLink(descriptor);
        } catch (IOException closedMeanwhile) { // the listing's own directory descriptor, closed by the time it is read
            return descriptor.getFileName() + " (closed)";
        }
    }

    /**
     * An address of another version of the wire format is refused at the connect, naming both
     * versions and which side to upgrade (FormatVersions), before anything of it is read: another
     * version may lay out its host, port and token otherwise.
     */
    @Test
    void anAddressOfAnotherWireVersionIsRefusedNamingBoth(@TempDir Path shared) {
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            byte[] older = new PayloadWriter().u8(1).string("127.0.0.1").u16(9).u32(1024).bytes(new byte[Frame.TOKEN_LENGTH]).toByteArray();
            InvalidHandleException refusal = assertThrows(InvalidHandleException.class,
                    () -> transport.connect(new PayloadReader(older), cause -> { }));
            assertTrue(refusal.getMessage().contains("tcp address version 1, where this process's Conduit reads only version " + Frame.VERSION + ": the peer "
                    + "runs an older Conduit than this process"), refusal.getMessage());
        }
    }

    /**
     * The address of a transport that has closed names a port nothing listens on: the peer is gone,
     * a PeerFailedException (as the runtime reports a dead sender to a handler answering it), not a
     * plain failure to reach it.
     */
    @Test
    void connectingToAClosedTransportsAddressIsAPeerFailure(@TempDir Path shared) {
        byte[] address;
        try (Transport gone = new TcpPlugin().openTransport(TestContext.of(shared)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            address = gone.address();
        }
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            PeerFailedException refusal = assertThrows(PeerFailedException.class,
                    () -> transport.connect(new PayloadReader(address), cause -> { }));
            assertTrue(refusal.getMessage().contains("nothing listens there"), refusal.getMessage());
        }
    }

    /**
     * A loopback address published from another network namespace (a container with a network of
     * its own, or another host) is not reachable from here: the connect is refused as a plain
     * ConduitException, so that the runtime tries the next transport both workers have, before any
     * connection is tried. Tried, it would be refused and taken for the peer's death, or reach
     * whatever else listens on that port here; so the listener below, which would accept it, gets
     * no connection. The same address from this namespace is tried, and refused because the
     * listener, no transport, never acknowledges the hello.
     */
    @Test
    void aLoopbackAddressOfAnotherNetworkNamespaceIsUnreachableAndNotTried(@TempDir Path shared) throws IOException {
        try (ServerSocketChannel listener = ServerSocketChannel.open();
             Transport transport = new TcpPlugin().openTransport(TestContext.of(shared, "tcp.connect.timeout", "200ms")
                     .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            listener.configureBlocking(false);
            int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            String elsewhere = "00000000-0000-0000-0000-000000000000/net:[1]";
            byte[] address = new PayloadWriter().u8(Frame.VERSION).string("127.0.0.1").u16(port).u32(1024).string(elsewhere)
                    .bytes(new byte[Frame.TOKEN_LENGTH]).toByteArray();

            ConduitException refusal = assertThrows(ConduitException.class, () -> transport.connect(new PayloadReader(address), cause -> { }));
            assertFalse(refusal instanceof PeerFailedException, "an unreachable peer is not a dead one: " + refusal);
            assertTrue(refusal.getMessage().contains("cannot reach 127.0.0.1:" + port + " from here: it is the loopback address of "
                    + "another network namespace (the peer's scope " + elsewhere + ", this process's " + LoopbackScope.current() + ")"),
                    refusal.getMessage());
            assertTrue(refusal.getMessage().contains("Set tcp.host (CONDUIT_TCP_HOST) on the peer's side"), refusal.getMessage());
            assertNull(listener.accept(), "a connection was tried");

            byte[] here = new PayloadWriter().u8(Frame.VERSION).string("127.0.0.1").u16(port).u32(1024).string(LoopbackScope.current())
                    .bytes(new byte[Frame.TOKEN_LENGTH]).toByteArray();
            ConduitException unanswered = assertThrows(ConduitException.class, () -> transport.connect(new PayloadReader(here), cause -> { }));
            assertTrue(unanswered.getMessage().contains("did not acknowledge the hello within tcp.connect.timeout (200ms)"),
                    unanswered.getMessage());
            try (SocketChannel tried = listener.accept()) {
                assertNotNull(tried, "the connection to the address of this namespace");
            }
            assertTrue(LoopbackScope.current().matches("[0-9a-f-]{36}/net:\\[[0-9]+]"), "this host's scope: " + LoopbackScope.current());
        }
    }

    /**
     * A wildcard tcp.host binds, but the transport publishes its host as it is, and a peer that
     * connects to a wildcard reaches its own host: nothing listens there, and the peer would take
     * the refusal for this worker's death. So the probe and the open refuse it, naming the key and
     * what to set instead.
     */
    @ParameterizedTest
    @ValueSource(strings = {"0.0.0.0", "::"})
    void aWildcardHostIsRefusedByTheProbeAndTheOpenNamingTheKey(String wildcard, @TempDir Path shared) {
        TestContext context = TestContext.of(shared, "tcp.host", wildcard);
        var probed = new TcpPlugin().probe(context);
        assertFalse(probed.isAvailable(), "the probe of tcp.host=" + wildcard + ": " + probed);
        ConduitException refusal = assertThrows(ConduitException.class, () -> new TcpPlugin()
                .openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { })).close());
        for (String said : List.of(probed.reason(), refusal.getMessage())) {
            assertTrue(said.contains("tcp.host (CONDUIT_TCP_HOST) is '" + wildcard + "', the wildcard address")
                    && said.contains("set it to an address of this host that the peers reach"), said);
        }
    }

    /**
     * A text key keeps the blanks at its ends (ConfigKey.string), which a value from an environment file or a quoted
     * shell variable brings along; plugin-authoring.md has a plugin strip the text that names something, as devdax
     * strips devdax.device. A host with a blank after it names the same host.
     */
    @Test
    void aHostWithBlanksAtItsEndsIsTheHostTheyEnclose(@TempDir Path shared) {
        TestContext context = TestContext.of(shared, "tcp.host", "127.0.0.1 ");
        var probed = new TcpPlugin().probe(context);
        assertTrue(probed.isAvailable(), "the probe of tcp.host='127.0.0.1 ': " + probed);
        try (Transport transport = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            PayloadReader address = new PayloadReader(transport.address());
            address.u8("version");
            assertEquals("127.0.0.1", address.string("host", 255), "the host the transport publishes");
        }
    }

    /**
     * A host that names nothing is refused by the probe and the open with the value between quotes: a blank inside it
     * (the ends are stripped) showed as nothing more than a host that looks right.
     */
    @Test
    void aHostThatNamesNothingIsRefusedQuotedByTheProbeAndTheOpen(@TempDir Path shared) {
        TestContext context = TestContext.of(shared, "tcp.host", " 127.0.0 .1 ");
        var probed = new TcpPlugin().probe(context);
        assertFalse(probed.isAvailable(), "the probe of tcp.host=' 127.0.0 .1 ': " + probed);
        ConduitException refusal = assertThrows(ConduitException.class, () -> new TcpPlugin()
                .openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { })).close());
        for (String said : List.of(probed.reason(), refusal.getMessage())) {
            assertTrue(said.contains("cannot listen on '127.0.0 .1' (") && said.contains("set tcp.host (CONDUIT_TCP_HOST)"), said);
        }
    }

    /**
     * A tcp.host of blanks alone names no host, and is refused quoted by the probe and the open. Once
     * stripped (2026-12-07) it was the empty host, which InetAddress.getByName reads as the loopback
     * address: the probe said the transport was available, and the open listened on 127.0.0.1 and
     * published the host "" to peers.
     */
    @Test
    void aHostOfBlanksAloneIsRefusedNotTakenForTheLoopbackAddress(@TempDir Path shared) {
        TestContext context = TestContext.of(shared, "tcp.host", "   ");
        var probed = new TcpPlugin().probe(context);
        assertFalse(probed.isAvailable(), "the probe of tcp.host='   ': " + probed);
        assertTrue(probed.reason().contains("is '   ', which names no host"), probed.reason());
        assertThrows(ConduitException.class, () -> new TcpPlugin()
                .openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { })).close());
    }

    /** The token {@code transport}'s address carries, its last bytes. */
    private static byte[] tokenOf(Transport transport) {
        byte[] address = transport.address();
        return java.util.Arrays.copyOfRange(address, address.length - Frame.TOKEN_LENGTH, address.length);
    }

    /**
     * The sink gets read-only segments made once (plugin-authoring.md, "Read-only delivery"), so
     * that the runtime gives the application the transport's own segment, with no view per message.
     */
    @Test
    void messagesAreDeliveredFromOneReadOnlySegment(@TempDir Path shared) {
        List<MemorySegment> delivered = new CopyOnWriteArrayList<>();
        TestContext context = TestContext.of(shared);
        try (Transport receiver = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED,
                (id, hb, ho, hl, pb, po, pl) -> delivered.add(pb)));
             Transport sender = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            TransportEndpoint ep = sender.connect(new PayloadReader(receiver.address()), cause -> { });
            for (int i = 0; i < 3; i++) {
                while (!ep.trySend(i, MemorySegment.NULL, MemorySegment.ofArray(new byte[]{(byte) i}))) sender.progress();
            }
            while (delivered.size() < 3) {
                receiver.progress();
                sender.progress();
            }
            for (MemorySegment segment : delivered) {
                assertTrue(segment.isReadOnly(), "a payload's segment is read-only: " + segment);
                assertSame(delivered.getFirst(), segment, "every message of a connection is delivered from the same segment");
            }
        }
    }

    /**
     * A process out of file descriptors cannot accept the connection waiting on the listening
     * socket, and the transport's thread tries again after a pause: the failure is warned about
     * once a minute, not once per try (RepeatedWarning: "a fault that persists").
     */
    @Test
    void anAcceptThatKeepsFailingForWantOfDescriptorsIsNotWarnedAboutAtEveryTry(@TempDir Path shared) throws IOException, InterruptedException {
        RecordingLogger recording = new RecordingLogger();
        List<String> warnings = recording.warnings();
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared).withLogger(recording)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            InetSocketAddress listening = listeningAddress(transport);
            // A stranger first, while descriptors are free: the transport's thread loads the classes a connection needs then
            // (loading one opens its file), not when it would fail to, for good (NoClassDefFoundError).
            try (SocketChannel stranger = SocketChannel.open(listening)) {
                stranger.write(ByteBuffer.wrap(new byte[Frame.TOKEN_LENGTH]));
                assertEquals(-1, stranger.read(ByteBuffer.allocate(1)), "what a stranger with a wrong token reads");
            }
            List<java.nio.channels.FileChannel> held = new ArrayList<>();
            SocketChannel waiting = null;
            try {
                try {
                    while (true) held.add(java.nio.channels.FileChannel.open(Path.of("/dev/null")));
                } catch (IOException allTaken) {
                    // every descriptor of the process is in use
                }
                held.removeLast().close(); // one, for the connection below: then the transport's accept(2) fails with EMFILE
                waiting = SocketChannel.open(listening);
                while (warnings.isEmpty()) Thread.sleep(10);
                Thread.sleep(1000); // about ten tries more, each failing
            } finally {
                for (java.nio.channels.FileChannel c : held) c.close();
                if (waiting != null) waiting.close();
            }
        }
        // The stranger's refusal, and the waiting connection's, accepted once descriptors are free: warnings of their own.
        List<String> acceptFailures = warnings.stream().filter(w -> w.startsWith("tcp: accept failed: ")).toList();
        assertEquals(1, acceptFailures.size(), "warnings logged for an accept that failed for a second: " + warnings);
    }

    /**
     * Anyone who reaches the port can connect: a connection gets its buffer for a whole frame
     * (tcp.max.payload, 1 MiB by default) once its hello is verified, so strangers who connect and
     * send nothing cost the transport no such memory, and no more than Acceptor.MAX_HANDSHAKES of
     * them wait at once (each for at most tcp.connect.timeout, here longer than the test): the one
     * beyond is closed as it is accepted, naming the cap.
     */
    @Test
    void connectionsThatPresentNoTokenGetNoFrameBufferAndThoseBeyondTheCapAreClosed(@TempDir Path shared) throws IOException {
        RecordingLogger recording = new RecordingLogger();
        List<String> warnings = recording.warnings();
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared, "tcp.connect.timeout", "10m").withLogger(recording)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            InetSocketAddress listening = listeningAddress(transport);
            List<SocketChannel> connected = new ArrayList<>();
            try {
                long before = directMemoryUsed();
                for (int i = 0; i < Acceptor.MAX_HANDSHAKES; i++) connected.add(SocketChannel.open(listening));
                try (SocketChannel beyond = SocketChannel.open(listening)) {
                    // Its end also says that the transport accepted all those before it: they wait for their hello.
                    assertEquals(-1, beyond.read(ByteBuffer.allocate(1)), "what the connection beyond the cap reads");
                }
                long grown = directMemoryUsed() - before;
                assertTrue(grown < 1 << 20, "direct memory taken for " + Acceptor.MAX_HANDSHAKES + " connections that sent nothing: "
                        + grown + " bytes");
                assertEquals(1, warnings.size(), "warnings: " + warnings);
                assertTrue(warnings.getFirst().contains(": " + Acceptor.MAX_HANDSHAKES + " connections are waiting for their hello "
                        + "already, the most this transport lets wait"), warnings.getFirst());
            } finally {
                for (SocketChannel c : connected) c.close();
            }
        }
    }

    /** The direct buffers' memory in use, through reflection: the module does not read java.management. */
    private static long directMemoryUsed() {
        try {
            Class<?> pool = Class.forName("java.lang.management.BufferPoolMXBean");
            List<?> pools = (List<?>) Class.forName("java.lang.management.ManagementFactory").getMethod("getPlatformMXBeans", Class.class)
                    .invoke(null, pool);
            for (Object p : pools) {
                if ("direct".equals(pool.getMethod("getName").invoke(p))) return (Long) pool.getMethod("getMemoryUsed").invoke(p);
            }
            throw new AssertionError("no direct buffer pool");
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("cannot read the direct buffers' memory", e);
        }
    }

    /**
     * A worker address comes from a peer: its host reaches the refusal only escaped
     * (plugin-authoring.md: peer text goes into messages through PayloadReader.printable), so that
     * a forged address cannot write lines of its own into the application's log.
     */
    @Test
    void aForgedHostIsShownEscapedInTheRefusal(@TempDir Path shared) {
        try (Transport transport = new TcpPlugin().openTransport(TestContext.of(shared)
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            byte[] forged = new PayloadWriter().u8(Frame.VERSION).string("no-such-host.invalid\nWARNING: forged line").u16(9).u32(1024)
                    .string(LoopbackScope.current()).bytes(new byte[Frame.TOKEN_LENGTH]).toByteArray();
            ConduitException refusal = assertThrows(ConduitException.class,
                    () -> transport.connect(new PayloadReader(forged), cause -> { }));
            assertFalse(refusal.getMessage().contains("\n"), "the refusal's message holds a line break of the peer's: " + refusal.getMessage());
            assertTrue(refusal.getMessage().contains("no-such-host.invalid\\u000aWARNING"), refusal.getMessage());
        }
    }

    /**
     * connect ends in bounded time (plugin-authoring.md, "Transport") even when the peer's host never
     * answers: a listener whose accept queue is full drops every SYN, as an unreachable host would,
     * and a plain blocking connect would wait for the kernel's SYN retries, about two minutes.
     */
    @Test
    @Timeout(60)
    void aConnectThatTheHostNeverAnswersFailsAfterTheConnectTimeoutNamingIt(@TempDir Path shared) throws IOException {
        List<SocketChannel> queued = new ArrayList<>();
        try (ServerSocketChannel neverAccepting = ServerSocketChannel.open();
             Transport transport = new TcpPlugin().openTransport(TestContext.of(shared, "tcp.connect.timeout", "200ms")
                     .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            neverAccepting.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
            InetSocketAddress listening = (InetSocketAddress) neverAccepting.getLocalAddress();
            for (int i = 0; i < 4; i++) { // backlog 1 holds two; the SYNs of the rest are dropped
                SocketChannel filler = SocketChannel.open();
                queued.add(filler);
                filler.configureBlocking(false);
                filler.connect(listening);
            }
            byte[] address = new PayloadWriter().u8(Frame.VERSION).string(listening.getAddress().getHostAddress()).u16(listening.getPort()).u32(1024)
                    .string(LoopbackScope.current()).bytes(new byte[Frame.TOKEN_LENGTH]).toByteArray();
            ConduitException refusal = assertThrows(ConduitException.class,
                    () -> transport.connect(new PayloadReader(address), cause -> { }));
            assertTrue(refusal.getMessage().contains("did not accept the connection within tcp.connect.timeout (200ms)"),
                    refusal.getMessage());
        } finally {
            for (SocketChannel c : queued) c.close();
        }
    }

    /**
     * The endpoint carries no more than the peer takes: a receiver with a smaller tcp.max.payload
     * than the sender's would take a larger frame for a corrupt one and drop the connection.
     */
    @Test
    void anEndpointCarriesNoLargerPayloadThanThePeerReceives(@TempDir Path shared) {
        List<Long> received = new CopyOnWriteArrayList<>();
        try (Transport receiver = new TcpPlugin().openTransport(TestContext.of(shared, "tcp.max.payload", "64k")
                .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> received.add(pl)));
             Transport sender = new TcpPlugin().openTransport(TestContext.of(shared, "tcp.max.payload", "1m")
                     .forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            TransportEndpoint ep = sender.connect(new PayloadReader(receiver.address()), cause -> { });
            assertEquals(64 << 10, ep.maxPayloadSize(), "maxPayloadSize() of an endpoint to a transport that receives at most 64k");
            assertEquals("tcp.max.payload (CONDUIT_TCP_MAX_PAYLOAD) of both processes sets it, the smaller of the two",
                    ep.maxPayloadSizeRemedy(), "what Conduit's refusal of a larger payload names as the remedy");
            MemorySegment largest = MemorySegment.ofArray(new byte[64 << 10]);
            while (!ep.trySend(1, MemorySegment.NULL, largest)) sender.progress();
            while (received.isEmpty()) {
                receiver.progress();
                sender.progress();
            }
            assertEquals(List.of(64L << 10), received, "payload lengths received");
        }
    }

    /**
     * A frame the peer's socket does not take is no event: progress() counts what it did
     * (Transport.progress: 0 when there was nothing to do), and the runtime's Worker.await returns
     * true, "woken by work", for a round of progress that counted one, so a worker whose peer reads
     * nothing would turn every await into a busy spin.
     */
    @Test
    void aFrameThePeerDoesNotTakeIsNoEventOfTheSendersProgress(@TempDir Path shared) {
        TestContext context = TestContext.of(shared);
        try (Transport receiver = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }));
             Transport sender = new TcpPlugin().openTransport(context.forTransport(ThreadMode.SERIALIZED, (id, hb, ho, hl, pb, po, pl) -> { }))) {
            TransportEndpoint ep = sender.connect(new PayloadReader(receiver.address()), cause -> { });
            MemorySegment payload = MemorySegment.ofArray(new byte[64 << 10]);
            int accepted = 0;
            int calls = 10_000;
            // The receiver's kernel may still take a frame left partly unwritten (its buffers grow): then the sender fills
            // them again, until they are full for good and the frame waits on a peer that reads nothing.
            for (int round = 0; round < 50; round++) {
                for (int refusedInARow = 0; refusedInARow < 1000; ) {
                    if (ep.trySend(accepted, MemorySegment.NULL, payload)) {
                        accepted++;
                        refusedInARow = 0;
                        assertTrue(accepted < 100_000, "trySend still accepts after 6 GiB that the receiver never read");
                    } else {
                        refusedInARow++;
                    }
                }
                int withAnEvent = 0;
                while (withAnEvent < calls && sender.progress() > 0) withAnEvent++;
                assertTrue(withAnEvent < calls, "the sender's progress() reported an event at each of " + calls + " calls in a row "
                        + "while the receiver, never progressed, read nothing of the " + accepted + " frames accepted");
            }
        }
    }

    /** Where {@code transport} listens, as its address says. */
    private static InetSocketAddress listeningAddress(Transport transport) throws IOException {
        PayloadReader address = new PayloadReader(transport.address());
        address.u8("version");
        return new InetSocketAddress(InetAddress.getByName(address.string("host", 255)), address.u16("port"));
    }
}
