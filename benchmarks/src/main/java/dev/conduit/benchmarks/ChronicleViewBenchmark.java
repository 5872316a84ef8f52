package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.Region;
import dev.conduit.chronicle.ChronicleViews;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The same record encoded and decoded in a shared region, three ways: through a Conduit Chronicle
 * view ({@link ChronicleViews#bytes(Region)}: bounds- and close-checked, every access through the
 * region's {@code MemorySegment}), through plain {@code MemorySegment} accesses, and — the
 * unchecked baseline the view replaces — through Chronicle's own {@code BytesStore.wrap(address,
 * size)} over the same memory, which checks neither bounds nor close and which Conduit never hands
 * out. The gap between {@code view*} and {@code raw*} is what the safety costs;
 * {@code heapEncodeDecode}, Chronicle's own store over a {@code byte[]}, shows how much of it is
 * Chronicle's path for stores that are not native memory.
 *
 * <p>The record: sequence (long), price (double), quantity (int), a 4-byte symbol, flags (short):
 * 26 bytes, read with a cursor (Chronicle) or at fixed offsets ({@code MemorySegment}), then the
 * next one written in its place the same way. Each operation decodes the record the one before it
 * wrote, as a reader of shared memory decodes what someone else wrote: reading back the record just
 * written would let C2 take the values straight from the stores and measure encoding alone (it did,
 * for {@code segmentEncodeDecode} and {@code rawEncodeDecode}: the symbol and flags folded into one
 * constant, the double converted from its register). Between two operations JMH's loop reads its
 * volatile stop flag, which no load is moved above. Plus one CAS increment ({@code *Cas}). One
 * thread, in-process; the region comes from a posix pool in a fresh directory under the configured {@code shared.dir}
 * ({@code /dev/shm} by default), {@link BenchmarkDirectory}: removed at the trial's end, and by a shutdown hook when the
 * run is stopped or a measured call fails, so that no posix chunk or plugin lease stays behind.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED",
        // Chronicle's flags on the class path (README, "Chronicle"); only this benchmark's forks get them.
        "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-Dchronicle.analytics.disable=true"})
@Threads(1)
@State(Scope.Thread)
public class ChronicleViewBenchmark {

    static {
        ChronicleAccess.require(ChronicleViewBenchmark.class); // before any Chronicle class loads, which fails without them naming no flag
    }

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final java.lang.invoke.VarHandle LONG_ATOMIC = ValueLayout.JAVA_LONG.varHandle();
    private static final int SYMBOL = 0x454D4341; // "ACME"

    private Path dir;
    private Conduit conduit;
    private Region region;
    private MemorySegment segment;
    private Bytes<Void> view;
    private BytesStore<?, Void> viewStore;
    private Bytes<Void> raw;
    private final Bytes<byte[]> heap = Bytes.wrapForWrite(new byte[4096]);
    private BytesStore<?, Void> rawStore;
    private long sequence;

    @Setup(Level.Trial)
    public void open() throws IOException {
        dir = BenchmarkDirectory.create();
        try {
            conduit = Conduit.builder().transports("posix").sharedDirectory(dir).build();
            region = conduit.pool("posix").allocate(4096);
            segment = region.segment();
            view = ChronicleViews.bytes(region);
            viewStore = ChronicleViews.store(region);
            rawStore = BytesStore.wrap(segment.address(), segment.byteSize());
            raw = rawStore.bytesForWrite();
            // The record the first operation of each case decodes (view, raw and segment write the same bytes of the region).
            for (Bytes<?> bytes : List.of(view, raw, heap)) encode(bytes, sequence);
            encode(segment, sequence);
        } catch (RuntimeException | Error e) {
            Trials.tearDownAfter(e, this::close);
            throw e;
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        try {
            if (raw != null) raw.releaseLast();
            if (rawStore != null && rawStore.refCount() > 0) rawStore.releaseLast();
            if (region != null) region.close();
        } finally {
            try {
                if (conduit != null) conduit.close(); // its pool too, which frees the chunks of a region left open
            } finally {
                BenchmarkDirectory.delete(dir);
            }
        }
    }

    /** Writes the record from the start of {@code bytes}, where {@link #decode} reads it (its read position stays at 0). */
    private static void encode(Bytes<?> bytes, long sequence) {
        bytes.clear();
        bytes.writeLong(sequence).writeDouble(sequence * 0.5).writeInt((int) sequence).writeInt(SYMBOL).writeShort((short) 3);
    }

    private static long decode(Bytes<?> bytes) {
        return bytes.readLong() + (long) bytes.readDouble() + bytes.readInt() + bytes.readInt() + bytes.readShort();
    }

    private static void encode(MemorySegment m, long sequence) {
        m.set(LONG, 0, sequence);
        m.set(DOUBLE, 8, sequence * 0.5);
        m.set(INT, 16, (int) sequence);
        m.set(INT, 20, SYMBOL);
        m.set(SHORT, 24, (short) 3);
    }

    private static long decode(MemorySegment m) {
        return m.get(LONG, 0) + (long) m.get(DOUBLE, 8) + m.get(INT, 16) + m.get(INT, 20) + m.get(SHORT, 24);
    }

    /** The record the previous operation wrote, read; then the next one written. */
    private static long decodeEncode(Bytes<?> bytes, long sequence) {
        long decoded = decode(bytes);
        encode(bytes, sequence);
        return decoded;
    }

    @Benchmark
    public long viewEncodeDecode() {
        return decodeEncode(view, ++sequence);
    }

    /** Chronicle's own on-heap store: its path for memory that is not native, without Conduit's checks. */
    @Benchmark
    public long heapEncodeDecode() {
        return decodeEncode(heap, ++sequence);
    }

    @Benchmark
    public long rawEncodeDecode() {
        return decodeEncode(raw, ++sequence);
    }

    @Benchmark
    public long segmentEncodeDecode() {
        long decoded = decode(segment);
        encode(segment, ++sequence);
        return decoded;
    }

    @Benchmark
    public boolean viewCas() {
        long v = viewStore.readVolatileLong(64);
        return viewStore.compareAndSwapLong(64, v, v + 1);
    }

    @Benchmark
    public boolean rawCas() {
        long v = rawStore.readVolatileLong(64);
        return rawStore.compareAndSwapLong(64, v, v + 1);
    }

    @Benchmark
    public boolean segmentCas() {
        long v = (long) LONG_ATOMIC.getVolatile(segment, 64L);
        return LONG_ATOMIC.compareAndSet(segment, 64L, v, v + 1);
    }
}
