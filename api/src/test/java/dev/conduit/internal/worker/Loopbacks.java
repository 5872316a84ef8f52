package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.Worker;
import dev.conduit.spi.ConduitPlugin;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.BooleanSupplier;

/** Conduits over {@link LoopbackPlugin}s, isolated from this JVM's configuration, closed at the end of a test. */
final class Loopbacks implements AutoCloseable {

    /** Bounds every loop that waits for something, so that a regression fails instead of hanging. */
    static final long MAX_ROUNDS = 50_000_000L;

    private final List<Conduit> open = new ArrayList<>();

    Conduit conduit(ConduitPlugin... plugins) {
        return conduit(b -> { }, plugins);
    }

    Conduit conduit(java.util.function.Consumer<ConduitBuilder> configure, ConduitPlugin... plugins) {
        ConduitBuilder b = Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new Properties());
        for (ConduitPlugin p : plugins) b.addPlugin(p);
        configure.accept(b);
        Conduit c = b.build();
        open.add(c);
        return c;
    }

    /** Leaves {@code conduit} open at the end of the test: a failing test whose threads hold its locks for good, which its close would wait for. */
    void leaveOpen(Conduit conduit) {
        open.remove(conduit);
    }

    /** Progresses {@code workers} until {@code done}, failing after {@link #MAX_ROUNDS} rounds. */
    static void progressUntil(BooleanSupplier done, Worker... workers) {
        for (long round = 0; !done.getAsBoolean(); round++) {
            if (round > MAX_ROUNDS) throw new AssertionError("gave up waiting after " + round + " progress rounds");
            for (Worker w : workers) w.progress();
        }
    }

    static MemorySegment bytes(int... values) {
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) b[i] = (byte) values[i];
        return MemorySegment.ofArray(b);
    }

    /** The values little-endian, as {@link dev.conduit.Message#payloadLong} reads them. */
    static MemorySegment longs(long... values) {
        MemorySegment s = MemorySegment.ofArray(new byte[values.length * 8]);
        for (int i = 0; i < values.length; i++) s.set(LE_LONG, i * 8L, values[i]);
        return s;
    }

    static final java.lang.foreign.ValueLayout.OfLong LE_LONG =
            java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    @Override
    public void close() {
        for (Conduit c : open.reversed()) c.close();
    }
}
