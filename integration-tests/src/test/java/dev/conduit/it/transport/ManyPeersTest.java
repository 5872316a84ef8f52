package dev.conduit.it.transport;

import dev.conduit.WorkerAddress;
import dev.conduit.it.LoadTest;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Eight senders, one receiving worker. The senders are eight workers — each with a Conduit of its
 * own — in two child JVMs (four each, to spare the two cores); the receiver is a worker of this
 * JVM, which also connects back to every sender (so it has an endpoint to each, as a server that
 * answers would). Every message is checked by {@link Traffic.Receiver}: per sender in order, none
 * lost, none twice, intact.
 */
@LoadTest
class ManyPeersTest {

    private static final int PER_CHILD = 4;
    /**
     * How long no message may arrive, or a call or one event (a death report, a job's tail) may
     * take: a hang guard, not a speed check. No {@code @Timeout} bounds a whole test: the waits
     * for the streams run from their last progress ({@link Setup#waitWhileProgressing}), and every
     * call to a child or to the receiver's thread has its own reply timeout.
     */
    private static final Duration GUARD = Duration.ofSeconds(120);
    /** How often a wait asks the children how far their senders got. */
    private static final Duration CHILD_POLL = Duration.ofMillis(20);

    /** Both children, their senders' names and addresses, and the receiver. */
    private record Setting(List<RemoteTransportPeer> children, WorkerHost receiver, Traffic.Receiver check) {
        RemoteTransportPeer childOf(int s) {
            return children.get(s / PER_CHILD);
        }
    }

    private static void addSenders(Setting t, int child, String plugin, String... keys) {
        RemoteTransportPeer c = t.children().get(child);
        for (int i = 0; i < PER_CHILD; i++) {
            int s = child * PER_CHILD + i;
            WorkerAddress a = c.worker("w" + s, plugin, "SINGLE", keys);
            c.connect("w" + s, "to-receiver", t.receiver().address());
            t.receiver().connect("back-" + s, a);
        }
    }

    /**
     * A receiver that stops progressing: the eight senders each send 5000 mixed messages without
     * ever waiting (no self-throttling). Every {@code send} returns although the receiver takes
     * nothing — its queue and the bounce rings fill, the rest waits in each sender's local queue
     * ({@code endpoint.pending() > 0} once all sends returned). Then the receiver progresses again
     * and everything arrives, in order per sender. The senders' {@code heartbeat.timeout} is raised
     * to 60 s so that a slow machine cannot turn the pause into a "hung peer" failure.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aSlowReceiverMakesSendersQueueLocallyNeverBlockNeverLose(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        long perSender = 5000;
        Traffic.Receiver check = new Traffic.Receiver();
        try (WorkerHost receiver = WorkerHost.start("receiver", Setup.conduit(shared, plugin), ThreadMode.SINGLE, true);
             RemoteTransportPeer a = RemoteTransportPeer.start(shared, Launcher.direct());
             RemoteTransportPeer b = RemoteTransportPeer.start(shared, Launcher.direct())) {
            receiver.run(() -> receiver.worker().onMessage(Traffic.DATA, check));
            Setting t = new Setting(List.of(a, b), receiver, check);
            addSenders(t, 0, plugin, plugin + ".heartbeat.timeout=60s");
            addSenders(t, 1, plugin, plugin + ".heartbeat.timeout=60s");

            receiver.pause(true);
            for (int s = 0; s < 2 * PER_CHILD; s++) {
                t.childOf(s).stream("s" + s, "w" + s, "to-receiver", s, Traffic.Profile.MIXED, perSender, 0);
            }
            // The senders' sends, all eight streams as one count: the guard runs from the last send that returned.
            Setup.waitWhileProgressing(() -> IntStream.range(0, 2 * PER_CHILD).mapToLong(s -> t.childOf(s).sent("s" + s)).sum(),
                    2 * PER_CHILD * perSender, () -> false, GUARD,
                    () -> "sends returned while the receiver took nothing; the senders: " + IntStream.range(0, 2 * PER_CHILD)
                            .mapToObj(s -> s + ": " + t.childOf(s).status("s" + s)).toList(),
                    Setup.pause(CHILD_POLL));
            List<Long> pendingAtIssue = new ArrayList<>();
            for (int s = 0; s < 2 * PER_CHILD; s++) {
                int sender = s;
                String[] stage = new String[1];
                Setup.waitUntil(() -> {
                    Map<String, String> st = t.childOf(sender).status("s" + sender);
                    stage[0] = st.toString();
                    return st.get("done").equals("true") || st.getOrDefault("stage", "").startsWith("issued");
                }, GUARD, () -> "sender " + sender + " issuing its sends: " + stage[0]);
                assertThat(stage[0]).as("sender %d once every send returned", sender).contains("pendingAtIssue=");
                pendingAtIssue.add(Long.parseLong(stage[0].replaceAll(".*pendingAtIssue=(-?\\d+).*", "$1")));
            }
            assertThat(check.messages()).as("messages the paused receiver took").isZero();
            Setup.report("%s slow receiver: every sender's %d sends returned while the receiver took nothing; pending() then: %s",
                    plugin, perSender, pendingAtIssue);
            assertThat(pendingAtIssue).as("each sender's local queue once all its sends returned").allSatisfy(p -> assertThat(p).isPositive());

            receiver.pause(false);
            Setup.waitWhileProgressing(check::messages, 2 * PER_CHILD * perSender, () -> check.errorCount() > 0, GUARD,
                    () -> "messages of the eight senders the receiver took once it progressed again: " + check.summary());
            for (int s = 0; s < 2 * PER_CHILD; s++) {
                Map<String, String> r = t.childOf(s).join("s" + s, GUARD);
                assertThat(r).as("sender %d", s).containsEntry("sent", Long.toString(perSender)).containsEntry("failed", "false");
            }
            assertThat(check.errors()).isEmpty();
            for (int s = 0; s < 2 * PER_CHILD; s++) assertThat(check.received(s)).as("messages of sender %d", s).isEqualTo(perSender);
            assertThat(check.messages()).isEqualTo(2 * PER_CHILD * perSender);
            assertThat(receiver.failures()).isEmpty();
            for (int s = 0; s < 2 * PER_CHILD; s++) t.childOf(s).assertNoFailures("w" + s);
        }
    }

    /**
     * {@code kill -9} of one sending process (four of the eight senders) in mid-stream. The
     * receiver's endpoints to those four workers fail through the error handler with
     * {@code PeerFailedException} of reason {@code DIED} (the time from the kill to each callback is printed); the other
     * four streams complete, in order and intact — although their process was frozen
     * ({@code SIGSTOP}) across the kill, perhaps in mid-send; and once the receiver's liveness check noticed
     * the death, nothing of the dead process is left in the shared directory: the receiver
     * reclaimed its files (leases, queues, bounce rings, sockets), those it made in mid-stream too.
     * Until 2026-12-07 the dead process's files were those listed once its warm-up was done, and
     * one it made later was not looked for; they are now told by their owner's name.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void killingASenderMidStreamFailsOnlyItsEndpointsAndItsFilesAreReclaimed(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        long perSender = 3_000_000; // more than child b sends before the kill, also on a loaded machine (300,000 once finished first)
        long survivors = 20_000;
        Traffic.Receiver check = new Traffic.Receiver();
        try (WorkerHost receiver = WorkerHost.start("receiver", Setup.conduit(shared, plugin), ThreadMode.SINGLE, true);
             RemoteTransportPeer a = RemoteTransportPeer.start(shared, Launcher.direct());
             RemoteTransportPeer b = RemoteTransportPeer.start(shared, Launcher.direct())) {
            receiver.run(() -> receiver.worker().onMessage(Traffic.DATA, check));
            Setting t = new Setting(List.of(a, b), receiver, check);

            // Child a's senders, warmed up (a warm-up stream of 1000 mixed messages creates each bounce ring).
            addSenders(t, 0, plugin);
            warmUp(t, 0);
            Set<String> before = new HashSet<>(Setup.files(shared));
            Set<String> survivingOwners = Setup.owners(shared);
            addSenders(t, 1, plugin);
            warmUp(t, 1);

            for (int s = PER_CHILD; s < 2 * PER_CHILD; s++) b.stream("s" + s, "w" + s, "to-receiver", s, Traffic.Profile.MIXED, perSender, 4096);
            waitForFirst(check, PER_CHILD, 2 * PER_CHILD, 1000, () -> "child b's four streams", () -> false);
            for (int s = 0; s < PER_CHILD; s++) a.stream("s" + s, "w" + s, "to-receiver", s, Traffic.Profile.BULKY, survivors, 256);
            // Mid-stream: every stream has delivered some, none has finished.
            waitForFirst(check, 0, 2 * PER_CHILD, 1000, () -> "all eight streams", () -> false);
            // The survivors' process is frozen meanwhile (SIGSTOP), each sender wherever it was — quite
            // possibly between claiming a record in the receiver's queue and committing it, with its
            // payload half copied. The receiver must wait for a live sender's record, however long,
            // although another sender died: it may skip only records of senders it knows are dead.
            a.stop();
            List<String> atTheKill = Setup.files(shared);
            long killedAt = System.nanoTime();
            b.kill();
            long reaped = System.nanoTime();
            List<Long> victimCounts = IntStream.range(PER_CHILD, 2 * PER_CHILD).mapToObj(s -> check.received(s)).toList();

            Setup.waitUntil(() -> receiver.failures().size() >= PER_CHILD, GUARD, () -> "error handler calls: " + receiver.failures());
            Thread.sleep(500); // not a measurement: ten times unblock.timeout for the receiver to misjudge a frozen sender
            a.resume();
            List<WorkerHost.Failure> failures = receiver.failures();
            assertThat(failures).extracting(WorkerHost.Failure::endpoint)
                    .containsExactlyInAnyOrderElementsOf(IntStream.range(PER_CHILD, 2 * PER_CHILD).mapToObj(s -> "back-" + s).toList());
            assertThat(failures).extracting(WorkerHost.Failure::type).containsOnly("PeerFailedException");
            assertThat(failures).extracting(WorkerHost.Failure::reason).containsOnly(PeerFailedException.Reason.DIED);
            // Not timed: the cause shows the path. A lease is checked every liveness.interval (20 ms), within the 100 ms
            // the death must be noticed in; the heartbeat verdict would come only after heartbeat.timeout (10 s).
            assertThat(failures).extracting(WorkerHost.Failure::message).as("detected by the lease watch, not the heartbeat")
                    .allMatch(m -> m.contains("peer worker died (its lease"));
            List<Double> detection = failures.stream().map(f -> (f.nanoTime() - killedAt) / 1e6).sorted().toList();
            Setup.report("%s death detection, kill -9 of a sender process -> error handler on the receiver (ms; target 100): %s"
                            + " (the killed JVM was reaped %.1f ms after the signal)",
                    plugin, detection.stream().map(d -> String.format("%.1f", d)).toList(), (reaped - killedAt) / 1e6);
            Setup.report("%s victims' streams had delivered %s of %d when killed", plugin, victimCounts, perSender);

            // The survivors' streams, as one count: the guard runs from the last of their messages that arrived. A survivor
            // whose endpoint failed is reported by the receiver's error handler too, or by its stream's status below.
            waitForFirst(check, 0, PER_CHILD, survivors, () -> "the surviving senders' streams; their status: "
                    + IntStream.range(0, PER_CHILD).mapToObj(s -> s + ": " + a.status("s" + s)).toList() + "; error handler calls: "
                    + receiver.failures(), () -> receiver.failures().size() > PER_CHILD);
            for (int s = 0; s < PER_CHILD; s++) {
                Map<String, String> r = a.join("s" + s, GUARD);
                if (!r.get("failed").equals("false")) {
                    Setup.report("surviving sender %d failed: %s; receiver: %s, progress errors %s", s,
                            a.failures("w" + s).stream().map(List::of).toList(), check.summary(), receiver.progressErrors());
                }
                assertThat(r).as("surviving sender %d", s).containsEntry("sent", Long.toString(survivors)).containsEntry("failed", "false");
            }
            assertThat(check.errors()).as("order and content, the victims' streams included, up to where they stopped").isEmpty();
            for (int s = 0; s < PER_CHILD; s++) assertThat(check.received(s)).as("messages of surviving sender %d", s).isEqualTo(survivors);
            for (int s = PER_CHILD; s < 2 * PER_CHILD; s++) assertThat(check.received(s)).as("messages of killed sender %d", s).isLessThan(perSender);
            for (int s = 0; s < PER_CHILD; s++) a.assertNoFailures("w" + s);
            assertThat(receiver.progressErrors()).isEmpty();

            Setup.awaitReclaimOfTheDeadProcesssFiles(shared, survivingOwners, atTheKill, GUARD);
            assertThat(Setup.files(shared)).as("the live processes' files").containsAll(before);
        }
    }

    private static void warmUp(Setting t, int child) {
        RemoteTransportPeer c = t.children().get(child);
        int first = child * PER_CHILD;
        for (int s = first; s < first + PER_CHILD; s++) {
            c.stream("warm" + s, "w" + s, "to-receiver", 100 + s, Traffic.Profile.MIXED, 1000, 4096);
        }
        waitForFirst(t.check(), 100 + first, 100 + first + PER_CHILD, 1000, () -> "the warm-up streams of child " + child, () -> false);
        for (int s = first; s < first + PER_CHILD; s++) c.join("warm" + s, GUARD);
    }

    /**
     * Waits until each of the streams {@code from .. to - 1} has delivered its first {@code n}
     * messages to {@code check}, or it found an error, or {@code stop} holds: their sum, capped at
     * {@code n} each, is one count whose guard runs from the last of those messages that arrived.
     */
    private static void waitForFirst(Traffic.Receiver check, int from, int to, long n, Supplier<String> what, BooleanSupplier stop) {
        Setup.waitWhileProgressing(() -> IntStream.range(from, to).mapToLong(s -> Math.min(check.received(s), n)).sum(), (to - from) * n,
                () -> check.errorCount() > 0 || stop.getAsBoolean(), GUARD,
                () -> "the first " + n + " messages of each of streams " + from + ".." + (to - 1) + " (" + what.get() + "); the receiver: "
                        + check.summary());
    }
}
