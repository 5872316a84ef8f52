package dev.conduit.it.ipc;

import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.CommandLoop;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Host ↔ isolated container: the consumer runs under {@link Launcher#container()} (new PID, IPC,
 * UTS, mount and network namespaces, another hostname), sees the shared directory only through a
 * bind mount at another path, and is configured by its own {@code CONDUIT_SHARED_DIR}. Imports work
 * for memfd (fd passing over the socket) and for posix (the file, by its relative name), exactly as
 * in {@link TwoProcessImportTest}. Runs in CI, as root; without {@code unshare} it fails, naming what
 * to install.
 */
@Timeout(120) // a hang guard, not a speed check
class ContainerImportTest {

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aConsumerInAnIsolatedContainerMapsTheHostsRegions(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemotePeer consumer = RemotePeer.start(shared, Launcher.container())) {
            ChildJvm child = consumer.child();
            Map<String, String> hello = child.hello();
            System.out.printf("host: hostname=%s shared=%s pid=%d %s%ncontainer: %s (host pid of its JVM %d)%n",
                    CommandLoop.hostname(), shared, ProcessHandle.current().pid(), CommandLoop.namespaces(), hello, child.jvm().pid());

            assertThat(hello.get("hostname")).as("the container's hostname (UTS namespace)")
                    .isEqualTo(Launcher.Container.HOSTNAME).isNotEqualTo(CommandLoop.hostname());
            assertThat(hello.get("shared")).as("the container's CONDUIT_SHARED_DIR")
                    .isEqualTo(child.sharedDirectory().toString()).isNotEqualTo(shared.toString());
            assertThat(child.pidInside()).as("the JVM's pid in its own PID namespace: the namespace's init").isEqualTo(1);
            assertThat(child.jvm().pid()).as("the same JVM's pid on the host").isNotEqualTo(1);
            Map<String, String> ours = CommandLoop.namespaces();
            for (String kind : ours.keySet()) {
                assertThat(hello.get("ns." + kind)).as("the container's %s namespace", kind).isNotEqualTo(ours.get(kind));
            }
            assertThat(hello).containsEntry("loading", Peers.loading());

            // The bind mount is the container's own: the container sees the host's directory at its path,
            // the host sees only the empty mount point there.
            Path marker = Files.writeString(shared.resolve("marker"), "from the host");
            assertThat(consumer.sharedFiles()).containsExactly("marker");
            try (var atMountPoint = Files.list(child.sharedDirectory())) {
                assertThat(atMountPoint).as("the host's view of the container's mount point").isEmpty();
            }
            Files.delete(marker);

            Peers.roundTrip(plugin, shared, consumer);
        }
    }

    /**
     * A consumer given the shared directory read-only ({@code docker run -v DIR:DIR:ro}): memfd
     * imports only connect to the producer's socket, so they work there; a pool or a worker over
     * memfd, which needs a lease and sockets in the directory, is refused naming the read-only mount.
     * (memfd used to be unavailable there altogether.)
     */
    @org.junit.jupiter.api.Test
    void aConsumerWithAReadOnlyMountOfTheSharedDirectoryImportsTheHostsMemfdRegions(@TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemotePeer consumer = RemotePeer.start(shared, Launcher.readOnlyContainer())) {
            Peers.roundTrip("memfd", shared, consumer);
        }
        try (RemotePeer consumer = RemotePeer.start(shared, Launcher.readOnlyContainer())) {
            consumer.open();
            var refused = consumer.child().callExpectingFailure("pool", "memfd");
            assertThat(refused.type()).isEqualTo("NotSupportedException");
            assertThat(refused.message()).contains("plugin 'memfd' provides no memory (capability MEMORY) here: ")
                    .contains("is on a read-only mount").contains("without :ro");
            assertThat(java.util.Arrays.stream(ChildJvm.parseFields(consumer.child().call("worker")).get("transports").split(","))
                    .filter(t -> !t.isBlank()).toList())
                    .as("a worker opens over the other selected transports (the test plugins here)").isNotEmpty().doesNotContain("memfd");
            consumer.closeConduit();
            consumer.open("transports=memfd");
            var noWorker = consumer.child().callExpectingFailure("worker");
            assertThat(noWorker.message()).contains("no selected plugin provides a transport (capability AM) here; selected: [memfd]")
                    .contains("memfd offers none here: ").contains("is on a read-only mount");
            assertThat(consumer.exit()).as("the consumer's exit code").isZero();
        }
    }

    /**
     * The same consumer over posix: its chunk files open there for reading only, so imports map
     * them read-only (posix used to be unavailable there, every import refused with EROFS). The
     * consumer reads what the host wrote; a write through its region is refused and reaches
     * nothing; a pool over posix is refused naming the read-only mount.
     */
    @org.junit.jupiter.api.Test
    void aConsumerWithAReadOnlyMountOfTheSharedDirectoryReadsTheHostsPosixRegions(@TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemotePeer consumer = RemotePeer.start(shared, Launcher.readOnlyContainer());
             dev.conduit.Conduit producer = Peers.conduit(shared, "posix");
             dev.conduit.Pool pool = producer.pool("posix")) {
            consumer.open();
            dev.conduit.Region region = pool.allocate(1 << 20);
            Patterns.fill(region.segment(), 7);
            assertThat(consumer.importRegion("r", region.exportHandle())).isEqualTo(1 << 20);
            consumer.assertPattern("r", 7);
            ChildJvm.Failure write = consumer.child().callExpectingFailure("fill", "r", 8);
            assertThat(write.type()).isEqualTo("IllegalArgumentException");
            assertThat(write.message()).contains("read-only");
            assertThat(Patterns.firstMismatch(region.segment(), 7)).as("first byte the consumer changed").isEqualTo(-1);
            ChildJvm.Failure noPool = consumer.child().callExpectingFailure("pool", "posix");
            assertThat(noPool.type()).isEqualTo("NotSupportedException");
            assertThat(noPool.message()).contains("plugin 'posix' provides no memory (capability MEMORY) here: ")
                    .contains("is on a read-only mount").contains("without :ro");
            consumer.release("r");
            consumer.closeConduit();
            assertThat(consumer.exit()).as("the consumer's exit code").isZero();
            region.close();
        }
    }
}
