package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A long-lived process A keeps an endpoint to a peer process B; B is killed, and its successor B'
 * starts on the same shared directory, with the same settings, before A noticed. What a failover
 * of a long-running service goes through, once per restart.
 */
class PeerRestartTest {

    private static final int MESSAGES = 1000;
    /**
     * How long no message may arrive, or one event (the failure of the endpoint to the killed
     * peer) may take: a hang guard, not a speed check. No {@code @Timeout} bounds a whole test:
     * the waits for the streams run from the last message the receiver took ({@link
     * Setup#waitWhileProgressing}), and every call to a child has its own reply timeout.
     */
    private static final Duration GUARD = Duration.ofSeconds(60);
    /** How often a wait asks a child how far its receiver got. */
    private static final Duration CHILD_POLL = Duration.ofMillis(20);

    /**
     * A's endpoint to B fails saying B died and that the message A sent after the death was never
     * read (it used to be taken and lost unsaid: "no message was waiting in the local queue"); the
     * failed endpoint, which A drops without closing as a failover may, leaves nothing of B mapped
     * and no file of its own behind (its bounce ring and its mapping of B's queue used to stay until
     * it was closed); A reaches B' at its new address, and B's files are gone. The failed endpoint
     * lets go of B's share at the liveness check after the one that failed it (that check returns
     * at once, so that the error handler does not wait for the release), so A progresses on until
     * its mappings are back to its own before what it holds is counted.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aKilledPeersSuccessorIsReachedAndNothingOfThePeerStaysWithTheEndpointThatFailed(
            String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin);
             Worker a = conduit.newWorker(ThreadMode.SINGLE)) {
            OpenResources alone = OpenResources.ofThisProcess();
            try (RemoteTransportPeer b = RemoteTransportPeer.start(shared, Launcher.direct())) {
                Set<String> withoutB = new HashSet<>(Setup.files(shared));
                WorkerAddress first = b.worker("w", plugin, "SINGLE");
                b.receive("w");
                Set<String> bs = new HashSet<>(Setup.files(shared));
                bs.removeAll(withoutB);
                Endpoint toFirst = a.connect(first);
                stream(a, toFirst, 0, MESSAGES);
                Set<String> ring = new HashSet<>(Setup.files(shared));
                ring.removeAll(withoutB);
                ring.removeAll(bs); // what A made for the endpoint
                Setup.waitWhileProgressing(() -> b.messages("w"), MESSAGES, () -> false, GUARD, () -> "B's receiver: " + b.stats("w"),
                        Setup.pause(CHILD_POLL));
                b.kill();

                try (RemoteTransportPeer successor = RemoteTransportPeer.start(shared, Launcher.direct())) {
                    WorkerAddress second = successor.worker("w", plugin, "SINGLE");
                    successor.receive("w");

                    stream(a, toFirst, MESSAGES, 1); // taken: A has not noticed yet
                    PeerFailedException failure = awaitFailure(a, toFirst);
                    assertThat(failure).hasMessageContaining(plugin + ": peer worker died")
                            .hasMessageContaining("the last message sent on this endpoint was never read by it");
                    // The check after the one that failed it releases what it kept, and hands the reclaim of B's files to the
                    // mapping thread behind that unmap: the reclaim opens each lease of the directory for a moment to test its
                    // lock, a descriptor of a Conduit file while it looks. A descriptor kept for good still fails the wait.
                    Setup.waitUntil(() -> {
                        a.progress();
                        OpenResources now = OpenResources.ofThisProcess();
                        return now.conduitMappings() == alone.conduitMappings() && now.conduitFds() == alone.conduitFds();
                    }, GUARD, () -> "A's mappings and descriptors, the failed endpoint not closed, back to those of A alone: "
                            + OpenResources.ofThisProcess().format() + ", alone: " + alone.format());
                    OpenResources failed = OpenResources.ofThisProcess();
                    assertThat(failed.conduitMappings()).as("A's mappings, the failed endpoint not closed: %s, alone: %s",
                            failed.format(), alone.format()).isEqualTo(alone.conduitMappings());
                    assertThat(failed.conduitFds()).as("A's descriptors: %s, alone: %s", failed.format(), alone.format())
                            .isEqualTo(alone.conduitFds());
                    // For posix a file, for memfd a descriptor (counted above).
                    assertThat(ring).as("the failed endpoint's bounce ring").noneMatch(Setup.files(shared)::contains);

                    Endpoint toSecond = a.connect(second);
                    stream(a, toSecond, 0, MESSAGES);
                    Setup.waitWhileProgressing(() -> successor.messages("w"), MESSAGES, () -> false, GUARD,
                            () -> "B''s receiver: " + successor.stats("w"), Setup.pause(CHILD_POLL));
                    assertThat(successor.stats("w")).containsEntry("errors", "0");
                    assertThat(Setup.files(shared)).as("B's files").doesNotContainAnyElementsOf(bs);
                    toSecond.close();
                }
            }
        }
    }

    private static void stream(Worker w, Endpoint ep, long from, long count) {
        MemorySegment header = Traffic.newHeader();
        for (long n = from; n < from + count; n++) {
            ep.send(Traffic.DATA, Traffic.header(header, 0, Traffic.Profile.MIXED, n), Traffic.payload(0, Traffic.Profile.MIXED, n));
        }
        for (int i = 0; i < 10_000_000 && ep.pending() > 0 && !ep.isFailed(); i++) w.progress();
    }

    private static PeerFailedException awaitFailure(Worker w, Endpoint ep) {
        Setup.waitUntil(() -> {
            w.progress();
            return ep.isFailed();
        }, GUARD, () -> "the endpoint to the killed peer has not failed");
        return ep.failure();
    }
}
