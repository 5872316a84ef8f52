package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bounds on what senders make a receiver keep ({@code inbound.max}, {@code inbound.bounce.max})
 * with real processes: a sender that died gives its share back as soon as a live one needs it.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class InboundBoundsTest {

    private static final Duration GUARD = Duration.ofSeconds(120);

    /**
     * A receiver that keeps one connection from senders ({@code inbound.max=1}) and checks its
     * peers only once an hour, so that the dead sender's connection stays until a bound needs it.
     * A child JVM connects and sends, then gets {@code kill -9}; a new sender then connects and
     * sends a large message. The receiver forgets the dead connection to make room, delivers the
     * message, and reclaims the dead sender's files. (Without that, the new connection was refused
     * and its large message dropped, for as long as the receiver's queue never ran empty.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aDeadSendersConnectionGivesWayToALiveOneAtTheBound(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        Traffic.Receiver check = new Traffic.Receiver();
        try (Conduit receiverSide = Setup.conduit(shared, plugin, plugin + ".inbound.max=1", plugin + ".liveness.interval=1h");
             Worker receiver = receiverSide.newWorker(ThreadMode.SINGLE);
             Conduit senderSide = Setup.conduit(shared, plugin);
             Worker sender = senderSide.newWorker(ThreadMode.SINGLE);
             RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
            receiver.onMessage(Traffic.DATA, check);
            Set<String> before = new HashSet<>(Setup.files(shared));
            child.worker("w", plugin, "SINGLE");
            child.connect("w", "to-receiver", receiver.address());
            Set<String> childFiles = new HashSet<>(Setup.files(shared));
            childFiles.removeAll(before);
            child.stream("s", "w", "to-receiver", 1, Traffic.Profile.SMALL, 10, 16);
            for (int i = 0; i < 1_000_000 && check.received(1) < 10; i++) progressOrPause(receiver);
            assertThat(child.join("s", GUARD)).containsEntry("failed", "false");
            assertThat(check.received(1)).isEqualTo(10);
            child.kill();

            Endpoint ep = sender.connect(receiver.address());
            MemorySegment header = Traffic.newHeader();
            ep.send(Traffic.DATA, Traffic.header(header, 2, Traffic.Profile.BULKY, 0), Traffic.payload(2, Traffic.Profile.BULKY, 0));
            for (int i = 0; i < 1_000_000 && check.received(2) < 1; i++) {
                sender.progress();
                progressOrPause(receiver);
            }
            assertThat(check.errors()).isEmpty();
            assertThat(check.received(2)).as("the new sender's large message").isEqualTo(1);
            assertThat(Setup.files(shared)).as("the dead sender's files %s, reclaimed", childFiles).doesNotContainAnyElementsOf(childFiles);
        }
    }

    /** Bounded, not timed: a pause when there was nothing to do (the sender is another process; a ring is mapped on another thread). */
    private static void progressOrPause(Worker worker) {
        if (worker.progress() == 0) LockSupport.parkNanos(20_000);
    }
}
