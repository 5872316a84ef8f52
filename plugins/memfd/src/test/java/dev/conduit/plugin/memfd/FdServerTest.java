package dev.conduit.plugin.memfd;

import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.PeerCredentials;
import dev.conduit.linux.PollEvents;
import dev.conduit.linux.SocketFlags;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

/** The fd server: who it admits, what it answers, and that no client can wedge it or keep it alive. */
class FdServerTest {
    private static final long SIZE = 16 * 1024;
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private final Libc libc = Linux.libc();
    private final int ownUid = libc.geteuid();
    private final int otherUid = ownUid + 1000;

    @TempDir
    Path shared;

    @Test
    void admitsItsOwnUserAndTheAllowedOnesAndRefusesAnyOtherBeforeLookingAtTheToken() {
        Map<String, String> config = Map.of("memfd.allowed.uids", Integer.toUnsignedString(otherUid));
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared, config))) {
            Chunk chunk = provider.allocate(SIZE);
            byte[] request = FdProtocol.request(MemfdPayload.decode(new PayloadReader(provider.export(chunk))).token());
            FdServer server = provider.server();

            assertThat(server.decide(new PeerCredentials(1, ownUid, 0), request)).isEqualTo(new FdServer.Decision(FdProtocol.STATUS_OK, (MemfdChunk) chunk));
            assertThat(server.decide(new PeerCredentials(0, otherUid, 0), request).status()).isEqualTo(FdProtocol.STATUS_OK);
            assertThat(server.decide(new PeerCredentials(1, otherUid + 1, 0), request).status()).isEqualTo(FdProtocol.STATUS_PEER_NOT_ALLOWED);
            assertThat(server.decide(new PeerCredentials(1, otherUid + 1, 0), new byte[3]).status()).isEqualTo(FdProtocol.STATUS_PEER_NOT_ALLOWED);
        }
    }

    /** In a user namespace, a refused client with the overflow uid is logged as what it is: any user the namespace does not map. */
    @Test
    void aRefusedClientWithTheOverflowUidOfAUserNamespaceIsLoggedAsAnyUnmappedUser() {
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            provider.export(provider.allocate(SIZE));
            FdServer server = provider.server();
            PeerCredentials overflow = new PeerCredentials(1, 65534, 65534);
            assertThat(server.refusedPeerMessage(overflow, UserNamespace.of(List.of("0 1000 1"), 65534)))
                    .contains("refused a client with uid 65534").contains("stands for every user the namespace does not map");
            assertThat(server.refusedPeerMessage(overflow, UserNamespace.of(List.of("0 0 4294967295"), 65534)))
                    .as("in the initial namespace, 65534 is one user").doesNotContain("stands for every user");
        }
    }

    /**
     * A provider that runs as the overflow uid of its user namespace (a container run as nobody)
     * cannot tell a client of its own user from one of any unmapped user: both show that uid.
     * While its socket is {@code 0600} only its own user can connect at all; once
     * {@code memfd.allowed.uids} opens it to everyone, its own uid admits only where listed.
     */
    @Test
    void theOwnUidAdmitsOnlyWhereItIsNoOverflowUidOrTheSocketIsTheOwnersAlone() {
        UserNamespace nobodyInAContainer = UserNamespace.of(List.of("65534 1000 1"), 65534);
        UserNamespace initial = UserNamespace.of(List.of("0 0 4294967295"), 65534);
        assertThat(FdServer.ownUidProvesTheUser(65534, Set.of(), nobodyInAContainer)).as("a 0600 socket").isTrue();
        assertThat(FdServer.ownUidProvesTheUser(65534, Set.of(4321), nobodyInAContainer)).isFalse();
        assertThat(FdServer.ownUidProvesTheUser(65534, Set.of(4321), initial)).as("65534 is one user there").isTrue();
        assertThat(FdServer.ownUidProvesTheUser(1000, Set.of(4321), nobodyInAContainer)).isTrue();
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            provider.export(provider.allocate(SIZE));
            String own = Integer.toUnsignedString(ownUid);
            // This test's own uid made the overflow uid of a namespace, to read what such a provider logs.
            assertThat(provider.server().refusedPeerMessage(new PeerCredentials(1, ownUid, 0),
                    UserNamespace.of(List.of(own + " 1000 1"), Integer.toUnsignedLong(ownUid))))
                    .contains("uid " + own + " is this provider's own, but this provider runs as the overflow uid of its user namespace")
                    .contains("and memfd.allowed.uids (CONDUIT_MEMFD_ALLOWED_UIDS) opens the socket to every user")
                    .contains("Add " + own + " to memfd.allowed.uids if all of them may receive chunks");
        }
    }

    /**
     * A user the server does not admit may connect as fast as it likes: the refusals are said once
     * a minute, with their count, instead of once each (2000 connects made 2000 WARNINGs).
     */
    @Test
    void refusalsAreSaidOnceAMinuteWithTheirCount() {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        List<String> warnings = recording.warnings();
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(new TestContext(Map.of(), shared, recording))) {
            provider.export(provider.allocate(SIZE));
            FdServer server = provider.server();
            for (int i = 0; i < 2000; i++) server.logRefusedPeer(new PeerCredentials(1, otherUid, 0));
        }
        assertThat(warnings).filteredOn(w -> w.contains("refused")).singleElement().asString().contains("uid " + Integer.toUnsignedString(otherUid));
    }

    @Test
    void anotherUserIsRefusedWhenNoUidsAreAllowed() {
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(SIZE);
            byte[] request = FdProtocol.request(MemfdPayload.decode(new PayloadReader(provider.export(chunk))).token());
            assertThat(provider.server().decide(new PeerCredentials(1, otherUid, ownUid), request))
                    .isEqualTo(new FdServer.Decision(FdProtocol.STATUS_PEER_NOT_ALLOWED, null));
            // root is another user too: the kernel lets root connect regardless of the socket's mode, the server does not.
            if (ownUid != 0) {
                assertThat(provider.server().decide(new PeerCredentials(1, 0, 0), request).status()).isEqualTo(FdProtocol.STATUS_PEER_NOT_ALLOWED);
            }
        }
    }

    /**
     * A user who may not import is refused as it connects, before the server reads a byte: one
     * that sends nothing cannot hold the server for memfd.server.timeout (an hour here), which
     * {@code decide}'s own refusal, after the request, would let it. The peer's uid is another
     * user's through the libc the server asks SO_PEERCRED of.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void anotherUserIsRefusedBeforeTheServerWaitsForItsRequest() {
        Libc seenAsAnotherUser = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    try {
                        Object result = method.invoke(libc, args);
                        return method.getName().equals("peerCredentials")
                                ? new PeerCredentials(((PeerCredentials) result).pid(), otherUid, otherUid) : result;
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (MemfdProvider provider = MemfdProvider.open(seenAsAnotherUser, TestContext.of(shared, Map.of("memfd.server.timeout", "1h")))) {
            provider.export(provider.allocate(SIZE));
            try (Wire.Reply reply = Wire.exchange(libc, shared.resolve(provider.server().socketName()).toString(), new byte[0])) {
                assertThat(reply.bytes()).containsExactly(FdProtocol.STATUS_PEER_NOT_ALLOWED);
                assertThat(reply.fds()).isEmpty();
            }
        }
    }

    @Test
    void malformedRequestsAndUnknownTokensGetTheirStatus() {
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(SIZE);
            byte[] token = MemfdPayload.decode(new PayloadReader(provider.export(chunk))).token();
            byte[] request = FdProtocol.request(token);
            FdServer server = provider.server();
            PeerCredentials us = new PeerCredentials(1, ownUid, 0);

            byte[] version = request.clone();
            version[0] = 2;
            assertThat(server.decide(us, version).status()).isEqualTo(FdProtocol.STATUS_OTHER_VERSION);
            // Judged by its version before its length: another version may lay its request out otherwise.
            assertThat(server.decide(us, Arrays.copyOf(version, 5)).status()).isEqualTo(FdProtocol.STATUS_OTHER_VERSION);
            assertThat(server.decide(us, Arrays.copyOf(version, 40)).status()).isEqualTo(FdProtocol.STATUS_OTHER_VERSION);
            assertThat(server.decide(us, Arrays.copyOf(request, 16)).status()).isEqualTo(FdProtocol.STATUS_BAD_REQUEST);
            assertThat(server.decide(us, Arrays.copyOf(request, 18)).status()).isEqualTo(FdProtocol.STATUS_BAD_REQUEST);
            assertThat(server.decide(us, new byte[0]).status()).isEqualTo(FdProtocol.STATUS_BAD_REQUEST);
            assertThat(server.decide(us, FdProtocol.request(new byte[16])).status()).isEqualTo(FdProtocol.STATUS_UNKNOWN_TOKEN);

            provider.free(chunk);
            assertThat(server.decide(us, request)).isEqualTo(new FdServer.Decision(FdProtocol.STATUS_UNKNOWN_TOKEN, null));
        }
    }

    /** A request of another version is answered with status 4 and the version the server reads. */
    @Test
    void overTheWireAnotherVersionGetsStatusFourAndTheServersVersionAndAPartialRequestIsDropped() {
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            provider.export(provider.allocate(SIZE));
            String socket = shared.resolve(provider.server().socketName()).toString();
            byte[] otherVersion = FdProtocol.request(new byte[16]);
            otherVersion[0] = 7;
            try (Wire.Reply reply = Wire.exchange(libc, socket, otherVersion)) {
                assertThat(reply.bytes()).containsExactly(FdProtocol.STATUS_OTHER_VERSION, FdProtocol.VERSION);
                assertThat(reply.fds()).isEmpty();
            }
            // A client that sends part of a request and then nothing is dropped unanswered after memfd.server.timeout.
            try (FileDescriptor client = libc.socket(SocketFlags.SOCK_STREAM)) {
                libc.connect(client, socket);
                libc.sendmsg(client, MemorySegment.ofArray(new byte[] {1, 2, 3}));
                try (Arena arena = Arena.ofConfined()) {
                    assertThat(libc.poll(client, PollEvents.POLLIN, 10_000)).isNotZero();
                    assertThat(libc.recv(client, arena.allocate(16), 0)).isZero();
                }
            }
        }
    }

    /**
     * A request of another version that is shorter than ours is answered at its first byte, not
     * held for memfd.server.timeout (an hour here) waiting for bytes its version may not have.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aShorterRequestOfAnotherVersionIsAnsweredWithoutWaitingForTheRest() {
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(
                TestContext.of(shared, Map.of("memfd.server.timeout", "1h")))) {
            provider.export(provider.allocate(SIZE));
            String socket = shared.resolve(provider.server().socketName()).toString();
            try (Wire.Reply reply = Wire.exchange(libc, socket, new byte[] {2, 0, 0})) {
                assertThat(reply.bytes()).containsExactly(FdProtocol.STATUS_OTHER_VERSION, FdProtocol.VERSION);
            }
        }
    }

    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aClientThatConnectsAndSendsNothingCannotWedgeTheServer() {
        Map<String, String> config = Map.of("memfd.server.timeout", "200ms", "memfd.connect.timeout", "30s");
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared, config));
             FileDescriptor silent = libc.socket(SocketFlags.SOCK_STREAM)) {
            Chunk chunk = provider.allocate(SIZE);
            byte[] payload = provider.export(chunk);
            chunk.segment().set(JAVA_LONG, 0, 123);
            libc.connect(silent, shared.resolve(provider.server().socketName()).toString());

            try (ChunkMapping mapping = new MemfdPlugin().ipcImporter(TestContext.of(shared, config))
                    .map(new PayloadReader(payload), SIZE)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(123);
            }
            // The silent client was dropped: its end sees end of stream.
            assertThat(libc.poll(silent, PollEvents.POLLIN, 10_000)).isNotZero();
            try (Arena arena = Arena.ofConfined()) {
                assertThat(libc.recv(silent, arena.allocate(8), 0)).isZero();
            }
            assertThat(provider.server().thread().isAlive()).isTrue();
        }
    }

    /**
     * An admitted client may connect and stay silent again and again: each drop is a WARNING, said
     * once a minute with the count of those held back, as for refused users (three silent clients
     * made three WARNINGs, and one that kept at it one per memfd.server.timeout). The import behind
     * them is served once all three were dropped, so it finds every WARNING made.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void silentClientsAreSaidOnceAMinuteWithTheirCount() {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        List<String> warnings = recording.warnings();
        Map<String, String> config = Map.of("memfd.server.timeout", "50ms", "memfd.connect.timeout", "30s");
        List<FileDescriptor> silent = new java.util.ArrayList<>();
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(new TestContext(config, shared, recording))) {
            Chunk chunk = provider.allocate(SIZE);
            byte[] payload = provider.export(chunk);
            String socket = shared.resolve(provider.server().socketName()).toString();
            for (int i = 0; i < 3; i++) {
                FileDescriptor client = libc.socket(SocketFlags.SOCK_STREAM);
                silent.add(client);
                libc.connect(client, socket);
            }
            try (ChunkMapping mapping = new MemfdPlugin().ipcImporter(TestContext.of(shared, config)).map(new PayloadReader(payload), SIZE)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
            }
        } finally {
            silent.forEach(FileDescriptor::close);
        }
        assertThat(warnings).filteredOn(w -> w.contains("dropped")).singleElement().asString()
                .contains("within memfd.server.timeout");
    }

    /**
     * Out of descriptors, more than accept fails: a class the JVM first loads or initializes then
     * fails too, and a JDK class that failed to initialize stays broken (in a child JVM out of
     * descriptors, java.util.logging's formatter failed to read tzdb.dat, and every later log call
     * threw {@code NoClassDefFoundError}). Here accept fails with EMFILE twice and with such an
     * Error once, and the server's first two log calls throw it: the server pauses after each failure and
     * serves the import behind them. The WARNING of accept's EMFILE threw, the ERROR that said the
     * server stopped threw too, and the thread ended for good: every later import timed out
     * (until 2026-12-06).
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void theServerServesAnImportAfterABurstOfFailedAcceptsAndLogCallsOutOfDescriptors() {
        java.util.concurrent.atomic.AtomicInteger accepts = new java.util.concurrent.atomic.AtomicInteger();
        Libc outOfDescriptors = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("accept")) {
                        switch (accepts.incrementAndGet()) {
                            case 1, 2 -> throw new dev.conduit.linux.ErrnoException("accept4", dev.conduit.linux.Errno.EMFILE, "socket",
                                    "injected by the test");
                            case 3 -> throw new NoClassDefFoundError("a class first loaded while no descriptor was free (injected)");
                            default -> { }
                        }
                    }
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        java.util.concurrent.atomic.AtomicInteger logCalls = new java.util.concurrent.atomic.AtomicInteger();
        System.Logger failingFirst = (System.Logger) java.lang.reflect.Proxy.newProxyInstance(System.Logger.class.getClassLoader(),
                new Class<?>[] {System.Logger.class}, (proxy, method, args) -> {
                    if (method.getName().equals("log") && Thread.currentThread().getName().startsWith("conduit-memfd-server")
                            && logCalls.incrementAndGet() <= 2) {
                        throw new NoClassDefFoundError("Could not initialize class sun.util.calendar.ZoneInfoFile (injected)");
                    }
                    try {
                        return method.invoke(recording, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        Map<String, String> config = Map.of("memfd.connect.timeout", "10s");
        try (MemfdProvider provider = MemfdProvider.open(outOfDescriptors, new TestContext(config, shared, failingFirst))) {
            Chunk chunk = provider.allocate(SIZE);
            byte[] payload = provider.export(chunk);
            chunk.segment().set(JAVA_LONG, 0, 123);

            try (ChunkMapping mapping = new MemfdPlugin().ipcImporter(TestContext.of(shared, config)).map(new PayloadReader(payload), SIZE)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(123);
            }
            assertThat(accepts.get()).as("accepts tried").isGreaterThanOrEqualTo(4);
            assertThat(provider.server().thread().isAlive()).isTrue();
        }
        assertThat(recording.at(System.Logger.Level.ERROR)).as("nothing ended the server").isEmpty();
    }

    /**
     * A rebind of a removed socket cut short by an Error (a class that fails to load out of
     * descriptors) closes its new socket and removes its temporary name, as for an exception, and
     * the next check binds the name. The temporary name was left bound, and its socket open, until
     * the process ended.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aRebindCutShortByAnErrorLeavesNoTemporaryNameAndIsTriedAgain() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        Libc failingOnce = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("listen") && Thread.currentThread().getName().startsWith("conduit-memfd-server")
                            && once.compareAndSet(false, true)) {
                        throw new NoClassDefFoundError("a class first loaded while no descriptor was free (injected)");
                    }
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        try (MemfdProvider provider = MemfdProvider.open(failingOnce, new TestContext(Map.of(), shared, recording))) {
            provider.export(provider.allocate(SIZE));
            Path socket = shared.resolve(provider.server().socketName());
            Files.delete(socket);

            while (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
                Thread.sleep(50); // bounded by the timeout; not a measurement
            }
            assertThat(once).as("the rebind failed once").isTrue();
            assertThat(Leaks.files(shared)).as("no temporary name left").noneMatch(name -> name.endsWith(FdProtocol.BIND_SUFFIX));
            assertThat(recording.warnings().getFirst()).contains("binding it again failed (a class first loaded");
        }
    }

    /**
     * A shared directory removed and made again at its path while its provider serves (a cleanup
     * that recreates it): the rebind fails, and the new directory gets no temporary name from the
     * rebinds tried every second. Until 2026-12-07 the rebind bound by path, so in the new
     * directory, looked for the name through the descriptor of the old one, found it gone and
     * gave up, and every second left a {@code .bind} socket file there.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aSharedDirectoryMadeAgainAtItsPathIsLeftNoTemporaryNamesByTheRebind() throws Exception {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        try (MemfdProvider provider = MemfdProvider.open(libc, new TestContext(Map.of(), shared, recording))) {
            provider.export(provider.allocate(SIZE));
            for (String name : Leaks.files(shared)) Files.delete(shared.resolve(name));
            Files.delete(shared);
            Files.createDirectory(shared);

            while (recording.warnings().stream().noneMatch(warning -> warning.contains("binding it again failed"))) {
                Thread.sleep(50); // bounded by the timeout; not a measurement
            }
            assertThat(Leaks.files(shared)).as("what the failed rebind left in the new directory")
                    .noneMatch(name -> name.endsWith(FdProtocol.BIND_SUFFIX));
        }
    }

    /**
     * A shared directory removed and made again at its path before its provider's first export:
     * the export is refused naming the removal and the remedy, and the new directory gets no
     * socket. Until 2026-12-07 the server bound its socket by path, so in the new directory, then
     * refused it as "gone" through the old directory's descriptor and left it there, one per
     * export tried.
     */
    @Test
    void aSharedDirectoryMadeAgainAtItsPathBeforeTheFirstExportGetsNoSocketFromIt() throws Exception {
        try (MemfdProvider provider = MemfdProvider.open(libc, TestContext.of(shared))) {
            Chunk chunk = provider.allocate(SIZE);
            for (String name : Leaks.files(shared)) Files.delete(shared.resolve(name));
            Files.delete(shared);
            Files.createDirectory(shared);

            Throwable refused = org.assertj.core.api.Assertions.catchThrowable(() -> provider.export(chunk));
            assertThat(Leaks.files(shared)).as("what the failed start left in the new directory").isEmpty();
            assertThat(refused).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageContaining("ENOENT")
                    .hasMessageContaining("names the shared directory the provider opened, which was removed since: make " + shared
                            + " again and restart this process");
            provider.free(chunk);
        }
    }

    /**
     * A reply the server cannot send for a cause of its own side (here ETOOMANYREFS, which the
     * kernel answers when the producer's user has more descriptors in flight, passed and not yet
     * received, than its open-file limit: an admitted importer that asks for chunks and never reads
     * the replies can get there) is a WARNING naming the errno and the remedy, once a minute with
     * the count of those held back; the importer is told only that the connection closed. It was a
     * DEBUG line, as for a client that went away, so the producer's log said nothing while every
     * import failed. A client that goes away mid-exchange stays a DEBUG line.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aReplyTheServerCannotSendIsAWarningNamingTheCauseAndTheRemedy() {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        Libc tooManyInFlight = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("sendmsg") && ((FileDescriptor[]) args[2]).length > 0) {
                        throw new dev.conduit.linux.ErrnoException("sendmsg", dev.conduit.linux.Errno.ETOOMANYREFS, "socket",
                                "injected by the test");
                    }
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (MemfdProvider provider = MemfdProvider.open(tooManyInFlight, new TestContext(Map.of(), shared, recording))) {
            byte[] payload = provider.export(provider.allocate(SIZE));
            dev.conduit.spi.IpcImporter importer = new MemfdPlugin().ipcImporter(TestContext.of(shared));
            for (int i = 0; i < 3; i++) {
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> importer.map(new PayloadReader(payload), SIZE))
                        .hasMessageContaining("closed the connection without answering")
                        .hasMessageContaining("or its fd server could not send the answer, and a WARNING in the producer's log names why");
            }
            // Its own user's client that goes away is no cause for a WARNING.
            try (FileDescriptor client = libc.socket(SocketFlags.SOCK_STREAM)) {
                libc.connect(client, shared.resolve(provider.server().socketName()).toString());
            }
            assertThat(provider.server().thread().isAlive()).isTrue();
        }
        assertThat(recording.warnings()).singleElement().asString()
                .contains("memfd fd server on " + shared + "/conduit-memfd-")
                .contains("could not answer a client with uid " + Integer.toUnsignedString(ownUid))
                .contains("ETOOMANYREFS")
                .contains("more descriptors in flight")
                .contains("ulimit -n")
                .contains("the importer was told only that the connection closed");
    }

    /**
     * The server sends its whole reply on its non-blocking connection: a sendmsg that finds no room (WOULD_BLOCK) is tried
     * again once the socket has room, and one that takes part of the reply (the descriptor travels with its first byte) is
     * followed by the rest. The return value was ignored: the importer got the first byte and the end of stream, and
     * failed "ended its reply after 1 of 9 bytes" (or "closed the connection without answering"), the producer's log silent.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aReplyTheSocketTakesInPartsOrAfterWaitingForRoomArrivesWhole() {
        java.util.concurrent.atomic.AtomicInteger replies = new java.util.concurrent.atomic.AtomicInteger();
        Libc shortSends = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("sendmsg") && ((FileDescriptor[]) args[2]).length > 0) {
                        // First no room, then the first byte alone, with the descriptor.
                        if (replies.getAndIncrement() == 0) return Libc.WOULD_BLOCK;
                        return libc.sendmsg((FileDescriptor) args[0], ((MemorySegment) args[1]).asSlice(0, 1), (FileDescriptor[]) args[2]);
                    }
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        try (MemfdProvider provider = MemfdProvider.open(shortSends, new TestContext(Map.of(), shared, recording))) {
            Chunk chunk = provider.allocate(SIZE);
            chunk.segment().set(JAVA_LONG, 0, 0x1234_5678_9ABCL);
            byte[] payload = provider.export(chunk);
            dev.conduit.spi.IpcImporter importer = new MemfdPlugin().ipcImporter(TestContext.of(shared));
            try (ChunkMapping mapping = importer.map(new PayloadReader(payload), SIZE)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(0x1234_5678_9ABCL);
            }
            assertThat(replies.get()).as("sendmsg calls with the descriptor").isEqualTo(2);
        }
        assertThat(recording.warnings()).isEmpty();
    }

    /**
     * Descriptors a client sends with its request are never installed in the server's process
     * (it reads requests without room for any, so the kernel drops them), and the request is
     * answered as it would be without them.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void descriptorsAClientSendsWithItsRequestStayOutOfTheServersProcess() throws InterruptedException {
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            byte[] token = MemfdPayload.decode(new PayloadReader(provider.export(provider.allocate(SIZE)))).token();
            String socket = shared.resolve(provider.server().socketName()).toString();
            long before = Leaks.openFdsWhenQuiet();
            byte[] otherVersion = FdProtocol.request(token);
            otherVersion[0] = 7;
            for (byte[] request : List.of(FdProtocol.request(token), FdProtocol.request(new byte[16]), otherVersion)) {
                try (FileDescriptor client = libc.socket(SocketFlags.SOCK_STREAM);
                     FileDescriptor first = libc.memfdCreate("conduit-sent-to-server", 0);
                     FileDescriptor second = libc.socket(SocketFlags.SOCK_STREAM)) {
                    libc.connect(client, socket);
                    libc.sendmsg(client, MemorySegment.ofArray(request), first, second, client);
                    try (Wire.Reply reply = receiveUntilClosed(client)) {
                        assertThat(reply.status()).isEqualTo(request == otherVersion ? FdProtocol.STATUS_OTHER_VERSION
                                : Arrays.equals(request, FdProtocol.request(token)) ? FdProtocol.STATUS_OK : FdProtocol.STATUS_UNKNOWN_TOKEN);
                        assertThat(reply.fds()).hasSize(reply.status() == FdProtocol.STATUS_OK ? 1 : 0);
                    }
                }
            }
            assertThat(Leaks.openFdsSettlingAt(before)).as("descriptors once every exchange is over").isEqualTo(before);
            assertThat(provider.server().thread().isAlive()).isTrue();
        }
    }

    /** What the server sent on {@code client} until it closed. */
    private Wire.Reply receiveUntilClosed(FileDescriptor client) {
        byte[] buffer = new byte[64];
        int received = 0;
        List<FileDescriptor> fds = new java.util.ArrayList<>();
        while (true) {
            assertThat(libc.poll(client, PollEvents.POLLIN, 10_000)).as("the server answers").isNotZero();
            dev.conduit.linux.ReceivedMessage message = libc.recvmsg(client, MemorySegment.ofArray(buffer).asSlice(received), 4);
            fds.addAll(message.fds());
            if (message.bytes() <= 0) {
                return new Wire.Reply(Arrays.copyOf(buffer, received), fds);
            }
            received += message.bytes();
        }
    }

    /**
     * More importers at once than the socket's backlog holds (64) are all served: a connect that
     * finds the backlog full is tried again until memfd.connect.timeout, and nothing stays open.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void moreImportersAtOnceThanTheBacklogHoldsAreAllServedAndLeaveNothingOpen() throws Exception {
        int importers = 150;
        Map<String, String> config = Map.of("memfd.connect.timeout", "60s");
        try (MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared, config))) {
            Chunk chunk = provider.allocate(SIZE);
            chunk.segment().set(JAVA_LONG, 0, 4242);
            byte[] payload = provider.export(chunk);
            dev.conduit.spi.IpcImporter importer = new MemfdPlugin().ipcImporter(TestContext.of(shared, config));
            try (ChunkMapping warmUp = importer.map(new PayloadReader(payload), SIZE)) {
                assertThat(warmUp.segment().get(JAVA_LONG, 0)).isEqualTo(4242);
            }
            long before = Leaks.openFdsWhenQuiet();
            java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
            List<java.util.concurrent.Future<Long>> imports = new java.util.ArrayList<>();
            try (var threads = java.util.concurrent.Executors.newFixedThreadPool(importers)) {
                for (int i = 0; i < importers; i++) {
                    imports.add(threads.submit(() -> {
                        start.await();
                        try (ChunkMapping mapping = importer.map(new PayloadReader(payload), SIZE)) {
                            return mapping.segment().get(JAVA_LONG, 0);
                        }
                    }));
                }
                start.countDown();
                for (java.util.concurrent.Future<Long> result : imports) {
                    assertThat(result.get()).isEqualTo(4242);
                }
            }
            assertThat(Leaks.openFdsSettlingAt(before)).as("descriptors once every import is closed").isEqualTo(before);
            assertThat(Leaks.memfdMappings()).as("the producer's own mapping only").isEqualTo(1);
        }
    }

    /**
     * A socket replaced, between its bind and its chmod, by a symbolic link to a file of this user
     * (another user who may write a shared directory that is not sticky), by a file, or by that
     * user's own socket (which it would have made rw-rw-rw- for itself): the start
     * fails naming the path and what is there, changes nothing, and the next export starts the
     * server with its socket's mode. The chmod went by path and followed the link: with
     * memfd.allowed.uids set, the user's file (~/.bashrc, say) became rw-rw-rw- (found by a review).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"a symbolic link", "a regular file", "another user's socket"})
    void aSocketReplacedBeforeItsChmodFailsTheStartNamingWhatIsThereAndChangesNothing(String planted, @TempDir Path home)
            throws Exception {
        Path victim = Files.createFile(home.resolve("bashrc"), PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        Libc replacing = replacingTheSocketAfterBind(address -> once.compareAndSet(false, true), address -> {
            switch (planted) {
                case "a symbolic link" -> Files.createSymbolicLink(address, victim);
                case "a regular file" -> Files.createFile(address, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
                default -> {
                    // Its own socket, which that user would gladly see made rw-rw-rw- (the tests run as root, who may chown).
                    try (java.nio.channels.ServerSocketChannel theirs = java.nio.channels.ServerSocketChannel.open(
                            java.net.StandardProtocolFamily.UNIX)) {
                        theirs.bind(java.net.UnixDomainSocketAddress.of(address));
                    }
                    Files.setAttribute(address, "unix:uid", otherUid, LinkOption.NOFOLLOW_LINKS);
                }
            }
        });
        String found = planted.equals("another user's socket")
                ? "a socket of uid " + Integer.toUnsignedString(otherUid) + ", not of this process's user (uid " + libc.geteuid() + ")"
                : planted;
        Map<String, String> config = Map.of("memfd.allowed.uids", Integer.toUnsignedString(otherUid));
        try (MemfdProvider provider = MemfdProvider.open(replacing, TestContext.of(shared, config))) {
            Chunk chunk = provider.allocate(SIZE);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> provider.export(chunk))
                    .isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageStartingWith("cannot set the permissions of the memfd fd server's socket " + shared.resolve("conduit-memfd-"))
                    .hasMessageContaining(" to rw-rw-rw-: " + shared.resolve("conduit-memfd-"))
                    .hasMessageContaining(".sock is now " + found + ", not the socket this process bound there")
                    .hasMessageContaining("nothing was changed")
                    .hasMessageContaining("make it sticky (chmod +t");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(victim))).isEqualTo("rw-------");
            assertThat(Leaks.files(shared)).as("what the failed start left").singleElement()
                    .satisfies(name -> assertThat(name).endsWith(".lease"));

            provider.export(chunk);
            Path socket = shared.resolve(provider.server().socketName());
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)))
                    .isEqualTo("rw-rw-rw-");
        }
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(victim))).isEqualTo("rw-------");
    }

    /**
     * The rebind of a removed socket, which anyone who may remove it can make the server try every
     * second, meets the same: its temporary name replaced by a symbolic link after the bind is
     * neither chmodded through nor renamed into place, said in the rebind's WARNING, and the next
     * rebind binds the name. It chmodded the link's target, then renamed the link to the socket's name.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aRebindWhoseSocketIsReplacedByASymbolicLinkChangesNothingAndIsTriedAgain(@TempDir Path home) throws Exception {
        Path victim = Files.createFile(home.resolve("bashrc"), PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        Libc replacing = replacingTheSocketAfterBind(
                address -> address.toString().endsWith(FdProtocol.BIND_SUFFIX) && once.compareAndSet(false, true),
                address -> Files.createSymbolicLink(address, victim));
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        Map<String, String> config = Map.of("memfd.allowed.uids", Integer.toUnsignedString(otherUid));
        try (MemfdProvider provider = MemfdProvider.open(replacing, new TestContext(config, shared, recording))) {
            provider.export(provider.allocate(SIZE));
            Path socket = shared.resolve(provider.server().socketName());
            Files.delete(socket);

            while (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS) || recording.warnings().isEmpty()) {
                Thread.sleep(50); // bounded by the timeout; not a measurement
            }
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(victim))).isEqualTo("rw-------");
            assertThat(Files.isSymbolicLink(socket)).as("%s is a link", socket).isFalse();
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)))
                    .isEqualTo("rw-rw-rw-");
            assertThat(recording.warnings().getFirst())
                    .contains("binding it again failed (cannot set the permissions of the memfd fd server's socket "
                            + shared.resolve("conduit-memfd-"))
                    .contains(FdProtocol.BIND_SUFFIX + " is now a symbolic link, not the socket this process bound there")
                    .contains("it is tried every second");
            assertThat(Leaks.files(shared)).as("no temporary name left").noneMatch(name -> name.endsWith(FdProtocol.BIND_SUFFIX));
        }
    }

    /**
     * A start that fails once the server's thread could run (a logger that throws on its DEBUG
     * "listening on") leaves no thread: the thread was started before that log, so the start's
     * cleanup closed the listener and the stop eventfd under it, and it polled the closed numbers
     * (or whatever files the process gave them next) for the life of the process. The provider
     * starts a server again at its next export.
     */
    @Test
    void aServerWhoseStartFailsAfterItsSetUpLeavesNoThreadAndTheNextExportStartsOne() {
        java.util.concurrent.atomic.AtomicBoolean throwing = new java.util.concurrent.atomic.AtomicBoolean();
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        System.Logger throwingOnDebug = (System.Logger) java.lang.reflect.Proxy.newProxyInstance(System.Logger.class.getClassLoader(),
                new Class<?>[] {System.Logger.class}, (proxy, method, args) -> {
                    if (method.getName().equals("log") && args[0] == System.Logger.Level.DEBUG && throwing.get()) {
                        throw new IllegalStateException("the logger failed (injected)");
                    }
                    try {
                        return method.invoke(recording, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (MemfdProvider provider = MemfdProvider.open(libc, new TestContext(Map.of(), shared, throwingOnDebug))) {
            Chunk chunk = provider.allocate(SIZE);
            throwing.set(true);

            org.assertj.core.api.Assertions.assertThatThrownBy(() -> provider.export(chunk)).hasMessage("the logger failed (injected)");

            assertThat(Leaks.serverThreads()).as("the server's thread").isEmpty();
            throwing.set(false);
            provider.export(chunk);
            assertThat(provider.server().thread().isAlive()).isTrue();
        }
        assertThat(Leaks.serverThreads()).isEmpty();
    }

    /**
     * Where /proc does not show this process, the socket is chmodded by name only in a directory
     * where no other user can replace it: a sticky one (as /dev/shm) works, one others may write
     * that is not sticky fails the start naming /proc and chmod +t. It chmodded by name in either.
     */
    @Test
    void withoutProcTheSocketIsChmoddedByNameOnlyWhereNoOtherUserCanReplaceIt() throws Exception {
        Path noProc = shared.resolve("no-proc-self-fd");
        try (dev.conduit.shm.SharedDirectory directory = dev.conduit.shm.SharedDirectory.open(libc, shared, "shared.dir");
             dev.conduit.shm.OwnerLease lease = dev.conduit.shm.OwnerLease.acquire(libc, directory, FdProtocol.FILE_PREFIX)) {
            libc.fchmod(directory.fd(), 0777);
            // Closed at once should it start: a server left running would fail the next test's count of server threads.
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> FdServer.start(libc, directory, lease, Set.of(otherUid),
                            1_000_000_000L, System.getLogger("test"), noProc).close())
                    .isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageContaining(noProc + ", through which the socket is reached without following a link put in its "
                            + "place, is not there, and " + shared + " lets other users replace the files in it")
                    .hasMessageContaining("nothing was changed: mount /proc")
                    .hasMessageContaining("chmod +t");
            assertThat(Leaks.files(shared)).singleElement().satisfies(name -> assertThat(name).endsWith(".lease"));

            libc.fchmod(directory.fd(), 01777);
            try (FdServer server = FdServer.start(libc, directory, lease, Set.of(otherUid), 1_000_000_000L,
                    System.getLogger("test"), noProc)) {
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(shared.resolve(server.socketName()),
                        LinkOption.NOFOLLOW_LINKS))).isEqualTo("rw-rw-rw-");
            }
        }
    }

    /**
     * A server whose thread cannot start (the process, or its cgroup, at its limit of threads:
     * Thread.start throws OutOfMemoryError "unable to create native thread") fails its start with a
     * ConduitException naming the server, the limit and the remedy, and leaves no socket, file or
     * descriptor; a start once a thread can be had serves. It threw the JVM's bare error, with no
     * remedy, from a worker's creation and a pool's first export.
     */
    @Test
    void aServerWhoseThreadCannotStartSaysWhichLimitToRaiseAndLeavesNothing() throws Exception {
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached (injected by the test)");
        try (dev.conduit.shm.SharedDirectory directory = dev.conduit.shm.SharedDirectory.open(libc, shared, "shared.dir");
             dev.conduit.shm.OwnerLease lease = dev.conduit.shm.OwnerLease.acquire(libc, directory, FdProtocol.FILE_PREFIX)) {
            long before = Leaks.openFdsWhenQuiet();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> FdServer.start(libc, directory, lease, Set.of(), 1_000_000_000L,
                            System.getLogger("test"), FdProtocol.PROC_SELF_FD, serve -> new Thread(serve) {
                                @Override
                                public void start() {
                                    throw noThread;
                                }
                            }))
                    .isInstanceOf(dev.conduit.spi.ConduitException.class).hasCause(noThread)
                    .hasMessageContaining("cannot start the memfd fd server at " + shared)
                    .hasMessageContaining("unable to create native thread").hasMessageContaining("limit of threads")
                    .hasMessageContaining("ulimit -u").hasMessageContaining("pids.max").hasMessageContaining("TasksMax");
            assertThat(Leaks.files(shared)).as("what the failed start left").singleElement()
                    .satisfies(name -> assertThat(name).endsWith(".lease"));
            assertThat(Leaks.openFds()).as("descriptors after the failed start").isEqualTo(before);
            try (FdServer server = FdServer.start(libc, directory, lease, Set.of(), 1_000_000_000L, System.getLogger("test"))) {
                assertThat(shared.resolve(server.socketName())).exists();
            }
        }
        assertThat(Leaks.serverThreads()).isEmpty();
    }

    /** What puts something in place of a socket's file, given its path: a symbolic link, another file. */
    private interface Plant {
        void at(Path address) throws java.io.IOException;
    }

    /**
     * The real libc, except that a bind whose address {@code when} picks is followed at once by
     * the socket's file replaced with what {@code plant} puts there, as another user who may write
     * the directory could.
     */
    private Libc replacingTheSocketAfterBind(java.util.function.Predicate<Path> when, Plant plant) {
        return (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    Object result;
                    try {
                        result = method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                    if (method.getName().equals("bind") && when.test(Path.of((String) args[1]))) {
                        Path address = Path.of((String) args[1]);
                        Files.delete(address);
                        plant.at(address);
                    }
                    return result;
                });
    }

    @Test
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hang guard, not a speed check: close() joins uninterruptibly
    void closeStopsTheServerWhileAClientHoldsAConnectionAndLeavesNoSocketOrThread() {
        Map<String, String> config = Map.of("memfd.server.timeout", "1h");
        MemfdProvider provider = (MemfdProvider) new MemfdPlugin().openMemoryProvider(TestContext.of(shared, config));
        try (FileDescriptor silent = libc.socket(SocketFlags.SOCK_STREAM)) {
            provider.export(provider.allocate(SIZE));
            FdServer server = provider.server();
            libc.connect(silent, shared.resolve(server.socketName()).toString());
            libc.sendmsg(silent, MemorySegment.ofArray(new byte[] {1}));
            // Closed only once the server waits for the rest: closed before it accepts, it stops from its accept loop, and
            // the stop while it waits for a request would go untested.
            long giveUp = System.nanoTime() + 10_000_000_000L;
            while (Arrays.stream(server.thread().getStackTrace()).noneMatch(frame -> frame.getMethodName().equals("receiveRequest"))) {
                if (System.nanoTime() > giveUp) throw new AssertionError("the server never waited for the request (a hang guard)");
                Thread.onSpinWait();
            }

            provider.close();

            assertThat(server.thread().isAlive()).isFalse();
            assertThat(Leaks.serverThreads()).isEmpty();
            assertThat(Leaks.files(shared)).isEmpty();
            assertThat(libc.poll(silent, PollEvents.POLLIN, 10_000)).isNotZero();
        }
    }
}
