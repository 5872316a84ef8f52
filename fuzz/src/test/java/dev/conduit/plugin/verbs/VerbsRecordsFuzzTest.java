package dev.conduit.plugin.verbs;

import com.code_intelligence.jazzer.junit.FuzzTest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A connector SENDs records into the acceptor's posted receive buffers, and lies in every field.
 * The input is a sequence of SENDs, each a {@code u16} (little-endian) byte count, at most one
 * buffer, then that many bytes, landing in the receive buffers in turn as the adapter would place
 * them (earlier records' bytes stay behind them). For any sequence the connection's
 * {@link Records.Reader} delivers messages whose header and payload lie inside the record or the
 * reassembly buffer, with a header of at most {@link Records#MAX_MESSAGE_HEADER} bytes and a
 * payload no larger than the buffers admit, or throws {@link Records.ProtocolError} (after which
 * the connection is dropped); it never throws anything else. Small buffers (the reader's checks do
 * not depend on their size) keep messages of several records short inputs.
 */
class VerbsRecordsFuzzTest {

    private static final int BUFFERS = 8;
    private static final int BUFFER = 512;
    private static final MemorySegment RECEIVE = Arena.global().allocate((long) BUFFERS * BUFFER, 4096);
    private static final long MAX_PAYLOAD = Records.maxPayload(BUFFERS, BUFFER);

    @FuzzTest(maxExecutions = 150_000, maxDuration = "2m")
    void recordsAreDeliveredInBoundsOrRefused(byte[] bytes) {
        RECEIVE.fill((byte) 0);
        ByteBuffer sends = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long[] record = new long[2];
        try (Records.Reader reader = new Records.Reader((id, hb, ho, hl, pb, po, pl) -> {
            assertThat(hl).isBetween(0, Records.MAX_MESSAGE_HEADER);
            assertThat(pl).isBetween(0L, MAX_PAYLOAD);
            // Touch every byte the reader says the message has: out of bounds would throw here.
            hb.asSlice(ho, hl).toArray(ValueLayout.JAVA_BYTE);
            pb.asSlice(po, pl).toArray(ValueLayout.JAVA_BYTE);
            if (hb == RECEIVE) {
                assertThat(ho).isEqualTo(record[0] + Records.HEADER);
                assertThat(po + pl).isEqualTo(record[0] + record[1]);
            }
        }, BUFFERS, BUFFER, Inbound.senderKey(VerbsTransport.MAX_CONNECTIONS, 1))) {
            for (int i = 0; sends.remaining() >= 2; i++) {
                int length = Math.min(Short.toUnsignedInt(sends.getShort()), Math.min(BUFFER, sends.remaining()));
                long at = (long) (i % BUFFERS) * BUFFER;
                MemorySegment.copy(bytes, sends.position(), RECEIVE, ValueLayout.JAVA_BYTE, at, length);
                sends.position(sends.position() + length);
                record[0] = at;
                record[1] = length;
                try {
                    reader.read(RECEIVE, at, length);
                } catch (Records.ProtocolError e) {
                    assertThat(e.getMessage()).isNotBlank();
                    return;
                }
            }
        }
    }
}
