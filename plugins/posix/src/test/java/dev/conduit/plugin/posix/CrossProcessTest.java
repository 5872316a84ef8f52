package dev.conduit.plugin.posix;

import dev.conduit.linux.Linux;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/** A second JVM as producer or consumer: what integration tests do at scale, here for this plugin alone. */
class CrossProcessTest {

    private static final long CHILD_TIMEOUT_SECONDS = 120; // a hung child fails the test instead of hanging the build
    /** {@link PosixChild}'s command that reaches into {@code dev.conduit.shm}, the only one whose JVM opens that package to it. */
    private static final String PEER_LEASE = "peer-lease";

    @TempDir(factory = ShmTempDirFactory.class)
    Path shared;

    private final PosixPlugin plugin = new PosixPlugin();

    /**
     * A container whose /dev/shm is larger than its memory limit: a chunk on a file system in
     * memory larger than what the process's memory cgroup lets it take is refused, naming the
     * limit's file and the remedy, where the free space alone let it through and writing it brought
     * the cgroup's OOM killer. A JVM in a cgroup of 256 MiB made here is refused 512 MiB in /dev/shm
     * and given 16 MiB.
     */
    @Test
    void aChunkInMemoryLargerThanTheProcesssMemoryCgroupLetsItTakeIsRefusedNamingTheLimit() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("making a memory cgroup needs root").isZero();
        long mib = 1 << 20;
        try (dev.conduit.tck.MemoryCgroup cgroup = dev.conduit.tck.MemoryCgroup.create(256 * mib)) {
            Ended refused = run(cgroup.wrapper(), "allocate", shared.toString(), Long.toString(512 * mib));
            assertThat(refused.exitCode()).as("exit code (3: refused); stdout %s, stderr %s", refused.output(), refused.errors()).isEqualTo(3);
            assertThat(refused.errors()).startsWith("cannot allocate a posix chunk in " + shared + " (a file system in memory) of "
                    + 512 * mib + " bytes: this process's memory cgroup lets it take only ")
                    .contains("a limit of " + 256 * mib + " bytes in " + cgroup.limitFile()).contains("OOM killer")
                    .contains("posix.queue.size").contains("to a directory on disk");
            Ended allocated = run(cgroup.wrapper(), "allocate", shared.toString(), Long.toString(16 * mib));
            assertThat(allocated.output().strip()).as("stderr %s", allocated.errors()).isEqualTo("allocated");
        }
        assertThat(ProcessResources.files(shared)).as("files left").isEmpty();
    }

    @SuppressWarnings("try") // providers only have to be open
    @Test
    void theFilesOfAKilledProducerAreReclaimedByTheNextProvider() throws Exception {
        Process child = start("produce", shared.toString());
        IpcImporter importer = plugin.ipcImporter(TestContext.of(shared));
        byte[] payload;
        long length;
        try {
            String[] export = readLine(child).split(" ");
            payload = HexFormat.of().parseHex(export[0]);
            length = Long.parseLong(export[1]);
            try (ChunkMapping mapping = importer.map(reader(payload), length)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(1234L);
            }
            assertThat(ProcessResources.files(shared)).hasSize(2); // its lease and its chunk
        } finally {
            child.destroyForcibly(); // SIGKILL: no close, no shutdown hook; the kernel drops its flock
            finish(child);
        }
        assertThat(ProcessResources.files(shared)).hasSize(2);

        try (MemoryProvider next = plugin.openMemoryProvider(TestContext.of(shared))) {
            assertThat(ProcessResources.files(shared)).singleElement().asString().endsWith(".lease");
            assertThatThrownBy(() -> importer.map(reader(payload), length))
                    .hasMessageStartingWith("export gone: ")
                    .hasMessageContaining("freed the chunk or died");
        }
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    /**
     * A sender killed with its connection kept (no CLOSE, no close of anything; the kernel drops
     * its lock): its messages, small and large, name one key, for which the receiver gives the
     * address the sender printed; once a liveness check finds it dead and its messages read, the
     * sink is told once, and the key has no address from then on.
     */
    @Test
    void aKilledSendersConnectionIsToldClosedOnceAndItsAddressIsGone() throws Exception {
        List<Long> keys = new ArrayList<>();
        List<Long> closed = new ArrayList<>();
        dev.conduit.spi.MessageSink sink = new dev.conduit.spi.MessageSink() {
            @Override
            public void onMessage(int id, java.lang.foreign.MemorySegment headerBuffer, long headerOffset, int headerLength,
                                  java.lang.foreign.MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
                throw new AssertionError("message " + id + " delivered without its sender's key");
            }

            @Override
            public void onMessage(int id, java.lang.foreign.MemorySegment headerBuffer, long headerOffset, int headerLength,
                                  java.lang.foreign.MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
                keys.add(sender);
            }

            @Override
            public void onSenderClosed(long sender) {
                closed.add(sender);
            }
        };
        try (dev.conduit.spi.Transport receiver = plugin.openTransport(TestContext.of(shared, "posix.liveness.interval", "1ms")
                .forTransport(dev.conduit.spi.ThreadMode.SINGLE, sink))) {
            Process child = start("send", shared.toString(), HexFormat.of().formatHex(receiver.address()));
            byte[] senderAddress;
            try {
                senderAddress = HexFormat.of().parseHex(readLine(child));
                for (int i = 0; i < 1_000_000 && keys.size() < 2; i++) progressOrPause(receiver);
                assertThat(keys).as("messages 1 and 2").hasSize(2);
                assertThat(keys.get(1)).isEqualTo(keys.getFirst());
                assertThat(receiver.senderAddress(keys.getFirst())).isEqualTo(senderAddress);
                assertThat(closed).as("while the sender lives").isEmpty();
            } finally {
                child.destroyForcibly(); // SIGKILL: no CLOSE, no close; the kernel drops its flock
                finish(child);
            }
            for (int i = 0; i < 1_000_000 && closed.isEmpty(); i++) progressOrPause(receiver);
            assertThat(closed).containsExactly(keys.getFirst());
            assertThat(receiver.senderAddress(keys.getFirst())).isNull();
            for (int i = 0; i < 1000; i++) progressOrPause(receiver);
            assertThat(closed).as("told once").hasSize(1);
        }
    }

    /**
     * A payload the receiver keeps in a sender's bounce ring ({@code Transport.keepDelivered}, for
     * {@code Message.keepPayload()}) outlives that sender's death: once a liveness check forgot the
     * killed sender's connection, the payload is still there, intact, and the ring's mapping goes
     * only when the payload is released, at the next progress(). It used to be unmapped with the
     * connection.
     */
    @Test
    void aPayloadKeptInTheRingOfASenderThatIsKilledStaysReadableAndItsRingIsUnmappedOnceReleased() throws Exception {
        List<Long> closed = new ArrayList<>();
        List<java.lang.foreign.MemorySegment> kept = new ArrayList<>();
        List<Runnable> releases = new ArrayList<>();
        dev.conduit.spi.Transport[] self = new dev.conduit.spi.Transport[1];
        dev.conduit.spi.MessageSink sink = new dev.conduit.spi.MessageSink() {
            @Override
            public void onMessage(int id, java.lang.foreign.MemorySegment headerBuffer, long headerOffset, int headerLength,
                                  java.lang.foreign.MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
                throw new AssertionError("message " + id + " delivered without its sender's key");
            }

            @Override
            public void onMessage(int id, java.lang.foreign.MemorySegment headerBuffer, long headerOffset, int headerLength,
                                  java.lang.foreign.MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
                Runnable release = self[0].keepDelivered();
                if (id == 1) {
                    assertThat(release).as("an inline payload: the runtime copies it").isNull();
                    return;
                }
                assertThat(release).as("a payload in the sender's bounce ring").isNotNull();
                releases.add(release);
                kept.add(payloadBuffer.asSlice(payloadOffset, payloadLength));
            }

            @Override
            public void onSenderClosed(long sender) {
                closed.add(sender);
            }
        };
        try (dev.conduit.spi.Transport receiver = plugin.openTransport(TestContext.of(shared, "posix.liveness.interval", "1ms")
                .forTransport(dev.conduit.spi.ThreadMode.SINGLE, sink))) {
            self[0] = receiver;
            long receiverAlone = ProcessResources.mappingsOf(shared);
            Process child = start("send", shared.toString(), HexFormat.of().formatHex(receiver.address()));
            try {
                readLine(child);
                for (int i = 0; i < 1_000_000 && kept.isEmpty(); i++) progressOrPause(receiver);
                assertThat(kept).as("the large message, kept").hasSize(1);
            } finally {
                child.destroyForcibly(); // SIGKILL: its ring's file is reclaimed; this process's mapping of it is what is left
                finish(child);
            }
            for (int i = 0; i < 1_000_000 && closed.isEmpty(); i++) progressOrPause(receiver);
            assertThat(closed).as("the dead sender's connection, forgotten").hasSize(1);
            for (int i = 0; i < 1000; i++) progressOrPause(receiver);
            assertThat(kept.getFirst().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).as("the kept payload, intact")
                    .isEqualTo(PosixChild.largePayload());
            assertThat(ProcessResources.mappingsOf(shared)).as("the dead sender's ring, kept mapped").isEqualTo(receiverAlone + 1);

            Thread other = new Thread(releases.getFirst(), "releasing");
            other.start();
            other.join();
            releases.getFirst().run(); // the runtime runs it once; a second run changes nothing either
            receiver.progress(); // hands the ring's unmap to the transport's mapping thread
            for (int i = 0; i < 100_000 && ProcessResources.mappingsOf(shared) > receiverAlone; i++) progressOrPause(receiver);
            assertThat(ProcessResources.mappingsOf(shared)).as("once the payload is released").isEqualTo(receiverAlone);
            assertThatThrownBy(() -> kept.getFirst().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0))
                    .as("a view of the unmapped ring").isInstanceOf(IllegalStateException.class);
        }
    }

    private static void progressOrPause(dev.conduit.spi.Transport receiver) {
        if (receiver.progress() == 0) java.util.concurrent.locks.LockSupport.parkNanos(50_000);
    }

    /**
     * An importer in a user namespace (a rootless container, here root mapped to itself) sees a
     * file of a user its namespace does not map as the overflow uid, 65534, which stands for every
     * unmapped user: the refusal says so, and does not advise trusting 65534.
     */
    @Test
    void aFileOfAUserTheImportersUserNamespaceDoesNotMapIsRefusedWithoutAdvisingToTrustTheOverflowUid() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("root can give files away").isZero();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            byte[] payload = provider.export(chunk);
            Path file = shared.resolve(PosixImporterTest.fileName(payload));
            Files.setAttribute(file, "unix:uid", 4321);
            try {
                // 0600: the namespace's root may not open it (it has no capability over users the namespace does not map).
                assertThat(importInUserNamespace(payload, provider.pageSize()))
                        .contains("shows as uid 65534, which in this process's user namespace stands for every user the namespace "
                                + "does not map").contains("run the producer as a user this namespace maps")
                        .doesNotContain("run producer and consumer as the same user");
                // Readable by all: it opens, and its owner is refused whatever the trusted uids say.
                Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
                assertThat(importInUserNamespace(payload, provider.pageSize()))
                        .contains("shows as uid 65534, which in this process's user namespace stands for every user the namespace "
                                + "does not map").contains("Trusting 65534 here would trust all of them").doesNotContain("add the uid to");
            } finally {
                Files.setAttribute(file, "unix:uid", 0); // the provider's close removes it
            }
        }
    }

    /**
     * An importer that runs as the overflow uid of its user namespace (a container run as nobody;
     * here root mapped to 65534) sees its own files and those of every user the namespace does not
     * map as that one uid. It maps a file it proves its own (it may set {@code O_NOATIME} on it,
     * which only the owner may), changing nothing of the file (its ctime stays: {@code fchown} to
     * itself, the proof before, changed it), and refuses another user's, also one that anybody may
     * open, where it mapped it as its own before.
     */
    @Test
    void anImporterRunningAsTheOverflowUidMapsItsOwnFilesAndRefusesThoseOfUnmappedUsers() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("root can give files away").isZero();
        List<String> asOverflowUid = List.of("unshare", "--user", "--map-user=65534", "--map-group=65534", "--");
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            chunk.segment().set(JAVA_LONG, 0, 4242L);
            byte[] payload = provider.export(chunk);
            String[] args = {"import", shared.toString(), HexFormat.of().formatHex(payload), Long.toString(provider.pageSize())};

            Path file = shared.resolve(PosixImporterTest.fileName(payload));
            Object changed = Files.getAttribute(file, "unix:ctime");
            Ended own = run(asOverflowUid, args);
            assertThat(own.exitCode()).as(own.errors()).isZero();
            assertThat(own.output().trim()).isEqualTo("4242");
            assertThat(chunk.segment().get(JAVA_LONG, 8)).as("written by the importer").isEqualTo(4243L);
            if (Files.getFileStore(shared).type().equals("tmpfs")) {
                // Where the child's write through its mapping updates the times (a disk file system's page_mkwrite), it tells nothing.
                assertThat(Files.getAttribute(file, "unix:ctime")).as("the proof changed nothing of the file").isEqualTo(changed);
            }

            Files.setAttribute(file, "unix:uid", 4321);
            try {
                Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
                Ended other = run(asOverflowUid, args);
                assertThat(other.exitCode()).as("mapped a file of an unmapped user as its own").isNotZero();
                assertThat(other.errors()).contains("it shows as uid 65534, this process's own, but this process runs as the overflow uid of its "
                                + "user namespace (uid 65534 here, 0 in the parent user namespace)")
                        .contains("(fcntl: EPERM)").contains("the file belongs to one of those users")
                        .contains("run this process as a uid other than 65534");
                assertThat(Files.getAttribute(file, "unix:uid")).as("the refused look changed nothing").isEqualTo(4321);
            } finally {
                Files.setAttribute(file, "unix:uid", 0); // the provider's close removes it
            }
        }
    }

    /**
     * A process whose real and effective uids differ (started through a set-user-id program that
     * set only the effective one) creates its files as the effective uid, and peers see that one:
     * it is this process's own user for the owner check. Judged by the real uid, it refused its own
     * user's file as another's.
     */
    @Test
    void anImporterWhoseEffectiveUidOwnsTheFileMapsItWhateverItsRealUid() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("setting another real uid takes root").isZero();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            chunk.segment().set(JAVA_LONG, 0, 5151L);
            byte[] payload = provider.export(chunk);
            Ended child = run(List.of("setpriv", "--ruid=4321", "--euid=0", "--"),
                    "import", shared.toString(), HexFormat.of().formatHex(payload), Long.toString(provider.pageSize()));
            assertThat(child.exitCode()).as(child.errors()).isZero();
            assertThat(child.output().trim()).isEqualTo("5151");
        }
    }

    /**
     * The same importer given the shared directory as a read-only mount (a container's
     * {@code -v DIR:DIR:ro}, here a bind mount in a mount namespace of its own): it proves its own
     * file there too and maps it read-only, as any importer through a read-only mount, and still
     * refuses an unmapped user's. Before, its proof ({@code fchown} to itself) failed there with
     * {@code EROFS}, and it refused its own file.
     */
    @Test
    void anImporterRunningAsTheOverflowUidProvesItsOwnFileThroughAReadOnlyMount() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("root can mount and give files away").isZero();
        List<String> readOnlyAsOverflowUid = List.of("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && "
                        + "exec unshare --user --map-user=65534 --map-group=65534 -- \"$@\"", shared.toString());
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            chunk.segment().set(JAVA_LONG, 0, 4242L);
            byte[] payload = provider.export(chunk);
            String[] args = {"import", shared.toString(), HexFormat.of().formatHex(payload), Long.toString(provider.pageSize())};

            Ended own = run(readOnlyAsOverflowUid, args);
            assertThat(own.exitCode()).as(own.errors()).isZero();
            assertThat(own.output().trim()).isEqualTo("4242 read-only");

            Path file = shared.resolve(PosixImporterTest.fileName(payload));
            Files.setAttribute(file, "unix:uid", 4321);
            try {
                Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
                Ended other = run(readOnlyAsOverflowUid, args);
                assertThat(other.exitCode()).as("mapped a file of an unmapped user as its own").isNotZero();
                assertThat(other.errors()).contains("it shows as uid 65534, this process's own").contains("(fcntl: EPERM)")
                        .contains("the file belongs to one of those users");
            } finally {
                Files.setAttribute(file, "unix:uid", 0); // the provider's close removes it
            }
        }
    }

    /**
     * A worker that runs as the overflow uid of its user namespace judges a sender alive by a held
     * lease of its own user, which every unmapped user's file shows as too: a locked file of such
     * a user under a sender's lease name is no lease to it, while its own user's locked lease is.
     * Before, the planted file kept a dead sender alive to the worker, and its taken record
     * blocked the worker's queue for every sender.
     */
    @Test
    void aWorkerRunningAsTheOverflowUidTakesNoLockedFileOfAnUnmappedUserForALease() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("root can give files away").isZero();
        dev.conduit.linux.Libc libc = Linux.libc();
        String prefix = "conduit-test";
        String lease = prefix + "-0123456789abcdef0123456789abcdef.lease";
        String connection = "0123456700000001";
        List<String> asOverflowUid = List.of("unshare", "--user", "--map-user=65534", "--map-group=65534", "--");
        Path file = shared.resolve(lease);
        try (dev.conduit.linux.FileDescriptor locked = libc.open(file.toString(),
                dev.conduit.linux.OpenFlags.O_RDWR | dev.conduit.linux.OpenFlags.O_CREAT | dev.conduit.linux.OpenFlags.O_EXCL, 0666)) {
            libc.flock(locked, dev.conduit.linux.LockFlags.LOCK_EX);
            Ended own = run(asOverflowUid, "held-lease", shared.toString(), prefix, connection, "65534");
            assertThat(own.exitCode()).as(own.errors()).isZero();
            assertThat(own.output().trim()).as("its own user's held lease").isEqualTo("held=" + lease);

            Files.setAttribute(file, "unix:uid", 4321);
            try {
                Ended planted = run(asOverflowUid, "held-lease", shared.toString(), prefix, connection, "65534");
                assertThat(planted.exitCode()).as(planted.errors()).isZero();
                assertThat(planted.output().trim()).as("an unmapped user's locked file").isEqualTo("held=null");
            } finally {
                Files.delete(file);
            }
        }
    }

    /**
     * The same planted file, met by the look a worker running as the overflow uid takes when it reads
     * a sender's CONNECT ({@code ShmTransport}'s {@code peerLeases.acquire}, and its liveness checks'
     * {@code senderAlive} after it): {@code PeerLeases#acquire} compares the file's owner with the
     * worker's user and nothing more, so an unmapped user's locked file, which shows as that uid
     * too, is taken for the sender's lease and keeps a dead sender alive for good, its taken record
     * holding the head of the queue for every sender. guarantees.md says a worker so placed takes
     * such a file for a lease only once it proves it its own ({@code O_NOATIME}), as
     * {@code OwnerLease.heldLeaseOf} does (the test above) for a sender it does not know.
     *
     * <p>The child calls {@code PeerLeases#acquire} by reflection (its JVM alone opens
     * {@code dev.conduit.shm} to this module: {@link #start}): the real path, a worker reading a
     * sender's CONNECT after the lease it names was replaced by the planted file, needs a
     * receiving worker in a child that waits for the test between the sender's send and its own
     * read, which no child command runs, and the worker reads a CONNECT as soon as it comes.
     */
    @Test
    void aWorkerRunningAsTheOverflowUidWatchesNoLockedFileOfAnUnmappedUserForTheLeaseOfASenderThatConnected() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("root can give files away").isZero();
        dev.conduit.linux.Libc libc = Linux.libc();
        String lease = "conduit-test-0123456789abcdef0123456789abcdef.lease";
        List<String> asOverflowUid = List.of("unshare", "--user", "--map-user=65534", "--map-group=65534", "--");
        Path file = shared.resolve(lease);
        try (dev.conduit.linux.FileDescriptor locked = libc.open(file.toString(),
                dev.conduit.linux.OpenFlags.O_RDWR | dev.conduit.linux.OpenFlags.O_CREAT | dev.conduit.linux.OpenFlags.O_EXCL, 0666)) {
            libc.flock(locked, dev.conduit.linux.LockFlags.LOCK_EX);
            Ended own = run(asOverflowUid, PEER_LEASE, shared.toString(), lease, "65534");
            assertThat(own.exitCode()).as(own.errors()).isZero();
            assertThat(own.output().trim()).as("its own user's held lease").isEqualTo("watched alive=true");

            Files.setAttribute(file, "unix:uid", 4321);
            try {
                Ended planted = run(asOverflowUid, PEER_LEASE, shared.toString(), lease, "65534");
                assertThat(planted.exitCode()).as(planted.errors()).isZero();
                assertThat(planted.output().trim()).as("an unmapped user's locked file").startsWith("refused: ");
            } finally {
                Files.delete(file);
            }
        }
    }

    /**
     * The root of a container's own user namespace is root only over the files of users the
     * namespace maps: a lease of a user it does not map, planted readable (an owner's own is
     * {@code 0600}, which does not open for it), in a sticky directory of such a user, is another
     * user's to its reclaim, as to that of any user but the initial namespace's root, and is left
     * unjudged. Taken for a dead owner's because the reclaim ran as uid 0, its removal was refused
     * ({@code EPERM}): a WARNING at every reclaim in the container, every provider's and worker's
     * open there, and a {@code conduit reclaim} that exited with 1.
     */
    @Test
    void aReclaimByTheRootOfAUserNamespaceLeavesALeaseOfAUserItDoesNotMapUnjudged() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("root can give files away").isZero();
        Path sticky = Files.createDirectory(shared.resolve("sticky"));
        assertThat(new ProcessBuilder("chmod", "1777", sticky.toString()).inheritIO().start().waitFor()).as("chmod 1777").isZero();
        Files.setAttribute(sticky, "unix:uid", 54322);
        String lease = "conduit-test-0123456789abcdef0123456789abcdef.lease";
        Path planted = Files.createFile(sticky.resolve(lease)); // unlocked, and readable by all: 0644
        Files.setPosixFilePermissions(planted, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        Files.setAttribute(planted, "unix:uid", 54321);

        Ended reclaim = run(List.of("unshare", "--user", "--map-root-user", "--"), "reclaim", sticky.toString(), "conduit-test");
        assertThat(reclaim.exitCode()).as(reclaim.errors()).isZero();
        assertThat(reclaim.output().strip()).as("what the reclaim of the namespace's root tried").isEqualTo("reclaimed");
        assertThat(planted).exists();
    }

    /** What a child importing {@code payload} as root of a new user namespace (mapped to root) printed to stderr; it must fail. */
    private String importInUserNamespace(byte[] payload, long length) throws Exception {
        Ended child = run(List.of("unshare", "--user", "--map-root-user", "--"),
                "import", shared.toString(), HexFormat.of().formatHex(payload), Long.toString(length));
        assertThat(child.exitCode()).as(child.errors()).isNotZero();
        return child.errors();
    }

    private record Ended(int exitCode, String output, String errors) {}

    /** Runs a child through {@code wrapper} to its end, its input closed: its exit code, stdout and stderr. */
    private static Ended run(List<String> wrapper, String... args) throws Exception {
        Process child = start(wrapper, args);
        String output;
        String errors;
        try {
            child.getOutputStream().close();
            // Both read to their ends at once: a child that fills one pipe while the other is read would wait for ever.
            java.util.concurrent.CompletableFuture<byte[]> out = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return child.getInputStream().readAllBytes();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            errors = new String(child.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            output = new String(out.join(), StandardCharsets.UTF_8);
        } finally {
            finish(child);
        }
        return new Ended(child.exitValue(), output, errors);
    }

    /** A JVM on this test's module path, with this module's test classes patched in, running {@link PosixChild}. */
    private static Process start(String... args) throws Exception {
        return start(List.of(), args);
    }

    /** As {@link #start(String...)}, through {@code wrapper} (a command that runs the rest of its arguments). */
    private static Process start(List<String> wrapper, String... args) throws Exception {
        Path testClasses = Path.of(PosixChild.class.getResource("PosixChild.class").toURI()).getParent().getParent().getParent()
                .getParent().getParent();
        List<String> command = new ArrayList<>(wrapper);
        command.addAll(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny"));
        if (args[0].equals(PEER_LEASE)) {
            // Its reflection reaches PeerLeases, package-private in dev.conduit.shm; no other child's code may lean on the opening.
            command.addAll(List.of("--add-opens", "dev.conduit.shm/dev.conduit.shm=dev.conduit.plugin.posix"));
        }
        command.addAll(List.of(
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.posix=" + testClasses,
                "-cp", TestContext.location().toString(), "--add-reads", "dev.conduit.plugin.posix=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.posix/" + PosixChild.class.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.PIPE).start();
    }

    private static String readLine(Process child) throws IOException {
        BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (line == null) {
            throw new IllegalStateException("the child printed nothing: " + errors(child));
        }
        return line;
    }

    private static String errors(Process child) {
        try {
            child.waitFor(CHILD_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return new String(child.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException | InterruptedException e) {
            return "(stderr unreadable: " + e + ")";
        }
    }

    /** Waits for the child to exit and closes the pipes to it, so that no descriptor of it outlives the test. */
    private static void finish(Process child) throws Exception {
        assertThat(child.waitFor(CHILD_TIMEOUT_SECONDS, TimeUnit.SECONDS)).as("child exited").isTrue();
        child.getOutputStream().close();
        child.getInputStream().close();
        child.getErrorStream().close();
    }

    private static PayloadReader reader(byte[] payload) {
        return new PayloadReader(payload, 0, payload.length, "payload.");
    }
}
