package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.PayloadReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Connection ids of one worker that its count comes round to after 2^32 connections: a new
 * connection skips an id its receiver may still know. The count is started where a test needs it
 * ({@link OwnerLease#countConnectionsFrom}); the transports share this JVM's memory, exported as
 * numbers (the plugins' own transport tests are posix's and memfd's).
 */
class ShmTransportConnectionIdTest {

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    /**
     * A connection opened when the count stood at 0, still open as the count comes round from
     * 0xffffffff: the next connection skips its id. It used to take it, and the receiver took the
     * new connection's CONNECT for a second announcement of the open one, refused both and dropped
     * their messages.
     */
    @Test
    void aCountThatComesRoundSkipsTheIdOfAnOpenConnection() {
        List<Integer> received = new ArrayList<>();
        ShmTransport receiver = transport(received, 4096);
        ShmTransport sender = transport(new ArrayList<>(), 4096);
        sender.ownLease().countConnectionsFrom(0);
        ShmEndpoint open = connect(sender, receiver);
        assertThat(open.trySend(1, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        sender.ownLease().countConnectionsFrom(-1); // just below the wrap: 0xffffffff, then 0, the open connection's
        ShmEndpoint last = connect(sender, receiver);
        ShmEndpoint next = connect(sender, receiver);
        assertThat(last.trySend(2, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        assertThat(next.trySend(3, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        assertThat(open.trySend(4, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        receive(receiver, received, 4);
        assertThat(received).containsExactly(1, 2, 3, 4);
        assertThat(next.connection()).isNotIn(open.connection(), last.connection());
    }

    /**
     * A closed connection whose CLOSE found no room in its receiver's queue yet keeps its id: the
     * next connection that the count comes round to it with skips it. It used to take it, and its
     * CONNECT reached the receiver before the old connection's CLOSE.
     */
    @Test
    void aClosedConnectionWhoseCloseIsNotSentYetKeepsItsId() {
        List<Integer> received = new ArrayList<>();
        ShmTransport receiver = transport(received, 4096);
        ShmTransport sender = transport(new ArrayList<>(), 4096);
        sender.ownLease().countConnectionsFrom(0);
        ShmEndpoint closed = connect(sender, receiver);
        int sent = 0;
        while (sent < 10_000 && closed.trySend(1, MemorySegment.NULL, EIGHT_BYTES)) sent++;
        assertThat(closed.trySend(1, MemorySegment.NULL, EIGHT_BYTES)).as("the receiver's queue is full").isFalse();
        closed.close(); // its CLOSE waits for room
        sender.ownLease().countConnectionsFrom(-1);
        connect(sender, receiver);
        ShmEndpoint next = connect(sender, receiver);
        receive(receiver, received, sent);
        assertThat(next.trySend(2, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        receive(receiver, received, sent + 1);
        assertThat(received).hasSize(sent + 1).endsWith(2);
        assertThat(next.connection()).isNotEqualTo(closed.connection());
    }

    /**
     * A connection the receiver refused (past inbound.max) and its sender closed: the receiver
     * still lists its id among its refused connections, and the next connection the count comes
     * round to it with skips it. It used to take it, and the receiver refused the new connection at
     * once, as an announcement of a connection it had refused.
     */
    @Test
    void anIdTheReceiverListsAsRefusedIsSkipped() {
        List<Integer> received = new ArrayList<>();
        ShmTransport receiver = transport(received, 1);
        ShmTransport sender = transport(new ArrayList<>(), 4096);
        ShmEndpoint kept = connect(sender, receiver);
        assertThat(kept.trySend(1, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        receive(receiver, received, 1);
        sender.ownLease().countConnectionsFrom(100);
        ShmEndpoint refused = connect(sender, receiver);
        assertThat(refused.trySend(2, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        assertThatThrownBy(() -> receive(receiver, received, 2)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("refused connection").hasMessageContaining("test.inbound.max");
        refused.close();
        kept.close(); // makes room under inbound.max
        for (int i = 0; i < 100; i++) receiver.progress(); // reads both CLOSEs

        sender.ownLease().countConnectionsFrom(100);
        ShmEndpoint next = connect(sender, receiver);
        assertThat(next.trySend(3, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        receive(receiver, received, 2);
        assertThat(received).containsExactly(1, 3);
        assertThat(next.connection()).isNotEqualTo(refused.connection());
    }

    /**
     * A connection whose CLOSE could not be written (its receiver's queue was found broken: a tail
     * more than a ring ahead of the head) is released without a CLOSE while its receiver lives and
     * keeps it: its id stays taken for as long as the sender's worker lives, and the count that
     * comes round to it skips it. It used to be taken again, and the receiver took the new
     * connection's CONNECT for a second announcement of the old one. (Until 2026-12-07 a close
     * whose look at the peer's lease failed got there too; such a look now takes the peer as alive,
     * and the close writes its CLOSE.)
     */
    @Test
    void aConnectionReleasedWithoutItsCloseWhileItsReceiverLivesKeepsItsIdForGood() {
        List<Integer> received = new ArrayList<>();
        ShmTransport receiver = transport(received, 4096);
        List<MemorySegment> mappedBySender = new CopyOnWriteArrayList<>();
        ShmTransport sender = transport(new ArrayList<>(), 4096, Linux.libc(), mappedBySender);
        sender.ownLease().countConnectionsFrom(0);
        ShmEndpoint closed = connect(sender, receiver);
        assertThat(closed.trySend(1, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        receive(receiver, received, 1);
        MemorySegment receiversQueue = mappedBySender.getFirst();
        long tail = receiversQueue.get(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET);
        receiversQueue.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, tail ^ 0x8000_0000L); // 2^31 lines off the head
        catchThrowable(closed::close);
        receiversQueue.set(ValueLayout.JAVA_LONG, ReceiveQueue.TAIL_OFFSET, tail); // the receiver never sees it broken

        sender.ownLease().countConnectionsFrom(0);
        ShmEndpoint next = connect(sender, receiver);
        assertThat(next.trySend(2, MemorySegment.NULL, EIGHT_BYTES)).isTrue();
        receive(receiver, received, 2);
        assertThat(received).containsExactly(1, 2);
        assertThat(next.connection()).isNotEqualTo(closed.connection());
    }

    /**
     * A worker's close whose one look at a peer's lease fails (flock refused: ENOLCK) while an
     * endpoint waits for that peer to read its bounce ring still does every later step, and releases
     * the worker's lease ("Every step runs even if an earlier one fails"). The look, in
     * ShmEndpoint#awaitsDrain, is thrown out of the close's wait for its peers, before the endpoints,
     * the queue, the provider, the lease and the directory are closed; and the close is idempotent,
     * so no later call finishes it: the lease stays held, and the peers take the worker for alive.
     */
    @Test
    void aWorkersCloseWhoseLookAtAPeersLeaseFailsWhileItsRingWaitsStillReleasesItsLease() {
        ShmTransport receiver = transport(new ArrayList<>(), 4096);
        AtomicInteger flockFailures = new AtomicInteger();
        ShmTransport sender = transport(new ArrayList<>(), 4096, failingWhile("tryFlock", Errno.ENOLCK,
                () -> flockFailures.getAndUpdate(n -> Math.max(0, n - 1)) > 0));
        ShmEndpoint endpoint = connect(sender, receiver);
        assertThat(endpoint.trySend(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[20_000]))).as("a large message, unread").isTrue();
        Path lease = sender.ownLease().path();
        assertThat(lease).as("the sender's lease, before its close").exists();
        flockFailures.set(1);
        catchThrowable(sender::close); // the lease's failure may be the close's to report, once every step ran
        assertThat(flockFailures).as("the one look that failed").hasValue(0);
        assertThat(lease).as("the closed worker's lease").doesNotExist();
    }

    /**
     * An endpoint's close whose one look at its live peer's lease fails (flock refused: ENOLCK)
     * keeps its bounce ring until the peer has read the large message in it, as the close promises
     * ("the bounce ring until the peer has read every large payload in it"), and as a liveness
     * check takes a failed look for a live peer. The failed look in finishClose left the step with
     * its {@code complete} still true, so the endpoint was released at once and its ring freed
     * under the unread message: the live peer then could not map it, refused the connection and
     * dropped the message.
     */
    @Test
    void anEndpointsCloseWhoseLookAtItsLivePeersLeaseFailsKeepsTheRingUntilThePeerReadsIt() {
        List<Integer> received = new ArrayList<>();
        ShmTransport receiver = transport(received, 4096);
        AtomicInteger flockFailures = new AtomicInteger();
        ShmTransport sender = transport(new ArrayList<>(), 4096, failingWhile("tryFlock", Errno.ENOLCK,
                () -> flockFailures.getAndUpdate(n -> Math.max(0, n - 1)) > 0));
        ShmEndpoint endpoint = connect(sender, receiver);
        assertThat(endpoint.trySend(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[20_000]))).as("a large message, unread").isTrue();
        flockFailures.set(1);
        catchThrowable(endpoint::close);
        assertThat(flockFailures).as("the one look that failed").hasValue(0);
        Throwable progressFailure = null;
        for (int i = 0; i < 10_000 && received.isEmpty() && progressFailure == null; i++) {
            progressFailure = catchThrowable(receiver::progress);
        }
        assertThat(progressFailure).as("what the receiver's progress() threw").isNull();
        assertThat(received).as("the large message sent before the close").containsExactly(1);
    }

    /** The real {@link Libc}, but {@code call} fails with {@code errno} while {@code when} says so. */
    private static Libc failingWhile(String call, int errno, BooleanSupplier when) {
        Libc real = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            if (method.getName().equals(call) && when.getAsBoolean()) throw new ErrnoException(call, errno, "fake", "injected by the test");
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }

    private static final MemorySegment EIGHT_BYTES = MemorySegment.ofArray(new byte[8]);

    /** Progresses the receiver until {@code count} messages arrived; bounded, not timed. */
    private static void receive(ShmTransport receiver, List<Integer> received, int count) {
        for (int i = 0; i < 10_000 && received.size() < count; i++) receiver.progress();
        assertThat(received).hasSizeGreaterThanOrEqualTo(count);
    }

    private static ShmEndpoint connect(ShmTransport from, ShmTransport to) {
        return (ShmEndpoint) from.connect(new PayloadReader(to.address()), cause -> { });
    }

    /** A transport of plugin "test" with a 64 KiB queue, that keeps at most {@code inboundMaximum} senders' connections. */
    private ShmTransport transport(List<Integer> received, long inboundMaximum) {
        return transport(received, inboundMaximum, Linux.libc());
    }

    private ShmTransport transport(List<Integer> received, long inboundMaximum, Libc libc) {
        return transport(received, inboundMaximum, libc, new CopyOnWriteArrayList<>());
    }

    /** A transport as above, whose every mapping of a peer's memory (its first: the queue it connects to) is added to {@code mapped}. */
    private ShmTransport transport(List<Integer> received, long inboundMaximum, Libc libc, List<MemorySegment> mapped) {
        ShmTransportConfig config = new ShmTransportConfig(64 << 10, 8 << 10, 64 << 10, Duration.ofMillis(20), Duration.ofSeconds(10),
                Duration.ofMillis(50), inboundMaximum, 64L << 30);
        InProcessMemory memory = new InProcessMemory();
        ShmTransport t = new ShmTransport("test", libc, new InProcessContext(shared, (id, h, ho, hl, p, po, pl) -> received.add(id)),
                config, memory, (payload, chunkLength) -> {
                    var mapping = memory.map(payload, chunkLength);
                    mapped.add(mapping.segment());
                    return mapping;
                });
        open.add(t);
        return t;
    }
}
