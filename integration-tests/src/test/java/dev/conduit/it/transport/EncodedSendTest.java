package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The shared-memory transports' zero-copy send ({@code Endpoint.send(id, header, maxLength,
 * encoder)}): above 1 KiB the encoder writes into the peer's receive queue (inline) or the bounce
 * ring (large), up to it into the endpoint's buffer; under backpressure into the endpoint's buffer,
 * then copied into the local queue; an
 * encoder that throws or lies about its length leaves nothing behind and the stream goes on, in
 * order.
 */
class EncodedSendTest {

    private static final int ID = 9;
    /**
     * How long no message may arrive: a hang guard, not a speed check. No {@code @Timeout} bounds
     * a whole test: every wait runs from the last message that arrived ({@link
     * Setup#waitWhileProgressing}).
     */
    private static final Duration GUARD = Duration.ofSeconds(60);

    /** Fills {@code length} bytes with a pattern derived from {@code seed}; returns the length. */
    private static long fill(MemorySegment target, long length, int seed) {
        for (long i = 0; i < length; i++) target.set(ValueLayout.JAVA_BYTE, i, (byte) (seed + i * 31));
        return length;
    }

    private static boolean matches(byte[] payload, int seed) {
        for (int i = 0; i < payload.length; i++) if (payload[i] != (byte) (seed + i * 31L)) return false;
        return true;
    }

    private record Received(int seed, byte[] header, byte[] payload) {
    }

    private static List<Received> receive(Worker receiver) {
        List<Received> seen = new ArrayList<>();
        receiver.onMessage(ID, m -> seen.add(new Received(m.headerInt(0), m.headerToArray(), m.payloadToArray())));
        return seen;
    }

    /** Progresses both workers until {@code count} messages arrived; the hang guard runs from the last that did. */
    private static void progressUntil(Worker sender, Worker receiver, List<Received> seen, int count) {
        Setup.waitWhileProgressing(seen::size, count, () -> false, GUARD, () -> "messages arrived, " + count + " sent", () -> {
            sender.progress();
            receiver.progress();
        });
    }

    private static MemorySegment header(int seed) {
        MemorySegment h = MemorySegment.ofArray(new byte[12]);
        h.set(ValueLayout.JAVA_INT_UNALIGNED, 0, seed);
        return h;
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void encodedPayloadsOfEverySizeArriveIntactAndInOrderWithPlainSends(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Setup.conduit(shared, plugin)) {
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            List<Received> seen = receive(receiver);
            Endpoint endpoint = sender.connect(receiver.address());
            // The endpoint's buffer (up to 1 KiB), inline (under inline.max = 8 KiB), large (bounce ring), and an encoder using less than its room.
            long[] maxLengths = {0, 1, 100, 8000, 9000, 300_000, 1 << 20};
            int seed = 0;
            for (long max : maxLengths) {
                int s = ++seed;
                long written = max / 2 + (max & 1);
                assertThat(endpoint.send(ID, header(s), max, t -> {
                    assertThat(t.byteSize()).isEqualTo(max);
                    return fill(t, written, s);
                })).isEqualTo(written);
                int plain = ++seed;
                MemorySegment p = MemorySegment.ofArray(new byte[(int) Math.min(max, 20_000)]);
                fill(p, p.byteSize(), plain);
                endpoint.send(ID, header(plain), p);
            }
            progressUntil(sender, receiver, seen, seed);
            for (int i = 0; i < seed; i++) {
                Received r = seen.get(i);
                assertThat(r.seed()).as("message %d in order", i).isEqualTo(i + 1);
                assertThat(matches(r.payload(), r.seed())).as("payload of message %d intact", i).isTrue();
            }
            assertThat(seen.get(12).payload()).hasSize(1 << 19);
        }
    }

    private static long lengthOf(int seed) {
        return seed % 2 == 0 ? 1000 : 3000;
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void whenThePeersQueueIsFullEncodedMessagesWaitLocallyAndOrderHolds(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".queue.size=64KiB")) {
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            List<Received> seen = receive(receiver);
            Endpoint endpoint = sender.connect(receiver.address());
            // 200 x 1 or 3 KiB, more than the 64 KiB queue holds: up to 1 KiB encoded into the endpoint's buffer, above it in place.
            int messages = 200;
            for (int i = 1; i <= messages; i++) {
                int s = i;
                long length = lengthOf(s);
                endpoint.send(ID, header(s), length, t -> fill(t, length, s));
            }
            assertThat(endpoint.pending()).as("the rest waits locally, nothing dropped").isPositive();
            progressUntil(sender, receiver, seen, messages);
            assertThat(endpoint.pending()).isZero();
            assertThat(seen).extracting(Received::seed).containsExactlyElementsOf(java.util.stream.IntStream.rangeClosed(1, messages).boxed().toList());
            assertThat(seen).allMatch(r -> matches(r.payload(), r.seed()) && r.payload().length == lengthOf(r.seed()));
        }
    }

    /**
     * Payloads past 4 MiB that find the bounce ring full are encoded into a buffer of the
     * endpoint's own, confined to the sending thread and freed as the send returns (no handshake
     * with every thread), which the transport copies from or the local queue copies in: they arrive
     * whole and in order.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void encodedPayloadsPastFourMiBBehindAFullBounceRingWaitLocallyAndArriveIntact(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".bounce.size=16MiB")) {
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            List<Received> seen = receive(receiver);
            Endpoint endpoint = sender.connect(receiver.address());
            long length = (5L << 20) - 3; // three fit in the 16 MiB ring; the rest go through the endpoint's buffer
            int messages = 5;
            for (int i = 1; i <= messages; i++) {
                int s = i;
                endpoint.send(ID, header(s), 5L << 20, t -> fill(t, length, s));
            }
            assertThat(endpoint.pending()).as("the rest waits locally, nothing dropped").isPositive();
            progressUntil(sender, receiver, seen, messages);
            assertThat(seen).extracting(Received::seed).containsExactly(1, 2, 3, 4, 5);
            assertThat(seen).allMatch(r -> r.payload().length == length && matches(r.payload(), r.seed()));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void anEncoderThatThrowsOrLiesSendsNothingAndTheNextMessageArrives(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Setup.conduit(shared, plugin)) {
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            List<Received> seen = receive(receiver);
            Endpoint endpoint = sender.connect(receiver.address());
            // Nothing claimed (encoded into the endpoint's buffer), an abandoned queue record, an abandoned bounce reservation.
            for (long max : new long[] {64, 2000, 100_000}) {
                assertThatThrownBy(() -> endpoint.send(ID, header(-1), max, t -> {
                    fill(t, max, -1);
                    throw new IllegalArgumentException("encoder failed");
                })).isInstanceOf(IllegalArgumentException.class).hasMessage("encoder failed");
                assertThatThrownBy(() -> endpoint.send(ID, header(-2), max, t -> max + 1))
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("returned " + (max + 1) + " bytes written");
                assertThatThrownBy(() -> endpoint.send(ID, header(-3), max, t -> {
                    t.set(ValueLayout.JAVA_LONG_UNALIGNED, max - 4, 1L);
                    return 8;
                })).as("the target is bounded").isInstanceOf(IndexOutOfBoundsException.class);
            }
            endpoint.send(ID, header(1), 10, t -> fill(t, 10, 1));
            endpoint.send(ID, header(2), 50_000, t -> fill(t, 50_000, 2));
            progressUntil(sender, receiver, seen, 2);
            receiver.progress();
            assertThat(seen).extracting(Received::seed).containsExactly(1, 2);
            assertThat(seen).allMatch(r -> matches(r.payload(), r.seed()));
            assertThat(endpoint.pending()).isZero();
        }
    }

    /**
     * Endpoint's javadoc: over the shared-memory transports a header takes up to 1 KiB and a payload
     * up to {@code <plugin>.bounce.size} (4 MiB by default); a larger one, plain or encoded, is
     * refused with IllegalArgumentException naming the limit, the plugin and (a payload) the key that raises it, and nothing is sent;
     * the limits themselves are sent.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void headersOf1KiBAndPayloadsOfTheBounceSizeAreSentAndOneByteMoreIsRefused(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Setup.conduit(shared, plugin)) {
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            List<Received> seen = receive(receiver);
            Endpoint endpoint = sender.connect(receiver.address());
            assertThat(endpoint.transport()).isEqualTo(plugin);
            assertThat(endpoint.maxHeaderSize()).isEqualTo(1024);
            assertThat(endpoint.maxPayloadSize()).isEqualTo(4L << 20);

            MemorySegment tooLongHeader = MemorySegment.ofArray(new byte[1025]);
            MemorySegment tooLargePayload = MemorySegment.ofArray(new byte[(4 << 20) + 1]);
            assertThatThrownBy(() -> endpoint.send(ID, tooLongHeader, MemorySegment.NULL)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("header of 1025 bytes").hasMessageContaining("'" + plugin + "'").hasMessageContaining("1024 bytes");
            assertThatThrownBy(() -> endpoint.send(ID, header(0), tooLargePayload)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("payload of 4194305 bytes").hasMessageContaining("'" + plugin + "'")
                    .hasMessageContaining("4194304 bytes")
                    .hasMessageContaining("or raise the limit: " + plugin + ".bounce.size (CONDUIT_" + plugin.toUpperCase(java.util.Locale.ROOT)
                            + "_BOUNCE_SIZE) of this process, the sender, sets it");
            assertThatThrownBy(() -> endpoint.send(ID, header(0), (4L << 20) + 1, t -> 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("4194304 bytes");

            MemorySegment longestHeader = MemorySegment.ofArray(new byte[1024]);
            longestHeader.set(ValueLayout.JAVA_INT_UNALIGNED, 0, 1);
            endpoint.send(ID, longestHeader, MemorySegment.NULL);
            MemorySegment largest = MemorySegment.ofArray(new byte[4 << 20]);
            fill(largest, largest.byteSize(), 2);
            endpoint.send(ID, header(2), largest);
            progressUntil(sender, receiver, seen, 2);
            assertThat(seen).extracting(Received::seed).as("only what fits was sent").containsExactly(1, 2);
            assertThat(seen.get(0).header()).hasSize(1024);
            assertThat(seen.get(1).payload()).hasSize(4 << 20);
            assertThat(matches(seen.get(1).payload(), 2)).isTrue();
        }
    }
}
