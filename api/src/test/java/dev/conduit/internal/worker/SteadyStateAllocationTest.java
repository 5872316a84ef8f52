package dev.conduit.internal.worker;

import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.spi.Version;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.EnumSet;
import java.util.Set;

import static dev.conduit.internal.ThreadAllocation.allocatedBytes;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runtime's part of sending and delivering allocates nothing per message in steady state
 * (DESIGN §7): over a transport that allocates nothing itself (a ring of 8 slots in one segment,
 * self-connected), sending, delivering and copying into the local queue allocate less than a byte
 * per message on this thread, and so does handing queued messages to it. Counts bytes
 * (com.sun.management.ThreadMXBean), never time.
 */
class SteadyStateAllocationTest {

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    private Worker worker;
    private Endpoint self;
    private final long[] sum = new long[1];
    private final MemorySegment header = MemorySegment.ofArray(new byte[4]);
    private final MemorySegment payload = Arena.ofAuto().allocate(64);

    private final RingPlugin plugin = new RingPlugin();
    private Ring ring;

    private void open() {
        worker = loopbacks.conduit(plugin).newWorker(ThreadMode.SINGLE);
        ring = plugin.opened;
        self = worker.connect(worker.address());
        worker.onMessage(5, m -> sum[0] += m.payloadLong(0) + m.headerInt(0));
    }

    private void send(long i) {
        payload.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, i);
        self.send(5, header, payload);
    }

    /**
     * Sends and delivers {@code messages} messages three times (two warm-up rounds), checks that
     * the handler saw every one, and returns what the last round allocated.
     */
    private long allocatedSendingAndDelivering(int messages) {
        long expected = 0;
        long allocated = 0;
        for (int round = 0; round < 3; round++) {
            long before = allocatedBytes();
            for (int i = 0; i < messages; i++) {
                send(i);
                expected += i;
                if ((i & 7) == 7) worker.progress(); // the ring holds 8: nothing waits locally
            }
            worker.progress();
            allocated = allocatedBytes() - before;
        }
        assertThat(sum[0]).isEqualTo(expected);
        return allocated;
    }

    @Test
    void sendingAndDeliveringAllocateNothingPerMessage() {
        open();
        int messages = 1_000_000;
        assertThat(allocatedSendingAndDelivering(messages)).as("bytes allocated for %d messages", messages).isLessThan(messages);
    }

    /** A decoder that keeps the buffer it is pointed at, as flyweight decoders (SBE's, say) do. */
    private static final class Decoder {
        private MemorySegment buffer;
        private long offset;

        void wrap(MemorySegment buffer, long offset) {
            this.buffer = buffer;
            this.offset = offset;
        }

        long value() {
            return buffer.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
        }
    }

    /**
     * The transport delivers from writable memory: the payload's read-only buffer is made once for
     * it, not per message. A decoder keeps it, so a view made per message would be allocated.
     */
    @Test
    void readingThroughThePayloadBufferAllocatesNothingPerMessage() {
        open();
        Decoder decoder = new Decoder();
        worker.onMessage(5, m -> {
            decoder.wrap(m.payloadBuffer(), m.payloadOffset());
            sum[0] += decoder.value();
        });
        int messages = 1_000_000;
        assertThat(allocatedSendingAndDelivering(messages)).as("bytes allocated for %d messages read through payloadBuffer()", messages)
                .isLessThan(messages);
    }

    @Test
    void queuingLocallyAllocatesNothingOnceTheQueueHasGrown() {
        open();
        int queued = 10_000;
        long allocated = 0;
        for (int round = 0; round < 20; round++) { // warm-up rounds grow the queue once, then it is reused
            for (int i = 0; i < 8; i++) send(i); // the ring is full
            long before = allocatedBytes();
            for (int i = 0; i < queued; i++) send(i);
            allocated = allocatedBytes() - before;
            assertThat(self.pending()).isEqualTo(queued);
            while (self.pending() > 0) worker.progress();
            worker.progress();
        }
        assertThat(allocated).as("bytes allocated to queue %d messages", queued).isLessThan(queued);
    }

    /**
     * The local queues of a worker's endpoints share the segments kept for reuse: a backlog on
     * another endpoint, once the first's drained, takes the segments the first kept and allocates
     * nothing. Each endpoint kept up to 4 MiB of its own, so a publisher with an endpoint per
     * subscriber held that much heap per subscriber once their backlogs drained (215 MB for 64).
     */
    @Test
    void aBacklogOnAnotherEndpointOfTheWorkerTakesTheSegmentsTheFirstKept() {
        open();
        int queued = 10_000;
        for (int round = 0; round < 3; round++) { // the first endpoint's queue grows once; its segments are kept once drained
            for (int i = 0; i < 8 + queued; i++) send(i);
            while (self.pending() > 0) worker.progress();
            worker.progress();
        }
        Endpoint other = worker.connect(worker.address());
        for (int i = 0; i < 8; i++) other.send(5, header, payload); // the ring is full
        long before = allocatedBytes();
        for (int i = 0; i < queued; i++) other.send(5, header, payload);
        long allocated = allocatedBytes() - before;
        assertThat(other.pending()).isEqualTo(queued);
        while (other.pending() > 0) worker.progress();
        assertThat(allocated).as("bytes allocated to queue %d messages on a second endpoint", queued).isLessThan(queued);
    }

    @Test
    void sendingFromTheLocalQueueAllocatesNothingPerMessage() {
        open();
        int queued = 10_000;
        long allocated = 0;
        for (int round = 0; round < 20; round++) { // warm-up rounds grow the queue once and compile the drain
            for (int i = 0; i < 8; i++) send(i); // the ring is full
            for (int i = 0; i < queued; i++) send(i);
            long before = allocatedBytes();
            while (self.pending() > 0) worker.progress(); // 8 at a time: delivered, then 8 more taken from the queue
            allocated = allocatedBytes() - before;
            worker.progress();
        }
        assertThat(allocated).as("bytes allocated to send and deliver %d queued messages", queued).isLessThan(queued);
    }

    /**
     * A zero-copy send of a small payload writes into the endpoint's buffer through a view kept per
     * length, and is not offered to the transport's {@code trySendEncoded}: with three encoder
     * classes taking turns, a call site the JIT does not inline, the target views it used to make for
     * every send were allocated. Lengths 16 and 32 take turns too (they shared a slot of an earlier
     * cache of 16 views).
     */
    @Test
    void zeroCopySendsOfSmallPayloadsAllocateNothingWhateverTheEncoders() {
        open();
        PayloadEncoder[] encoders = {
                target -> { target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 1L); return 8; },
                target -> { target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 2L); return 8; },
                target -> { target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 3L); return 8; }};
        int messages = 30_000;
        long sentAllocated = 0;
        long expected = 0;
        for (int round = 0; round < 20; round++) {
            long before = allocatedBytes();
            for (int i = 0; i < messages; i++) {
                self.send(5, header, 16 << (i & 1), encoders[i % 3]); // the ring holds 8: most wait in the local queue
                expected += i % 3 + 1;
            }
            sentAllocated = allocatedBytes() - before;
            while (self.pending() > 0) worker.progress();
            worker.progress();
        }
        assertThat(sum[0]).isEqualTo(expected);
        assertThat(sentAllocated).as("bytes allocated for %d zero-copy sends", messages).isLessThan(messages);
        assertThat(ring.encodedSends).as("payloads of at most 1 KiB offered to trySendEncoded").isZero();
    }

    /** Three classes (a lambda is one), so the JIT inlines none of them where they meet. */
    private static final PayloadEncoder[] RANGED = {
            (PayloadEncoder.Ranged) (memory, offset, maxLength) -> { memory.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, 1L); return 8; },
            (PayloadEncoder.Ranged) (memory, offset, maxLength) -> { memory.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, 2L); return 8; },
            (PayloadEncoder.Ranged) (memory, offset, maxLength) -> { memory.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, 3L); return 8; }};

    /**
     * A zero-copy send above 1 KiB that the transport has no room for is encoded into the
     * endpoint's buffer through the encoder's ranged call, and copied into the local queue: before,
     * the encoder wrote into the local queue through a view made per send (and a ranged call there
     * would have let a stray write reach the queue's records, which nothing checks).
     */
    @Test
    void zeroCopySendsAboveOneKibQueuedLocallyAllocateNothingWithEncodersThatWriteInPlace() {
        open();
        PayloadEncoder[] encoders = RANGED;
        int messages = 10_000;
        long sentAllocated = 0;
        long expected = 0;
        for (int round = 0; round < 20; round++) { // warm-up rounds grow the queue once, then it is reused
            long before = allocatedBytes();
            for (int i = 0; i < messages; i++) {
                self.send(5, header, (i & 1) == 0 ? 2048 : 1500, encoders[i % 3]);
                expected += i % 3 + 1;
            }
            sentAllocated = allocatedBytes() - before;
            while (self.pending() > 0) worker.progress();
            worker.progress();
        }
        assertThat(sum[0]).isEqualTo(expected);
        // Per round: each send is offered to trySendEncoded (no room) until one waits locally: 8 fit the ring through the
        // copying send, the 9th is queued, and the rest go straight behind it.
        assertThat(ring.encodedSends).as("payloads above 1 KiB offered to trySendEncoded").isEqualTo(20 * 9);
        assertThat(sentAllocated).as("bytes allocated for %d zero-copy sends into the local queue", messages).isLessThan(messages);
    }

    /**
     * Over a transport without zero-copy send, a payload above 1 KiB is encoded into the endpoint's
     * buffer through the ranged call: before, through a view of that buffer made per send.
     */
    @Test
    void sendsAboveOneKibOverATransportWithoutZeroCopySendAllocateNothingWithEncodersThatWriteInPlace() {
        plugin.zeroCopy = false;
        open();
        int messages = 30_000;
        long sentAllocated = 0;
        long expected = 0;
        for (int round = 0; round < 20; round++) {
            long before = allocatedBytes();
            for (int i = 0; i < messages; i++) {
                self.send(5, header, (i & 1) == 0 ? 2048 : 1500, RANGED[i % 3]);
                expected += i % 3 + 1;
                if ((i & 7) == 7) worker.progress(); // the ring holds 8: nothing waits locally
            }
            sentAllocated = allocatedBytes() - before;
            while (self.pending() > 0) worker.progress();
            worker.progress();
        }
        assertThat(sum[0]).isEqualTo(expected);
        assertThat(ring.encodedSends).as("offered once, then known to be unsupported").isEqualTo(1);
        assertThat(sentAllocated).as("bytes allocated for %d sends encoded into the endpoint's buffer", messages).isLessThan(messages);
    }

    /** A transport with a ring of 8 slots of 128 bytes in one segment; allocates nothing per message. */
    static final class RingPlugin implements ConduitPlugin {
        Ring opened;
        /** Whether its endpoints offer zero-copy send (with no room, ever) or say they do not. */
        boolean zeroCopy = true;

        @Override public String name() { return "ring"; }
        @Override public Version version() { return Version.parse("1.0.0"); }
        @Override public String spiVersion() { return SPI_VERSION; }
        @Override public Availability probe(PluginContext context) { return Availability.available(); }
        @Override public Set<Capability> capabilities() { return EnumSet.of(Capability.AM); }
        @Override public Set<ThreadMode> threadModes() { return EnumSet.of(ThreadMode.SINGLE); }

        @Override
        public Transport openTransport(TransportContext context) {
            opened = new Ring(context.messageSink(), zeroCopy);
            return opened;
        }
    }

    static final class Ring implements Transport, TransportEndpoint {
        private static final int SLOTS = 8;
        private static final long SLOT = 128;
        private final MemorySegment ring = Arena.ofAuto().allocate(SLOTS * SLOT, 8);
        private final MessageSink sink;
        private long head;
        private long tail;
        long encodedSends;

        private final boolean zeroCopy;

        Ring(MessageSink sink, boolean zeroCopy) {
            this.sink = sink;
            this.zeroCopy = zeroCopy;
        }

        @Override public byte[] address() { return new byte[] {1}; }
        @Override public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) { return this; }
        /** Above the slot's 80 payload bytes only for zero-copy sends, which these tests let write at most 8. */
        @Override public long maxPayloadSize() { return 4096; }
        @Override public int maxHeaderSize() { return 32; }

        @Override
        public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
            return trySend(id, header, 0, (int) header.byteSize(), payload, 0, payload.byteSize());
        }

        @Override
        public boolean trySend(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                               MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
            if (payloadLength > SLOT - 48) throw new IllegalArgumentException(payloadLength + " payload bytes do not fit a slot");
            if (tail - head == SLOTS) return false;
            long at = (tail++ % SLOTS) * SLOT;
            ring.set(ValueLayout.JAVA_INT, at, id);
            ring.set(ValueLayout.JAVA_INT, at + 4, headerLength);
            ring.set(ValueLayout.JAVA_INT, at + 8, (int) payloadLength);
            MemorySegment.copy(headerBuffer, headerOffset, ring, at + 16, headerLength);
            MemorySegment.copy(payloadBuffer, payloadOffset, ring, at + 48, payloadLength);
            return true;
        }

        /** No room for it here: a zero-copy send the runtime offers goes to its local queue. Or none at all. */
        @Override
        public long trySendEncoded(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
            encodedSends++;
            if (!zeroCopy) throw new dev.conduit.spi.NotSupportedException("no zero-copy send in this test");
            return -1;
        }

        @Override
        public int progress() {
            int n = 0;
            while (head < tail) {
                long at = (head++ % SLOTS) * SLOT;
                sink.onMessage(ring.get(ValueLayout.JAVA_INT, at), ring, at + 16, ring.get(ValueLayout.JAVA_INT, at + 4),
                        ring, at + 48, ring.get(ValueLayout.JAVA_INT, at + 8));
                n++;
            }
            return n;
        }

        @Override
        public void close() {
        }
    }
}
