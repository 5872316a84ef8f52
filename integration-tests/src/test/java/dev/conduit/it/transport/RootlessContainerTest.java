package dev.conduit.it.transport;

import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.CommandLoop;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.RemotePeer;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rootless container (rootless podman or Docker, {@code unshare --user --map-root-user}) and a
 * host process of the same user, as docs/runtime.md ("Host and container") promises: the
 * container's JVM runs under {@link Launcher#rootlessContainer(int)} (root of a user namespace of
 * its own that maps it to host uid {@value #USER}, with its own PID, IPC, UTS, mount and network
 * namespaces, the shared directory bind-mounted at another path), the host's under
 * {@link Launcher#asUser(int)} as the same host uid, in the host's namespaces: neither is root on
 * the host. Each sees the other's files as its own user's (the container as its uid 0), so no
 * {@code *.allowed.uids} or {@code *.trusted.uids} key is set. Each test runs also with the
 * container as podman's {@code --userns=keep-id} makes it ({@link Launcher#keepIdContainer(int)}):
 * its JVM runs as uid {@value #USER} inside the container too, and sees the host's files and
 * socket credentials as that uid, not as its root's. The shared directory belongs to that
 * user, {@code 0700}. And a container run as nobody by another user, whose workers and the host
 * process's are refused each other's, each side told why. Runs in CI, as root (to start processes
 * as those users), with user namespaces open to them; without them it fails, naming the settings,
 * never skips.
 */
class RootlessContainerTest {

    /** The host user that runs both sides: a user's uid, as rootless podman runs. */
    private static final int USER = 1000;
    /** Another host user, whose rootless container runs as nobody. */
    private static final int OTHER_USER = 1001;
    private static final int NOBODY = Launcher.Container.NOBODY;

    /**
     * The host process and the container exchange mixed messages each way; the container's JVM
     * gets {@code kill -9}; the host's error handler reports {@code PeerFailedException} of reason
     * {@code DIED}, found by the lease watch, and the host reclaims the container's files while its
     * worker is open; once it closed its worker, the shared directory is empty
     * ({@link ContainerTransportTest#exchangeThenKill}).
     */
    @ParameterizedTest
    @CsvSource({"memfd, ROOT_OF_ITS_NAMESPACE", "posix, ROOT_OF_ITS_NAMESPACE", "memfd, KEEP_ID", "posix, KEEP_ID"})
    void aRootlessContainerAndAHostProcessOfItsUserExchangeMessagesAndTheHostSeesTheContainerDie(String plugin, ContainerUser user,
                                                                                                @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        exchangeThenKill(plugin, user, ownedByTheUser(shared), true);
    }

    /** The other direction: the host process gets {@code kill -9}, the container sees it die and reclaims its files. */
    @ParameterizedTest
    @CsvSource({"memfd, ROOT_OF_ITS_NAMESPACE", "posix, ROOT_OF_ITS_NAMESPACE", "memfd, KEEP_ID", "posix, KEEP_ID"})
    void aRootlessContainerSeesAHostProcessOfItsUserDie(String plugin, ContainerUser user, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        exchangeThenKill(plugin, user, ownedByTheUser(shared), false);
    }

    private static void exchangeThenKill(String plugin, ContainerUser user, Path shared, boolean killTheContainer) throws Exception {
        ContainerTransportTest.exchangeThenKill(plugin, shared, user.launcher(), Launcher.asUser(USER), killTheContainer,
                (container, host) -> assertRootless(user, container.child().hello(), host.child().hello(), shared));
    }

    /**
     * Regions of a host process imported in the container, and the container's in the host
     * process, by their handles: each reads the other's pattern and writes its own, which the
     * exporter reads; once both closed, the shared directory is empty.
     */
    @ParameterizedTest
    @CsvSource({"memfd, ROOT_OF_ITS_NAMESPACE", "posix, ROOT_OF_ITS_NAMESPACE", "memfd, KEEP_ID", "posix, KEEP_ID"})
    void aRootlessContainerAndAHostProcessOfItsUserImportEachOthersRegions(String plugin, ContainerUser user,
                                                                          @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        ownedByTheUser(shared);
        try (RemotePeer container = RemotePeer.start(shared, user.launcher());
             RemotePeer host = RemotePeer.start(shared, Launcher.asUser(USER))) {
            assertRootless(user, container.child().hello(), host.child().hello(), shared);
            container.open("transports=" + plugin);
            host.open("transports=" + plugin);
            container.pool(plugin);
            host.pool(plugin);
            long size = 1 << 20;
            container.allocate("c", plugin, size);
            host.allocate("h", plugin, size);
            container.fill("c", 11);
            host.fill("h", 12);

            assertThat(container.importRegion("from-host", host.export("h"))).as("the host's region, imported in the container").isEqualTo(size);
            assertThat(host.importRegion("from-container", container.export("c"))).as("the container's region, imported on the host")
                    .isEqualTo(size);
            container.assertPattern("from-host", 12);
            host.assertPattern("from-container", 11);
            container.fill("from-host", 21);
            host.fill("from-container", 22);
            host.assertPattern("h", 21);
            container.assertPattern("c", 22);
            Setup.report("%s rootless container (uid %d's namespace, its JVM there as uid %s) <-> host process of uid %d: a 1 MiB region "
                    + "imported each way", plugin, USER, user.uidInside(), USER);

            container.release("from-host");
            host.release("from-container");
            container.free("c");
            host.free("h");
            container.closeConduit();
            host.closeConduit();
            assertThat(container.exit()).as("the container's exit code").isZero();
            assertThat(host.exit()).as("the host process's exit code").isZero();
        }
        assertThat(Setup.files(shared)).as("left in the shared directory once both closed").isEmpty();
    }

    /**
     * A container run as nobody by another host user (rootless {@code podman run --user nobody} of
     * uid {@value #OTHER_USER}: {@link Launcher#nobodyContainer(int)}) and a host process of
     * {@value #USER}, sharing a host directory every user may write, sticky as {@code /dev/shm}:
     * their workers do not connect, either way, and each side is told why and what to do. The
     * container's JVM runs as 65534, the overflow uid, which the host's lease shows as there too:
     * it hears that the peer is another user's, outside its namespace's map, with both uids and the
     * one-user remedy, never that the lease is its own user's, refused by a security module
     * (UserNamespaceTest has the rule; this is the real setting). The host hears that the lease
     * belongs to uid {@value #OTHER_USER}. Both refusals are {@code ConduitException}s, not peer
     * failures; neither connect leaves a descriptor, a mapping or an error handler call on either
     * side, and once both workers closed, the shared directory is empty.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aContainerRunAsNobodyByAnotherUserAndAHostProcessAreEachToldThePeerIsAnotherUsersAndKeepNothing(
            String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setAttribute(shared, "unix:mode", 01777); // sticky, as /dev/shm: each user's files are its own to remove
        try (RemoteTransportPeer container = RemoteTransportPeer.start(shared, Launcher.nobodyContainer(OTHER_USER));
             RemoteTransportPeer host = RemoteTransportPeer.start(shared, Launcher.asUser(USER))) {
            Map<String, String> inside = container.child().hello();
            assertThat(inside.get("uid")).as("the container's uid in its user namespace").isEqualTo(Integer.toString(NOBODY));
            assertThat(inside.get("ns.user")).as("the container's user namespace").isNotEqualTo(CommandLoop.namespace("user"));
            assertThat(inside.get("hostname")).as("the container's hostname").isEqualTo(Launcher.Container.HOSTNAME);
            assertThat(inside.get("shared")).as("the container's CONDUIT_SHARED_DIR").isNotEqualTo(shared.toString());
            assertThat(host.child().hello().get("uid")).as("the host process's uid").isEqualTo(Integer.toString(USER));

            WorkerAddress h = host.worker("h", plugin, "SINGLE");
            WorkerAddress c = container.worker("c", plugin, "SINGLE");
            List<String> files = Setup.files(shared);
            OpenResources containerHeld = container.resources();
            OpenResources hostHeld = host.resources();

            ChildJvm.Failure inContainer = container.child().callExpectingFailure("connect", "c", "to-host", HexFormat.of().formatHex(h.toBytes()));
            assertThat(inContainer.type()).as("what the container's connect threw: %s", inContainer).isEqualTo("ConduitException");
            assertThat(inContainer.message()).as("the container's connect to the host's worker")
                    .contains(plugin + ": cannot reach the peer: its lease ").contains("(EACCES)")
                    .contains("the peer worker belongs to another user (its lease shows as uid " + NOBODY + ", this process runs as uid "
                            + NOBODY + ")")
                    .contains("this process is uid " + NOBODY + " here, " + OTHER_USER + " in the parent user namespace")
                    .contains("uid " + NOBODY + " is the overflow uid, which every user this namespace does not map shows as")
                    .contains("workers connect only within one user").contains("run both processes as one user")
                    .doesNotContain("security module").doesNotContain("this worker's own user's");

            ChildJvm.Failure onHost = host.child().callExpectingFailure("connect", "h", "to-container", HexFormat.of().formatHex(c.toBytes()));
            assertThat(onHost.type()).as("what the host's connect threw: %s", onHost).isEqualTo("ConduitException");
            assertThat(onHost.message()).as("the host process's connect to the container's worker")
                    .contains(plugin + ": cannot reach the peer: its lease " + shared.resolve("conduit-" + plugin + "-worker-"))
                    .contains("(EACCES)")
                    .contains("the peer worker belongs to another user (its lease belongs to uid " + OTHER_USER + ", this process runs as uid "
                            + USER + ")")
                    .contains("workers connect only within one user").contains("run both processes as one user")
                    .doesNotContain("security module").doesNotContain("overflow");
            Setup.report("%s container run as nobody by uid %d <-> host process of uid %d: refused both ways; in the container: %s",
                    plugin, OTHER_USER, USER, inContainer.message());

            assertThat(container.resources()).as("what the container holds after its refused connect").isEqualTo(containerHeld);
            assertThat(host.resources()).as("what the host process holds after its refused connect").isEqualTo(hostHeld);
            assertThat(Setup.files(shared)).as("the shared directory after both refused connects").isEqualTo(files);
            container.assertNoFailures("c");
            host.assertNoFailures("h");

            container.closeWorker("c");
            host.closeWorker("h");
            assertThat(Setup.files(shared)).as("left once both closed their workers").isEmpty();
        }
    }

    /** The user's own directory, as a rootless container's volume is: {@code shared}, owned by {@link #USER}, {@code 0700}. */
    private static Path ownedByTheUser(Path shared) throws IOException {
        Files.setAttribute(shared, "unix:uid", USER);
        Files.setAttribute(shared, "unix:gid", USER);
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwx------"));
        return shared;
    }

    /** Whom the container's JVM runs as, in the container. */
    enum ContainerUser {
        /** Its root, host user {@link #USER} ({@code unshare --map-root-user}, podman's default). */
        ROOT_OF_ITS_NAMESPACE,
        /** {@link #USER} itself, as podman's {@code --userns=keep-id} runs it. */
        KEEP_ID;

        Launcher launcher() {
            return this == KEEP_ID ? Launcher.keepIdContainer(USER) : Launcher.rootlessContainer(USER);
        }

        String uidInside() {
            return this == KEEP_ID ? Integer.toString(USER) : "0";
        }
    }

    /**
     * The container's JVM is {@code user} of a user namespace of its own, with its own other
     * namespaces and its view of the directory; the host process is host user {@link #USER}, in
     * this JVM's namespaces.
     */
    private static void assertRootless(ContainerUser user, Map<String, String> container, Map<String, String> host, Path shared) {
        assertThat(container.get("uid")).as("the container's uid in its user namespace").isEqualTo(user.uidInside());
        assertThat(host.get("uid")).as("the host process's uid").isEqualTo(Integer.toString(USER));
        assertThat(container.get("ns.user")).as("the container's user namespace").isNotEqualTo(CommandLoop.namespace("user"));
        assertThat(host.get("ns.user")).as("the host process's user namespace").isEqualTo(CommandLoop.namespace("user"));
        assertThat(container.get("hostname")).as("the container's hostname").isEqualTo(Launcher.Container.HOSTNAME)
                .isNotEqualTo(CommandLoop.hostname());
        assertThat(container.get("shared")).as("the container's CONDUIT_SHARED_DIR").isNotEqualTo(shared.toString());
        assertThat(host.get("shared")).as("the host process's CONDUIT_SHARED_DIR").isEqualTo(shared.toString());
        CommandLoop.namespaces().forEach((kind, ours) -> {
            assertThat(container.get("ns." + kind)).as("the container's %s namespace", kind).isNotEqualTo(ours);
            assertThat(host.get("ns." + kind)).as("the host process's %s namespace", kind).isEqualTo(ours);
        });
    }
}
