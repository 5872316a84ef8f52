package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import net.openhft.chronicle.bytes.Bytes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Marshallable payloads sent into the transport's buffer and read where received, in one JVM. */
@Timeout(value = 60, unit = TimeUnit.SECONDS) // a hang guard
class ChronicleMessagesTest {

    private static final int QUOTE = 3;

    @TempDir
    Path shared;
    private Conduit conduit;
    private Worker sender;
    private Worker receiver;
    private Endpoint endpoint;

    @AfterEach
    void tearDown() {
        if (conduit != null) conduit.close();
    }

    private void connect() {
        conduit = Conduits.posix(shared);
        sender = conduit.newWorker(ThreadMode.SINGLE);
        receiver = conduit.newWorker(ThreadMode.SINGLE);
        endpoint = sender.connect(receiver.address());
    }

    private void progressUntil(java.util.function.BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean()) {
            sender.progress();
            receiver.progress();
            if (System.nanoTime() > deadline) throw new AssertionError("messages did not arrive");
        }
    }

    @Test
    void aMarshallableIsWrittenIntoTheTransportAndReadBackWithChronicleAndWithPlainAccessors() {
        connect();
        ChronicleMessages out = new ChronicleMessages();
        ChronicleMessages in = new ChronicleMessages();
        List<String> read = new ArrayList<>();
        List<String> plain = new ArrayList<>();
        receiver.onMessage(QUOTE, in.handler((message, payload) -> {
            Quote q = new Quote();
            q.readMarshallable(payload);
            read.add(q.describe());
            plain.add(message.payloadLong(0) + "/" + Double.longBitsToDouble(message.payloadLong(8)) + "/" + message.payloadInt(16));
        }));
        // inline, and large (through the bounce ring: beyond inline.max of 8 KiB)
        long small = out.send(endpoint, QUOTE, new Quote(1, 101.25, 7, "ACME", 0), 256);
        long large = out.send(endpoint, QUOTE, new Quote(2, 99.5, 3, "LARGE", 100_000), 200_000);
        assertThat(small).isEqualTo(8 + 8 + 4 + 1 + 4 + 1);
        assertThat(large).isGreaterThan(100_000);
        progressUntil(() -> read.size() == 2);
        assertThat(read).containsExactly("1/101.25/7/ACME/0", "2/99.5/3/LARGE/100000");
        assertThat(plain).containsExactly("1/101.25/7", "2/99.5/3");
    }

    /**
     * A SERIALIZED worker's handlers run on whichever thread progresses it. With assertions on (as
     * in most test suites), Chronicle used to tie the views to their first thread and throw from
     * the next one.
     */
    @Test
    void oneInstancePerSerializedWorkerServesHandlersAndSendsOnSeveralThreads() throws Exception {
        conduit = Conduits.posix(shared);
        sender = conduit.newWorker(ThreadMode.SERIALIZED);
        receiver = conduit.newWorker(ThreadMode.SERIALIZED);
        endpoint = sender.connect(receiver.address());
        ChronicleMessages out = new ChronicleMessages();
        ChronicleMessages in = new ChronicleMessages();
        List<String> read = java.util.Collections.synchronizedList(new ArrayList<>());
        receiver.onMessage(QUOTE, in.handler((message, payload) -> {
            Quote q = new Quote();
            q.readMarshallable(payload);
            read.add(q.describe());
        }));
        // The first on this thread, which stays alive while the others use the same instance.
        out.send(endpoint, QUOTE, new Quote(0, 1.5, 1, "T0", 0), 256);
        progressUntil(() -> read.size() == 1);
        for (int i = 1; i < 4; i++) {
            int n = i;
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread t = Thread.ofPlatform().start(() -> {
                try {
                    out.send(endpoint, QUOTE, new Quote(n, 1.5, 1, "T" + n, 0), 256);
                    progressUntil(() -> read.size() == n + 1);
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            t.join();
            assertThat(failure.get()).as("thread " + n).isNull();
        }
        assertThat(read).containsExactly("0/1.5/1/T0/0", "1/1.5/1/T1/0", "2/1.5/1/T2/0", "3/1.5/1/T3/0");
    }

    @Test
    void readFillsAnObjectFromTheCurrentMessage() {
        connect();
        ChronicleMessages messages = new ChronicleMessages();
        List<String> read = new ArrayList<>();
        Quote reused = new Quote();
        receiver.onMessage(QUOTE, m -> read.add(messages.read(m, reused).describe()));
        for (int i = 0; i < 100; i++) messages.send(endpoint, QUOTE, new Quote(i, i * 0.5, i, "S" + i, i), 1024);
        progressUntil(() -> read.size() == 100);
        assertThat(read.get(99)).isEqualTo("99/49.5/99/S99/99");
    }

    @Test
    void aPayloadLargerThanMaxLengthSendsNothingAndSaysSo() {
        connect();
        ChronicleMessages out = new ChronicleMessages();
        List<Long> sequences = new ArrayList<>();
        receiver.onMessage(QUOTE, m -> sequences.add(m.payloadLong(0)));
        assertThatThrownBy(() -> out.send(endpoint, QUOTE, new Quote(1, 1, 1, "X", 500), 100))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("does not fit in maxLength 100");
        assertThatThrownBy(() -> out.send(endpoint, QUOTE, new Quote(2, 1, 1, "X", 50_000), 20_000))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("does not fit in maxLength 20000");
        out.send(endpoint, QUOTE, new Quote(3, 1, 1, "X", 0), 100);
        progressUntil(() -> !sequences.isEmpty());
        receiver.progress();
        assertThat(sequences).containsExactly(3L);
    }

    @Test
    void aPayloadViewKeptAfterTheHandlerThrows() {
        connect();
        ChronicleMessages in = new ChronicleMessages();
        AtomicReference<Bytes<?>> kept = new AtomicReference<>();
        receiver.onMessage(QUOTE, in.handler((message, payload) -> {
            assertThat(payload.readRemaining()).isEqualTo(message.payloadSize());
            assertThatThrownBy(() -> payload.writeLong(0, 1)).as("read-only").isInstanceOf(RuntimeException.class);
            assertThatThrownBy(() -> payload.readLong(payload.readLimit())).isInstanceOf(RuntimeException.class);
            kept.set(payload);
        }));
        endpoint.send(QUOTE, MemorySegment.ofArray(new long[] {42}));
        progressUntil(() -> kept.get() != null);
        assertThatThrownBy(() -> kept.get().readLong(0)).isInstanceOf(IllegalStateException.class).hasMessageContaining("used after it was closed");
    }

    @Test
    void theSendingViewIsUnusableOnceTheSendReturned() {
        connect();
        ChronicleMessages out = new ChronicleMessages();
        AtomicReference<net.openhft.chronicle.bytes.BytesOut<?>> kept = new AtomicReference<>();
        out.send(endpoint, QUOTE, bytes -> {
            kept.set(bytes);
            bytes.writeLong(5);
        }, 64);
        assertThatThrownBy(() -> kept.get().writeLong(6)).as("it pointed into the peer's queue").isInstanceOf(IllegalStateException.class);
        List<Long> got = new ArrayList<>();
        receiver.onMessage(QUOTE, m -> got.add(m.payloadSize() == 8 ? m.payloadLong(0) : -1));
        progressUntil(() -> !got.isEmpty());
        assertThat(got).containsExactly(5L);
        assertThat(MemorySegment.ofArray(new long[] {5}).get(ValueLayout.JAVA_LONG, 0)).isEqualTo(5L);
    }
}
