package dev.conduit.benchmarks;

import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.Worker;
import dev.conduit.chronicle.ChronicleMessages;
import dev.conduit.spi.PayloadEncoder;
import net.openhft.chronicle.bytes.BytesIn;
import net.openhft.chronicle.bytes.BytesMarshallable;
import net.openhft.chronicle.bytes.BytesOut;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

/**
 * A round trip between two processes ({@link MessagingPeer} echoes each ping) whose payload is a
 * 26-byte record, encoded and decoded three ways ({@code AverageTime}, ns per round trip):
 *
 * <ul>
 *   <li>{@code chronicle}: a {@code BytesMarshallable} marshalled by Chronicle through the
 *       zero-copy send ({@link ChronicleMessages#send}), the echo read back into the object with
 *       Chronicle where it arrived ({@link ChronicleMessages#read});</li>
 *   <li>{@code segment}: the same fields written with {@code MemorySegment} accesses through the
 *       same zero-copy send ({@code Endpoint.send(id, header, maxLength, encoder)}), read back with
 *       the message's accessors;</li>
 *   <li>{@code copied}: the fields written into a segment of this JVM, then sent with the copying
 *       {@code Endpoint.send(id, payload)}, read back with the accessors: the path without
 *       zero-copy send.</li>
 * </ul>
 * The peer copies the ping's payload into a 64-byte buffer and sends that back, so the echo is 64
 * bytes in every case. With a {@code maxLength} of 64, the zero-copy sends write into the
 * endpoint's buffer and are copied from there (at most 1 KiB is), so {@code segment} differs from
 * {@code copied} only by the encoder call. The echo is waited for as {@link MessagingBenchmark}'s
 * is, with a spin-wait hint after each progress that found nothing (until 2026-12-07 without the
 * hint, the one spin of the benchmarks that had none). Transport {@code posix}; see
 * {@link MessagingBenchmark} for the setup and the noise of a 2-core machine.
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
public class ChronicleMessagingBenchmark {

    static {
        ChronicleAccess.require(ChronicleMessagingBenchmark.class); // before any Chronicle class loads, which fails without them naming no flag
    }

    private static final int ECHO = 64;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final int SYMBOL = 0x454D4341; // "ACME"

    @Param({"posix"})
    public String plugin;

    private MessagingSession session;
    private Worker worker;
    private Endpoint endpoint;
    private MemorySegment copy;
    private final ChronicleMessages chronicle = new ChronicleMessages();
    private final Quote out = new Quote();
    private final Quote in = new Quote();
    private final PayloadEncoder segmentEncoder = this::encodeWithSegment;
    private boolean decodeWithChronicle;
    private long pongs;
    private long checksum;

    /** The record, marshalled field by field (no reflection): 26 bytes. */
    static final class Quote implements BytesMarshallable {
        long sequence;
        double price;
        int quantity;
        int symbol;
        short flags;

        @Override
        public void writeMarshallable(BytesOut<?> bytes) {
            bytes.writeLong(sequence).writeDouble(price).writeInt(quantity).writeInt(symbol).writeShort(flags);
        }

        @Override
        public void readMarshallable(BytesIn<?> bytes) {
            sequence = bytes.readLong();
            price = bytes.readDouble();
            quantity = bytes.readInt();
            symbol = bytes.readInt();
            flags = bytes.readShort();
        }
    }

    @Setup(Level.Trial)
    public void open() throws IOException, InterruptedException {
        session = MessagingSession.open(plugin, ECHO, MessagingBenchmark.ACK_EVERY, w -> w.onMessage(MessagingPeer.PONG, this::onPong));
        worker = session.worker();
        endpoint = session.endpoint();
        try {
            copy = session.arena().allocate(26);
            chronicle(); // fails here, not in the measurement, if nothing comes back
            segment();
            copied();
        } catch (RuntimeException | Error e) {
            Trials.tearDownAfter(e, session::close);
            throw e;
        }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException, InterruptedException {
        session.close();
    }

    private void onPong(Message m) {
        if (decodeWithChronicle) {
            chronicle.read(m, in);
            checksum += in.sequence + in.quantity + in.flags;
        } else {
            checksum += m.payloadLong(0) + m.payloadInt(16) + m.payloadShort(24);
        }
        pongs++;
    }

    private long awaitPong(long target) {
        while (pongs < target) {
            if (worker.progress() == 0) Thread.onSpinWait();
        }
        return checksum;
    }

    @Benchmark
    public long chronicle() {
        long target = pongs + 1;
        decodeWithChronicle = true;
        Quote q = out;
        q.sequence = target;
        q.price = target * 0.5;
        q.quantity = (int) target;
        q.symbol = SYMBOL;
        q.flags = 3;
        chronicle.send(endpoint, MessagingPeer.PING, q, ECHO);
        return awaitPong(target);
    }

    private long encodeWithSegment(MemorySegment target) {
        long s = pongs + 1;
        target.set(LONG, 0, s);
        target.set(DOUBLE, 8, s * 0.5);
        target.set(INT, 16, (int) s);
        target.set(INT, 20, SYMBOL);
        target.set(SHORT, 24, (short) 3);
        return 26;
    }

    @Benchmark
    public long segment() {
        long target = pongs + 1;
        decodeWithChronicle = false;
        endpoint.send(MessagingPeer.PING, MemorySegment.NULL, ECHO, segmentEncoder);
        return awaitPong(target);
    }

    @Benchmark
    public long copied() {
        long target = pongs + 1;
        decodeWithChronicle = false;
        encodeWithSegment(copy);
        endpoint.send(MessagingPeer.PING, copy);
        return awaitPong(target);
    }
}
