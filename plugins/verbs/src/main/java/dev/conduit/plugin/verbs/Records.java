package dev.conduit.plugin.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The record an active message travels in, at the start of a registered buffer, one record per
 * SEND. A message that does not fit one buffer is cut into a {@link #FIRST} record and
 * {@link #MORE} records, which reliable-connected queue pairs deliver in order; the receiver
 * reassembles them.
 *
 * <pre>
 * offset  size  field
 *  0      4     type: 1 FIRST (carries the header and the first part of the payload), 2 MORE
 *  4      4     message id
 *  8      4     header length (0 in MORE)
 * 12      4     payload bytes in this record
 * 16      8     payload length of the whole message
 * 24      ...   header, then this record's payload bytes
 * </pre>
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

    private Records() {
    }

    static void write(MemorySegment buffer, long at, int type, int id, int headerLength, int partLength, long totalLength) {
        buffer.set(ValueLayout.JAVA_INT, at + TYPE, type);
        buffer.set(ValueLayout.JAVA_INT, at + ID, id);
        buffer.set(ValueLayout.JAVA_INT, at + HEADER_LENGTH, headerLength);
        buffer.set(ValueLayout.JAVA_INT, at + PART_LENGTH, partLength);
        buffer.set(ValueLayout.JAVA_LONG, at + TOTAL_LENGTH, totalLength);
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
}
