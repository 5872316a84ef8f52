package dev.conduit.internal.worker;

import dev.conduit.Message;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * What a transport hands the dispatcher comes from a peer: an id no handler can have included; and
 * the {@link Message} flyweight it fills, where an end-to-end test cannot reach.
 */
class MessageDispatchTest {

    @Test
    void idsOutsideTheHandlersRangeAreCountedWithoutMemoryGrowingWithTheId() {
        MessageDispatch dispatch = new MessageDispatch(false);
        long before = retainedHeap();
        for (int id : new int[] {Integer.MAX_VALUE, 65536, -1, Integer.MIN_VALUE, 1 << 30}) {
            dispatch.onMessage(id, MemorySegment.NULL, 0, 0, MemorySegment.NULL, 0, 0);
        }
        // Remembering which ids were warned about by their value took 256 MiB for Integer.MAX_VALUE.
        assertThat(retainedHeap() - before).as("heap kept after the hostile ids").isLessThan(64L << 20);
        assertThat(dispatch.unhandled()).isEqualTo(5);
    }

    /**
     * A null destination of a copy is refused naming the parameter, as every other null argument
     * of the API is: the JDK's copy threw a NullPointerException with no message (into an array)
     * or one naming its own variable "dst" (into a segment).
     */
    @Test
    void aCopyIntoANullDestinationIsRefusedNamingIt() {
        MessageDispatch dispatch = new MessageDispatch(false);
        List<Throwable> thrown = new ArrayList<>();
        dispatch.setHandler(1, m -> {
            List<Runnable> copies = List.of(
                    () -> m.copyPayload(0, (byte[]) null, 0, 1),
                    () -> m.copyPayload(0, (MemorySegment) null, 0, 1),
                    () -> m.copyHeader(0, (byte[]) null, 0, 1),
                    () -> m.copyHeader(0, (MemorySegment) null, 0, 1));
            for (Runnable copy : copies) {
                try {
                    copy.run();
                } catch (RuntimeException e) {
                    thrown.add(e);
                }
            }
        });
        MemorySegment bytes = MemorySegment.ofArray(new byte[] {1, 2});
        dispatch.onMessage(1, bytes, 0, 2, bytes, 0, 2);

        assertThat(thrown).hasSize(4).allSatisfy(e -> assertThat(e)
                .isInstanceOf(NullPointerException.class).hasMessage("destination"));
    }

    /**
     * Message's javadoc: "(A message delivered while a handler of the same thread still runs, by a
     * plugin called from that handler, gets a flyweight of its own.)" The outer handler's message
     * stays valid through the nested delivery and after it, and the nested one is invalid once its
     * handler returned.
     */
    @Test
    void aMessageDeliveredFromInsideAHandlerGetsAFlyweightOfItsOwn() {
        MessageDispatch dispatch = new MessageDispatch(false);
        MemorySegment outerBytes = MemorySegment.ofArray(new byte[] {1, 2, 3});
        MemorySegment innerBytes = MemorySegment.ofArray(new byte[] {9});
        List<Message> seen = new ArrayList<>();
        List<Object> read = new ArrayList<>();
        dispatch.setHandler(2, m -> {
            seen.add(m);
            read.add(m.payloadByte(0));
        });
        dispatch.setHandler(1, m -> {
            seen.add(m);
            dispatch.onMessage(2, MemorySegment.NULL, 0, 0, innerBytes, 0, 1); // a plugin delivering from a call of this handler
            read.add(m.id());
            read.add(m.payloadSize());
            read.add(m.payloadByte(2));
        });
        dispatch.onMessage(1, MemorySegment.NULL, 0, 0, outerBytes, 0, 3);

        assertThat(read).containsExactly((byte) 9, 1, 3L, (byte) 3);
        assertThat(seen).hasSize(2);
        assertThat(seen.get(1)).isNotSameAs(seen.get(0));
        assertThat(seen).allSatisfy(m -> assertThat(m).hasToString("Message[invalid]"));
        dispatch.onMessage(2, MemorySegment.NULL, 0, 0, innerBytes, 0, 1);
        assertThat(seen.get(2)).as("outside a handler, the worker's one flyweight").isSameAs(seen.get(0));
    }

    /**
     * Message's javadoc: one flyweight per worker, "one per progressing thread under PASS_THROUGH"
     * (a MULTI worker whose plugins all take concurrent calls), so that threads delivering at once
     * never share one.
     */
    @Test
    void underPassThroughEachProgressingThreadHasAFlyweightOfItsOwn() throws InterruptedException {
        MessageDispatch dispatch = new MessageDispatch(true);
        Map<Thread, List<Message>> seen = new ConcurrentHashMap<>();
        dispatch.setHandler(1, m -> seen.computeIfAbsent(Thread.currentThread(), t -> new ArrayList<>()).add(m));
        Runnable deliverTwice = () -> {
            for (int i = 0; i < 2; i++) dispatch.onMessage(1, MemorySegment.NULL, 0, 0, MemorySegment.NULL, 0, 0);
        };
        deliverTwice.run();
        Thread other = Thread.ofPlatform().start(deliverTwice);
        other.join();

        List<Message> here = seen.get(Thread.currentThread());
        List<Message> there = seen.get(other);
        assertThat(here.get(1)).as("one per thread, kept").isSameAs(here.get(0));
        assertThat(there.get(1)).isSameAs(there.get(0));
        assertThat(there.get(0)).as("another thread's").isNotSameAs(here.get(0));
    }

    /**
     * Message.payloadToArray of a payload no array can hold throws IllegalStateException naming
     * copyPayload, as its javadoc says; the payload is a 3 GiB sparse file, never touched.
     */
    @Test
    void aPayloadTooLargeForAnArrayIsRefusedByPayloadToArrayAndStillCopiedInParts(@TempDir Path dir) throws IOException {
        long size = 3L << 30;
        Path file = dir.resolve("payload");
        try (Arena arena = Arena.ofConfined();
             FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                     StandardOpenOption.WRITE, StandardOpenOption.SPARSE)) {
            MemorySegment huge = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            huge.set(ValueLayout.JAVA_BYTE, size - 1, (byte) 7);
            MessageDispatch dispatch = new MessageDispatch(false);
            List<Object> outcome = new ArrayList<>();
            dispatch.setHandler(1, m -> {
                outcome.add(m.payloadSize());
                outcome.add(catchThrowable(m::payloadToArray));
                byte[] last = new byte[1];
                m.copyPayload(size - 1, last, 0, 1);
                outcome.add(last[0]);
            });
            dispatch.onMessage(1, MemorySegment.NULL, 0, 0, huge.asReadOnly(), 0, size);

            assertThat(outcome.get(0)).isEqualTo(size);
            assertThat((Throwable) outcome.get(1)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(size + " bytes does not fit in an array; use copyPayload");
            assertThat(outcome.get(2)).isEqualTo((byte) 7);
        }
    }

    private static long retainedHeap() {
        Runtime runtime = Runtime.getRuntime();
        System.gc();
        return runtime.totalMemory() - runtime.freeMemory();
    }
}
