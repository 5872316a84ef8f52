package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.SocketFlags;
import dev.conduit.linux.SocketPair;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.BlockedCalls;
import org.junit.jupiter.api.AfterEach;
import jdk.net.ExtendedSocketOptions;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;

import static dev.conduit.plugin.verbs.TestWorker.bytes;
import static dev.conduit.plugin.verbs.TestWorker.connected;
import static dev.conduit.plugin.verbs.TestWorker.progressUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The verbs transport's logic — TCP wire-up, queue-pair states, credits, send buffers, ordering,
 * reassembly, RMA, atomics, failures — through the real {@link VerbsTransport}, between two
 * workers in this JVM, over {@link LoopbackVerbs}: <b>a simulation of a device, not a device</b>.
 * What it cannot show (FFM calls into a provider, a NIC's timing, retries on a lossy link) is
 * for {@code RealDeviceTest} and the integration test on a device.
 */
class LoopbackTransportTest {

    private final List<AutoCloseable> closing = new ArrayList<>();
    private LoopbackVerbs verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);

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
        assertThat(verbs.completionQueueOverruns()).as("completions that found their queue full (CQ overrun)").isZero();
    }

    private static void send(TransportEndpoint e, int id, MemorySegment header, MemorySegment payload, TestWorker... progress) {
        progressUntil(() -> e.trySend(id, header, payload), progress);
    }

    @Test
    void messagesArriveInOrderWithTheirHeadersAndPayloads() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = a.connect(b);
        for (int i = 0; i < 1000; i++) {
            send(e, i % 7, bytes("h" + i), bytes("payload " + i), a, b);
        }
        progressUntil(() -> b.received.size() == 1000, a, b);
        for (int i = 0; i < 1000; i++) {
            TestWorker.Received r = b.received.get(i);
            assertThat(r.id()).isEqualTo(i % 7);
            assertThat(new String(r.header(), StandardCharsets.UTF_8)).isEqualTo("h" + i);
            assertThat(new String(r.payload(), StandardCharsets.UTF_8)).isEqualTo("payload " + i);
        }
        assertThat(a.received).isEmpty();
    }

    @Test
    void aSenderStopsAtThePeersPostedBuffersAndResumesWhenCreditsComeBack() {
        TestWorker a = peer();
        TestWorker b = peer("verbs.receive.buffers", "8");
        TransportEndpoint e = a.connect(b);
        progressUntil(() -> e.trySend(1, MemorySegment.NULL, bytes("first")), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        progressUntil(() -> e.trySend(1, MemorySegment.NULL, bytes("x")), a, b); // the first message's credit is back
        int accepted = 1;
        while (e.trySend(1, MemorySegment.NULL, bytes("x"))) { // b does not progress: no credit returns
            accepted++;
            a.transport.progress();
        }
        assertThat(accepted).as("sends accepted while the receiver sleeps = its posted buffers").isEqualTo(8);
        assertThat(e.trySend(1, MemorySegment.NULL, bytes("x"))).isFalse();
        progressUntil(() -> b.received.size() == 9, b);
        progressUntil(() -> e.trySend(1, MemorySegment.NULL, bytes("after")), a, b);
        progressUntil(() -> b.received.size() == 10, a, b);
    }

    /** A peer with fewer receive buffers than this endpoint's send buffers bounds the largest message: its key is named. */
    @Test
    void whatRaisesTheLargestPayloadNamesThePeersReceiveBuffersWhenThoseAreFewer() {
        TestWorker a = peer();
        TestWorker b = peer("verbs.receive.buffers", "8");
        assertThat(a.connect(b).maxPayloadSizeRemedy())
                .isEqualTo("a message takes at most verbs.receive.buffers (CONDUIT_VERBS_RECEIVE_BUFFERS) of the peer (8 there, fewer "
                        + "than the 64 of this process's verbs.send.buffers (CONDUIT_VERBS_SEND_BUFFERS)) records of 8192 bytes, the "
                        + "smaller of the two processes' verbs.buffer.size (CONDUIT_VERBS_BUFFER_SIZE); raise them");
    }

    @Test
    void largeMessagesAreCutIntoRecordsAndReassembledInOrderWithSmallOnes() {
        TestWorker a = peer("verbs.buffer.size", "4k", "verbs.send.buffers", "16");
        TestWorker b = peer("verbs.buffer.size", "4k", "verbs.receive.buffers", "16");
        TransportEndpoint e = a.connect(b);
        assertThat(e.maxPayloadSize()).isEqualTo(16L * (4096 - Records.HEADER) - Records.MAX_MESSAGE_HEADER);
        assertThat(e.maxPayloadSizeRemedy()).as("what raises it, for the runtime's refusal of a larger payload")
                .isEqualTo("a message takes at most verbs.send.buffers (CONDUIT_VERBS_SEND_BUFFERS) of this process (16, no more than "
                        + "the peer's verbs.receive.buffers (CONDUIT_VERBS_RECEIVE_BUFFERS), 16) records of 4096 bytes, the smaller of "
                        + "the two processes' verbs.buffer.size (CONDUIT_VERBS_BUFFER_SIZE); raise them");
        byte[] large = new byte[(int) e.maxPayloadSize()];
        for (int i = 0; i < large.length; i++) {
            large[i] = (byte) (i * 31 + 7);
        }
        byte[] header = new byte[Records.MAX_MESSAGE_HEADER];
        header[0] = 42;
        for (int round = 0; round < 3; round++) {
            send(e, 5, bytes("small"), bytes("before"), a, b);
            send(e, 6, MemorySegment.ofArray(header), MemorySegment.ofArray(large), a, b);
            send(e, 7, MemorySegment.NULL, bytes("after"), a, b);
        }
        progressUntil(() -> b.received.size() == 9, a, b);
        for (int round = 0; round < 3; round++) {
            assertThat(b.received.get(3 * round).id()).isEqualTo(5);
            assertThat(b.received.get(3 * round + 1).payload()).isEqualTo(large);
            assertThat(b.received.get(3 * round + 1).header()).isEqualTo(header);
            assertThat(new String(b.received.get(3 * round + 2).payload(), StandardCharsets.UTF_8)).isEqualTo("after");
        }
    }

    @Test
    void putGetAndAtomicsWorkOnTheRegisteredMemoryOfThePeer() {
        TestWorker a = peer("verbs.buffer.size", "4k");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(64 * 1024);
        RemoteRegion region = TestWorker.region(memory, chunk, 8192, 32 * 1024);
        putThenGetBack(e, region, chunk.segment().asSlice(8192), 100, 20_000);

        assertThat(e.fetchAdd(region, 0, 5)).isZero();
        assertThat(e.fetchAdd(region, 0, 3)).isEqualTo(5);
        assertThat(e.compareAndSwap(region, 0, 8, 100)).isEqualTo(8);
        assertThat(e.compareAndSwap(region, 0, 8, 200)).isEqualTo(100);
        assertThat(chunk.segment().get(ValueLayout.JAVA_LONG, 8192)).isEqualTo(100);
        assertThatThrownBy(() -> e.put(bytes("xy"), region, 32 * 1024 - 1)).isInstanceOf(IndexOutOfBoundsException.class);
        memory.free(chunk);
    }

    /**
     * A put or get whose local segment overlaps the peer's region (the peer is this process) copies
     * as MemorySegment.copy and the shared-memory transports do, as if through a temporary buffer,
     * whichever way they overlap. Cut into send buffers first to last, a copy to a higher address
     * used to read, from its second buffer on, bytes its first had already written. A get keeps
     * two READs in flight here, fewer than its three parts, and they complete a window at a time:
     * a part's READ is posted after an earlier part was copied out, which, in the wrong order,
     * overwrote bytes it reads.
     */
    @Test
    void aPutOrGetOverlappingThePeersRegionInThisProcessCopiesAsIfThroughATemporaryBuffer() {
        verbs.holdReadsUntilPolled();
        verbs.readAtomicDepths(16, 2);
        TestWorker a = peer("verbs.buffer.size", "4k");
        verbs.readAtomicDepths(16, 16);
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(64 * 1024);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 64 * 1024);
        MemorySegment peer = chunk.segment();
        int length = 12_000;
        for (long[] fromTo : new long[][] {{0, 100}, {100, 0}, {5000, 9000}, {9000, 5000}, {0, 0}}) {
            for (boolean put : new boolean[] {true, false}) {
                for (int i = 0; i < peer.byteSize(); i++) peer.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
                MemorySegment expected = MemorySegment.ofArray(peer.asSlice(fromTo[0], length).toArray(ValueLayout.JAVA_BYTE));
                if (put) {
                    e.put(peer.asSlice(fromTo[0], length), region, fromTo[1]);
                    e.flush();
                } else {
                    e.get(region, fromTo[0], peer.asSlice(fromTo[1], length));
                }
                assertThat(peer.asSlice(fromTo[1], length).mismatch(expected))
                        .as((put ? "put" : "get") + " of " + length + " bytes from " + fromTo[0] + " to " + fromTo[1] + ": first byte wrong")
                        .isEqualTo(-1);
            }
        }
        memory.free(chunk);
    }

    @Test
    void atomicsOnADeviceWithoutThemAreRefusedNamingTheDevice() {
        verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_NONE);
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        assertThatThrownBy(() -> e.fetchAdd(region, 0, 1)).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("loop0").hasMessageContaining("atomic_cap none");
        e.put(bytes("still works"), region, 0);
        e.flush();
        memory.free(chunk);
    }

    /**
     * The exporter's device decides too: one without atomics registers its chunks, and grants its
     * queue pairs, no remote atomics (VerbsDomain.access), so an atomic posted to it is refused by
     * its adapter, which fails the work request, this endpoint and the exporter's inbound connection
     * (a class C error). Its address says so ({@code remote.atomics}), and the connector refuses the
     * atomic before posting, as it refuses one on a device of its own without atomics. Until
     * 2026-12-07 nothing in the wire-up or the region's payload told the connector, whose check of its
     * own {@code atomic_cap} let the call through: the application got the endpoint's
     * PeerFailedException blaming the region's key ({@code IBV_WC_REM_ACCESS_ERR}), its queued
     * messages discarded.
     */
    @Test
    void anAtomicOnARegionOfAPeerWhoseDeviceHasNoAtomicsIsRefusedAndLeavesTheEndpointUsable() {
        verbs.atomicCap(VerbsAbi.IBV_ATOMIC_NONE);
        TestWorker b = peer();
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        verbs.atomicCap(VerbsAbi.IBV_ATOMIC_HCA);
        TestWorker a = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        assertThat(catchThrowable(() -> e.fetchAdd(region, 0, 1))).as("a fetchAdd on the region of a peer whose device has no atomics")
                .isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("fetchAdd needs RDMA atomics at the peer too, and the device of the peer at ")
                .hasMessageContaining("has none (atomic_cap none, as its address says)")
                .hasMessageContaining("put and get on them still work");
        assertThat(catchThrowable(() -> e.compareAndSwap(region, 0, 0, 1))).isInstanceOf(NotSupportedException.class);
        e.put(bytes("still works"), region, 0);
        e.flush();
        assertThat(chunk.segment().getString(0)).as("what the put wrote after the refusals").isEqualTo("still works");
        assertThat(a.failures).isEmpty();
        memory.free(chunk);
    }

    /**
     * A region that claims more than its registered chunk (a forged or damaged handle), and a
     * negative offset, fail only the call, before anything is posted: posted, the adapter would
     * fail the work request and with it the connection.
     */
    @Test
    void aRegionLargerThanItsChunkAndANegativeOffsetFailOnlyTheCall() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion tooLong = TestWorker.region(memory, chunk, 0, 8192);
        assertThatThrownBy(() -> e.put(bytes("x"), tooLong, 0)).isInstanceOfSatisfying(InvalidHandleException.class,
                ex -> assertThat(ex.field()).isEqualTo("region.length")).hasMessageContaining("does not fit the registered chunk of 4096 bytes");
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        assertThatThrownBy(() -> e.put(bytes("x"), region, -1)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("at offset -1");
        e.put(bytes("ok"), region, 0);
        e.flush();
        assertThat(chunk.segment().getString(0)).startsWith("ok");
        assertThat(a.failures).isEmpty();
        memory.free(chunk);
    }

    @Test
    void regionsOfOtherPluginsAreNotRmaTargets() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        RemoteRegion memfd = new TestWorker.TestRegion("memfd", 0, 4096, new byte[] {1, 2});
        assertThatThrownBy(() -> e.put(bytes("x"), memfd, 0)).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("plugin 'memfd'").hasMessageContaining("pool of plugin 'verbs'");
    }

    /**
     * RDMA reaches only the memory of the process at the connection's other end: a remote key is
     * looked up in the peer's protection domain. A region exported by a third process is refused
     * before anything is posted, naming both device contexts and what to do, and the connection
     * keeps working. Until 2026-12-07 the region payload named no process: the put was posted with
     * the third process's address and key, and the peer's adapter refused it
     * ({@code IBV_WC_REM_ACCESS_ERR}), failing the endpoint and blaming a wrong key; across hosts
     * it could have landed, had that key and address been valid at the peer.
     */
    @Test
    void aRegionOfAThirdProcessIsRefusedNamingBothContextsAndTheConnectionKeepsWorking() {
        TestWorker a = peer();
        TestWorker b = peer();
        TestWorker third = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider peerMemory = b.memory();
        closing.add(peerMemory);
        MemoryProvider thirdMemory = third.memory();
        closing.add(thirdMemory);
        Chunk peers = peerMemory.allocate(4096);
        Chunk thirds = thirdMemory.allocate(4096);
        RemoteRegion misdirected = TestWorker.region(thirdMemory, thirds, 0, 4096);
        String contexts = "its handle names device context " + HexFormat.of().formatHex(third.transport.domain.context()) + ", the peer at "
                + "127.0.0.1:" + WireFormat.Address.decode(new PayloadReader(b.transport.address(), 0, b.transport.address().length, "a."))
                .tcpPort() + " is context " + HexFormat.of().formatHex(b.transport.domain.context());
        assertThat(catchThrowable(() -> e.put(bytes("misdirected"), misdirected, 0))).as("a put to a third process's region")
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("verbs: put on a region exported by another process (or device context) than this endpoint's peer")
                .hasMessageContaining(contexts)
                .hasMessageContaining("Open the handle of the process this endpoint is connected to, or connect to the region's exporter");
        assertThat(catchThrowable(() -> e.get(misdirected, 0, MemorySegment.ofArray(new byte[8])))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("verbs: get on a region exported by another process");
        assertThat(catchThrowable(() -> e.fetchAdd(misdirected, 0, 1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("verbs: fetchAdd on a region exported by another process");
        e.put(bytes("still works"), TestWorker.region(peerMemory, peers, 0, 4096), 0);
        e.flush();
        assertThat(peers.segment().getString(0)).as("what the put to the peer's own region wrote").isEqualTo("still works");
        assertThat(thirds.segment().get(ValueLayout.JAVA_LONG, 0)).as("the third process's memory").isZero();
        assertThat(a.failures).isEmpty();
        peerMemory.free(peers);
        thirdMemory.free(thirds);
    }

    /** Another worker of the peer's plugin instance shares its device context, so its regions are the peer's to reach. */
    @Test
    void aRegionOfAnotherWorkerOfThePeersDeviceContextIsReached() {
        TestWorker a = peer();
        TestWorker b = peer();
        TestWorker sibling = new TestWorker(b);
        closing.add(sibling);
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider siblingMemory = sibling.memory();
        closing.add(siblingMemory);
        Chunk chunk = siblingMemory.allocate(4096);
        e.put(bytes("same context"), TestWorker.region(siblingMemory, chunk, 0, 4096), 0);
        e.flush();
        assertThat(chunk.segment().getString(0)).isEqualTo("same context");
        siblingMemory.free(chunk);
    }

    @Test
    void aWrongRemoteKeyFailsTheEndpointWithTheCompletionStatus() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        byte[] forged = new WireFormat.Region(b.transport.domain.context(), 0x10000, 4096, 0x7777).encode();
        RemoteRegion region = new TestWorker.TestRegion(VerbsPlugin.NAME, 0, 4096, forged);
        e.put(bytes("x"), region, 0);
        assertThatThrownBy(e::flush).isInstanceOf(PeerFailedException.class).hasMessageContaining("IBV_WC_REM_ACCESS_ERR");
        progressUntil(() -> a.failures.size() == 1, a, b);
        assertThatThrownBy(() -> e.trySend(1, MemorySegment.NULL, bytes("x"))).isInstanceOf(PeerFailedException.class);
    }

    /**
     * A failed completion names the operation whose work request it was, each send buffer keeping
     * the opcode it was posted with: until 2026-12-07 it said only "a work request failed: STATUS",
     * the same for a put, a get and an atomic, and the application could not tell which of its calls
     * the endpoint failed on. Each operation here on an endpoint of its own, as the first failure
     * fails the endpoint.
     */
    @Test
    void aFailedWorkRequestNamesTheOperationItServed() {
        List<Map.Entry<String, BiConsumer<TransportEndpoint, RemoteRegion>>> operations = List.of(
                Map.entry("an RDMA WRITE of a put", (e, forged) -> e.put(bytes("x"), forged, 0)),
                Map.entry("an RDMA READ of a get", (e, forged) -> e.get(forged, 0, MemorySegment.ofArray(new byte[8]))),
                Map.entry("the atomic of a fetchAdd", (e, forged) -> e.fetchAdd(forged, 0, 1)),
                Map.entry("the atomic of a compareAndSwap", (e, forged) -> e.compareAndSwap(forged, 0, 0, 1)));
        for (Map.Entry<String, BiConsumer<TransportEndpoint, RemoteRegion>> operation : operations) {
            TestWorker a = peer();
            TestWorker b = peer();
            TransportEndpoint e = connected(a.connect(b), a, b);
            RemoteRegion forged = new TestWorker.TestRegion(VerbsPlugin.NAME, 0, 4096,
                    new WireFormat.Region(b.transport.domain.context(), 0x10000, 4096, 0x7777).encode());
            assertThat(catchThrowable(() -> {
                operation.getValue().accept(e, forged);
                e.flush();
            })).as(operation.getKey()).isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining("a work request failed: IBV_WC_REM_ACCESS_ERR")
                    .hasMessageContaining("(" + operation.getKey() + ")");
        }
    }

    /**
     * A remote access error fails the responder's queue pair too (InfiniBand's class C error: NAK,
     * then the error state, its receives flushed), which the simulation did not model: on a device
     * the exporter's inbound connection ends with the connector's, its messages sent before
     * delivered, and the sink is told. The liveness look is an hour away and every credit is
     * written back before the put, so the flushed receives are what ends it here, not the wire-up
     * socket or a credit write to the failed connector.
     */
    @Test
    void aRemoteAccessErrorAlsoEndsTheExportersInboundConnectionAfterItsEarlierMessages() {
        TestWorker a = peer("verbs.liveness.interval", "1h");
        TestWorker b = peer("verbs.liveness.interval", "1h");
        TransportEndpoint e = connected(a.connect(b), a, b);
        for (int i = 0; i < 3; i++) {
            send(e, i, MemorySegment.NULL, bytes("before " + i), a, b);
        }
        MemorySegment credits = ((VerbsEndpoint) e).creditWordMemory();
        progressUntil(() -> b.received.size() == 3 && credits.get(Records.LONG, 0) == 3, b);
        for (int i = 0; i < 3; i++) {
            b.transport.progress(); // takes the last credit write's completion: nothing is left to announce
        }
        byte[] forged = new WireFormat.Region(b.transport.domain.context(), 0x10000, 4096, 0x7777).encode();
        e.put(bytes("x"), new TestWorker.TestRegion(VerbsPlugin.NAME, 0, 4096, forged), 0);
        assertThatThrownBy(e::flush).isInstanceOf(PeerFailedException.class).hasMessageContaining("IBV_WC_REM_ACCESS_ERR");
        progressUntil(() -> b.sendersClosed.size() == 1, b);
        assertThat(b.received).extracting(r -> new String(r.payload(), StandardCharsets.UTF_8))
                .containsExactly("before 0", "before 1", "before 2");
        assertThat(b.transport.inbounds()).as("the exporter's inbound connection, its queue pair in error").isEmpty();
        assertThat(b.failures).isEmpty();
    }

    /**
     * A completion queue that overruns is lost on a device (IBV_EVENT_CQ_ERR), and the transport
     * sizes its queues from max_cqe: on a device of 9 entries, with 4 send and 4 receive buffers,
     * a worker takes 2 inbound connections (8 receives) and 1 outbound (4 sends and a credit write
     * per inbound connection). Here b's queues get exactly that, with no completion taken: both
     * connectors fill its receives, one progress of b delivers them and writes both credits back,
     * and b fills its own endpoint's sends. Then several rounds of credits. No completion may find
     * its queue full (checked after each test), and a second outbound connection is refused.
     */
    @Test
    void completionQueuesSizedFromASmallMaxCqeHoldEveryCompletionOfTheConnectionsTheyAllow() {
        verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA, 9);
        String[] small = {"verbs.send.buffers", "4", "verbs.receive.buffers", "4", "verbs.buffer.size", "4k"};
        TestWorker b = peer(small);
        TestWorker a1 = peer(small);
        TestWorker a2 = peer(small);
        TransportEndpoint e1 = connected(a1.connect(b), a1);
        TransportEndpoint e2 = connected(a2.connect(b), a2);
        TransportEndpoint back = connected(b.connect(a1), b);
        for (int i = 0; i < 4; i++) {
            assertThat(e1.trySend(i, MemorySegment.NULL, bytes("one " + i))).as("a credit of a1").isTrue();
            assertThat(e2.trySend(i, MemorySegment.NULL, bytes("two " + i))).as("a credit of a2").isTrue();
        }
        assertThat(e1.trySend(9, MemorySegment.NULL, bytes("no credit"))).as("the peer's 4 buffers are taken").isFalse();
        b.transport.progress();
        assertThat(b.received).as("delivered by one progress, whose credit writes complete on b's send queue").hasSize(8);
        for (int i = 0; i < 4; i++) {
            assertThat(back.trySend(i, MemorySegment.NULL, bytes("back " + i))).as("a credit of b").isTrue();
        }
        assertThat(verbs.completionQueueOverruns()).as("b: 8 receives, then 2 credit writes and 4 sends, none taken").isZero();
        for (int i = 4; i < 40; i++) {
            send(e1, i, MemorySegment.NULL, bytes("one " + i), a1, a2, b);
            send(e2, i, MemorySegment.NULL, bytes("two " + i), a1, a2, b);
            send(back, i, MemorySegment.NULL, bytes("back " + i), a1, a2, b);
        }
        progressUntil(() -> b.received.size() == 80 && a1.received.size() == 40, a1, a2, b);
        assertThatThrownBy(() -> b.connect(a2)).isInstanceOf(ConduitException.class).hasMessageContaining("1 outbound connections");
    }

    @Test
    void aPeerThatGoesAwayFailsTheEndpointOnce() {
        TestWorker a = peer();
        TestWorker b = new TestWorker(verbs);
        TransportEndpoint e = a.connect(b);
        send(e, 1, MemorySegment.NULL, bytes("hello"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        b.close(); // its queue pairs are destroyed and its wire-up connections closed, as when its process dies
        progressUntil(() -> !a.failures.isEmpty(), a);
        assertThat(a.failures).hasSize(1);
        assertThat(a.failures.getFirst()).hasMessageContaining("peer 127.0.0.1:");
        assertThatThrownBy(() -> e.trySend(1, MemorySegment.NULL, bytes("x"))).isInstanceOf(PeerFailedException.class);
        for (int i = 0; i < 100; i++) {
            a.transport.progress();
        }
        assertThat(a.failures).as("reported once").hasSize(1);
    }

    @Test
    void aSendToAPeerWhoseQueuePairIsGoneFailsWithTheRetryError() {
        TestWorker a = peer("verbs.liveness.interval", "1h");
        TestWorker b = new TestWorker(verbs, "verbs.liveness.interval", "1h");
        TransportEndpoint e = a.connect(b);
        send(e, 1, MemorySegment.NULL, bytes("hello"), a, b);
        b.close();
        assertThatThrownBy(() -> {
            for (int i = 0; i < 10; i++) {
                e.trySend(1, MemorySegment.NULL, bytes("x"));
                a.transport.progress();
            }
        }).isInstanceOf(PeerFailedException.class).hasMessageContaining("IBV_WC_RETRY_EXC_ERR")
                .hasMessageContaining("(the SEND of a message)");
    }

    @Test
    void closingAnEndpointDeliversWhatItSentAndTearsDownThePeersSide() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = a.connect(b);
        for (int i = 0; i < 20; i++) {
            send(e, i, MemorySegment.NULL, bytes("m" + i), a, b);
        }
        e.close();
        progressUntil(() -> b.received.size() == 20, b);
        assertThat(a.failures).isEmpty();
        assertThat(b.failures).isEmpty();
    }

    /**
     * close() drains the endpoint's sends by polling the send queue, and only a RuntimeException out of that used to be
     * caught: an Error skipped the teardown, leaving the endpoint registered and its queue pair, buffers and wire-up
     * socket open for good (the transport's close skips an endpoint already marked closed).
     */
    @Test
    void anErrorWhileCloseDrainsTheSendsStillTearsTheEndpointDownAndIsRethrownWithTheTeardownFailureSuppressed() {
        TestWorker a = peer();
        TestWorker b = peer();
        int before = verbs.registeredMemory().size();
        VerbsEndpoint e = (VerbsEndpoint) connected(a.connect(b), a, b);
        List<MemorySegment> buffers = verbs.registeredMemory().subList(before, before + 2); // the connector's, registered before its request
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        assertThat(e.trySend(1, MemorySegment.NULL, bytes("outstanding"))).as("a send whose completion close drains").isTrue();
        Error error = new Error("out of ibv_poll_cq while close drains the endpoint's sends");
        verbs.throwFromNextPoll(a.transport.sendQueue, error);
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY); // and the teardown fails too

        Throwable thrown = catchThrowable(e::close);

        assertThat(e.slot).as("the endpoint's slot after close: unregistered, no completion reaches it").isEqualTo(-1);
        for (MemorySegment buffer : buffers) {
            assertThat(verbs.isRegistered(buffer)).as("the endpoint's buffers, deregistered").isFalse();
        }
        assertThat(thrown).as("what close threw: the drain's Error itself").isSameAs(error);
        assertThat(thrown.getSuppressed()).as("the teardown's failure, suppressed into the Error").singleElement()
                .extracting(Throwable::getMessage).asString()
                .contains("closing the connection to 127.0.0.1:").contains("ibv_destroy_qp(loop0 qp ").contains("EBUSY");
        progressUntil(() -> b.transport.inbounds().isEmpty(), a, b); // the wire-up socket was closed: the peer tears its side down
        verbs.reclaimLeftovers(); // the queue pair that failed to go, which the kernel releases when the process exits
    }

    /**
     * The transport's close closes every endpoint, then the inbounds, the queues and the device: an Error out of one
     * endpoint's close (its drain's, rethrown) used to end it there, and the transport cannot be closed twice. The Error
     * is what close throws, also when an endpoint closed before it failed with an exception, which it carries (one that
     * fails again when the close tries it once more: one that succeeds then is no failure of the close).
     */
    @Test
    void anErrorOutOfOneEndpointsCloseDoesNotStopTheTransportsCloseAndIsThrownCarryingTheEarlierFailure() {
        TestWorker a = new TestWorker(verbs);
        TestWorker b = peer();
        TestWorker c = peer();
        connected(a.connect(b), a, b);
        TransportEndpoint toC = connected(a.connect(c), a, c);
        connected(c.connect(a), a, c); // an inbound of a's too
        progressUntil(() -> a.transport.inbounds().size() == 1, a, c);
        assertThat(toC.trySend(1, MemorySegment.NULL, bytes("outstanding"))).as("a send whose completion close drains").isTrue();
        verbs.failNext("ibv_destroy_qp", Integer.MAX_VALUE, Errno.EBUSY); // the first endpoint's teardown fails, also when tried again
        Error error = new Error("out of ibv_poll_cq while close drains the second endpoint's sends");
        verbs.throwFromNextPoll(a.transport.sendQueue, error);

        Throwable thrown = catchThrowable(a::close);
        verbs.failNext("ibv_destroy_qp", 0, Errno.EBUSY);

        assertThat(thrown).as("what the transport's close threw: the second endpoint's Error").isSameAs(error);
        assertThat(thrown.getSuppressed()).as("the first endpoint's failure, carried by the Error")
                .anySatisfy(t -> assertThat(t.getMessage()).contains("ibv_destroy_qp").contains("EBUSY"));
        assertThat(a.transport.wireupThread().isAlive()).as("the wire-up thread after close").isFalse();
        verbs.reclaimLeftovers(); // the queue pair that failed to go
        // The @AfterEach check: a's inbound, queues, channel and device are closed as well.
    }

    @Test
    void theAcceptorAnswersTheWireupOnItsOwnThreadWithoutProgressing() {
        TestWorker a = peer();
        TestWorker b = peer();
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        TransportEndpoint e = a.connect(b);
        // b does not progress: the put waits for the reply, which b's wire-up thread sends.
        e.put(bytes("reached"), region, 0);
        e.flush();
        assertThat(chunk.segment().asSlice(0, 7).toArray(ValueLayout.JAVA_BYTE)).isEqualTo("reached".getBytes(StandardCharsets.UTF_8));
        assertThat(e.trySend(1, MemorySegment.NULL, bytes("after"))).as("connected: the peer's buffers are posted").isTrue();
        progressUntil(() -> b.received.size() == 1, b);
        Thread server = b.transport.wireupThread();
        assertThat(server.getName()).startsWith("conduit-verbs-wireup-");
        assertThat(server.isDaemon()).isTrue();
        memory.free(chunk);
    }

    /**
     * A transport whose wire-up thread cannot start (the process, or its cgroup, at its limit of
     * threads: Thread.start throws OutOfMemoryError "unable to create native thread") fails its
     * opening with a ConduitException naming the thread, the listener, the limit and the remedy, and
     * leaves nothing: no queue, channel or device context (the check after each test), no listener
     * (its port can be bound again). It threw the JVM's bare error, with no remedy.
     */
    @Test
    void aTransportWhoseWireupThreadCannotStartSaysWhichLimitToRaiseAndLeavesNothing() throws Exception {
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached (injected by the test)");
        VerbsPlugin plugin = new VerbsPlugin(library -> verbs);
        dev.conduit.tck.TestContext context = dev.conduit.tck.TestContext.of("verbs.wireup.address", "127.0.0.1");
        Throwable thrown = catchThrowable(() -> plugin.openTransport(context.forTransport(dev.conduit.spi.ThreadMode.SINGLE, null),
                Linux.libc(), serve -> new Thread(serve) {
                    @Override
                    public void start() {
                        throw noThread;
                    }
                }));
        assertThat(thrown).isInstanceOf(ConduitException.class).hasCause(noThread)
                .hasMessageStartingWith("verbs: cannot start the thread that answers wire-up connections on 127.0.0.1:")
                .hasMessageContaining("unable to create native thread").hasMessageContaining("limit of threads")
                .hasMessageContaining("ulimit -u").hasMessageContaining("pids.max").hasMessageContaining("TasksMax");
        assertThat(verbs.openObjects()).as("queues, channels and the device context after the failed opening").isZero();
        int port = Integer.parseInt(thrown.getMessage().replaceFirst("^[^:]*: [^:]*:(\\d+).*$", "$1"));
        try (ServerSocket again = new ServerSocket()) {
            again.bind(new InetSocketAddress("127.0.0.1", port)); // the failed opening's listener is closed
        }
        peer().transport.wireupThread(); // a transport opened once a thread can be had
    }

    @Test
    void closeStopsTheWireupThreadAndReleasesAConnectionItBuiltThatProgressNeverTook() {
        TestWorker a = peer();
        TestWorker b = peer();
        connected(a.connect(b), a); // only a progresses: b never takes the inbound connection its thread built
        Thread server = b.transport.wireupThread();
        assertThat(server.isAlive()).isTrue();
        b.close();
        assertThat(server.isAlive()).as("the wire-up thread after close").isFalse();
        // the queue pair and buffers b built for a: the leak check after each test
    }

    @Test
    void twoWorkersConnectBothWays() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint ab = a.connect(b);
        TransportEndpoint ba = b.connect(a);
        send(ab, 1, MemorySegment.NULL, bytes("ping"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        send(ba, 2, MemorySegment.NULL, bytes("pong"), a, b);
        progressUntil(() -> a.received.size() == 1, a, b);
        assertThat(new String(a.received.getFirst().payload(), StandardCharsets.UTF_8)).isEqualTo("pong");
    }

    @Test
    void connectingToAListenerThatIsGoneNamesIt() throws Exception {
        TestWorker a = peer();
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        byte[] address = new WireFormat.Address(new byte[16], new byte[16], 1, VerbsAbi.IBV_LINK_LAYER_ETHERNET, 0, LoopbackVerbs.GID,
                VerbsAbi.IBV_MTU_1024, 64, 8192, 16, true, "127.0.0.1", port).encode();
        assertThatThrownBy(() -> a.transport.connect(new PayloadReader(address), c -> { }))
                .isInstanceOf(ConduitException.class).hasMessageContaining("127.0.0.1:" + port).hasMessageContaining("wire-up listener");
    }

    @Test
    void aRequestWithAnotherTransportsTokenIsRefusedAndTheConnectorFails() {
        TestWorker a = peer();
        TestWorker b = peer();
        WireFormat.Address real = WireFormat.Address.decode(new PayloadReader(b.transport.address()));
        byte[] stale = new WireFormat.Address(new byte[16], new byte[16], real.port(), real.linkLayer(), real.lid(), real.gid(), real.mtu(),
                real.receiveBuffers(), real.bufferSize(), real.responderDepth(), true, real.host(), real.tcpPort()).encode();
        TransportEndpoint e = a.transport.connect(new PayloadReader(stale), a.failures::add);
        progressUntil(() -> !a.failures.isEmpty(), a, b);
        assertThat(a.failures.getFirst()).hasMessageContaining("before it replied");
        assertThatThrownBy(() -> e.trySend(1, MemorySegment.NULL, bytes("x"))).isInstanceOf(PeerFailedException.class);
    }

    /**
     * Out of memory while the wire-up thread builds a connection (its receive buffers, say): the
     * thread used to die with it, keeping the queue pair on the device and the slot taken, and
     * every later connector waited for a reply that never came.
     */
    @Test
    void anErrorWhileBuildingAnInboundConnectionLeavesNothingBehindAndTheNextConnectorIsServed() {
        TestWorker a = peer("verbs.wireup.timeout", "2s");
        TestWorker b = peer();
        verbs.throwFromNextPostReceive(new OutOfMemoryError("simulated: no memory left for the receive buffers"));
        TransportEndpoint first = a.connect(b);
        progressUntil(() -> !a.failures.isEmpty(), a, b);
        assertThat(a.failures.getFirst()).hasMessageContaining("before it replied");
        assertThat(b.transport.wireupThread().isAlive()).as("the wire-up thread").isTrue();
        assertThat(b.transport.inboundSlotsTaken()).as("the slot of the connection that could not be built").isZero();
        first.close();

        TransportEndpoint second = connected(a.connect(b), a, b);
        send(second, 1, MemorySegment.NULL, bytes("served"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        // the queue pair and regions of the first: the leak check after each test
    }

    /** As an inbound connection's close does: a queue pair that could not be destroyed may still complete into its slot. */
    @Test
    void aConnectionThatCouldNeitherBeBuiltNorTornDownKeepsItsSlot() {
        TestWorker a = peer("verbs.wireup.timeout", "2s");
        TestWorker b = peer();
        verbs.throwFromNextPostReceive(new OutOfMemoryError("simulated: no memory left for the receive buffers"));
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY); // the teardown of what was built
        TransportEndpoint first = a.connect(b);
        progressUntil(() -> !a.failures.isEmpty(), a, b);
        assertThat(b.transport.inboundSlotsTaken()).as("the slot of the queue pair still on the device").isEqualTo(1);
        first.close();
        verbs.reclaimLeftovers(); // the queue pair that failed to go, which the kernel releases when the process exits
    }

    /**
     * Anyone who reaches the listener can connect before a token is checked: connections that
     * wait for their request are bounded, in all and per address, so that a flood of silent ones
     * exhausts neither the process's descriptors nor the listener for everybody else.
     */
    @Test
    void silentConnectionsBeyondTheMostOneAddressMayHaveWaitingAreClosedAndOthersAreServed() throws Exception {
        TestWorker a = peer();
        TestWorker b = peer("verbs.wireup.timeout", "60s");
        int port = WireFormat.Address.decode(new PayloadReader(b.transport.address())).tcpPort();
        int extra = 8;
        List<SocketChannel> silent = new ArrayList<>();
        try {
            for (int i = 0; i < WireupServer.MAX_HANDSHAKES_PER_ADDRESS + extra; i++) {
                SocketChannel c = SocketChannel.open();
                silent.add(c);
                c.bind(new InetSocketAddress("127.0.0.2", 0)); // another address than the connector's below
                c.connect(new InetSocketAddress("127.0.0.1", port));
                c.configureBlocking(false);
            }
            progressUntil(() -> closedByPeer(silent) == extra, b);
            assertThat(closedByPeer(silent)).as("the first ones wait for their request").isEqualTo(extra);

            TransportEndpoint e = connected(a.connect(b), a, b);
            send(e, 1, MemorySegment.NULL, bytes("served"), a, b);
            progressUntil(() -> b.received.size() == 1, a, b);
        } finally {
            for (SocketChannel c : silent) {
                c.close();
            }
        }
    }

    /** One host usually has a whole IPv6 /64: waiting connections are counted per /64 there, per address on IPv4. */
    @Test
    void waitingConnectionsAreCountedPerIpv4AddressAndPerIpv6Network() throws Exception {
        java.net.InetAddress a = java.net.InetAddress.getByName("2001:db8::1");
        java.net.InetAddress b = java.net.InetAddress.getByName("2001:db8::ffff:2");
        java.net.InetAddress other = java.net.InetAddress.getByName("2001:db8:0:1::1");
        assertThat(WireupServer.source(a)).isEqualTo(WireupServer.source(b)).isEqualTo("2001:db8:0:0:0:0:0:0/64");
        assertThat(WireupServer.source(other)).isNotEqualTo(WireupServer.source(a));
        assertThat(WireupServer.source(java.net.InetAddress.getByName("10.0.0.1"))).isEqualTo("10.0.0.1");
        assertThat(WireupServer.source(java.net.InetAddress.getByName("10.0.0.2"))).isEqualTo("10.0.0.2");
    }

    /** How many of {@code channels} read the end of the stream: the server closed them. */
    private static int closedByPeer(List<SocketChannel> channels) {
        int closed = 0;
        ByteBuffer one = ByteBuffer.allocate(1);
        for (SocketChannel c : channels) {
            try {
                one.clear();
                if (c.read(one) < 0) closed++;
            } catch (java.io.IOException e) {
                closed++;
            }
        }
        return closed;
    }

    /** Nothing is sent after the handshake: a connector that does is dropped as for a close. */
    @Test
    void aConnectorThatSendsBytesOnTheWireupConnectionAfterTheHandshakeIsDropped() throws Exception {
        TestWorker b = peer();
        try (Arena arena = Arena.ofConfined(); RawConnector raw = rawConnector(b, arena)) {
            progressUntil(() -> b.transport.inboundSlotsTaken() == 1, b);
            raw.channel().write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
            progressUntil(() -> b.transport.inboundSlotsTaken() == 0, b);
            ByteBuffer eof = ByteBuffer.allocate(8);
            progressUntil(() -> {
                try {
                    return raw.channel().read(eof) < 0;
                } catch (java.io.IOException e) {
                    return true;
                }
            }, b);
        }
    }

    /**
     * The peer writes the credit word: one that grants credits for SENDs never made (or takes
     * some back) would have this endpoint overrun its receive buffers, which a device answers with
     * receiver-not-ready retries. It fails the endpoint, naming the breach.
     */
    @Test
    void aCreditWordPastTheSendsMadeFailsTheEndpointAsAProtocolBreach() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        send(e, 1, MemorySegment.NULL, bytes("one"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        ((VerbsEndpoint) e).creditWordMemory().set(Records.LONG, 0, 1_000);

        assertThatThrownBy(() -> e.trySend(1, MemorySegment.NULL, bytes("two"))).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("its credit word says 1000 of this endpoint's SENDs were received").hasMessageContaining("with 1 sent")
                .hasMessageContaining("protocol breach");
        progressUntil(() -> !a.failures.isEmpty(), a, b);
        assertThat(a.failures.getFirst().reason()).as("a breach of the peer's").isEqualTo(PeerFailedException.Reason.DAMAGED);
        assertThat(b.received).hasSize(1);
    }

    /** A credit word that goes back (takes credits back) is the same breach as one past the SENDs made. */
    @Test
    void aCreditWordThatGoesBackFailsTheEndpointAsAProtocolBreach() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemorySegment creditWord = ((VerbsEndpoint) e).creditWordMemory();
        send(e, 1, MemorySegment.NULL, bytes("one"), a, b);
        send(e, 1, MemorySegment.NULL, bytes("two"), a, b);
        progressUntil(() -> b.received.size() == 2 && creditWord.get(Records.LONG, 0) == 2, a, b);
        send(e, 1, MemorySegment.NULL, bytes("three"), a, b);
        creditWord.set(Records.LONG, 0, 1);

        assertThatThrownBy(() -> e.trySend(1, MemorySegment.NULL, bytes("four"))).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("its credit word says 1 of this endpoint's SENDs were received, after 2 and with 3 sent")
                .hasMessageContaining("protocol breach");
    }

    /**
     * A chunk whose registration fails is freed whatever the failure: an Error other than running out
     * of memory (a stack overflow in the downcall) kept its memory allocated for the process's life.
     */
    @Test
    void aChunkWhoseRegistrationFailsIsFreedWhateverFailedAndTheProviderGoesOn() {
        MemoryProvider provider = peer().memory();
        closing.add(provider::close);
        StackOverflowError overflow = new StackOverflowError("in ibv_reg_mr");
        verbs.throwFromNextRegister(overflow);
        assertThatThrownBy(() -> provider.allocate(4096)).isSameAs(overflow);
        verbs.throwFromNextRegister(new OutOfMemoryError("Java heap space"));
        assertThatThrownBy(() -> provider.allocate(8192)).isInstanceOf(ConduitException.class)
                .hasMessage("verbs: cannot allocate a chunk of 8192 bytes: Java heap space");
        verbs.failNext("ibv_reg_mr", 1, Errno.ENOMEM);
        assertThatThrownBy(() -> provider.allocate(12288)).hasMessageContaining("ibv_reg_mr").hasMessageContaining("ENOMEM");

        assertThat(verbs.refusedRegistrations()).extracting(MemorySegment::byteSize).containsExactly(4096L, 8192L, 12288L);
        assertThat(verbs.refusedRegistrations()).allSatisfy(memory -> assertThat(memory.scope().isAlive()).as("freed").isFalse());
        provider.free(provider.allocate(4096));
    }

    /**
     * A free the JDK refuses while another thread is inside a native call on the chunk's memory
     * ({@code IllegalStateException}) leaves the chunk the provider's, as the SPI's {@code free}
     * says, and the runtime frees it again at its region's next close: that later free releases the
     * memory. The refused free deregistered the chunk all the same (the device stops writing before
     * the memory goes), so an export in between registers it again. (Until 2026-12-07 the provider
     * forgot the chunk before the refusal: the later free was refused as "not a live chunk" and the
     * memory never freed.)
     */
    @Test
    void aFreeRefusedForABusyChunkLeavesItTheProvidersAndALaterFreeReleasesIt() throws Exception {
        MemoryProvider provider = peer().memory();
        closing.add(provider::close);
        Chunk chunk = provider.allocate(4096);
        Libc libc = Linux.libc();
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), chunk.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(IllegalStateException.class);
            assertThat(verbs.isRegistered(chunk.segment())).as("the busy chunk, deregistered by the refused free").isFalse();
        }
        provider.export(chunk);
        assertThat(verbs.isRegistered(chunk.segment())).as("the chunk, registered again by its export").isTrue();
        provider.free(chunk);
        assertThat(chunk.segment().scope().isAlive()).as("the chunk's memory, freed by the free the runtime tries again").isFalse();
        assertThat(verbs.isRegistered(chunk.segment())).as("the freed chunk's registration").isFalse();
    }

    /**
     * The same refusal met by the provider's close: the SPI's close is idempotent and the runtime
     * tries a refused close again at the pool's next close, so that later close must free the chunk
     * the first could not. (Until 2026-12-07 the first close marked the provider closed and forgot
     * the chunk before the refusal: the later close returned at once and the memory was never
     * freed.)
     */
    @Test
    void aCloseRefusedForABusyChunkFreesItWhenTriedAgain() throws Exception {
        MemoryProvider provider = peer().memory();
        closing.add(provider::close);
        Chunk chunk = provider.allocate(4096);
        Libc libc = Linux.libc();
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), chunk.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(provider::close).isInstanceOf(IllegalStateException.class);
            assertThat(verbs.isRegistered(chunk.segment())).as("the busy chunk, deregistered by the refused close").isFalse();
        }
        provider.close();
        assertThat(chunk.segment().scope().isAlive()).as("the chunk's memory, freed by the close the runtime tries again").isFalse();
    }

    /**
     * An {@link Error} out of one chunk's {@code ibv_dereg_mr} (out of native memory for the
     * call's capture state) while the provider closes: that chunk's memory is rightly kept while
     * the device may still reach it, but the close still frees every other chunk, tries that one
     * again before it releases the protection domain (which frees it, the Error having passed), and
     * releases the device context, and throws that Error itself (the JVM's own, as
     * {@code Cleanup.collect} throws it). (Until 2026-12-07 the teardown caught only
     * {@code RuntimeException}s: the Error ended the close at the first chunk, the others staying
     * registered and allocated and the device context open for the process's life.)
     */
    @Test
    void anErrorDeregisteringOneChunkLeavesNoOtherChunkOfTheClosingProviderAllocatedNorTheDeviceOpen() throws Exception {
        TestWorker worker = peer();
        MemoryProvider provider = worker.memory();
        closing.add(provider::close);
        List<Chunk> chunks = List.of(provider.allocate(4096), provider.allocate(4096));
        OutOfMemoryError outOfMemory = new OutOfMemoryError("native memory for ibv_dereg_mr's capture state");
        verbs.throwFromNextDeregister(outOfMemory);

        Throwable thrown = catchThrowable(provider::close);
        worker.close();

        assertThat(thrown).as("the close's failure").isSameAs(outOfMemory);
        assertThat(chunks).filteredOn(chunk -> chunk.segment().scope().isAlive()).as("chunks left allocated: none, the one whose "
                + "deregistration threw freed by the close's second try").isEmpty();
        assertThat(verbs.contextsOpen()).as("device contexts open once the provider and the worker's transport closed").isZero();
    }

    /**
     * As {@code ibv_reg_mr} on a device: a registration that grants remote write or remote
     * atomics without local write is refused with {@code EINVAL}, so a registration the plugin
     * makes that way fails here as it would on a device. Until 2026-12-07 the simulation accepted
     * it. Remote read alone is accepted.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(ints = {VerbsAbi.IBV_ACCESS_REMOTE_WRITE, VerbsAbi.IBV_ACCESS_REMOTE_ATOMIC,
            VerbsAbi.IBV_ACCESS_REMOTE_WRITE | VerbsAbi.IBV_ACCESS_REMOTE_READ | VerbsAbi.IBV_ACCESS_REMOTE_ATOMIC})
    void aRegistrationGrantingRemoteWriteOrAtomicsWithoutLocalWriteIsRefusedWithEinvalAsByADevice(int access) {
        Verbs.Device device = verbs.open("loop0");
        Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
        closing.add(device::close);
        closing.add(pd::close);
        Arena arena = Arena.ofShared();
        closing.add(arena::close);
        MemorySegment memory = arena.allocate(4096, 4096);

        assertThatThrownBy(() -> pd.register(memory, access, "register less")).isInstanceOf(ErrnoException.class).hasMessageContaining("EINVAL")
                .hasMessageContaining("without local write");
        assertThat(verbs.isRegistered(memory)).as("the refused memory").isFalse();

        Verbs.MemoryRegion readable = pd.register(memory, VerbsAbi.IBV_ACCESS_REMOTE_READ, "register less");
        readable.close();
        pd.register(memory, access | VerbsAbi.IBV_ACCESS_LOCAL_WRITE, "register less").close();
    }

    /**
     * As {@code ibv_destroy_comp_channel} in libibverbs: a completion channel that a completion
     * queue still uses is refused with {@code EBUSY} and stays, to be destroyed once the queue
     * went; so a transport that destroyed its channel before its queues would fail here as on a
     * device. Until 2026-12-07 the simulation destroyed it.
     */
    @Test
    void aCompletionChannelThatACompletionQueueStillUsesIsRefusedWithEbusyAsByTheLibrary() {
        Verbs.Device device = verbs.open("loop0");
        closing.add(device::close);
        Verbs.CompletionChannel channel = device.createCompletionChannel();
        Verbs.CompletionQueue queue = device.createCompletionQueue(16, channel);

        assertThatThrownBy(channel::close).isInstanceOf(ErrnoException.class).hasMessageContaining("ibv_destroy_comp_channel")
                .hasMessageContaining("EBUSY");
        assertThat(verbs.openOf("channel ")).as("the channel, still there").isEqualTo(1);

        queue.close();
        channel.close();
        assertThat(verbs.openOf("channel ")).as("the channel, destroyed once its queue went").isZero();
    }

    /**
     * The acceptor writes the connector's credit word through the connector's queue pair, and
     * reaches nothing else through it: a hostile acceptor that learns a chunk's key and address
     * (any handle of it) could read, write or add to it through that queue pair while it granted
     * remote reads (read, atomics) or shared the chunks' protection domain (write).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "opcode {0}")
    @org.junit.jupiter.params.provider.ValueSource(ints = {VerbsAbi.IBV_WR_RDMA_READ, VerbsAbi.IBV_WR_RDMA_WRITE,
            VerbsAbi.IBV_WR_ATOMIC_FETCH_AND_ADD})
    void anAcceptorReachesNoChunkOfTheConnectorThroughItsQueuePair(int opcode) throws Exception {
        TestWorker b = peer();
        MemoryProvider provider = b.memory();
        closing.add(provider::close);
        Chunk chunk = provider.allocate(4096);
        chunk.segment().setString(0, "secret of b");
        WireFormat.Region region = WireFormat.Region.decode(new PayloadReader(provider.export(chunk)));
        try (Arena arena = Arena.ofShared();
             java.nio.channels.ServerSocketChannel server = java.nio.channels.ServerSocketChannel.open()
                     .bind(new InetSocketAddress("127.0.0.1", 0))) {
            Verbs.Device device = verbs.open("loop0");
            Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
            Verbs.CompletionQueue cq = device.createCompletionQueue(16, null);
            Verbs.QueuePair qp = pd.createQueuePair(cq, cq, 16, 1);
            Verbs.MemoryRegion buffer = pd.register(arena.allocate(4096, 4096), VerbsAbi.IBV_ACCESS_LOCAL_WRITE, "register less");
            closing.add(() -> {
                qp.close();
                buffer.close();
                cq.close();
                pd.close();
            });
            qp.toInit(1, VerbsAbi.IBV_ACCESS_LOCAL_WRITE);
            buffer.memory().setString(0, "OVERWRITTEN by the acceptor");
            byte[] token = new byte[16];
            byte[] address = new WireFormat.Address(token, new byte[16], 1, VerbsAbi.IBV_LINK_LAYER_ETHERNET, 0, LoopbackVerbs.GID, VerbsAbi.IBV_MTU_1024,
                    64, 8192, 16, true, "127.0.0.1", ((InetSocketAddress) server.getLocalAddress()).getPort()).encode();
            TransportEndpoint e = b.transport.connect(new PayloadReader(address), b.failures::add);
            closing.add(e::close);
            try (SocketChannel s = server.accept()) {
                ByteBuffer request = ByteBuffer.allocate(512).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                while (request.position() < 2 || request.position() < 2 + Short.toUnsignedInt(request.getShort(0))) {
                    s.read(request);
                }
                WireFormat.Wireup r = WireFormat.Wireup.decode(java.util.Arrays.copyOfRange(request.array(), 2, request.position()),
                        WireFormat.REQUEST);
                s.write(ByteBuffer.wrap(WireFormat.Wireup.reply(token, qp.number(), 1, 0, LoopbackVerbs.GID, VerbsAbi.IBV_MTU_1024).encode()));
                progressUntil(() -> !((VerbsEndpoint) e).isConnecting(), b);
                qp.toReadyToReceive(new Verbs.PeerPath(r.qpn(), r.psn(), 0, r.gid(), r.mtu(), true), 1, 0, 1);
                qp.toReadyToSend(1, 1);

                qp.postSend(1, opcode, buffer, 0, opcode == VerbsAbi.IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : 32, region.address(), region.rkey(),
                        1, 0);
                Verbs.Completions completions = new Verbs.Completions(4);
                assertThat(cq.poll(completions)).isEqualTo(1);
                assertThat(completions.status[0]).as("the completion").isEqualTo(VerbsAbi.IBV_WC_REM_ACCESS_ERR);
                assertThat(chunk.segment().getString(0)).as("the connector's chunk").isEqualTo("secret of b");
                assertThat(buffer.memory().getString(0)).as("what the acceptor read").doesNotContain("secret");
            }
        }
        provider.free(chunk);
    }

    /**
     * Every byte the acceptor sends on the wire-up connection is checked by the connector: a reply
     * of no bytes, a reply that names another transport (another token), and bytes after the
     * reply (the protocol has none) each fail the endpoint as DAMAGED, naming what was wrong.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"an empty reply", "another token", "bytes after the reply"})
    void aWireupReplyThatBreaksTheProtocolFailsTheEndpointAsDamaged(String breach) throws Exception {
        TestWorker b = peer();
        try (java.nio.channels.ServerSocketChannel server = java.nio.channels.ServerSocketChannel.open()
                .bind(new InetSocketAddress("127.0.0.1", 0))) {
            byte[] token = new byte[16];
            byte[] address = new WireFormat.Address(token, new byte[16], 1, VerbsAbi.IBV_LINK_LAYER_ETHERNET, 0, LoopbackVerbs.GID, VerbsAbi.IBV_MTU_1024,
                    64, 8192, 16, true, "127.0.0.1", ((InetSocketAddress) server.getLocalAddress()).getPort()).encode();
            TransportEndpoint e = b.transport.connect(new PayloadReader(address), b.failures::add);
            closing.add(e::close);
            try (SocketChannel s = server.accept()) {
                byte[] other = token.clone();
                other[0] = 1;
                byte[] reply = switch (breach) {
                    case "an empty reply" -> new byte[2];
                    case "another token" -> WireFormat.Wireup.reply(other, 5, 1, 0, LoopbackVerbs.GID, VerbsAbi.IBV_MTU_1024).encode();
                    default -> WireFormat.Wireup.reply(token, 5, 1, 0, LoopbackVerbs.GID, VerbsAbi.IBV_MTU_1024).encode();
                };
                s.write(ByteBuffer.wrap(reply));
                if (breach.equals("bytes after the reply")) {
                    progressUntil(() -> !((VerbsEndpoint) e).isConnecting(), b);
                    assertThat(b.failures).as("connected by the reply").isEmpty();
                    s.write(ByteBuffer.wrap(new byte[] {7}));
                }
                progressUntil(() -> !b.failures.isEmpty(), b);
            }
        }
        assertThat(b.failures.getFirst().reason()).isEqualTo(PeerFailedException.Reason.DAMAGED);
        assertThat(b.failures.getFirst()).hasMessageContaining(switch (breach) {
            case "an empty reply" -> "a wire-up reply of 0 bytes";
            case "another token" -> "the wire-up reply names another transport (token mismatch)";
            default -> "the peer sent 1 more bytes on the wire-up connection after its reply";
        });
    }

    /** A hand-made connector: a raw queue pair of the simulated fabric, wired up to {@code b} over its TCP listener. */
    record RawConnector(SocketChannel channel, Verbs.QueuePair qp, Verbs.MemoryRegion buffer, Verbs.ProtectionDomain pd,
                                Verbs.CompletionQueue cq) implements AutoCloseable {
        @Override
        public void close() throws Exception {
            channel.close();
            qp.close();
            buffer.close();
            cq.close();
            pd.close();
        }
    }

    /**
     * Puts {@code length} patterned bytes at {@code offset} of {@code region}, whose memory at the
     * peer is {@code regionMemory}, flushes, checks they landed there, and gets them back.
     */
    private static void putThenGetBack(TransportEndpoint e, RemoteRegion region, MemorySegment regionMemory, long offset, int length) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment source = arena.allocate(length);
            for (int i = 0; i < length; i++) {
                source.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13));
            }
            e.put(source, region, offset);
            e.flush();
            assertThat(regionMemory.asSlice(offset, length).mismatch(source)).as("first byte put that differs at the peer").isEqualTo(-1);
            MemorySegment back = arena.allocate(length);
            e.get(region, offset, back);
            assertThat(back.mismatch(source)).as("first byte got back that differs").isEqualTo(-1);
        }
    }

    /** The address a {@link RawConnector} announces in its request: nothing listens behind it, only the acceptor's checks of the request matter. */
    static final byte[] ANNOUNCED = new WireFormat.Address(new byte[16], new byte[16], 1, VerbsAbi.IBV_LINK_LAYER_ETHERNET, 0, LoopbackVerbs.GID,
            VerbsAbi.IBV_MTU_1024, 64, 8192, 16, true, "127.0.0.1", 9).encode();

    private RawConnector rawConnector(TestWorker b, Arena arena) throws Exception {
        return rawConnector(verbs, b, arena);
    }

    static RawConnector rawConnector(LoopbackVerbs verbs, TestWorker b, Arena arena) throws Exception {
        WireFormat.Address peer = WireFormat.Address.decode(new PayloadReader(b.transport.address()));
        Verbs.Device device = verbs.open("loop0");
        Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
        Verbs.CompletionQueue cq = device.createCompletionQueue(16, null);
        Verbs.QueuePair qp = pd.createQueuePair(cq, cq, 16, 1);
        qp.toInit(1, VerbsAbi.IBV_ACCESS_LOCAL_WRITE | VerbsAbi.IBV_ACCESS_REMOTE_WRITE);
        Verbs.MemoryRegion buffer = pd.register(arena.allocate(8192, 4096), VerbsAbi.IBV_ACCESS_LOCAL_WRITE | VerbsAbi.IBV_ACCESS_REMOTE_WRITE, "register less");
        SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", peer.tcpPort()));
        channel.write(ByteBuffer.wrap(new WireFormat.Wireup(WireFormat.REQUEST, peer.token(), qp.number(), 1, 0, LoopbackVerbs.GID,
                VerbsAbi.IBV_MTU_1024, buffer.memory().address() + 4096, buffer.remoteKey(), ANNOUNCED).encode()));
        channel.configureBlocking(false);
        ByteBuffer reply = ByteBuffer.allocate(512);
        progressUntil(() -> {
            try {
                return channel.read(reply) > 0;
            } catch (java.io.IOException e) {
                throw new AssertionError(e);
            }
        }, b);
        byte[] body = java.util.Arrays.copyOfRange(reply.array(), 2, reply.position());
        WireFormat.Wireup answer = WireFormat.Wireup.decode(body, WireFormat.REPLY);
        qp.toReadyToReceive(new Verbs.PeerPath(answer.qpn(), answer.psn(), 0, answer.gid(), answer.mtu(), true), 1, 0, 1);
        qp.toReadyToSend(1, 1);
        return new RawConnector(channel, qp, buffer, pd, cq);
    }

    @Test
    void aPeerThatBreaksTheRecordProtocolIsDroppedAndOthersAreNotDisturbed() throws Exception {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint good = connected(a.connect(b), a, b);
        try (Arena arena = Arena.ofConfined(); RawConnector rogue = rawConnector(b, arena)) {
            // a FIRST record whose lengths disagree with the bytes received
            Records.write(rogue.buffer().memory(), 0, Records.FIRST, 1, 5000, 10, 10);
            rogue.qp().postSend(1, VerbsAbi.IBV_WR_SEND, rogue.buffer(), 0, 64, 0, 0, 0, 0);
            // then a well-formed one, received in the same batch: a connection that broke the protocol delivers nothing more
            Records.write(rogue.buffer().memory(), 1024, Records.FIRST, 2, 0, 4, 4);
            rogue.qp().postSend(2, VerbsAbi.IBV_WR_SEND, rogue.buffer(), 1024, Records.HEADER + 4, 0, 0, 0, 0);
            ByteBuffer eof = ByteBuffer.allocate(1);
            progressUntil(() -> {
                try {
                    return rogue.channel().read(eof) < 0; // b closed its side of the wire-up connection: the inbound is gone
                } catch (java.io.IOException e) {
                    return true;
                }
            }, b);
            assertThat(b.received).as("nothing delivered from the broken record").isEmpty();
        }
        send(good, 3, MemorySegment.NULL, bytes("unaffected"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        assertThat(a.failures).isEmpty();
    }

    @Test
    void somethingElseOnTheWireupPortIsRefusedWithoutHarm() throws Exception {
        TestWorker a = peer();
        TestWorker b = peer();
        WireFormat.Address address = WireFormat.Address.decode(new PayloadReader(b.transport.address()));
        try (SocketChannel http = SocketChannel.open(new InetSocketAddress("127.0.0.1", address.tcpPort()))) {
            http.write(ByteBuffer.wrap("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
            ByteBuffer eof = ByteBuffer.allocate(64);
            http.configureBlocking(false);
            progressUntil(() -> {
                try {
                    return http.read(eof) < 0;
                } catch (java.io.IOException e) {
                    return true;
                }
            }, b);
        }
        TransportEndpoint e = a.connect(b);
        send(e, 1, MemorySegment.NULL, bytes("still serving"), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
    }

    @Test
    void awaitWakesForAMessageAndForSignal() {
        TestWorker a = peer();
        TestWorker b = peer("verbs.liveness.interval", "1h");
        TransportEndpoint e = a.connect(b);
        send(e, 1, MemorySegment.NULL, bytes("wake"), a, b);
        assertThat(b.transport.await(60_000_000_000L)).isTrue();
        progressUntil(() -> b.received.size() == 1, b);
        b.transport.signal();
        assertThat(b.transport.await(60_000_000_000L)).isTrue();
    }

    @Test
    void awaitTakesAConnectionTheWireupThreadHandedOverAtOnceNotAtTheNextLivenessLook() {
        TestWorker a = peer();
        TestWorker b = peer("verbs.liveness.interval", "1h");
        connected(a.connect(b), a); // b's wire-up thread built the inbound connection and handed it over before replying
        assertThat(b.transport.await(1_000_000)).as("await with a connection handed over").isTrue();
        assertThat(b.transport.await(1_000_000)).as("await once it is taken, with nothing else to do").isFalse();
    }

    /**
     * The runtime's {@code Worker.await} calls the await of its WAKEUP transport again and again,
     * never that transport's progress (below). await does not wake for a connector's wire-up reply
     * (the wire-up socket is not among the descriptors it polls), but its liveness look reads the
     * reply before it checks the handshake's deadline. Until 2026-12-07 that look only checked the
     * deadline: an endpoint connected and then waited on with {@code Worker.await} (an event loop
     * that sleeps until something comes, no message queued for the endpoint) was failed as HUNG, "no
     * wire-up reply within verbs.wireup.timeout: the peer does not progress", though the acceptor
     * replied at once and its reply lay unread in the socket.
     */
    @Test
    void aWireupReplyThatCameWhileTheWorkerSleepsInAwaitConnectsTheEndpointRatherThanFailingItAsHung() throws Exception {
        TestWorker a = peer("verbs.wireup.timeout", "1s");
        TestWorker b = peer();
        VerbsEndpoint e = (VerbsEndpoint) a.connect(b);
        try (Selector selector = Selector.open()) { // b's wire-up thread replies without b progressing
            e.wireupSocket().register(selector, SelectionKey.OP_READ);
            assertThat(selector.select(60_000)).as("hang guard: the acceptor's wire-up reply never came").isPositive();
        }
        long hangGuard = System.nanoTime() + 60_000_000_000L;
        while (e.isConnecting()) { // as Worker.await sleeps: the transport's await again and again, never its progress
            a.transport.await(100_000_000L);
            if (System.nanoTime() > hangGuard) {
                throw new AssertionError("hang guard: the endpoint neither connected nor failed");
            }
        }
        assertThat(a.failures).as("failures reported while the worker awaited").isEmpty();
        assertThat(e.hasFailed()).isFalse();
    }

    /**
     * A SEND that fails ({@code IBV_WC_RETRY_EXC_ERR}: the peer's queue pair went to the error state,
     * or RDMA does not get through where TCP does, as on a RoCE network that drops or filters it)
     * completes on the send completion queue, which await arms and polls while an endpoint has sends
     * outstanding. The wire-up connection is healthy, so no liveness look fails the endpoint. Until
     * 2026-12-07 await armed that queue only while credits waited for a credit write: a worker that
     * sleeps in {@code Worker.await} (the transport's await again and again, never its progress) was
     * never told, however long it waited for the answer that could not come.
     */
    @Test
    void aSendThatFailsWhileTheWorkerSleepsInAwaitFailsTheEndpoint() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        // b is not progressed from here: its wire-up connection stays open while its queue pair is in the error state.
        verbs.raise(VerbsAbi.IBV_EVENT_QP_FATAL, b.transport.inbounds().getFirst().queuePair());
        assertThat(e.trySend(1, MemorySegment.NULL, bytes("lost"))).as("posted; its completion is IBV_WC_RETRY_EXC_ERR").isTrue();
        boolean woken = false;
        for (int i = 0; i < 10 && !woken; i++) { // as Worker.await sleeps until woken; each await ends at a liveness look at the latest
            woken = a.transport.await(100_000_000L);
        }
        assertThat(woken).as("await woken by the failed SEND's completion").isTrue();
        a.transport.progress(); // what the application does once its Worker.await returned
        assertThat(a.failures).as("the endpoint's failure").hasSize(1);
        assertThat(a.failures.getFirst()).hasMessageContaining("IBV_WC_RETRY_EXC_ERR");
    }

    /**
     * An acceptor announces buffers it posted again only once its last credit write completed, and
     * that completion lands on the send completion queue. await used to arm only the receive queue:
     * a receiver that had buffers to announce behind a write in flight slept through the write's
     * completion, while its connector, short of the credits for its next message, sent nothing that
     * would wake it. With verbs the only transport of a worker, whose await calls the transport's
     * await again and again without progress, both waited for good.
     */
    @Test
    void awaitWakesForTheCompletionOfACreditWriteThatBuffersPostedAgainWaitFor() throws Exception {
        TestWorker a = peer("verbs.buffer.size", "4k", "verbs.send.buffers", "4");
        TestWorker b = peer("verbs.buffer.size", "4k", "verbs.receive.buffers", "4", "verbs.liveness.interval", "1h");
        TransportEndpoint e = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        verbs.delayCompletions(b.transport.sendQueue);
        send(e, 1, MemorySegment.NULL, bytes("one"), a);
        b.transport.progress(); // delivers it, posts its buffer again and writes that credit: the write's completion is late
        send(e, 2, MemorySegment.NULL, bytes("two"), a);
        b.transport.progress(); // delivers it and posts its buffer again: that credit waits for the first write's completion
        assertThat(b.received).hasSize(2);
        MemorySegment largest = MemorySegment.ofArray(new byte[(int) e.maxPayloadSize()]); // all four of b's buffers
        a.transport.progress();
        assertThat(e.trySend(3, MemorySegment.NULL, largest)).as("the largest message, with three credits").isFalse();

        Thread late = Thread.ofPlatform().name("credit-write-completes").start(() -> {
            java.util.concurrent.locks.LockSupport.parkNanos(200_000_000L);
            verbs.completeDelayed(); // while b sleeps in await
        });
        // A minute, a hang guard: the completion wakes the await as soon as the thread above gets a processor, which a
        // loaded machine may delay (with 5 s, a thread kept off the processor that long failed the test as a lost wake-up).
        boolean woken = b.transport.await(60_000_000_000L);
        late.join();

        assertThat(woken).as("await woken by the credit write's completion").isTrue();
        b.transport.progress(); // as a worker does after its await: the credit waiting for that write goes out
        a.transport.progress();
        assertThat(e.trySend(3, MemorySegment.NULL, largest)).as("the largest message, with the fourth credit").isTrue();
        progressUntil(() -> b.received.size() == 3, a, b);
    }

    /**
     * Above 1 GiB a buffer size is refused by the key itself, naming its range, so that a Conduit with it fails to
     * build. The key took any size from 4 KiB, and only opening a transport refused one above 1 GiB: the build passed,
     * and so did every probe, and the first worker failed with a ConduitException that named neither the source nor
     * the lower bound.
     */
    @Test
    void aBufferSizeAboveOneGibIsRefusedByTheKeyNamingItsRange() {
        assertThatThrownBy(() -> peer("verbs.buffer.size", "2g")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("bad value '2g' for config key conduit.verbs.buffer.size (CONDUIT_VERBS_BUFFER_SIZE)")
                .hasMessageContaining("a size in bytes from 4096 to 1073741824");
    }

    /** An empty library name was given to dlopen, which opens the program itself: "has no function ibv_get_device_list". */
    @Test
    void anEmptyOrBlankLibraryIsRefusedByTheKeyNamingTheRemedy() {
        for (String blank : new String[] {"", "  "}) {
            assertThatThrownBy(() -> peer("verbs.library", blank)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("bad value '" + blank + "' for config key conduit.verbs.library (CONDUIT_VERBS_LIBRARY)")
                    .hasMessageContaining("no library named: remove the setting for libibverbs.so.1, or name the library");
        }
    }

    /**
     * Every SEND, RDMA WRITE and READ moves up to one buffer. A buffer larger than the port's
     * {@code max_msg_sz} failed the first message that filled it (a SEND of a full record) with
     * {@code IBV_WC_LOC_LEN_ERR}, naming neither the key nor the limit: the transport refuses to open.
     */
    @Test
    void aBufferSizeAboveThePortsMaxMessageSizeIsRefusedAtOpenNamingTheKeyAndTheLimit() {
        verbs.maxMessageSize(4L << 20);
        assertThatThrownBy(() -> peer("verbs.buffer.size", "8m")).isInstanceOf(ConduitException.class)
                .hasMessage("verbs: verbs.buffer.size (CONDUIT_VERBS_BUFFER_SIZE) is 8388608 bytes, more than port 1 of device loop0 "
                        + "moves in one work request (max_msg_sz 4194304 bytes): set it to at most 4194304 bytes");
        TestWorker a = peer("verbs.buffer.size", "4m", "verbs.send.buffers", "2");
        TestWorker b = peer("verbs.buffer.size", "4m", "verbs.receive.buffers", "2");
        TransportEndpoint e = a.connect(b);
        send(e, 1, MemorySegment.NULL, MemorySegment.ofArray(new byte[(4 << 20) - Records.HEADER - Records.MAX_MESSAGE_HEADER]), a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        assertThat(a.failures).isEmpty();
    }

    /**
     * {@code verbs.wireup.address} is both where the listener binds and what the address announces for
     * peers to connect to. The wildcard ({@code 0.0.0.0}, also written {@code 0}), which a user sets
     * to listen on every interface, binds, and goes into the address as it is: a peer on another host
     * then connects to 0.0.0.0, which Linux takes as its own host, and fails with "cannot reach the
     * peer's wire-up listener 0.0.0.0:port (Connection refused): the peer is gone, or a firewall or
     * routing separates this host from it", naming neither the key nor the wildcard; and a message of
     * such a worker is answered ({@code Message.replyEndpoint()}) at the answerer's own host. Over
     * loopback, as here, every connect still works, so nothing shows it before a second host does.
     * Until 2026-12-07 it was so; now the worker's open refuses it, and a multicast group, which is
     * no host either, naming the key and the remedy.
     */
    @Test
    void aWildcardWireupAddressIsRefusedAtOpenNamingTheKey() {
        for (String wildcard : new String[] {"0.0.0.0", "0", "::"}) {
            assertThatThrownBy(() -> peer("verbs.wireup.address", wildcard)).as(wildcard).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("verbs.wireup.address (CONDUIT_VERBS_WIREUP_ADDRESS) is '" + wildcard + "', the wildcard address")
                    .hasMessageContaining("set an address of this host that peers reach");
        }
        assertThatThrownBy(() -> peer("verbs.wireup.address", "224.0.0.1")).isInstanceOf(ConduitException.class)
                .hasMessageContaining("verbs.wireup.address (CONDUIT_VERBS_WIREUP_ADDRESS) is '224.0.0.1', a multicast group");
    }

    /**
     * A host name or an address with a port is no IP literal, which is all the key takes (names are
     * never resolved: the address must say where peers connect). Until 2026-12-07 the refusal said
     * only "not an IPv4 or IPv6 address", with no remedy.
     */
    @Test
    void aWireupAddressThatIsNoIpLiteralIsRefusedAtOpenNamingTheKeyAndTheRemedy() {
        for (String notALiteral : new String[] {"localhost", "127.0.0.1:4791", "[::1]:4791"}) {
            assertThatThrownBy(() -> peer("verbs.wireup.address", notALiteral)).as(notALiteral).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("verbs.wireup.address (CONDUIT_VERBS_WIREUP_ADDRESS) is '" + notALiteral
                            + "', not an IPv4 or IPv6 address")
                    .hasMessageContaining("set an address of this host that peers reach");
        }
    }

    /**
     * A scoped IPv6 literal ({@code fe80::1%1}) binds on this host, but its scope is an interface
     * index or name of this host: announced as it is, it means nothing (or another interface) on
     * the peer's. Until 2026-12-07 it was taken, and failed only where bind did, naming no key.
     */
    @Test
    void aScopedIpv6WireupAddressIsRefusedAtOpenNamingTheKey() {
        assertThatThrownBy(() -> peer("verbs.wireup.address", "fe80::1%1")).isInstanceOf(ConduitException.class)
                .hasMessageContaining("verbs.wireup.address (CONDUIT_VERBS_WIREUP_ADDRESS) is 'fe80::1%1', a scoped IPv6 address")
                .hasMessageContaining("set an address of this host that peers reach");
    }

    /**
     * A queue pair takes as many RDMA READs and atomics of its peer in flight as its device's
     * {@code max_qp_rd_atom} (advertised in its address), and keeps in flight at most its device's
     * {@code max_qp_init_rd_atom} and the peer's advertised depth, capped at 255 (a u8). Every queue
     * pair used to be given 1 and 1: one READ or atomic per connection in flight, whatever the devices.
     */
    @Test
    void eachQueuePairKeepsInFlightWhatItsDeviceAndThePeersAdvertisedDepthAllow() {
        TestWorker a = peer();
        TestWorker b = peer();
        connected(a.connect(b), a, b);
        assertThat(verbs.queuePairDepths()).as("acceptor, then connector: 16 and 16 on both devices")
                .containsExactly(new LoopbackVerbs.Depths(16, 16), new LoopbackVerbs.Depths(16, 16));

        verbs.readAtomicDepths(4, 8);
        TestWorker small = peer();
        connected(a.connect(small), a, small);
        connected(small.connect(a), a, small);
        assertThat(verbs.queuePairDepths().subList(2, 6)).as("towards a device taking 4: 4; from a device keeping 8: 8").containsExactly(
                new LoopbackVerbs.Depths(8, 4), new LoopbackVerbs.Depths(4, 16),
                new LoopbackVerbs.Depths(4, 16), new LoopbackVerbs.Depths(8, 4));

        verbs.readAtomicDepths(300, 1000);
        TestWorker large = peer();
        TestWorker larger = peer();
        TransportEndpoint e = connected(large.connect(larger), large, larger);
        assertThat(verbs.queuePairDepths().subList(6, 8)).as("at most 255, a u8")
                .containsExactly(new LoopbackVerbs.Depths(255, 255), new LoopbackVerbs.Depths(255, 255));
        MemoryProvider memory = larger.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        assertThat(e.fetchAdd(region, 0, 5)).isZero();
        assertThat(e.compareAndSwap(region, 0, 5, 7)).isEqualTo(5);
        memory.free(chunk);
    }

    /**
     * A device whose queue pairs take or keep no RDMA READ or atomic in flight could do no get or
     * atomic: the transport refuses to open on it, naming the device, the attribute and its value,
     * where the 0 used to reach {@code ibv_modify_qp} at the first connection as an EINVAL naming nothing.
     */
    @Test
    void aDeviceThatTakesOrKeepsNoReadOrAtomicInFlightIsRefusedAtOpenNamingTheAttribute() {
        verbs.readAtomicDepths(0, 16);
        assertThatThrownBy(() -> peer()).isInstanceOf(ConduitException.class)
                .hasMessage("verbs: device loop0 reports max_qp_rd_atom 0: its queue pairs take no RDMA READ or atomic of a peer in "
                        + "flight, which get, fetchAdd and compareAndSwap need: use another device (verbs.device (CONDUIT_VERBS_DEVICE))");
        verbs.readAtomicDepths(16, 0);
        assertThatThrownBy(() -> peer()).isInstanceOf(ConduitException.class)
                .hasMessage("verbs: device loop0 reports max_qp_init_rd_atom 0: its queue pairs keep no RDMA READ or atomic in "
                        + "flight, which get, fetchAdd and compareAndSwap need: use another device (verbs.device (CONDUIT_VERBS_DEVICE))");
        assertThat(verbs.queuePairDepths()).isEmpty();
    }

    /**
     * Each part of a put or get is at most the smaller of the two sides' buffer sizes: the peer's
     * is what its port's {@code max_msg_sz} was checked against. Parts of this side's larger buffer
     * used to go to a peer whose port moves fewer bytes in one work request, which refused each
     * (IBV_WC_REM_INV_REQ_ERR) and failed the connection.
     */
    @Test
    void putsAndGetsGoInPartsThePeersPortMovesInOneWorkRequest() {
        verbs.maxMessageSize(64 * 1024);
        TestWorker b = peer("verbs.buffer.size", "64k");
        verbs.maxMessageSize(1L << 31);
        TestWorker a = peer("verbs.buffer.size", "1m", "verbs.send.buffers", "4");
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(512 * 1024);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 512 * 1024);
        putThenGetBack(e, region, chunk.segment(), 8, 300_000);
        assertThat(a.failures).isEmpty();
        memory.free(chunk);
    }

    /**
     * A get keeps as many RDMA READs in flight as its queue pair's {@code max_rd_atomic} and its
     * send buffers allow, and each part's buffer stays the get's until its bytes are copied out.
     * The READs come back a window at a time here, and every part has its own bytes. A get used to
     * wait for each part before it posted the next (one READ in flight whatever the depth); and a
     * buffer freed with its completion, as a put's is, would be taken for a later part's READ
     * before its own bytes were copied out.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "max_rd_atomic {0}, {1} send buffers: {2} in flight")
    @org.junit.jupiter.params.provider.CsvSource({"1, 64, 1", "4, 64, 4", "16, 8, 8"})
    void aGetKeepsItsPartsInFlightUpToItsReadDepthAndItsSendBuffersAndReturnsThePeersBytes(int depth, int sendBuffers, int inFlight) {
        verbs.holdReadsUntilPolled();
        verbs.readAtomicDepths(16, depth);
        TestWorker a = peer("verbs.buffer.size", "4k", "verbs.send.buffers", String.valueOf(sendBuffers));
        verbs.readAtomicDepths(16, 16);
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(256 * 1024);
        MemorySegment peerBytes = chunk.segment();
        for (int i = 0; i < peerBytes.byteSize(); i++) {
            peerBytes.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + i / 4096)); // i * 13 alone repeats every 4 KiB part
        }
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 256 * 1024);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment back = arena.allocate(200_000);
            e.get(region, 8, back);
            assertThat(back.mismatch(peerBytes.asSlice(8, 200_000))).as("first byte of the 49 parts that differs from the peer's").isEqualTo(-1);
        }
        assertThat(verbs.mostReadsInFlight()).as("READs in flight at once: the fewer of max_rd_atomic and the send buffers").isEqualTo(inFlight);
        e.flush();
        assertThat(a.failures).isEmpty();
        memory.free(chunk);
    }

    /**
     * A READ refused in the middle of a get's window (a handle claiming more than the peer
     * registered: the parts past its end) fails the endpoint, and the get throws it, having
     * copied a run of its first parts and left the rest of the destination as it was. Every send
     * buffer comes back, those of the parts copied and those still in flight when it failed: they
     * used to stay taken, and a later flush or close would wait for them.
     */
    @Test
    void aGetWhoseReadIsRefusedMidWayThrowsKeepsItsFirstPartsCopiedAndGivesBackEverySendBuffer() {
        verbs.holdReadsUntilPolled();
        TestWorker a = peer("verbs.buffer.size", "4k", "verbs.send.buffers", "16");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(20 * 4096);
        MemorySegment peerBytes = chunk.segment();
        for (int i = 0; i < peerBytes.byteSize(); i++) {
            peerBytes.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + i / 4096 + 1)); // no zero byte in any part
        }
        WireFormat.Region registered = WireFormat.Region.decode(TestWorker.region(memory, chunk, 0, 20 * 4096).payload());
        byte[] claimingMore = new WireFormat.Region(registered.context(), registered.address(), 32 * 4096, registered.rkey()).encode();
        RemoteRegion region = new TestWorker.TestRegion(VerbsPlugin.NAME, 0, 32 * 4096, claimingMore);
        // On the heap: the address of a native destination could make its parts go last first (lastPartFirst).
        MemorySegment back = MemorySegment.ofArray(new byte[32 * 4096]);
        assertThatThrownBy(() -> e.get(region, 0, back)).isInstanceOf(PeerFailedException.class).hasMessageContaining("IBV_WC_REM_ACCESS_ERR");
        int copied = 0;
        while (copied < 20 && back.asSlice(copied * 4096L, 4096).mismatch(peerBytes.asSlice(copied * 4096L, 4096)) == -1) {
            copied++;
        }
        assertThat(copied).as("parts copied before the failure: some, up to the last the peer registered").isBetween(1, 20);
        assertThat(back.asSlice(copied * 4096L).mismatch(MemorySegment.ofArray(new byte[(32 - copied) * 4096])))
                .as("first byte past the " + copied + " parts copied that is not as it was (zero)").isEqualTo(-1);
        assertThat(((VerbsEndpoint) e).freeSendBuffers()).as("send buffers free after the failed get").isEqualTo(16);
        assertThatThrownBy(e::flush).isInstanceOf(PeerFailedException.class);
        progressUntil(() -> a.failures.size() == 1, a, b);
        memory.free(chunk);
    }

    /**
     * An {@code Error} out of {@code ibv_post_send} (the call is a downcall through the provider's
     * ops table: out of memory, a fault in mapped memory) used to keep the part's send buffer,
     * with no completion to come for it: {@code flush} waited for it until the peer failed, and
     * {@code close}, which drains every send buffer of an endpoint that has not failed, until the
     * wire-up timeout.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"put", "get"})
    void anErrorFromPostingAPartReachesTheCallerGivesBackItsSendBufferAndFailsTheEndpoint(String operation) {
        TestWorker a = peer("verbs.buffer.size", "4k", "verbs.send.buffers", "16");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4 * 4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4 * 4096);
        Error error = operation.equals("put") ? new OutOfMemoryError("simulated: no memory left for the work request")
                : new InternalError("simulated: a fault occurred in an unsafe memory access operation");
        verbs.throwFromNextPostSend(error);

        MemorySegment threeParts = MemorySegment.ofArray(new byte[3 * 4096]);
        assertThatThrownBy(() -> {
            if (operation.equals("put")) e.put(threeParts, region, 0);
            else e.get(region, 0, threeParts);
        }).isSameAs(error);
        assertFailedNamingTheErrorWithEverySendBufferFree(error, e, a, b);
        memory.free(chunk);
    }

    /** What follows an {@code Error} out of posting: the endpoint's next call throws its failure, which names the Error and is reported once. */
    private static void assertFailedNamingTheErrorWithEverySendBufferFree(Error error, TransportEndpoint e, TestWorker a, TestWorker b) {
        assertThat(((VerbsEndpoint) e).freeSendBuffers()).as("send buffers free after the Error").isEqualTo(16);
        assertThatThrownBy(e::flush).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("posting a work request failed: " + error);
        progressUntil(() -> a.failures.size() == 1, a, b);
        assertThat(a.failures.getFirst()).hasMessageContaining("posting a work request failed: " + error);
        e.close(); // a failed endpoint's close drains nothing
    }

    /**
     * A segment the caller cannot read (its arena closed, or confined to another thread) used to
     * fail the copy into a send buffer already taken, which was neither posted nor given back:
     * {@code flush} waited for it until the peer failed, {@code close} for the wire-up timeout,
     * and once every buffer was kept so {@code trySend} returned false for good.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0} of a segment {1}")
    @org.junit.jupiter.params.provider.CsvSource({"trySend, closed", "trySend, of another thread", "put, closed", "put, of another thread"})
    void aSegmentTheCallerCannotReadFailsOnlyItsCallAndKeepsNoSendBuffer(String operation, String unreadable) throws Exception {
        TestWorker a = peer("verbs.buffer.size", "4k", "verbs.send.buffers", "16");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4 * 4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4 * 4096);
        Arena arena = Arena.ofConfined();
        MemorySegment threeParts = arena.allocate(3 * 4096);
        org.assertj.core.api.ThrowableAssert.ThrowingCallable call = operation.equals("put") ? () -> e.put(threeParts, region, 0)
                : () -> e.trySend(1, MemorySegment.NULL, threeParts);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        if (unreadable.equals("closed")) {
            arena.close();
            thrown.set(catchThrowable(call));
        } else {
            Thread.ofPlatform().start(() -> thrown.set(catchThrowable(call))).join();
            arena.close();
        }

        assertThat(thrown.get()).isInstanceOf(unreadable.equals("closed") ? IllegalStateException.class : WrongThreadException.class);
        assertThat(((VerbsEndpoint) e).freeSendBuffers()).as("send buffers free after the call that failed").isEqualTo(16);
        send(e, 2, bytes("h"), bytes("after"), a, b);
        e.flush();
        progressUntil(() -> b.received.size() == 1, a, b);
        assertThat(new String(b.received.getFirst().payload(), StandardCharsets.UTF_8)).isEqualTo("after");
        assertThat(a.failures).isEmpty();
        memory.free(chunk);
    }

    /**
     * A payload whose memory faults part way (a file mapping truncated under it) fails its copy
     * after the first record's or part's: a put has posted its first part, which is written, and
     * gives back the faulting part's buffer; a trySend, which copies every record before posting
     * any, posts none and keeps no buffer, where it used to post its first record, leaving the
     * peer a message without its end, and keep the faulting record's buffer.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"trySend", "put"})
    void aPayloadThatFaultsPartWayFailsItsCallKeepsNoSendBufferAndATrySendPostsNoRecordOfIt(String operation,
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        TestWorker a = peer("verbs.buffer.size", "4k", "verbs.send.buffers", "16");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4 * 4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4 * 4096);
        try (Arena arena = Arena.ofConfined();
             java.nio.channels.FileChannel file = java.nio.channels.FileChannel.open(dir.resolve("payload"),
                     java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            MemorySegment threeParts = file.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, 3 * 4096, arena);
            threeParts.asSlice(0, 4096).fill((byte) 7);
            file.truncate(4096); // the second and third pages are gone: reading them faults

            assertThatThrownBy(() -> {
                if (operation.equals("put")) e.put(threeParts, region, 0);
                else e.trySend(1, MemorySegment.NULL, threeParts);
            }).isInstanceOf(InternalError.class);
        }
        a.transport.progress(); // polls the completion of the put's first part: the simulation completes a write as it is posted
        assertThat(((VerbsEndpoint) e).freeSendBuffers()).as("send buffers free after the call that faulted").isEqualTo(16);
        if (operation.equals("put")) {
            assertThat(chunk.segment().asSlice(0, 4096).mismatch(MemorySegment.ofArray(new byte[4096]).fill((byte) 7)))
                    .as("first byte of the put's first part not written").isEqualTo(-1);
        }
        send(e, 2, bytes("h"), bytes("after"), a, b);
        e.flush();
        progressUntil(() -> b.received.size() == 1, a, b);
        assertThat(b.received.getFirst().id()).as("the message after, the only one the peer received").isEqualTo(2);
        assertThat(a.failures).isEmpty();
        memory.free(chunk);
    }

    @Test
    void aBufferSizeThatIsNotAMultipleOf64IsRefusedNamingTheKeyAndTheRemedy() {
        // 4100: the second buffer's record would start at 4100 and its 8-byte total sit at 4116, not 8-byte aligned.
        assertThatThrownBy(() -> peer("verbs.buffer.size", "4100")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("bad value '4100' for config key conduit.verbs.buffer.size (CONDUIT_VERBS_BUFFER_SIZE)")
                .hasMessageContaining("4100 bytes is not a multiple of 64")
                .hasMessageContaining("such as 4096 or 4160");
        TestWorker a = peer("verbs.buffer.size", "4160");
        TestWorker b = peer("verbs.buffer.size", "4160");
        TransportEndpoint e = a.connect(b);
        for (int i = 0; i < 3; i++) {
            send(e, i, MemorySegment.NULL, MemorySegment.ofArray(new byte[10_000]), a, b);
        }
        progressUntil(() -> b.received.size() == 3, a, b);
    }

    /** The batch used to be left at the first completion that threw: the rest of it (other connections' messages and their re-posts) was lost. */
    @Test
    void aCompletionThatFailsDropsOnlyItsConnectionAndTheRestOfTheBatchIsDeliveredAndPostedAgain() {
        TestWorker a = peer();
        TestWorker b = peer("verbs.receive.buffers", "4");
        TransportEndpoint failing = connected(a.connect(b), a, b);
        TransportEndpoint other = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 2, a, b);
        send(failing, 1, MemorySegment.NULL, bytes("first"), a);
        for (int i = 0; i < 4; i++) { // all of its credits: nothing more moves unless these buffers are posted again
            send(other, 2, MemorySegment.NULL, bytes("other " + i), a);
        }
        verbs.failNext("ibv_post_recv", 1, Errno.ENOMEM); // re-posting the first completion's buffer, mid-batch
        b.transport.progress();
        assertThat(b.received).as("the whole batch delivered").hasSize(5);
        assertThat(b.transport.inbounds()).as("only the connection whose buffer could not be posted again is dropped").hasSize(1);
        for (int i = 0; i < 8; i++) {
            send(other, 3, MemorySegment.NULL, bytes("more " + i), a, b);
        }
        progressUntil(() -> b.received.size() == 13, a, b);
        progressUntil(() -> a.failures.size() == 1, a, b);
        assertThat(a.failures.getFirst()).hasMessageContaining("closed its end of the wire-up connection");
        assertThat(a.failures.getFirst().reason()).as("a close and a death both close the socket").isEqualTo(PeerFailedException.Reason.UNKNOWN);
    }

    @Test
    void anErrorFromOneCompletionLeavesTheRestOfTheBatchHandledAndIsThrownAfterIt() {
        TestWorker a = peer();
        TestWorker b = peer("verbs.receive.buffers", "4");
        TransportEndpoint failing = connected(a.connect(b), a, b);
        TransportEndpoint other = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 2, a, b);
        b.failingId = 9;
        send(failing, 9, MemorySegment.NULL, bytes("fails"), a);
        for (int i = 0; i < 4; i++) {
            send(other, 2, MemorySegment.NULL, bytes("other " + i), a);
        }
        assertThatThrownBy(b.transport::progress).isInstanceOf(TestWorker.SinkError.class);
        assertThat(b.received).as("the rest of the batch").hasSize(4);
        b.transport.progress();
        assertThat(b.transport.inbounds()).as("the connection whose completion failed is dropped").hasSize(1);
        b.failingId = -1;
        for (int i = 0; i < 8; i++) { // only if the batch's buffers were posted again
            send(other, 3, MemorySegment.NULL, bytes("more " + i), a, b);
        }
        progressUntil(() -> b.received.size() == 12, a, b);
        progressUntil(() -> a.failures.size() == 1, a, b);
    }

    /**
     * A device in error fails every ibv_poll_cq and takes nothing off the queue. Delivering a gone peer's queued messages
     * used to poll again after each failed poll: await never returned, and every failure was added to the suppressed list
     * of the first until the heap was full.
     */
    @Test
    void aGonePeerIsDroppedAndAwaitThrowsThePollFailureWhenEveryPollOfTheReceiveQueueFails() throws Exception {
        TestWorker a = peer();
        TestWorker b = peer("verbs.liveness.interval", "10ms");
        TransportEndpoint e = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        Inbound in = b.transport.inbounds().getFirst();
        e.close();
        progressUntil(in::peerGone); // the end of stream has reached b, which has not looked yet
        Thread.sleep(20); // b's next liveness look is due at its next await
        verbs.failPollsAfter(b.transport.receiveQueue, 1); // await's own poll succeeds; every poll after it fails

        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread waiter = catching("await-on-a-device-in-error", () -> b.transport.await(1_000_000_000L), thrown);
        waiter.start();
        boolean returned = waiter.join(Duration.ofMinutes(1)); // a hang guard: the await throws as soon as the thread runs
        int failedPolls = verbs.failedPolls();
        verbs.healPolls(); // lets an await that loops end, so that the workers can be closed
        waiter.join();

        assertThat(returned).as("await returned within a minute while every poll failed (%d polls failed)", failedPolls).isTrue();
        assertThat(failedPolls).as("polls that failed: the delivery of the gone peer's messages stops at the first").isEqualTo(1);
        assertThat(thrown.get()).as("what await threw: the poll's failure").isInstanceOf(ConduitException.class)
                .hasMessageContaining("ibv_poll_cq(loop0 cq ").hasMessageContaining("returned -2");
        assertThat(b.transport.inbounds()).as("the gone peer's connection, dropped all the same").isEmpty();
        assertThat(b.transport.inboundSlotsTaken()).as("inbound slots taken after the drop").isZero();
    }

    @Test
    void anAtomicOnAMisalignedWordFailsOnlyThatCall() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        RemoteRegion shifted = TestWorker.region(memory, chunk, 4, 64);
        assertThatThrownBy(() -> e.fetchAdd(region, 4, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fetchAdd at offset 4 of the peer's region: the offset is not a multiple of 8");
        assertThatThrownBy(() -> e.compareAndSwap(shifted, 0, 0, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("chunk offset 4");
        assertThat(e.fetchAdd(region, 8, 5)).as("the endpoint still works").isZero();
        assertThat(e.fetchAdd(region, 8, 1)).isEqualTo(5);
        for (int i = 0; i < 10; i++) {
            a.transport.progress();
        }
        assertThat(a.failures).isEmpty();
        memory.free(chunk);
    }

    /**
     * A region whose handle places it off an 8-byte boundary of its chunk (no pool does: a handle made
     * otherwise, or altered) has no aligned word: an atomic on it must name the region's start, as the
     * shared-memory transports' do. The runtime lets through only offsets that are a multiple of 8
     * ({@code RuntimeEndpoint.checkWord}); until 2026-12-07 the refusal said "use an offset that makes
     * it a multiple of 8", asking the application for an offset that the runtime refuses: no offset it
     * may pass makes this word aligned.
     */
    @Test
    void anAtomicOnARegionThatStartsOffAnEightByteBoundaryNamesTheRegionsStartNotTheApplicationsOffset() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion shifted = TestWorker.region(memory, chunk, 4, 64);
        for (Throwable refused : List.of(catchThrowable(() -> e.fetchAdd(shifted, 8, 1)),
                catchThrowable(() -> e.compareAndSwap(shifted, 8, 0, 1)))) {
            assertThat(refused).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("chunk offset 4, as its handle says), off an 8-byte boundary")
                    .hasMessageContaining("have the peer export a region of a pool for atomics")
                    .as("a remedy the runtime allows: every offset it lets through is a multiple of 8, which leaves this word misaligned")
                    .hasMessageNotContaining("use an offset that makes it a multiple of 8");
        }
        memory.free(chunk);
    }

    @Test
    void bothEndsOfAWireupConnectionProbeASilentHostWithinTheirHeartbeatTimeout() throws Exception {
        TestWorker a = peer("verbs.heartbeat.timeout", "10s");
        TestWorker b = peer("verbs.heartbeat.timeout", "1m");
        VerbsEndpoint e = (VerbsEndpoint) connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        SocketChannel connector = e.wireupSocket();
        assertThat(connector.getOption(StandardSocketOptions.SO_KEEPALIVE)).isTrue();
        assertThat(connector.getOption(ExtendedSocketOptions.TCP_KEEPIDLE)).isEqualTo(4);
        assertThat(connector.getOption(ExtendedSocketOptions.TCP_KEEPINTERVAL)).isEqualTo(2);
        assertThat(connector.getOption(ExtendedSocketOptions.TCP_KEEPCOUNT)).isEqualTo(3);
        SocketChannel acceptor = b.transport.inbounds().getFirst().wireupSocket();
        assertThat(acceptor.getOption(StandardSocketOptions.SO_KEEPALIVE)).isTrue();
        assertThat(acceptor.getOption(ExtendedSocketOptions.TCP_KEEPIDLE)).isEqualTo(15);
        assertThat(acceptor.getOption(ExtendedSocketOptions.TCP_KEEPINTERVAL)).isEqualTo(15);
        assertThat(acceptor.getOption(ExtendedSocketOptions.TCP_KEEPCOUNT)).isEqualTo(3);
    }

    /**
     * await sleeps in poll for at most one liveness interval, which it turned into int milliseconds
     * by a cast: an interval past 24.8 days wrapped, to a negative timeout (poll sleeps without
     * end) or to 0 (2^32 ms: an await that never sleeps), and one of about 292 years overflowed
     * the rounding up, to 0. The poll's timeout is now that interval capped at the largest poll
     * takes.
     */
    @Test
    void awaitSleepsAtMostTheLargestPollTimeoutWhenTheLivenessIntervalIsLonger() {
        for (String interval : List.of("720h", "4294967296ms", Long.MAX_VALUE + "ns")) {
            List<Integer> timeouts = new ArrayList<>();
            dev.conduit.linux.Libc real = dev.conduit.linux.Linux.libc();
            dev.conduit.linux.Libc recording = (dev.conduit.linux.Libc) java.lang.reflect.Proxy.newProxyInstance(
                    dev.conduit.linux.Libc.class.getClassLoader(), new Class<?>[] {dev.conduit.linux.Libc.class}, (proxy, method, args) -> {
                        if (method.getName().equals("poll") && args.length == 4) {
                            timeouts.add((Integer) args[3]);
                            return 0; // as if the timeout passed: the test does not sleep it
                        }
                        try {
                            return method.invoke(real, args);
                        } catch (java.lang.reflect.InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
            VerbsDomain.Holder domains = new VerbsDomain.Holder(library -> verbs, VerbsDomain.SYSFS);
            dev.conduit.tck.TestContext context = dev.conduit.tck.TestContext.of("verbs.wireup.address", "127.0.0.1",
                    "verbs.liveness.interval", interval);
            VerbsDomain domain = domains.acquire(context.config(), context.logger());
            try (VerbsTransport transport = new VerbsTransport(domains, domain,
                    context.forTransport(dev.conduit.spi.ThreadMode.SINGLE, (id, hb, ho, hl, pb, po, pl) -> { }), recording)) {
                transport.await(Long.MAX_VALUE);
            }
            assertThat(timeouts).as("poll's timeout for a liveness interval of " + interval).containsExactly(Integer.MAX_VALUE);
        }
    }

    /**
     * An {@code Error} while a transport opens (out of memory for its wake-up eventfd here; "unable
     * to create native thread" from the wire-up thread's start alike) used to leave open what it had
     * opened: its completion channel and queues, its subscription to the device's events, the
     * listener, and the plugin's count of the device context, which was never closed.
     */
    @Test
    void anErrorWhileATransportOpensIsThrownAsItIsAndLeavesNothingOpenNorTheDeviceContext() {
        OutOfMemoryError error = new OutOfMemoryError("simulated: no memory left for the eventfd");
        dev.conduit.linux.Libc real = dev.conduit.linux.Linux.libc();
        dev.conduit.linux.Libc failing = (dev.conduit.linux.Libc) java.lang.reflect.Proxy.newProxyInstance(
                dev.conduit.linux.Libc.class.getClassLoader(), new Class<?>[] {dev.conduit.linux.Libc.class}, (proxy, method, args) -> {
                    if (method.getName().equals("eventfd")) {
                        throw error;
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        VerbsPlugin plugin = new VerbsPlugin(library -> verbs);
        dev.conduit.tck.TestContext context = dev.conduit.tck.TestContext.of("verbs.wireup.address", "127.0.0.1");

        assertThatThrownBy(() -> plugin.openTransport(context.forTransport(dev.conduit.spi.ThreadMode.SINGLE,
                (id, hb, ho, hl, pb, po, pl) -> { }), failing)).isSameAs(error);
        assertThat(verbs.openObjects()).as("protection domains, completion channel and queues left open").isZero();
        assertThat(verbs.contextsOpen()).as("device contexts left open").isZero();
    }

    /**
     * An endpoint's close waits up to verbs.wireup.timeout for its sends to complete, until a
     * deadline of now plus that timeout: one of about 292 years overflowed it to the past, and the
     * close tore the connection down at once, its sends in flight.
     */
    @Test
    void aCloseWaitsForSendsInFlightAlsoUnderTheLongestWireupTimeout() throws Exception {
        TestWorker a = peer("verbs.wireup.timeout", Long.MAX_VALUE + "ns");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        verbs.delayCompletions(a.transport.sendQueue);
        send(e, 1, MemorySegment.NULL, bytes("in flight"), a);
        java.util.concurrent.atomic.AtomicBoolean completing = new java.util.concurrent.atomic.AtomicBoolean();
        Thread late = Thread.ofPlatform().name("send-completes").start(() -> {
            java.util.concurrent.locks.LockSupport.parkNanos(200_000_000L);
            completing.set(true); // before the completion exists: a close that waits for it returns after this
            verbs.completeDelayed();
        });
        e.close();
        boolean waited = completing.get();
        late.join();
        assertThat(waited).as("the close waited for the send's completion").isTrue();
        progressUntil(() -> b.received.size() == 1, b);
    }

    /**
     * {@code Conduit.close()} closes a worker from its own thread while the worker's user is still
     * inside a call (docs/runtime.md, "Closing"): here a progress held inside its poll of the send
     * queue, the completion of the first endpoint's SEND taken. Until 2026-12-07 the close's drain
     * polled the same queue meanwhile, into the same completion arrays: it handled the second
     * endpoint's completion, which the held poll then handled again, overflowing that endpoint's
     * free send buffers (a bare {@code ArrayIndexOutOfBoundsException} out of the user's call). The
     * close polls nothing the call holds: no completion is handled twice, and the close names both
     * connections, whose SENDs it did not wait for.
     */
    @Test
    void aWorkerClosedFromAnotherThreadWhileItsUserPollsTheSendQueuePollsNothingAndHandlesNoCompletionTwice() throws Exception {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint first = connected(a.connect(b), a, b);
        TransportEndpoint second = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 2, a, b);
        assertThat(first.trySend(1, MemorySegment.NULL, bytes("first"))).isTrue();
        verbs.delayCompletions(a.transport.sendQueue);
        assertThat(second.trySend(2, MemorySegment.NULL, bytes("second"))).isTrue();
        verbs.holdNextPoll(a.transport.sendQueue);
        AtomicReference<Throwable> callFailed = new AtomicReference<>();
        // takes the first endpoint's completion, and stays inside the poll
        Thread user = catching("worker-user", a.transport::progress, callFailed);
        user.start();
        Throwable thrown;
        try {
            awaitOrFail(verbs::pollHeld, "the user's poll held inside the library");
            verbs.completeDelayed(); // the second endpoint's completion reaches the queue meanwhile
            thrown = catchThrowable(a.transport::close);
        } finally {
            verbs.releaseHeldPoll();
            user.join(60_000);
        }

        assertThat(callFailed.get()).as("the user's progress: returned, or failed on what the close released")
                .satisfiesAnyOf(t -> assertThat(t).isNull(), t -> assertThat(t).isInstanceOf(IllegalStateException.class));
        assertThat(verbs.overlappingPolls()).as("polls of the send queue while the user's was under way").isZero();
        assertThat(thrown).isInstanceOf(ConduitException.class).hasMessageContaining("without waiting for its work requests in flight");
        assertThat(thrown.getSuppressed()).as("the other connection's, suppressed into the first's").singleElement()
                .satisfies(t -> assertThat(t).hasMessageContaining("without waiting for its work requests in flight"));
    }

    /**
     * A forced close that finds the send queue held by the user's call closes the worker at once,
     * without polling it (the completions are the call's), and names each connection whose work
     * requests it did not wait for: its messages may not have reached the peer, which the close
     * says rather than tearing them down silently. The runtime waited for the call before closing
     * under it, and that wait is the one bound: until 2026-12-08 the close waited again, up to
     * {@code verbs.wireup.timeout} (here an hour, past the hang guard), for each worker in turn.
     */
    @Test
    void aWorkerClosedUnderACallThatHoldsTheSendQueueWaitsForItNoLongerPollsNothingAndNamesTheSendsItDidNotWaitFor() throws Exception {
        TestWorker a = peer("verbs.wireup.timeout", "1h");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        assertThat(e.trySend(1, MemorySegment.NULL, bytes("in flight"))).isTrue();
        verbs.holdNextPoll(a.transport.sendQueue);
        AtomicReference<Throwable> callFailed = new AtomicReference<>();
        // takes the SEND's completion, and stays inside the poll until the close is done
        Thread user = catching("worker-user", a.transport::progress, callFailed);
        user.start();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = catching("conduit-close", a.transport::close, closeFailed);
        try {
            awaitOrFail(verbs::pollHeld, "the user's poll held inside the library");
            closer.start();
            awaitOrFail(() -> !closer.isAlive(), "the close, while the user's call still holds the send queue");
            assertThat(verbs.pollHeld()).as("the user's poll, held until the close returned").isTrue();
        } finally {
            verbs.releaseHeldPoll();
            user.join(60_000);
            closer.join(60_000);
        }

        assertThat(closeFailed.get()).isInstanceOf(ConduitException.class).hasMessageContaining("closed the connection to 127.0.0.1:")
                .hasMessageContaining("without waiting for its work requests in flight (1 of its send buffers taken)")
                .hasMessageContaining("Conduit.close() does once its wait for the call ran out");
        assertThat(verbs.overlappingPolls()).as("polls of the send queue while the user's was under way").isZero();
        assertThat(callFailed.get()).as("the user's progress: returned, or failed on what the close released")
                .satisfiesAnyOf(t -> assertThat(t).isNull(), t -> assertThat(t).isInstanceOf(IllegalStateException.class));
    }

    /**
     * The user closes an endpoint, whose close waits for its SEND in flight, and Conduit.close()
     * past its wait closes the worker from another thread meanwhile. The worker's close skipped the
     * endpoint (its state said closed) and destroyed the completion queues under its queue pair:
     * the bare EBUSY of ibv_destroy_cq, and the queues, the channel and the protection domain left
     * on the device. Now the endpoint is torn down once, by the worker's close, before the queues;
     * the worker's close names the connection whose sends it did not wait for, and the endpoint's
     * close says the transport was closed under it.
     */
    @Test
    void anEndpointItsUserClosesWhileTheWorkerIsClosedFromAnotherThreadIsTornDownOnceBeforeTheQueuesItIsOn() throws Exception {
        TestWorker a = peer("verbs.wireup.timeout", "1h");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        assertThat(e.trySend(1, MemorySegment.NULL, bytes("in flight"))).isTrue();
        verbs.holdNextPoll(a.transport.sendQueue);
        AtomicReference<Throwable> endpointCloseFailed = new AtomicReference<>();
        // drains its SEND: takes its completion, and stays inside the poll until the worker's close is done
        Thread user = catching("worker-user", e::close, endpointCloseFailed);
        user.start();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = catching("conduit-close", a.transport::close, closeFailed);
        try {
            awaitOrFail(verbs::pollHeld, "the endpoint close's poll held inside the library");
            closer.start();
            awaitOrFail(() -> !closer.isAlive(), "the worker's close, while the endpoint's close drains");
        } finally {
            verbs.releaseHeldPoll();
            user.join(60_000);
            closer.join(60_000);
        }

        assertThat(closeFailed.get()).as("the worker's close").isInstanceOf(ConduitException.class)
                .hasMessageContaining("closed the connection to 127.0.0.1:")
                .hasMessageContaining("without waiting for its work requests in flight (1 of its send buffers taken)");
        assertThat(closeFailed.get().getSuppressed()).as("what else the worker's close met").isEmpty();
        assertThat(endpointCloseFailed.get()).as("the endpoint's close, whose drain the worker's close cut short")
                .isInstanceOf(IllegalStateException.class).hasMessage("verbs transport is closed");
        assertThat(verbs.openOf("qp ")).as("queue pairs left: the connector's, torn down once").isEqualTo(1); // b's inbound
        assertThat(verbs.contextsOpen()).as("device contexts: b's only").isEqualTo(1);
    }

    /**
     * A connection whose queue pair the device refused to destroy is kept, and retried at each
     * liveness look and in the worker's close. Conduit.close() past its wait closes the worker from
     * another thread while await's liveness look retries it: the close retried it too, found
     * nothing held (the look had taken it), freed its memory while the look's ibv_destroy_qp was
     * still under way, and destroyed the completion queues under that queue pair (the bare EBUSY
     * of ibv_destroy_cq, the queues, channel and protection domain left). Now the close waits for
     * the look's retry, which tears it down once, and the look then says the transport is closed.
     */
    @Test
    void aCloseFromAnotherThreadWhileAwaitsLivenessLookRetriesAKeptTeardownRetriesItNoSecondTimeAndLeavesNothing() throws Exception {
        TestWorker a = peer("verbs.liveness.interval", "1ms");
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY);
        assertThatThrownBy(e::close).isInstanceOf(ConduitException.class).hasMessageContaining("EBUSY");
        assertThat(a.transport.keptTeardowns()).as("the connection's teardown, kept").isEqualTo(1);
        verbs.holdNextDestroy();
        AtomicReference<Throwable> awaitFailed = new AtomicReference<>();
        // its liveness look retries the kept teardown, and stays inside ibv_destroy_qp
        Thread user = catching("worker-user", () -> a.transport.await(60_000_000_000L), awaitFailed);
        user.start();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = catching("conduit-close", a.transport::close, closeFailed);
        try {
            awaitOrFail(verbs::destroyHeld, "the liveness look's retry held inside ibv_destroy_qp");
            closer.start();
            awaitOrFail(() -> !closer.isAlive() || closer.getState() == Thread.State.BLOCKED,
                    "the close, or its wait for the liveness look");
        } finally {
            verbs.releaseHeldDestroy();
            user.join(60_000);
            closer.join(60_000);
        }

        assertThat(closeFailed.get()).as("the close").isNull();
        assertThat(awaitFailed.get()).as("await, whose look found the transport closed under it").isInstanceOf(IllegalStateException.class)
                .hasMessage("verbs transport is closed");
        assertThat(a.transport.keptTeardowns()).as("teardowns still kept").isZero();
        assertThat(verbs.openOf("qp ")).as("queue pairs left: b's inbound").isEqualTo(1);
    }

    /**
     * await's liveness look delivers the last messages of a connector that left, then retires its
     * connection; Conduit.close() past its wait closes the worker from another thread meanwhile,
     * and both closed that connection: the second close of its memory threw the JDK's bare
     * "Already closed" out of await, naming neither the close nor the connection. Now the
     * connection is closed once, by whichever comes first, and the look that finds the worker
     * closed under it fails as every call on a closed transport does.
     */
    @Test
    void aCloseFromAnotherThreadDuringAwaitsLivenessLookClosesTheDepartedPeersConnectionOnceAndTheLookSaysTheTransportIsClosed()
            throws Exception {
        TestWorker a = peer();
        TestWorker b = peer("verbs.liveness.interval", "1ms");
        TransportEndpoint e = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        Inbound in = b.transport.inbounds().getFirst();
        e.close();
        awaitOrFail(in::peerGone, "the end of stream of the connector's wire-up connection");
        // The first poll is await's look after arming the queue; the second, the liveness look's, for the departed peer.
        verbs.holdPollAfter(b.transport.receiveQueue, 1);
        AtomicReference<Throwable> awaitFailed = new AtomicReference<>();
        Thread user = catching("worker-user", () -> b.transport.await(60_000_000_000L), awaitFailed);
        user.start();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = catching("conduit-close", b.transport::close, closeFailed);
        try {
            awaitOrFail(verbs::pollHeld, "the liveness look's poll held inside the library");
            closer.start();
            awaitOrFail(() -> !closer.isAlive(), "the close, while await's liveness look is under way");
        } finally {
            verbs.releaseHeldPoll();
            user.join(60_000);
            closer.join(60_000);
        }

        assertThat(closeFailed.get()).as("the close").isNull();
        assertThat(awaitFailed.get()).as("await, whose look found the transport closed under it").isInstanceOf(IllegalStateException.class)
                .hasMessage("verbs transport is closed");
        assertThat(b.sendersClosed).as("senders retired: the close retires none").isEmpty();
        assertThat(b.transport.inboundSlotsTaken()).as("inbound slots taken").isZero();
    }

    /**
     * The runtime wakes a worker asleep in await and closes it from another thread without waiting
     * for the sleep to end (Conduit.close() past its wait). The close closed the wake-up eventfd
     * while await, back from its poll, had still to read it: the read found the descriptor closed
     * at best, and at worst, its number given meanwhile to another file of the process, read 8
     * bytes of that file's data (or blocked on it for ever). The close now wakes a sleep under way
     * and waits for it to leave before it closes the descriptors the sleep uses.
     */
    @Test
    void aCloseFromAnotherThreadWaitsForAnAwaitBackFromItsPollBeforeItClosesTheDescriptorsItReads() throws Exception {
        java.util.concurrent.CountDownLatch pollReturned = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicInteger wakes = new java.util.concurrent.atomic.AtomicInteger();
        List<Boolean> readOpen = java.util.Collections.synchronizedList(new ArrayList<>());
        dev.conduit.linux.Libc real = dev.conduit.linux.Linux.libc();
        dev.conduit.linux.Libc holding = (dev.conduit.linux.Libc) java.lang.reflect.Proxy.newProxyInstance(
                dev.conduit.linux.Libc.class.getClassLoader(), new Class<?>[] {dev.conduit.linux.Libc.class}, (proxy, method, args) -> {
                    if (method.getName().equals("eventfdRead")) {
                        readOpen.add(((dev.conduit.linux.FileDescriptor) args[0]).isOpen());
                    }
                    if (method.getName().equals("eventfdWrite")) {
                        wakes.incrementAndGet();
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    } finally {
                        if (method.getName().equals("poll") && args.length == 4 && pollReturned.getCount() > 0) {
                            pollReturned.countDown(); // back from the poll, the wake-up eventfd readable: held before reading it
                            release.await();
                        }
                    }
                });
        VerbsDomain.Holder domains = new VerbsDomain.Holder(library -> verbs, VerbsDomain.SYSFS);
        dev.conduit.tck.TestContext context = dev.conduit.tck.TestContext.of("verbs.wireup.address", "127.0.0.1");
        VerbsDomain domain = domains.acquire(context.config(), context.logger());
        VerbsTransport transport = new VerbsTransport(domains, domain,
                context.forTransport(dev.conduit.spi.ThreadMode.SINGLE, (id, hb, ho, hl, pb, po, pl) -> { }), holding);
        transport.signal(); // as the runtime wakes the sleeper before it closes the worker
        AtomicReference<Object> awaited = new AtomicReference<>();
        Thread user = Thread.ofPlatform().name("worker-user").start(() -> {
            try {
                awaited.set(transport.await(60_000_000_000L));
            } catch (Throwable t) {
                awaited.set(t);
            }
        });
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = catching("conduit-close", transport::close, closeFailed);
        try {
            assertThat(pollReturned.await(60, java.util.concurrent.TimeUnit.SECONDS)).as("await's poll returned").isTrue();
            closer.start();
            // Closed by now, or waiting for the sleep, which its own wake (a second write) tells.
            awaitOrFail(() -> !closer.isAlive() || wakes.get() > 1, "the close, or its wake of the sleep under way");
        } finally {
            release.countDown();
            user.join(60_000);
            closer.join(60_000);
        }

        assertThat(readOpen).as("whether the wake-up eventfd was open when await read it").containsExactly(true);
        assertThat(awaited.get()).as("await, woken").isEqualTo(true);
        assertThat(closeFailed.get()).as("the close").isNull();
        assertThat(verbs.openObjects()).as("queues and channel left open").isZero();
    }

    /**
     * A connect creates its queue pair on the worker's completion queues and then connects to the
     * peer's wire-up listener, which takes up to {@code verbs.wireup.timeout} for a peer that does
     * not answer: longer than Conduit.close()'s one-second wait for the call, which then closes the
     * worker from another thread. The close did not know the connect: it destroyed the queues under
     * its queue pair (the bare EBUSY of ibv_destroy_cq; the queues, the channel and the protection
     * domain left on the device for good) while the connect waited on. Now the close ends the
     * connect's wait by closing its socket and lets it tear its queue pair down before the queues,
     * and the connect says the transport was closed under it.
     */
    @Test
    void aCloseFromAnotherThreadWhileAConnectWaitsForThePeersListenerEndsTheConnectAndLeavesNothing() throws Exception {
        TestWorker a = peer("verbs.wireup.timeout", "30s");
        // A listener whose accept queue is full and that accepts nothing: a SYN to it is dropped, the connect waits for it.
        java.nio.channels.ServerSocketChannel silent = java.nio.channels.ServerSocketChannel.open()
                .bind(new InetSocketAddress("127.0.0.1", 0), 1);
        closing.add(silent);
        InetSocketAddress listener = (InetSocketAddress) silent.getLocalAddress();
        for (int i = 0; i < 2; i++) {
            closing.add(SocketChannel.open(listener)); // Linux queues backlog + 1 connections
        }
        byte[] own = a.transport.address();
        WireFormat.Address self = WireFormat.Address.decode(new PayloadReader(own, 0, own.length, "address.verbs."));
        byte[] peer = new WireFormat.Address(self.token(), self.context(), self.port(), self.linkLayer(), self.lid(), self.gid(),
                self.mtu(), self.receiveBuffers(), self.bufferSize(), self.responderDepth(), self.remoteAtomics(), "127.0.0.1",
                listener.getPort()).encode();
        AtomicReference<Throwable> connectFailed = new AtomicReference<>();
        Thread user = catching("worker-user", () -> a.transport.connect(new PayloadReader(peer, 0, peer.length, "address.verbs."),
                a.failures::add), connectFailed);
        user.start();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = catching("conduit-close", a.transport::close, closeFailed);
        try {
            awaitOrFail(() -> inSocketConnect(user), "the connect inside its TCP connect to the silent listener");
            assertThat(verbs.openOf("qp ")).as("the connect's queue pair, created before its TCP connect").isEqualTo(1);
            closer.start();
            awaitOrFail(() -> !closer.isAlive() && !user.isAlive(), "the close, and the connect it cut short");
        } finally {
            closer.join(60_000);
            user.join(60_000);
        }

        assertThat(closeFailed.get()).as("the worker's close").isNull();
        assertThat(connectFailed.get()).as("the connect, whose wait the close ended").isInstanceOf(IllegalStateException.class)
                .hasMessage("verbs transport is closed");
        assertThat(verbs.openObjects()).as("queue pairs, regions, queues, channels and protection domains left on the device").isZero();
        assertThat(verbs.contextsOpen()).as("device contexts left open").isZero();
    }

    /** Whether {@code thread} is inside the socket connect that {@link VerbsEndpoint#connect} makes to the peer's listener. */
    private static boolean inSocketConnect(Thread thread) {
        StackTraceElement[] stack = thread.getStackTrace();
        for (int i = 1; i < stack.length; i++) {
            if (stack[i].getClassName().equals(VerbsEndpoint.class.getName()) && stack[i].getMethodName().equals("connect")) {
                return stack[i - 1].getMethodName().equals("connect") && !stack[i - 1].getClassName().startsWith("dev.conduit.");
            }
        }
        return false;
    }

    /** A thread named {@code name}, not started, that runs {@code call} and keeps what it throws in {@code failed}. */
    private static Thread catching(String name, org.assertj.core.api.ThrowableAssert.ThrowingCallable call, AtomicReference<Throwable> failed) {
        return Thread.ofPlatform().name(name).unstarted(() -> failed.set(catchThrowable(call)));
    }

    /** Waits until {@code condition} holds; fails after a minute (a hang guard, not a measure). */
    private static void awaitOrFail(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("waited a minute for " + what);
            }
            Thread.sleep(1);
        }
    }

    @Test
    void recordHeadersAndTheCreditWordAreLittleEndian() {
        // On a little-endian host this holds with native order too: it pins the format for a big-endian one.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(64, 8);
            Records.write(buffer, 0, Records.FIRST, 0x01020304, 5, 6, 0x0A0B0C0D0E0F1011L);
            assertThat(buffer.asSlice(0, 24).toArray(ValueLayout.JAVA_BYTE)).containsExactly(
                    1, 0, 0, 0, 4, 3, 2, 1, 5, 0, 0, 0, 6, 0, 0, 0, 0x11, 0x10, 0x0F, 0x0E, 0x0D, 0x0C, 0x0B, 0x0A);
            buffer.set(ValueLayout.JAVA_BYTE, 32, (byte) 7);
            buffer.set(ValueLayout.JAVA_BYTE, 33, (byte) 1);
            assertThat(VerbsTransport.readLong(buffer, 32)).isEqualTo(0x107);
        }
    }
}
