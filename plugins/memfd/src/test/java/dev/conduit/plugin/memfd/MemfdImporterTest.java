package dev.conduit.plugin.memfd;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.MemfdFlags;
import dev.conduit.linux.OpenFlags;
import dev.conduit.linux.PeerCredentials;
import dev.conduit.linux.ReceivedMessage;
import dev.conduit.linux.Seals;
import dev.conduit.linux.SocketFlags;
import dev.conduit.linux.SocketPair;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.shm.UserNamespace;
import dev.conduit.tck.BlockedCalls;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The importer against a real provider and against fake servers: shared memory both ways, stale
 * exports, every kind of bad payload, a planted symlink, unsealed or wrong-sized memfds, refusals,
 * timeouts, and that nothing stays open after any of it. The importer always comes from its own
 * plugin instance, which never opened a provider.
 */
class MemfdImporterTest {
    private static final long SIZE = 64 * 1024;

    private final Libc libc = Linux.libc();

    @TempDir
    Path shared;

    private MemoryProvider provider;
    private IpcImporter importer;

    @BeforeEach
    void open() {
        provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared));
        importer = new MemfdPlugin().ipcImporter(TestContext.of(shared));
    }

    @AfterEach
    void close() {
        provider.close();
    }

    private static ChunkMapping map(IpcImporter importer, byte[] payload, long chunkLength) {
        return importer.map(new PayloadReader(payload, 0, payload.length, "payload."), chunkLength);
    }

    // ---------------------------------------------------------------- working imports

    @Test
    void anImportedChunkSharesMemoryWithTheProducerBothWays() {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        chunk.segment().set(JAVA_LONG, 0, 0xC0FFEEL);

        try (ChunkMapping mapping = map(importer, payload, SIZE)) {
            MemorySegment imported = mapping.segment();
            assertThat(imported.byteSize()).isEqualTo(SIZE);
            assertThat(imported.get(JAVA_LONG, 0)).isEqualTo(0xC0FFEEL);
            imported.set(JAVA_LONG, SIZE - 8, 77);
            assertThat(chunk.segment().get(JAVA_LONG, SIZE - 8)).isEqualTo(77);
            assertThat(imported.address()).isNotEqualTo(chunk.segment().address());
            assertThat(mapping.mayFault()).as("sealed against shrinking: RMA on it is spared the fault delivery").isFalse();
        }
    }

    /**
     * The exchange with the fd server, which waits in {@code poll} for its answer, is made through
     * the context's {@code blockingCall} (which the runtime makes on a platform thread for a virtual
     * thread): once per import, handing back the descriptor that is then mapped, and a refusal's
     * exception unchanged. The checks before it (opening the socket file) and the mapping after it
     * are made outside it.
     */
    @Test
    void theExchangeWithTheFdServerIsMadeThroughTheContextsBlockingCall() {
        TestContext test = TestContext.of(shared);
        List<String> calls = new java.util.concurrent.CopyOnWriteArrayList<>();
        dev.conduit.spi.PluginContext context = new dev.conduit.spi.PluginContext() {
            @Override
            public dev.conduit.spi.Config config() {
                return test.config();
            }

            @Override
            public Path sharedDirectory() {
                return test.sharedDirectory();
            }

            @Override
            public System.Logger logger() {
                return test.logger();
            }

            @Override
            public <T> T blockingCall(java.util.function.Supplier<T> call) {
                try {
                    T result = call.get();
                    calls.add(result instanceof FileDescriptor ? "descriptor" : String.valueOf(result));
                    return result;
                } catch (RuntimeException e) {
                    calls.add("threw " + e.getMessage());
                    throw e;
                }
            }
        };
        IpcImporter throughContext = new MemfdPlugin().ipcImporter(context);
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        try (ChunkMapping mapping = map(throughContext, payload, SIZE)) {
            assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
        }
        assertThat(calls).containsExactly("descriptor");
        provider.free(chunk);
        assertThatThrownBy(() -> map(throughContext, payload, SIZE)).hasMessageStartingWith("export gone");
        assertThat(calls).hasSize(2).last().asString().startsWith("threw export gone");
    }

    /**
     * The kernel drops a passed descriptor it cannot install and says only MSG_CTRUNC. When this
     * process is out of descriptors (here: a probe open fails with EMFILE) the failure names EMFILE
     * and the remedy, so that a receiver takes it for a shortage that passes; otherwise a security
     * module refused the file, which does not pass.
     */
    @Test
    void aDescriptorTheKernelDroppedIsReportedAsAShortageOnlyWhenDescriptorsRunOut() throws InterruptedException {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk); // starts the provider's fd server: before the count
        long before = Leaks.openFdsWhenQuiet();
        assertThatThrownBy(() -> map(new MemfdImporter(droppingPassedDescriptors(true), shared, 2_000_000_000L), payload, SIZE))
                .isInstanceOf(ConduitException.class).hasMessageContaining("MSG_CTRUNC").hasMessageContaining("EMFILE")
                .hasMessageContaining("ulimit -n").satisfies(e -> assertThat(e.getCause()).isInstanceOf(ErrnoException.class));
        assertThatThrownBy(() -> map(new MemfdImporter(droppingPassedDescriptors(false), shared, 2_000_000_000L), payload, SIZE))
                .isInstanceOf(ConduitException.class).hasMessageContaining("MSG_CTRUNC").hasMessageContaining("security module")
                .satisfies(e -> assertThat(e.getCause()).isNull());
        assertThat(Leaks.openFdsSettlingAt(before)).isEqualTo(before);
    }

    /**
     * An importer with one descriptor left opens the shared directory and then fails to open the
     * socket file (O_PATH) with EMFILE: that was "cannot check the producer's socket ...: EMFILE",
     * without the limit to raise that every other shortage names.
     */
    @Test
    void aSocketFileThatCannotBeOpenedForWantOfDescriptorsSaysToRaiseTheLimit() {
        byte[] payload = provider.export(provider.allocate(SIZE));
        Libc outOfDescriptors = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("openBeneath") && ((int) args[2] & OpenFlags.O_PATH) != 0) {
                        throw new ErrnoException("openat2", Errno.EMFILE, String.valueOf(args[1]), "injected by the test");
                    }
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        assertThatThrownBy(() -> map(new MemfdImporter(outOfDescriptors, shared, 2_000_000_000L), payload, SIZE))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining(shared.toString())
                .hasMessageContaining("EMFILE")
                .hasMessageContaining("raise its open-file limit (ulimit -n");
    }

    /**
     * The real libc, except that passed descriptors are dropped as the kernel drops those it
     * cannot install; and, if asked, the importer's probe open (of /dev/null) fails with EMFILE.
     */
    private Libc droppingPassedDescriptors(boolean outOfDescriptors) {
        return (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (outOfDescriptors && method.getName().equals("open") && "/dev/null".equals(args[0])) {
                        throw new ErrnoException("open", Errno.EMFILE, String.valueOf(args[0]), "injected by the test");
                    }
                    Object result;
                    try {
                        result = method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                    if (result instanceof ReceivedMessage m && !m.fds().isEmpty()) {
                        m.fds().forEach(FileDescriptor::close);
                        return new ReceivedMessage(m.bytes(), List.of(), true, 0);
                    }
                    return result;
                });
    }

    /**
     * The connection's socket failing to close once the chunk's descriptor arrived ({@code EBADF}:
     * something closed its number; {@code EIO}) left the received descriptor returned to no one:
     * open, and the chunk's memory held, until the JVM's end. It is closed now, and the failure
     * names the producer's socket and the errno (as {@code PosixImporter.map} does for its
     * directory, ec1f56c0).
     */
    @Test
    void aSocketThatFailsToCloseAfterTheChunksDescriptorArrivedLeavesThatDescriptorClosed() {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        AtomicInteger received = new AtomicInteger(-1);
        Libc closingTheSocket = FailingLibc.after((call, args, result) -> {
            if (result instanceof ReceivedMessage m && !m.fds().isEmpty()) {
                received.set(m.fds().getFirst().fd());
                // Its number closed behind its back: the importer's own close of it then fails with EBADF.
                FileDescriptor.adopt(((FileDescriptor) args[0]).fd(), "the importer's socket").close();
            }
            return result;
        });

        Throwable failure = org.assertj.core.api.Assertions.catchThrowable(
                () -> map(new MemfdImporter(closingTheSocket, shared, 2_000_000_000L), payload, SIZE));
        assertThat(received.get()).as("the descriptor arrived").isNotNegative();
        assertThat(Files.exists(Path.of("/proc/self/fd/" + received.get()), java.nio.file.LinkOption.NOFOLLOW_LINKS))
                .as("the received descriptor, fd %d, closed", received.get()).isFalse();
        assertThat(failure).isInstanceOf(ConduitException.class).hasMessageContaining("EBADF").hasMessageContaining(shared.toString());
    }

    @Test
    void closingTheMappingUnmapsItAndIsIdempotent() {
        Chunk chunk = provider.allocate(SIZE);
        ChunkMapping mapping = map(importer, provider.export(chunk), SIZE);
        mapping.close();
        mapping.close();
        assertThatThrownBy(() -> mapping.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        assertThat(chunk.segment().get(JAVA_LONG, 0)).isZero();
    }

    /**
     * An import's unmap is refused while another thread is inside a native call on its memory.
     * Until 2026-12-07 the mapping marked itself closed before it tried: it then read as
     * "unmapped" though it was still mapped, gave back the exporter's lease its looks kept open,
     * and every later close did nothing, so the mapping stayed for the life of the process.
     */
    @Test
    void aCloseThatCannotUnmapTheMappingLeavesItOpenAndALaterCloseUnmapsIt() throws Exception {
        Chunk chunk = provider.allocate(SIZE);
        ChunkMapping mapping = map(importer, provider.export(chunk), SIZE);
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), mapping.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(mapping::close).isInstanceOf(IllegalStateException.class);
            assertThat(mapping.toString()).as("still mapped").doesNotContain("unmapped");
            assertThat(Leaks.memfdMappings()).as("the chunk's and the import's").isEqualTo(2);
        }
        mapping.close();
        assertThat(mapping.toString()).endsWith(", unmapped");
        assertThatThrownBy(() -> mapping.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        assertThat(Leaks.memfdMappings()).as("the chunk's").isEqualTo(1);
    }

    /**
     * A free refused while another thread is inside a native call on the chunk revokes its export all
     * the same; unlike devdax's (whose table entry the free cleared), the memfd stays open, so a later
     * export publishes it again under a new token, and a later free releases it.
     */
    @Test
    void aFreeRefusedForABusyChunkRevokesItsExportAndALaterExportPublishesItAgain() throws Exception {
        Chunk chunk = provider.allocate(SIZE);
        byte[] revoked = provider.export(chunk);
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), chunk.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(IllegalStateException.class);
        }
        assertThatThrownBy(() -> map(importer, revoked, SIZE)).hasMessageStartingWith("export gone");
        chunk.segment().set(JAVA_LONG, 8, 7);
        try (ChunkMapping mapping = map(importer, provider.export(chunk), SIZE)) {
            assertThat(mapping.segment().get(JAVA_LONG, 8)).isEqualTo(7);
        }
        provider.free(chunk);
        assertThat(Leaks.memfdMappings()).as("nothing left mapped").isZero();
    }

    @Test
    void aMappingOutlivesTheFreeOfItsChunk() {
        Chunk chunk = provider.allocate(SIZE);
        try (ChunkMapping mapping = map(importer, provider.export(chunk), SIZE)) {
            mapping.segment().set(JAVA_LONG, 8, 5);
            provider.free(chunk);
            assertThat(mapping.segment().get(JAVA_LONG, 8)).isEqualTo(5);
        }
    }

    @Test
    void aConsumerThatSeesTheSharedDirectoryAtAnotherPathImportsToo(@TempDir Path elsewhere) throws Exception {
        // A container's bind mount, played by a symbolic link: the consumer's own shared.dir may be reached through one.
        Path view = Files.createSymbolicLink(elsewhere.resolve("mnt"), shared);
        IpcImporter otherView = new MemfdPlugin().ipcImporter(TestContext.of(view));
        Chunk chunk = provider.allocate(SIZE);
        chunk.segment().set(JAVA_LONG, 16, 99);
        try (ChunkMapping mapping = map(otherView, provider.export(chunk), SIZE)) {
            assertThat(mapping.segment().get(JAVA_LONG, 16)).isEqualTo(99);
        } finally {
            Files.delete(view);
        }
    }

    /**
     * A Docker volume seen from the host (/var/lib/docker/volumes/NAME/_data) or a Kubernetes
     * emptyDir (/var/lib/kubelet/pods/UID/volumes/...) is far longer than the 38 bytes a socket
     * path leaves a directory: the producer binds, and the consumer connects, through
     * /proc/self/fd. Both sides are long here, each its own view of one directory.
     */
    @Test
    void producerAndConsumerWhoseSharedDirectoryPathsAreTooLongForASocketAddressImportThroughTheirDescriptors(
            @TempDir Path elsewhere) throws Exception {
        Path longShared = Files.createDirectories(shared.resolve("volumes").resolve("d".repeat(100)).resolve("_data"));
        Path longView = Files.createSymbolicLink(elsewhere.resolve("v".repeat(120)), longShared);
        assertThat(longShared.toString().length()).as("the producer's path, longer than any socket address").isGreaterThan(SocketFlags.SUN_PATH_MAX);
        MemoryProvider longProvider = new MemfdPlugin().openMemoryProvider(TestContext.of(longShared));
        try {
            IpcImporter longImporter = new MemfdPlugin().ipcImporter(TestContext.of(longView));
            Chunk chunk = longProvider.allocate(SIZE);
            chunk.segment().set(JAVA_LONG, 8, 0x5EA1EDL);
            byte[] payload = longProvider.export(chunk); // starts the fd server: before the count
            assertThat(Leaks.files(longShared)).as("the fd server's socket, bound in the long directory itself")
                    .anyMatch(name -> name.endsWith(FdProtocol.SOCKET_SUFFIX));
            long descriptors = Leaks.openFdsWhenQuiet();
            try (ChunkMapping mapping = map(longImporter, payload, SIZE)) {
                assertThat(mapping.segment().get(JAVA_LONG, 8)).as("the chunk, imported through a path of %d bytes", longView.toString().length())
                        .isEqualTo(0x5EA1EDL);
            }
            assertThat(Leaks.openFdsSettlingAt(descriptors)).as("descriptors after the import (it held the directory and the socket file)")
                    .isEqualTo(descriptors);
            longProvider.free(chunk);
        } finally {
            longProvider.close();
            Files.delete(longView);
        }
        assertThat(Leaks.files(longShared)).as("files left in the long directory after close").isEmpty();
    }

    @Test
    void theMemfdAnImporterReceivesCannotBeResized() {
        Chunk chunk = provider.allocate(SIZE);
        MemfdPayload payload = MemfdPayload.decode(new PayloadReader(provider.export(chunk)));
        String socket = shared.resolve(payload.socketName()).toString();
        try (Wire.Reply reply = Wire.exchange(libc, socket, FdProtocol.request(payload.token()))) {
            assertThat(reply.status()).isEqualTo(FdProtocol.STATUS_OK);
            assertThat(FdProtocol.chunkLength(reply.bytes())).isEqualTo(SIZE);
            FileDescriptor memfd = reply.fds().getFirst();
            assertThat(libc.seals(memfd)).isEqualTo(Seals.FIXED_SIZE);
            for (long size : new long[] {0, SIZE / 2, SIZE * 2}) {
                assertThatThrownBy(() -> libc.ftruncate(memfd, size))
                        .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EPERM));
            }
            assertThatThrownBy(() -> libc.addSeals(memfd, Seals.F_SEAL_WRITE))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EPERM));
        }
    }

    // ---------------------------------------------------------------- stale exports, gone producers

    @Test
    void anExportFreedBeforeTheImportFailsAsGone() {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        provider.free(chunk);
        assertThatThrownBy(() -> map(importer, payload, SIZE))
                .isExactlyInstanceOf(ConduitException.class)
                .hasMessageStartingWith("export gone: the producer freed the chunk or closed its pool");
    }

    @Test
    void aWrongTokenIsRefusedWithStatusOne() {
        Chunk chunk = provider.allocate(SIZE);
        MemfdPayload real = MemfdPayload.decode(new PayloadReader(provider.export(chunk)));
        byte[] token = real.token();
        token[15] ^= 1;
        byte[] forged = new MemfdPayload(real.socketName(), token, real.directory()).encode();

        assertThatThrownBy(() -> map(importer, forged, SIZE)).hasMessageStartingWith("export gone");
        try (Wire.Reply reply = Wire.exchange(libc, shared.resolve(real.socketName()).toString(), FdProtocol.request(token))) {
            assertThat(reply.bytes()).containsExactly(FdProtocol.STATUS_UNKNOWN_TOKEN);
            assertThat(reply.fds()).isEmpty();
        }
    }

    @Test
    void anImportAfterTheProviderClosedFailsAsProducerGone() {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        MemfdPayload decoded = MemfdPayload.decode(new PayloadReader(payload));
        String socket = decoded.socketName();
        provider.close();
        var thrown = assertThatThrownBy(() -> map(importer, payload, SIZE))
                .hasMessageStartingWith("producer gone (its socket " + shared.resolve(socket) + " does not exist, nor does a held lease "
                        + "of its producer");
        if (decoded.directory().birthNanos() != Libc.NO_BIRTH_TIME) {
            // The handle names the directory this process looked in: no configuration to check.
            thrown.hasMessageContaining("of its producer, in the very directory the handle names (device ")
                    .hasMessageNotContaining("check that shared.dir");
        } else {
            thrown.hasMessageContaining("of its producer); ").hasMessageContaining("check that shared.dir");
        }
    }

    /** A payload of version 1 (before payloads named their directory) is taken; where its socket is not found, both causes are said. */
    @Test
    void aPayloadOfVersion1IsTakenItsDirectoryUnknown() {
        Chunk chunk = provider.allocate(SIZE);
        MemfdPayload current = MemfdPayload.decode(new PayloadReader(provider.export(chunk)));
        byte[] version1 = new MemfdPayload(current.socketName(), current.token(), null).encode();
        assertThat(version1[0]).isEqualTo((byte) 1);
        try (ChunkMapping mapping = map(importer, version1, SIZE)) {
            assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
        }
        provider.close();
        assertThatThrownBy(() -> map(importer, version1, SIZE))
                .hasMessageStartingWith("producer gone (its socket " + shared.resolve(current.socketName()) + " does not exist, nor does "
                        + "a held lease of its producer): ")
                .hasMessageContaining("If the producer is alive, check that shared.dir (CONDUIT_SHARED_DIR) shows this process the "
                        + "same directory as the producer's");
    }

    /**
     * An importer whose shared directory is not the producer's (started without the producer's
     * CONDUIT_SHARED_DIR, or a container that mounts it elsewhere) finds neither socket nor lease:
     * the failure says it looks in another directory than the producer, naming both and the key to
     * set. It used to say only that the producer closed its pool or exited, while the producer served
     * on, and later both that and the key to check, leaving the user to guess which.
     */
    @Test
    void anImportFromAnotherSharedDirectoryThanTheProducersSaysSoNamingBoth(@TempDir Path elsewhere) {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        IpcImporter wrongView = new MemfdPlugin().ipcImporter(TestContext.of(elsewhere));
        assertThatThrownBy(() -> map(wrongView, payload, SIZE))
                .isExactlyInstanceOf(ConduitException.class)
                .hasMessageStartingWith("cannot import: the handle names a socket of another shared directory than this process's "
                        + elsewhere + " (shared.dir (CONDUIT_SHARED_DIR)), where " + MemfdPayload.decode(new PayloadReader(payload))
                        .socketName() + " is not found (ENOENT): the producer's directory is device ")
                .hasMessageContaining(", this one device ")
                .hasMessageContaining(". Set shared.dir (CONDUIT_SHARED_DIR) in each process to the path at which it sees one directory");
        try (ChunkMapping mapping = map(importer, payload, SIZE)) {
            assertThat(mapping.segment().byteSize()).isEqualTo(SIZE); // the producer lives: its own directory's importer maps it
        }
        provider.free(chunk);
    }

    /**
     * A cleaner that removes the producer's socket from the shared directory (systemd-logind's
     * RemoveIPC, a tmpfiles rule) while the producer lives: an import meanwhile says so, not that
     * the producer is gone, and within a second or so the server binds the name again and imports
     * work. The server used to stay unreachable for the provider's life.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS)
    void aSocketRemovedWhileTheProducerLivesIsSaidSoAndBoundAgain() throws Exception {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        Path socket = shared.resolve(MemfdPayload.decode(new PayloadReader(payload)).socketName());
        java.nio.file.Files.delete(socket);

        assertThatThrownBy(() -> map(importer, payload, SIZE))
                .hasMessageStartingWith("the producer's socket " + socket + " was removed from the shared directory while the producer lives")
                .hasMessageContaining("RemoveIPC");

        while (!java.nio.file.Files.exists(socket)) Thread.sleep(50); // bounded by the timeout; not a measurement
        try (ChunkMapping mapping = map(importer, payload, SIZE)) {
            chunk.segment().set(JAVA_LONG, 0, 42);
            assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(42);
        }
    }

    /**
     * A handle naming a socket its live producer does not have, while the producer serves on
     * another, is corrupt, forged or stale, not a socket a cleaner removed (which it was called,
     * with a promise that imports work again within a second that could not come true).
     */
    @Test
    void aHandleNamingAnotherSocketOfALiveProducerIsNotBlamedOnACleaner() {
        Chunk chunk = provider.allocate(SIZE);
        MemfdPayload real = MemfdPayload.decode(new PayloadReader(provider.export(chunk)));
        String name = real.socketName();
        String forged = name.substring(0, name.length() - FdProtocol.SOCKET_SUFFIX.length() - 1)
                + (name.charAt(name.length() - FdProtocol.SOCKET_SUFFIX.length() - 1) == '0' ? '1' : '0') + FdProtocol.SOCKET_SUFFIX;
        assertThatThrownBy(() -> map(importer, new MemfdPayload(forged, new byte[16], null).encode(), SIZE))
                .hasMessageStartingWith("no socket " + shared.resolve(forged) + ", while its producer lives and serves on "
                        + shared.resolve(name) + ": the handle is corrupt or forged");
    }

    /**
     * A shared directory this user may search but not read (mode 1733, as shared directories often are): whether the live
     * producer serves on another socket cannot be looked up, and the import says the socket was removed, and why it could not
     * look. "cannot list the shared directory" escaped instead, with a remedy (make it readable) that was not the import's
     * problem.
     */
    @Test
    void aSocketRemovedWhileTheProducerLivesIsSaidSoEvenWhereTheDirectoryCannotBeListed() throws Exception {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        Path socket = shared.resolve(MemfdPayload.decode(new PayloadReader(payload)).socketName());
        java.nio.file.Files.delete(socket);
        IpcImporter unreadable = new MemfdImporter(FailingLibc.failing("listDirectory", Errno.EACCES), shared, 2_000_000_000L);

        assertThatThrownBy(() -> map(unreadable, payload, SIZE))
                .hasMessageStartingWith("the producer's socket " + socket + " was removed from the shared directory while the producer lives")
                .hasMessageContaining("RemoveIPC")
                .hasMessageContaining("whether the producer serves on another socket could not be looked up")
                .hasMessageContaining("EACCES");
    }

    /**
     * A rebind that fails (out of descriptors at that moment) is tried again a second later: it
     * used to end the server thread, and the producer's chunks could never be imported again.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS)
    void aRebindThatFailsOnceIsTriedAgain() throws Exception {
        java.util.concurrent.atomic.AtomicInteger socketFailures = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean shortage = new java.util.concurrent.atomic.AtomicBoolean();
        Libc shortOnce = FailingLibc.failing(Errno.EMFILE, (call, args) -> call.equals("socket") && shortage.get()
                && socketFailures.incrementAndGet() == 1);
        MemoryProvider producer = MemfdProvider.open(shortOnce, TestContext.of(shared));
        try {
            Chunk chunk = producer.allocate(SIZE);
            byte[] payload = producer.export(chunk);
            Path socket = shared.resolve(MemfdPayload.decode(new PayloadReader(payload)).socketName());
            shortage.set(true);
            java.nio.file.Files.delete(socket);

            while (!java.nio.file.Files.exists(socket)) Thread.sleep(50); // bounded by the timeout; not a measurement
            assertThat(socketFailures.get()).as("socket() calls refused, then tried again").isGreaterThanOrEqualTo(2);
            try (ChunkMapping mapping = map(importer, payload, SIZE)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
            }
        } finally {
            producer.close();
        }
    }

    /**
     * A producer out of descriptors cannot accept an importer's connection; it retries, and said
     * so with the errno alone ("accepting a connection failed: accept4(...): EMFILE (Too many open
     * files); retrying every 100 ms"), naming no limit to raise (found by a helper playing an SRE:
     * a worker under ulimit -n 40 that 80 senders connected to). The warning now names it; the
     * import that waited succeeds once a descriptor is free.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS)
    void anAcceptOutOfDescriptorsIsRetriedAndSaysWhichLimitToRaise() throws Exception {
        java.util.concurrent.atomic.AtomicInteger acceptFailures = new java.util.concurrent.atomic.AtomicInteger();
        Libc shortOnce = FailingLibc.failing(Errno.EMFILE, (call, args) -> call.equals("accept") && acceptFailures.incrementAndGet() == 1);
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        MemoryProvider producer = MemfdProvider.open(shortOnce, TestContext.of(shared).withLogger(recording));
        try {
            byte[] payload = producer.export(producer.allocate(SIZE));
            try (ChunkMapping mapping = map(importer, payload, SIZE)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
            }
            assertThat(recording.warnings()).singleElement().asString()
                    .contains("accepting a connection failed").contains("EMFILE").contains("retrying every")
                    .contains("memfd.connect.timeout").contains("raise its open-file limit (ulimit -n");
        } finally {
            producer.close();
        }
    }

    /**
     * The rebind's temporary name fits wherever the socket's name does: in a directory of the
     * longest path whose socket fits an AF_UNIX address, a process without /proc binds it by path
     * (a longer temporary name needed /proc there, and every rebind failed where it is not
     * mounted). Where /proc is there the server binds through it whatever the path's length
     * (FdProtocol.bindAddress), so the server here is told /proc is not there, and its libc
     * fails any bind through /proc.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS)
    void aRebindInTheLongestDirectoryThatFitsASocketAddressNeedsNoProc() throws Exception {
        int pad = FdProtocol.maxDirectoryLength() - shared.toString().length() - 1;
        org.junit.jupiter.api.Assumptions.assumeTrue(pad > 0, "the temporary directory's path is too long already: " + shared);
        Path longest = Files.createDirectories(shared.resolve("d".repeat(pad)));
        assertThat(longest.toString()).hasSize(FdProtocol.maxDirectoryLength());
        MemfdChunk chunk = (MemfdChunk) provider.allocate(SIZE);
        try (SharedDirectory directory = SharedDirectory.open(libc, longest, "shared.dir");
             dev.conduit.shm.OwnerLease lease = dev.conduit.shm.OwnerLease.acquire(libc, directory, FdProtocol.FILE_PREFIX);
             FdServer server = FdServer.start(failingThroughProc(), directory, lease, java.util.Set.of(), 1_000_000_000L,
                     System.getLogger("test"), longest.resolve("no-proc-self-fd"))) {
            byte[] payload = new MemfdPayload(server.socketName(), server.publish(chunk), null).encode();
            Path socket = longest.resolve(server.socketName());
            Files.delete(socket);

            while (!Files.exists(socket)) Thread.sleep(50); // bounded by the timeout; not a measurement
            try (ChunkMapping mapping = map(new MemfdImporter(libc, longest, 2_000_000_000L), payload, SIZE)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
            }
        } finally {
            provider.free(chunk);
        }
    }

    @Test
    void aSocketNobodyListensOnAnyMoreMeansProducerGone() {
        String name = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-0123456789abcdef.sock";
        try (FileDescriptor listener = libc.socket(SocketFlags.SOCK_STREAM)) {
            libc.bind(listener, shared.resolve(name).toString());
        }
        assertThatThrownBy(() -> map(importer, new MemfdPayload(name, new byte[16], null).encode(), SIZE))
                .hasMessageStartingWith("producer gone (its socket " + shared.resolve(name) + " refuses connections")
                .hasRootCauseInstanceOf(ErrnoException.class);
    }

    /**
     * A producer's fd server that reads the request and closes without answering (it is being
     * killed, or dropped the request after its timeout) means producer gone, with the end of stream
     * as the cause: a transport recognizes a dying exporter by it, as by an errno.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS) // a hang guard
    void aSocketThatClosesWithoutAnsweringMeansProducerGoneWithTheEndOfStreamAsCause() throws Exception {
        String name = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-0123456789abcdef.sock";
        try (FileDescriptor listener = libc.socket(SocketFlags.SOCK_STREAM)) {
            libc.bind(listener, shared.resolve(name).toString());
            libc.listen(listener, 4);
            Thread server = Thread.ofPlatform().start(() -> {
                try (FileDescriptor client = libc.accept(listener, 0);
                     java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    MemorySegment request = arena.allocate(FdProtocol.REQUEST_LENGTH);
                    for (int read = 0; read < FdProtocol.REQUEST_LENGTH; ) {
                        int n = libc.recv(client, request.asSlice(read), 0);
                        if (n == 0) break;
                        read += n;
                    }
                }
            });
            assertThatThrownBy(() -> map(importer, new MemfdPayload(name, new byte[16], null).encode(), SIZE))
                    .hasMessageStartingWith("producer gone (its socket " + shared.resolve(name)
                            + " closed the connection without answering")
                    .hasCauseInstanceOf(java.io.EOFException.class);
            server.join();
        }
    }

    /**
     * A server that closes with the request unread resets the connection: its producer is going
     * away, or its fd server gave up waiting for the request after memfd.server.timeout (at 1 ms
     * that happened to the first import of a JVM here). The message used to name only the producer's
     * exit, while the end-of-stream case named the timeout; both name it now. The reset stays the
     * cause: a transport recognizes a dying exporter by it.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS) // a hang guard
    void aSocketThatClosesWithTheRequestUnreadNamesTheServerTimeoutToo() throws Exception {
        String name = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-0123456789abcdef.sock";
        try (FileDescriptor listener = libc.socket(SocketFlags.SOCK_STREAM)) {
            libc.bind(listener, shared.resolve(name).toString());
            libc.listen(listener, 4);
            Thread server = Thread.ofPlatform().start(() -> {
                try (FileDescriptor client = libc.accept(listener, 0)) {
                    libc.poll(client, dev.conduit.linux.PollEvents.POLLIN, 30_000); // the request arrived, and is left unread
                }
            });
            assertThatThrownBy(() -> map(importer, new MemfdPayload(name, new byte[16], null).encode(), SIZE))
                    .hasMessageStartingWith("producer gone (its socket " + shared.resolve(name) + " reset the connection before answering")
                    .hasMessageContaining("memfd.server.timeout (CONDUIT_MEMFD_SERVER_TIMEOUT)")
                    .hasCauseInstanceOf(ErrnoException.class);
            server.join();
        }
    }

    // ---------------------------------------------------------------- bad payloads

    @Test
    void everyTruncationOfAPayloadIsAnInvalidHandle() {
        byte[] payload = provider.export(provider.allocate(SIZE));
        for (int length = 0; length < payload.length; length++) {
            byte[] truncated = Arrays.copyOf(payload, length);
            assertThatThrownBy(() -> map(importer, truncated, SIZE))
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).startsWith("payload."))
                    .hasMessageContaining("truncated");
        }
    }

    @Test
    void corruptedFieldsAreInvalidHandlesNamingTheField() {
        byte[] payload = provider.export(provider.allocate(SIZE));
        String socket = MemfdPayload.decode(new PayloadReader(payload)).socketName();

        byte[] version = payload.clone();
        version[0] = 3;
        assertInvalid(version, "payload.version", "memfd export payload version 3, where this process's Conduit reads only version 2: the producer runs a newer Conduit than this process; upgrade this process");

        byte[] trailing = Arrays.copyOf(payload, payload.length + 1);
        assertInvalid(trailing, "payload.directory.birth", "1 unexpected trailing bytes");

        byte[] directoryCutShort = Arrays.copyOf(payload, payload.length - 1);
        assertInvalid(directoryCutShort, "payload.directory.birth", "truncated");

        byte[] version1Trailing = Arrays.copyOf(payload, payload.length - dev.conduit.shm.DirectoryIdentity.ENCODED_LENGTH + 1);
        version1Trailing[0] = 1;
        assertInvalid(version1Trailing, "payload.token", "1 unexpected trailing bytes");

        byte[] badCharacter = payload.clone();
        badCharacter[3 + 14] = '*';
        assertInvalid(badCharacter, "payload.socket", "character outside");

        byte[] longer = new PayloadWriter().u8(1).u16(socket.length() + 1).bytes(socket.getBytes()).toByteArray();
        assertInvalid(longer, "payload.socket", "truncated");
    }

    @Test
    void pathsThatLeaveTheSharedDirectoryOrNameOtherFilesAreRefused() {
        String[] refused = {
                "../../etc/passwd", "/etc/passwd", "/dev/shm/conduit-memfd-x.sock", "..", ".",
                "sub/conduit-memfd-x.sock", "conduit-memfd-x.sock/..", "conduit-posix-x.sock", "conduit-memfd-x.lease", ""};
        for (String path : refused) {
            byte[] payload = new PayloadWriter().u8(1).string(path).bytes(new byte[16]).toByteArray();
            assertInvalid(payload, "payload.socket", "");
        }
    }

    /**
     * A socket name of another form than the fd server's, {@code conduit-memfd-<owner>-<random>.sock} (32 and 16 hex
     * digits, as OwnerLease.newSocketName makes it), is refused at decode as an invalid handle naming the field, as posix
     * refuses a chunk name without its owner: only the prefix and suffix were checked, and such a name was connected to.
     */
    @Test
    void socketNamesNoFdServerMakesAreRefusedAtDecode() {
        String owner = SharedDirectory.randomId();
        String[] refused = {
                "conduit-memfd-x.sock", "conduit-memfd-.sock", "conduit-memfd-..sock", "conduit-memfd-" + owner + ".lease.sock",
                "conduit-memfd-" + owner + "-" + owner + ".sock", "conduit-memfd-" + owner + "-0123456789abcde.sock",
                "conduit-memfd-" + owner.toUpperCase(java.util.Locale.ROOT) + "-0123456789abcdef.sock",
                "conduit-memfd-" + owner + "-0123456789abcdeg.sock", "conduit-memfd-" + owner + "_0123456789abcdef.sock",
                "conduit-memfd-w-" + owner + "-0123456789abcdef.sock", "conduit-memfd-" + owner + "-0123456789abcdef.bind"};
        for (String name : refused) {
            byte[] payload = new PayloadWriter().u8(1).string(name).bytes(new byte[16]).toByteArray();
            assertThatThrownBy(() -> map(importer, payload, SIZE)).as(name)
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.socket"))
                    .hasMessageContaining("is not the name of a memfd fd server's socket");
        }
        String made = "conduit-memfd-" + owner + "-0123456789abcdef.sock";
        MemfdPayload taken = MemfdPayload.decode(new PayloadReader(new PayloadWriter().u8(1).string(made).bytes(new byte[16]).toByteArray()));
        assertThat(taken.socketName()).isEqualTo(made);
    }

    private void assertInvalid(byte[] payload, String field, String message) {
        assertThatThrownBy(() -> map(importer, payload, SIZE))
                .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo(field))
                .hasMessageContaining(message);
    }

    @Test
    void aSymlinkPlantedUnderASocketNameIsRefusedWithoutConnecting(@TempDir Path outside) throws Exception {
        Chunk chunk = provider.allocate(SIZE);
        MemfdPayload real = MemfdPayload.decode(new PayloadReader(provider.export(chunk)));
        String planted = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-0123456789abcdef.sock";
        String plantedOutside = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-fedcba9876543210.sock";
        // One link to the real, working socket (so a connect would succeed), one out of the directory.
        Files.createSymbolicLink(shared.resolve(planted), shared.resolve(real.socketName()));
        Files.createSymbolicLink(shared.resolve(plantedOutside), Files.createFile(outside.resolve("target")));

        for (String name : new String[] {planted, plantedOutside}) {
            assertThatThrownBy(() -> map(importer, new MemfdPayload(name, real.token(), null).encode(), SIZE))
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.socket"))
                    .hasMessageContaining("symbolic link");
        }
    }

    @Test
    void aFileThatIsNotASocketIsRefused() throws Exception {
        String name = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-0123456789abcdef.sock";
        Files.createFile(shared.resolve(name));
        assertInvalid(new MemfdPayload(name, new byte[16], null).encode(), "payload.socket", "is a regular file, not a socket");
    }

    @Test
    void aChunkLengthThatDiffersFromTheExportIsRefused() {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        assertThatThrownBy(() -> map(importer, payload, SIZE * 2))
                .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("chunk.length"))
                .hasMessageContaining("the handle says " + SIZE * 2 + " bytes, but the exported chunk has " + SIZE);
        assertThatThrownBy(() -> map(importer, payload, 0)).isInstanceOf(InvalidHandleException.class);
    }

    // ---------------------------------------------------------------- what a server passes, checked from this side

    @Test
    void anUnsealedMemfdIsRefusedNamingTheSealsFound() throws InterruptedException {
        assertRefusedMemfd(libc.memfdCreate("conduit-unsealed", MemfdFlags.MFD_ALLOW_SEALING), "carries the seals none");
        // Without MFD_ALLOW_SEALING a memfd is born with F_SEAL_SEAL only: still resizable.
        assertRefusedMemfd(libc.memfdCreate("conduit-unsealed", 0), "carries the seals F_SEAL_SEAL, not F_SEAL_SHRINK|F_SEAL_GROW");
    }

    @Test
    void aSealedMemfdOfAnotherSizeThanClaimedIsRefused() throws InterruptedException {
        FileDescriptor memfd = libc.memfdCreate("conduit-small", MemfdFlags.MFD_ALLOW_SEALING);
        libc.ftruncate(memfd, SIZE / 2);
        libc.addSeals(memfd, Seals.FIXED_SIZE);
        assertRefusedMemfd(memfd, "its memfd is " + SIZE / 2 + " bytes, but the handle's chunk length is " + SIZE);
    }

    @Test
    void aDescriptorThatIsNotAMemfdIsRefused(@TempDir Path files) throws Exception {
        Path file = Files.write(files.resolve("plain"), new byte[(int) SIZE]);
        assertRefusedMemfd(libc.open(file.toString(), OpenFlags.O_RDWR, 0), "is not a memfd");
    }

    /** A socket or a directory passed in place of the memfd is refused as no memfd, and closed. */
    @Test
    void aSocketOrADirectoryPassedInPlaceOfTheMemfdIsRefusedAsNoMemfd() throws InterruptedException {
        assertRefusedMemfd(libc.socket(SocketFlags.SOCK_STREAM), "the descriptor is not a memfd");
        assertRefusedMemfd(libc.open(shared.toString(), OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, 0), "the descriptor is not a memfd");
    }

    /**
     * An O_PATH descriptor of a properly sealed memfd can be passed, but neither checked (fcntl
     * answers EBADF to F_GET_SEALS) nor mapped. It used to fail the import with the bare
     * "fcntl(fd N (received), F_GET_SEALS): EBADF (Bad file descriptor)", which named neither the
     * server nor what it passed, and read as a descriptor this process had mixed up.
     */
    @Test
    void anOPathDescriptorOfASealedMemfdIsRefusedNamingItsKind() throws InterruptedException {
        try (FileDescriptor memfd = sealedMemfd()) {
            assertRefusedMemfd(libc.open("/proc/self/fd/" + memfd.fd(), OpenFlags.O_PATH, 0),
                    "the descriptor is an O_PATH one, which can be neither checked for seals nor mapped");
        }
    }

    /**
     * A memfd sealed against writing (F_SEAL_WRITE, or F_SEAL_FUTURE_WRITE) cannot be mapped
     * writable and shared, as every import is. Such a memfd used to pass the checks and fail in
     * mmap with a bare "EPERM (Operation not permitted)", which named neither the seal nor who set it.
     */
    @Test
    void aMemfdSealedAgainstWritingIsRefusedNamingTheSeal() throws InterruptedException {
        for (int writeSeal : new int[] {Seals.F_SEAL_WRITE, Seals.F_SEAL_FUTURE_WRITE}) {
            FileDescriptor memfd = libc.memfdCreate("conduit-write-sealed", MemfdFlags.MFD_ALLOW_SEALING);
            libc.ftruncate(memfd, SIZE);
            libc.addSeals(memfd, Seals.FIXED_SIZE | writeSeal);
            assertRefusedMemfd(memfd, "its memfd carries the seals " + Seals.describe(Seals.FIXED_SIZE | writeSeal) + ", and "
                    + Seals.describe(writeSeal) + " forbids the writable shared mapping an import makes");
        }
    }

    /**
     * A descriptor of a properly sealed memfd, but opened for reading only (or writing only), as a
     * reopen through /proc/&lt;pid&gt;/fd gives it, cannot be mapped read-write. It used to pass the
     * checks and fail in mmap with a bare "EACCES (Permission denied)", which sends its reader to the
     * shared directory's permissions.
     */
    @Test
    void aDescriptorOfASealedMemfdOpenedForReadingOnlyIsRefusedNamingItsAccessMode() throws InterruptedException {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-read-only", MemfdFlags.MFD_ALLOW_SEALING)) {
            libc.ftruncate(memfd, SIZE);
            libc.addSeals(memfd, Seals.FIXED_SIZE);
            for (int access : new int[] {OpenFlags.O_RDONLY, OpenFlags.O_WRONLY}) {
                assertRefusedMemfd(libc.open("/proc/self/fd/" + memfd.fd(), access, 0), "its descriptor is open "
                        + OpenFlags.describe(access) + ", not O_RDWR, so it cannot be mapped read-write");
            }
        }
    }

    /**
     * A reply that passes more than one descriptor is a protocol error, whether they come in one
     * message or in two, and every one of them is closed: none stays open in this process.
     */
    @Test
    void descriptorsBeyondTheOneAnOkReplyCarriesAreAProtocolErrorAndAllAreClosed() throws InterruptedException {
        byte[] ok = FdProtocol.okReply(SIZE);
        try (FileDescriptor first = sealedMemfd(); FileDescriptor second = sealedMemfd(); FileDescriptor third = sealedMemfd()) {
            assertPassingFails(new Wire.Answer(List.of(new Wire.Piece(ok, List.of(first, second)))),
                    "protocol error: the memfd fd server on " + shared + "/conduit-memfd-", "passed more descriptors than one (2 received and closed)");
            assertPassingFails(new Wire.Answer(List.of(new Wire.Piece(ok, List.of(first, second, third)))),
                    "protocol error", "passed more descriptors than one");
            assertPassingFails(new Wire.Answer(List.of(new Wire.Piece(Arrays.copyOf(ok, 1), List.of(first)),
                    new Wire.Piece(Arrays.copyOfRange(ok, 1, ok.length), List.of(second)))), "protocol error", "passed a second descriptor");
            // A refusal that comes with a descriptor is a refusal; the descriptor is closed.
            assertPassingFails(new Wire.Answer(FdProtocol.refusal(FdProtocol.STATUS_UNKNOWN_TOKEN), first), "export gone", "");
        }
    }

    /**
     * A reply that arrives in pieces (the descriptor with its first byte, the length in two more)
     * is put together: the import maps the memfd passed; and a status 4 whose version byte comes
     * apart still names that version.
     */
    @Test
    void aReplySplitAcrossReadsIsPutTogether() throws InterruptedException {
        byte[] ok = FdProtocol.okReply(SIZE);
        try (FileDescriptor memfd = sealedMemfd()) {
            long fds = Leaks.openFdsWhenQuiet();
            try (Wire.FakeServer server = new Wire.FakeServer(libc, shared, request -> new Wire.Answer(List.of(
                    new Wire.Piece(Arrays.copyOf(ok, 1), List.of(memfd)), new Wire.Piece(Arrays.copyOfRange(ok, 1, 5), List.of()),
                    new Wire.Piece(Arrays.copyOfRange(ok, 5, ok.length), List.of()))));
                 ChunkMapping mapping = map(importer, server.payload(new byte[16]), SIZE)) {
                mapping.segment().set(JAVA_LONG, SIZE - 8, 99);
                try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    MemorySegment own = libc.mmap(memfd, 0, SIZE, dev.conduit.linux.MmapFlags.PROT_READ,
                            dev.conduit.linux.MmapFlags.MAP_SHARED, arena);
                    assertThat(own.get(JAVA_LONG, SIZE - 8)).as("written through the import, read through the memfd passed").isEqualTo(99);
                }
            }
            assertThat(Leaks.openFdsSettlingAt(fds)).isEqualTo(fds);
        }
        try (Wire.FakeServer server = new Wire.FakeServer(libc, shared, request -> new Wire.Answer(List.of(
                new Wire.Piece(new byte[] {FdProtocol.STATUS_OTHER_VERSION}, List.of()), new Wire.Piece(new byte[] {2}, List.of()))))) {
            assertThatThrownBy(() -> map(importer, server.payload(new byte[16]), SIZE))
                    .hasMessageContaining("memfd fd protocol version 2, where this process's Conduit reads only version 1");
        }
    }

    /** A server that closes after the first byte of an ok reply, the memfd with it, has the import fail naming that, and the memfd closed. */
    @Test
    void anOkReplyCutShortIsAProtocolErrorAndTheDescriptorItPassedIsClosed() throws InterruptedException {
        byte[] ok = FdProtocol.okReply(SIZE);
        try (FileDescriptor memfd = sealedMemfd()) {
            assertPassingFails(new Wire.Answer(List.of(new Wire.Piece(Arrays.copyOf(ok, 1), List.of(memfd)))),
                    "protocol error", "ended its reply after 1 of " + FdProtocol.OK_REPLY_LENGTH + " bytes");
            assertPassingFails(new Wire.Answer(List.of(new Wire.Piece(Arrays.copyOf(ok, 5), List.of(memfd)))),
                    "protocol error", "ended its reply after 5 of " + FdProtocol.OK_REPLY_LENGTH + " bytes");
        }
    }

    /** A memfd as a provider makes it: {@link #SIZE} bytes, sealed against resizing. */
    private FileDescriptor sealedMemfd() {
        FileDescriptor memfd = libc.memfdCreate("conduit-extra", MemfdFlags.MFD_ALLOW_SEALING);
        libc.ftruncate(memfd, SIZE);
        libc.addSeals(memfd, Seals.FIXED_SIZE);
        return memfd;
    }

    /** Serves {@code answer} to one import, which must fail with both messages and leave no descriptor open. */
    private void assertPassingFails(Wire.Answer answer, String message, String detail) throws InterruptedException {
        long fds = Leaks.openFdsWhenQuiet();
        try (Wire.FakeServer server = new Wire.FakeServer(libc, shared, request -> answer)) {
            assertThatThrownBy(() -> map(importer, server.payload(new byte[16]), SIZE))
                    .isInstanceOf(ConduitException.class).hasMessageContaining(message).hasMessageContaining(detail);
        }
        assertThat(Leaks.openFdsSettlingAt(fds)).as("descriptors after the import").isEqualTo(fds);
        assertThat(Leaks.memfdMappings()).as("mappings of a memfd of this plugin").isZero();
    }

    /** Serves {@code memfd} (then closes it) with an ok reply of {@link #SIZE} and expects the import to be refused. */
    private void assertRefusedMemfd(FileDescriptor memfd, String message) throws InterruptedException {
        try (memfd) {
            if (libc.fstat(memfd).isRegularFile() && libc.fstat(memfd).size() == 0) {
                libc.ftruncate(memfd, SIZE);
            }
            long fds = Leaks.openFdsWhenQuiet();
            try (Wire.FakeServer server = new Wire.FakeServer(libc, shared, request -> new Wire.Answer(FdProtocol.okReply(SIZE), memfd))) {
                assertThatThrownBy(() -> map(importer, server.payload(new byte[16]), SIZE))
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("refusing the chunk passed by " + shared.resolve(server.name()))
                        .hasMessageContaining(message);
            }
            // The fake server is gone with all it opened; so must be what the import received.
            assertThat(Leaks.openFds()).isEqualTo(fds);
        }
    }

    @Test
    void refusalsNameTheirCauseAndRemedy() {
        String uid = Integer.toUnsignedString(libc.geteuid());
        assertRefusal(FdProtocol.STATUS_PEER_NOT_ALLOWED, "refused this process's user (uid " + uid + "): to admit it, add uid " + uid
                + " to memfd.allowed.uids (CONDUIT_MEMFD_ALLOWED_UIDS) on the producer's side");
        assertRefusal(FdProtocol.STATUS_BAD_REQUEST, "protocol error");
        assertRefusal(9, "undefined status 9");
    }

    /**
     * A server that reads another version of the protocol says which (status 4, then its version),
     * and the refusal says which side runs the older Conduit and what to do.
     */
    @Test
    void aServerOfAnotherProtocolVersionIsNamedWithBothVersionsAndWhichSideToUpgrade() {
        assertRefusal(new byte[] {FdProtocol.STATUS_OTHER_VERSION, 2}, "refused the request: memfd fd protocol version 2, where this "
                + "process's Conduit reads only version 1: the producer runs a newer Conduit than this process; upgrade this process, "
                + "or run the producer with the older one (docs/runtime.md");
        assertRefusal(new byte[] {FdProtocol.STATUS_OTHER_VERSION, 0}, "the producer runs an older Conduit than this process; "
                + "upgrade the producer, or run this process with the older one");
        assertRefusal(new byte[] {FdProtocol.STATUS_OTHER_VERSION, FdProtocol.VERSION}, "protocol error: the memfd fd server on "
                + shared + "/conduit-memfd-");
        assertRefusal(new byte[] {FdProtocol.STATUS_OTHER_VERSION}, "ended its reply after 1 of 2 bytes");
    }

    private void assertRefusal(int status, String message) {
        assertRefusal(new byte[] {(byte) status}, message);
    }

    private void assertRefusal(byte[] reply, String message) {
        byte[][] seen = new byte[1][];
        byte[] expected;
        try (Wire.FakeServer server = new Wire.FakeServer(libc, shared, request -> {
            seen[0] = request;
            return new Wire.Answer(reply, null);
        })) {
            byte[] token = SharedDirectory.randomId().substring(0, 16).getBytes();
            assertThatThrownBy(() -> map(importer, server.payload(token), SIZE)).hasMessageContaining(message);
            expected = FdProtocol.request(token);
        }
        assertThat(seen[0]).isEqualTo(expected); // the exchange is over once the server is closed
    }

    @Test
    void anOkReplyWithoutADescriptorIsAProtocolError() {
        try (Wire.FakeServer server = new Wire.FakeServer(libc, shared, request -> new Wire.Answer(FdProtocol.okReply(SIZE), null))) {
            assertThatThrownBy(() -> map(importer, server.payload(new byte[16]), SIZE))
                    .hasMessageContaining("answered ok without passing a descriptor");
        }
    }

    /**
     * A connect, a send of the request or a receive of the reply that fails for a cause the
     * importer has no branch for named the errno and nothing to do: now the kernel's want of
     * memory for socket buffers says to free memory, and any other errno that the import may be
     * made again and which call's man page explains it. Nothing is left open either way.
     */
    @Test
    void aSocketCallThatFailsForAnotherCauseNamesARemedyAndLeavesNothingOpen() throws InterruptedException {
        byte[] payload = provider.export(provider.allocate(SIZE));
        long fds = Leaks.openFdsWhenQuiet();
        assertThatThrownBy(() -> map(new MemfdImporter(FailingLibc.failing("connect", Errno.ETIMEDOUT), shared, 2_000_000_000L), payload, SIZE))
                .isInstanceOf(ConduitException.class).hasMessageContaining("cannot connect to the producer's socket")
                .hasMessageContaining("ETIMEDOUT").hasMessageContaining("nothing of this import is kept: import the handle again")
                .hasMessageContaining("man 2 connect gives for ETIMEDOUT");
        assertThatThrownBy(() -> map(new MemfdImporter(FailingLibc.failing("sendmsg", Errno.ENOBUFS), shared, 2_000_000_000L), payload, SIZE))
                .isInstanceOf(ConduitException.class).hasMessageContaining("cannot send the request to the producer's socket")
                .hasMessageContaining("ENOBUFS").hasMessageContaining("the kernel had no memory for the socket's buffers: free memory");
        assertThatThrownBy(() -> map(new MemfdImporter(FailingLibc.failing("recvmsg", Errno.EIO), shared, 2_000_000_000L), payload, SIZE))
                .isInstanceOf(ConduitException.class).hasMessageContaining("cannot receive the reply from the producer's socket")
                .hasMessageContaining("EIO").hasMessageContaining("import the handle again")
                .hasMessageContaining("man 2 recvmsg gives for EIO");
        assertThat(Leaks.openFdsSettlingAt(fds)).isEqualTo(fds);
    }

    /**
     * A poll for room to send the request, or for the reply, that fails (ENOMEM: the kernel had no memory for its table) is
     * said as a failed send or receive is, naming the socket and the remedy. The bare "poll(...): ENOMEM" escaped, naming
     * neither. Nothing is left open.
     */
    @Test
    void aPollForTheFdServerThatFailsNamesTheSocketAndTheRemedyAndLeavesNothingOpen() throws InterruptedException {
        byte[] payload = provider.export(provider.allocate(SIZE));
        Path socket = shared.resolve(MemfdPayload.decode(new PayloadReader(payload)).socketName());
        long fds = Leaks.openFdsWhenQuiet();
        for (String blocked : List.of("sendmsg", "recvmsg")) {
            java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
            Libc full = FailingLibc.answering((name, args) -> {
                if (name.equals(blocked) && once.compareAndSet(false, true)) {
                    return blocked.equals("sendmsg") ? (Object) Libc.WOULD_BLOCK : ReceivedMessage.WOULD_BLOCK;
                }
                return name.equals("poll") ? new ErrnoException("poll", Errno.ENOMEM, "fake", "injected by the test") : null;
            });
            assertThatThrownBy(() -> map(new MemfdImporter(full, shared, 2_000_000_000L), payload, SIZE)).as("waiting after %s", blocked)
                    .isInstanceOf(ConduitException.class).isNotInstanceOf(ErrnoException.class)
                    .hasMessageContaining(socket.toString()).hasMessageContaining("ENOMEM")
                    .hasMessageContaining("the kernel had no memory for the socket's buffers: free memory");
        }
        assertThat(Leaks.openFdsSettlingAt(fds)).isEqualTo(fds);
    }

    /**
     * A datagram or seqpacket socket under a memfd socket's name is no fd server. Connecting to
     * one used to fail with the bare "connect(...): EPROTOTYPE (Protocol wrong type for socket)".
     */
    @Test
    void aSocketOfAnotherTypeUnderTheNameIsRefusedAsNoFdServer() throws InterruptedException {
        for (int type : new int[] {SocketFlags.SOCK_DGRAM, SocketFlags.SOCK_SEQPACKET}) {
            String name = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-0123456789abcdef.sock";
            long fds = Leaks.openFdsWhenQuiet();
            try (FileDescriptor other = libc.socket(type)) {
                libc.bind(other, shared.resolve(name).toString());
                if (type == SocketFlags.SOCK_SEQPACKET) {
                    libc.listen(other, 4);
                }
                assertThatThrownBy(() -> map(importer, new MemfdPayload(name, new byte[16], null).encode(), SIZE))
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("cannot connect to the producer's socket " + shared.resolve(name))
                        .hasMessageContaining("EPROTOTYPE")
                        .hasMessageContaining("it is a datagram or seqpacket socket, not the stream socket of a memfd fd server");
            }
            assertThat(Leaks.openFds()).isEqualTo(fds);
        }
    }

    /**
     * The timeout is named as configured, in its own unit: until 2026-12-07 it was printed in whole
     * milliseconds, so 500us read "(0 ms)".
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"200ms", "500us"})
    void aServerThatNeverAnswersTimesOutNamingTheKeyAndItsValue(String timeout) {
        IpcImporter impatient = new MemfdPlugin().ipcImporter(TestContext.of(shared, Map.of("memfd.connect.timeout", timeout)));
        String name = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-0123456789abcdef.sock";
        try (FileDescriptor listener = libc.socket(SocketFlags.SOCK_STREAM)) {
            libc.bind(listener, shared.resolve(name).toString());
            libc.listen(listener, 4); // and never accept
            assertThatThrownBy(() -> map(impatient, new MemfdPayload(name, new byte[16], null).encode(), SIZE))
                    .hasMessageContaining("did not answer within memfd.connect.timeout (CONDUIT_MEMFD_CONNECT_TIMEOUT) (" + timeout + ")");
        }
    }

    /** Bind and connect through /proc/self/fd that fail with ENOENT name the path, the route and the remedy, and leave nothing behind. */
    @Test
    void bindAndConnectThroughProcSelfFdThatFindNothingNamePathRouteAndRemedy(@TempDir Path elsewhere) throws Exception {
        Path longShared = Files.createDirectories(shared.resolve("l".repeat(80)));
        Libc failing = failingThroughProc();
        MemoryProvider longProvider = MemfdProvider.open(failing, TestContext.of(longShared));
        try {
            Chunk chunk = longProvider.allocate(SIZE);
            // With /proc there, a bind through the directory's descriptor finds nothing only when the directory is gone.
            assertThatThrownBy(() -> longProvider.export(chunk)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot start the memfd fd server at " + longShared.resolve("conduit-memfd-"))
                    .hasMessageContaining("ENOENT").hasMessageContaining("too long for a socket address")
                    .hasMessageContaining("which was removed since: make " + longShared + " again");
            longProvider.free(chunk);
        } finally {
            longProvider.close();
        }
        assertThat(Leaks.files(longShared)).as("files left after the failed start and the close").isEmpty();

        Path longView = Files.createSymbolicLink(elsewhere.resolve("v".repeat(80)), shared);
        try {
            byte[] payload = provider.export(provider.allocate(SIZE));
            long descriptors = Leaks.openFdsWhenQuiet();
            assertThatThrownBy(() -> map(new MemfdImporter(failing, longView, 2_000_000_000L), payload, SIZE))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot connect to the producer's socket " + longView.resolve("conduit-memfd-"))
                    .hasMessageContaining("through /proc/self/fd/").hasMessageContaining("ENOENT")
                    .hasMessageContaining("does not show this process's descriptors").hasMessageContaining("mount /proc")
                    .hasMessageContaining("shared.dir (CONDUIT_SHARED_DIR)");
            assertThat(Leaks.openFdsSettlingAt(descriptors)).as("descriptors after the failed import").isEqualTo(descriptors);
        } finally {
            Files.delete(longView);
        }
    }

    /** A process without /proc connects by path where the path fits an address, and says why it cannot where it does not. */
    @Test
    void withoutProcSelfFdAShortPathIsConnectedByPathAndALongOneIsRefusedNamingTheRemedies(@TempDir Path elsewhere) throws Exception {
        Path noProc = elsewhere.resolve("no-proc/self/fd");
        Chunk chunk = provider.allocate(SIZE);
        chunk.segment().set(JAVA_LONG, 0, 41);
        byte[] payload = provider.export(chunk);
        try (ChunkMapping mapping = map(new MemfdImporter(libc, shared, 2_000_000_000L, noProc), payload, SIZE)) {
            assertThat(mapping.segment().get(JAVA_LONG, 0)).as("imported by path, without /proc").isEqualTo(41);
        }
        Path longView = Files.createSymbolicLink(elsewhere.resolve("v".repeat(80)), shared);
        try {
            long descriptors = Leaks.openFdsWhenQuiet();
            assertThatThrownBy(() -> map(new MemfdImporter(libc, longView, 2_000_000_000L, noProc), payload, SIZE))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot connect to the producer's socket " + longView.resolve("conduit-memfd-"))
                    .hasMessageContaining("too long for an AF_UNIX address (107)")
                    .hasMessageContaining(noProc + ", through which a longer one is reached, is not there")
                    .hasMessageContaining("mount /proc").hasMessageContaining("shared.dir (CONDUIT_SHARED_DIR)");
            assertThat(Leaks.openFdsSettlingAt(descriptors)).as("descriptors after the refused import").isEqualTo(descriptors);
        } finally {
            Files.delete(longView);
        }
    }

    /** The producer's socket is this user's and 0600, and connect is refused all the same: something other than the mode bits refused (a security module, most likely). */
    @Test
    void aRefusedConnectThatOwnerAndModeDoNotExplainNamesWhatElseRefuses() {
        byte[] payload = provider.export(provider.allocate(SIZE));
        Libc refusingConnect = FailingLibc.failing(Errno.EACCES, (call, args) -> call.equals("connect"));
        assertThatThrownBy(() -> map(new MemfdImporter(refusingConnect, shared, 2_000_000_000L), payload, SIZE))
                .isInstanceOf(ConduitException.class).hasMessageContaining("permission denied connecting to the producer's socket")
                .hasMessageContaining("mode 0600").hasMessageContaining("so something else refused: usually a security module")
                .hasMessageContaining("docker run -v DIR:DIR:z").hasMessageContaining("getfacl").hasMessageNotContaining("memfd.allowed.uids");
    }

    /**
     * An fd server that runs as another user, as one that bound the name of a gone producer's
     * socket would: refused as soon as the connection stands, before the token is sent, unless its
     * uid is listed in {@code memfd.trusted.uids}. {@code SO_PEERCRED} is answered by the test here;
     * {@code OtherUserImportTest} has the real other user.
     */
    @Test
    void anFdServerOfAnotherUserIsRefusedBeforeTheTokenIsSentUnlessItsUidIsTrusted() {
        byte[] payload = provider.export(provider.allocate(SIZE));
        AtomicInteger sends = new AtomicInteger();
        Libc servedByAnotherUser = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("peerCredentials")) {
                        return new PeerCredentials(0, (int) 3_000_000_000L, 4321);
                    }
                    if (method.getName().equals("sendmsg")) sends.incrementAndGet();
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        long descriptors = Leaks.memfdDescriptors();
        assertThatThrownBy(() -> map(new MemfdImporter(servedByAnotherUser, shared, 2_000_000_000L), payload, SIZE))
                .isExactlyInstanceOf(ConduitException.class)
                .hasMessageContaining("refusing to import from the fd server on " + shared.resolve(""))
                .hasMessageContaining("it runs as uid 3000000000 (SO_PEERCRED), not as this process's uid " + Integer.toUnsignedString(libc.geteuid()))
                .hasMessageContaining("nor as a user listed in memfd.trusted.uids (CONDUIT_MEMFD_TRUSTED_UIDS) (none)")
                .hasMessageContaining("the handle's token was not sent")
                .hasMessageContaining("If uid 3000000000 runs the producer, add it to memfd.trusted.uids on this side")
                .hasMessageContaining("another user bound its socket's name: the handle is stale");
        assertThat(sends).as("requests sent to the untrusted server").hasValue(0);
        assertThat(Leaks.memfdDescriptors()).isEqualTo(descriptors);

        assertThatThrownBy(() -> map(new MemfdImporter(servedByAnotherUser, shared, 2_000_000_000L, new int[] {1000, 4321}), payload, SIZE))
                .hasMessageContaining("(1000,4321)");
        try (ChunkMapping mapping = map(new MemfdImporter(servedByAnotherUser, shared, 2_000_000_000L, new int[] {1000, (int) 3_000_000_000L}),
                payload, SIZE)) {
            assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
        }
        assertThat(sends).as("requests sent once the server's uid is trusted").hasPositiveValue();
    }

    /** In a user namespace the overflow uid stands for every user the namespace does not map: the refusal says what trusting it means. */
    @Test
    void anFdServerThatShowsAsTheOverflowUidIsNamedAsEveryUnmappedUser() {
        MemfdImporter importer = new MemfdImporter(libc, shared, 2_000_000_000L);
        UserNamespace rootless = UserNamespace.of(List.of("0 1000 1"), 65534);
        String message = importer.untrustedServer(new PeerCredentials(0, 65534, 65534), "/shared/s", rootless).getMessage();
        assertThat(message).contains("it runs as uid 65534 (SO_PEERCRED)")
                .contains("uid 65534 stands for every user the namespace does not map")
                .contains("run the producer as a user this namespace maps (for a rootless container, the user who runs it), or add 65534 "
                        + "to memfd.trusted.uids if all of them may serve this process")
                .doesNotContain("the handle is stale");
        assertThat(importer.untrustedServer(new PeerCredentials(0, 65534, 65534), "/shared/s",
                UserNamespace.of(List.of("0 0 4294967295"), 65534)).getMessage()).doesNotContain("stands for every user")
                .contains("the handle is stale");
    }

    /**
     * A process that runs as the overflow uid of its user namespace (a container run as nobody)
     * sees a server of its own user and one of any unmapped user as that uid alike: it trusts
     * neither unless the uid is listed. In the initial namespace, 65534 is one user. The real
     * process is {@code OtherUserImportTest}'s.
     */
    @Test
    void aServerShowingTheOwnUidIsNotTrustedWhereThatUidIsTheOverflowUidOfTheNamespace() {
        Libc asNobody = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("geteuid")) return 65534;
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        UserNamespace nobodyInAContainer = UserNamespace.of(List.of("65534 1000 1"), 65534);
        UserNamespace initial = UserNamespace.of(List.of("0 0 4294967295"), 65534);
        MemfdImporter importer = new MemfdImporter(asNobody, shared, 2_000_000_000L);
        assertThat(importer.trusts(65534, nobodyInAContainer, false)).isFalse();
        assertThat(importer.trusts(65534, nobodyInAContainer, true)).as("its socket file proven this user's").isTrue();
        assertThat(importer.trusts(65534, initial, false)).isTrue();
        assertThat(importer.trusts(1000, nobodyInAContainer, true)).isFalse();
        assertThat(new MemfdImporter(asNobody, shared, 2_000_000_000L, new int[] {65534}).trusts(65534, nobodyInAContainer, false))
                .as("listed: every unmapped user may serve it").isTrue();
        assertThat(importer.untrustedServer(new PeerCredentials(0, 65534, 65534), "/shared/s", nobodyInAContainer).getMessage())
                .contains("it runs as uid 65534 (SO_PEERCRED), this process's own, but this process runs as the overflow uid of its user "
                        + "namespace (uid 65534 here, 1000 in the parent user namespace)")
                .contains("the handle's token was not sent")
                .contains("Run this process as a uid other than 65534 (kernel.overflowuid), or add 65534 to memfd.trusted.uids "
                        + "(CONDUIT_MEMFD_TRUSTED_UIDS) if all of those users may serve this process");
    }

    /** The real libc, except that bind and connect through /proc/self/fd fail with ENOENT, as where /proc is not mounted. */
    private Libc failingThroughProc() {
        return FailingLibc.failing(Errno.ENOENT, (call, args) -> (call.equals("bind") || call.equals("connect"))
                && String.valueOf(args[1]).startsWith("/proc/self/fd/"));
    }

    /**
     * An import whose mmap fails with ENOMEM says what ran out, counting this process's mappings
     * against vm.max_map_count, and how an importer keeps fewer (the IPC cache's two bounds, larger
     * chunks); its descriptor is closed. The ENOMEM is the kernel's own: the mmap is passed on to
     * the real libc asking for 2^50 bytes, more than the address space, which maps nothing.
     */
    @Test
    void anImportOutOfMappingsCountsThemNamesTheKeysThatKeepFewerAndClosesItsDescriptor() throws InterruptedException {
        byte[] payload = provider.export(provider.allocate(SIZE));
        Libc tooLong = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("mmap")) args[2] = 1L << 50;
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        MemfdImporter outOfMappings = new MemfdImporter(tooLong, shared, 2_000_000_000L);
        Runnable failing = () -> assertThatThrownBy(() -> map(outOfMappings, payload, SIZE))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot map the chunk imported from ")
                .hasMessageContaining("ENOMEM (Cannot allocate memory): this process has ")
                .hasMessageContaining("memory mappings (/proc/self/maps) and vm.max_map_count is ")
                .hasMessageContaining("lower ipc.cache.entries (CONDUIT_IPC_CACHE_ENTRIES) or ipc.cache.bytes (CONDUIT_IPC_CACHE_BYTES), "
                        + "or raise pool.chunk.size in the exporting processes");
        failing.run(); // first use loads classes
        long fds = Leaks.openFdsWhenQuiet();
        long mappings = Leaks.memfdMappings();
        for (int i = 0; i < 3; i++) failing.run();
        assertThat(Leaks.openFdsSettlingAt(fds)).isEqualTo(fds);
        assertThat(Leaks.memfdMappings()).isEqualTo(mappings);
    }

    // ---------------------------------------------------------------- leaks

    @Test
    void importsLeaveNoDescriptorOrMappingBehindWhetherTheySucceedOrFail() throws InterruptedException {
        Chunk chunk = provider.allocate(SIZE);
        byte[] payload = provider.export(chunk);
        Chunk freed = provider.allocate(SIZE);
        byte[] stale = provider.export(freed);
        provider.free(freed);
        Runnable cycle = () -> {
            try (ChunkMapping mapping = map(importer, payload, SIZE)) {
                mapping.segment().set(JAVA_LONG, 0, 1);
            }
            assertThatThrownBy(() -> map(importer, stale, SIZE)).hasMessageStartingWith("export gone");
            assertThatThrownBy(() -> map(importer, payload, SIZE + 4096)).isInstanceOf(InvalidHandleException.class);
            assertThatThrownBy(() -> map(importer, Arrays.copyOf(payload, 5), SIZE)).isInstanceOf(InvalidHandleException.class);
        };
        cycle.run(); // first use loads classes and opens what the JVM keeps open (jars, /dev/urandom)

        long fds = Leaks.openFdsWhenQuiet();
        long mappings = Leaks.memfdMappings();
        for (int i = 0; i < 3; i++) {
            cycle.run();
        }
        assertThat(Leaks.openFdsSettlingAt(fds)).isEqualTo(fds);
        assertThat(Leaks.memfdMappings()).isEqualTo(mappings).isEqualTo(1); // the producer's own chunk only
    }

    @Test
    void aWholeLifecycleLeavesNothingInTheProcessOrTheSharedDirectory() throws InterruptedException {
        provider.close();
        Runnable lifecycle = () -> {
            try (MemoryProvider p = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
                Chunk chunk = p.allocate(SIZE);
                try (ChunkMapping mapping = map(importer, p.export(chunk), SIZE)) {
                    mapping.segment().set(JAVA_LONG, 0, 3);
                }
                p.free(chunk);
                p.allocate(SIZE); // left for close to free
            }
        };
        lifecycle.run();
        long fds = Leaks.openFdsWhenQuiet();
        lifecycle.run();
        assertThat(Leaks.openFds()).isEqualTo(fds);
        assertThat(Leaks.memfdMappings()).isZero();
        assertThat(Leaks.memfdDescriptors()).isZero();
        assertThat(Leaks.serverThreads()).isEmpty();
        assertThat(Leaks.files(shared)).isEmpty();
    }
}
