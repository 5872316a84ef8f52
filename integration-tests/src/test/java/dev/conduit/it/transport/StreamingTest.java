package dev.conduit.it.transport;

import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two JVMs, one shared-memory transport: a million messages of mixed sizes
 * ({@link Traffic.Profile#MIXED}: 0 B to 8 KiB in a cycle of 16 — both sides of the inline limit —
 * every 100th 64 KiB, every 1000th 1 MiB), checked on the receiving side for loss, duplication,
 * order and content ({@link Traffic.Receiver}).
 *
 * <ul>
 *   <li>streaming: a child streams 10^6 messages to this JVM, keeping its local queue bounded by
 *       progressing the way an application does;</li>
 *   <li>ping-pong: this JVM sends 10^6 messages one at a time, the child checks each and sends it
 *       back, this JVM checks the echo before it sends the next.</li>
 * </ul>
 *
 * Throughput is printed (informational; nothing here asserts a duration).
 *
 * <p>No {@code @Timeout} bounds a whole test: a million round trips take seconds on an idle machine
 * and many minutes on a loaded one (440,946 of them in 300 s beside two busy loops), so a bound on
 * the whole run failed a slow exchange that never stopped. The waits for the stream and the
 * echoes are hang guards that run from the last message that arrived ({@link
 * Setup#waitWhileProgressing}); every call to the child or to the worker's thread has its own
 * reply timeout.
 */
class StreamingTest {

    static final long MESSAGES = 1_000_000;
    /**
     * The stream of the one message that ends an exchange: in order behind everything before it on
     * its endpoint, it shows that all of that has arrived, so a message that arrived twice is
     * counted whenever the second copy came.
     */
    private static final int END = 8;
    /** How long no message may arrive, or a call's tail may take: a hang guard, not a speed check. */
    private static final Duration GUARD = Duration.ofSeconds(240);

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aMillionMixedMessagesStreamFromAChildInOrderAndIntact(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        Traffic.Receiver received = new Traffic.Receiver();
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             WorkerHost local = WorkerHost.start("local", Setup.conduit(shared, plugin), ThreadMode.SINGLE, true)) {
            local.run(() -> local.worker().onMessage(Traffic.DATA, received));
            child.worker("w", plugin, "SINGLE");
            child.connect("w", "to-test", local.address());

            child.stream("s", "w", "to-test", 7, Traffic.Profile.MIXED, MESSAGES, 8192);
            Setup.waitWhileProgressing(received::messages, MESSAGES, () -> received.errorCount() > 0, GUARD,
                    () -> received.summary() + "; the child's stream: " + child.status("s"));
            Map<String, String> result = child.join("s", GUARD);
            assertThat(result).containsEntry("sent", Long.toString(MESSAGES)).containsEntry("failed", "false");
            // The end of the stream: one message of stream END after it on the same endpoint, so in order behind
            // anything the stream delivered late (a duplicate of its last message arriving once the count was reached).
            child.stream("end", "w", "to-test", END, Traffic.Profile.SMALL, 1, 0);
            Setup.waitWhileProgressing(() -> received.received(END), 1, () -> false, GUARD,
                    () -> "the end of the stream: " + received.summary() + "; the child's: " + child.status("end"));

            assertThat(received.errors()).as("what the receiver found wrong").isEmpty();
            assertThat(received.messages()).as("the stream's messages and its end").isEqualTo(MESSAGES + 1);
            assertThat(received.received(7)).as("next sequence number of the stream").isEqualTo(MESSAGES);
            assertThat(local.failures()).isEmpty();
            assertThat(local.progressErrors()).isEmpty();
            long nanos = Long.parseLong(result.get("nanos"));
            Setup.report("%s streaming child -> test: %d messages, %d bytes in %d ms: %s, %s", plugin, MESSAGES, received.bytes(),
                    nanos / 1_000_000, Setup.perSecond(MESSAGES, nanos), Setup.mibPerSecond(received.bytes(), nanos));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aMillionMixedMessagesPingPongWithAChildEachCheckedOnBothSides(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        Traffic.Receiver echoes = new Traffic.Receiver();
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             WorkerHost local = WorkerHost.start("local", Setup.conduit(shared, plugin), ThreadMode.SINGLE, true)) {
            local.run(() -> local.worker().onMessage(Traffic.ECHO, echoes));
            WorkerAddress remote = child.worker("w", plugin, "SINGLE");
            child.connect("w", "back", local.address());
            child.echo("w", "back");
            local.connect("to-child", remote);

            Future<Long> pingPong = local.submit(() -> {
                long t0 = System.nanoTime();
                long n = Traffic.pingPong(local.worker(), local.endpoint("to-child"), 3, Traffic.Profile.MIXED, MESSAGES, echoes);
                long nanos = System.nanoTime() - t0;
                Setup.report("%s ping-pong test <-> child: %d round trips, %d bytes each way in %d ms: %s round trips, %.1f us each",
                        plugin, n, echoes.bytes(), nanos / 1_000_000, Setup.perSecond(n, nanos), nanos / 1e3 / Math.max(1, n));
                return n;
            });
            Setup.waitWhileProgressing(() -> echoes.received(3), MESSAGES, pingPong::isDone, GUARD,
                    () -> "echoes: " + echoes.summary() + "; the child: " + child.stats("w"));
            assertThat(pingPong.get(GUARD.toSeconds(), TimeUnit.SECONDS)).as("round trips").isEqualTo(MESSAGES);
            // The end of the exchange: one message of stream END, echoed like the others. Its echo comes behind
            // anything either side delivered late (a duplicate of the last message or of its echo).
            local.run(() -> local.endpoint("to-child").send(Traffic.DATA, Traffic.header(Traffic.newHeader(), END, Traffic.Profile.SMALL, 0),
                    Traffic.payload(END, Traffic.Profile.SMALL, 0)));
            Setup.waitWhileProgressing(() -> echoes.received(END), 1, () -> false, GUARD,
                    () -> "the echo of the end: " + echoes.summary() + "; the child: " + child.stats("w"));

            assertThat(echoes.errors()).as("what this JVM found wrong in the echoes").isEmpty();
            assertThat(echoes.received(3)).isEqualTo(MESSAGES);
            assertThat(echoes.messages()).as("the echoes of the exchange and of its end").isEqualTo(MESSAGES + 1);
            Map<String, String> theirs = child.stats("w");
            assertThat(theirs).as("what the child received").containsEntry("errors", "0")
                    .containsEntry("messages", Long.toString(MESSAGES + 1)).containsEntry("streams", "3:" + MESSAGES + "," + END + ":1");
            child.assertNoFailures("w");
            assertThat(local.failures()).isEmpty();
        }
    }
}
