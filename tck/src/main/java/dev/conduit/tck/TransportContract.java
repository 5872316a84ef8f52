package dev.conduit.tck;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.internal.Addresses;
import dev.conduit.tck.internal.Patterns;
import dev.conduit.tck.internal.TransportingChild;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract of a transport ({@link Capability#AM}): connect, ordered exactly-once delivery,
 * every message delivered inside the receiver's {@code progress()} (never from {@code trySend},
 * never from a thread of the plugin's own: a failure names the message, the thread and where it
 * came), backpressure, zero-copy send where offered, peer death, close, malformed addresses and no absolute path in one, wakeup
 * ({@link Capability#WAKEUP}), answering a message where offered (each connection named by a key of
 * its own, {@link Transport#senderAddress} giving the sender's address, which a reply reaches,
 * {@link dev.conduit.spi.MessageSink#onSenderClosed} once when a connection ends: optional, the
 * tests end as aborted for a transport that names no sender), a killed worker's files reclaimed
 * (optional: {@link #reclaimTheFilesOfDeadWorkers});
 * then the same plugin under the runtime: a {@code MULTI} worker used from several threads, peer failure,
 * RMA ({@link Capability#RMA}, {@link Capability#ATOMICS}).
 *
 * <p>Two transports of the plugin in this JVM talk to each other, as two processes' would.
 * Capabilities the plugin does not declare are not part of its contract: their tests end as
 * "aborted" with a message naming the capability, and the operations must throw
 * {@link NotSupportedException}.
 */
public abstract class TransportContract extends PluginContract {

    private ConduitPlugin plugin;

    /** A transport's close releases every descriptor it opened: its sockets, files, epoll instances. */
    @Override
    final boolean checksDescriptors() {
        return true;
    }

    @BeforeEach
    final void checkDeclaration() {
        plugin = newPlugin();
        assertThat(plugin.capabilities()).as("capabilities of '%s': the transport suite is for plugins that declare AM", plugin.name())
                .contains(Capability.AM);
        requireOfferedHere(plugin, Capability.AM);
    }

    /**
     * The most bytes the backpressure test sends without progressing the receiver before it
     * concludes that the transport never refuses (which breaks the contract). Raise it for a
     * transport with very large buffers.
     */
    protected long backpressureBound() {
        return 512L << 20;
    }

    private void assume(Capability capability) {
        assumeTrue(plugin.capabilities().contains(capability),
                "plugin '" + plugin.name() + "' does not declare capability " + capability + ": it is not part of its contract");
        requireOfferedHere(plugin, capability);
    }

    /** The inboxes of the transports this test opened, each checked after the test for a delivery outside progress(). */
    private final List<Inbox> inboxes = new CopyOnWriteArrayList<>();

    /**
     * A transport delivering to {@code inbox}, which from then on takes messages only inside that
     * transport's progress() (called through {@link Inbox#progress}): a delivery anywhere else fails
     * the test where it next looks at the inbox, or after it.
     */
    private Transport open(Inbox inbox) {
        return open(inbox, ThreadMode.SERIALIZED);
    }

    private Transport open(Inbox inbox, ThreadMode mode) {
        Transport transport = closeAfterTest(plugin.openTransport(transportContext(mode, inbox)));
        inbox.deliveredOnlyInsideProgressOf(transport, this::startedByTheTest);
        inboxes.add(inbox);
        return transport;
    }

    /** Also a test that never looks at what arrived fails for a message delivered outside progress(). */
    @AfterEach
    final void everyMessageWasDeliveredInsideProgress() {
        try {
            for (Inbox inbox : inboxes) inbox.checkDeliveredOnlyInsideProgress();
        } finally {
            inboxes.clear();
        }
    }

    /** Reports of a dead peer made on a thread of the plugin's own ({@link #connect}): each fails the test after it. */
    private final List<String> reportsFromThePluginsThreads = new CopyOnWriteArrayList<>();

    @AfterEach
    final void everyPeerFailureWasReportedOnACallingThread() {
        try {
            assertThat(reportsFromThePluginsThreads).as("reports of a dead peer (EndpointEvents.peerFailed) made on a thread of the "
                    + "plugin's own").isEmpty();
        } finally {
            reportsFromThePluginsThreads.clear();
        }
    }

    /**
     * Connects {@code from} to {@code to}, passing {@code events} the reports of a dead peer, and
     * recording one made on a thread of the plugin's own: neither the thread that connected, nor one
     * the test started, nor one inside a call of the TCK's into the plugin ({@link EndpointEvents}).
     */
    private TransportEndpoint connect(Transport from, Transport to, EndpointEvents events) {
        Thread connecting = Thread.currentThread();
        EndpointEvents checked = cause -> {
            Thread thread = Thread.currentThread();
            if (thread != connecting && !startedByTheTest(thread) && Inbox.callingNow() == null) {
                reportsFromThePluginsThreads.add("EndpointEvents.peerFailed(" + cause + ") on thread '" + thread.getName() + "', a thread "
                        + "of the plugin's own (the TCK never calls the transport there): a transport reports from progress(), "
                        + "checkPeer(), connect(), or the endpoint's own trySend() or trySendEncoded(), on the thread that called them. The runtime discards the endpoint's local queue "
                        + "on a report, under a lock only in a MULTI worker over a plugin that declares MULTI: elsewhere a report from "
                        + "another thread races with the application's sends");
            }
            events.peerFailed(cause);
        };
        return from.connect(Addresses.reader(plugin.name(), to.address()), checked);
    }

    /**
     * Message {@code i} of the tests that send many, checked byte for byte on arrival: a header of
     * {@code i % (maxHeader + 1)} bytes and a payload cycling through {@link #SIZES} (capped at the
     * endpoint's limit), both patterned from {@code i}.
     */
    private record Numbered(int maxHeader, long maxPayload) {
        private static final long[] SIZES = {0, 1, 8, 100, 4000, 9000, 65_536, 200_000};

        static Numbered on(TransportEndpoint ep) {
            return new Numbered(Math.min(ep.maxHeaderSize(), 40), ep.maxPayloadSize());
        }

        int headerLength(int i) {
            return i % (maxHeader + 1);
        }

        long payloadSize(int i) {
            return Math.min(SIZES[i % SIZES.length], maxPayload);
        }

        long largestPayload() {
            return Math.min(SIZES[SIZES.length - 1], maxPayload);
        }

        MemorySegment header(int i) {
            return Patterns.segment(headerLength(i), -i);
        }

        MemorySegment payload(int i) {
            return Patterns.segment(payloadSize(i), i);
        }

        /** Messages 0 to {@code count - 1} arrived in order, intact; {@code how} says how message i was sent, for the failure. */
        void expectDelivered(Inbox inbox, int count, IntFunction<String> how) {
            for (int i = 0; i < count; i++) {
                Inbox.Received m = inbox.messages().get(i);
                String sent = how.apply(i);
                assertThat(m.id()).as("id of message %d%s (order)", i, sent).isEqualTo(i);
                assertSameBytes(m.header(), Patterns.bytes(headerLength(i), -i), "header of message " + i + sent);
                assertSameBytes(m.payload(), Patterns.bytes(payloadSize(i), i), "payload of message " + i + sent);
            }
        }
    }

    /**
     * Fails naming how {@code delivered} differs from {@code sent}: its length, or the first byte that differs. An array
     * comparison would print up to a thousand elements of each, alike at the start, and leave the author to find that a
     * payload was cut short or where it was damaged.
     */
    static void assertSameBytes(byte[] delivered, byte[] sent, String what) {
        assertSameBytes(delivered, "delivered", sent, "sent", what);
    }

    /**
     * The same for bytes that are not a message's, in the words of how each side came to be: {@code actual} as
     * {@code actualWas} ("found in the region"), {@code expected} as {@code expectedWas} ("put").
     */
    static void assertSameBytes(byte[] actual, String actualWas, byte[] expected, String expectedWas, String what) {
        if (actual.length != expected.length) {
            throw new AssertionError(what + ": " + actual.length + " bytes " + actualWas + ", " + expected.length + " " + expectedWas);
        }
        int at = Arrays.mismatch(actual, expected);
        if (at >= 0) {
            throw new AssertionError(what + ": byte " + at + " of " + expected.length + " " + actualWas + " as " + actual[at] + ", "
                    + expectedWas + " as " + expected[at]);
        }
    }

    /** Progresses the transports until {@code done}, one event awaited; fails when it has not come within {@link #progressGuard()}. */
    private void progressUntil(String what, BooleanSupplier done, Transport... transports) {
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (!done.getAsBoolean()) {
            for (Transport t : transports) Inbox.progress(t);
            // Done by the progress that overran (a callback that waited inside it, say) is done, not a timeout.
            if (System.nanoTime() > deadline && !done.getAsBoolean()) throw new AssertionError("waited " + progressGuard() + " for: " + what);
        }
    }

    /** Progresses the transports until {@code inbox} holds {@code count} messages, while they keep arriving. */
    private void progressUntilDelivered(Inbox inbox, int count, String what, Transport... transports) {
        progressWhileArriving(() -> count + " " + what + ": " + arrived(inbox), () -> inbox.size() >= count, inbox::size, () -> {
            for (Transport t : transports) Inbox.progress(t);
            return null;
        });
    }

    /** What arrived of messages numbered from 0: how many, and the first number missing from them. */
    private static String arrived(Inbox inbox) {
        java.util.Set<Integer> ids = new java.util.HashSet<>();
        for (Inbox.Received m : inbox.messages()) ids.add(m.id());
        int missing = 0;
        while (ids.contains(missing)) missing++;
        return inbox.size() + " arrived, the first missing is message " + missing
                + " (a message trySend accepted must arrive: when the peer's queue is full, trySend returns false)";
    }

    /** {@code ep.trySend} of a message without a header, marked so that a delivery inside it is named as one. */
    private static boolean trySend(TransportEndpoint ep, int id, MemorySegment payload) {
        return plainSend(() -> ep.trySend(id, MemorySegment.NULL, payload));
    }

    /**
     * A plain {@code trySend}'s answer: {@code true}, {@code false}, or {@link PeerFailedException}
     * once the peer failed. Anything else it throws breaks that contract and fails the test naming
     * the rule: a plugin that threw on a full queue was shown only its own exception ("queue full").
     */
    private static boolean plainSend(BooleanSupplier trySend) {
        try {
            return Inbox.calling("trySend()", trySend::getAsBoolean);
        } catch (PeerFailedException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new AssertionError("trySend() threw " + e + ": a transport refuses a message it cannot take now (its peer's queue or "
                    + "its own buffers full) by returning false, and the runtime keeps the message and tries again after progress(); "
                    + "trySend throws only PeerFailedException, once its peer is known dead (TransportEndpoint#trySend)", e);
        }
    }

    private void sendWhenAccepted(TransportEndpoint ep, int id, MemorySegment header, MemorySegment payload, Transport... transports) {
        retryUntilAccepted(id, () -> ep.trySend(id, header, payload), transports);
    }

    private void retryUntilAccepted(int id, BooleanSupplier trySend, Transport... transports) {
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (!plainSend(trySend)) {
            for (Transport t : transports) Inbox.progress(t);
            if (System.nanoTime() > deadline) throw new AssertionError("message " + id + " not accepted within " + progressGuard() + " while the receiver progressed");
        }
    }

    @Test
    public void publishesASmallAddressAndConnects() {
        Transport receiver = open(new Inbox());
        Transport sender = open(new Inbox());
        byte[] address = receiver.address();
        assertThat(address.length).as("address length").isBetween(1, 1024);
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        assertThat(ep.maxPayloadSize()).as("maxPayloadSize()").isPositive();
        assertThat(ep.maxHeaderSize()).as("maxHeaderSize()").isNotNegative();
        ep.close();
        ep.close();
    }

    /**
     * {@link Transport#connect} proves the peer reachable: it opens what the peer published and
     * completes a handshake, or throws. An address whose transport is gone (closed here; a process
     * that exited elsewhere) must be refused with a {@link ConduitException} naming what could not be
     * opened, in bounded time, so that the runtime can try the peer's next transport.
     */
    @Test
    public void connectToAClosedPeerThrowsInsteadOfAssumingItIsThere() throws Exception {
        Transport receiver = open(new Inbox());
        Transport sender = open(new Inbox());
        byte[] address = receiver.address();
        receiver.close();
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread connecting = startTestThread("tck-connect-to-closed-peer", () -> {
            try {
                outcome.set(closeAfterTest(sender.connect(Addresses.reader(plugin.name(), address), cause -> { })));
            } catch (Throwable e) {
                outcome.set(e);
            }
        });
        connecting.join(progressGuard());
        assertThat(connecting.isAlive()).as("connect() to the address of a transport that was closed, still running after %s: "
                + "connect must prove the peer reachable or throw, in bounded time", progressGuard()).isFalse();
        assertThat(outcome.get()).as("what connect() to the address of a transport that was closed did (Transport.connect: it proves the peer "
                + "reachable, opening what the peer published and completing a handshake, or throws ConduitException; an endpoint "
                + "returned means it assumed the peer was there)").isInstanceOf(ConduitException.class);
        assertThat(((Throwable) outcome.get()).getMessage()).as("the refusal's message (it names what could not be opened or verified)")
                .isNotBlank().doesNotContain("null");
    }

    @Test
    public void deliversEveryMessageOnceInOrder() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        Numbered messages = Numbered.on(ep);
        int count = 1000;
        for (int i = 0; i < count; i++) {
            sendWhenAccepted(ep, i, messages.header(i), messages.payload(i), receiver, sender);
        }
        progressUntilDelivered(inbox, count, "messages delivered", receiver, sender);
        for (int i = 0; i < 1000; i++) {
            Inbox.progress(receiver);
            Inbox.progress(sender);
        }
        assertThat(inbox.size()).as("messages delivered for %d sent (a duplicate makes more)", count).isEqualTo(count);
        messages.expectDelivered(inbox, count, i -> "");
    }

    /**
     * The largest payload {@link #deliversAMessageOfExactlyItsDeclaredLimitsIntact} sends: a larger {@code maxPayloadSize()}
     * is checked at this size only, so that a transport that declares gigabytes is tested in a test's memory and time.
     */
    static final long LARGEST_PAYLOAD_SENT = 16L << 20;

    /**
     * A message of exactly {@code maxHeaderSize()} header bytes and {@code maxPayloadSize()} payload bytes (at most
     * {@link #LARGEST_PAYLOAD_SENT}) arrives intact: the suite's other messages stay far below the limits (headers of up
     * to 40 bytes, payloads of up to 200,000), and until 2026-12-06 a transport that cut what lies between those sizes and
     * its declared limits passed the suite.
     */
    @Test
    public void deliversAMessageOfExactlyItsDeclaredLimitsIntact() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        int headerLength = ep.maxHeaderSize();
        long payloadLength = Math.min(ep.maxPayloadSize(), LARGEST_PAYLOAD_SENT);
        sendWhenAccepted(ep, 0, Patterns.segment(headerLength, -1), Patterns.segment(payloadLength, 1), receiver, sender);
        progressUntilDelivered(inbox, 1, "message of the declared limits delivered", receiver, sender);
        Inbox.Received m = inbox.messages().getFirst();
        assertSameBytes(m.header(), Patterns.bytes(headerLength, -1), "header of maxHeaderSize() = " + headerLength + " bytes");
        assertSameBytes(m.payload(), Patterns.bytes(payloadLength, 1), "payload of " + (payloadLength == ep.maxPayloadSize()
                ? "maxPayloadSize() = " + payloadLength + " bytes" : payloadLength + " bytes (maxPayloadSize() is " + ep.maxPayloadSize()
                + ", checked at the suite's largest payload)"));
    }

    /**
     * A payload the transport keeps ({@link Transport#keepDelivered()}, for the application's
     * {@code Message.keepPayload()}) stays as delivered while later messages arrive, until its
     * release runs, here on another thread; meanwhile the transport may refuse later messages for
     * room (backpressure, retried once it is released), and every message arrives once, in order,
     * intact. Keeping is optional: a transport that keeps no payload of these messages (returns
     * {@code null}, and the runtime copies) ends this test as aborted.
     */
    @Test
    public void aKeptPayloadStaysAsDeliveredWhileLaterMessagesArriveUntilReleasedFromAnotherThread() throws Exception {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        Numbered messages = Numbered.on(ep);
        inbox.keepOnePayload();
        int count = 200;
        boolean released = false;
        for (int i = 0; i < count; i++) {
            int n = i;
            // Patterned once, not at each try: while a payload is kept, a refused message is tried 10,000 times.
            MemorySegment header = messages.header(n);
            MemorySegment payload = messages.payload(n);
            BooleanSupplier send = () -> ep.trySend(n, header, payload);
            if (!released) {
                if (acceptedWithin(10_000, send, receiver, sender)) continue;
                // No room while a payload is kept may be the transport's backpressure: released, the room comes back.
                released = releaseKept(inbox, messages, "message " + i + " waited for room");
            }
            retryUntilAccepted(i, send, receiver, sender);
        }
        assumeTrue(inbox.kept() != null, "plugin '" + plugin.name() + "' kept no payload of " + count + " messages of up to "
                + messages.largestPayload() + " bytes (Transport.keepDelivered() returned null: the runtime copies what an "
                + "application keeps); keeping is optional");
        progressUntilDelivered(inbox, count, "messages delivered", receiver, sender);
        if (!released) releaseKept(inbox, messages, "every later message arrived");
        for (int i = 0; i < 1000; i++) {
            Inbox.progress(receiver);
            Inbox.progress(sender);
        }
        assertThat(inbox.size()).as("messages delivered for %d sent (a duplicate makes more)", count).isEqualTo(count);
        messages.expectDelivered(inbox, count, i -> "");
    }

    /** Tries a send for up to {@code rounds} progress rounds; whether it was accepted. */
    private static boolean acceptedWithin(int rounds, BooleanSupplier trySend, Transport... transports) {
        for (int round = 0; round < rounds; round++) {
            if (plainSend(trySend)) return true;
            for (Transport t : transports) Inbox.progress(t);
        }
        return false;
    }

    /** Checks the kept payload against what was sent, then runs its release on a thread of the test's own; true. */
    private boolean releaseKept(Inbox inbox, Numbered messages, String when) throws InterruptedException {
        MemorySegment kept = inbox.kept();
        if (kept == null) return false;
        int id = inbox.keptId();
        assertSameBytes(kept.toArray(ValueLayout.JAVA_BYTE), "kept", Patterns.bytes(messages.payloadSize(id), id),
                "sent", "payload of message " + id + ", kept (Transport.keepDelivered) and read once " + when);
        Thread releasing = startTestThread("releasing a kept payload", inbox.keptRelease());
        releasing.join();
        return true;
    }

    /**
     * {@link TransportEndpoint#trySend(int, MemorySegment, long, int, MemorySegment, long, long)},
     * by which the runtime sends from its local queue, sends the ranges it is given, at any offset
     * of one buffer holding both or of two buffers, in order with messages sent as views.
     */
    @Test
    public void sendsHeadersAndPayloadsGivenAsRanges() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        Numbered messages = Numbered.on(ep);
        int count = 200;
        MemorySegment buffer = Arena.ofAuto().allocate(messages.maxHeader() + messages.largestPayload() + 64);
        MemorySegment headers = Arena.ofAuto().allocate(messages.maxHeader() + 64);
        for (int i = 0; i < count; i++) {
            if (i % 3 == 2) {
                sendWhenAccepted(ep, i, messages.header(i), messages.payload(i), receiver, sender);
                continue;
            }
            int headerLength = messages.headerLength(i);
            long size = messages.payloadSize(i);
            MemorySegment headerBuffer = i % 3 == 0 ? buffer : headers;
            long headerAt = i % 7 + (i % 3 == 0 ? 0 : 11);
            long payloadAt = i % 3 == 0 ? headerAt + headerLength + i % 5 : i % 5;
            MemorySegment.copy(messages.header(i), 0, headerBuffer, headerAt, headerLength);
            MemorySegment.copy(messages.payload(i), 0, buffer, payloadAt, size);
            int id = i;
            retryUntilAccepted(id, () -> ep.trySend(id, headerBuffer, headerAt, headerLength, buffer, payloadAt, size), receiver, sender);
        }
        progressUntilDelivered(inbox, count, "messages delivered", receiver, sender);
        messages.expectDelivered(inbox, count, i -> switch (i % 3) {
            case 0 -> ", sent as ranges of one buffer";
            case 1 -> ", sent as ranges of two buffers";
            default -> ", sent as views";
        });
    }

    /**
     * Once {@link TransportEndpoint#trySend} accepted a message, the caller may reuse both segments: the runtime hands it
     * the application's own buffers ({@code Endpoint.send}), which the application refills for its next message as
     * {@code send} returns. Here every message is sent from the same header and payload buffers, overwritten as trySend
     * returns {@code true}. The suite's other messages are each sent from memory of its own, which nothing overwrites, and
     * until 2026-12-07 a transport that kept a view of the payload and read it only in the receiver's progress() (the
     * caller's memory, by then the next message's) passed every test of them.
     */
    @Test
    public void aSentMessagesBuffersMayBeReusedOnceTrySendAcceptedIt() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        Numbered messages = Numbered.on(ep);
        int count = 200;
        MemorySegment headers = Arena.ofAuto().allocate(messages.maxHeader());
        MemorySegment payloads = Arena.ofAuto().allocate(messages.largestPayload());
        for (int i = 0; i < count; i++) {
            MemorySegment header = headers.asSlice(0, messages.headerLength(i));
            MemorySegment payload = payloads.asSlice(0, messages.payloadSize(i));
            header.copyFrom(messages.header(i));
            payload.copyFrom(messages.payload(i));
            int id = i;
            retryUntilAccepted(id, () -> ep.trySend(id, header, payload), receiver, sender);
            // As the application does with its buffer once send returned: what the transport reads of it from now on is not message i.
            headers.fill((byte) 0x5A);
            payloads.fill((byte) 0x5A);
        }
        progressUntilDelivered(inbox, count, "messages delivered", receiver, sender);
        messages.expectDelivered(inbox, count, i -> ", sent from buffers the caller overwrote as trySend returned true (TransportEndpoint#"
                + "trySend: the caller may then reuse both segments, so a transport copies what it sends before it returns true, or "
                + "returns false)");
    }

    /** The most a handler of {@link #aDeliveredMessageStaysAsDeliveredWhileItsHandlerSendsToTheSameReceiver} sends, if never refused. */
    static final int MOST_SENT_FROM_A_HANDLER = 4096;
    static final long MOST_BYTES_SENT_FROM_A_HANDLER = 16L << 20;

    /**
     * The bytes handed to {@code onMessage} stay as delivered until the call returns ({@link dev.conduit.spi.MessageSink}),
     * whatever the handler does meanwhile: an answering handler sends from inside the call ({@link Transport#progress()}),
     * here to the same receiver, messages of the delivered one's sizes (other bytes) until the sender refuses (every room
     * the receiver gave back taken) or {@value #MOST_SENT_FROM_A_HANDLER} messages or
     * {@value #MOST_BYTES_SENT_FROM_A_HANDLER} bytes went, and then reads the message again. The inbox copies every
     * message as it arrives, and until 2026-12-07 a transport that gave a message's room back to its senders before
     * handing it to the sink (a ring whose read position is published first), where an answer was written into the
     * bytes its handler was reading, passed every test.
     */
    @Test
    public void aDeliveredMessageStaysAsDeliveredWhileItsHandlerSendsToTheSameReceiver() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        Numbered messages = Numbered.on(ep);
        // Messages 1 to 7 have a handler, one of each of the suite's sizes but the empty one; what they send is numbered on.
        int handled = Numbered.SIZES.length;
        record Sent(int id, int headerLength, long payloadLength, long seed) {
        }
        List<Sent> sent = new ArrayList<>();
        AtomicInteger answers = new AtomicInteger();
        inbox.whileDelivering(id -> id > 0 && id < handled, (id, headerLength, payloadLength) -> {
            // Another pattern at every byte than message id's (a seed 128 away): its bytes overwritten by one show.
            long seed = id + 128;
            MemorySegment header = Patterns.segment(headerLength, -seed);
            MemorySegment payload = Patterns.segment(payloadLength, seed);
            int count = 0;
            boolean refused = false;
            while (count < MOST_SENT_FROM_A_HANDLER && (long) count * (headerLength + payloadLength) < MOST_BYTES_SENT_FROM_A_HANDLER) {
                int answer = handled + answers.get();
                if (!plainSend(() -> ep.trySend(answer, header, payload))) {
                    refused = true;
                    break;
                }
                answers.incrementAndGet();
                sent.add(new Sent(answer, headerLength, payloadLength, seed));
                count++;
            }
            return "sent " + count + " messages of " + headerLength + " + " + payloadLength + " bytes to the same receiver"
                    + (refused ? ", until trySend refused" : "");
        });
        for (int i = 1; i < handled; i++) {
            sent.add(new Sent(i, messages.headerLength(i), messages.payloadSize(i), i));
            sendWhenAccepted(ep, i, messages.header(i), messages.payload(i), receiver, sender);
            progressWhileArriving(() -> sent.size() + " messages, those sent from the handlers included: " + inbox.size() + " arrived",
                    () -> inbox.size() >= sent.size(), inbox::size, () -> {
                        Inbox.progress(receiver);
                        return Inbox.progress(sender);
                    });
        }
        if (inbox.handlerFailure() != null) {
            throw new AssertionError("a handler's send from inside onMessage failed: " + inbox.handlerFailure(), inbox.handlerFailure());
        }
        assertThat(inbox.readAgain()).as("messages whose handler ran").hasSize(handled - 1);
        for (Inbox.ReadAgain again : inbox.readAgain()) {
            int id = again.id();
            String what = " of message " + id + ", read again as onMessage returned, after its handler " + again.handlerDid()
                    + " (MessageSink: the bytes handed to onMessage are valid until it returns, whatever the handler does; a transport "
                    + "gives a message's room back to its senders only once the sink's call returned)";
            if (again.why() != null) throw new AssertionError("the bytes" + what + " could not be read: " + again.why());
            assertSameBytes(again.header(), "read again", Patterns.bytes(messages.headerLength(id), -id), "delivered", "header" + what);
            assertSameBytes(again.payload(), "read again", Patterns.bytes(messages.payloadSize(id), id), "delivered", "payload" + what);
        }
        assertThat(inbox.size()).as("messages delivered for %d sent (a duplicate makes more)", sent.size()).isEqualTo(sent.size());
        for (int i = 0; i < sent.size(); i++) {
            Sent s = sent.get(i);
            Inbox.Received m = inbox.messages().get(i);
            String how = s.id() < handled ? "" : ", sent from the handler of message " + (s.seed() - 128);
            assertThat(m.id()).as("id of message %d delivered (order)", i).isEqualTo(s.id());
            assertSameBytes(m.header(), Patterns.bytes(s.headerLength(), -s.seed()), "header of message " + s.id() + how);
            assertSameBytes(m.payload(), Patterns.bytes(s.payloadLength(), s.seed()), "payload of message " + s.id() + how);
        }
    }

    /**
     * Zero-copy send ({@link TransportEndpoint#trySendEncoded}), where the transport offers it: the
     * encoder is called once, on {@code maxLength} bytes; what it wrote is committed and delivered in
     * order with the other messages; a claim whose encoder threw, or returned a length outside
     * {@code 0..maxLength}, is abandoned (the receiver never delivers it) and the exception reaches
     * the caller. A transport without it throws {@link NotSupportedException} without calling the
     * encoder, and the test ends as aborted.
     */
    @Test
    public void zeroCopySendCommitsWhatTheEncoderWroteAndAbandonsAFailedClaim() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        long maxLength = Math.min(4096, ep.maxPayloadSize());
        assumeTrue(maxLength > 1024, "maxPayloadSize() is " + ep.maxPayloadSize()
                + ": the runtime calls trySendEncoded only for a maxLength above 1 KiB");
        MemorySegment header = Patterns.segment(Math.min(ep.maxHeaderSize(), 16), -1);
        CheckedEncoder first = new CheckedEncoder(0, maxLength - 100, maxLength - 100, null);
        long sent;
        try {
            sent = sendEncodedWhenAccepted(ep, first, header, maxLength, receiver, sender);
        } catch (NotSupportedException e) {
            assertThat(first.calls).as("encoder calls made by a trySendEncoded that threw NotSupportedException (it must not call the "
                    + "encoder: the runtime then has it encode into a buffer of its own, a second time)").isZero();
            assumeTrue(false, "plugin '" + plugin.name() + "' has no zero-copy send (trySendEncoded throws NotSupportedException): "
                    + "the runtime encodes into a buffer of its own and calls trySend");
            return;
        }
        assertThat(sent).as("what trySendEncoded of message 0 returned (the length its encoder wrote)").isEqualTo(maxLength - 100);
        RuntimeException failure = new RuntimeException("the TCK's encoder of message 1 fails on purpose");
        assertThat(catchThrowable(() -> sendEncodedWhenAccepted(ep, new CheckedEncoder(1, 64, 64, failure), header, maxLength, receiver, sender)))
                .as("what trySendEncoded of message 1 threw, whose encoder threw (the encoder's exception reaches the caller)").isSameAs(failure);
        assertThat(catchThrowable(() -> sendEncodedWhenAccepted(ep, new CheckedEncoder(2, 64, maxLength + 1, null), header, maxLength,
                receiver, sender))).as("what trySendEncoded of message 2 threw, whose encoder returned maxLength + 1 = %d (the transport checks "
                + "the length with PayloadEncoder.checkWritten before it commits, and abandons the claim)", maxLength + 1)
                .isInstanceOf(RuntimeException.class);
        assertThat(catchThrowable(() -> sendEncodedWhenAccepted(ep, new CheckedEncoder(3, 64, -1, null), header, maxLength,
                receiver, sender))).as("what trySendEncoded of message 3 threw, whose encoder returned -1 (below 0 too: a transport that "
                + "commits it and returns -1 has the runtime take that for no room and encode the message again, a second time)")
                .isInstanceOf(RuntimeException.class);
        assertThat(sendEncodedWhenAccepted(ep, new CheckedEncoder(4, 5, 5, null), header, maxLength, receiver, sender))
                .as("what trySendEncoded of message 4 returned (the length its encoder wrote)").isEqualTo(5);
        progressUntilDelivered(inbox, 2, "messages delivered (0 and 4)", receiver, sender);
        for (int i = 0; i < 100; i++) {
            Inbox.progress(receiver);
            Inbox.progress(sender);
        }
        assertThat(inbox.messages()).extracting(Inbox.Received::id).as("ids delivered of zero-copy sends 0 to 4, whose encoders of 1 to "
                + "3 failed (a claim whose encoder threw or returned a length outside 0..maxLength is abandoned: the receiver never delivers it)")
                .containsExactly(0, 4);
        for (int i = 0; i < 2; i++) {
            Inbox.Received m = inbox.messages().get(i);
            long length = m.id() == 0 ? maxLength - 100 : 5;
            assertSameBytes(m.header(), Patterns.bytes(header.byteSize(), -1), "header of zero-copy send " + m.id());
            assertSameBytes(m.payload(), Patterns.bytes(length, m.id()),
                    "payload of zero-copy send " + m.id() + " (the " + length + " bytes its encoder wrote and returned)");
        }
    }

    /**
     * An encoder of message {@code id} that writes {@code length} bytes patterned from the id and
     * returns {@code returns}, or throws {@code failure}; it counts its calls and checks that it
     * is given {@code maxLength} bytes, by either call.
     */
    private static final class CheckedEncoder implements PayloadEncoder {
        final int id;
        final long length;
        final long returns;
        final RuntimeException failure;
        int calls;
        long given = -1;

        CheckedEncoder(int id, long length, long returns, RuntimeException failure) {
            this.id = id;
            this.length = length;
            this.returns = returns;
            this.failure = failure;
        }

        @Override
        public long encode(MemorySegment target) {
            return encode(target, 0, target.byteSize());
        }

        @Override
        public long encode(MemorySegment memory, long offset, long maxLength) {
            calls++;
            given = maxLength;
            if (failure != null) throw failure;
            Patterns.fill(memory.asSlice(offset, length), id);
            return returns;
        }
    }

    /** {@code ep.trySendEncoded} of the encoder's message, retried while it says there is no room; checks how it called the encoder. */
    private long sendEncodedWhenAccepted(TransportEndpoint ep, CheckedEncoder encoder, MemorySegment header, long maxLength, Transport... transports) {
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (true) {
            long sent;
            try {
                sent = Inbox.calling("trySendEncoded()", () -> ep.trySendEncoded(encoder.id, header, maxLength, encoder));
            } finally {
                assertThat(encoder.calls).as("encoder calls made by one trySendEncoded() of message %d (once per send)", encoder.id).isLessThanOrEqualTo(1);
                if (encoder.calls == 1) {
                    assertThat(encoder.given).as("bytes trySendEncoded() of message %d gave its encoder (maxLength)", encoder.id).isEqualTo(maxLength);
                }
            }
            if (sent >= 0) return sent;
            assertThat(encoder.calls).as("encoder calls made by a trySendEncoded() of message %d that returned -1 (no room: the encoder must "
                    + "not have been called, since the runtime then has it encode again)", encoder.id).isZero();
            for (Transport t : transports) Inbox.progress(t);
            if (System.nanoTime() > deadline) throw new AssertionError("message " + encoder.id + " not accepted by trySendEncoded within "
                    + progressGuard() + " while the receiver progressed");
        }
    }

    @Test
    public void refusesWhenFullAndDeliversWhatItAcceptedOnceTheReceiverProgresses() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        MemorySegment payload = Patterns.segment(Math.min(16_384, ep.maxPayloadSize()), 3);
        int accepted = 0;
        long sent = 0;
        while (trySend(ep, accepted, payload)) {
            accepted++;
            sent += payload.byteSize();
            assertThat(sent).as("bytes accepted while the receiver never progressed: the transport must refuse (trySend false) "
                    + "when its peer's queue is full, rather than queue without bound or drop what does not fit")
                    .isLessThanOrEqualTo(backpressureBound());
        }
        int acceptedBeforeFull = accepted;
        progressUntilDelivered(inbox, acceptedBeforeFull, "accepted messages delivered", receiver, sender);
        sendWhenAccepted(ep, accepted, MemorySegment.NULL, payload, receiver, sender);
        progressUntilDelivered(inbox, acceptedBeforeFull + 1, "messages delivered, the last one sent after the queue drained", receiver, sender);
        assertThat(inbox.messages()).extracting(Inbox.Received::id).as("ids delivered")
                .containsExactlyElementsOf(java.util.stream.IntStream.rangeClosed(0, acceptedBeforeFull).boxed().toList());
    }

    /**
     * A peer whose transport closes without closing its endpoints (a process exit) fails the
     * endpoint once: reported through {@code EndpointEvents.peerFailed} from the sender's
     * {@code progress()}, or by the keepalive probe ({@link TransportEndpoint#checkPeer}) where the
     * transport offers one, which is asked between progress calls as the runtime's keepalive asks it
     * (until 2026-12-03 it was not asked here, and a transport that finds a death only when probed,
     * as the SPI allows, failed this test).
     */
    @Test
    public void aPeerThatGoesAwayFailsTheEndpointOnce() {
        Transport receiver = open(new Inbox());
        Transport sender = open(new Inbox());
        List<PeerFailedException> failures = new CopyOnWriteArrayList<>();
        TransportEndpoint ep = connect(sender, receiver, failures::add);
        sendWhenAccepted(ep, 1, MemorySegment.NULL, Patterns.segment(8, 1), receiver, sender);
        receiver.close(); // as a process exit would: the peer never closes its endpoints
        List<PeerFailedException> probed = new CopyOnWriteArrayList<>();
        boolean[] probes = {true};
        progressUntil("the endpoint to a closed peer to fail: reported through EndpointEvents.peerFailed by the sender's progress(), or "
                + "by the keepalive probe (checkPeer), which this test asks between progress calls where the transport offers one", () -> {
                    if (probes[0] && failures.isEmpty() && probed.isEmpty()) {
                        try {
                            probe(ep, probed);
                        } catch (NotSupportedException e) {
                            probes[0] = false; // no probe: progress() alone must notice, as the runtime then only progresses
                        }
                    }
                    return !failures.isEmpty() || !probed.isEmpty();
                }, sender);
        for (int i = 0; i < 100; i++) Inbox.progress(sender);
        List<PeerFailedException> reported = new ArrayList<>(probed);
        reported.addAll(failures);
        assertThat(reported).as("failures reported for one dead peer: thrown by the keepalive probe %s, through EndpointEvents.peerFailed "
                + "%s (the runtime stops probing an endpoint once it failed): report a dead peer once, either by throwing PeerFailedException from "
                + "checkPeer() or through EndpointEvents.peerFailed, not both; a checkPeer() that called peerFailed returns normally", probed, failures).hasSize(1);
        assertThat(reported.getFirst().getMessage()).as("the failure's message").isNotBlank();
        assertReasonOfAPeerThatClosed(reported.getFirst());
        assertThat(catchThrowable(() -> {
            for (int i = 0; i < 1000; i++) trySend(ep, 2, Patterns.segment(8, 2));
        })).as("what 1000 calls of trySend() threw after the endpoint reported its peer failed (EndpointEvents.peerFailed; from then "
                + "on trySend throws that PeerFailedException: it neither returns false nor accepts the message)")
                .isInstanceOf(PeerFailedException.class);
    }

    /**
     * The keepalive probe ({@link TransportEndpoint#checkPeer}), optional: a transport without it
     * throws {@code NotSupportedException}, which ends this test as aborted. One that has it must
     * not report a peer that lives, however often it is asked, and must report one that went away,
     * by throwing {@code PeerFailedException} or through {@code EndpointEvents.peerFailed}, once
     * asked again (a probe that waits for an answer may report it from {@code progress()}).
     */
    @Test
    public void aKeepaliveProbeReportsAPeerThatWentAwayAndNoPeerThatLives() {
        Transport receiver = open(new Inbox());
        Transport sender = open(new Inbox());
        List<PeerFailedException> failures = new CopyOnWriteArrayList<>();
        TransportEndpoint ep = connect(sender, receiver, failures::add);
        List<PeerFailedException> thrown = new CopyOnWriteArrayList<>();
        try {
            probe(ep, thrown);
        } catch (NotSupportedException e) {
            assumeTrue(false, "plugin '" + plugin.name() + "' has no keepalive probe (checkPeer throws NotSupportedException: "
                    + e.getMessage() + "): optional");
        }
        for (int i = 0; i < 1000 && thrown.isEmpty(); i++) {
            probe(ep, thrown);
            Inbox.progress(receiver);
            Inbox.progress(sender);
        }
        assertThat(thrown).as("what 1000 keepalive probes (checkPeer) of a peer that lives and progresses threw").isEmpty();
        assertThat(failures).as("failures reported (EndpointEvents.peerFailed) while keepalive probes (checkPeer) looked at a peer that "
                + "lives and progresses").isEmpty();
        sendWhenAccepted(ep, 1, MemorySegment.NULL, Patterns.segment(8, 1), receiver, sender);

        receiver.close(); // as a process exit would: the peer never closes its endpoints
        progressUntil("a keepalive probe (checkPeer) to report the peer that went away (by throwing PeerFailedException or through "
                + "EndpointEvents.peerFailed)", () -> {
                    probe(ep, thrown);
                    return !failures.isEmpty() || !thrown.isEmpty();
                }, sender);
        PeerFailedException reported = thrown.isEmpty() ? failures.getFirst() : thrown.getFirst();
        assertThat(reported.getMessage()).as("the message of the failure the keepalive probe reported").isNotBlank();
        assertReasonOfAPeerThatClosed(reported);
    }

    /**
     * The reason a transport gives for a peer that closed while its process lives: {@code CLOSED},
     * or {@code UNKNOWN} where it cannot tell a close from a death (optional, as for a plugin built
     * before SPI 1.1). Anything else is wrong, {@code DIED} the worst: an application takes back what
     * a dead peer held, which this one could still write.
     */
    private static void assertReasonOfAPeerThatClosed(PeerFailedException failure) {
        assertThat(failure.reason()).as("the reason (PeerFailedException.reason()) of the failure of a peer that closed its transport "
                + "while its process lives: CLOSED, or UNKNOWN where the transport cannot tell; %s", failure.getMessage())
                .isIn(PeerFailedException.Reason.CLOSED, PeerFailedException.Reason.UNKNOWN);
    }

    private static void probe(TransportEndpoint ep, List<PeerFailedException> thrown) {
        try {
            ep.checkPeer();
        } catch (PeerFailedException e) {
            thrown.add(e);
        }
    }

    @Test
    public void malformedAddressesAreRefusedNamingTheProblem() {
        Transport receiver = open(new Inbox());
        Transport sender = open(new Inbox());
        byte[] address = receiver.address();
        for (int length = 0; length < address.length; length++) {
            assertRefused(plugin.name(), sender, Arrays.copyOf(address, length), "connecting to an address cut to " + length + " of its " + address.length
                    + " bytes");
        }
        assertRefused(plugin.name(), sender, Arrays.copyOf(address, address.length + 1), "connecting to an address of " + address.length
                + " bytes with a byte after its end (PayloadReader#end checks there is none)");
    }

    /**
     * An address holds paths relative to the shared directory only ({@link Transport#address()}): a
     * container mounts the host's directory at a path of its own, where the host's absolute path
     * names nothing, or something else.
     */
    @Test
    public void anAddressNamesNoAbsolutePathOfTheSharedDirectory() {
        byte[] address = open(new Inbox()).address();
        String directory = sharedDirectory().toAbsolutePath().toString();
        // Compared as bytes, whatever the encoding of the path: each byte one char of ISO 8859-1.
        assertThat(new String(address, ISO_8859_1))
                .as("the address of plugin '%s' (%d bytes) holds the shared directory's absolute path %s: a peer that mounts the "
                        + "directory elsewhere (a container) cannot open it there; publish paths relative to the shared directory, "
                        + "which each side opens as its own shared.dir", plugin.name(), address.length, directory)
                .doesNotContain(new String(directory.getBytes(UTF_8), ISO_8859_1));
    }

    /**
     * Fails unless {@code sender} refuses {@code address} with a {@link ConduitException} whose message names the problem,
     * saying what the plugin did instead: an assertion that the throwable is not null told an author that the plugin
     * connected only as "Expecting actual not to be null".
     */
    private static void assertRefused(String plugin, Transport sender, byte[] address, String what) {
        TransportEndpoint ep;
        try {
            ep = sender.connect(Addresses.reader(plugin, address), cause -> { });
        } catch (ConduitException e) {
            if (e.getMessage() == null || e.getMessage().contains("null")) {
                throw new AssertionError(what + ": refused, but with a message that names no problem: " + e.getMessage(), e);
            }
            return;
        } catch (RuntimeException e) {
            throw new AssertionError(what + ": threw " + e + " instead of a ConduitException naming the problem (PayloadReader's "
                    + "reads and #end throw one)", e);
        }
        AssertionError connected = new AssertionError(what + ": the plugin connected (returned an endpoint) instead of refusing the "
                + "address with a ConduitException naming the problem (PayloadReader's reads and #end throw one)");
        try {
            ep.close();
        } catch (RuntimeException e) {
            connected.addSuppressed(e);
        }
        throw connected;
    }

    /**
     * A message that {@code trySend} accepted is delivered also when its endpoint is closed before
     * the peer read it ({@link TransportEndpoint#close()}): the runtime closes an endpoint as soon
     * as its local queue is empty, not when the peer has read everything. The endpoint is closed
     * once {@code trySend} refuses, with what it accepted last still in the transport's own buffers
     * where it keeps any (a frame the socket has not taken yet, a payload in a bounce buffer of this
     * side), which the close must not throw away.
     */
    @Test
    public void messagesAcceptedBeforeTheEndpointClosesAreDelivered() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        sendWhenAccepted(ep, 0, MemorySegment.NULL, Patterns.segment(64, 0), receiver, sender); // connected (wired up, if it must be)
        MemorySegment payload = Patterns.segment(Math.min(16_384, ep.maxPayloadSize()), 1);
        int count = 1;
        long sent = 0;
        // The receiver reads none of these; a transport that never refuses is the backpressure test's to fail.
        while (sent <= backpressureBound() && trySend(ep, count, payload)) {
            count++;
            sent += payload.byteSize();
        }
        int accepted = count;
        ep.close();
        progressUntilDelivered(inbox, accepted, "messages accepted before the endpoint closed (until trySend refused), delivered",
                receiver, sender);
        assertThat(inbox.messages()).extracting(Inbox.Received::id).as("ids delivered")
                .containsExactlyElementsOf(java.util.stream.IntStream.range(0, accepted).boxed().toList());
        for (Inbox.Received m : inbox.messages().subList(1, accepted)) {
            assertSameBytes(m.payload(), Patterns.bytes(payload.byteSize(), 1), "payload of message " + m.id() + ", accepted before the endpoint closed");
        }
    }

    @Test
    public void closeIsIdempotent() {
        Transport receiver = open(new Inbox());
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        ep.close();
        ep.close();
        sender.close();
        sender.close();
        receiver.close();
        receiver.close();
    }

    @Test
    public void undeclaredOperationsThrowNotSupported() {
        Transport receiver = open(new Inbox());
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        if (!plugin.capabilities().contains(Capability.WAKEUP)) {
            undeclared(Capability.WAKEUP, "await()", () -> receiver.await(1_000_000));
            undeclared(Capability.WAKEUP, "signal()", () -> {
                receiver.signal();
                return null;
            });
        }
        RemoteRegion nowhere = null;
        if (!plugin.capabilities().contains(Capability.RMA)) {
            undeclared(Capability.RMA, "put()", () -> {
                ep.put(MemorySegment.NULL, nowhere, 0);
                return null;
            });
            undeclared(Capability.RMA, "get()", () -> {
                ep.get(nowhere, 0, MemorySegment.NULL);
                return null;
            });
        }
        if (!plugin.capabilities().contains(Capability.ATOMICS)) {
            undeclared(Capability.ATOMICS, "fetchAdd()", () -> ep.fetchAdd(nowhere, 0, 1));
            undeclared(Capability.ATOMICS, "compareAndSwap()", () -> ep.compareAndSwap(nowhere, 0, 0, 1));
        }
    }

    /** An operation of a capability the plugin does not declare: it keeps the SPI's default, which says "not supported". */
    private void undeclared(Capability capability, String operation, Operation use) {
        assertNotSupported(operation + " without " + capability + " (plugin '" + plugin.name() + "' does not declare it)",
                "an operation of an undeclared capability keeps the SPI's default, which throws it; declare " + capability
                        + " if the plugin implements it", use);
    }

    /** A signal while no thread sleeps is kept: the next await returns true at once ({@link Transport#signal()}). */
    @Test
    public void aSignalBeforeAwaitMakesTheNextAwaitReturnTrue() {
        assume(Capability.WAKEUP);
        Transport receiver = open(new Inbox());
        receiver.signal();
        assertThat(receiver.await(java.util.concurrent.TimeUnit.SECONDS.toNanos(5)))
                .as("await() after a signal() made while nobody slept (Worker.await promises it is never lost)").isTrue();
    }

    /**
     * A timeout of 0 or less has passed: await looks once and returns ({@link Transport#await}).
     * Callers that pass the time left to a deadline pass one once the deadline is gone; a transport
     * that hands it to a wait reading it as "no timeout" sleeps until a signal, its liveness checks
     * with it.
     */
    @Test
    public void anAwaitWhoseTimeoutHasPassedReturnsAtOnce() throws Exception {
        assume(Capability.WAKEUP);
        Transport receiver = open(new Inbox());
        long[] passed = {0, -1, Long.MIN_VALUE};
        java.util.concurrent.atomic.AtomicInteger returned = new java.util.concurrent.atomic.AtomicInteger();
        Thread waiter = startTestThread("tck-await-passed-timeout", () -> {
            for (long timeout : passed) {
                Inbox.calling("await()", () -> receiver.await(timeout));
                returned.incrementAndGet();
            }
        });
        waiter.join(progressGuard().toMillis());
        int stuckAt = returned.get();
        while (waiter.isAlive()) { // free it for the tests after this one
            receiver.signal();
            waiter.join(10);
        }
        assertThat(stuckAt).as("await(%d) still running %s later: a timeout of 0 or less has passed, so await looks once and "
                + "returns", stuckAt < passed.length ? passed[stuckAt] : 0, progressGuard()).isEqualTo(passed.length);
    }

    @Test
    public void awaitSleepsUntilSignalledOrAMessageArrives() throws Exception {
        assume(Capability.WAKEUP);
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        // A transport may finish a connection on threads of its own, and taking it over is work that makes await return true.
        // One message through first: then the message the sleeper below waits for is the only work there is.
        sendWhenAccepted(ep, 8, MemorySegment.NULL, Patterns.segment(8, 8), receiver, sender);
        progressUntil("the message that sets the connection up", () -> inbox.size() == 1, receiver, sender);
        receiver.await(1_000_000); // nothing to do: returns after its timeout, true or false
        // await() may return false early (a spurious wakeup: the runtime sleeps again), but only a signal or work makes it return true.
        Thread waiter = startTestThread("tck-await-signal", () -> awaitTrue(receiver));
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (waiter.isAlive() && System.nanoTime() < deadline) {
            receiver.signal();
            waiter.join(10);
        }
        assertThat(woken).as("await() returned true after signal()").isTrue();
        drainWakeups(receiver);
        woken = false;
        Thread sleeper = startTestThread("tck-await-message", () -> awaitTrue(receiver));
        Thread.sleep(20);
        sendStarted = true;
        sendWhenAccepted(ep, 9, MemorySegment.NULL, Patterns.segment(8, 9), sender);
        sleeper.join(progressGuard().plusSeconds(5));
        assertThat(sleeper.isAlive()).as("await() still running %s after its timeout ran out (it returns by its timeout)", progressGuard()).isFalse();
        assertThat(woken).as("await() returned true when a message arrived").isTrue();
        // Left-over signals were drained: a true before the send came from neither a signal nor work, and proves nothing about messages.
        assertThat(wokenAfterSend).as("the await() that returned true did so after the send began (await returns true only for a "
                + "signal or work, and no signal was made)").isTrue();
        progressUntil("the message that woke the receiver", () -> inbox.size() == 2, receiver);
    }

    /**
     * Consumes the wake-ups still pending (signals the first phase made after the waiter woke): a
     * transport may keep several. It must run out of them: true without a signal or work breaks the
     * contract of {@link Transport#await}.
     */
    private void drainWakeups(Transport transport) {
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (Inbox.calling("await()", () -> transport.await(1_000_000))) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("await() still returns true " + progressGuard() + " after the last signal(), with no work: "
                        + "it returns true only for a signal or work (a kept signal makes one await return true, not every one)");
            }
        }
    }

    /** Whether the thread in {@link #awaitTrue} saw await() return true, and whether the send had begun by then. */
    private volatile boolean woken;
    private volatile boolean wokenAfterSend;
    private volatile boolean sendStarted;

    private void awaitTrue(Transport transport) {
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (System.nanoTime() < deadline && !testEnding()) {
            if (Inbox.calling("await()", () -> transport.await(deadline - System.nanoTime()))) {
                wokenAfterSend = sendStarted;
                woken = true;
                return;
            }
        }
    }

    // ---- senders: answering a message, optional (MessageSink.onMessage with a sender, Transport.senderAddress, onSenderClosed) ----

    /** Ends the test as aborted unless {@code m} came with the key of its connection: naming senders is optional. */
    private long keyOrAbort(Inbox.Received m) {
        assumeTrue(m.named(), "plugin '" + plugin.name() + "' names no sender (it delivers through MessageSink.onMessage without a "
                + "sender key): answering a message through the address its sender announced (Transport.senderAddress, "
                + "MessageSink.onSenderClosed) is optional, and not part of its contract");
        return m.sender();
    }

    /** Message {@code id} as it arrived. */
    private static Inbox.Received message(Inbox inbox, int id) {
        return inbox.messages().stream().filter(m -> m.id() == id).findFirst().orElseThrow();
    }

    /** The key message {@code id} came with. */
    private static long keyOf(Inbox inbox, int id) {
        return message(inbox, id).sender();
    }

    /** How the tests with three connections name connection {@code e}. */
    private static String connection(int e) {
        return e < 2 ? "endpoint " + e + " of the first sender transport" : "the endpoint of the second sender transport";
    }

    /** A receiver and three connections to it: endpoints 0 and 1 of {@code sender}, endpoint 2 of {@code other}. */
    private record ThreeConnections(Inbox inbox, Transport receiver, Transport sender, Transport other, List<TransportEndpoint> endpoints) {
        Transport[] transports() {
            return new Transport[] {receiver, sender, other};
        }
    }

    /**
     * Opens {@link ThreeConnections} and sends {@code perEndpoint} messages over each, in turn,
     * numbered {@code endpoint * 100 + i}, until all arrived.
     */
    private ThreeConnections threeConnectionsThatSent(int perEndpoint) {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        Transport other = open(new Inbox());
        ThreeConnections c = new ThreeConnections(inbox, receiver, sender, other, List.of(connect(sender, receiver, cause -> { }),
                connect(sender, receiver, cause -> { }), connect(other, receiver, cause -> { })));
        for (int i = 0; i < perEndpoint; i++) {
            for (int e = 0; e < c.endpoints().size(); e++) {
                int id = e * 100 + i;
                sendWhenAccepted(c.endpoints().get(e), id, MemorySegment.NULL, Patterns.segment(8 + i, id), c.transports());
            }
        }
        int count = perEndpoint * c.endpoints().size();
        progressUntil(count + " messages of three endpoints", () -> inbox.size() >= count, c.transports());
        return c;
    }

    /**
     * Runs {@code check} on {@code senderAddress(key)}, unless the transport gives no addresses
     * ({@code NotSupportedException}: optional, while it may still name senders).
     */
    private static void checkSenderAddress(Transport receiver, long key, java.util.function.Consumer<byte[]> check) {
        byte[] address;
        try {
            address = receiver.senderAddress(key);
        } catch (NotSupportedException e) {
            return; // it gives no addresses: the keys are all there is to check
        }
        check.accept(address);
    }

    /**
     * Naming the connection each message came by is optional: a transport that does
     * ({@link dev.conduit.spi.MessageSink#onMessage(int, MemorySegment, long, int, MemorySegment, long, long, long)})
     * does it for every message, with the same key for every message of one connection, never 0,
     * and another key for each connection it delivers from at the same time: here two endpoints of
     * one sender transport and one of another, sending in turn. A transport that names no sender
     * passes.
     */
    @Test
    public void aTransportThatNamesSendersGivesEachConnectionOneKeyOfItsOwnNeverZero() {
        ThreeConnections c = threeConnectionsThatSent(5);
        List<Inbox.Received> messages = c.inbox().messages();
        long named = messages.stream().filter(Inbox.Received::named).count();
        if (named == 0) {
            return; // it names no sender: optional
        }
        assertThat(named).as("messages delivered with the key of their connection (MessageSink.onMessage with a sender), of %d "
                + "delivered: a transport that names senders names the sender of every message", messages.size()).isEqualTo(messages.size());
        long[] keys = new long[c.endpoints().size()];
        for (int e = 0; e < keys.length; e++) {
            int endpoint = e;
            List<Long> ofEndpoint = messages.stream().filter(m -> m.id() / 100 == endpoint).map(Inbox.Received::sender).distinct().toList();
            assertThat(ofEndpoint).as("the keys the messages of %s came with (one connection: one key for every message)", connection(e))
                    .hasSize(1);
            keys[e] = ofEndpoint.getFirst();
            assertThat(keys[e]).as("the key of %s (never 0)", connection(e)).isNotZero();
        }
        assertThat(keys[1]).as("the key of %s, against that of %s (two connections delivering at once: never the key of another "
                + "connection the transport still delivers from)", connection(1), connection(0)).isNotEqualTo(keys[0]);
        assertThat(keys[2]).as("the key of %s, against those of the first sender transport's two endpoints", connection(2))
                .isNotEqualTo(keys[0]).isNotEqualTo(keys[1]);
    }

    /**
     * A transport that names senders and gives their addresses ({@link Transport#senderAddress},
     * optional: {@code NotSupportedException} ends this test as aborted) gives the bytes the
     * sender's transport returns from {@link Transport#address()}, and connecting to them from the
     * receiver reaches the sender: a reply arrives there.
     */
    @Test
    public void aSendersAddressIsItsTransportsAddressAndAReplyToItArrives() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Inbox senderInbox = new Inbox();
        Transport sender = open(senderInbox);
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        sendWhenAccepted(ep, 1, MemorySegment.NULL, Patterns.segment(16, 1), receiver, sender);
        progressUntil("the request", () -> inbox.size() == 1, receiver, sender);
        long key = keyOrAbort(inbox.messages().getFirst());
        byte[] address;
        try {
            address = receiver.senderAddress(key);
        } catch (NotSupportedException e) {
            throw new org.opentest4j.TestAbortedException("plugin '" + plugin.name() + "' names senders but gives no sender's address "
                    + "(Transport.senderAddress threw NotSupportedException: " + e.getMessage() + "): optional", e);
        }
        assertThat(address).as("senderAddress(%d), the key the request came with, while its connection delivers (null only once it "
                + "no longer does)", key).isNotNull();
        assertSameBytes(address, "given by the receiver's senderAddress(" + key + ")", sender.address(), "returned by the sender "
                + "transport's address()", "the address of the request's sender");
        TransportEndpoint reply = receiver.connect(Addresses.reader(plugin.name(), address), cause -> { });
        sendWhenAccepted(reply, 2, MemorySegment.NULL, Patterns.segment(16, 2), receiver, sender);
        progressUntil("the reply, sent through an endpoint the receiver connected to the address senderAddress gave, at the sender",
                () -> senderInbox.size() == 1, receiver, sender);
        assertThat(senderInbox.messages().getFirst().id()).as("id of the reply").isEqualTo(2);
        assertSameBytes(senderInbox.messages().getFirst().payload(), Patterns.bytes(16, 2), "payload of the reply");
    }

    /**
     * A transport that names senders tells its sink that a connection delivers nothing more
     * ({@link dev.conduit.spi.MessageSink#onSenderClosed}) once its sender closed the endpoint:
     * once, after the connection's last message, while the receiver progresses, and not for
     * another connection of the same sender; {@code senderAddress} of the key is then {@code null}.
     * The endpoint closes with messages the receiver has not delivered yet, as the runtime closes
     * one as soon as its local queue is empty: they come before the end, with the connection's key.
     * A transport that told the end first delivered them under a key the runtime had retired, and an
     * answer through {@code Message.replyEndpoint()} failed "that connection has ended" for a sender
     * that lives; until 2026-12-07 the TCK closed only once every message had arrived, and passed it.
     */
    @Test
    public void aSenderThatClosesItsEndpointIsToldOnceAfterItsLastMessage() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint closing = connect(sender, receiver, cause -> { });
        TransportEndpoint staying = connect(sender, receiver, cause -> { });
        sendWhenAccepted(closing, 0, MemorySegment.NULL, Patterns.segment(8, 0), receiver, sender);
        sendWhenAccepted(staying, 100, MemorySegment.NULL, Patterns.segment(8, 100), receiver, sender);
        progressUntil("2 messages of two endpoints", () -> inbox.size() == 2, receiver, sender);
        long key = keyOrAbort(message(inbox, 0));
        long stayingKey = keyOf(inbox, 100);
        int last = 5;
        for (int i = 1; i <= last; i++) {
            // Progressed only while refused: what it accepted last is still undelivered at the close.
            sendWhenAccepted(closing, i, MemorySegment.NULL, Patterns.segment(8, i), receiver, sender);
        }
        closing.close();
        expectToldOnce(inbox, receiver, key, "the sender closed its endpoint", receiver, sender);
        int toldAfter = inbox.sendersClosed().stream().filter(c -> c.sender() == key).findFirst().orElseThrow().after();
        assertThat(inbox.messages().subList(0, toldAfter)).filteredOn(m -> m.named() && m.sender() == key)
                .extracting(Inbox.Received::id)
                .as("ids of the messages delivered with key %d before onSenderClosed(%d): every message its endpoint sent, also those "
                        + "still in flight when it closed (the end of a connection comes after its last message)", key, key)
                .containsExactlyElementsOf(java.util.stream.IntStream.rangeClosed(0, last).boxed().toList());
        assertThat(inbox.timesClosed(stayingKey)).as("calls of onSenderClosed(%d), the key of the sender's other endpoint, which "
                + "still delivers", stayingKey).isZero();
        checkSenderAddress(receiver, stayingKey, address -> assertThat(address)
                .as("senderAddress(%d) of the connection that still delivers", stayingKey).isNotNull());
    }

    /**
     * A transport that declares {@code MULTI} and names senders gives a sender's address to another
     * thread while its progress thread tells that connection's end: under a {@code MULTI} worker a
     * handler on one thread may answer (the runtime asks {@code senderAddress}) while another
     * thread's {@code progress()} tells the end (and the runtime closes a reply endpoint inside
     * it, which may wait for a thread that sends on it), so a plugin lock held across
     * {@code onSenderClosed} that {@code senderAddress} also takes holds up the answer for as long,
     * or deadlocks it ({@link dev.conduit.spi.MessageSink#onSenderClosed}). Asked on another thread
     * inside the callback, it must answer ({@code null}, by then) within
     * {@value Inbox#ASKER_WAIT_SECONDS} s. Aborted for a transport that does not declare
     * {@code MULTI} (one thread at a time calls it), names no sender or gives no addresses.
     */
    @Test
    public void aSendersAddressAskedFromAnotherThreadWhileItsEndIsToldIsNotHeldUp() {
        assumeTrue(plugin.threadModes().contains(ThreadMode.MULTI), "the plugin does not declare MULTI: one thread at a "
                + "time calls its transport, so no thread asks senderAddress while another tells an end");
        Inbox inbox = new Inbox();
        inbox.asksFromAnotherThreadAtTheEnd(newTestExecutor("tck asks senderAddress"));
        Transport receiver = open(inbox, ThreadMode.MULTI);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        sendWhenAccepted(ep, 1, MemorySegment.NULL, Patterns.segment(8, 1), receiver, sender);
        progressUntil("the message", () -> inbox.size() == 1, receiver, sender);
        long key = keyOrAbort(message(inbox, 1));
        ep.close();
        progressUntil("onSenderClosed(" + key + ") after the sender closed its endpoint", () -> inbox.timesClosed(key) > 0,
                receiver, sender);
        Inbox.SenderClosed told = inbox.sendersClosed().stream().filter(c -> c.sender() == key).findFirst().orElseThrow();
        assumeFalse(Inbox.NOT_ASKED.equals(told.addressThen()), "the transport names senders but gives no addresses "
                + "(senderAddress throws NotSupportedException): optional");
        assertThat(told.addressThen()).as("senderAddress(%d), asked on another thread while onSenderClosed(%d) ran on the progress "
                + "thread: null, and not held up", key, key).isEqualTo(Inbox.NO_ADDRESS);
    }

    /** Every connection of a sender whose transport closes (as when its worker closes or its process dies) is told once. */
    @Test
    public void everyConnectionOfASenderWhoseTransportClosesIsToldOnce() {
        ThreeConnections c = threeConnectionsThatSent(1);
        Inbox inbox = c.inbox();
        long first = keyOrAbort(message(inbox, 0));
        long second = keyOf(inbox, 100);
        long staying = keyOf(inbox, 200);
        c.sender().close();
        expectToldOnce(inbox, c.receiver(), first, "the sender's transport closed (" + connection(0) + ")", c.receiver(), c.other());
        expectToldOnce(inbox, c.receiver(), second, "the sender's transport closed (" + connection(1) + ")", c.receiver(), c.other());
        assertThat(inbox.timesClosed(staying)).as("calls of onSenderClosed(%d), the key of %s, which still delivers", staying,
                connection(2)).isZero();
    }

    /**
     * Progresses until onSenderClosed({@code key}) came, then 100 rounds more, and checks it came
     * once, after every message of the key, and that {@code senderAddress} gives no address for it
     * any more (where the transport gives addresses), already when asked inside the callback.
     */
    private void expectToldOnce(Inbox inbox, Transport receiver, long key, String why, Transport... progressing) {
        progressUntil("onSenderClosed(" + key + ") after " + why + " (MessageSink.onSenderClosed: the connection delivers nothing "
                + "more; the receiver progressed)", () -> inbox.timesClosed(key) > 0, progressing);
        for (int i = 0; i < 100; i++) {
            for (Transport t : progressing) Inbox.progress(t);
        }
        assertThat(inbox.timesClosed(key)).as("calls of onSenderClosed(%d) after %s, 100 progress calls after the first (once per "
                + "key)", key, why).isEqualTo(1);
        Inbox.SenderClosed told = inbox.sendersClosed().stream().filter(c -> c.sender() == key).findFirst().orElseThrow();
        List<Inbox.Received> messages = inbox.messages();
        for (int i = told.after(); i < messages.size(); i++) {
            Inbox.Received m = messages.get(i);
            assertThat(m.named() && m.sender() == key).as("message %d, delivered with key %d after onSenderClosed(%d) (%s): the end of a "
                    + "connection comes after its last message", m.id(), key, key, why).isFalse();
        }
        checkSenderAddress(receiver, key, address -> assertThat(address).as("senderAddress(%d) once onSenderClosed(%d) came (%s): "
                + "null, the connection delivers no more", key, key, why).isNull());
        if (!Inbox.NOT_ASKED.equals(told.addressThen())) {
            assertThat(told.addressThen()).as("senderAddress(%d), asked inside onSenderClosed(%d) (%s): null, given up before the end "
                    + "is told, since the runtime connects answers through what it gives (MessageSink.onSenderClosed)", key, key, why)
                    .isEqualTo(Inbox.NO_ADDRESS);
        }
    }

    /**
     * The receiver's own close tells its sink of no sender: the worker that closes its transport
     * closes every endpoint itself ({@link dev.conduit.spi.MessageSink#onSenderClosed}).
     */
    @Test
    public void theReceiversOwnCloseTellsOfNoSender() {
        Inbox inbox = new Inbox();
        Transport receiver = open(inbox);
        Transport sender = open(new Inbox());
        TransportEndpoint ep = connect(sender, receiver, cause -> { });
        sendWhenAccepted(ep, 1, MemorySegment.NULL, Patterns.segment(8, 1), receiver, sender);
        progressUntil("a message", () -> inbox.size() == 1, receiver, sender);
        Inbox.calling("the receiver's close()", () -> {
            receiver.close();
            return null;
        });
        assertThat(inbox.sendersClosedAsCalled()).as("calls of onSenderClosed made by the receiver's own close() (not called when the "
                + "transport itself closes: the worker closes every endpoint)").isEmpty();
    }

    /**
     * What makes the plugin reclaim the files that workers which died left in the shared directory, as
     * the plugin documents it: {@link #aKilledWorkersFilesAreReclaimedByTheNextTransportAndALiveOnesStay}
     * looks at the directory while what this returns is open, and closes it after. By default the next
     * transport opened with {@code context} on the directory, as a restarted service's first worker
     * opens one (where memfd and posix reclaim). Override it for another trigger the plugin documents
     * (its memory provider's open, a command of its own), returning what to close; a plugin whose dead
     * workers' files something outside it clears, which its documentation names, skips the check with
     * {@code Assumptions.abort("why")}.
     */
    protected AutoCloseable reclaimTheFilesOfDeadWorkers(ConduitPlugin plugin, TransportContext context) {
        return plugin.openTransport(context);
    }

    /**
     * Optional, as the memory suite's check of a killed exporter's files: what a worker's process
     * killed with {@code SIGKILL} left in the shared directory (its receive queue, sockets, lease:
     * it closed nothing) is gone once the plugin's reclaim trigger ran ({@link #reclaimTheFilesOfDeadWorkers},
     * by default the next transport opened on the directory), and the files of a second worker's
     * process, which lives on, are all still there. Each process ({@link TransportingChild}) opens the
     * plugin's transport and connects it to one of this test's, sending it a message, so that files
     * a transport makes only for a connection are there too. Without it every crash of an
     * application leaves its files for good, and under {@code /dev/shm} they are memory. A plugin
     * whose worker made no file in the shared directory (the TCK's loopback, verbs over its simulated
     * fabric) skips it, saying so. The killed process's files that the plugin left are removed after
     * the check, so that the check of the directory after the test does not report them twice.
     */
    @Test
    public void aKilledWorkersFilesAreReclaimedByTheNextTransportAndALiveOnesStay() throws Exception {
        Transport peer = open(new Inbox());
        checkAKilledOwnersFilesAreReclaimed(plugin.name(), () -> startWorker(peer), TransportingChild.OPENED,
                line -> "the worker's process of plugin '" + plugin.name() + "' made no file in the shared directory " + sharedDirectory()
                        + " (its transport opened, " + (line.equals(TransportingChild.CONNECTED) ? "connected and sent a message" : line)
                        + "): nothing of a killed worker's for the plugin to reclaim there",
                () -> reclaimTheFilesOfDeadWorkers(plugin, transportContext(ThreadMode.SERIALIZED, new Inbox())),
                "a worker's process", "reclaimTheFilesOfDeadWorkers", "the next transport opened on the directory");
    }

    /** Starts a {@link TransportingChild} of the plugin on the shared directory, connecting to {@code peer}. */
    private ChildJvm.Started startWorker(Transport peer) throws IOException {
        return startChild(TransportingChild.class, plugin, Patterns.hex(peer.address()));
    }

    // ---- through the runtime ----

    /**
     * A {@code MULTI} worker sends from 4 threads at once, each from a buffer of its own that it refills as each send
     * returns, and progresses from them and from the test's thread: every thread's messages arrive once, in its order,
     * as sent. The runtime hands a plugin that does not declare {@code MULTI} one call at a time (its lock), from
     * whichever thread made it. A failure names the thread and the call, what the plugin threw or delivered, and the
     * rule it broke ({@link #whyACallOfAMultiWorkerThrew}); it was a bare exception among "errors of the sending threads",
     * or two lists of 2,000 sequence numbers.
     */
    @Test
    public void aMultiWorkerUsedFromManyThreadsKeepsEachThreadsOrder() throws Exception {
        Conduit conduit = newConduit();
        Worker receiver = closeAfterTest(conduit.newWorker(ThreadMode.MULTI));
        Worker sender = closeAfterTest(conduit.newWorker(ThreadMode.MULTI));
        int threads = 4;
        int perThread = 2000;
        Map<Long, List<Long>> received = new ConcurrentHashMap<>();
        AtomicInteger count = new AtomicInteger();
        receiver.onMessage(1, m -> {
            received.computeIfAbsent(m.payloadLong(0), k -> new CopyOnWriteArrayList<>()).add(m.payloadLong(8));
            count.incrementAndGet();
        });
        Endpoint ep = sender.connect(receiver.address());
        record Failed(String who, String call, Throwable error) {
        }
        List<Failed> failed = new CopyOnWriteArrayList<>();
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long thread = t;
            senders.add(startTestThread("tck-multi-worker-sender-" + thread, () -> {
                long seq = -1;
                boolean sending = true;
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment payload = arena.allocate(16);
                    for (seq = 0; seq < perThread; seq++) {
                        payload.set(ValueLayout.JAVA_LONG, 0, thread);
                        payload.set(ValueLayout.JAVA_LONG, 8, seq);
                        sending = true;
                        ep.send(1, payload);
                        sending = false;
                        if (seq % 16 == 0) sender.progress();
                    }
                } catch (Throwable e) {
                    failed.add(new Failed("thread '" + Thread.currentThread().getName() + "'", seq < 0 ? "its start"
                            : sending ? "Endpoint.send of its message " + seq : "the sender's Worker.progress() after its message " + seq, e));
                }
            }));
        }
        // Until every message arrived, or a sender failed: its own error says more than the messages missing.
        try {
            progressWhileArriving(() -> threads * perThread + " messages from " + threads + " threads: " + count.get() + " arrived",
                    () -> count.get() >= threads * perThread || !failed.isEmpty(), count::get, () -> {
                        receiver.progress();
                        return sender.progress();
                    });
        } catch (RuntimeException e) {
            failed.add(new Failed("the progress thread '" + Thread.currentThread().getName() + "'", "Worker.progress() of the receiver or "
                    + "the sender", e));
        }
        for (Thread t : senders) t.join();
        if (!failed.isEmpty()) {
            Failed first = failed.getFirst();
            AssertionError failure = new AssertionError(failed.size() + " thread(s) of the test failed; the first, " + first.who()
                    + ", in " + first.call() + ": " + first.error() + ": " + whyACallOfAMultiWorkerThrew(first.error()),
                    first.error());
            failed.stream().skip(1).forEach(f -> failure.addSuppressed(f.error()));
            throw failure;
        }
        String rule = " (Endpoint.send: the messages one thread sends on an endpoint arrive once each, in the order it sent them, with "
                + "their bytes; the plugin was called from " + threads + " threads in turn, and the handler read each message's 16 bytes, "
                + "thread and sequence number, inside onMessage: a message lost, duplicated or reordered shows here, and so do bytes "
                + "changed between trySend and the handler's return, by a send buffer read after trySend returned true, the thread's "
                + "next message by then (TransportEndpoint#trySend), or a message's room given back to its senders before onMessage "
                + "returned (MessageSink))";
        for (long thread : received.keySet()) {
            if (thread < 0 || thread >= threads) {
                throw new AssertionError(received.get(thread).size() + " message(s) named sending thread " + thread + ", not one of the "
                        + threads + " threads (0 to " + (threads - 1) + "): their bytes were not as sent when the handler read them" + rule);
            }
        }
        for (long thread = 0; thread < threads; thread++) {
            List<Long> seqs = received.getOrDefault(thread, List.of());
            for (int i = 0; i < Math.max(seqs.size(), perThread); i++) {
                if (i < seqs.size() && i < perThread && seqs.get(i) == i) continue;
                String around = "; delivered around it: " + seqs.subList(Math.max(0, i - 3), Math.min(seqs.size(), i + 4));
                throw new AssertionError("the messages thread " + thread + " sent, as delivered: " + (i >= seqs.size()
                        ? "only " + seqs.size() + " of its " + perThread + " arrived, the first missing is message " + i
                        : i >= perThread ? seqs.size() + " arrived for the " + perThread + " it sent (a duplicate makes more)" + around
                        : "message " + i + " of " + perThread + " is sequence number " + seqs.get(i) + around) + rule);
            }
        }
    }

    /**
     * Why a call of {@link #aMultiWorkerUsedFromManyThreadsKeepsEachThreadsOrder} threw {@code error}, as a rule of the
     * SPI: a thread's memory touched from another thread's call, or the calls of a worker used from several threads.
     */
    static String whyACallOfAMultiWorkerThrew(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (e instanceof WrongThreadException) {
                return "the plugin touched memory confined to another thread: a sending thread's buffer (of its own confined arena "
                        + "here) read from another thread's call after trySend returned (TransportEndpoint#trySend: once it returns "
                        + "true the caller may reuse or free both segments, so a transport copies what it sends before it returns), "
                        + "or memory of the plugin's own confined to the thread that made it (a MULTI worker calls a plugin from any "
                        + "of its threads, one at a time for a plugin that does not declare MULTI: make it Arena.ofShared())";
            }
            if (e instanceof IllegalStateException && String.valueOf(e.getMessage()).contains("Already closed")) {
                return "the plugin read memory already freed: a sending thread's buffer, freed as the thread ended, read after "
                        + "trySend returned (TransportEndpoint#trySend: once it returns true the caller may reuse or free both "
                        + "segments, so a transport copies what it sends before it returns)";
            }
        }
        return "Endpoint.send queues what the transport cannot take now (trySend returns false, it throws only once its peer is "
                + "known dead) and Worker.progress() throws only for a plugin's failure; a MULTI worker calls a plugin from any of "
                + "its threads, one at a time for a plugin that does not declare MULTI (the runtime's lock), at once for one that "
                + "does: state tied to the thread that made it (a confined arena, a ThreadLocal) or not safe for the calls it "
                + "declared fails here (ThreadMode)";
    }

    @Test
    public void aPeerWorkerThatGoesAwayFailsTheEndpointThroughTheRuntime() {
        Conduit conduit = newConduit();
        Worker receiver = conduit.newWorker(ThreadMode.SERIALIZED);
        Worker sender = closeAfterTest(conduit.newWorker(ThreadMode.SERIALIZED));
        List<PeerFailedException> failures = new CopyOnWriteArrayList<>();
        Endpoint ep = sender.connect(receiver.address(), (endpoint, cause) -> failures.add(cause));
        ep.send(1, Patterns.segment(8, 1));
        receiver.close();
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (failures.isEmpty()) {
            sender.progress();
            if (System.nanoTime() > deadline) throw new AssertionError("the endpoint to a closed worker did not fail within " + progressGuard());
        }
        assertThat(ep.isFailed()).isTrue();
        assertThatThrownBy(() -> ep.send(1, Patterns.segment(8, 1))).isInstanceOf(PeerFailedException.class);
        assertReasonOfAPeerThatClosed(failures.getFirst());
        assertThat(ep.failure().reason()).as("the endpoint's failure keeps the reason the error handler got")
                .isEqualTo(failures.getFirst().reason());
    }

    @Test
    public void rmaReachesThePeersExportedRegion() {
        assume(Capability.RMA);
        PeerRegionRig rig = peerRegionRig();
        Region region = rig.region();
        Endpoint ep = rig.endpoint();
        PeerRegion peer = rig.peer();
        ep.put(Patterns.segment(10_000, 31), peer, 100);
        ep.flush();
        assertSameBytes(region.segment().asSlice(100, 10_000).toArray(ValueLayout.JAVA_BYTE), "found in the region",
                Patterns.bytes(10_000, 31), "put", "bytes put into the peer's region at offset 100");
        Patterns.fill(region.segment().asSlice(20_000, 5000), 32);
        MemorySegment got = Arena.ofAuto().allocate(5000);
        ep.get(peer, 20_000, got);
        assertSameBytes(got.toArray(ValueLayout.JAVA_BYTE), "got", Patterns.bytes(5000, 32), "in the region",
                "bytes got from the peer's region at offset 20000");
        assertThat(catchThrowable(() -> ep.put(Patterns.segment(16, 1), peer, 64 * 1024 - 8))).as("a put past the region's end")
                .isInstanceOfAny(IndexOutOfBoundsException.class, IllegalArgumentException.class);
    }

    /**
     * Endpoint's put writes {@code [offset, offset + length)} of the peer's region and no byte around it,
     * however the transport cuts the copy into pieces. {@link #rmaReachesThePeersExportedRegion} reads
     * back only the range put: a verbs put whose last piece was posted at a whole send buffer's length
     * (8 KiB), writing that buffer's stale bytes past the put's end into the peer's memory, passed it and
     * every other test of the plugin.
     */
    @Test
    public void aPutWritesNoByteOfThePeersRegionOutsideItsRange() {
        assume(Capability.RMA);
        PeerRegionRig rig = peerRegionRig();
        MemorySegment target = rig.region().segment();
        for (int[] put : new int[][] {{100, 10_000}, {1, 40_001}, {60_000, 1}}) {
            Patterns.fill(target, 61);
            byte[] expected = target.toArray(ValueLayout.JAVA_BYTE);
            System.arraycopy(Patterns.bytes(put[1], 62), 0, expected, put[0], put[1]);
            rig.endpoint().put(Patterns.segment(put[1], 62), rig.peer(), put[0]);
            rig.endpoint().flush();
            assertSameBytes(target.toArray(ValueLayout.JAVA_BYTE), "found in the region", expected, "expected",
                    "the peer's whole region of " + target.byteSize() + " bytes after a put of " + put[1] + " bytes at offset " + put[0]);
        }
    }

    /**
     * Endpoint's put: the source may be overwritten, and freed, as soon as put returns, before the
     * flush that completes the copy at the target; the target gets the bytes the source held at
     * the call. A transport that read the source later (zero-copy, at the flush) would give what
     * replaced them, or touch freed memory.
     */
    @Test
    public void aPutsSourceMayBeReusedAndFreedOnceThePutReturns() {
        assume(Capability.RMA);
        PeerRegionRig rig = peerRegionRig();
        int length = 40_000;
        MemorySegment source = Arena.ofAuto().allocate(length);
        for (int round = 0; round < 3; round++) {
            Patterns.fill(source, 40 + round);
            rig.endpoint().put(source, rig.peer(), 1000L * round);
            Patterns.fill(source, 90 + round);
        }
        rig.endpoint().flush();
        for (int round = 0; round < 3; round++) {
            // Each round's put overwrote the previous one's from offset 1000 * round on: what is left of each.
            long from = 1000L * round;
            int left = round < 2 ? 1000 : length;
            assertSameBytes(rig.region().segment().asSlice(from, left).toArray(ValueLayout.JAVA_BYTE), "found in the region",
                    Arrays.copyOf(Patterns.bytes(length, 40 + round), left), "in the source when put was called",
                    "put " + round + " at offset " + from + ", its source overwritten as put returned, before the flush");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment freed = arena.allocate(length);
            Patterns.fill(freed, 50);
            rig.endpoint().put(freed, rig.peer(), 0);
        }
        assertThatCode(() -> rig.endpoint().flush()).as("flush after a put whose source was freed as put returned")
                .doesNotThrowAnyException();
        assertSameBytes(rig.region().segment().asSlice(0, length).toArray(ValueLayout.JAVA_BYTE), "found in the region",
                Patterns.bytes(length, 50), "in the source when put was called", "a put whose source was freed as put returned");
    }

    /**
     * Optional, as an import's ({@link PeerRegion#exporterState()}, answered by the runtime from the
     * plugin's mapping, {@code ChunkMapping.exporterState()}, where the region is mapped here): a peer
     * region of this plugin's export, opened over this transport, says {@code ALIVE} while the
     * exporting pool is open; still {@code ALIVE} once its endpoint failed because the peer worker
     * closed (a closed worker is no dead exporter, and the region still answers though its RMA
     * throws the failure); and {@code DEAD} once the pool closed, which frees its chunks and ends
     * its lease. A plugin whose peer regions say {@code UNKNOWN} (mappings that cannot tell; a
     * cross-host plugin, whose regions are not mapped here, judged by the endpoint) skips it.
     */
    @Test
    public void aPeerRegionThatCanTellItsExportersLifeSaysDeadOnceTheExportingPoolClosedAlsoAfterItsEndpointFailed() {
        assume(Capability.MEMORY);
        Conduit conduit = newConduit();
        Worker receiver = conduit.newWorker(ThreadMode.SERIALIZED);
        Worker sender = closeAfterTest(conduit.newWorker(ThreadMode.SERIALIZED));
        Pool pool = closeAfterTest(conduit.pool(plugin.name()));
        Endpoint ep = sender.connect(receiver.address());
        PeerRegion peer = ep.peerRegion(pool.allocate(4096).exportHandle());
        ExporterState alive = peer.exporterState();
        assumeTrue(alive != ExporterState.UNKNOWN, "the peer regions of plugin '" + plugin.name() + "' cannot tell their exporter's "
                + "life (PeerRegion.exporterState() is UNKNOWN: its mappings' ChunkMapping.exporterState() says so, or it maps none "
                + "here and its endpoint lives): an optional operation");
        assertThat(alive).as("PeerRegion.exporterState() of plugin '%s' while the exporting pool is open", plugin.name())
                .isEqualTo(ExporterState.ALIVE);
        receiver.close();
        long deadline = System.nanoTime() + progressGuard().toNanos();
        while (!ep.isFailed()) {
            sender.progress();
            if (System.nanoTime() > deadline) throw new AssertionError("the endpoint to a closed worker did not fail within " + progressGuard());
        }
        assertThat(peer.exporterState()).as("PeerRegion.exporterState() of plugin '%s' once its endpoint failed because the peer "
                + "worker closed, the exporting pool still open", plugin.name()).isEqualTo(ExporterState.ALIVE);
        pool.close();
        assertThat(peer.exporterState()).as("PeerRegion.exporterState() of plugin '%s' once the exporting pool closed, which frees "
                + "its chunks: a plugin that can tell says DEAD", plugin.name()).isEqualTo(ExporterState.DEAD);
    }

    /** A 64 KiB region of the plugin's pool, exported, and an endpoint of another worker that opened it. */
    private record PeerRegionRig(Conduit conduit, Region region, Endpoint endpoint, PeerRegion peer) {
    }

    private PeerRegionRig peerRegionRig() {
        assume(Capability.MEMORY);
        Conduit conduit = newConduit();
        Worker receiver = closeAfterTest(conduit.newWorker(ThreadMode.SERIALIZED));
        Worker sender = closeAfterTest(conduit.newWorker(ThreadMode.SERIALIZED));
        Region region = closeAfterTest(conduit.pool(plugin.name()).allocate(64 * 1024));
        Endpoint ep = sender.connect(receiver.address());
        return new PeerRegionRig(conduit, region, ep, ep.peerRegion(region.exportHandle()));
    }

    /**
     * Endpoint's put and get: a local segment that overlaps the peer's region at the same addresses
     * is copied as if through a temporary buffer, whichever way they overlap and however many pieces
     * the transport cuts the copy into (verbs cut it into send buffers, first to last, and read
     * bytes its first buffer had already written). The same addresses: over a plugin that maps
     * regions here, its import through the same Conduit, which the IPC cache maps once with the
     * peer region; over a cross-host one, the exported region itself, which RMA reaches.
     */
    @Test
    public void aPutOrGetOverlappingThePeersRegionAtTheSameAddressesCopiesAsIfThroughATemporaryBuffer() {
        assume(Capability.RMA);
        PeerRegionRig rig = peerRegionRig();
        MemorySegment memory = plugin.capabilities().contains(Capability.CROSS_HOST) ? rig.region().segment()
                : closeAfterTest(rig.conduit().importRegion(rig.region().exportHandle())).segment();
        Endpoint ep = rig.endpoint();
        int length = 40_000;
        for (long[] fromTo : new long[][] {{0, 100}, {100, 0}, {1000, 21_000}, {21_000, 1000}}) {
            for (boolean put : new boolean[] {true, false}) {
                Patterns.fill(memory, 33);
                byte[] expected = memory.asSlice(fromTo[0], length).toArray(ValueLayout.JAVA_BYTE);
                if (put) {
                    ep.put(memory.asSlice(fromTo[0], length), rig.peer(), fromTo[1]);
                    ep.flush();
                } else {
                    ep.get(rig.peer(), fromTo[0], memory.asSlice(fromTo[1], length));
                }
                assertSameBytes(memory.asSlice(fromTo[1], length).toArray(ValueLayout.JAVA_BYTE), "found in the region", expected,
                        "copied", (put ? "put" : "get") + " of " + length + " bytes from offset " + fromTo[0] + " to " + fromTo[1]
                                + " of the same memory");
            }
        }
    }

    /** Atomics are a capability of their own: a plugin may declare ATOMICS without RMA. */
    @Test
    public void atomicsReachThePeersExportedRegion() {
        assume(Capability.ATOMICS);
        PeerRegionRig rig = peerRegionRig();
        Region region = rig.region();
        Endpoint ep = rig.endpoint();
        PeerRegion peer = rig.peer();
        region.segment().set(ValueLayout.JAVA_LONG, 40_000, 5);
        assertThat(ep.fetchAdd(peer, 40_000, 3)).as("fetchAdd(+3) of the peer's word 5 returns the old value").isEqualTo(5);
        assertThat(ep.compareAndSwap(peer, 40_000, 8, 21)).as("compareAndSwap(8 -> 21) of the peer's word 8 returns the old value").isEqualTo(8);
        assertThat(region.segment().get(ValueLayout.JAVA_LONG, 40_000)).as("the peer's word after the swap").isEqualTo(21);
        assertThat(ep.compareAndSwap(peer, 40_000, 8, 99)).as("compareAndSwap(8 -> 99) of the peer's word 21 returns the old value").isEqualTo(21);
        assertThat(region.segment().get(ValueLayout.JAVA_LONG, 40_000)).as("the peer's word after a compareAndSwap whose expected value "
                + "did not match (it must stay)").isEqualTo(21);
        assertThat(region.segment().get(ValueLayout.JAVA_LONG, 40_008)).as("the word after the target (an atomic touches 8 bytes)").isZero();
    }

    /**
     * Atomics are atomic against each other ({@link TransportEndpoint#fetchAdd}, {@link TransportEndpoint#compareAndSwap}):
     * endpoints of several workers, each on a thread of its own, adding to one word of the peer's region and
     * incrementing another by compareAndSwap at the same time lose no update, and no two fetchAdds return the same old
     * value. {@link #atomicsReachThePeersExportedRegion} issues one atomic at a time, so an atomic made of a read and
     * then a write (a plain load and store on a mapping, a get and a put) passed it and every other test, while
     * applications counting or locking with it lost updates.
     */
    @Test
    public void atomicsFromSeveralEndpointsAtOnceLoseNoUpdate() throws Exception {
        assume(Capability.ATOMICS);
        assume(Capability.MEMORY);
        Conduit conduit = newConduit();
        Worker receiver = closeAfterTest(conduit.newWorker(ThreadMode.SERIALIZED));
        Region region = closeAfterTest(conduit.pool(plugin.name()).allocate(64 * 1024));
        int senders = 3;
        int perSender = 3000;
        long[][] oldValues = new long[senders][perSender];
        long[] swapped = new long[senders];
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int s = 0; s < senders; s++) {
            Worker sender = closeAfterTest(conduit.newWorker(ThreadMode.SERIALIZED));
            Endpoint ep = sender.connect(receiver.address());
            PeerRegion peer = ep.peerRegion(region.exportHandle());
            int thread = s;
            threads.add(startTestThread("tck-atomics-" + s, () -> {
                try {
                    start.await();
                    long seen = 0;
                    for (int i = 0; i < perSender && !testEnding(); i++) {
                        oldValues[thread][i] = ep.fetchAdd(peer, 0, 1);
                        for (long old; (old = ep.compareAndSwap(peer, 8, seen, seen + 1)) != seen; ) seen = old;
                        seen++;
                        swapped[thread]++;
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        start.countDown();
        for (Thread t : threads) {
            // A hang guard: each atomic completes without the target's progress (one-sided), so nothing here waits for another thread.
            if (!t.join(progressGuard().multipliedBy(2))) {
                throw new AssertionError(t.getName() + " has not finished its " + perSender + " fetchAdds and compareAndSwaps within "
                        + progressGuard().multipliedBy(2) + " (plugin '" + plugin.name() + "'; atomics are one-sided and never block)");
            }
        }
        assertThat(errors).as("what %d threads threw, each issuing fetchAdd and compareAndSwap on an endpoint of its own worker to "
                + "the same peer region at once", senders).isEmpty();
        long total = (long) senders * perSender;
        assertThat(region.segment().get(ValueLayout.JAVA_LONG, 0)).as("the peer's word after %d fetchAdd(+1) from %d endpoints at "
                + "once, from 0: an update was lost; fetchAdd must be atomic (TransportEndpoint.fetchAdd), and a read then a write "
                + "lets two of them add to the same old value", total, senders).isEqualTo(total);
        long[] returned = Arrays.stream(oldValues).flatMapToLong(Arrays::stream).sorted().toArray();
        for (int i = 0; i < returned.length; i++) {
            if (returned[i] != i) {
                throw new AssertionError("the old values fetchAdd(+1) returned to " + senders + " endpoints adding at once are not each of 0 to "
                        + (total - 1) + " once: " + (i > 0 && returned[i] == returned[i - 1] ? "two returned " + returned[i]
                        : "none returned " + i) + " (fetchAdd must be atomic, TransportEndpoint.fetchAdd)");
            }
        }
        long swaps = Arrays.stream(swapped).sum();
        assertThat(region.segment().get(ValueLayout.JAVA_LONG, 8)).as("the peer's word after %d compareAndSwap(n -> n + 1) that returned "
                + "the expected value (so reported they swapped) from %d endpoints at once, from 0: a swap was lost; compareAndSwap must "
                + "compare and replace atomically (TransportEndpoint.compareAndSwap), and a compare then a write lets two of them "
                + "replace the same value", swaps, senders).isEqualTo(swaps);
    }
}
