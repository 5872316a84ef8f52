package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** What a worker holds of a sender killed while other senders keep its queue busy. */
class DeadSenderUnderTrafficTest {

    /**
     * How long no message may arrive, or one event (the ring let go) may take: a hang guard, not a
     * speed check. No {@code @Timeout} bounds a whole test: the waits for the streams run from the
     * last message that arrived ({@link Setup#waitWhileProgressing}), and every call to a child
     * has its own reply timeout.
     */
    private static final Duration GUARD = Duration.ofSeconds(60);
    private static final int FLOOD = 0;
    private static final int VICTIM = 1;

    /**
     * A sender killed after its large messages were read leaves its bounce ring mapped here until
     * the worker forgets its connection. That waited for a liveness check that found the queue
     * empty, which under a steady flood from another sender never came: the ring stayed mapped for
     * as long as the flood lasted (a soak held 177 MB of shared memory after 40 such kills). Now it
     * is forgotten once the head has passed where the tail was when the death was found.
     */
    @ParameterizedTest
    @ValueSource(strings = {"posix", "memfd"})
    void aKilledSendersRingIsReleasedWhileAnotherSenderKeepsTheQueueBusy(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=5ms");
             Worker worker = conduit.newWorker(ThreadMode.SINGLE);
             RemoteTransportPeer flooder = RemoteTransportPeer.start(shared, Launcher.direct());
             RemoteTransportPeer victim = RemoteTransportPeer.start(shared, Launcher.direct())) {
            Traffic.Receiver received = new Traffic.Receiver();
            worker.onMessage(Traffic.DATA, received);
            Setup.Step progress = () -> { // the worker belongs to this thread: the waits progress it, every 2 ms
                worker.progress();
                Thread.sleep(2);
            };
            flooder.worker("f", plugin, "SINGLE");
            flooder.connect("f", "to-test", worker.address());
            victim.worker("v", plugin, "SINGLE");
            victim.connect("v", "to-test", worker.address());

            long before = OpenResources.ofThisProcess().conduitMappings();
            victim.stream("large", "v", "to-test", VICTIM, Traffic.Profile.BULKY, 4, 0);
            Setup.waitWhileProgressing(() -> received.received(VICTIM), 4, () -> false, GUARD,
                    () -> "the victim's large messages: " + received.summary(), progress);
            long withRing = OpenResources.ofThisProcess().conduitMappings();
            assertThat(withRing).as("the victim's bounce ring, mapped here").isGreaterThan(before);

            flooder.stream("flood", "f", "to-test", FLOOD, Traffic.Profile.SMALL, Long.MAX_VALUE / 2, 1 << 16);
            Setup.waitWhileProgressing(() -> received.received(FLOOD), 10_001, () -> false, GUARD,
                    () -> "the flood under way: " + received.summary(), progress);
            victim.kill();

            // Progressed every 2 ms: the flood fills the queue between two calls, so no check finds it empty.
            Setup.waitUntil(() -> {
                worker.progress();
                return OpenResources.ofThisProcess().conduitMappings() < withRing;
            }, GUARD, () -> "the killed sender's ring still mapped while the flood goes on: "
                    + OpenResources.ofThisProcess().format() + ", with the ring " + withRing);
            assertThat(flooder.status("flood").get("done")).as("the flood still going when the ring was let go").isEqualTo("false");
        }
    }
}
