package dev.conduit.shm;

import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reclaim of dead peers' files a worker hands to its mapping thread after a peer's failure,
 * where the hand-over fails ({@link ShmTransport#beforeReclaimHandOver}, package-private, so this
 * test lives here); posix's {@code ShmTransportTest} has the reclaim's other tests. The transports
 * share this JVM's memory ({@link InProcessMemory}).
 */
class ShmTransportReclaimTest {

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    private static final MessageSink NO_MESSAGES = (id, h, ho, hl, p, po, pl) -> {
        throw new AssertionError("no message is sent");
    };

    /**
     * A reclaim whose hand-over to the mapping thread fails (a thread that cannot start: no native
     * thread to be had) throws from the check a ConduitException naming the limit to raise (it threw
     * the JVM's bare OutOfMemoryError), and is handed over again at a later check once the
     * shortage passed: the failed hand-over used to leave it marked as handed over, so that no dead
     * peer's files were reclaimed again while the worker lived.
     */
    @Test
    void aReclaimWhoseHandOverFailedIsHandedOverAgainAtALaterCheck() throws Exception {
        ShmTransport peer = transport();
        ShmTransport sender = transport();
        AtomicReference<PeerFailedException> failure = new AtomicReference<>();
        sender.connect(new PayloadReader(peer.address()), failure::set);
        String deadLease = "conduit-posix-worker-0badcafe" + "dead".repeat(6) + ".lease";
        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), shared, "test")) {
            directory.createExclusive(deadLease).close(); // a killed posix owner's lease, left unlocked
        }
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached (injected by the test)");
        sender.beforeReclaimHandOver = () -> {
            throw noThread;
        };
        peer.close();
        Throwable thrown = null;
        for (int check = 0; check < 100 && thrown == null; check++) {
            Thread.sleep(25); // past the liveness interval: each call checks
            try {
                sender.progress();
            } catch (ConduitException e) {
                thrown = e;
            }
        }
        assertThat(failure.get()).as("the endpoint to the closed peer").isNotNull().hasMessageContaining("peer worker closed");
        assertThat(thrown).as("the check whose reclaim could not be handed over").isInstanceOf(ConduitException.class)
                .hasMessageContaining("test: cannot start the thread that reclaims dead peers' files")
                .hasMessageContaining("ulimit -u").hasMessageContaining("pids.max").hasCause(noThread);
        assertThat(shared.resolve(deadLease)).as("the dead owner's lease, its reclaim not handed over").exists();

        sender.beforeReclaimHandOver = null; // the shortage passed
        for (int check = 0; check < 100 && Files.exists(shared.resolve(deadLease)); check++) {
            Thread.sleep(25);
            sender.progress();
        }
        assertThat(shared.resolve(deadLease)).as("the dead owner's lease, at the checks after the shortage passed").doesNotExist();
    }

    private ShmTransport transport() {
        InProcessMemory memory = new InProcessMemory();
        ShmTransportConfig config = new ShmTransportConfig(64 << 10, 8 << 10, 64 << 10, Duration.ofMillis(20), Duration.ofSeconds(10),
                Duration.ofMillis(50), 1024, 64L << 30);
        ShmTransport t = new ShmTransport("test", Linux.libc(), new InProcessContext(shared, NO_MESSAGES), config, memory, memory);
        open.add(t);
        return t;
    }
}
