package dev.conduit.shm;

import dev.conduit.linux.Linux;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A large message (above {@code inline.max}, through the sender's bounce ring) claims its record
 * in the receiver's queue only once its payload is in the ring: a claimed record the sender has
 * not committed stops the receiver's head, and every other sender's messages behind it, so a
 * payload copied or encoded under the claim held them all up for as long as that took. These
 * tests wait by counts of progress rounds, never by the clock; the transports share this JVM's
 * memory ({@link InProcessMemory}).
 */
class ShmTransportLargeMessageTest {

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    /** Each message's id, sender key and payload, in the order delivered. */
    static final class Received implements KeyedMessageSink {
        final List<Integer> ids = new ArrayList<>();
        final List<Long> keys = new ArrayList<>();
        final List<byte[]> payloads = new ArrayList<>();
        final List<Long> closed = new ArrayList<>();

        @Override
        public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                              MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
            ids.add(id);
            keys.add(sender);
            payloads.add(payloadBuffer.asSlice(payloadOffset, payloadLength).toArray(ValueLayout.JAVA_BYTE));
        }

        @Override
        public void onSenderClosed(long sender) {
            closed.add(sender);
        }
    }

    /**
     * Sender A's large zero-copy send runs an encoder that waits for a latch; meanwhile sender B,
     * of another worker, sends a small message to the same receiver, which must deliver it while
     * A's encoder still waits. Before, A claimed its record and then ran the encoder: the
     * receiver's head stopped at A's claim, and B's message waited for the encoder to return.
     */
    @Test
    @Timeout(60)
    void anotherSendersMessageIsDeliveredWhileALargeMessagesEncoderIsStillRunning() throws Exception {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmEndpoint a = connect(transport(new Received()), receiver);
        ShmEndpoint b = connect(transport(new Received()), receiver);
        // Both connections announced (and A's ring), so that what the receiver waits for below is only the messages.
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        assertThat(b.trySend(2, MemorySegment.NULL, bytes(8, 2))).isTrue();
        receive(receiver, () -> received.ids.size() == 2, "the first two messages");

        CountDownLatch encoding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        PayloadEncoder held = target -> {
            encoding.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while held", e);
            }
            MemorySegment.copy(bytes(30_000, 3), 0, target, 0, 30_000);
            return 30_000;
        };
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread sending = Thread.ofPlatform().name("sender A").start(() -> {
            try {
                outcome.set(a.trySendEncoded(3, MemorySegment.NULL, 40_000, held));
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        try {
            encoding.await();
            assertThat(b.trySend(4, MemorySegment.NULL, bytes(8, 4))).isTrue();
            receive(receiver, () -> received.ids.size() == 3, "sender B's message while sender A's encoder is held");
            assertThat(received.ids).containsExactly(1, 2, 4);
            assertThat(outcome.get()).as("A's send, still in its encoder").isNull();
        } finally {
            release.countDown();
            sending.join();
        }
        assertThat(outcome.get()).as("what A's trySendEncoded returned").isEqualTo(30_000L);
        receive(receiver, () -> received.ids.size() == 4, "sender A's encoded message");
        assertThat(received.ids).containsExactly(1, 2, 4, 3);
        assertThat(received.keys).containsExactly(a.connection(), b.connection(), b.connection(), a.connection());
        assertThat(received.payloads.get(3)).isEqualTo(bytes(30_000, 3).toArray(ValueLayout.JAVA_BYTE));
    }

    /**
     * Other senders take the room in the receiver's queue while a large message's encoder runs, so
     * its record finds none once the payload is encoded. The encoder runs once per send, and a
     * zero-copy send that answers "no room" must not have called it (the runtime would have it
     * encode again), so the send is taken and the message held: the sender's transport posts it as
     * it progresses, with no later send on the endpoint, and until then the endpoint sends nothing
     * else, so its messages stay in order.
     */
    @Test
    @Timeout(60)
    void aLargeEncodedMessageWhoseRecordFindsNoRoomAfterItsEncoderIsHeldAndPostedInOrder() {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmTransport aTransport = transport(new Received());
        ShmEndpoint a = connect(aTransport, receiver);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        assertThat(filler.trySend(2, MemorySegment.NULL, bytes(8, 2))).isTrue();
        receive(receiver, () -> received.ids.size() == 2, "the first two messages");

        AtomicInteger calls = new AtomicInteger();
        int[] fills = new int[1];
        PayloadEncoder fillingTheQueue = target -> {
            calls.incrementAndGet();
            while (filler.trySend(4, MemorySegment.NULL, bytes(8, 4))) fills[0]++;
            MemorySegment.copy(bytes(30_000, 3), 0, target, 0, 30_000);
            return 30_000;
        };
        assertThat(a.trySendEncoded(3, bytes(16, 33), 40_000, fillingTheQueue)).as("taken: its encoder ran").isEqualTo(30_000);
        assertThat(calls.get()).as("encoder calls").isEqualTo(1);
        assertThat(fills[0]).as("messages that filled the queue").isPositive();
        assertThat(a.trySend(5, MemorySegment.NULL, bytes(8, 5))).as("a send behind the held message, the queue still full").isFalse();

        for (int i = 0; i < ROUNDS && received.ids.size() < 3 + fills[0]; i++) {
            progressOrPause(receiver);
            aTransport.progress(); // posts the held message once there is room: nothing else on A does
        }
        assertThat(received.ids).hasSize(3 + fills[0]);
        assertThat(received.ids.getLast()).as("the held message, after the messages that took its room").isEqualTo(3);
        assertThat(received.keys.getLast()).isEqualTo(a.connection());
        assertThat(received.payloads.getLast()).isEqualTo(bytes(30_000, 3).toArray(ValueLayout.JAVA_BYTE));

        assertThat(a.trySend(5, MemorySegment.NULL, bytes(8, 5))).isTrue();
        assertThat(a.trySend(6, MemorySegment.NULL, bytes(20_000, 6))).isTrue();
        receive(receiver, () -> received.ids.size() == 5 + fills[0], "A's messages after the held one");
        assertThat(received.ids.subList(2 + fills[0], received.ids.size())).containsExactly(3, 5, 6);
        assertThat(received.payloads.getLast()).isEqualTo(bytes(20_000, 6).toArray(ValueLayout.JAVA_BYTE));
    }

    /**
     * A held large message's room in the bounce ring is not yet released by the receiver, which
     * has not read its record: a liveness check must not take that for a ring the receiver read
     * past without releasing (a receiver that cannot map it), also when the endpoint's last
     * refused send had waited for ring room. It did: the endpoint failed with "read this
     * connection's large messages without releasing them".
     */
    @Test
    @Timeout(60)
    void aHeldMessagesRingRoomIsNotTakenForRoomTheReceiverNeverReleases() {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmTransport aTransport = transport(new Received());
        List<PeerFailedException> failures = new ArrayList<>();
        ShmEndpoint a = connect(aTransport, receiver, failures::add);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        int sent = 0;
        while (a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))) sent++; // until the 64 KiB ring is full
        assertThat(sent).as("large messages the ring took").isEqualTo(3);
        assertThat(filler.trySend(2, MemorySegment.NULL, bytes(8, 2))).isTrue();
        int expected = sent + 1;
        receive(receiver, () -> received.ids.size() == expected, "the ring's messages, which the receiver releases");

        PayloadEncoder fillingTheQueue = target -> {
            while (filler.trySend(4, MemorySegment.NULL, bytes(8, 4))) { }
            MemorySegment.copy(bytes(30_000, 3), 0, target, 0, 30_000);
            return 30_000;
        };
        assertThat(a.trySendEncoded(3, MemorySegment.NULL, 40_000, fillingTheQueue)).isEqualTo(30_000);
        for (int i = 0; i < 2_000; i++) progressOrPause(aTransport); // liveness checks (every millisecond), the queue still full
        assertThat(failures).as("failures of the endpoint holding the message").isEmpty();
        for (int i = 0; i < ROUNDS && !received.ids.contains(3); i++) {
            progressOrPause(receiver);
            aTransport.progress();
        }
        assertThat(received.ids.getLast()).isEqualTo(3);
        assertThat(failures).isEmpty();
    }

    /**
     * A receiver that stops progressing while an endpoint holds a large message is judged hung
     * (its queue stayed full), and the failure says that message is lost: it never got into the
     * queue, so it is not among those delivered if the receiver resumes.
     */
    @Test
    @Timeout(60)
    void aHungReceiversFailureSaysTheHeldMessageIsLost() {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmTransport aTransport = transport(new Received(), Duration.ofMillis(100));
        List<PeerFailedException> failures = new ArrayList<>();
        ShmEndpoint a = connect(aTransport, receiver, failures::add);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        receive(receiver, () -> received.ids.size() == 1, "the first message");
        PayloadEncoder fillingTheQueue = target -> {
            while (filler.trySend(4, MemorySegment.NULL, bytes(8, 4))) { }
            MemorySegment.copy(bytes(30_000, 3), 0, target, 0, 30_000);
            return 30_000;
        };
        assertThat(a.trySendEncoded(3, MemorySegment.NULL, 40_000, fillingTheQueue)).isEqualTo(30_000);
        for (int i = 0; i < ROUNDS && failures.isEmpty(); i++) progressOrPause(aTransport); // the receiver never progresses
        assertThat(failures).hasSize(1);
        assertThat(failures.getFirst().reason()).isEqualTo(PeerFailedException.Reason.HUNG);
        assertThat(failures.getFirst()).hasMessageContaining("peer worker is hung")
                .hasMessageContaining("the last message sent on this endpoint, a large one whose record never found room in its "
                        + "queue, is lost");
    }

    /**
     * An endpoint closed while it holds a large message (its record found no room after its
     * encoder ran) posts it before its CLOSE: the receiver delivers it, then is told the sender
     * closed.
     */
    @Test
    @Timeout(60)
    void anEndpointClosedWhileItHoldsALargeMessagePostsItBeforeItsClose() {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmTransport aTransport = transport(new Received());
        ShmEndpoint a = connect(aTransport, receiver);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        assertThat(filler.trySend(2, MemorySegment.NULL, bytes(8, 2))).isTrue();
        receive(receiver, () -> received.ids.size() == 2, "the first two messages");

        int fills = holdOn(a, filler);
        a.close();
        for (int i = 0; i < ROUNDS && received.closed.isEmpty(); i++) {
            progressOrPause(receiver);
            aTransport.progress();
        }
        assertThat(received.closed).as("senders told closed").containsExactly(a.connection());
        assertThat(received.ids).hasSize(3 + fills);
        assertThat(received.ids.getLast()).isEqualTo(3);
        assertThat(received.payloads.getLast()).isEqualTo(bytes(30_000, 3).toArray(ValueLayout.JAVA_BYTE));
    }

    /**
     * A worker closed while one of its endpoints holds a large message whose record has room in the
     * peer's queue by then posts it before it waits for its peers to read what is in their rings,
     * and so waits for this one too: the message, the connection's first large one, arrives. The
     * close posted it only after that wait, and freed the ring at once, before the receiver could
     * map it: the message was lost. Here the receiver's mapping of the ring waits until the close
     * either waits (parked in that wait) or has ended, so that a close that does not wait has freed
     * the ring first; the bound is of progress rounds, the waits are on the close's own steps.
     */
    @Test
    @Timeout(60)
    void aWorkerClosedWhileItHoldsALargeMessageWaitsForThePeerToReadIt() throws Exception {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmTransport aTransport = transport(new Received());
        ShmEndpoint a = connect(aTransport, receiver);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(8, 1))).isTrue(); // CONNECT; the ring is not announced yet
        assertThat(filler.trySend(2, MemorySegment.NULL, bytes(8, 2))).isTrue();
        receive(receiver, () -> received.ids.size() == 2, "the first two messages");

        int fills = holdOn(a, filler);
        receive(receiver, () -> received.ids.size() == 2 + fills, "the messages that took the held one's room");

        AtomicReference<Throwable> closeFailure = new AtomicReference<>();
        Thread closer = Thread.ofPlatform().name("sender's close").start(() -> {
            try {
                aTransport.close();
            } catch (Throwable t) {
                closeFailure.set(t);
            }
        });
        receiver.beforeRingMapping = () -> {
            for (int i = 0; i < 1_000_000 && closer.isAlive() && closer.getState() != Thread.State.TIMED_WAITING; i++) {
                java.util.concurrent.locks.LockSupport.parkNanos(10_000);
            }
        };
        try {
            receive(receiver, () -> received.ids.size() == 3 + fills, "the held message, posted by the sender's close");
        } finally {
            closer.join();
        }
        assertThat(closeFailure.get()).as("the close's failure").isNull();
        assertThat(received.ids.getLast()).isEqualTo(3);
        assertThat(received.payloads.getLast()).isEqualTo(bytes(30_000, 3).toArray(ValueLayout.JAVA_BYTE));
        receive(receiver, () -> received.closed.contains(a.connection()), "the sender's CLOSE");
        assertThat(received.ids).as("messages delivered").hasSize(3 + fills);
    }

    /**
     * A receiver that cannot start the thread that maps senders' bounce rings (no native thread to
     * be had: the process or its cgroup is at its limit of threads, {@code ulimit -u} or a
     * container's {@code pids.max}) keeps the large message at the head of its queue, says why
     * naming the limit, and delivers it and everything behind it, once, when a thread starts again;
     * the sender's endpoint never fails. The shortage passes as one of descriptors does, but it used
     * to refuse the connection: progress() threw the JVM's bare {@code OutOfMemoryError}, the
     * message and every later one of that sender were dropped, and the sender's endpoint failed.
     */
    @Test
    @Timeout(60)
    void aRingWhoseMappingThreadCannotStartYetHoldsItsMessageUntilOneCanAndLosesNothing() {
        Received received = new Received();
        ShmTransport receiver = transport(received, Duration.ofSeconds(10), Duration.ofMillis(5));
        ShmTransport senderTransport = transport(new Received());
        AtomicReference<PeerFailedException> failed = new AtomicReference<>();
        ShmEndpoint ep = connect(senderTransport, receiver, failed::set);
        AtomicInteger handOvers = new AtomicInteger();
        receiver.beforeRingHandOver = () -> {
            handOvers.incrementAndGet();
            throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits "
                    + "reached (injected by the test)");
        };
        assertThat(ep.trySend(1, MemorySegment.NULL, bytes(8, 1))).isTrue();
        assertThat(ep.trySend(2, MemorySegment.NULL, bytes(30_000, 2))).isTrue();
        assertThat(ep.trySend(3, MemorySegment.NULL, bytes(8, 3))).isTrue();
        List<Throwable> thrown = new ArrayList<>();
        for (int i = 0; i < ROUNDS && thrown.size() < 3; i++) {
            try {
                progressOrPause(receiver);
            } catch (RuntimeException | OutOfMemoryError e) { // the JVM's error, which used to come out as it was
                thrown.add(e);
            }
            senderTransport.progress();
        }
        assertThat(thrown).as("a failure after each try").hasSize(3).allSatisfy(e -> assertThat(e)
                .isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("cannot map the bounce ring of connection " + Long.toHexString(ep.connection()))
                .hasMessageContaining("unable to create native thread").hasMessageContaining("ulimit -u").hasMessageContaining("pids.max")
                .hasMessageContaining("another try starts every liveness.interval"));
        assertThat(handOvers).as("one hand-over per try").hasValue(3);
        assertThat(received.ids).containsExactly(1);

        receiver.beforeRingHandOver = null; // a thread can be started again
        for (int i = 0; i < ROUNDS && received.ids.size() < 3; i++) {
            progressOrPause(receiver);
            senderTransport.progress();
        }
        assertThat(received.ids).containsExactly(1, 2, 3);
        assertThat(received.payloads.get(1)).isEqualTo(bytes(30_000, 2).toArray(ValueLayout.JAVA_BYTE));
        for (int i = 0; i < 100; i++) senderTransport.progress();
        assertThat(failed.get()).as("the sender's endpoint").isNull();
        assertThat(ep.trySend(4, MemorySegment.NULL, bytes(30_000, 4))).isTrue();
        receive(receiver, () -> received.ids.size() == 4, "a later large message");
    }

    /**
     * The endpoint's next sends, once the peer's queue has room again, post the held message
     * first, whatever they are: a small copied message, a large one (whose ring room follows the
     * held one's, as the receiver's releases need) and an encoded inline one all arrive after it,
     * in the order sent, with nothing on the sender progressing meanwhile.
     */
    @Test
    @Timeout(60)
    void theEndpointsNextSendsPostTheHeldMessageFirst() {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmEndpoint a = connect(transport(new Received()), receiver);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        receive(receiver, () -> received.ids.size() == 1, "the first message");
        int fills = holdOn(a, filler);
        receive(receiver, () -> received.ids.size() == 1 + fills, "the messages that took the held one's room");

        assertThat(a.trySend(5, MemorySegment.NULL, bytes(8, 5))).as("a small send, the held message posted before it").isTrue();
        assertThat(a.trySend(6, MemorySegment.NULL, bytes(20_000, 6))).as("a large send").isTrue();
        PayloadEncoder small = target -> {
            MemorySegment.copy(bytes(16, 7), 0, target, 0, 16);
            return 16;
        };
        assertThat(a.trySendEncoded(7, MemorySegment.NULL, 64, small)).as("an encoded inline send").isEqualTo(16);
        receive(receiver, () -> received.ids.size() == 5 + fills, "the held message and the three after it");
        assertThat(received.ids.subList(1 + fills, received.ids.size())).containsExactly(3, 5, 6, 7);
        assertThat(received.payloads.get(1 + fills)).isEqualTo(bytes(30_000, 3).toArray(ValueLayout.JAVA_BYTE));
        assertThat(received.payloads.get(3 + fills)).isEqualTo(bytes(20_000, 6).toArray(ValueLayout.JAVA_BYTE));
        assertThat(received.payloads.getLast()).isEqualTo(bytes(16, 7).toArray(ValueLayout.JAVA_BYTE));
    }

    /**
     * An endpoint that fails while it holds a large message (its peer's worker closed, its queue
     * still full) counts the held message among those the peer never read, posts nothing more, and
     * every send after it throws that failure; its close and its worker's close throw nothing.
     */
    @Test
    @Timeout(60)
    void anEndpointThatFailsWhileItHoldsALargeMessageCountsItUnreadAndPostsItNoMore() {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmTransport aTransport = transport(new Received());
        List<PeerFailedException> failures = new ArrayList<>();
        ShmEndpoint a = connect(aTransport, receiver, failures::add);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        receive(receiver, () -> received.ids.size() == 1, "the first message");
        holdOn(a, filler);
        open.remove(receiver);
        receiver.close();
        for (int i = 0; i < ROUNDS && failures.isEmpty(); i++) progressOrPause(aTransport);
        assertThat(failures).hasSize(1);
        assertThat(failures.getFirst().reason()).isEqualTo(PeerFailedException.Reason.CLOSED);
        assertThat(failures.getFirst()).hasMessageContaining("peer worker closed")
                .hasMessageContaining("the last message sent on this endpoint was never read by it");
        for (int i = 0; i < 100; i++) aTransport.progress();
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> a.trySend(5, MemorySegment.NULL, bytes(8, 5))))
                .as("a send after the failure").isSameAs(failures.getFirst());
        a.close();
        aTransport.close();
        assertThat(received.ids).containsExactly(1);
    }

    /**
     * A worker's await while one of its endpoints holds a large message looks again after a pause
     * (nothing wakes it when the peer's queue gets room), here with liveness checks an hour apart:
     * it returns while the queue stays full, and once the queue has room it posts the message
     * itself. Waited for by rounds and a signal, never by the clock; an await that slept on
     * would fail the test's timeout.
     */
    @Test
    @Timeout(60)
    void awaitPostsTheHeldMessageAndLooksAgainWhileItIsHeld() throws Exception {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmTransport aTransport = transport(new Received(), Duration.ofSeconds(10), Duration.ofHours(1));
        ShmEndpoint a = connect(aTransport, receiver);
        ShmEndpoint filler = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        receive(receiver, () -> received.ids.size() == 1, "the first message");
        int fills = holdOn(a, filler);
        for (int i = 0; i < 3; i++) {
            assertThat(aTransport.await(Duration.ofHours(1).toNanos())).as("an await while the message is held, the queue full").isFalse();
        }
        assertThat(received.ids).hasSize(1);
        receive(receiver, () -> received.ids.size() == 1 + fills, "the messages that took the held one's room");

        AtomicReference<Object> awaited = new AtomicReference<>();
        Thread awaiting = Thread.ofPlatform().name("sender's await").start(() -> {
            try {
                awaited.set(aTransport.await(Duration.ofHours(1).toNanos()));
            } catch (Throwable t) {
                awaited.set(t);
            }
        });
        try {
            receive(receiver, () -> received.ids.size() == 2 + fills, "the held message, posted by the sender's await");
        } finally {
            aTransport.signal(); // it sleeps on once nothing is held
            awaiting.join();
        }
        assertThat(awaited.get()).as("the await, signalled").isEqualTo(true);
        assertThat(received.ids.getLast()).isEqualTo(3);
        assertThat(received.payloads.getLast()).isEqualTo(bytes(30_000, 3).toArray(ValueLayout.JAVA_BYTE));
    }

    /**
     * A worker closed from another thread while its owner's thread progresses it, one of its
     * endpoints holding a large message whose record has room: both come to post it (progress()
     * and the close, each under the endpoint's closeSteps lock), and it arrives once, intact. The
     * owner's calls past the close fail with an IllegalStateException only; the close throws
     * nothing, and once the workers closed no file of theirs is left. Rounds of the race, each
     * started at once on both threads by a latch; waits are bounded by rounds. (Which of the two
     * posts it is left to the race: the window in which both would find it unposted without that
     * lock is a claim and a commit wide, which these rounds do not reliably hit.)
     */
    @Test
    @Timeout(120)
    void aHeldMessageIsPostedOnceByAWorkerClosedFromAnotherThreadWhileItsOwnerProgresses() throws Exception {
        for (int round = 0; round < 10; round++) {
            Received received = new Received();
            ShmTransport receiver = transport(received);
            ShmTransport aTransport = transport(new Received());
            ShmTransport fillers = transport(new Received());
            ShmEndpoint a = connect(aTransport, receiver);
            ShmEndpoint filler = connect(fillers, receiver);
            assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
            receive(receiver, () -> received.ids.size() == 1, "the first message");
            int fills = holdOn(a, filler);
            receive(receiver, () -> received.ids.size() == 1 + fills, "the messages that took the held one's room");

            CountDownLatch start = new CountDownLatch(1);
            AtomicReference<Throwable> ownerFailure = new AtomicReference<>();
            AtomicReference<Throwable> closeFailure = new AtomicReference<>();
            Thread owner = Thread.ofPlatform().name("owner").start(() -> {
                try {
                    start.await();
                    for (int i = 0; i < 10_000_000; i++) aTransport.progress();
                } catch (Throwable t) {
                    ownerFailure.set(t);
                }
            });
            Thread closer = Thread.ofPlatform().name("forced close").start(() -> {
                try {
                    start.await();
                    aTransport.close();
                } catch (Throwable t) {
                    closeFailure.set(t);
                }
            });
            start.countDown();
            receive(receiver, () -> received.closed.contains(a.connection()), "the sender's CLOSE, round " + round);
            closer.join();
            owner.join();
            assertThat(closeFailure.get()).as("the close's failure, round %d", round).isNull();
            assertThat(ownerFailure.get()).as("the owner's call past the close, round %d", round).isInstanceOf(IllegalStateException.class);
            assertThat(received.ids.stream().filter(id -> id == 3).count()).as("deliveries of the held message, round %d", round)
                    .isEqualTo(1);
            assertThat(received.ids).as("messages delivered, round %d", round).hasSize(2 + fills).endsWith(3);
            assertThat(received.payloads.getLast()).isEqualTo(bytes(30_000, 3).toArray(ValueLayout.JAVA_BYTE));
            for (ShmTransport t : List.of(fillers, receiver)) {
                open.remove(t);
                t.close();
            }
            open.remove(aTransport);
            try (java.util.stream.Stream<Path> left = java.nio.file.Files.list(shared)) {
                assertThat(left.toList()).as("files left in the shared directory once the workers closed, round %d", round).isEmpty();
            }
        }
    }

    /**
     * Has {@code a} hold a large message (id 3, 30,000 bytes): its encoder fills the receiver's queue
     * through {@code filler} (8-byte messages, id 4) before it writes. Returns how many it sent.
     */
    private static int holdOn(ShmEndpoint a, ShmEndpoint filler) {
        int[] fills = new int[1];
        PayloadEncoder fillingTheQueue = target -> {
            while (filler.trySend(4, MemorySegment.NULL, bytes(8, 4))) fills[0]++;
            MemorySegment.copy(bytes(30_000, 3), 0, target, 0, 30_000);
            return 30_000;
        };
        assertThat(a.trySendEncoded(3, MemorySegment.NULL, 40_000, fillingTheQueue)).as("taken: its encoder ran").isEqualTo(30_000);
        assertThat(fills[0]).as("messages that filled the queue").isPositive();
        assertThat(a.trySend(5, MemorySegment.NULL, bytes(8, 5))).as("a send behind the held message, the queue full").isFalse();
        return fills[0];
    }

    /**
     * A large message's encoder that throws has claimed nothing in the receiver's queue (it runs
     * before the claim) and leaves no reservation in the ring: its exception reaches the caller,
     * and the endpoint's next large message and another sender's message arrive, in order.
     */
    @Test
    @Timeout(60)
    void aLargeMessagesEncoderThatThrowsLeavesNothingBehind() {
        Received received = new Received();
        ShmTransport receiver = transport(received);
        ShmEndpoint a = connect(transport(new Received()), receiver);
        ShmEndpoint b = connect(transport(new Received()), receiver);
        assertThat(a.trySend(1, MemorySegment.NULL, bytes(20_000, 1))).isTrue();
        receive(receiver, () -> received.ids.size() == 1, "the first message");
        IllegalStateException failure = new IllegalStateException("the encoder failed on purpose");
        PayloadEncoder throwing = target -> {
            target.set(ValueLayout.JAVA_LONG, 0, -1L);
            throw failure;
        };
        for (int i = 0; i < 10; i++) { // more than the ring holds (64 KiB) in reservations of 40,000 bytes, were they kept
            assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> a.trySendEncoded(2, MemorySegment.NULL, 40_000, throwing)))
                    .isSameAs(failure);
        }
        assertThat(b.trySend(3, MemorySegment.NULL, bytes(8, 3))).isTrue();
        assertThat(a.trySend(4, MemorySegment.NULL, bytes(30_000, 4))).isTrue();
        receive(receiver, () -> received.ids.size() == 3, "the messages after the failed ones");
        assertThat(received.ids).containsExactly(1, 3, 4);
        assertThat(received.payloads.getLast()).isEqualTo(bytes(30_000, 4).toArray(ValueLayout.JAVA_BYTE));
    }

    /** Progress rounds a wait takes at most: far more than a receiver with its rings mapped needs, which fails a test that waits in vain soon. */
    private static final int ROUNDS = 20_000;

    /** Progresses until {@code done}; bounded by rounds, not timed (a large message's ring is mapped on another thread). */
    private static void receive(ShmTransport receiver, BooleanSupplier done, String what) {
        for (int i = 0; i < ROUNDS; i++) {
            if (done.getAsBoolean()) return;
            progressOrPause(receiver);
        }
        throw new AssertionError("gave up waiting for " + what + " after " + ROUNDS + " progress rounds");
    }

    private static int progressOrPause(ShmTransport transport) {
        int handled = transport.progress();
        if (handled == 0) java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        return handled;
    }

    static MemorySegment bytes(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) b[i] = (byte) (seed * 31 + i);
        return MemorySegment.ofArray(b);
    }

    private static ShmEndpoint connect(ShmTransport from, ShmTransport to) {
        return connect(from, to, cause -> { });
    }

    private static ShmEndpoint connect(ShmTransport from, ShmTransport to, EndpointEvents events) {
        return (ShmEndpoint) from.connect(new PayloadReader(to.address()), events);
    }

    /** A transport of plugin "test": 64 KiB queue and bounce ring, 8 KiB inline, checks every millisecond. */
    private ShmTransport transport(MessageSink sink) {
        return transport(sink, Duration.ofSeconds(10));
    }

    private ShmTransport transport(MessageSink sink, Duration heartbeatTimeout) {
        return transport(sink, heartbeatTimeout, Duration.ofMillis(1));
    }

    private ShmTransport transport(MessageSink sink, Duration heartbeatTimeout, Duration livenessInterval) {
        ShmTransportConfig config = new ShmTransportConfig(64 << 10, 8 << 10, 64 << 10, livenessInterval, heartbeatTimeout,
                Duration.ofMillis(50), 1024, 64L << 30);
        InProcessMemory memory = new InProcessMemory();
        ShmTransport t = new ShmTransport("test", Linux.libc(), new InProcessContext(shared, sink), config, memory, memory);
        open.add(t);
        return t;
    }
}
