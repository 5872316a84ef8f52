package dev.conduit.shm;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.spi.ThreadMode;
import dev.conduit.Worker;
import dev.conduit.internal.worker.AddressFormat;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PayloadReader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A hostile sender writes arbitrary records into a real worker's receive queue. The peer follows
 * the ring's framing (claim, write, commit, as any process that maps the queue can) and lies in
 * every field: type, connection, message id, header and payload lengths, bounce offsets, control
 * payloads naming leases and bounce rings. For any such records the worker's {@code progress()}
 * delivers messages whose bytes lie inside the record or a mapped bounce ring, or throws a
 * {@link ConduitException} naming the broken rule; it never throws anything else, and the worker
 * stays usable: a real sender's message still goes through.
 *
 * <p>The hostile records never carry the real sender's connection id. A record that does is that
 * connection's as far as the worker can tell, and one that breaks the protocol gets the connection
 * refused, rightly: a process that writes into the queue can do that to any sender whose id it
 * knows. The fuzzer learns values the code compares with (the worker's check of each record's
 * connection against the last one it kept), and so found the real id in CI on 2026-12-02: the real
 * sender's message was dropped and the check below failed.
 */
class ShmQueueFuzzTest {

    private static final int[] IDS = {0, 1, 7};
    private static Path shared;
    private static Conduit conduit;
    private static Worker worker;
    /** A real sender to {@link #worker}, whose messages must still arrive whatever the hostile one wrote. */
    private static Endpoint realSender;
    private static Worker realSenderWorker;
    private static Arena arena;
    private static ReceiveQueue queue;
    private static long delivered;
    /** The real sender's connection id, which no hostile record may carry. */
    private static long realConnection;

    @BeforeAll
    static void openWorker() throws IOException {
        shared = Files.createTempDirectory("conduit-fuzz-");
        conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports("posix").build();
        worker = conduit.newWorker(ThreadMode.SINGLE);
        for (int id : IDS) {
            worker.onMessage(id, m -> {
                // Touch every byte the runtime says the message has: out-of-bounds would throw here.
                delivered += m.headerToArray().length + m.payloadToArray().length;
            });
        }
        realSenderWorker = conduit.newWorker(ThreadMode.SINGLE);
        realSender = realSenderWorker.connect(worker.address());
        realConnection = connectionOf(realSender);
        // Map the worker's queue as a sender in another process would: from its address.
        AddressFormat.Entry entry = AddressFormat.decode(worker.address().toBytes()).entry("posix");
        PayloadReader r = new PayloadReader(entry.address(), 0, entry.address().length, "");
        r.u8("version");
        r.relativePath("lease");
        byte[] export = r.bytes("queue", r.u16("queue.length"));
        long queueLength = r.u64("queue.chunk.length");
        byte[] token = r.bytes("token", ReceiveQueue.TOKEN_LENGTH);
        PayloadReader e = new PayloadReader(export, 0, export.length, "");
        e.u8("version");
        Path file = shared.resolve(e.relativePath("path"));
        arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            queue = ReceiveQueue.attach(channel.map(FileChannel.MapMode.READ_WRITE, 0, queueLength, arena), token);
        }
    }

    /** The connection id of {@code endpoint}'s shared-memory endpoint (the fuzz tests run on the class path). */
    private static long connectionOf(Endpoint endpoint) {
        try {
            java.lang.reflect.Field transportEndpoint = endpoint.getClass().getDeclaredField("te");
            transportEndpoint.setAccessible(true);
            return ((ShmEndpoint) transportEndpoint.get(endpoint)).connection();
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("cannot read the real sender's connection id", e);
        }
    }

    @AfterAll
    static void closeWorker() throws IOException {
        arena.close();
        worker.close();
        conduit.close();
        try (Stream<Path> files = Files.walk(shared)) {
            assertThat(files.filter(p -> !p.equals(shared)).toList()).as("files left in the shared directory").isEmpty();
        } finally {
            try (Stream<Path> files = Files.walk(shared)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @FuzzTest(maxExecutions = 100_000, maxDuration = "2m")
    void hostileRecordsFailOnlyWithAConduitException(FuzzedDataProvider data) {
        int records = data.consumeInt(1, 4);
        for (int i = 0; i < records && data.remainingBytes() > 0; i++) {
            writeRecord(data);
            drain();
        }
        aWellFormedMessageGoesThrough();
    }

    /**
     * Still a working queue: a real sender's message of 8 bytes goes through. (Until 2026-12-01
     * this wrote a message of connection 0 into the queue itself; the worker delivered it only
     * while it kept no connection, and a CONNECT of connection 0 threw an IllegalArgumentException
     * out of progress(), which this fuzz target found.)
     */
    private static void aWellFormedMessageGoesThrough() {
        long before = delivered;
        realSender.send(1, EIGHT_BYTES);
        for (int round = 0; round < 64 && realSender.pending() > 0; round++) {
            realSenderWorker.progress();
            drain();
        }
        drain();
        assertThat(delivered - before).isEqualTo(8);
    }

    private static final MemorySegment EIGHT_BYTES = MemorySegment.ofArray(new byte[8]);

    /** A record of connection 0, which no sender makes, is a protocol error, never a message, whatever the worker keeps. */
    @Test
    void aRecordOfConnection0IsAProtocolError() {
        aWellFormedMessageGoesThrough(); // the worker keeps a connection: a message of 0 must not pass as it
        for (int type : new int[] {ReceiveQueue.MSG, ReceiveQueue.CONNECT, ReceiveQueue.LARGE}) {
            long before = delivered;
            long offset = claim(64, 0);
            MemorySegment m = queue.memory();
            m.set(ValueLayout.JAVA_INT, offset + ReceiveQueue.MESSAGE_ID, 1);
            m.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.PAYLOAD_SIZE, 8);
            queue.commit(offset, 64, type);
            assertThatThrownBy(worker::progress).as("type %d", type).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("a record of connection 0, which no sender has");
            assertThat(delivered).isEqualTo(before);
        }
        long refusals = queue.refusals();
        long line = claim(64, 0);
        commitInClaim(line, 64, 16, ReceiveQueue.MSG); // shorter than a record header, of connection 0
        assertThatThrownBy(worker::progress).isInstanceOf(ConduitException.class).hasMessageContaining("less than the 48-byte record header");
        assertThat(queue.refusals()).as("no connection to refuse, no listing spent").isEqualTo(refusals);
        aWellFormedMessageGoesThrough();
    }

    @Test
    void aRecordShorterThanItsHeaderIsAProtocolErrorAlsoAtTheEndOfTheRing() {
        // Pad the ring up to its last line, then frame that line as 48 bytes of padding and a record of
        // 16 bytes (a record's length, type and connection id), so that the short record's other fields
        // would lie past the mapping.
        long capacity = queue.capacity();
        while (true) {
            long tail = ReceiveQueue.tailAbove(queue.memory().get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET), 0); // its index is exact
            long toEnd = capacity - (tail & (capacity - 1));
            if (toEnd == 64) break;
            int step = (int) Math.min(toEnd - 64, 4096);
            long pad = claim(step, 0);
            queue.commit(pad, step, ReceiveQueue.PAD);
            drain();
        }
        long line = claim(64, 5);
        long offset = line + 48;
        assertThat(offset + 16).as("the short record ends the mapping").isEqualTo(queue.memory().byteSize());
        queue.memory().set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION, 5);
        queue.commit(offset, 16, ReceiveQueue.MSG);
        queue.commit(line, 48, ReceiveQueue.PAD);
        assertThatThrownBy(worker::progress).isInstanceOf(ConduitException.class)
                .hasMessageContaining("broke the queue protocol").hasMessageContaining("16 bytes, less than the 48-byte record header");
        aWellFormedMessageGoesThrough();
    }

    private static void writeRecord(FuzzedDataProvider data) {
        int type = data.consumeInt(0, 8);
        long connection = data.consumeBoolean() ? data.consumeInt(0, 3) : data.consumeLong();
        if (connection == realConnection) connection = ~connection; // the real sender's: see the class's javadoc
        int id = IDS[data.consumeInt(0, IDS.length - 1)];
        int headerLength = data.consumeBoolean() ? data.consumeInt(-8, 64) : data.consumeInt();
        long payloadLength = data.consumeBoolean() ? data.consumeLong(-8, 4096) : data.consumeLong();
        long bounceEnd = data.consumeLong();
        long bounceOffset = data.consumeBoolean() ? data.consumeLong(0, 1 << 16) : data.consumeLong();
        if (data.consumeInt(0, 7) == 0) {
            // Shorter than a record header: its length, type and connection id, nothing more.
            int length = 8 * data.consumeInt(2, 5);
            long offset = claim(ReceiveQueue.recordLength(length), connection);
            commitInClaim(offset, ReceiveQueue.recordLength(length), length, type);
            return;
        }
        byte[] body = data.consumeBytes(data.consumeInt(0, 512));
        int length = (ReceiveQueue.RECORD_HEADER + body.length + 7) & ~7;
        long offset = claim(ReceiveQueue.recordLength(length), connection);
        MemorySegment m = queue.memory();
        m.set(ValueLayout.JAVA_INT, offset + ReceiveQueue.MESSAGE_ID, id);
        m.set(ValueLayout.JAVA_INT, offset + ReceiveQueue.HEADER_SIZE, headerLength);
        m.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.PAYLOAD_SIZE, payloadLength);
        m.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.BOUNCE_END, bounceEnd);
        m.set(ValueLayout.JAVA_LONG, offset + ReceiveQueue.BOUNCE_OFFSET, bounceOffset);
        MemorySegment.copy(body, 0, m, ValueLayout.JAVA_BYTE, offset + ReceiveQueue.RECORD_HEADER, body.length);
        commitInClaim(offset, ReceiveQueue.recordLength(length), length, type);
    }

    /**
     * Commits a record of {@code length} bytes (a multiple of 8) at the start of {@code claimed}
     * (whole lines, as every claim is), and the rest of the claim as padding: the framing stays
     * whole, as a hostile peer that wants the queue to go on keeps it.
     */
    private static void commitInClaim(long offset, int claimed, int length, int type) {
        if (claimed > length) queue.commit(offset + length, claimed - length, ReceiveQueue.PAD);
        queue.commit(offset, length, type);
    }

    private static long claim(int length, long connection) {
        long offset = queue.claim(length, connection);
        if (offset < 0) {
            drain();
            offset = queue.claim(length, connection);
        }
        assertThat(offset).as("the worker drained its queue, yet no room for %d bytes", length).isNotNegative();
        return offset;
    }

    private static void drain() {
        for (int round = 0; round < 64; round++) {
            try {
                if (worker.progress() == 0 && !queue.hasPending()) return;
            } catch (ConduitException expected) {
                assertThat(expected.getMessage()).isNotBlank();
            }
        }
    }
}
