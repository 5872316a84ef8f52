package dev.conduit.benchmarks;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

/**
 * This JVM's side of a two-process messaging benchmark: a fresh shared directory under
 * {@code shared.dir} ({@link BenchmarkDirectory}), a {@code Conduit} with one transport, a {@code SINGLE} worker owned by the
 * calling thread (the JMH benchmark thread), a {@link MessagingPeer} JVM and the endpoint to it.
 * {@link #close()} drains what waits locally, closes all of it, stops the peer and removes the
 * directory; a failed {@link #open} leaves nothing behind either.
 */
final class MessagingSession implements AutoCloseable {

    private Path dir;
    private Process peer;
    private Conduit conduit;
    private Worker worker;
    private Endpoint endpoint;
    private Arena arena;

    private MessagingSession() {
    }

    /**
     * Opens a session over {@code plugin} whose peer echoes up to {@code echoSize} bytes and
     * acknowledges every {@code ackEvery}-th stream message; {@code handlers} registers this side's
     * message handlers before the peer starts.
     */
    static MessagingSession open(String plugin, int echoSize, long ackEvery, Consumer<Worker> handlers)
            throws IOException, InterruptedException {
        // Checked here: the peer JVM would otherwise fail on it with an index error of its own, and this side say only
        // that the peer ended before it published its address.
        if (echoSize < 0) throw new IllegalArgumentException("-p size must be 0 or more bytes: " + echoSize);
        MessagingSession s = new MessagingSession();
        try {
            s.dir = BenchmarkDirectory.create();
            s.conduit = conduitOver(plugin, s.dir);
            s.worker = s.conduit.newWorker(ThreadMode.SINGLE);
            handlers.accept(s.worker);
            s.peer = MessagingPeer.start(s.dir, plugin, echoSize, ackEvery, s.worker);
            s.endpoint = MessagingPeer.connect(s.dir, s.peer, s.worker);
            s.arena = Arena.ofShared();
            return s;
        } catch (RuntimeException | IOException | InterruptedException | Error e) {
            Trials.tearDownAfter(e, s::close);
            throw e;
        }
    }

    /** A {@code Conduit} whose only transport is {@code plugin}, sharing {@code dir}; fails, naming why, when the plugin cannot be selected. */
    static Conduit conduitOver(String plugin, Path dir) {
        Conduit conduit = Conduit.builder().transports(plugin).sharedDirectory(dir).build();
        if (!conduit.selectedPlugins().equals(List.of(plugin))) {
            String plugins = conduit.plugins().stream().map(i -> i.name() + " " + i.status() + " " + i.reason()).toList().toString();
            conduit.close();
            throw new IllegalStateException("plugin " + plugin + " not selected: " + plugins);
        }
        return conduit;
    }

    Worker worker() {
        return worker;
    }

    Endpoint endpoint() {
        return endpoint;
    }

    /** Memory of this JVM for payloads, freed by {@link #close()}. */
    Arena arena() {
        return arena;
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            if (endpoint != null) {
                for (int i = 0; i < 100_000 && endpoint.pending() > 0; i++) worker.progress();
                endpoint.close();
            }
            if (worker != null) worker.close();
            if (conduit != null) conduit.close();
            if (arena != null) arena.close();
        } finally {
            endpoint = null;
            worker = null;
            conduit = null;
            arena = null;
            MessagingPeer.stop(dir, peer);
            peer = null;
            dir = null;
        }
    }
}
