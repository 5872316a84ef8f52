package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code worker.await} across processes: it sleeps on the futex word in this worker's receive
 * queue, and a sender in another process that commits a message while it sleeps wakes it.
 */
class AwaitAcrossProcessesTest {

    /**
     * How long no message may arrive, or a call's tail may take: a hang guard, not a speed check.
     * No {@code @Timeout} bounds a whole test: the trickle's wait runs from the last message that
     * arrived ({@link Setup#waitWhileProgressing}), the ping-pong ends at the first await that ran
     * out (none may), every await has its own timeout and every call to the child its reply
     * timeout.
     */
    private static final Duration GUARD = Duration.ofSeconds(120);

    /**
     * No wake-up is lost: a child sends 20 000 small messages, each only once this worker counted
     * the one before (in a word of the child's region, which this side fetch-adds), then after a
     * random pause (none, a short spin, a yield, a park of up to 200 µs), so that the receiver is
     * sometimes asleep, sometimes about to sleep and sometimes busy when one commits. The receiver
     * only ever loops {@code await(10 s)} → {@code progress()} → count until it has them all. No
     * later message can rescue a lost wake-up, since none comes until this side counted: a lost one
     * leaves the receiver asleep for a whole await with a message waiting, and that await returns
     * {@code false}: none may (the first ends the test). An await that ran out while no message came
     * (the child descheduled for its whole 10 s on a loaded machine) is no lost wake-up and is not
     * counted as one. (The liveness interval is an hour here: by default an await also wakes every
     * interval to check peers, 20 ms, and that would hide a lost wake-up.) And the awaits sleep: one
     * that returns {@code true} before a message came (a sender's wake that came after the receiver
     * took its message already) may happen, but not more often than once per message on the whole;
     * until 2026-12-07 an await that returned {@code true} at once, a busy loop, passed here (with
     * from 700 to 2 600 such awaits per message). Nothing here is timed.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void awaitWakesOnEveryMessageFromAnotherProcess(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        long messages = 20_000;
        Traffic.Receiver check = new Traffic.Receiver();
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h");
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            worker.onMessage(Traffic.DATA, check);
            WorkerAddress sender = child.worker("s", plugin, "SINGLE");
            child.connect("s", "to-test", worker.address());
            Endpoint toSender = worker.connect(sender);
            try (PeerRegion counted = toSender.peerRegion(child.region("s", "counted", 8))) {
                child.trickle("t", "s", "to-test", 5, messages, 42, "counted");

                long[] awaits = {0};
                long[] ranOut = {0};
                long[] empty = {0};
                long[] wokeToNothing = {0};
                long[] acknowledged = {0};
                // The receiver's loop is the wait's step; the guard runs from the last message that arrived.
                Setup.waitWhileProgressing(check::messages, messages, () -> check.errorCount() > 0 || ranOut[0] > 0, GUARD,
                        () -> "messages of the child's trickle taken by await and progress: " + check.summary() + "; " + awaits[0]
                                + " awaits, " + ranOut[0] + " ran out",
                        () -> {
                            long takenBefore = check.messages();
                            boolean woke = worker.await(Duration.ofSeconds(10));
                            awaits[0]++;
                            int delivered = worker.progress();
                            if (woke && check.messages() == takenBefore) wokeToNothing[0]++;
                            // Lost: slept its whole timeout with a message waiting. One that ran out while none came (the child
                            // kept off the processor for 10 s) lost nothing: the guard above bounds that wait.
                            if (!woke && delivered > 0) ranOut[0]++;
                            if (delivered == 0) empty[0]++;
                            long taken = check.messages(); // progress() counts events, not messages: a connection's too
                            if (taken > acknowledged[0]) toSender.fetchAdd(counted, 0, taken - acknowledged[0]);
                            acknowledged[0] = taken;
                        });
                assertThat(ranOut[0]).as("awaits that slept their whole 10 s with a message waiting: lost wake-ups (at %d of %d messages)",
                        check.messages(), messages).isZero();
                assertThat(wokeToNothing[0]).as("awaits that returned true with no message to take, in %d awaits for %d messages: "
                        + "more than one per message is an await that does not sleep", awaits[0], check.messages())
                        .isLessThanOrEqualTo(check.messages());
                assertThat(check.errors()).isEmpty();
                assertThat(check.received(5)).isEqualTo(messages);
                assertThat(child.join("t", GUARD)).containsEntry("sent", Long.toString(messages)).containsEntry("failed", "false");
                Setup.report("%s await: %d messages, %d awaits, %d ran out (false), %d followed by an empty progress(), %d woke to no "
                        + "message", plugin, messages, awaits[0], ranOut[0], empty[0], wokeToNothing[0]);
            }
        }
    }

    /**
     * No wake-up is lost where nothing would rescue it: a ping-pong of 5 000 small messages in
     * which this worker sleeps in {@code await(10 s)} until each echo arrives, sent by the peer's
     * handler at once rather than after a random pause as in the trickle above. The echo is the
     * last message until this side sends again, so a lost wake-up leaves the await asleep for its whole 10 s, and it
     * returns {@code false} with the echo there. None may; one that ran out before the echo came
     * waits on, up to the hang guard. (Liveness interval an hour, as above.) And the awaits sleep
     * until the echo comes: no more of them return {@code true} before it than there are round
     * trips; until 2026-12-07 an await that returned {@code true} at once passed here too.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void awaitWakesForEveryEchoOfAPingPong(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        long rounds = 5_000;
        int stream = 4;
        Traffic.Receiver echoes = new Traffic.Receiver();
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h");
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            worker.onMessage(Traffic.ECHO, echoes);
            WorkerAddress remote = child.worker("w", plugin, "SINGLE");
            child.connect("w", "back", worker.address());
            child.echo("w", "back");
            Endpoint ep = worker.connect(remote);
            Traffic.Asleep asleep = Traffic.pingPongAsleep(worker, ep, stream, rounds, echoes, GUARD);
            Setup.report("%s await in a ping-pong: %d round trips, %d awaits, %d ran out (false), %d woke before the echo", plugin,
                    asleep.messages(), asleep.awaits(), asleep.ranOut(), asleep.wokeEarly());
            assertThat(asleep.ranOut()).as("awaits that slept their whole 10 s with the echo waiting: lost wake-ups (at %d of %d round trips)",
                    asleep.messages(), rounds).isZero();
            assertThat(asleep.wokeEarly()).as("awaits that returned true before the echo came, in %d awaits for %d round trips: "
                    + "more than one per round trip is an await that does not sleep", asleep.awaits(), asleep.messages())
                    .isLessThanOrEqualTo(asleep.messages());
            assertThat(ep.isFailed()).isFalse();
            assertThat(echoes.errors()).isEmpty();
            assertThat(echoes.received(stream)).isEqualTo(rounds);
        }
    }

    /**
     * A worker asleep in {@code await} notices that a peer it has an endpoint to died: the peer's
     * JVM gets {@code kill -9} while this worker sleeps in {@code await(1 h)}; the await returns
     * {@code true} (there is work: a failure to report) rather than sleeping on, and the next
     * {@code progress()} calls the error handler with {@code PeerFailedException} of reason
     * {@code DIED}, found by the lease watch. The await's timeout is far beyond the hang guard,
     * which ends it with a {@code signal()} and fails the test: until 2026-12-07 it was 30 s, and an
     * await that slept its whole timeout, blind to the death, returned {@code true} too (the check
     * at its end found the death) and passed; as did a death found by the heartbeat (10 s).
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aWorkerAsleepInAwaitNoticesThatItsPeerDied(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        List<PeerFailedException> failures = new CopyOnWriteArrayList<>();
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            WorkerAddress peer = child.worker("p", plugin, "SINGLE");
            Endpoint ep = worker.connect(peer, (e, cause) -> failures.add(cause));
            worker.progress();
            assertThat(failures).isEmpty();

            AtomicBoolean hangGuardSignalled = new AtomicBoolean();
            Thread hangGuard = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(GUARD);
                } catch (InterruptedException e) {
                    return;
                }
                hangGuardSignalled.set(true);
                worker.signal();
            });
            Thread killer = Thread.ofPlatform().start(child::kill);
            boolean woke;
            try {
                woke = worker.await(Duration.ofHours(1));
            } finally {
                hangGuard.interrupt();
                hangGuard.join();
                killer.join();
            }
            assertThat(hangGuardSignalled).as("the hang guard's signal() ended the await after %s: the peer's death did not", GUARD)
                    .isFalse();
            worker.progress();
            assertThat(woke).as("await returned because of the peer's death").isTrue();
            assertThat(failures).singleElement().satisfies(f -> {
                assertThat(f.reason()).isEqualTo(PeerFailedException.Reason.DIED);
                assertThat(f).as("detected by the lease watch, not the heartbeat").hasMessageContaining("peer worker died (its lease");
            });
            assertThat(ep.isFailed()).isTrue();
        }
    }
}
