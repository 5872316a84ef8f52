package dev.conduit.plugin.verbs;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.TestContext;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * A worker's side of a transport test: the real {@link VerbsPlugin}, {@link VerbsTransport} and
 * TCP wire-up over a given {@link Verbs} ({@link LoopbackVerbs}, a simulation, or
 * {@link FfmVerbs} on a real device), with a sink that records what it receives, called as the
 * runtime would call them.
 */
final class TestWorker implements AutoCloseable {

    /** A message as the sink got it, with the key of the connection it came by (0: delivered without one). */
    record Received(int id, byte[] header, byte[] payload, long sender) {
    }

    final VerbsPlugin plugin;
    final VerbsTransport transport;
    final List<Received> received = new ArrayList<>();
    final List<PeerFailedException> failures = new ArrayList<>();
    /** The keys the sink was told deliver no more ({@link MessageSink#onSenderClosed}), in order. */
    final List<Long> sendersClosed = new ArrayList<>();
    final TestContext config;
    /** Messages of this id make the sink throw {@link SinkError}, as if handling it ran out of memory (the runtime's sink catches the rest). */
    int failingId = -1;

    static final class SinkError extends Error {
        @java.io.Serial private static final long serialVersionUID = 1L;

        SinkError(int id) {
            super("the sink failed on message " + id, null, false, false);
        }
    }

    TestWorker(Verbs verbs, String... keyValues) {
        this(verbs, null, keyValues);
    }

    /** A worker whose transport logs to {@code logger} (the test context's own when {@code null}). */
    TestWorker(Verbs verbs, System.Logger logger, String... keyValues) {
        this(new VerbsPlugin(library -> verbs), logger == null ? TestContext.of(withDefaults(keyValues))
                : TestContext.of(withDefaults(keyValues)).withLogger(logger));
    }

    /** Another worker of {@code other}'s plugin instance, so of its device context, with its configuration. */
    TestWorker(TestWorker other) {
        this(other.plugin, other.config);
    }

    private TestWorker(VerbsPlugin plugin, TestContext config) {
        this.plugin = plugin;
        this.config = config;
        MessageSink sink = new MessageSink() {
            @Override
            public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl) {
                onMessage(id, hb, ho, hl, pb, po, pl, 0);
            }

            @Override
            public void onMessage(int id, MemorySegment hb, long ho, int hl, MemorySegment pb, long po, long pl, long sender) {
                if (id == failingId) {
                    throw new SinkError(id);
                }
                received.add(new Received(id, hb.asSlice(ho, hl).toArray(ValueLayout.JAVA_BYTE), pb.asSlice(po, pl).toArray(ValueLayout.JAVA_BYTE),
                        sender));
            }

            @Override
            public void onSenderClosed(long sender) {
                sendersClosed.add(sender);
            }
        };
        this.transport = (VerbsTransport) plugin.openTransport(config.forTransport(ThreadMode.SINGLE, sink));
    }

    private static String[] withDefaults(String... keyValues) {
        List<String> all = new ArrayList<>(List.of(keyValues));
        if (!all.contains("verbs.wireup.address")) {
            all.addAll(List.of("verbs.wireup.address", "127.0.0.1"));
        }
        return all.toArray(String[]::new);
    }

    TransportEndpoint connect(TestWorker peer) {
        byte[] address = peer.transport.address();
        EndpointEvents events = failures::add;
        return transport.connect(new PayloadReader(address, 0, address.length, "address.verbs."), events);
    }

    MemoryProvider memory() {
        return plugin.openMemoryProvider(config);
    }

    /** A region of a chunk of {@code provider}, as the runtime's IPC imports give it to a transport on another host. */
    static RemoteRegion region(MemoryProvider provider, Chunk chunk, long chunkOffset, long length) {
        byte[] payload = provider.export(chunk);
        return new TestRegion(VerbsPlugin.NAME, chunkOffset, length, payload);
    }

    record TestRegion(String pluginName, long chunkOffset, long length, byte[] bytes) implements RemoteRegion {
        @Override
        public PayloadReader payload() {
            return new PayloadReader(bytes, 0, bytes.length, "payload.");
        }

        @Override
        public MemorySegment localSegment() {
            return null;
        }

        @Override
        public void close() {
        }
    }

    /** Progresses the workers until the endpoint's wire-up is done (the peer's wire-up thread answers it). */
    static TransportEndpoint connected(TransportEndpoint e, TestWorker... progress) {
        progressUntil(() -> !((VerbsEndpoint) e).isConnecting(), progress);
        return e;
    }

    /** {@code s}'s UTF-8 bytes, as a payload. */
    static MemorySegment bytes(String s) {
        return MemorySegment.ofArray(s.getBytes(StandardCharsets.UTF_8));
    }

    /** Progresses every peer until {@code done}, failing after a bound on rounds (no timing assertion: a hang guard). */
    static void progressUntil(BooleanSupplier done, TestWorker... peers) {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!done.getAsBoolean()) {
            for (TestWorker p : peers) {
                p.transport.progress();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not reached while progressing");
            }
        }
    }

    @Override
    public void close() {
        transport.close();
    }
}
