package dev.conduit.plugin.memfd;

import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shared-memory transport over memfd chunks, two workers in one JVM: the peer's queue and
 * bounce rings arrive as sealed memfds over the fd server, exactly as in another process.
 */
class MemfdTransportTest {

    @TempDir(cleanup = org.junit.jupiter.api.io.CleanupMode.ALWAYS)
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    private Transport transport(MessageSink sink, Map<String, String> config) {
        Transport t = new MemfdPlugin().openTransport(TestContext.of(shared, config).forTransport(ThreadMode.SINGLE, sink));
        open.add(t);
        return t;
    }

    @Test
    void carriesSmallAndLargeMessagesInOrder() {
        List<Long> received = new ArrayList<>();
        Transport receiver = transport((id, hb, ho, hl, pb, po, pl) -> {
            received.add(pl == 0 ? -1 : pb.get(ValueLayout.JAVA_LONG_UNALIGNED, po + pl - 8));
            assertThat((long) id).isEqualTo(received.size() - 1);
        }, Map.of("memfd.queue.size", "64k", "memfd.bounce.size", "1m"));
        Transport sender = transport((id, hb, ho, hl, pb, po, pl) -> { }, Map.of());
        TransportEndpoint ep = sender.connect(new PayloadReader(receiver.address()), cause -> { });
        int[] sizes = {8, 4096, 20_000, 1 << 20};
        for (int i = 0; i < 200; i++) {
            MemorySegment payload = Arena.ofAuto().allocate(sizes[i % sizes.length]);
            payload.set(ValueLayout.JAVA_LONG_UNALIGNED, payload.byteSize() - 8, i);
            while (!ep.trySend(i, MemorySegment.NULL, payload)) receiver.progress();
        }
        while (received.size() < 200) receiver.progress();
        for (int i = 0; i < 200; i++) assertThat(received.get(i)).isEqualTo(i);
    }

    /** The importer refuses a memfd without F_SEAL_SHRINK|F_SEAL_GROW, so mapping a peer's queue proves it sealed. */
    @Test
    void theQueueAPeerMapsIsSealedAgainstResizing() {
        Transport receiver = transport((id, hb, ho, hl, pb, po, pl) -> { }, Map.of());
        MemfdImporter importer = (MemfdImporter) new MemfdPlugin().ipcImporter(TestContext.of(shared));
        PayloadReader address = new PayloadReader(receiver.address());
        address.u8("version");
        address.relativePath("lease");
        byte[] export = address.bytes("queue", address.u16("queue.length"));
        long length = address.u64("queue.chunk.length");
        try (var mapping = importer.map(new PayloadReader(export), length)) {
            assertThat(mapping.segment().byteSize()).isEqualTo(length);
        }
    }

    /** Records each message's id and sender key, and the senders told closed. */
    private static final class Senders implements MessageSink {
        final List<Integer> ids = new ArrayList<>();
        final List<Long> keys = new ArrayList<>();
        final List<Long> closed = new ArrayList<>();

        @Override
        public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                              MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
            throw new AssertionError("message " + id + " delivered without its sender's key");
        }

        @Override
        public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                              MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
            ids.add(id);
            keys.add(sender);
        }

        @Override
        public void onSenderClosed(long sender) {
            closed.add(sender);
        }
    }

    /**
     * Over memfd, where an address names the worker's fd server: a message's sender key gives the
     * sender's own transport address, exactly; the receiver connects to it (the queue comes from
     * the sender's fd server) and its answer, small and large, reaches the sender; the sender's
     * worker closing is told once, and the key has no address from then on.
     */
    @Test
    void theReceiverAnswersThroughTheAddressTheSenderAnnouncedAndItsCloseIsToldOnce() {
        Senders atReceiver = new Senders();
        Transport receiver = transport(atReceiver, Map.of("memfd.queue.size", "64k"));
        Senders atSender = new Senders();
        Transport sender = transport(atSender, Map.of("memfd.queue.size", "64k"));
        TransportEndpoint request = sender.connect(new PayloadReader(receiver.address()), cause -> { });
        assertThat(request.trySend(1, MemorySegment.NULL, Arena.ofAuto().allocate(8))).isTrue();
        assertThat(request.trySend(2, MemorySegment.NULL, Arena.ofAuto().allocate(100_000))).isTrue();
        for (int i = 0; i < 1_000_000 && atReceiver.ids.size() < 2; i++) receiver.progress();
        assertThat(atReceiver.ids).containsExactly(1, 2);
        long key = atReceiver.keys.getFirst();
        assertThat(atReceiver.keys).containsExactly(key, key);
        assertThat(receiver.senderAddress(key)).isEqualTo(sender.address());

        TransportEndpoint reply = receiver.connect(new PayloadReader(receiver.senderAddress(key)), cause -> { });
        assertThat(reply.trySend(3, MemorySegment.NULL, Arena.ofAuto().allocate(8))).isTrue();
        assertThat(reply.trySend(4, MemorySegment.NULL, Arena.ofAuto().allocate(100_000))).isTrue();
        for (int i = 0; i < 1_000_000 && atSender.ids.size() < 2; i++) sender.progress();
        assertThat(atSender.ids).containsExactly(3, 4);
        assertThat(sender.senderAddress(atSender.keys.getFirst())).isEqualTo(receiver.address());

        reply.close();
        sender.close();
        for (int i = 0; i < 1_000_000 && atReceiver.closed.isEmpty(); i++) receiver.progress();
        assertThat(atReceiver.closed).containsExactly(key);
        assertThat(receiver.senderAddress(key)).isNull();
    }

    @Test
    void aPeerThatGoesAwayFailsTheEndpointAndLeavesNoFiles() throws Exception {
        Transport receiver = transport((id, hb, ho, hl, pb, po, pl) -> { }, Map.of("memfd.liveness.interval", "1ms"));
        Transport sender = transport((id, hb, ho, hl, pb, po, pl) -> { }, Map.of("memfd.liveness.interval", "1ms"));
        AtomicReference<PeerFailedException> failure = new AtomicReference<>();
        TransportEndpoint ep = sender.connect(new PayloadReader(receiver.address()), failure::set);
        assertThat(ep.trySend(1, MemorySegment.NULL, Arena.ofAuto().allocate(8))).isTrue();
        receiver.close();
        while (failure.get() == null) sender.progress();
        assertThat(failure.get()).hasMessageContaining("memfd: peer worker closed (an orderly close");
        assertThat(failure.get().reason()).isEqualTo(PeerFailedException.Reason.CLOSED);
        ep.close();
        sender.close();
        try (var files = Files.list(shared)) {
            assertThat(files.toList()).isEmpty();
        }
    }
    /**
     * A connection's bounce ring that gets no descriptor ({@code memfd_create}: {@code EMFILE})
     * names the open-file limit as the remedy, and not {@code pool.chunk.size}, which sizes the
     * pool's chunks and nothing of the transport's (until 2026-12-07 the ring's failure told to
     * raise it); the endpoint stays usable, and the large message goes once a descriptor is had.
     */
    @Test
    void aBounceRingThatGetsNoDescriptorNamesTheOpenFileLimitNotThePoolsChunkSize() {
        List<Long> received = new ArrayList<>();
        Transport receiver = transport((id, hb, ho, hl, pb, po, pl) -> received.add(pl), Map.of("memfd.queue.size", "64k"));
        java.util.concurrent.atomic.AtomicBoolean outOfDescriptors = new java.util.concurrent.atomic.AtomicBoolean();
        dev.conduit.linux.Libc libc = FailingLibc.failing(dev.conduit.linux.Errno.EMFILE,
                (call, args) -> call.equals("memfdCreate") && outOfDescriptors.get());
        dev.conduit.spi.TransportContext context = TestContext.of(shared, Map.of("memfd.bounce.size", "64k"))
                .forTransport(ThreadMode.SINGLE, (id, hb, ho, hl, pb, po, pl) -> { });
        Transport sender = new dev.conduit.shm.ShmTransport("memfd", libc, context,
                dev.conduit.shm.ShmTransportConfig.read(context.config(), "memfd"),
                MemfdProvider.openForTransport(libc, context), new MemfdPlugin().ipcImporter(context));
        open.add(sender);
        TransportEndpoint ep = sender.connect(new PayloadReader(receiver.address()), cause -> { });
        MemorySegment large = Arena.ofAuto().allocate(20_000);
        outOfDescriptors.set(true);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ep.trySend(1, MemorySegment.NULL, large))
                .isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("bounce ring").hasMessageContaining("EMFILE").hasMessageContaining("ulimit -n")
                .hasMessageNotContaining("pool.chunk.size");
        outOfDescriptors.set(false);
        while (!ep.trySend(1, MemorySegment.NULL, large)) receiver.progress();
        while (received.isEmpty()) receiver.progress();
        assertThat(received).containsExactly(20_000L);
    }
}
