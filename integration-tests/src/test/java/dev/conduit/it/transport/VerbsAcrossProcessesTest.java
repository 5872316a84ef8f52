package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.Patterns;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The verbs transport between two JVMs through a real RDMA device or Soft-RoCE: streaming in order,
 * ping-pong, put, get and atomics on the child's registered memory, and {@code kill -9} of the
 * child reported as {@code PeerFailedException}. Runs only when {@code CONDUIT_TEST_VERBS_DEVICE}
 * names the device (docs/plugins.md, "verbs", has the Soft-RoCE recipe). The machines this project
 * is built on have no RDMA device and no {@code rdma_rxe} module: there it is skipped, and it has
 * never run there.
 */
@EnabledIfEnvironmentVariable(named = "CONDUIT_TEST_VERBS_DEVICE", matches = ".+")
class VerbsAcrossProcessesTest {

    /** The device, and buffers enough for the 1 MiB messages of the MIXED profile (129 records of 8 KiB). */
    private static final String[] KEYS = {"verbs.device=" + System.getenv("CONDUIT_TEST_VERBS_DEVICE"), "verbs.receive.buffers=256",
            "verbs.send.buffers=256"};
    private static final long MESSAGES = 100_000;
    /**
     * How long no message may arrive, or a call's tail or one event (a death report) may take: a
     * hang guard, not a speed check. No {@code @Timeout} bounds a whole test: the waits for the
     * stream and the echoes run from the last message that arrived ({@link
     * Setup#waitWhileProgressing}), and every call to the child or to the worker's thread has its
     * own reply timeout.
     */
    private static final Duration GUARD = Duration.ofSeconds(240);

    @Test
    void mixedMessagesStreamFromAChildInOrderAndPingPongIntact(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        Traffic.Receiver received = new Traffic.Receiver();
        Traffic.Receiver echoes = new Traffic.Receiver();
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             WorkerHost local = WorkerHost.start("local", Setup.conduit(shared, "verbs", KEYS), ThreadMode.SINGLE, true)) {
            local.run(() -> local.worker().onMessage(Traffic.DATA, received));
            local.run(() -> local.worker().onMessage(Traffic.ECHO, echoes));
            WorkerAddress remote = child.worker("w", "verbs", "SINGLE", KEYS);
            child.connect("w", "to-test", local.address());
            child.stream("s", "w", "to-test", 7, Traffic.Profile.MIXED, MESSAGES, 8192);
            Setup.waitWhileProgressing(received::messages, MESSAGES, () -> received.errorCount() > 0, GUARD,
                    () -> received.summary() + "; the child's stream: " + child.status("s"));
            Map<String, String> result = child.join("s", GUARD);
            assertThat(result).containsEntry("sent", Long.toString(MESSAGES)).containsEntry("failed", "false");
            assertThat(received.errors()).isEmpty();
            assertThat(received.received(7)).as("next sequence number of the stream").isEqualTo(MESSAGES);

            child.echo("w", "to-test");
            local.connect("to-child", remote);
            Future<Long> pingPong = local.submit(() -> Traffic.pingPong(local.worker(), local.endpoint("to-child"), 3,
                    Traffic.Profile.MIXED, 10_000, echoes));
            Setup.waitWhileProgressing(() -> echoes.received(3), 10_000, pingPong::isDone, GUARD,
                    () -> "echoes: " + echoes.summary() + "; the child: " + child.stats("w"));
            assertThat(pingPong.get(GUARD.toSeconds(), TimeUnit.SECONDS)).isEqualTo(10_000);
            assertThat(echoes.errors()).isEmpty();
            assertThat(local.failures()).isEmpty();
            child.assertNoFailures("w");
            long nanos = Long.parseLong(result.get("nanos"));
            Setup.report("verbs streaming child -> test: %d messages in %d ms: %s", MESSAGES, nanos / 1_000_000,
                    Setup.perSecond(MESSAGES, nanos));
        }
    }

    @Test
    void putGetAndAtomicsOnTheChildsRegisteredMemory(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, "verbs", KEYS);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE);
             Arena arena = Arena.ofConfined()) {
            WorkerAddress t = child.worker("t", "verbs", "SINGLE", KEYS);
            Endpoint ep = worker.connect(t);
            assertThat(ep.transport()).isEqualTo("verbs");
            for (long size : new long[] {1, 4096, 1 << 20}) {
                String name = "r" + size;
                try (PeerRegion region = ep.peerRegion(child.region("t", name, size))) {
                    assertThat(region.plugin()).isEqualTo("verbs");
                    MemorySegment local = arena.allocate(size, 64);
                    Patterns.fill(local, 11);
                    ep.put(local, region, 0);
                    ep.flush();
                    assertThat(child.crc(name)).isEqualTo(TransportPeer.crc(local));
                    child.fill(name, 21);
                    MemorySegment got = arena.allocate(size, 64);
                    ep.get(region, 0, got);
                    assertThat(Patterns.firstMismatch(got, 21)).isEqualTo(-1);
                }
            }
            try (PeerRegion words = ep.peerRegion(child.region("t", "words", 4096))) {
                long w0 = child.word("words", 0);
                assertThat(ep.compareAndSwap(words, 0, w0, 100)).isEqualTo(w0);
                assertThat(child.word("words", 0)).isEqualTo(100);
                long w8 = child.word("words", 8);
                assertThat(ep.fetchAdd(words, 8, 5)).isEqualTo(w8);
                assertThat(child.word("words", 8)).isEqualTo(w8 + 5);
            }
        }
    }

    @Test
    void killingTheChildFailsTheEndpointWithPeerFailed(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             WorkerHost local = WorkerHost.start("local", Setup.conduit(shared, "verbs", KEYS), ThreadMode.SINGLE, true)) {
            WorkerAddress remote = child.worker("w", "verbs", "SINGLE", KEYS);
            local.connect("to-child", remote);
            child.kill();
            Setup.waitUntil(() -> !local.failures().isEmpty(), GUARD, () -> "the error handler was not called");
            List<WorkerHost.Failure> failures = local.failures();
            assertThat(failures).extracting(WorkerHost.Failure::endpoint).containsExactly("to-child");
            assertThat(failures).extracting(WorkerHost.Failure::type).containsExactly("PeerFailedException");
            assertThat(local.progressErrors()).isEmpty();
        }
    }
}
