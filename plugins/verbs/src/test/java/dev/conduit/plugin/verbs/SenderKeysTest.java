package dev.conduit.plugin.verbs;

import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.tck.RecordingLogger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static dev.conduit.plugin.verbs.TestWorker.bytes;
import static dev.conduit.plugin.verbs.TestWorker.progressUntil;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * How the acceptor names the connection each message came by, so that a message can be answered
 * without an address exchanged by the application ({@code MessageSink.onMessage} with a sender
 * key, {@code Transport.senderAddress}, {@code MessageSink.onSenderClosed}): through the real
 * {@link VerbsTransport} and TCP wire-up over {@link LoopbackVerbs}, <b>a simulation of a device,
 * not a device</b>.
 */
class SenderKeysTest {

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final LoopbackVerbs verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);

    private TestWorker peer(String... keyValues) {
        TestWorker p = new TestWorker(verbs, keyValues);
        closing.add(p);
        return p;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
        assertThat(verbs.openObjects()).as("queue pairs, regions, queues and channels left open").isZero();
        assertThat(verbs.receiverNotReady()).as("SENDs without a posted receive (credits overrun)").isZero();
    }

    private static void send(TransportEndpoint e, int id, MemorySegment payload, TestWorker... progress) {
        progressUntil(() -> e.trySend(id, MemorySegment.NULL, payload), progress);
    }

    private static long senderOf(TestWorker receiver, int id) {
        return receiver.received.stream().filter(r -> r.id() == id).findFirst().orElseThrow().sender();
    }

    /** Keeps progressing after the event a test waited for: a second report would come in these. */
    private static void progressMore(TestWorker... peers) {
        for (int i = 0; i < 200; i++) {
            for (TestWorker p : peers) p.transport.progress();
        }
    }

    @Test
    void everyMessageOfAConnectionCarriesItsKeyWhichResolvesToTheConnectorsAddress() {
        TestWorker a = peer("verbs.buffer.size", "4k");
        TestWorker c = peer();
        TestWorker b = peer("verbs.buffer.size", "4k");
        TransportEndpoint first = a.connect(b);
        TransportEndpoint second = a.connect(b);
        TransportEndpoint other = c.connect(b);
        byte[] large = new byte[3 * 4096]; // cut into records and reassembled: the other place a message is delivered from
        for (int i = 0; i < 30; i += 3) {
            send(first, i, i % 2 == 0 ? bytes("first " + i) : MemorySegment.ofArray(large), a, b, c);
            send(second, i + 1, bytes("second " + i), a, b, c);
            send(other, i + 2, i % 2 == 0 ? MemorySegment.ofArray(large) : bytes("other " + i), a, b, c);
        }
        progressUntil(() -> b.received.size() == 30, a, b, c);
        long[] keys = new long[3];
        for (int endpoint = 0; endpoint < 3; endpoint++) {
            keys[endpoint] = senderOf(b, endpoint);
            for (int i = endpoint; i < 30; i += 3) {
                assertThat(senderOf(b, i)).as("the key of message %d, of endpoint %d", i, endpoint).isEqualTo(keys[endpoint]);
            }
        }
        assertThat(keys).as("keys of three connections").doesNotContain(0L).doesNotHaveDuplicates();
        assertThat(b.transport.senderAddress(keys[0])).as("the address of the first endpoint's sender").isEqualTo(a.transport.address());
        assertThat(b.transport.senderAddress(keys[1])).as("the address of the second endpoint's sender").isEqualTo(a.transport.address());
        assertThat(b.transport.senderAddress(keys[2])).as("the address of the other transport's endpoint").isEqualTo(c.transport.address());
        assertThat(b.transport.senderAddress(1)).as("a key never given").isNull();
        assertThat(b.transport.senderAddress(Inbound.senderKey(Inbound.slotOf(keys[0]), Inbound.generationOf(keys[0]) + 1)))
                .as("the key of another generation of the same slot").isNull();
    }

    @Test
    void connectingToTheSendersAddressReachesTheSender() {
        TestWorker a = peer();
        TestWorker b = peer();
        send(a.connect(b), 1, bytes("request"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        byte[] sender = b.transport.senderAddress(senderOf(b, 1));
        TransportEndpoint reply = b.transport.connect(new PayloadReader(sender, 0, sender.length, "address.verbs."), b.failures::add);
        send(reply, 2, bytes("reply"), a, b);
        progressUntil(() -> a.received.size() == 1, a, b);
        assertThat(new String(a.received.getFirst().payload(), StandardCharsets.UTF_8)).isEqualTo("reply");
        assertThat(a.received.getFirst().sender()).as("the reply's own key, at the sender").isNotZero();
        assertThat(a.failures).isEmpty();
        assertThat(b.failures).isEmpty();
    }

    @Test
    void theSinkIsToldOnceWhenTheConnectorClosesItsEndpointAfterItsMessages() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = a.connect(b);
        TransportEndpoint staying = a.connect(b);
        for (int i = 0; i < 10; i++) {
            send(e, i, bytes("m" + i), a, b);
        }
        send(staying, 100, bytes("stays"), a, b);
        progressUntil(() -> b.received.size() == 11, a, b);
        long key = senderOf(b, 0);
        long stayingKey = senderOf(b, 100);
        e.close();
        progressUntil(() -> b.sendersClosed.contains(key), a, b);
        progressMore(a, b);
        assertThat(b.sendersClosed).as("senders the sink was told of").containsExactly(key);
        assertThat(b.transport.senderAddress(key)).as("the closed connection's sender").isNull();
        assertThat(b.transport.senderAddress(stayingKey)).as("the other connection's sender").isEqualTo(a.transport.address());
        assertThat(b.received).as("messages").hasSize(11);
    }

    @Test
    void theSinkIsToldOnceForEachConnectionOfAConnectorWhoseTransportCloses() {
        TestWorker a = new TestWorker(verbs);
        TestWorker b = peer();
        send(a.connect(b), 1, bytes("one"), a, b);
        send(a.connect(b), 2, bytes("two"), a, b);
        progressUntil(() -> b.received.size() == 2, a, b);
        List<Long> keys = List.of(senderOf(b, 1), senderOf(b, 2));
        a.close(); // as when its process dies: the kernel closes its wire-up sockets
        progressUntil(() -> b.sendersClosed.size() == 2, b);
        progressMore(b);
        assertThat(b.sendersClosed).as("senders the sink was told of").containsExactlyInAnyOrderElementsOf(keys);
        for (long key : keys) assertThat(b.transport.senderAddress(key)).as("the address of closed sender %d", key).isNull();
    }

    /**
     * A connection the acceptor drops because its connector broke the record protocol is retired
     * too, after the messages it delivered before, and its key resolves no more.
     */
    @Test
    void theSinkIsToldOnceWhenAConnectorThatBrokeTheProtocolIsDropped() throws Exception {
        TestWorker a = peer();
        TestWorker b = peer();
        try (Arena arena = Arena.ofConfined(); LoopbackTransportTest.RawConnector rogue = LoopbackTransportTest.rawConnector(verbs, b, arena)) {
            progressUntil(() -> b.transport.inbounds().size() == 1, b);
            long key = b.transport.inbounds().getFirst().sender();
            assertThat(b.transport.senderAddress(key)).as("what the hand-made connector announced").isEqualTo(LoopbackTransportTest.ANNOUNCED);
            Records.write(rogue.buffer().memory(), 0, Records.FIRST, 1, 0, 2, 2);
            rogue.qp().postSend(1, VerbsAbi.IBV_WR_SEND, rogue.buffer(), 0, Records.HEADER + 2, 0, 0, 0, 0);
            progressUntil(() -> b.received.size() == 1, b);
            assertThat(b.received.getFirst().sender()).isEqualTo(key);
            Records.write(rogue.buffer().memory(), 0, Records.FIRST, 2, 5000, 10, 10); // lengths that disagree with the bytes sent
            rogue.qp().postSend(2, VerbsAbi.IBV_WR_SEND, rogue.buffer(), 0, 64, 0, 0, 0, 0);
            progressUntil(() -> !b.sendersClosed.isEmpty(), b);
            progressMore(b);
            assertThat(b.sendersClosed).containsExactly(key);
            assertThat(b.transport.senderAddress(key)).isNull();
        }
        TransportEndpoint good = a.connect(b);
        send(good, 3, bytes("unaffected"), a, b);
        progressUntil(() -> b.received.size() == 2, a, b);
        assertThat(senderOf(b, 3)).as("the next connection's key").isNotZero().isNotEqualTo(b.sendersClosed.getFirst());
    }

    /**
     * A wire-up connection that breaks with an error rather than an end of stream (a reset here;
     * keepalive's ETIMEDOUT for a host gone silent takes the same path) retires its connection too.
     */
    @Test
    void theSinkIsToldOnceWhenTheWireupConnectionBreaksWithAnError() throws Exception {
        TestWorker b = peer();
        try (Arena arena = Arena.ofConfined(); LoopbackTransportTest.RawConnector rogue = LoopbackTransportTest.rawConnector(verbs, b, arena)) {
            progressUntil(() -> b.transport.inbounds().size() == 1, b);
            long key = b.transport.inbounds().getFirst().sender();
            rogue.channel().setOption(java.net.StandardSocketOptions.SO_LINGER, 0); // close sends a reset: the acceptor's read fails
            rogue.channel().close();
            progressUntil(() -> !b.sendersClosed.isEmpty(), b);
            progressMore(b);
            assertThat(b.sendersClosed).containsExactly(key);
            assertThat(b.transport.senderAddress(key)).isNull();
        }
    }

    /**
     * The sink is told also when closing the ended connection fails (its queue pair cannot be
     * destroyed and is kept): the connection delivers no more either way, and the failure is
     * thrown after the sink was told.
     */
    @Test
    void theSinkIsToldAlsoWhenTheEndedConnectionCannotBeTornDown() throws Exception {
        TestWorker b = peer();
        try (Arena arena = Arena.ofConfined(); LoopbackTransportTest.RawConnector rogue = LoopbackTransportTest.rawConnector(verbs, b, arena)) {
            progressUntil(() -> b.transport.inbounds().size() == 1, b);
            long key = b.transport.inbounds().getFirst().sender();
            verbs.failNext("ibv_destroy_qp", 1, dev.conduit.linux.Errno.EBUSY); // the acceptor's, the only one destroyed next
            rogue.channel().close();
            List<Throwable> thrown = new ArrayList<>();
            progressUntil(() -> {
                try {
                    b.transport.progress();
                } catch (dev.conduit.spi.ConduitException e) {
                    thrown.add(e);
                }
                return !b.sendersClosed.isEmpty();
            });
            assertThat(thrown).as("what progress threw").singleElement().asString().contains("EBUSY");
            assertThat(b.sendersClosed).containsExactly(key);
            assertThat(b.transport.senderAddress(key)).isNull();
        }
        verbs.reclaimLeftovers(); // the queue pair that failed to go, which the kernel releases when the process exits
    }

    /** The worker's close closes every endpoint itself: a transport that closes tells its sink of no sender. */
    @Test
    void theTransportsOwnCloseTellsTheSinkOfNoSender() {
        TestWorker a = peer();
        TestWorker b = new TestWorker(verbs);
        send(a.connect(b), 1, bytes("one"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        b.close();
        assertThat(b.sendersClosed).isEmpty();
    }

    /** A slot given to a new connection gets a new generation: the key of the one before it resolves no more, nor to the new one. */
    @Test
    void aNewConnectionInTheSlotOfAClosedOneGetsAnotherKey() {
        TestWorker a = peer();
        TestWorker c = peer();
        TestWorker b = peer();
        TransportEndpoint e = a.connect(b);
        send(e, 1, bytes("one"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        long before = senderOf(b, 1);
        e.close();
        progressUntil(() -> b.sendersClosed.contains(before), a, b);
        send(c.connect(b), 2, bytes("two"), b, c);
        progressUntil(() -> b.received.size() == 2, b, c);
        long after = senderOf(b, 2);
        assertThat(Inbound.slotOf(after)).as("the slot").isEqualTo(Inbound.slotOf(before));
        assertThat(after).as("the new connection's key").isNotEqualTo(before);
        assertThat(b.transport.senderAddress(before)).isNull();
        assertThat(b.transport.senderAddress(after)).isEqualTo(c.transport.address());
    }

    /**
     * A connector of wire-up version 1 (before its request carried its address) is refused by the
     * version, naming both and which side to upgrade, in the acceptor's log, and its connection
     * closed, which it reports as a refusal; the acceptor serves others on.
     */
    @Test
    void aRequestOfTheFormerWireupVersionIsRefusedNamingBothVersions() throws Exception {
        RecordingLogger log = new RecordingLogger();
        TestWorker b = new TestWorker(verbs, log);
        closing.add(b);
        TestWorker a = peer();
        WireFormat.Address address = WireFormat.Address.decode(new PayloadReader(b.transport.address()));
        byte[] version1 = new PayloadWriter().u32(WireFormat.WIREUP_MAGIC).u8(1).u8(WireFormat.REQUEST).bytes(address.token()).u32(5).u32(1)
                .u16(0).bytes(LoopbackVerbs.GID).u8(VerbsAbi.IBV_MTU_1024).u64(4096).u32(7).toByteArray();
        try (SocketChannel old = SocketChannel.open(new InetSocketAddress("127.0.0.1", address.tcpPort()))) {
            old.write(ByteBuffer.wrap(new PayloadWriter().u16(version1.length).bytes(version1).toByteArray()));
            old.configureBlocking(false);
            ByteBuffer eof = ByteBuffer.allocate(64);
            progressUntil(() -> {
                try {
                    return old.read(eof) < 0;
                } catch (java.io.IOException e) {
                    return true;
                }
            }, b);
            assertThat(eof.position()).as("bytes answered to the refused request").isZero();
        }
        assertThat(log.warnings()).anySatisfy(w -> assertThat(w).contains("field 'wireup.version'")
                .contains("verbs wire-up version 1, where this process's Conduit reads only version 2: the peer runs an older Conduit than "
                        + "this process; upgrade the peer"));
        send(a.connect(b), 1, bytes("still serving"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
    }
}
