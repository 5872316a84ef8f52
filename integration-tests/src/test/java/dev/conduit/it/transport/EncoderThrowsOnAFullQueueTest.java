package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A send the transport refused to encode in place (the receiver's queue full) whose encoder then
 * throws in the runtime's buffer leaves nothing to send again (Endpoint.send: "If it throws,
 * nothing is sent"): the receiver, which reads its queue to the end and then sleeps, holds nothing
 * of the sender back, and the sender's liveness checks do not fail it as hung. Until 2026-12-07
 * they did, a posix.heartbeat.timeout after the receiver's last progress(): "peer worker is hung:
 * its queue stayed full ...; it had read every message sent on this endpoint".
 */
class EncoderThrowsOnAFullQueueTest {

    @Test
    void aReceiverThatReadItsQueueAfterARefusedSendWhoseEncoderThrewIsNotFailedAsHung(@TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Setup.conduit(shared, "posix", "posix.queue.size=64k", "posix.liveness.interval=1ms",
                "posix.heartbeat.timeout=20ms")) {
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            AtomicLong received = new AtomicLong();
            receiver.onMessage(1, message -> received.incrementAndGet());
            Worker filling = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint filler = filling.connect(receiver.address());
            long sent = 0;
            while (filler.pending() == 0) {
                filler.send(1, MemorySegment.ofArray(new byte[8]));
                sent++;
            }
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            AtomicReference<PeerFailedException> failure = new AtomicReference<>();
            Endpoint endpoint = sender.connect(receiver.address(), (ep, cause) -> failure.set(cause));
            IllegalStateException refused = new IllegalStateException("the application's encoder refuses this message");
            Throwable thrown = catchThrowable(() -> endpoint.send(2, MemorySegment.NULL, 2048, target -> {
                throw refused;
            }));
            assertThat(thrown).as("what the send threw, whose in-place encoding the full queue refused").isSameAs(refused);
            assertThat(endpoint.pending()).as("messages waiting to be sent again").isZero();

            long inTheQueue = sent - 1; // the last one waits in the filler's local queue, which nobody progresses
            Setup.waitUntil(() -> {
                receiver.progress();
                return received.get() == inTheQueue;
            }, Duration.ofSeconds(60), () -> received.get() + " of " + inTheQueue + " messages received");
            // The receiver sleeps from here on. Ten heartbeat timeouts of the sender's liveness checks: time to judge, not a bound.
            for (long end = System.nanoTime() + 200_000_000L; System.nanoTime() - end < 0 && failure.get() == null; ) {
                sender.progress();
            }
            assertThat(failure.get()).as("the sender's endpoint's failure").isNull();
        }
    }
}
