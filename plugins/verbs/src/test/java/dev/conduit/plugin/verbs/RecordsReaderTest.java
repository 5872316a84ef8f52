package dev.conduit.plugin.verbs;

import dev.conduit.spi.MessageSink;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The receiver's checks of the records a peer SENDs: every lie is a protocol error, never another exception. */
class RecordsReaderTest {

    private static final int BUFFER = 4096;
    private static final int BUFFERS = 4;

    private final List<String> delivered = new ArrayList<>();
    /** The key of the reader's connection, which every message must carry. */
    private static final long SENDER = Inbound.senderKey(VerbsTransport.MAX_CONNECTIONS + 3, 7);
    private final List<Long> senders = new ArrayList<>();
    private final Records.Reader reader = new Records.Reader(new MessageSink() {
        @Override
        public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl) {
            onMessage(id, hb, ho, hl, pb, po, pl, 0);
        }

        @Override
        public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl, long sender) {
            byte[] header = hb.asSlice(ho, hl).toArray(ValueLayout.JAVA_BYTE);
            byte[] payload = pb.asSlice(po, pl).toArray(ValueLayout.JAVA_BYTE);
            delivered.add(id + ":" + header.length + ":" + payload.length + ":" + (payload.length == 0 ? -1 : payload[payload.length - 1]));
            senders.add(sender);
        }
    }, BUFFERS, BUFFER, SENDER);

    @Test
    void aMessageInOneRecordAndOneCutIntoRecordsAreDelivered() {
        try (Arena arena = Arena.ofConfined(); reader) {
            MemorySegment buffer = arena.allocate(BUFFER);
            Records.write(buffer, 0, Records.FIRST, 7, 2, 3, 3);
            buffer.set(ValueLayout.JAVA_BYTE, Records.HEADER + 4, (byte) 9);
            reader.read(buffer, 0, Records.HEADER + 5);

            long total = 2L * BUFFER;
            int first = BUFFER - Records.HEADER - 16;
            Records.write(buffer, 0, Records.FIRST, 8, 16, first, total);
            reader.read(buffer, 0, BUFFER);
            int second = BUFFER - Records.HEADER;
            Records.write(buffer, 0, Records.MORE, 8, 0, second, total);
            reader.read(buffer, 0, BUFFER);
            int last = (int) (total - first - second);
            Records.write(buffer, 0, Records.MORE, 8, 0, last, total);
            buffer.set(ValueLayout.JAVA_BYTE, Records.HEADER + last - 1, (byte) 5);
            reader.read(buffer, 0, Records.HEADER + last);
        }
        assertThat(delivered).containsExactly("7:2:3:9", "8:16:" + 2 * BUFFER + ":5");
        assertThat(senders).as("the connection's key, with the message in one record and with the reassembled one")
                .containsExactly(SENDER, SENDER);
    }

    /** Found by VerbsRecordsFuzzTest: a claimed total near 2^63 overflowed the reassembly size, and a later record was copied out of bounds (IndexOutOfBoundsException from progress); a large one was allocated. */
    @Test
    void aTotalAboveWhatTheBuffersAdmitIsAProtocolErrorBeforeAnythingIsAllocated() {
        long max = Records.maxPayload(BUFFERS, BUFFER);
        try (Arena arena = Arena.ofConfined(); reader) {
            MemorySegment buffer = arena.allocate(BUFFER);
            for (long total : new long[] {Long.MAX_VALUE, 1L << 40, max + 1}) {
                Records.write(buffer, 0, Records.FIRST, 1, 8, 0, total);
                assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER + 8))
                        .isInstanceOf(Records.ProtocolError.class).hasMessageContaining("total " + total).hasMessageContaining("at most " + max);
            }
            Records.write(buffer, 0, Records.FIRST, 1, 0, 8, max);
            reader.read(buffer, 0, Records.HEADER + 8);
        }
        assertThat(delivered).isEmpty();
    }

    @Test
    void recordsThatLieAboutTheirShapeAreProtocolErrors() {
        try (Arena arena = Arena.ofConfined(); reader) {
            MemorySegment buffer = arena.allocate(BUFFER);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER - 1)).isInstanceOf(Records.ProtocolError.class)
                    .hasMessageContaining("shorter than its 24-byte header");
            Records.write(buffer, 0, 3, 1, 0, 0, 0);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER)).isInstanceOf(Records.ProtocolError.class)
                    .hasMessageContaining("record type 3");
            Records.write(buffer, 0, Records.FIRST, 1, -1, 0, 0);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER)).isInstanceOf(Records.ProtocolError.class);
            Records.write(buffer, 0, Records.FIRST, 1, 0, 10, 10);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER + 9)).isInstanceOf(Records.ProtocolError.class);
            Records.write(buffer, 0, Records.MORE, 1, 0, 10, 10);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER + 10)).isInstanceOf(Records.ProtocolError.class)
                    .hasMessageContaining("continues no message");
        }
        assertThat(delivered).isEmpty();
    }

    /**
     * Each field of a record the peer wrote is checked at its bound: the largest header
     * (1024 bytes) is read and one byte more is refused; a negative part, and a part larger than
     * the message's total, are refused, where they would leave a message in progress that can
     * never complete.
     */
    @Test
    void aFirstRecordWhoseHeaderOrPartLiesIsAProtocolError() {
        try (Arena arena = Arena.ofConfined(); reader) {
            MemorySegment buffer = arena.allocate(BUFFER);
            Records.write(buffer, 0, Records.FIRST, 1, Records.MAX_MESSAGE_HEADER, 1, 1);
            reader.read(buffer, 0, Records.HEADER + Records.MAX_MESSAGE_HEADER + 1);
            Records.write(buffer, 0, Records.FIRST, 2, Records.MAX_MESSAGE_HEADER + 1, 1, 1);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER + Records.MAX_MESSAGE_HEADER + 2))
                    .isInstanceOf(Records.ProtocolError.class).hasMessageContaining("header " + (Records.MAX_MESSAGE_HEADER + 1));
            Records.write(buffer, 0, Records.FIRST, 3, 8, -1, 0);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER + 7)).isInstanceOf(Records.ProtocolError.class)
                    .hasMessageContaining("part -1");
            Records.write(buffer, 0, Records.FIRST, 4, 0, 10, 5);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER + 10)).isInstanceOf(Records.ProtocolError.class)
                    .hasMessageContaining("part 10, total 5");
        }
        assertThat(delivered).containsExactly("1:" + Records.MAX_MESSAGE_HEADER + ":1:0");
    }

    /**
     * While a message is being reassembled, the next record must continue it: a new first
     * record, or a continuation of another total, that carries a header, or that runs past the
     * total, is a protocol error, and no part of the message is delivered.
     */
    @Test
    void aRecordThatDoesNotContinueTheMessageInProgressIsAProtocolError() {
        int partOfFirst = 10;
        long total = 20;
        String[] lies = {"a new first record", "another total", "a header", "past the total"};
        for (String lie : lies) {
            try (Arena arena = Arena.ofConfined();
                 Records.Reader fresh = new Records.Reader((id, hb, ho, hl, pb, po, pl) -> delivered.add(lie), BUFFERS, BUFFER, SENDER)) {
                MemorySegment buffer = arena.allocate(BUFFER);
                Records.write(buffer, 0, Records.FIRST, 1, 0, partOfFirst, total);
                fresh.read(buffer, 0, Records.HEADER + partOfFirst);
                int byteLength = Records.HEADER + 10;
                switch (lie) {
                    case "a new first record" -> Records.write(buffer, 0, Records.FIRST, 2, 0, 10, 10);
                    case "another total" -> Records.write(buffer, 0, Records.MORE, 1, 0, 10, total + 1);
                    case "a header" -> {
                        Records.write(buffer, 0, Records.MORE, 1, 4, 6, total);
                        byteLength = Records.HEADER + 4 + 6;
                    }
                    default -> {
                        Records.write(buffer, 0, Records.MORE, 1, 0, 11, total);
                        byteLength = Records.HEADER + 11;
                    }
                }
                int length = byteLength;
                assertThatThrownBy(() -> fresh.read(buffer, 0, length)).as(lie).isInstanceOf(Records.ProtocolError.class);
            }
        }
        assertThat(delivered).isEmpty();
    }

    /** A continuation that lies about the message in progress says which field lies, not that no message is in progress. */
    @Test
    void aContinuationThatDoesNotFitTheMessageInProgressNamesItsFields() {
        try (Arena arena = Arena.ofConfined(); reader) {
            MemorySegment buffer = arena.allocate(BUFFER);
            Records.write(buffer, 0, Records.FIRST, 1, 0, 10, 20);
            reader.read(buffer, 0, Records.HEADER + 10);
            Records.write(buffer, 0, Records.MORE, 2, 0, 10, 20);
            assertThatThrownBy(() -> reader.read(buffer, 0, Records.HEADER + 10)).isInstanceOf(Records.ProtocolError.class)
                    .hasMessageContaining("does not fit the message in progress (id 1, 20 bytes, 10 received): its id 2, total 20");
        }
        assertThat(delivered).isEmpty();
    }
}
