package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PeerFailedException;
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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Encoded sends over a transport with zero-copy send ({@code TransportEndpoint.trySendEncoded}),
 * which calls the application's encoder itself: what the encoder throws is the application's, and
 * must reach it as such, the encoder called once (Endpoint.send: "The encoder is called exactly
 * once ... If it throws, nothing is sent and the exception propagates").
 */
class ZeroCopyEncoderTest {

    private final Loopbacks loopbacks = new Loopbacks();
    private final InPlacePlugin plugin = new InPlacePlugin();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    /**
     * RuntimeEndpoint#encode takes a NotSupportedException out of trySendEncoded for the
     * transport's word that it has no zero-copy send: it turns zero-copy off for the endpoint for
     * good and calls the encoder again into its own buffer. But the encoder runs inside
     * trySendEncoded, and may throw that exception itself: one that embeds a region's handle
     * (Region.exportHandle, of a plugin that exports none) or answers through
     * Message.replyEndpoint. Its failure was then retried behind its back: encoded twice, and
     * sent when the second call succeeded, though the first threw; and the endpoint's later
     * large sends lost zero-copy.
     */
    @Test
    void anEncoderThatThrowsNotSupportedIsCalledOnceSendsNothingAndTheEndpointKeepsZeroCopy() {
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        List<Long> delivered = new ArrayList<>();
        worker.onMessage(1, m -> delivered.add(m.payloadLong(0)));
        Endpoint self = worker.connect(worker.address());
        NotSupportedException noCodec = new NotSupportedException("no codec for this record type");
        int[] calls = {0};
        PayloadEncoder failsFirst = target -> {
            if (calls[0]++ == 0) throw noCodec;
            target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 7L);
            return 8;
        };

        Throwable thrown = catchThrowable(() -> self.send(1, MemorySegment.NULL, 4096, failsFirst));
        worker.progress();

        assertThat(calls[0]).as("calls of the encoder of one send").isEqualTo(1);
        assertThat(thrown).as("what the encoder threw").isSameAs(noCodec);
        assertThat(delivered).as("messages sent by a send whose encoder threw").isEmpty();
        int inPlaceBefore = plugin.transport.encodedSends;
        self.send(1, MemorySegment.NULL, 4096, target -> {
            target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 8L);
            return 8;
        });
        assertThat(plugin.transport.encodedSends).as("later sends still offered to the transport in place").isEqualTo(inPlaceBefore + 1);
    }

    /**
     * An encoder may send on another endpoint of its worker (only its own is refused). When that
     * endpoint's peer has died, its send throws PeerFailedException, out of the encoder and so out
     * of trySendEncoded, where RuntimeEndpoint#encode takes it for this endpoint's transport saying
     * this endpoint's peer failed (failedNow): the healthy endpoint is failed with the other peer's
     * death, its error handler called, its later sends refused. Over a transport without zero-copy
     * send (the encoder run in the runtime's buffer) the same exception passes and fails nothing.
     */
    @Test
    void anotherEndpointsFailureThrownThroughAnEncoderDoesNotFailTheEndpointItEncodesFor() {
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        List<Long> delivered = new ArrayList<>();
        worker.onMessage(1, m -> delivered.add(m.payloadLong(0)));
        Endpoint healthy = worker.connect(worker.address());
        Endpoint other = worker.connect(worker.address());
        plugin.transport.endpoints.get(1).peerDied = true;

        Throwable thrown = catchThrowable(() -> healthy.send(1, MemorySegment.NULL, 4096, target -> {
            other.send(1, MemorySegment.ofArray(new long[] {1}));
            return 0;
        }));

        assertThat(thrown).as("the other endpoint's failure, out of the encoder").isInstanceOf(PeerFailedException.class);
        assertThat(other.isFailed()).isTrue();
        assertThat(healthy.isFailed()).as("whether the endpoint whose encoder threw another endpoint's failure failed").isFalse();
        healthy.send(1, MemorySegment.ofArray(new long[] {9}));
        worker.progress();
        assertThat(delivered).containsExactly(9L);
    }

    /**
     * What the transport throws itself stays its word about this endpoint's peer, even after the
     * encoder ran: a peer failure it finds as it commits the encoded message fails the endpoint, as
     * one found before. Telling the encoder's exceptions from the transport's must go by what the
     * encoder threw, not by whether it was called.
     */
    @Test
    void aPeerFailureTheTransportFindsAfterTheEncoderReturnedFailsTheEndpoint() {
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint self = worker.connect(worker.address());

        Throwable thrown = catchThrowable(() -> self.send(1, MemorySegment.NULL, 4096, target -> {
            plugin.transport.endpoints.getFirst().peerDied = true;
            return 0;
        }));

        assertThat(thrown).as("the transport's word, after the encoder returned").isInstanceOf(PeerFailedException.class);
        assertThat(self.isFailed()).as("whether the endpoint whose transport found its peer dead failed").isTrue();
    }

    /**
     * A bare exception the transport throws itself out of {@code trySendEncoded} is named as the
     * plugin's fault, as one out of {@code trySend} is; one the encoder threw through it is the
     * application's and reaches it as it is, told apart by identity. Until 2026-12-07 the
     * transport's passed as it was, naming no plugin.
     */
    @Test
    void aTransportsBareExceptionFromTrySendEncodedIsThePluginsFaultAndTheEncodersPassesAsItIs() {
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint self = worker.connect(worker.address());
        NullPointerException bug = new NullPointerException("ring slot");
        plugin.transport.endpoints.getFirst().commitFault = bug;

        Throwable transports = catchThrowable(() -> self.send(1, MemorySegment.NULL, 4096, target -> 0));
        plugin.transport.endpoints.getFirst().commitFault = null;
        IndexOutOfBoundsException applications = new IndexOutOfBoundsException("Index 9 out of bounds for length 8");
        Throwable encoders = catchThrowable(() -> self.send(1, MemorySegment.NULL, 4096, target -> {
            throw applications;
        }));

        assertThat(transports).as("the transport's own exception").isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inplace' failed in trySendEncoded(): " + bug + ". That is no ConduitException")
                .hasCause(bug);
        assertThat(encoders).as("what the encoder threw through the transport").isSameAs(applications);
    }

    /**
     * {@code Endpoint.send} promises the encoder called exactly once and returns the length "as the
     * encoder returned it"; a transport's {@code trySendEncoded} must answer that length once it
     * called the encoder, and -1 only without calling it. Until 2026-12-07 the runtime took its
     * answer on trust: a -1 after the encoder ran had the encoder called a second time and the
     * message sent twice, and any other number (past {@code maxLength} too) reached the application
     * as the payload's length. Now the answer is checked against the encoder's call, and one that
     * breaks that word fails the send naming the plugin, the encoder not called again.
     */
    @Test
    void aTransportAnsweringOtherThanItsEncoderReturnedIsThePluginsFaultAndTheEncoderRunsOnce() {
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        List<Long> delivered = new ArrayList<>();
        worker.onMessage(1, m -> delivered.add(m.payloadLong(0)));
        Endpoint self = worker.connect(worker.address());
        for (long answer : new long[] {-1, 9, 4096 + 1}) {
            plugin.transport.endpoints.getFirst().answer = written -> answer;
            delivered.clear();
            int[] calls = {0};
            Throwable thrown = catchThrowable(() -> self.send(1, MemorySegment.NULL, 4096, target -> {
                calls[0]++;
                target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 7L);
                return 8;
            }));
            plugin.transport.endpoints.getFirst().answer = null;
            worker.progress();

            assertThat(calls[0]).as("calls of the encoder of one send whose transport answered %d", answer).isEqualTo(1);
            assertThat(thrown).as("what a send threw whose transport answered %d after its encoder returned 8", answer)
                    .isInstanceOf(ConduitException.class)
                    .hasMessageStartingWith("plugin 'inplace' answered " + answer + " from trySendEncoded() after the encoder it called "
                            + "returned 8");
            assertThat(delivered).as("messages delivered of a send whose transport answered %d", answer).hasSizeLessThanOrEqualTo(1);
        }
    }

    /** A transport that answers a length without calling the encoder sent a message that is not the application's. */
    @Test
    void aTransportAnsweringALengthWithoutCallingTheEncoderIsThePluginsFault() {
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Endpoint self = worker.connect(worker.address());
        plugin.transport.endpoints.getFirst().answerWithoutEncoding = true;
        int[] calls = {0};

        Throwable thrown = catchThrowable(() -> self.send(1, MemorySegment.NULL, 4096, target -> {
            calls[0]++;
            return 0;
        }));

        assertThat(calls[0]).as("calls of the encoder").isZero();
        assertThat(thrown).isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("plugin 'inplace' answered 0 from trySendEncoded() without calling the encoder");
    }

    /**
     * A transport whose {@code trySendEncoded} reports its peer's failure and then refuses the
     * message without calling the encoder, as if it had no room, has the send throw that failure:
     * the encoder is not called and nothing is sent (EndpointEvents: one that reports and then
     * refuses the message has the application's send throw the failure), as a plain send's
     * {@code trySend} that does so has (EndpointMessagingTest#aTransportThatReportsThePeersFailureAndRefusesTheMessageHasTheSendThrowTheFailure).
     * Until 2026-12-07 the runtime took that refusal for no room: it called the encoder into its
     * own buffer and offered the message to {@code trySend}, which sent it on the failed endpoint,
     * and the send returned its length as if it had gone.
     */
    @Test
    void aTransportThatReportsThePeersFailureAndRefusesAnEncodedSendHasTheSendThrowItWithoutCallingTheEncoder() {
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        List<Long> delivered = new ArrayList<>();
        worker.onMessage(1, m -> delivered.add(m.payloadLong(0)));
        Endpoint self = worker.connect(worker.address());
        plugin.transport.endpoints.getFirst().reportedWhileRefusing =
                new PeerFailedException(PeerFailedException.Reason.DIED, "this endpoint's peer died");
        int[] calls = {0};

        Throwable thrown = catchThrowable(() -> self.send(1, MemorySegment.NULL, 4096, target -> {
            calls[0]++;
            target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 7L);
            return 8;
        }));
        worker.progress();

        assertThat(thrown).as("what the send threw").isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("this endpoint's peer died");
        assertThat(calls[0]).as("calls of the encoder of a send the transport refused, its peer failed").isZero();
        assertThat(delivered).as("messages sent on the failed endpoint").isEmpty();
        assertThat(self.isFailed()).isTrue();
    }

    /** A plugin whose transport sends every encoded payload in place, calling the encoder itself, and has room always. */
    static final class InPlacePlugin implements ConduitPlugin {
        InPlaceTransport transport;

        @Override public String name() { return "inplace"; }
        @Override public Version version() { return Version.parse("1.0.0"); }
        @Override public String spiVersion() { return SPI_VERSION; }
        @Override public Availability probe(PluginContext context) { return Availability.available(); }
        @Override public Set<Capability> capabilities() { return EnumSet.of(Capability.AM); }
        @Override public Set<ThreadMode> threadModes() { return EnumSet.of(ThreadMode.SINGLE); }

        @Override
        public Transport openTransport(TransportContext context) {
            transport = new InPlaceTransport(context.messageSink());
            return transport;
        }
    }

    /** Self-connected: what its endpoints send, its progress delivers. Each connect makes an endpoint of its own. */
    static final class InPlaceTransport implements Transport {
        private final MessageSink sink;
        private final Queue<Object[]> sent = new ArrayDeque<>();
        final List<InPlaceEndpoint> endpoints = new ArrayList<>();
        int encodedSends;

        InPlaceTransport(MessageSink sink) {
            this.sink = sink;
        }

        @Override public byte[] address() { return new byte[] {1}; }

        @Override
        public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
            InPlaceEndpoint ep = new InPlaceEndpoint(events);
            endpoints.add(ep);
            return ep;
        }

        @Override
        public int progress() {
            int n = 0;
            for (Object[] m = sent.poll(); m != null; m = sent.poll(), n++) {
                MemorySegment payload = (MemorySegment) m[1];
                sink.onMessage((int) m[0], MemorySegment.NULL, 0, 0, payload, 0, payload.byteSize());
            }
            return n;
        }

        @Override
        public void close() {
        }

        /**
         * Sends in place, calling the encoder itself, with room always; once {@code peerDied}, even set while it encodes, all
         * sends say so. While {@code commitFault} is set, an encoded send throws it once the encoder returned.
         */
        final class InPlaceEndpoint implements TransportEndpoint {
            private final EndpointEvents events;
            boolean peerDied;
            /** While set, an encoded send reports it through the events and then refuses the message as if it had no room. */
            PeerFailedException reportedWhileRefusing;
            RuntimeException commitFault;
            /** While set, what an encoded send answers in place of the length its encoder wrote. */
            java.util.function.LongUnaryOperator answer;
            /** While set, an encoded send answers 0 without calling the encoder, sending nothing. */
            boolean answerWithoutEncoding;

            InPlaceEndpoint(EndpointEvents events) {
                this.events = events;
            }

            @Override public long maxPayloadSize() { return 1 << 20; }

            @Override
            public boolean trySend(int id, MemorySegment header, MemorySegment payload) {
                if (peerDied) throw new PeerFailedException(PeerFailedException.Reason.DIED, "this endpoint's peer died");
                sent.add(new Object[] {id, Arena.ofAuto().allocate(Math.max(1, payload.byteSize())).copyFrom(payload)
                        .asSlice(0, payload.byteSize())});
                return true;
            }

            @Override
            public long trySendEncoded(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
                if (peerDied) throw new PeerFailedException(PeerFailedException.Reason.DIED, "this endpoint's peer died");
                encodedSends++;
                if (reportedWhileRefusing != null) {
                    events.peerFailed(reportedWhileRefusing);
                    return -1;
                }
                if (answerWithoutEncoding) return 0;
                MemorySegment target = Arena.ofAuto().allocate(maxLength);
                long written = PayloadEncoder.checkWritten(encoder.encode(target, 0, maxLength), maxLength);
                if (peerDied) throw new PeerFailedException(PeerFailedException.Reason.DIED, "this endpoint's peer died meanwhile");
                if (commitFault != null) throw commitFault;
                sent.add(new Object[] {id, target.asSlice(0, written)});
                return answer == null ? written : answer.applyAsLong(written);
            }

            @Override
            public void close() {
            }
        }
    }
}
