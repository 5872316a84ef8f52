package dev.conduit.plugin.memfd;

import dev.conduit.linux.Linux;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.ThreadMode;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * An importer, and a worker, that really run as another user (uid/gid 65534, started through
 * util-linux {@code setpriv}). The importer: the fd server's socket is {@code 0600} and the kernel
 * refuses the connection unless {@code memfd.allowed.uids} is set; with it set,
 * {@code SO_PEERCRED} admits only the listed users; and the importer takes chunks only from a
 * server of its own user or one in its {@code memfd.trusted.uids}, checked the same way. The worker: workers connect only within one
 * user. Needs root to start a process as another user; CI runs as root.
 */
class OtherUserImportTest {
    private static final long SIZE = 64 * 1024;
    private static final int OTHER = 65534;

    @TempDir
    static Path readable;

    @TempDir
    Path shared;

    private static String modulePath;
    private static Path testClasses;
    /** The copy of the TCK's jar (or classes), for the children's contexts. */
    private static Path tck;

    /** The other user cannot read this user's Maven repository: copy the module path where it can. */
    @BeforeAll
    static void copyModulePath() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("starting a process as another user needs root").isZero();
        Files.setPosixFilePermissions(readable, PosixFilePermissions.fromString("rwxr-xr-x"));
        List<String> entries = new ArrayList<>();
        int i = 0;
        for (String entry : System.getProperty("jdk.module.path").split(File.pathSeparator)) {
            Path source = Path.of(entry);
            Path target = readable.resolve((i++) + "-" + source.getFileName());
            copy(source, target);
            entries.add(target.toString());
        }
        modulePath = String.join(File.pathSeparator, entries);
        tck = readable.resolve("tck-" + TestContext.location().getFileName());
        copy(TestContext.location(), tck);
        testClasses = readable.resolve("test-classes");
        copy(Path.of(ImportingProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI()), testClasses);
    }

    private static void copy(Path source, Path target) throws IOException {
        try (Stream<Path> files = Files.walk(source)) {
            files.forEach(from -> {
                Path to = target.resolve(source.relativize(from).toString());
                try {
                    Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
                    Files.setPosixFilePermissions(to, PosixFilePermissions.fromString(Files.isDirectory(to) ? "rwxr-xr-x" : "rw-r--r--"));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }

    @Test
    @Timeout(120) // a hang guard, not a speed check
    void anotherUserIsRefusedByTheSocketModeThenBySoPeercredAndAdmittedWhenAllowed() throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));

        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Result refused = importAsOtherUser(provider);
            assertThat(refused.exitCode()).as(refused.output()).isEqualTo(3);
            assertThat(refused.output()).contains("permission denied connecting to the producer's socket")
                    .contains("add uid " + OTHER + " to memfd.allowed.uids");
        }
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared, Map.of("memfd.allowed.uids", "4321")))) {
            Result refused = importAsOtherUser(provider, "0");
            assertThat(refused.exitCode()).as(refused.output()).isEqualTo(3);
            assertThat(refused.output()).contains("refused this process's user (uid " + OTHER + ")");
        }
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared, Map.of("memfd.allowed.uids", "4321," + OTHER)))) {
            Result untrusted = importAsOtherUser(provider, "");
            assertThat(untrusted.exitCode()).as(untrusted.output()).isEqualTo(3);
            assertThat(untrusted.output()).contains("refusing to import from the fd server on " + shared)
                    .contains("it runs as uid 0 (SO_PEERCRED), not as this process's uid " + OTHER)
                    .contains("If uid 0 runs the producer, add it to memfd.trusted.uids on this side");
            Result admitted = importAsOtherUser(provider, "0");
            assertThat(admitted.exitCode()).as(admitted.output()).isZero();
            assertThat(admitted.output()).contains("read=4711").contains("left=0")
                    .as("the trusted producer's lease is its own, 0600: this user cannot judge it").contains("exporter=UNKNOWN");
        }
    }

    /**
     * A producer is gone, and another user binds its socket's name in a directory both may write
     * (as {@code /dev/shm}): an importer still holding the producer's handle connects, sees from
     * {@code SO_PEERCRED} that the listener is a user it does not trust, and leaves without sending
     * the token. The listener counts what it was sent: nothing.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void aSocketNameBoundByAnotherUserAfterItsProducerIsGoneGetsNoTokenFromAnImporter() throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        byte[] payload;
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            payload = provider.export(provider.allocate(SIZE));
        }
        String socketName = MemfdPayload.decode(new dev.conduit.spi.PayloadReader(payload, 0, payload.length, "payload.")).socketName();
        assertThat(shared.resolve(socketName)).as("the gone producer's socket").doesNotExist();
        Process impostor = new ProcessBuilder(wrapped(List.of(), java(ImpostorServer.class, shared.resolve(socketName).toString())))
                .directory(readable.toFile()).redirectErrorStream(true).start();
        try (java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(impostor.getInputStream(),
                StandardCharsets.UTF_8))) {
            assertThat(out.readLine()).as("the impostor's first line").isEqualTo("listening");
            Throwable refused = org.assertj.core.api.Assertions.catchThrowable(() -> new MemfdPlugin().ipcImporter(TestContext.of(shared))
                    .map(new dev.conduit.spi.PayloadReader(payload, 0, payload.length, "payload."), SIZE));
            assertThat(refused).isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageContaining("refusing to import from the fd server on " + shared.resolve(socketName))
                    .hasMessageContaining("it runs as uid " + OTHER + " (SO_PEERCRED), not as this process's uid 0")
                    .hasMessageContaining("the handle's token was not sent")
                    .hasMessageContaining("another user bound its socket's name: the handle is stale");
            assertThat(out.readLine()).as("what the impostor was sent").isEqualTo("received=0");
        } finally {
            if (!impostor.waitFor(30, TimeUnit.SECONDS)) {
                impostor.destroyForcibly();
                impostor.waitFor(30, TimeUnit.SECONDS);
            }
        }
        assertThat(impostor.exitValue()).isZero();
    }

    /**
     * A rootless container (podman, Docker with user namespaces): the importer runs as uid 65534 on
     * the host, as root in its own user namespace, with its own PID, IPC and mount namespaces and
     * the shared directory bind-mounted at another path. The server sees the host's uid through
     * {@code SO_PEERCRED}, so {@code memfd.allowed.uids} names that one, not the container's 0.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void aRootlessContainerOfAnAllowedUserImportsThroughItsUserNamespace() throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path mountPoint = Files.createDirectories(readable.resolve("container-mnt"));
        List<String> container = List.of("unshare", "--user", "--map-root-user", "--pid", "--ipc", "--uts", "--mount", "--fork",
                "--mount-proc", "sh", "-c", "mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"", "rootless-container",
                shared.toString(), mountPoint.toString());
        Result works = run(wrapped(container, List.of("true")));
        assertThat(works.exitCode()).as("a user namespace made by uid %d, with a bind mount in it (needs user.max_user_namespaces > 0 "
                + "and, on Ubuntu 24.04 and later, kernel.apparmor_restrict_unprivileged_userns=0): %s", OTHER, works.output()).isZero();
        // Root in its namespace, but not to the server: uid 0 would be the server's own user, and admitted.
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared, Map.of("memfd.allowed.uids", "4321")))) {
            Result refused = importAsOtherUser(provider, container, mountPoint, Integer.toString(OTHER));
            assertThat(refused.exitCode()).as(refused.output()).isEqualTo(3);
            assertThat(refused.output()).contains("refused this process's user (uid 0 here, " + OTHER + " in the parent user namespace): "
                    + "to admit it, add uid " + OTHER + " (this process's uid in the parent user namespace").contains("memfd.allowed.uids");
        }
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared, Map.of("memfd.allowed.uids", Integer.toString(OTHER))))) {
            // The host's root is a user the container's namespace does not map: it shows as the overflow uid, 65534.
            Result untrusted = importAsOtherUser(provider, container, mountPoint, "");
            assertThat(untrusted.exitCode()).as(untrusted.output()).isEqualTo(3);
            assertThat(untrusted.output()).contains("it runs as uid 65534 (SO_PEERCRED), not as this process's uid 0 here, " + OTHER
                    + " in the parent user namespace").contains("stands for every user the namespace does not map");
            Result admitted = importAsOtherUser(provider, container, mountPoint, "65534");
            assertThat(admitted.exitCode()).as(admitted.output()).isZero();
            assertThat(admitted.output()).contains("read=4711").contains("left=0");
        }
    }

    /**
     * An importer that runs as the overflow uid of its user namespace (a container run as nobody;
     * here root mapped to 65534) sees its own user's fd server as 65534, as it sees a server of any
     * user the namespace does not map. It trusts the one whose socket file it proves its own user's
     * (it may set the file's owner to itself), and refuses, the token unsent, a gone producer's
     * socket name bound by an unmapped user (here host uid 65534), which it took for its own user's
     * before; listing 65534 in {@code memfd.trusted.uids} would trust that one too.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void anImporterRunningAsTheOverflowUidTrustsTheServerWhoseSocketItProvesItsOwnUsersAndNoOther() throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx")); // the impostor binds a name here
        List<String> asOverflowUid = List.of("unshare", "--user", "--map-user=" + OTHER, "--map-group=" + OTHER, "--");
        byte[] payload;
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Result admitted = importThrough(provider, asOverflowUid, shared, "");
            assertThat(admitted.exitCode()).as(admitted.output()).isZero();
            assertThat(admitted.output()).contains("read=4711").contains("left=0");
            payload = provider.export(provider.allocate(SIZE));
        }
        String socketName = MemfdPayload.decode(new dev.conduit.spi.PayloadReader(payload, 0, payload.length, "payload.")).socketName();
        Path socket = shared.resolve(socketName);
        Process impostor = new ProcessBuilder(wrapped(List.of(), java(ImpostorServer.class, socket.toString())))
                .directory(readable.toFile()).redirectErrorStream(true).start();
        try (java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(impostor.getInputStream(),
                StandardCharsets.UTF_8))) {
            assertThat(out.readLine()).as("the impostor's first line").isEqualTo("listening");
            Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rwxrwxrwx")); // anyone may connect, as it would allow
            Result refused = run(concat(asOverflowUid, java(ImportingProcess.class, shared.toString(), HexFormat.of().formatHex(payload),
                    Long.toString(SIZE), "")));
            assertThat(refused.exitCode()).as(refused.output()).isEqualTo(3);
            assertThat(refused.output()).contains("refusing to import from the fd server on " + socket)
                    .contains("it runs as uid 65534 (SO_PEERCRED), this process's own, but this process runs as the overflow uid of its "
                            + "user namespace (uid 65534 here, 0 in the parent user namespace)")
                    .contains("its socket file could not be proven this user's").contains("the handle's token was not sent");
            assertThat(out.readLine()).as("what the impostor was sent").isEqualTo("received=0");
        } finally {
            if (!impostor.waitFor(30, TimeUnit.SECONDS)) {
                impostor.destroyForcibly();
                impostor.waitFor(30, TimeUnit.SECONDS);
            }
            Files.deleteIfExists(socket);
        }
    }

    /**
     * The same importer given the shared directory as a read-only mount (a container's
     * {@code -v DIR:DIR:ro}): setting the socket file's owner fails there ({@code EROFS}), so it
     * cannot prove its own user's server, refuses it naming the read-only mount among the causes,
     * and imports once {@code memfd.trusted.uids} lists 65534.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void anImporterRunningAsTheOverflowUidThroughAReadOnlyMountCannotProveItsServerAndSaysSo() throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        List<String> readOnlyAsOverflowUid = List.of("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && "
                        + "exec unshare --user --map-user=" + OTHER + " --map-group=" + OTHER + " -- \"$@\"", shared.toString());
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Result refused = importThrough(provider, readOnlyAsOverflowUid, shared, "");
            assertThat(refused.exitCode()).as(refused.output()).isEqualTo(3);
            assertThat(refused.output()).contains("it runs as uid 65534 (SO_PEERCRED), this process's own")
                    .contains("its socket file could not be proven this user's").contains("the shared directory is a read-only mount")
                    .contains("add 65534 to memfd.trusted.uids (CONDUIT_MEMFD_TRUSTED_UIDS)");
            Result admitted = importThrough(provider, readOnlyAsOverflowUid, shared, "65534");
            assertThat(admitted.exitCode()).as(admitted.output()).isZero();
            assertThat(admitted.output()).contains("read=4711").contains("left=0");
        }
    }

    /**
     * A provider that runs as the overflow uid of its user namespace (here root mapped to 65534)
     * sees every client of a user the namespace does not map as 65534, its own uid. With its socket
     * its user's alone (no {@code memfd.allowed.uids}) the kernel's mode check proves such a
     * client its own user, and it is served; with the socket open to every user, 65534 proves
     * nothing and the client is refused (status 2). The client is this test, host root, which that
     * namespace does map: to 65534.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void aProviderRunningAsTheOverflowUidServesItsOwnUidOnlyThroughASocketItsUserAlone() throws Exception {
        List<String> asOverflowUid = List.of("unshare", "--user", "--map-user=" + OTHER, "--map-group=" + OTHER, "--");
        assertThat(servedAs(asOverflowUid, "")).isEqualTo(FdProtocol.STATUS_OK);
        assertThat(servedAs(asOverflowUid, "4321")).isEqualTo(FdProtocol.STATUS_PEER_NOT_ALLOWED);
    }

    /** The status a {@link ServingProcess} started through {@code wrapper} with {@code allowedUids} answers this process's request with. */
    private int servedAs(List<String> wrapper, String allowedUids) throws Exception {
        Process server = new ProcessBuilder(concat(wrapper, java(ServingProcess.class, shared.toString(), allowedUids)))
                .directory(readable.toFile()).redirectErrorStream(true).start();
        try (java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(server.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line = out.readLine();
            assertThat(line).as("the serving process's first line").startsWith("payload=");
            byte[] payload = HexFormat.of().parseHex(line.substring("payload=".length()));
            MemfdPayload decoded = MemfdPayload.decode(new dev.conduit.spi.PayloadReader(payload, 0, payload.length, "payload."));
            // The reply's first byte only: a refusing server closes with the request unread, and the kernel then resets the
            // connection for a read past the refusal (Wire.exchange reads to the end).
            dev.conduit.linux.Libc libc = Linux.libc();
            try (dev.conduit.linux.FileDescriptor client = libc.socket(dev.conduit.linux.SocketFlags.SOCK_STREAM);
                 java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                libc.connect(client, shared.resolve(decoded.socketName()).toString());
                libc.sendmsg(client, java.lang.foreign.MemorySegment.ofArray(FdProtocol.request(decoded.token())));
                assertThat(libc.poll(client, dev.conduit.linux.PollEvents.POLLIN, 10_000)).as("a reply (a hang guard: poll gives up after 10 s)").isNotZero();
                java.lang.foreign.MemorySegment status = arena.allocate(1);
                assertThat(libc.recv(client, status, 0)).isOne();
                return status.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) & 0xFF;
            }
        } finally {
            server.getOutputStream().close();
            if (!server.waitFor(30, TimeUnit.SECONDS)) {
                server.destroyForcibly();
                server.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private static List<String> concat(List<String> first, List<String> then) {
        List<String> all = new ArrayList<>(first);
        all.addAll(then);
        return all;
    }

    /**
     * An importer whose real uid is another user's but whose effective uid is the producer's (a
     * set-user-id program that set only the effective one): {@code SO_PEERCRED} shows the server's
     * effective uid, which is this process's own; judged by its real uid, it refused it.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void anImporterWhoseEffectiveUidIsTheServersTrustsItWhateverItsRealUid() throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(shared))) {
            Result admitted = importThrough(provider, List.of("setpriv", "--ruid=" + OTHER, "--euid=0", "--"), shared, "");
            assertThat(admitted.exitCode()).as(admitted.output()).isZero();
            assertThat(admitted.output()).contains("read=4711").contains("left=0");
        }
    }

    /**
     * The same rootless container, given a host directory it may read but not write: memfd imports
     * only, and the reason names the uid the directory's owner sees (65534), not only the
     * container's 0.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void aRootlessContainerThatCannotWriteTheDirectoryIsToldItsUidInTheParentNamespace() throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        Result probed = run(wrapped(List.of("unshare", "--user", "--map-root-user"), java(ProbingProcess.class, shared.toString())));
        assertThat(probed.exitCode()).as(probed.output()).isZero();
        assertThat(probed.output()).contains("available=true").contains("notHere=MEMORY,AM,RMA,ATOMICS,WAKEUP")
                .contains("is not writable by this user (uid 0 here, " + OTHER + " in the parent user namespace): make it writable");
    }

    /**
     * Workers of two users do not connect, either way, and each side names both uids: the root
     * host's lease does not open for uid 65534, and the other user's lease, which root could open,
     * is refused by its owner, since its worker could never open root's lease to tell it alive from
     * dead (docs/runtime.md, "Host and container": run both as one user). Until this test the rule
     * was checked with a file system double only, never with a second real user.
     */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void workersOfTwoUsersDoNotConnectEitherWayAndEachSideNamesBothUids() throws Exception {
        workersOfRootAndAnotherUserDoNotConnect(OTHER);
    }

    /** The same with a uid of 2^31 or more, which Java's int holds as a negative number: each side names it unsigned. */
    @Test
    @Timeout(120) // a hang guard, not a speed check
    void aUidOf2To31OrMoreIsNamedUnsigned() throws Exception {
        workersOfRootAndAnotherUserDoNotConnect((int) 3_000_000_000L);
    }

    private void workersOfRootAndAnotherUserDoNotConnect(int uid) throws Exception {
        String otherUid = Integer.toUnsignedString(uid);
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx")); // both users make their files here
        try (dev.conduit.spi.Transport host = new MemfdPlugin().openTransport(TestContext.of(shared).forTransport(ThreadMode.SINGLE,
                (id, h, ho, hl, p, po, pl) -> { }))) {
            Process other = new ProcessBuilder(wrapped(uid, List.of(), java(ConnectingProcess.class, shared.toString(),
                    HexFormat.of().formatHex(host.address())))).directory(readable.toFile()).redirectErrorStream(true).start();
            // Read on a thread of its own: a blocked read ignores the test's timeout, and the child waits on its input.
            java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();
            Thread reader = Thread.ofPlatform().daemon().start(() -> {
                try (java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(other.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String line; (line = out.readLine()) != null; ) lines.add(line);
                } catch (IOException ended) {
                    // the child is gone
                }
            });
            try {
                List<String> seen = new ArrayList<>();
                while (!seen.contains("connected") && seen.stream().noneMatch(l -> l.startsWith("refused: "))) {
                    String line = lines.poll(60, TimeUnit.SECONDS);
                    if (line == null) throw new AssertionError("the other user's process said no more within 60 s: " + seen);
                    seen.add(line);
                }
                String address = seen.stream().filter(l -> l.startsWith("address=")).findFirst().orElseThrow(
                        () -> new AssertionError("the other user's process printed no address: " + seen)).substring("address=".length());
                assertThat(seen.getLast()).as("the other user's connect to root's worker")
                        .contains("refused: ").contains("(its lease belongs to uid 0, this process runs as uid " + otherUid + ")")
                        .contains("workers connect only within one user");

                Throwable refused = org.assertj.core.api.Assertions.catchThrowable(() -> host.connect(
                        new dev.conduit.spi.PayloadReader(HexFormat.of().parseHex(address)), cause -> { }));
                assertThat(refused).as("root's connect to the other user's worker").isInstanceOf(dev.conduit.spi.ConduitException.class)
                        .hasMessageContaining("belongs to uid " + otherUid + ", this worker's to uid 0")
                        .hasMessageContaining("workers connect only within one user").hasMessageContaining("run both processes as one user");
            } finally {
                other.getOutputStream().close(); // its cue to close its transport and end
                if (!other.waitFor(30, TimeUnit.SECONDS)) {
                    other.descendants().forEach(ProcessHandle::destroyForcibly);
                    other.destroyForcibly();
                    other.waitFor(30, TimeUnit.SECONDS);
                }
                reader.join(TimeUnit.SECONDS.toMillis(30));
            }
            assertThat(other.exitValue()).as("the other user's process, ended by its closed input").isZero();
        }
    }

    private record Result(int exitCode, String output) {}

    private Result importAsOtherUser(MemoryProvider provider) throws IOException, InterruptedException {
        return importAsOtherUser(provider, "");
    }

    /** Imports a chunk of {@code provider} as uid 65534, trusting the fd servers of {@code trustedUids} ({@code memfd.trusted.uids}). */
    private Result importAsOtherUser(MemoryProvider provider, String trustedUids) throws IOException, InterruptedException {
        return importAsOtherUser(provider, List.of(), shared, trustedUids);
    }

    /**
     * Imports a chunk of {@code provider} as uid 65534, through {@code wrapper} (run as that user),
     * seeing the shared directory at {@code view}, with {@code trustedUids} as its {@code memfd.trusted.uids}.
     */
    private Result importAsOtherUser(MemoryProvider provider, List<String> wrapper, Path view, String trustedUids)
            throws IOException, InterruptedException {
        return importThrough(provider, wrapped(wrapper, List.of()), view, trustedUids);
    }

    /**
     * Imports a chunk of {@code provider} through {@code wrapper} (run as this user: it sets the
     * user itself, if another), seeing the shared directory at {@code view}, with
     * {@code trustedUids} as its {@code memfd.trusted.uids}.
     */
    private Result importThrough(MemoryProvider provider, List<String> wrapper, Path view, String trustedUids)
            throws IOException, InterruptedException {
        Chunk chunk = provider.allocate(SIZE);
        chunk.segment().set(JAVA_LONG, 0, 4711);
        byte[] payload = provider.export(chunk);
        Result result = run(concat(wrapper, java(ImportingProcess.class, view.toString(), HexFormat.of().formatHex(payload),
                Long.toString(SIZE), trustedUids)));
        provider.free(chunk);
        return result;
    }

    /** A JVM running {@code main} of this module's tests with {@code args}, from the copy of the module path the other user can read. */
    private static List<String> java(Class<?> main, String... args) {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", modulePath,
                "--patch-module", "dev.conduit.plugin.memfd=" + testClasses,
                "-cp", tck.toString(), "--add-reads", "dev.conduit.plugin.memfd=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.memfd/" + main.getName()));
        command.addAll(List.of(args));
        return command;
    }

    /** {@code command} through {@code wrapper}, all as uid 65534. */
    private static List<String> wrapped(List<String> wrapper, List<String> command) {
        return wrapped(OTHER, wrapper, command);
    }

    /** {@code command} through {@code wrapper}, all as {@code uid} (unsigned) and its own group. */
    private static List<String> wrapped(int uid, List<String> wrapper, List<String> command) {
        String id = Integer.toUnsignedString(uid);
        List<String> all = new ArrayList<>(List.of("setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups", "--"));
        all.addAll(wrapper);
        all.addAll(command);
        return all;
    }

    /** Runs {@code command} to its end, at most 60 s (then it is killed and the test fails), and returns its exit code and output. */
    private static Result run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).directory(readable.toFile()).redirectErrorStream(true).start();
        process.getOutputStream().close();
        java.util.concurrent.CompletableFuture<String> output = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            throw new AssertionError("still running after 60 s, killed: " + String.join(" ", command));
        }
        return new Result(process.exitValue(), output.join());
    }
}
