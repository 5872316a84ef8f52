package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.MessageHandler;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.ThreadMode;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import net.openhft.chronicle.bytes.ReadBytesMarshallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Marshallable payloads sent into the transport's buffer and read where received, in one JVM. No
 * {@code @Timeout} bounds a whole test: its waits are hang guards that run from the last progress
 * ({@link HangGuard}), so a loaded machine's slower run passes and one that stops fails, naming where.
 */
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

    /** Progresses both workers until {@code done}; fails once neither has had an event for {@link HangGuard#GUARD}. */
    private void progressUntil(BooleanSupplier done) {
        long deadline = System.nanoTime() + HangGuard.GUARD.toNanos();
        while (!done.getAsBoolean()) {
            if (sender.progress() + receiver.progress() > 0) {
                deadline = System.nanoTime() + HangGuard.GUARD.toNanos();
            } else if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("no message arrived for the hang guard of " + HangGuard.GUARD + " and the wait is not over");
            }
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

    /**
     * A received payload lies in the transport's memory, which the receiver may only read: its
     * view says so ({@code readWrite()}), and a write names the view and the remedy. The view said
     * it was read-write, and a write failed with the segment's "Attempt to write a read-only
     * segment", or Chronicle's exception wrapping it. The remedy named Chronicle's Bytes.copy(),
     * whose native memory only releaseLast() frees: copying each payload so leaked.
     */
    @Test
    void aReceivedPayloadsViewSaysItIsReadOnlyAndAWriteSaysWhyAndWhatToDo() {
        connect();
        List<Throwable> writes = new ArrayList<>();
        List<Boolean> readWrite = new ArrayList<>();
        List<Long> read = new ArrayList<>();
        ChronicleMessages in = new ChronicleMessages();
        receiver.onMessage(QUOTE, in.handler((message, payload) -> {
            readWrite.add(payload.readWrite());
            readWrite.add(payload.bytesStore().readWrite());
            for (Runnable write : List.<Runnable>of(() -> payload.writeLong(0, 1L), () -> payload.bytesStore().writeByte(0, (byte) 1),
                    () -> payload.compareAndSwapLong(0, 7L, 1L), () -> payload.bytesStore().zeroOut(0, 8),
                    () -> payload.writePosition(0).append("x"), () -> payload.writePosition(0).append(1L))) {
                try {
                    write.run();
                } catch (RuntimeException e) {
                    writes.add(e);
                }
            }
            BytesStore<?, ?> copy = payload.bytesStore().copy();
            copy.writeLong(8, 9L);
            read.add(payload.readLong(0));
            read.add(copy.readLong(0) + copy.readLong(8));
        }));
        endpoint.send(QUOTE, MemorySegment.ofArray(new long[]{7L, 8L, 0L, 0L})); // room for append(long)'s 20 digits
        progressUntil(() -> read.size() == 2);

        assertThat(readWrite).containsExactly(false, false);
        assertThat(writes).hasSize(6).allSatisfy(e -> assertThat(e).hasStackTraceContaining("IllegalArgumentException: Chronicle view of "
                + "a received message's payload is read-only").hasStackTraceContaining("copy them (bytesStore().copy(), which the garbage collector frees; Bytes.copy() takes native "
                + "memory that only its releaseLast() frees)"));
        assertThat(read).as("the payload, then the remedy's copy, written").containsExactly(7L, 16L);
        Region region = conduit.pool("posix").allocate(64);
        assertThat(ChronicleViews.bytes(region).readWrite()).as("a region's view").isTrue();
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

    /**
     * Chronicle reports some overflows wrapped in another exception (a text append past the limit:
     * an IndexOutOfBoundsException whose cause is the overflow); they too are a payload that does
     * not fit, in the endpoint's buffer (up to 1 KiB) and in the transport's.
     */
    @Test
    void aPayloadAppendedAsTextPastMaxLengthSendsNothingAndSaysSo() {
        connect();
        ChronicleMessages out = new ChronicleMessages();
        List<Long> received = new ArrayList<>();
        receiver.onMessage(QUOTE, m -> received.add(m.payloadSize()));
        String text = "x".repeat(5000);
        for (long maxLength : new long[] {100, 4096}) {
            assertThatThrownBy(() -> out.send(endpoint, QUOTE, bytes -> bytes.append(text), maxLength))
                    .as("text of 5000 characters in maxLength %d", maxLength)
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("does not fit in maxLength " + maxLength);
            assertThatThrownBy(() -> out.send(endpoint, QUOTE, bytes -> { for (int i = 0; i < 1000; i++) bytes.append(123456789L); }, maxLength))
                    .as("1000 numbers as text in maxLength %d", maxLength)
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("does not fit in maxLength " + maxLength);
        }
        out.send(endpoint, QUOTE, bytes -> bytes.append("fits"), 100);
        progressUntil(() -> !received.isEmpty());
        receiver.progress();
        assertThat(received).as("payload sizes received").containsExactly(4L);
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

    /**
     * A read whose object throws, or a handler that throws (the runtime consumes its message and goes
     * on: guarantees.md), leaves the instance ready for the next message, which it reads; it does not
     * stay "already reading a message".
     */
    @Test
    void aReadOrAHandlerThatThrowsLeavesTheInstanceReadyForTheNextMessage() {
        connect();
        ChronicleMessages in = new ChronicleMessages();
        List<Long> read = new ArrayList<>();
        List<String> thrown = new ArrayList<>();
        AtomicLong delivered = new AtomicLong();
        MessageHandler handler = in.handler((message, payload) -> {
            read.add(payload.readLong());
            if (read.size() == 1) throw new IllegalStateException("the handler's own failure");
        });
        receiver.onMessage(QUOTE, message -> {
            try {
                if (delivered.incrementAndGet() == 1) {
                    in.read(message, (ReadBytesMarshallable) bytes -> {
                        throw new IllegalStateException("the object's own failure");
                    });
                } else {
                    handler.onMessage(message);
                }
            } catch (IllegalStateException e) {
                thrown.add(e.getMessage());
            }
        });
        for (long i = 1; i <= 3; i++) endpoint.send(QUOTE, MemorySegment.ofArray(new long[] {i}));
        progressUntil(() -> delivered.get() == 3);
        assertThat(thrown).containsExactly("the object's own failure", "the handler's own failure");
        assertThat(read).containsExactly(2L, 3L);
    }

    /**
     * A read of another message from inside a handler of the same instance (what a nested delivery
     * does) is refused, and the handler's own payload stays readable: the one receiving view cannot
     * be pointed at two messages at once.
     */
    @Test
    void aReadFromInsideAHandlerOfTheSameInstanceIsRefusedAndItsPayloadStaysReadable() {
        connect();
        ChronicleMessages in = new ChronicleMessages();
        List<Object> seen = new ArrayList<>();
        receiver.onMessage(QUOTE, in.handler((message, payload) -> {
            try {
                in.read(message, new Quote());
            } catch (IllegalStateException e) {
                seen.add(e.getMessage());
            }
            seen.add(payload.readLong(0));
        }));
        endpoint.send(QUOTE, MemorySegment.ofArray(new long[] {42}));
        progressUntil(() -> seen.size() == 2);
        assertThat(seen).containsExactly("this ChronicleMessages is already reading a message (use one per thread)", 42L);
    }

    /**
     * A send from inside another's marshalling on the same instance is refused, and so the outer send
     * sends nothing: its one sending view cannot be pointed at two messages at once.
     */
    @Test
    void aSendFromInsideAnotherOnTheSameInstanceIsRefusedAndNothingIsSent() {
        connect();
        ChronicleMessages out = new ChronicleMessages();
        List<Long> received = new ArrayList<>();
        receiver.onMessage(QUOTE, m -> received.add(m.payloadSize() == 8 ? m.payloadLong(0) : -m.payloadSize()));
        assertThatThrownBy(() -> out.send(endpoint, QUOTE, outer -> {
            outer.writeLong(1);
            out.send(endpoint, QUOTE, inner -> inner.writeLong(2), 64);
        }, 64)).isInstanceOf(IllegalStateException.class).hasMessage("this ChronicleMessages is already sending (use one per thread)");
        out.send(endpoint, QUOTE, bytes -> bytes.writeLong(3), 64);
        progressUntil(() -> !received.isEmpty());
        receiver.progress();
        assertThat(received).containsExactly(3L);
    }

    /**
     * A marshallable that writes through {@code unchecked(true)} of its view (Chronicle's way to skip
     * the bounds checks, which releases the view it is called on and returns another with positions
     * of its own) has its send refused, naming the release and what to do instead, and nothing
     * reaches the peer; the next send, through a new view, arrives. Whatever the target: the
     * endpoint's buffer (64), the record in the peer's queue (4 KiB), the bounce ring (16 KiB).
     * Until 2026-12-07 the send went out as an empty payload, what the marshallable wrote dropped,
     * and the released view stayed the instance's.
     */
    @Test
    void aMarshallableWritingThroughAnUncheckedViewIsRefusedAndNothingReachesThePeer() {
        connect();
        ChronicleMessages out = new ChronicleMessages();
        List<String> received = new ArrayList<>();
        receiver.onMessage(QUOTE, m -> received.add(m.payloadSize() == 8 ? "long " + m.payloadLong(0) : m.payloadSize() + " bytes"));
        long next = 0;
        for (long maxLength : new long[] {64, 4096, 16384}) {
            assertThatThrownBy(() -> out.send(endpoint, QUOTE, bytes -> ((Bytes<?>) bytes).unchecked(true).writeLong(-1), maxLength))
                    .as("maxLength %d", maxLength).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("the marshallable released the sending view (unchecked(true)")
                    .hasMessageContaining("nothing was sent");
            long sent = ++next;
            out.send(endpoint, QUOTE, bytes -> bytes.writeLong(sent), maxLength);
            progressUntil(() -> received.contains("long " + sent));
        }
        receiver.progress();
        assertThat(received).as("what the receiver got of the unchecked writes and the sends after them")
                .containsExactly("long 1", "long 2", "long 3");
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

    /**
     * An endpoint whose zero-copy send hands the encoder the ranged call at {@code offset} of
     * {@code buffer}, as the shared-memory transports do in their bounce rings; nothing else.
     */
    private record EncodingAt(MemorySegment buffer, long offset) implements Endpoint {
        @Override public long send(int id, MemorySegment header, long maxLength, PayloadEncoder encoder) {
            return encoder.encode(buffer, offset, maxLength);
        }

        @Override public String transport() { throw unexpected("transport"); }
        @Override public int maxHeaderSize() { throw unexpected("maxHeaderSize"); }
        @Override public long maxPayloadSize() { throw unexpected("maxPayloadSize"); }
        @Override public void send(int id, MemorySegment header, MemorySegment payload) { throw unexpected("send"); }
        @Override public void send(int id, MemorySegment payload) { throw unexpected("send"); }
        @Override public long pending() { return 0; }
        @Override public long pendingBytes() { return 0; }
        @Override public dev.conduit.PeerRegion peerRegion(byte[] handle) { throw unexpected("peerRegion"); }
        @Override public void put(MemorySegment source, dev.conduit.PeerRegion target, long offset) { throw unexpected("put"); }
        @Override public void get(dev.conduit.PeerRegion source, long offset, MemorySegment destination) { throw unexpected("get"); }
        @Override public long fetchAdd(dev.conduit.PeerRegion target, long offset, long delta) { throw unexpected("fetchAdd"); }
        @Override public long compareAndSwap(dev.conduit.PeerRegion target, long offset, long expected, long desired) { throw unexpected("compareAndSwap"); }
        @Override public void flush() { }
        @Override public boolean isFailed() { return false; }
        @Override public dev.conduit.spi.PeerFailedException failure() { return null; }
        @Override public void close() { }

        /** ChronicleMessages.send makes one encoded send and nothing else: any other call fails the test. */
        private static AssertionError unexpected(String method) {
            return new AssertionError("ChronicleMessages called Endpoint." + method + ", which its send must not");
        }
    }

    @Test
    void writtenInPlaceTheMarshalledFormStaysInItsRangeOfTheTransportsBuffer() {
        MemorySegment buffer = Arena.ofAuto().allocate(8192);
        buffer.fill((byte) 0x5A);
        long offset = 1000;
        long maxLength = 2048;
        Endpoint inPlace = new EncodingAt(buffer, offset);
        ChronicleMessages out = new ChronicleMessages();

        long written = out.send(inPlace, QUOTE, new Quote(1, 101.25, 7, "ACME", 1500), maxLength);
        Quote read = new Quote();
        read.readMarshallable(Bytes.wrapForRead(buffer.asSlice(offset, written).toArray(ValueLayout.JAVA_BYTE)));
        assertThat(read.describe()).isEqualTo("1/101.25/7/ACME/1500");

        assertThatThrownBy(() -> out.send(inPlace, QUOTE, new Quote(2, 1, 1, "X", 5000), maxLength))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("does not fit in maxLength 2048");
        for (long i = 0; i < buffer.byteSize(); i++) {
            if (i >= offset && i < offset + maxLength) continue;
            assertThat(buffer.get(ValueLayout.JAVA_BYTE, i)).as("byte %d, outside the range", i).isEqualTo((byte) 0x5A);
        }
    }

    /**
     * What one round of a path allocates once the JIT's code for it runs: rounds, at least three,
     * until one allocates less than {@code bound} bytes, for at most a minute (a hang guard for a
     * path that always allocates, not a speed check), then the last round's bytes. A fixed count of
     * warm-up rounds failed on a loaded machine, whose compiler threads reached the path late: C2's
     * escape analysis is what makes its views vanish (16 KB for 12,000 receipts after ten rounds).
     */
    private static long onceCompiled(long bound, LongSupplier round) {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
        long allocated;
        int rounds = 0;
        do {
            allocated = round.getAsLong();
            rounds++;
        } while (rounds < 3 || allocated >= bound && System.nanoTime() - deadline < 0);
        return allocated;
    }

    /** This thread's allocated bytes, through reflection: the module does not read java.management. */
    private static long allocatedBytes() {
        try {
            Object bean = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
            return (Long) Class.forName("com.sun.management.ThreadMXBean").getMethod("getCurrentThreadAllocatedBytes").invoke(bean);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("cannot read this thread's allocated bytes", e);
        }
    }

    /**
     * Written in place, the marshalled form goes through the encoder's ranged call (the bounce
     * ring's way). The sending view used to keep the target, a view made per send, so each send
     * allocated it (40 B); it is now pointed at a range of the buffer.
     */
    @Test
    void sendingInPlaceAllocatesNothingPerMessage() throws InterruptedException {
        ChronicleMessages out = new ChronicleMessages();
        Endpoint inPlace = new EncodingAt(Arena.ofAuto().allocate(64 << 10), 4096);
        Quote quote = new Quote(1, 101.25, 7, "ACME", 1500);
        int messages = 100_000;
        AtomicLong sent = new AtomicLong();
        long[] allocated = {0};
        // Half a million sends take 3 s on a quiet machine and several times that on a busy one: the guard watches the
        // count, the allocation is the sending thread's own.
        HangGuard.runWhileProgressing("of rounds of " + messages + " sends marshalled in place", sent::get, () ->
                allocated[0] = onceCompiled(messages, () -> {
                    long before = allocatedBytes(); // the reading itself allocates about 1 KB
                    for (int i = 0; i < messages; i++) {
                        out.send(inPlace, QUOTE, quote, 16 << 10);
                        sent.setOpaque(sent.getPlain() + 1);
                    }
                    return allocatedBytes() - before;
                }));
        assertThat(allocated[0]).as("bytes allocated for %d sends marshalled in place", messages).isLessThan(messages);
    }

    /**
     * A received payload is read where it lies, through the receiving view pointed at its range of
     * the transport's read-only buffer. It used to be pointed at {@code Message.payload()}, a view
     * made per message (40 B).
     */
    @Test
    void receivingAllocatesNothingPerMessage() {
        connect();
        ChronicleMessages in = new ChronicleMessages();
        long[] sum = new long[2];
        receiver.onMessage(QUOTE, in.handler((message, payload) -> {
            sum[0] += payload.readLong(0);
            sum[1]++;
        }));
        MemorySegment payload = MemorySegment.ofArray(new long[8]);
        int messages = 12_000; // the 2 MiB queue holds 16,384 records of 128 B
        long[] sent = {0};
        long allocated = onceCompiled(messages, () -> {
            for (int i = 0; i < messages; i++) endpoint.send(QUOTE, payload);
            sent[0] += messages;
            long before = allocatedBytes(); // the reading itself allocates about 1 KB
            for (int k = 0; k < 1_000_000 && sum[1] < sent[0]; k++) receiver.progress(); // bounded, not timed
            return allocatedBytes() - before;
        });
        assertThat(sum[1]).isEqualTo(sent[0]);
        assertThat(allocated).as("bytes allocated to receive %d messages through ChronicleMessages", messages).isLessThan(messages);
    }

    /**
     * An overflow that is not the sending view's (here a {@code ByteBuffer} of the marshallable's
     * own, too small for what it puts) reaches the caller as it was: it says nothing of maxLength,
     * and raising maxLength, which the send's message advises, would not help.
     */
    @Test
    void anOverflowOfABufferOfTheMarshallablesOwnIsNotReportedAsAPayloadLargerThanMaxLength() {
        ChronicleMessages out = new ChronicleMessages();
        Endpoint inPlace = new EncodingAt(Arena.ofAuto().allocate(8192), 0);
        java.nio.ByteBuffer scratch = java.nio.ByteBuffer.allocate(4);
        assertThatThrownBy(() -> out.send(inPlace, QUOTE, bytes -> {
            bytes.writeLong(1);
            scratch.clear().putLong(2); // the marshallable's own mistake: 8 bytes into 4
        }, 2048)).isInstanceOf(java.nio.BufferOverflowException.class);
    }

    /**
     * A handler that lets go of its payload's view the Chronicle way ({@code releaseLast()}, or
     * {@code unchecked(true)}, which releases the view it is called on) affects its own message
     * only: the next message through the same instance is read as every other. The view is the
     * instance's, pointed at each message in turn, and a released view stays released.
     */
    @Test
    void aHandlerThatReleasesItsPayloadsViewLeavesTheInstanceReadingTheNextMessage() {
        connect();
        List<String> read = new ArrayList<>();
        List<ChronicleMessages.PayloadHandler> lettingGo = List.of(
                (message, payload) -> payload.releaseLast(),
                (message, payload) -> read.add("unchecked " + payload.unchecked(true).readLong(0)));
        for (int id = 0; id < lettingGo.size(); id++) {
            ChronicleMessages in = new ChronicleMessages();
            ChronicleMessages.PayloadHandler first = lettingGo.get(id);
            boolean[] handled = {false};
            receiver.onMessage(QUOTE + 1 + id, in.handler((message, payload) -> {
                if (!handled[0]) {
                    handled[0] = true;
                    first.onPayload(message, payload);
                    return;
                }
                try {
                    Quote quote = new Quote();
                    quote.readMarshallable(payload);
                    read.add(quote.describe());
                } catch (RuntimeException e) {
                    read.add(e.toString());
                }
            }));
        }
        ChronicleMessages out = new ChronicleMessages();
        for (int id = 0; id < lettingGo.size(); id++) {
            out.send(endpoint, QUOTE + 1 + id, new Quote(1, 1.5, 2, "A", 0), 256);
            out.send(endpoint, QUOTE + 1 + id, new Quote(2, 2.5, 3, "B", 0), 256);
        }
        progressUntil(() -> read.size() == 3);
        assertThat(read).containsExactly("2/2.5/3/B/0", "unchecked 1", "2/2.5/3/B/0");
    }
}
