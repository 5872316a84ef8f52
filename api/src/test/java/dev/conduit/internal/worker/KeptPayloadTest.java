package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.KeptPayload;
import dev.conduit.Message;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static dev.conduit.internal.worker.Loopbacks.progressUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code Message.keepPayload()} through the runtime: a transport that keeps what it delivers
 * ({@code Transport.keepDelivered}) has its release action run once, by the first close from
 * whatever thread, or by the worker's close before its transports close; a transport without the
 * operation (the SPI's default) has the runtime keep a copy.
 */
class KeptPayloadTest {

    /** How long a test waits for another thread before it gives up and fails: a hang guard, not a timing. */
    private static final Duration HANG_GUARD = Duration.ofSeconds(30);

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    private record Pair(LoopbackPlugin plugin, Worker sender, Worker receiver, Endpoint endpoint) {
    }

    private Pair pair(boolean keepsDelivered) {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false);
        plugin.keepsDelivered = keepsDelivered;
        Conduit conduit = loopbacks.conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.SINGLE);
        Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
        return new Pair(plugin, sender, receiver, sender.connect(receiver.address()));
    }

    private static MemorySegment payload(int first, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) b[i] = (byte) (first + i);
        return MemorySegment.ofArray(b);
    }

    /** Keeps the payload of every message of id 1, and records the message's own view of it. */
    private static List<KeptPayload> keepAll(Worker receiver, List<MemorySegment> delivered) {
        List<KeptPayload> kept = new ArrayList<>();
        receiver.onMessage(1, m -> {
            delivered.add(m.payload());
            kept.add(m.keepPayload());
        });
        return kept;
    }

    private static Thread closeOnAnotherThread(KeptPayload kept) throws InterruptedException {
        Thread t = new Thread(kept::close, "closer");
        t.start();
        t.join();
        return t;
    }

    @Test
    void aTransportWithoutTheOperationHasTheRuntimeKeepACopyThatOutlivesTheHandler() throws Exception {
        Pair p = pair(false);
        List<MemorySegment> delivered = new ArrayList<>();
        List<KeptPayload> kept = keepAll(p.receiver(), delivered);
        p.endpoint().send(1, payload(10, 300));
        p.endpoint().send(1, payload(50, 300));
        progressUntil(() -> kept.size() == 2, p.sender(), p.receiver());

        KeptPayload first = kept.getFirst();
        MemorySegment view = first.segment();
        assertThat(view.isReadOnly()).isTrue();
        assertThat(view.isNative()).as("a copy in native memory of the runtime's, not the transport's heap array").isTrue();
        assertThat(delivered.getFirst().isNative()).isFalse();
        assertThat(view.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(payload(10, 300).toArray(ValueLayout.JAVA_BYTE));
        assertThat(kept.get(1).segment().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(payload(50, 300).toArray(ValueLayout.JAVA_BYTE));

        closeOnAnotherThread(first);
        assertThatThrownBy(first::segment).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> view.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        first.close(); // again: nothing
        assertThat(kept.get(1).segment().get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 50);
    }

    @Test
    void aTransportThatKeepsWhatItDeliversIsReleasedOnceByTheFirstCloseFromAnyThread() throws Exception {
        Pair p = pair(true);
        List<MemorySegment> delivered = new ArrayList<>();
        List<KeptPayload> kept = keepAll(p.receiver(), delivered);
        p.endpoint().send(1, payload(7, 100));
        progressUntil(() -> kept.size() == 1, p.sender(), p.receiver());

        KeptPayload k = kept.getFirst();
        assertThat(k.segment().heapBase()).as("the delivered memory itself").isEqualTo(delivered.getFirst().heapBase());
        assertThat(k.segment().isReadOnly()).isTrue();
        assertThat(p.plugin().keptReleases).hasValue(0);
        closeOnAnotherThread(k);
        k.close();
        assertThat(p.plugin().keptReleases).hasValue(1);
        assertThatThrownBy(k::segment).isInstanceOf(IllegalStateException.class);
        p.receiver().close();
        assertThat(p.plugin().keptReleases).as("a closed payload is not released again by the worker's close").hasValue(1);
    }

    /**
     * A transport's release action that throws a checked exception it does not declare (a plugin
     * in Kotlin) is named as the plugin's fault, and leaves the payload open for a later close to
     * give back, as a release that throws an unchecked one does. Until 2026-12-07 the bare
     * IOException came out of {@code close()}, and the payload read closed but was never given
     * back: no later close, nor the worker's, tried again, and its room in the transport's memory
     * stayed taken while the worker lived.
     */
    @Test
    void aReleaseThatThrowsACheckedExceptionUndeclaredIsNamedAndALaterCloseGivesThePayloadBack() {
        Pair p = pair(true);
        List<KeptPayload> kept = keepAll(p.receiver(), new ArrayList<>());
        p.endpoint().send(1, payload(3, 10));
        progressUntil(() -> kept.size() == 1, p.sender(), p.receiver());
        java.io.IOException badDescriptor = new java.io.IOException("Bad file descriptor");
        p.plugin().keptReleaseFailure = badDescriptor;

        KeptPayload k = kept.getFirst();
        assertThatThrownBy(k::close).isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageStartingWith("plugin 'lo' failed in the release of a payload it kept (Transport.keepDelivered): "
                        + "java.io.IOException: Bad file descriptor").hasCause(badDescriptor);
        assertThat(k.segment().get(ValueLayout.JAVA_BYTE, 0)).as("still open").isEqualTo((byte) 3);
        k.close();
        assertThat(p.plugin().keptReleases).as("given back by the later close").hasValue(1);
    }

    @Test
    void theWorkersCloseClosesThePayloadsKeptFromItBeforeItsTransports() {
        Pair p = pair(true);
        List<KeptPayload> kept = keepAll(p.receiver(), new ArrayList<>());
        p.endpoint().send(1, payload(1, 10));
        progressUntil(() -> kept.size() == 1, p.sender(), p.receiver());
        p.sender().close();
        p.plugin().closes.clear();

        p.receiver().close();
        assertThat(p.plugin().closes).containsExactly("kept payload", "transport");
        assertThatThrownBy(kept.getFirst()::segment).isInstanceOf(IllegalStateException.class);
        kept.getFirst().close();
        assertThat(p.plugin().keptReleases).hasValue(1);
    }

    @Test
    void theWorkersCloseRevokesACopyKeptFromIt() {
        Pair p = pair(false);
        List<KeptPayload> kept = keepAll(p.receiver(), new ArrayList<>());
        p.endpoint().send(1, payload(1, 10));
        progressUntil(() -> kept.size() == 1, p.sender(), p.receiver());
        MemorySegment view = kept.getFirst().segment();

        p.receiver().close();
        assertThatThrownBy(kept.getFirst()::segment).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> view.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * A copy that native memory cannot hold is a ConduitException naming the payload's size, what
     * ran out and what to do, and the message stays readable in the handler. The payload here is
     * 1 PiB, more than any process's address space: the loopback delivers it over a buffer of 16
     * bytes, as the allocation fails before a byte is copied. Until 2026-12-07 the JDK's bare
     * OutOfMemoryError ("Unable to allocate ... bytes") came out of keepPayload, naming neither.
     */
    @Test
    void aCopyNativeMemoryCannotHoldIsAConduitExceptionNamingItsSizeAndTheMessageStaysReadable() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, false);
        Worker receiver = loopbacks.conduit(plugin).newWorker(ThreadMode.SINGLE);
        long huge = 1L << 50;
        List<Throwable> thrown = new ArrayList<>();
        List<Byte> readAfter = new ArrayList<>();
        receiver.onMessage(1, m -> {
            try {
                m.keepPayload();
            } catch (Throwable t) {
                thrown.add(t);
            }
            readAfter.add(m.payloadByte(0));
        });
        LoopbackPlugin.LoopbackTransport transport = plugin.transport();
        MemorySegment buffer = payload(5, 16);
        boolean[] delivered = {false};
        transport.duringProgress = () -> {
            if (delivered[0]) return;
            delivered[0] = true;
            transport.sink().onMessage(1, MemorySegment.NULL, 0, 0, buffer, 0, huge);
        };
        progressUntil(() -> readAfter.size() == 1, receiver);

        assertThat(thrown).hasSize(1);
        assertThat(thrown.getFirst()).isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasCauseInstanceOf(OutOfMemoryError.class)
                .hasMessageStartingWith("cannot keep a payload of " + huge + " bytes delivered by transport 'lo'")
                .hasMessageContaining("native memory has no room for a buffer of " + huge + " bytes")
                .hasMessageContaining("not counted against -XX:MaxDirectMemorySize")
                .hasMessageContaining("copyPayload");
        assertThat(readAfter).as("the message is still the handler's").containsExactly((byte) 5);
    }

    @Test
    void keepPayloadOutsideTheHandlerOrTwiceForOneMessageThrows() {
        Pair p = pair(false);
        AtomicReference<Message> escaped = new AtomicReference<>();
        AtomicReference<Throwable> second = new AtomicReference<>();
        List<KeptPayload> kept = new ArrayList<>();
        p.receiver().onMessage(1, m -> {
            escaped.set(m);
            kept.add(m.keepPayload());
            try {
                m.keepPayload();
            } catch (Throwable t) {
                second.set(t);
            }
        });
        p.endpoint().send(1, payload(1, 10));
        progressUntil(() -> escaped.get() != null, p.sender(), p.receiver());

        assertThat(second.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("called already")
                .hasMessageContaining("share the KeptPayload");
        assertThatThrownBy(() -> escaped.get().keepPayload()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("only valid during the handler call").hasMessageContaining("keepPayload()");
        assertThat(kept.getFirst().segment().get(ValueLayout.JAVA_BYTE, 9)).isEqualTo((byte) 10);
    }

    /**
     * Under PASS_THROUGH another thread may close the worker while a handler runs: keepPayload
     * then gives back what it kept and says the worker was closed, and so does a second call, as
     * no KeptPayload was returned. The second call used to say keepPayload was called already, and
     * to share the KeptPayload it returned.
     */
    @Test
    void aKeepThatTheWorkersCloseRefusedSaysSoAgainWhenRetriedNotThatItWasCalledAlready() throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 16, true);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker sender = conduit.newWorker(ThreadMode.MULTI);
        Worker receiver = conduit.newWorker(ThreadMode.MULTI);
        assertThat(receiver.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        Endpoint endpoint = sender.connect(receiver.address());
        List<Throwable> thrown = new ArrayList<>();
        receiver.onMessage(1, m -> {
            Thread closing = Thread.ofPlatform().start(receiver::close);
            try {
                closing.join(HANG_GUARD);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            assertThat(closing.isAlive()).as("the worker's close on another thread gave up (hang guard)").isFalse();
            for (int call = 0; call < 2; call++) {
                try {
                    m.keepPayload();
                } catch (RuntimeException e) {
                    thrown.add(e);
                }
            }
        });
        endpoint.send(1, payload(1, 10));
        progressUntil(() -> !thrown.isEmpty(), sender, receiver);

        assertThat(thrown).hasSize(2).allSatisfy(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the worker that received it was closed while its handler ran"));
    }

    /**
     * A transport closed under the handler (a forced {@code Conduit.close()} from another thread)
     * says so with an {@code IllegalStateException}, which {@code keepPayload} passes on as it is,
     * as the runtime does for every transport call; it was wrapped as the transport's failure to
     * keep the payload, with the remedy of copying it. Any other exception of the plugin's is still
     * named as its fault: a checked one it threw undeclared (a plugin in Kotlin) too, which until
     * 2026-12-07 passed bare out of {@code keepPayload}.
     */
    @Test
    void aTransportClosedUnderTheHandlerIsAnIllegalStateAndAPluginsBugIsNamed() {
        Pair p = pair(true);
        List<Throwable> thrown = new ArrayList<>();
        p.receiver().onMessage(1, m -> {
            try {
                m.keepPayload();
            } catch (RuntimeException e) {
                thrown.add(e);
            }
        });
        p.plugin().keepFailure = new IllegalStateException("transport 'lo' is closed");
        p.endpoint().send(1, payload(1, 10));
        progressUntil(() -> thrown.size() == 1, p.sender(), p.receiver());
        p.plugin().keepFailure = new NullPointerException("a bug");
        p.endpoint().send(1, payload(2, 10));
        progressUntil(() -> thrown.size() == 2, p.sender(), p.receiver());
        p.plugin().keepFailure = new java.io.IOException("Bad file descriptor");
        p.endpoint().send(1, payload(3, 10));
        progressUntil(() -> thrown.size() == 3, p.sender(), p.receiver());

        assertThat(thrown.getFirst()).isExactlyInstanceOf(IllegalStateException.class).hasMessage("transport 'lo' is closed");
        assertThat(thrown.get(1)).isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("transport 'lo' failed to keep the payload").hasCauseInstanceOf(NullPointerException.class);
        assertThat(thrown.get(2)).isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("transport 'lo' failed to keep the payload").hasCauseInstanceOf(java.io.IOException.class);
        assertThat(p.plugin().keptReleases).hasValue(0);
    }
}
