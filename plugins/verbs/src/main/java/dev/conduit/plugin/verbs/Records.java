package dev.conduit.plugin.verbs;

import dev.conduit.spi.MessageSink;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The record an active message travels in, at the start of a registered buffer, one record per
 * SEND. A message that does not fit one buffer is cut into a {@link #FIRST} record and
 * {@link #MORE} records, which reliable-connected queue pairs deliver in order; the receiver
 * reassembles them.
 *
 * <pre>
 * offset  size  field (little-endian, as every Conduit wire format)
 *  0      4     type: 1 FIRST (carries the header and the first part of the payload), 2 MORE
 *  4      4     message id
 *  8      4     header length (0 in MORE)
 * 12      4     payload bytes in this record
 * 16      8     payload length of the whole message
 * 24      ...   header, then this record's payload bytes
 * </pre>
 *
 * <p>Records start at multiples of {@code verbs.buffer.size}, which is a multiple of 64, so the
 * 8-byte total is always aligned.
 *
 * <p>Every field is written by the peer: {@link Reader} checks each record against the completion's
 * byte count and against the largest message this side's buffers admit before it copies a byte.
 */
final class Records {

    static final int FIRST = 1;
    static final int MORE = 2;
    static final int TYPE = 0;
    static final int ID = 4;
    static final int HEADER_LENGTH = 8;
    static final int PART_LENGTH = 12;
    static final int TOTAL_LENGTH = 16;
    static final int HEADER = 24;
    static final int MAX_MESSAGE_HEADER = 1024;
    /** Explicit, not native: the peer may be another architecture (on x86 and little-endian Arm this costs nothing). */
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Records() {
    }

    static void write(MemorySegment buffer, long at, int type, int id, int headerLength, int partLength, long totalLength) {
        buffer.set(INT, at + TYPE, type);
        buffer.set(INT, at + ID, id);
        buffer.set(INT, at + HEADER_LENGTH, headerLength);
        buffer.set(INT, at + PART_LENGTH, partLength);
        buffer.set(LONG, at + TOTAL_LENGTH, totalLength);
    }

    /** How many records a message of {@code headerLength} and {@code payloadLength} bytes takes in buffers of {@code bufferSize}. */
    static int count(long headerLength, long payloadLength, int bufferSize) {
        long first = bufferSize - HEADER - headerLength;
        if (payloadLength <= first) {
            return 1;
        }
        long perRecord = bufferSize - HEADER;
        return (int) (1 + (payloadLength - first + perRecord - 1) / perRecord);
    }

    /** The largest payload that {@code records} buffers of {@code bufferSize} carry with a header of the largest size. */
    static long maxPayload(int records, int bufferSize) {
        return (long) records * (bufferSize - HEADER) - MAX_MESSAGE_HEADER;
    }

    /**
     * The receiving side of one connection: checks each record a SEND delivered, hands a message
     * that fits one record to the sink in place (with the connection's key, a field: no lookup),
     * and reassembles the others in a buffer that grows to the largest message seen (the only
     * allocation on the receive path, and only for messages larger than one buffer, never larger
     * than {@link #maxPayload} of this side's buffers).
     * A record that breaks the protocol is a {@link ProtocolError}; the connection is then dropped
     * and this reader used no more.
     */
    static final class Reader implements AutoCloseable {

        private final MessageSink sink;
        /** The connection's key, passed with every message (MessageSink's sender). */
        private final long sender;
        private final long maxTotal;
        private final long minReassembly;
        private Arena arena;
        private MemorySegment reassembly;
        private int id;
        private int headerLength;
        private long total;
        private long reassembled = -1;

        /**
         * A reader for records that arrive in {@code receiveBuffers} buffers of {@code bufferSize}
         * bytes on the connection named {@code sender}, which every message is delivered with.
         */
        Reader(MessageSink sink, int receiveBuffers, int bufferSize, long sender) {
            this.sink = sink;
            this.sender = sender;
            this.maxTotal = maxPayload(receiveBuffers, bufferSize);
            this.minReassembly = 2L * bufferSize;
        }

        /** Reads the record of {@code byteLength} bytes (the completion's count) at {@code at} in {@code buffer}. */
        void read(MemorySegment buffer, long at, int byteLength) {
            if (byteLength < HEADER) {
                throw new ProtocolError("record of " + byteLength + " bytes, shorter than its " + HEADER + "-byte header");
            }
            int type = buffer.get(INT, at + TYPE);
            int recordId = buffer.get(INT, at + ID);
            int header = buffer.get(INT, at + HEADER_LENGTH);
            int part = buffer.get(INT, at + PART_LENGTH);
            long recordTotal = buffer.get(LONG, at + TOTAL_LENGTH);
            if (header < 0 || header > MAX_MESSAGE_HEADER || part < 0 || (long) HEADER + header + part != byteLength
                    || recordTotal < part || recordTotal > maxTotal) {
                throw new ProtocolError("record of " + byteLength + " bytes says header " + header + ", part " + part
                        + ", total " + recordTotal + " (at most " + maxTotal + ")");
            }
            long body = at + HEADER;
            if (type == FIRST) {
                if (reassembled >= 0) {
                    throw new ProtocolError("a new message before the last one's records were all received");
                }
                if (recordTotal == part) {
                    sink.onMessage(recordId, buffer, body, header, buffer, body + header, part, sender);
                    return;
                }
                ensureReassembly(header + recordTotal);
                MemorySegment.copy(buffer, body, reassembly, 0, header + part);
                id = recordId;
                headerLength = header;
                total = recordTotal;
                reassembled = part;
            } else if (type == MORE) {
                if (reassembled < 0) {
                    throw new ProtocolError("a continuation record that continues no message in progress");
                }
                if (recordId != id || recordTotal != total || header != 0 || reassembled + part > total) {
                    throw new ProtocolError("a continuation record that does not fit the message in progress (id " + id + ", "
                            + total + " bytes, " + reassembled + " received): its id " + recordId + ", total " + recordTotal
                            + ", header " + header + " (continuations carry none) and " + part + " bytes");
                }
                MemorySegment.copy(buffer, body, reassembly, headerLength + reassembled, part);
                reassembled += part;
                if (reassembled == total) {
                    reassembled = -1;
                    sink.onMessage(id, reassembly, 0, headerLength, reassembly, headerLength, total, sender);
                }
            } else {
                throw new ProtocolError("record type " + type + " is neither " + FIRST + " (first) nor " + MORE + " (more)");
            }
        }

        private void ensureReassembly(long bytes) {
            if (reassembly != null && reassembly.byteSize() >= bytes) {
                return;
            }
            if (arena != null) {
                arena.close();
            }
            arena = Arena.ofShared();
            reassembly = arena.allocate(Math.max(bytes, minReassembly), 8);
        }

        @Override
        public void close() {
            if (arena != null) {
                arena.close();
                arena = null;
                reassembly = null;
            }
        }
    }

    /** A record that breaks the protocol of {@link Records}: the sender is not a correct verbs transport. */
    static final class ProtocolError extends RuntimeException {
        @java.io.Serial private static final long serialVersionUID = 1L;

        ProtocolError(String message) {
            super(message, null, false, false);
        }
    }
}
