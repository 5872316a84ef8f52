package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A sender whose peer's posix receive queue is full, so that its liveness check reads the peer's
 * heartbeat: {@link HeartbeatTruncationTest} stops it, through the JVM's debugger interface, just
 * before that read, and truncates the queue's file there. Prints one {@code key: value} line per
 * step; exits 0 when it lived through them.
 *
 * <p>Argument: the shared directory.
 */
public final class HeartbeatTruncationPeer {

    private HeartbeatTruncationPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports("posix").build()) {
            List<Path> before = TruncationPeer.files(shared);
            Worker a = conduit.newWorker(ThreadMode.SINGLE);
            for (Path file : TruncationPeer.added(before, TruncationPeer.files(shared))) {
                if (!file.getFileName().toString().endsWith(".lease")) System.out.println("queue-of-A: " + file);
            }
            Worker b = conduit.newWorker(ThreadMode.SINGLE);
            a.onMessage(1, m -> { });
            Endpoint toA = b.connect(a.address());
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment payload = arena.allocate(1024);
                // A never reads: once its queue is full, sends wait in B, and B's liveness checks read A's heartbeat.
                while (toA.pending() == 0) toA.send(1, payload);
                System.out.println("queue-full: " + toA.pending() + " waiting");
                Throwable thrown = null;
                long guard = System.nanoTime() + 60_000_000_000L; // a hang guard only
                while (!toA.isFailed() && System.nanoTime() < guard) {
                    try {
                        b.progress();
                    } catch (Throwable t) {
                        thrown = t;
                        break;
                    }
                }
                System.out.println("progress-B: " + (thrown == null ? "ok" : "UNEXPECTED " + thrown));
                System.out.println("endpoint-to-A-failed: " + toA.isFailed() + (toA.isFailed() ? ": " + toA.failure().getMessage() : ""));
            }
            for (AutoCloseable closeable : new AutoCloseable[] {b, a}) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    System.out.println("close: " + e.getClass().getSimpleName());
                }
            }
        }
        System.out.println("alive: yes");
    }
}
