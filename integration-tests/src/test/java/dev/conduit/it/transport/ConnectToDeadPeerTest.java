package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A connect to the address of a worker whose process was killed. */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class ConnectToDeadPeerTest {

    /**
     * The connect fails naming the dead lease, and, having proven the peer dead, reclaims its files
     * (queue, leases, socket) there and then. They used to stay until the next worker or pool was
     * opened on the directory; this test's worker exists before the kill, and its liveness check
     * is an hour apart, so nothing else reclaims them.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aConnectThatFindsThePeerDeadReclaimsItsFiles(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h");
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            Set<String> ours = new HashSet<>(Setup.files(shared));
            WorkerAddress dead;
            try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
                dead = child.worker("w", plugin, "SINGLE");
                assertThat(Setup.files(shared)).as("the child worker's files").hasSizeGreaterThan(ours.size());
                child.kill();
            }

            // The connect's own failure is one: a failover catches PeerFailedException (a ConduitException until 2026-12-04).
            assertThatThrownBy(() -> worker.connect(dead)).isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining("the peer is dead (its lease");

            assertThat(Setup.files(shared)).as("what is left in the shared directory").containsExactlyInAnyOrderElementsOf(ours);
        }
    }

    /**
     * A connect to the address of a worker whose files this process's own open reclaimed (its lease was free) says
     * the peer is dead, a {@code PeerFailedException} from the transport: it said "the peer is gone, or this process
     * sees another shared directory", a {@code ConduitException}, though the process had just removed that lease
     * itself (helper h6; a perf server restarted after a kill -9 connecting to the address the dead one left).
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aConnectToAWorkerWhoseFilesThisProcessReclaimedSaysThePeerIsDead(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        WorkerAddress dead;
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
            dead = child.worker("w", plugin, "SINGLE");
            child.kill();
        }
        try (Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) { // its open reclaims the dead worker's files

            assertThatThrownBy(() -> worker.connect(dead)).isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining(plugin + ": the peer is dead: this process removed its files from the shared directory")
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement().isInstanceOf(PeerFailedException.class));
        }
    }

    /**
     * A connect to the address of a worker that closed in order in another process (its close
     * removed its lease) is a peer failure, so that a failover to a peer's last known address
     * catches one exception: the address names its shared directory (device, inode, birth time),
     * which is this one. It was a plain {@code ConduitException} ("the peer is gone, or this process
     * sees another shared directory"); it still is where the file system records no birth time,
     * for device and inode alone do not tell this host's directory from another host's. Both
     * transports, so that the runtime's own connect, which tries each, is what is checked.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aConnectToTheAddressOfAWorkerThatClosedInOrderIsAPeerFailure(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        WorkerAddress closed;
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
            closed = child.worker("w", plugin, "SINGLE");
            child.closeWorker("w");
            try (Conduit conduit = Setup.conduit(shared, "memfd,posix");
                 Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                Set<String> ours = new HashSet<>(Setup.files(shared));
                if (ShmDir.recordsBirthTimes(shared)) {
                    assertThatThrownBy(() -> worker.connect(closed)).isInstanceOf(PeerFailedException.class)
                            .hasMessageContaining(plugin + ": the peer is gone: its lease conduit-" + plugin + "-worker-")
                            .hasMessageContaining("the very directory its address names");
                } else {
                    assertThatThrownBy(() -> worker.connect(closed)).isNotInstanceOf(PeerFailedException.class)
                            .hasMessageContaining("the peer is gone, or this process sees another shared directory");
                }
                assertThat(Setup.files(shared)).as("what is left in the shared directory").containsExactlyInAnyOrderElementsOf(ours);
            }
        }
    }

    /**
     * A message whose sender's process was killed after it sent it, answered before this worker's
     * liveness check ends the connection (an hour apart here): the transport still gives the
     * address the sender announced, the reply endpoint's connect finds the sender dead, and
     * {@code replyEndpoint()} throws {@code PeerFailedException}, as it does for a connection
     * already ended, so that an application handles a sender's death one way, whenever it is
     * noticed. (It was a plain {@code ConduitException}.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void answeringAMessageOfASenderKilledSinceIsAPeerFailure(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h");
             Worker server = conduit.newWorker(ThreadMode.SINGLE)) {
            List<Throwable> thrown = new ArrayList<>();
            int[] received = new int[1];
            // The first message is only counted: its connection is then kept before the kill. The second is answered.
            server.onMessage(Traffic.DATA, m -> {
                if (received[0]++ == 0) return;
                try {
                    m.replyEndpoint();
                } catch (RuntimeException e) {
                    thrown.add(e);
                }
            });
            try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct())) {
                child.worker("w", plugin, "SINGLE");
                child.connect("w", "ep", server.address());
                child.trickle("first", "w", "ep", 1, 1, 1);
                child.join("first", Duration.ofSeconds(60));
                progressUntil(server, () -> received[0] == 1);
                child.trickle("second", "w", "ep", 1, 1, 2);
                child.join("second", Duration.ofSeconds(60));
                child.kill();
            }
            progressUntil(server, () -> received[0] == 2);

            assertThat(thrown).singleElement().isInstanceOf(PeerFailedException.class)
                    .satisfies(e -> assertThat(e).hasMessageContaining("cannot answer the sender of connection")
                            .hasMessageContaining("the peer is dead (its lease"));
        }
    }

    /**
     * A message whose sender closed its worker after sending it (or died, and a Conduit opened on
     * the directory since reclaimed its files, as a restarted sender's does): its lease is no longer
     * in the shared directory when the message is answered. {@code replyEndpoint()} throws
     * {@code PeerFailedException}, as for a sender killed whose lease is still there (above), and as
     * its javadoc promises for a sender's worker found gone. It threw a plain {@code ConduitException}
     * "cannot reach the peer: its lease ... cannot be opened (ENOENT)", whose remedy suspected this
     * process's shared directory: the very directory the sender's connection came through.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void answeringAMessageOfASenderWhoseLeaseIsGoneIsAPeerFailure(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Setup.conduit(shared, plugin, plugin + ".liveness.interval=1h");
             Worker server = conduit.newWorker(ThreadMode.SINGLE)) {
            Set<String> ours = new HashSet<>(Setup.files(shared));
            List<Throwable> thrown = new ArrayList<>();
            int[] received = new int[1];
            server.onMessage(Traffic.DATA, m -> {
                received[0]++;
                try {
                    m.replyEndpoint();
                } catch (RuntimeException e) {
                    thrown.add(e);
                }
            });
            try (Conduit senderConduit = Setup.conduit(shared, plugin);
                 Worker sender = senderConduit.newWorker(ThreadMode.SINGLE)) {
                sender.connect(server.address()).send(Traffic.DATA, java.lang.foreign.MemorySegment.ofArray(new byte[8]));
                sender.progress();
            }
            assertThat(Setup.files(shared)).as("the sender's files, its lease among them, are gone").containsExactlyInAnyOrderElementsOf(ours);
            progressUntil(server, () -> received[0] == 1);

            assertThat(thrown).singleElement().isInstanceOf(PeerFailedException.class)
                    .satisfies(e -> assertThat(e).hasMessageContaining("cannot answer the sender of connection")
                            .hasMessageContaining("the peer is gone"));
        }
    }

    private static void progressUntil(Worker worker, java.util.function.BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("gave up waiting after 60 s");
            worker.progress();
        }
    }
}
