package dev.conduit.shm;

import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The sender a message came by ({@code MessageSink.onMessage} with its key, {@code onSenderClosed},
 * {@link ShmTransport#senderAddress}): what the runtime answers a message through. Connection ids
 * are package-private, so these tests live here; the transports share this JVM's memory
 * ({@link InProcessMemory}). The posix tests add hostile CONNECT records and a killed sender.
 */
class ShmTransportSenderTest {

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    /** Records each message's id and sender key, and each sender told closed; {@link #onClosed} runs as one is told. */
    static final class Senders implements KeyedMessageSink {
        final List<Integer> ids = new ArrayList<>();
        final List<Long> keys = new ArrayList<>();
        final List<Long> closed = new ArrayList<>();
        /** The sender's address as the receiver gives it inside the handler, where the runtime asks for it. */
        final List<byte[]> addresses = new ArrayList<>();
        ShmTransport receiver;
        LongConsumer onClosed = sender -> { };
        Runnable onEachMessage = () -> { };

        @Override
        public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                              MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
            onEachMessage.run();
            ids.add(id);
            keys.add(sender);
            if (receiver != null) addresses.add(receiver.senderAddress(sender));
        }

        @Override
        public void onSenderClosed(long sender) {
            closed.add(sender);
            onClosed.accept(sender);
        }
    }

    private static final MemorySegment SMALL = MemorySegment.ofArray(new byte[8]);
    private static final MemorySegment LARGE = MemorySegment.ofArray(new byte[20_000]);

    /**
     * Every message names the connection it came by: its id, the same for the small and the large
     * messages of one endpoint (the queue's path and the bounce ring's), another for another
     * endpoint of the same worker and for one of another worker. The receiver used to deliver
     * without it (the sink's default dropped nothing because nothing was given).
     */
    @Test
    void everyMessageNamesItsConnectionSmallAndLargeAlikeAndEachEndpointItsOwn() {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders);
        ShmTransport sender = transport(new Senders());
        ShmTransport other = transport(new Senders());
        ShmEndpoint first = connect(sender, receiver);
        ShmEndpoint second = connect(sender, receiver);
        ShmEndpoint third = connect(other, receiver);
        assertThat(first.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        assertThat(first.trySend(2, MemorySegment.NULL, LARGE)).isTrue();
        assertThat(second.trySend(3, MemorySegment.NULL, LARGE)).isTrue();
        assertThat(second.trySend(4, MemorySegment.NULL, SMALL)).isTrue();
        assertThat(third.trySend(5, MemorySegment.NULL, SMALL)).isTrue();
        assertThat(first.trySend(6, MemorySegment.NULL, SMALL)).isTrue();
        receive(receiver, senders, 6);

        assertThat(senders.ids).containsExactly(1, 2, 3, 4, 5, 6);
        assertThat(senders.keys).containsExactly(first.connection(), first.connection(), second.connection(), second.connection(),
                third.connection(), first.connection());
        assertThat(List.of(first.connection(), second.connection(), third.connection())).doesNotHaveDuplicates().doesNotContain(0L);
    }

    /**
     * The receiver gives, for a message's key, exactly the address the connector's transport
     * returns from {@code address()}, a copy each time; connecting to it from the receiver's own
     * transport reaches the connector, which gets the answer with the answering connection's key and
     * the receiver's address for it: a reply at transport level, no address exchanged.
     */
    @Test
    void theSendersAddressIsItsTransportsAddressAndAnAnswerThroughItReachesIt() {
        Senders atReceiver = new Senders();
        ShmTransport receiver = transport(atReceiver);
        atReceiver.receiver = receiver;
        Senders atSender = new Senders();
        ShmTransport sender = transport(atSender);
        atSender.receiver = sender;
        ShmEndpoint request = connect(sender, receiver);
        assertThat(request.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        receive(receiver, atReceiver, 1);

        long key = atReceiver.keys.getFirst();
        assertThat(atReceiver.addresses.getFirst()).as("asked inside the handler").isEqualTo(sender.address());
        byte[] address = receiver.senderAddress(key);
        assertThat(address).isEqualTo(sender.address());
        address[0]++;
        assertThat(receiver.senderAddress(key)).as("a copy: what the caller does with it changes nothing").isEqualTo(sender.address());

        ShmEndpoint reply = (ShmEndpoint) receiver.connect(new PayloadReader(receiver.senderAddress(key)), cause -> { });
        assertThat(reply.trySend(2, MemorySegment.NULL, LARGE)).isTrue();
        receive(sender, atSender, 1);
        assertThat(atSender.ids).containsExactly(2);
        assertThat(atSender.keys).containsExactly(reply.connection());
        assertThat(atSender.addresses.getFirst()).isEqualTo(receiver.address());
        assertThat(receiver.senderAddress(reply.connection())).as("no connection of the receiver's own is one it receives from").isNull();
    }

    /** A key this worker never gave has no address. */
    @Test
    void aKeyOfNoConnectionHasNoAddress() {
        ShmTransport receiver = transport(new Senders());
        assertThat(receiver.senderAddress(0)).isNull();
        assertThat(receiver.senderAddress(0x12345678_00000001L)).isNull();
    }

    /**
     * An endpoint's close reaches the receiver as a CLOSE record: the sink is told once, on the
     * progress thread, and the key has no address from then on, also inside that call. The other
     * endpoint of the same worker is not told.
     */
    @Test
    void aSenderThatClosesItsEndpointIsToldOnceAndItsAddressIsGone() {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders);
        ShmTransport sender = transport(new Senders());
        ShmEndpoint closing = connect(sender, receiver);
        ShmEndpoint staying = connect(sender, receiver);
        assertThat(closing.trySend(1, MemorySegment.NULL, LARGE)).isTrue();
        assertThat(staying.trySend(2, MemorySegment.NULL, SMALL)).isTrue();
        receive(receiver, senders, 2);
        long key = closing.connection();
        List<byte[]> addressWhenTold = new ArrayList<>();
        List<Thread> toldOn = new ArrayList<>();
        senders.onClosed = told -> {
            addressWhenTold.add(receiver.senderAddress(told));
            toldOn.add(Thread.currentThread());
        };

        closing.close();
        settle(sender, receiver);

        assertThat(senders.closed).containsExactly(key);
        assertThat(toldOn).containsExactly(Thread.currentThread());
        assertThat(addressWhenTold).containsExactly((byte[]) null);
        assertThat(receiver.senderAddress(key)).isNull();
        assertThat(receiver.senderAddress(staying.connection())).isEqualTo(sender.address());
    }

    /** A sender's worker that closes closes each of its connections: each is told once. */
    @Test
    void aSenderWhoseWorkerClosesIsToldOncePerConnection() {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders);
        ShmTransport sender = transport(new Senders());
        ShmEndpoint first = connect(sender, receiver);
        ShmEndpoint second = connect(sender, receiver);
        assertThat(first.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        assertThat(second.trySend(2, MemorySegment.NULL, LARGE)).isTrue();
        receive(receiver, senders, 2);

        sender.close();
        settle(receiver);

        assertThat(senders.closed).containsExactlyInAnyOrder(first.connection(), second.connection());
        assertThat(receiver.senderAddress(first.connection())).isNull();
        assertThat(receiver.senderAddress(second.connection())).isNull();
    }

    /**
     * A sender that dies (here its lease goes, as the kernel releases a killed process's lock, and
     * no CLOSE comes) is forgotten by a liveness check once its messages are read: told once, by
     * that check, which holds the transport's lock while it walks the connections and tells the
     * sink only once it has left it (the runtime's handler closes an endpoint, which takes it).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aSenderThatDiesIsToldOnceByTheCheckThatFindsItOutsideTheTransportsLock() {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders);
        ShmTransport sender = transport(new Senders());
        ShmEndpoint ep = connect(sender, receiver);
        assertThat(ep.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        receive(receiver, senders, 1);
        List<Boolean> underTheLock = new ArrayList<>();
        senders.onClosed = key -> underTheLock.add(Thread.holdsLock(receiver.handOff));

        sender.ownLease().close(); // what its death leaves: no lock held, no CLOSE
        for (int i = 0; i < 1_000_000 && senders.closed.isEmpty(); i++) progressOrPause(receiver);

        assertThat(senders.closed).containsExactly(ep.connection());
        assertThat(underTheLock).containsExactly(false);
        assertThat(receiver.senderAddress(ep.connection())).isNull();
        settle(receiver);
        assertThat(senders.closed).as("told once").hasSize(1);
    }

    /**
     * A sender found dead by the liveness check that await() makes (a worker that sleeps between
     * messages) is told by the next progress(), as it begins, not from inside await(): a sink is
     * called from progress() only, as for its messages. Meanwhile its key already has no address.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aSenderFoundDeadInAwaitIsToldByTheNextProgressNotByAwait() {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders);
        ShmTransport sender = transport(new Senders());
        ShmEndpoint ep = connect(sender, receiver);
        assertThat(ep.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        receive(receiver, senders, 1);

        sender.ownLease().close(); // what its death leaves: no lock held, no CLOSE
        for (int i = 0; i < 100_000 && receiver.senderAddress(ep.connection()) != null; i++) receiver.await(1_000_000);

        assertThat(receiver.senderAddress(ep.connection())).as("forgotten by a check in await()").isNull();
        assertThat(senders.closed).as("told from await()").isEmpty();
        receiver.progress();
        assertThat(senders.closed).containsExactly(ep.connection());
    }

    /**
     * A connection the receiver refuses (here its bounce ring is past inbound.bounce.max) delivers
     * nothing more: told once, its key without an address; the refusal's exception is still
     * thrown, and the sender still finds its refusal listed.
     */
    @Test
    void aRefusedConnectionIsToldOnce() {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders, 4096);
        ShmTransport sender = transport(new Senders());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        ShmEndpoint ep = (ShmEndpoint) sender.connect(new PayloadReader(receiver.address()), failure::set);
        assertThat(ep.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        assertThat(ep.trySend(2, MemorySegment.NULL, LARGE)).isTrue();

        Throwable thrown = progressUntilItThrows(receiver);

        assertThat(thrown).isInstanceOf(ConduitException.class).hasMessageContaining("test.inbound.bounce.max");
        assertThat(senders.ids).containsExactly(1);
        assertThat(senders.closed).containsExactly(ep.connection());
        assertThat(receiver.senderAddress(ep.connection())).isNull();
        for (int i = 0; i < 1_000_000 && failure.get() == null; i++) {
            sender.progress();
            if (i % 1000 == 0) java.util.concurrent.locks.LockSupport.parkNanos(100_000);
        }
        assertThat(failure.get()).hasMessageContaining("refused this connection");
        assertThat(((PeerFailedException) failure.get()).reason()).isEqualTo(PeerFailedException.Reason.REFUSED);
        settle(sender, receiver);
        assertThat(senders.closed).as("told once").hasSize(1);
    }

    /**
     * A sink that throws as it is told of one closed sender: the exception comes out of the
     * progress() that told it, as one of onMessage does, and every other connection forgotten is
     * still told, once (here both of a dying worker's, forgotten by one liveness check).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aSinkThatThrowsForOneClosedSenderIsStillToldOfTheOthersOnce() {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders);
        ShmTransport sender = transport(new Senders());
        ShmEndpoint first = connect(sender, receiver);
        ShmEndpoint second = connect(sender, receiver);
        assertThat(first.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        assertThat(second.trySend(2, MemorySegment.NULL, SMALL)).isTrue();
        receive(receiver, senders, 2);
        RuntimeException handlerFailure = new IllegalStateException("the sink's own failure");
        senders.onClosed = key -> {
            if (senders.closed.size() == 1) throw handlerFailure;
        };

        sender.ownLease().close();
        Throwable thrown = null;
        for (int i = 0; i < 1_000_000 && thrown == null; i++) {
            thrown = catchThrowable(() -> progressOrPause(receiver));
        }

        assertThat(thrown).isSameAs(handlerFailure);
        settle(receiver);
        assertThat(senders.closed).as("each told once").containsExactlyInAnyOrder(first.connection(), second.connection());
    }

    /**
     * The worker's own close tells the sink of no connection, whether its owner runs it or it is
     * forced from another thread while the owner's progress() is inside a handler with a sender's
     * CLOSE behind the message: the close closes every endpoint itself, and the runtime, which is
     * closing the worker, is not to be called back for each.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void theWorkersOwnCloseTellsNoSenderAlsoWhenForcedFromAnotherThread() throws Exception {
        Senders senders = new Senders();
        ShmTransport receiver = transport(senders);
        ShmTransport sender = transport(new Senders());
        ShmEndpoint kept = connect(sender, receiver);
        assertThat(kept.trySend(1, MemorySegment.NULL, SMALL)).isTrue();
        receive(receiver, senders, 1);
        ShmEndpoint closing = connect(sender, receiver);
        assertThat(closing.trySend(2, MemorySegment.NULL, SMALL)).isTrue();
        closing.close(); // its CLOSE lies behind message 2
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        senders.onEachMessage = () -> {
            inHandler.countDown();
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        Thread owner = Thread.ofPlatform().start(() -> {
            try {
                for (int i = 0; i < 100; i++) receiver.progress();
            } catch (RuntimeException closedUnderIt) {
                // after the close, the call under way may fail: what a forced close's call may do
            }
        });
        inHandler.await();

        receiver.close();
        closed.countDown();
        owner.join();

        assertThat(senders.ids).containsExactly(1, 2);
        assertThat(senders.closed).as("told by a close").isEmpty();
    }

    private static Throwable progressUntilItThrows(ShmTransport receiver) {
        for (int i = 0; i < 1_000_000; i++) {
            try {
                progressOrPause(receiver);
            } catch (RuntimeException e) {
                return e;
            }
        }
        throw new AssertionError("progress() never threw");
    }

    /** Progresses until {@code count} messages arrived; bounded, not timed (a large message's ring is mapped on another thread). */
    private static void receive(ShmTransport receiver, Senders senders, int count) {
        for (int i = 0; i < 1_000_000 && senders.ids.size() < count; i++) progressOrPause(receiver);
        assertThat(senders.ids).hasSizeGreaterThanOrEqualTo(count);
    }

    private static void settle(ShmTransport... transports) {
        for (int i = 0; i < 1000; i++) {
            for (ShmTransport t : transports) progressOrPause(t);
        }
    }

    private static int progressOrPause(ShmTransport transport) {
        int handled = transport.progress();
        if (handled == 0) java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        return handled;
    }

    private static ShmEndpoint connect(ShmTransport from, ShmTransport to) {
        return (ShmEndpoint) from.connect(new PayloadReader(to.address()), cause -> { });
    }

    private ShmTransport transport(Senders sink) {
        return transport(sink, 64L << 30);
    }

    /** A transport of plugin "test": 64 KiB queue and bounce ring, 8 KiB inline, checks every millisecond. */
    private ShmTransport transport(Senders sink, long inboundBounceMaximum) {
        ShmTransportConfig config = new ShmTransportConfig(64 << 10, 8 << 10, 64 << 10, Duration.ofMillis(1), Duration.ofSeconds(10),
                Duration.ofMillis(50), 1024, inboundBounceMaximum);
        InProcessMemory memory = new InProcessMemory();
        ShmTransport t = new ShmTransport("test", Linux.libc(), new InProcessContext(shared, sink), config, memory, memory);
        open.add(t);
        return t;
    }
}
