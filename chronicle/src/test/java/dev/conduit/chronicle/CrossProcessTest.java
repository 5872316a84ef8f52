package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two JVMs: one writes with Chronicle into a region or a message, the other reads it with
 * Chronicle and with plain {@code MemorySegment} access, and both agree; misuse throws in the
 * child; CAS through Chronicle views from both processes keeps a counter exact.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class CrossProcessTest {

    static final int QUOTE = 4;

    @TempDir
    Path shared;

    /** A {@link Quote}'s fields read with plain segment accesses (native order, as Chronicle writes). */
    static String plainQuote(MemorySegment s) {
        long sequence = s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        double price = s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8);
        int quantity = s.get(ValueLayout.JAVA_INT_UNALIGNED, 16);
        int symbolLength = s.get(ValueLayout.JAVA_BYTE, 20); // a stop-bit length under 128 is one byte
        String symbol = new String(s.asSlice(21, symbolLength).toArray(ValueLayout.JAVA_BYTE), java.nio.charset.StandardCharsets.ISO_8859_1);
        return sequence + "/" + price + "/" + quantity + "/" + symbol;
    }

    /**
     * Increments each process makes on a word of its own before the race, so that both race with
     * compiled code: a process still interpreting would be overtaken and the two would barely meet.
     */
    static final long WARM_UP = 200_000;

    /**
     * {@code n} increments by CAS of the long at {@code offset}; returns how often the other process
     * got in between: a CAS that failed, or a value that moved since this one's last increment.
     */
    static long increment(BytesStore<?, Void> store, long offset, long n) {
        long interleaved = 0;
        long last = -1;
        for (long i = 0; i < n; i++) {
            long v = store.readVolatileLong(offset);
            while (!store.compareAndSwapLong(offset, v, v + 1)) {
                interleaved++;
                v = store.readVolatileLong(offset);
            }
            if (last >= 0 && v != last + 1) interleaved++;
            last = v;
        }
        return interleaved;
    }

    private static String withoutPadding(String described) {
        return described.substring(0, described.lastIndexOf('/'));
    }

    @Test
    void whatOneJvmWritesWithChronicleTheOtherReadsWithChronicleAndWithSegments() throws Exception {
        try (Conduit conduit = Conduits.posix(shared); ChildPeer child = new ChildPeer(shared)) {
            Region region = conduit.pool("posix").allocate(4096);
            child.call("import", HexFormat.of().formatHex(region.exportHandle()));

            // child writes, this JVM reads
            child.call("write", "77");
            Quote q = new Quote();
            q.readMarshallable(ChronicleViews.bytes(region));
            assertThat(q.describe()).isEqualTo("77/115.5/11/CHILD/16");
            assertThat(plainQuote(region.segment())).isEqualTo(withoutPadding(q.describe()));

            // this JVM writes, the child reads both ways
            Bytes<Void> bytes = ChronicleViews.bytes(region);
            bytes.clear();
            new Quote(5, 2.75, 9, "PARENT", 3).writeMarshallable(bytes);
            String read = child.call("read");
            assertThat(read).isEqualTo("chronicle=5/2.75/9/PARENT/3 segment=5/2.75/9/PARENT");
        }
    }

    @Test
    void outOfBoundsAndUseAfterCloseThrowInTheOtherJvm() throws Exception {
        try (Conduit conduit = Conduits.posix(shared); ChildPeer child = new ChildPeer(shared)) {
            Region region = conduit.pool("posix").allocate(256);
            child.call("import", HexFormat.of().formatHex(region.exportHandle()));
            assertThat(child.call("misuse")).isEqualTo("oob=DecoratedBufferUnderflowException oobStore=IndexOutOfBoundsException closed=IllegalStateException");
        }
    }

    @Test
    void casFromTwoProcessesKeepsACounterExactOverAMillionIncrements() throws Exception {
        long each = 500_000;
        try (Conduit conduit = Conduits.posix(shared); ChildPeer child = new ChildPeer(shared)) {
            Region region = conduit.pool("posix").allocate(4096);
            child.call("import", HexFormat.of().formatHex(region.exportHandle()));
            BytesStore<?, Void> store = ChronicleViews.store(region);
            increment(store, 96, WARM_UP);
            child.start("cas", "64", Long.toString(each));
            while (store.readVolatileLong(72) == 0) Thread.onSpinWait(); // the child is ready: both start together
            store.writeOrderedLong(80, 1);
            long interleaved = increment(store, 64, each);
            String reply = child.reply();
            assertThat(reply).startsWith(each + " interleaved=");
            assertThat(store.readVolatileLong(64)).isEqualTo(2 * each);
            // Informational: how often each process found the other's increments between its own.
            System.out.println("CAS contention: interleaved " + interleaved + " times here, child: " + reply);
            assertThat(region.segment().get(ValueLayout.JAVA_LONG, 64)).isEqualTo(2 * each);
        }
    }

    @Test
    void marshallablesSentByTheOtherJvmAreReadWithChronicleAndPlainAccessorsAlike() throws Exception {
        int messages = 2000;
        try (Conduit conduit = Conduits.posix(shared); ChildPeer child = new ChildPeer(shared)) {
            Worker worker = conduit.newWorker(ThreadMode.SINGLE);
            ChronicleMessages in = new ChronicleMessages();
            List<String> chronicle = new ArrayList<>();
            List<String> plain = new ArrayList<>();
            worker.onMessage(QUOTE, in.handler((message, payload) -> {
                Quote q = new Quote();
                q.readMarshallable(payload);
                chronicle.add(withoutPadding(q.describe()));
                plain.add(plainQuote(message.payload()));
            }));
            String address = HexFormat.of().formatHex(worker.address().toBytes());
            // small (in the receive queue) and large (in the child's bounce ring)
            for (String padding : new String[] {"0", "20000"}) {
                chronicle.clear();
                plain.clear();
                child.start("send", address, Integer.toString(messages), padding);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (chronicle.size() < messages && System.nanoTime() < deadline) worker.progress();
                assertThat(child.reply()).isEqualTo(Integer.toString(messages));
                assertThat(chronicle).hasSize(messages);
                assertThat(plain).isEqualTo(chronicle);
                assertThat(chronicle.get(messages - 1)).isEqualTo((messages - 1) + "/" + (messages - 1) * 0.25 + "/" + (messages - 1) + "/Q" + (messages - 1));
            }
        }
    }
}
