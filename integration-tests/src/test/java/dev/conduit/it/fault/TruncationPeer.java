package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

/**
 * A process whose posix files another process truncates while they are mapped: the receive queue
 * of worker A and a region a sender writes by RMA. Run by {@link TruncatedMappingTest} in a JVM
 * of its own (also interpreted only, {@code -Xint}), since a mishandled SIGBUS kills the JVM.
 * Prints one {@code key: value} line per step; exits 0 only if it survived every step.
 *
 * <p>Argument: the shared directory.
 */
public final class TruncationPeer {

    private TruncationPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports("posix").build()) {
            List<Path> before = files(shared);
            Worker a = conduit.newWorker(ThreadMode.SINGLE);
            List<Path> queueOfA = added(before, files(shared));
            Worker c = conduit.newWorker(ThreadMode.SINGLE);
            Worker b = conduit.newWorker(ThreadMode.SINGLE);
            int[] receivedByA = {0};
            int[] receivedByC = {0};
            a.onMessage(1, m -> receivedByA[0]++);
            c.onMessage(1, m -> receivedByC[0]++);
            Endpoint toA = b.connect(a.address());
            Endpoint toC = b.connect(c.address());
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment payload = arena.allocate(64);
                toA.send(1, payload);
                toC.send(1, payload);
                a.progress();
                a.progress();
                c.progress();
                c.progress();
                System.out.println("before: A " + receivedByA[0] + ", C " + receivedByC[0]);

                before = files(shared);
                Region region = conduit.pool("posix").allocate(1 << 20);
                List<Path> regionFiles = added(before, files(shared));
                PeerRegion remote = toA.peerRegion(region.exportHandle());
                toA.put(payload, remote, 0);
                // Compiled code gets a fault later than interpreted code, at its next safepoint check: a warm RMA path too must
                // fail inside the operation (it used to throw the JDK's InternalError out of the caller's code, or in the lock's unlock).
                for (int i = 0; i < RMA_ROUNDS; i++) rma(toA, remote, payload);

                // RMA on a truncated region fails that operation only.
                truncate(regionFiles);
                report("put", () -> toA.put(payload, remote, 0));
                report("get", () -> toA.get(remote, 0, payload));
                report("cas", () -> toA.compareAndSwap(remote, 0, 0, 1));
                report("fetch-add", () -> toA.fetchAdd(remote, 0, 1));
                int conduitExceptions = 0;
                List<String> others = new ArrayList<>();
                for (int i = 0; i < RMA_ROUNDS / 10; i++) {
                    try {
                        rma(toA, remote, payload);
                    } catch (ConduitException e) {
                        conduitExceptions++;
                    } catch (Throwable t) {
                        if (others.size() < 3) others.add(t.toString());
                    }
                }
                System.out.println("rma-after-truncation: " + conduitExceptions + " ConduitException, others " + others);
                System.out.println("endpoint-to-A-failed-after-rma: " + toA.isFailed());

                truncate(queueOfA);
                // A sender to the truncated queue: its endpoint fails, the JVM lives.
                for (int i = 0; i < 3; i++) {
                    report("send-to-A", () -> toA.send(1, payload));
                }
                System.out.println("endpoint-to-A-failed: " + toA.isFailed());
                // The receiver of the truncated queue: progress fails with a Conduit exception, and so does a signal to it from
                // another thread (it threw the JDK's bare InternalError).
                report("progress-A", a::progress);
                Thread signalling = Thread.ofPlatform().start(() -> report("signal-A", a::signal));
                signalling.join();
                // A survivor: the same sender to an untouched worker.
                toC.send(1, payload);
                for (int i = 0; i < 100 && receivedByC[0] < 2; i++) c.progress();
                System.out.println("survivor-C-received: " + receivedByC[0]);
                remote.close();
                region.close();
            }
            for (AutoCloseable closeable : new AutoCloseable[] {toC, toA, b, c, a}) {
                report("close", closeable::close);
            }
        }
        System.out.println("files-left: " + files(shared).size());
        System.out.println("alive: yes");
    }

    /** RMA operations of the warm-up; a tenth of them again after the truncation. */
    private static final int RMA_ROUNDS = 100_000;

    private static void rma(Endpoint endpoint, PeerRegion remote, MemorySegment payload) {
        switch (ThreadLocalRandom.current().nextInt(4)) {
            case 0 -> endpoint.put(payload, remote, 0);
            case 1 -> endpoint.get(remote, 0, payload);
            case 2 -> endpoint.compareAndSwap(remote, 8, 0, 0);
            default -> endpoint.fetchAdd(remote, 16, 1);
        }
    }

    private interface Step {
        void run() throws Exception;
    }

    private static void report(String step, Step action) {
        try {
            action.run();
            System.out.println(step + ": ok");
        } catch (ConduitException e) {
            System.out.println(step + ": " + e.getClass().getSimpleName() + ": " + e.getMessage().replace('\n', ' '));
        } catch (Exception | InternalError e) {
            System.out.println(step + ": UNEXPECTED " + e);
        }
    }

    private static void truncate(List<Path> files) throws IOException, InterruptedException {
        for (Path file : files) {
            if (file.getFileName().toString().endsWith(".lease")) continue;
            // Another process, as a hostile peer would be.
            Process p = new ProcessBuilder("truncate", "-s", "0", file.toString()).inheritIO().start();
            if (p.waitFor() != 0) throw new IllegalStateException("truncate " + file + " failed");
            System.out.println("truncated: " + file.getFileName());
        }
    }

    static List<Path> files(Path directory) throws IOException {
        try (Stream<Path> s = Files.list(directory)) {
            return s.sorted().toList();
        }
    }

    static List<Path> added(List<Path> before, List<Path> after) {
        List<Path> added = new ArrayList<>(after);
        added.removeAll(before);
        return added;
    }
}
