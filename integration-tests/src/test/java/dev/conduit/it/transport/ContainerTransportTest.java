package dev.conduit.it.transport;

import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.CommandLoop;
import dev.conduit.it.process.Launcher;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shared-memory transports between the host and an isolated "container": a child JVM under
 * {@link Launcher#container()} — new PID, IPC, UTS, mount and network namespaces, another
 * hostname, the shared directory bind-mounted at another path and named by its own
 * {@code CONDUIT_SHARED_DIR}. Reachability is proven by what each side can open in the shared
 * directory, liveness by leases under {@code flock}, wake-ups by a futex in shared memory: all of
 * it crosses those namespaces (the wake-ups both ways with each side asleep in {@code await}
 * between messages:
 * {@link #hostAndContainerAsleepInAwaitWakeEachOtherForEveryMessageOfAPingPong}; the other tests
 * busy-poll). Runs in CI as root; without {@code unshare} or root it fails (never
 * skips), naming what is missing.
 */
class ContainerTransportTest {

    private static final long MESSAGES = 100_000;
    /**
     * How long no message may arrive, or a call's tail or one event (a death report) may take: a
     * hang guard, not a speed check. No {@code @Timeout} bounds a whole test: the streams' waits
     * run from the last message taken ({@link Setup#waitWhileProgressing}), and every call to a
     * child or to a worker's thread has its own reply timeout.
     */
    private static final Duration GUARD = Duration.ofSeconds(120);
    /** How often a wait asks a child how far its receiver got. */
    private static final Duration CHILD_POLL = Duration.ofMillis(20);

    /**
     * This JVM and a container exchange 10^5 mixed messages each way at the same time, each checked
     * on arrival; then the container's JVM gets {@code kill -9} and this JVM's endpoint to it fails
     * through the error handler with {@code PeerFailedException} of reason {@code DIED}, and this
     * JVM's liveness check reclaims the container's files while this JVM stays open (until
     * 2026-12-07 the test looked only once this JVM had closed, and a close reclaims too); once
     * this JVM closes, the shared directory is empty.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void hostAndContainerExchangeMessagesAndTheHostSeesTheContainerDie(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        Traffic.Receiver fromContainer = new Traffic.Receiver();
        try (RemoteTransportPeer container = RemoteTransportPeer.start(shared, Launcher.container())) {
            assertIsolated(container, shared);
            try (WorkerHost host = WorkerHost.start("host", Setup.conduit(shared, plugin), ThreadMode.SINGLE, true)) {
                host.run(() -> host.worker().onMessage(Traffic.DATA, fromContainer));
                Set<String> hostOwners = Setup.owners(shared);
                WorkerAddress c = container.worker("c", plugin, "SINGLE");
                container.receive("c");
                container.connect("c", "to-host", host.address());
                host.connect("to-container", c);

                container.stream("s", "c", "to-host", 1, Traffic.Profile.MIXED, MESSAGES, 4096);
                AtomicLong hostSent = new AtomicLong();
                Future<Long> sent = host.submit(() -> {
                    long n = Traffic.stream(host.worker(), host.endpoint("to-container"), 2, Traffic.Profile.MIXED, 0, MESSAGES, 4096,
                            hostSent, p -> { });
                    Traffic.drain(host.worker(), host.endpoint("to-container"));
                    return n;
                });
                // Both directions as one count: the guard runs from the last message either side took.
                Setup.waitWhileProgressing(() -> fromContainer.messages() + container.messages("c"), 2 * MESSAGES,
                        () -> fromContainer.errorCount() > 0 || sent.state() == Future.State.FAILED, GUARD,
                        () -> "messages taken by the host and the container; the host took " + fromContainer.summary()
                                + ", its stream had sent " + hostSent.get() + " (" + sent.state() + "); the container took "
                                + container.stats("c") + ", its stream: " + container.status("s"),
                        Setup.pause(CHILD_POLL));
                assertThat(sent.get(GUARD.toSeconds(), TimeUnit.SECONDS)).isEqualTo(MESSAGES);
                assertThat(container.join("s", GUARD)).containsEntry("sent", Long.toString(MESSAGES)).containsEntry("failed", "false");
                assertThat(fromContainer.errors()).isEmpty();
                assertThat(fromContainer.received(1)).isEqualTo(MESSAGES);
                assertThat(container.stats("c")).as("what the container received")
                        .containsEntry("errors", "0").containsEntry("streams", "2:" + MESSAGES);
                Setup.report("%s host <-> container: %d mixed messages each way, checked on both sides", plugin, MESSAGES);

                List<String> before = Setup.files(shared);
                long killedAt = System.nanoTime();
                container.kill();
                long reaped = System.nanoTime();
                Setup.waitUntil(() -> !host.failures().isEmpty(), GUARD, () -> "the host's error handler was not called");
                List<WorkerHost.Failure> failures = host.failures();
                assertThat(failures).extracting(WorkerHost.Failure::endpoint).containsExactly("to-container");
                assertThat(failures).extracting(WorkerHost.Failure::type).containsExactly("PeerFailedException");
                assertThat(failures).extracting(WorkerHost.Failure::reason).containsExactly(PeerFailedException.Reason.DIED);
                // Not timed: the cause shows the path, the lease watch of every liveness.interval (ManyPeersTest).
                assertThat(failures).extracting(WorkerHost.Failure::message).as("detected by the lease watch, not the heartbeat")
                        .allMatch(m -> m.contains("peer worker died (its lease"));
                Setup.report("%s death detection, kill -9 of the container's JVM -> error handler on the host: %.1f ms (target 100; "
                        + "the JVM was reaped %.1f ms after the signal). %s", plugin, (failures.getFirst().nanoTime() - killedAt) / 1e6,
                        (reaped - killedAt) / 1e6, failures.getFirst().message());
                assertThat(host.progressErrors()).isEmpty();
                Setup.awaitReclaimOfTheDeadProcesssFiles(shared, hostOwners, before, GUARD);
            }
        }
        assertThat(Setup.files(shared)).as("left in the shared directory once the host closed; the container's files were reclaimed")
                .isEmpty();
    }

    /**
     * Wake-ups cross the container's namespaces both ways: this JVM and a container ping-pong
     * 5 000 small messages, each side asleep in {@code worker.await(10 s)} between them rather than
     * spinning (this JVM until each echo arrives, the container's worker thread until each message
     * does, in a job that holds that thread: {@link Traffic#takeAsleep}). Every message is the last
     * until its answer, so only the futex wake of the sender in the other namespaces ends a sleep:
     * a lost one leaves an await asleep for its whole 10 s with the message there, and it returns
     * {@code false}. None may, on either side; an await that ran out before the message came (its
     * sender kept off the processor) lost nothing and waits on, up to the hang guard. Both sides'
     * {@code liveness.interval} is an hour: by default an await also wakes every 20 ms to check
     * peers, and the next slice would find the message and hide a lost wake-up. (Nothing else wakes
     * a sleeper on a queue that is empty: {@code heartbeat.timeout} only bounds how long a sender
     * waits for a receiver's room, which a ping-pong never does.) And the awaits sleep: no more of
     * them return {@code true} before their message than there are messages. Every other test here
     * busy-polls, which a futex private to one process (or keyed to another mapping) would pass.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void hostAndContainerAsleepInAwaitWakeEachOtherForEveryMessageOfAPingPong(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        long rounds = 5_000;
        int stream = 4;
        String noLivenessTicks = plugin + ".liveness.interval=1h";
        Traffic.Receiver echoes = new Traffic.Receiver();
        try (RemoteTransportPeer container = RemoteTransportPeer.start(shared, Launcher.container())) {
            assertIsolated(container, shared);
            try (dev.conduit.Conduit conduit = Setup.conduit(shared, plugin, noLivenessTicks);
                 dev.conduit.Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                worker.onMessage(Traffic.ECHO, echoes);
                WorkerAddress c = container.worker("c", plugin, "SINGLE", noLivenessTicks);
                container.connect("c", "back", worker.address());
                container.echo("c", "back");
                dev.conduit.Endpoint ep = worker.connect(c);
                container.takeAsleep("asleep", "c", rounds, GUARD);

                Traffic.Asleep host = Traffic.pingPongAsleep(worker, ep, stream, rounds, echoes, GUARD);
                // Before the container's count: the container waits for messages this side stopped sending.
                assertThat(host.ranOut()).as("the host's awaits that slept their whole 10 s with the container's echo there: lost "
                        + "wake-ups (at %d of %d round trips)", host.messages(), rounds).isZero();
                Traffic.Asleep inContainer = container.joinAsleep("asleep", GUARD);
                Setup.report("%s host <-> container asleep in await: %d round trips; the host: %d awaits, %d ran out with the echo "
                                + "there, %d woke before it; the container: %d awaits, %d ran out with a message there, %d woke before one",
                        plugin, host.messages(), host.awaits(), host.ranOut(), host.wokeEarly(), inContainer.awaits(),
                        inContainer.ranOut(), inContainer.wokeEarly());
                assertThat(inContainer.ranOut()).as("the container's awaits that slept their whole 10 s with the host's message "
                        + "there: lost wake-ups (at %d of %d messages)", inContainer.messages(), rounds).isZero();
                assertThat(host.wokeEarly()).as("the host's awaits that returned true before the echo, in %d awaits: more than one "
                        + "per round trip is an await that does not sleep", host.awaits()).isLessThanOrEqualTo(host.messages());
                assertThat(inContainer.wokeEarly()).as("the container's awaits that returned true before a message, in %d awaits: "
                        + "more than one per message is an await that does not sleep", inContainer.awaits())
                        .isLessThanOrEqualTo(inContainer.messages());
                assertThat(echoes.errors()).as("what the host found wrong in the echoes").isEmpty();
                assertThat(echoes.received(stream)).as("echoes").isEqualTo(rounds);
                assertThat(inContainer.messages()).as("messages the container took asleep").isEqualTo(rounds);
                assertThat(container.stats("c")).as("what the container received").containsEntry("errors", "0")
                        .containsEntry("streams", stream + ":" + rounds);
                container.assertNoFailures("c");
                assertThat(ep.isFailed()).isFalse();
            }
        }
    }

    /**
     * The other direction: a host-side child and a container child connect both ways and exchange
     * messages; the host-side child gets {@code kill -9}; the container's error handler reports
     * {@code PeerFailedException} of reason {@code DIED}, found by the lease watch, for its endpoint
     * to it, and the container reclaims its files while its worker is open (until 2026-12-07 the
     * test looked only once that worker had closed, and a close reclaims too).
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aContainerSeesAHostProcessDie(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        containerSeesHostProcessDie(plugin, shared);
    }

    /**
     * As above, with the host's view of the shared directory as long as a Docker volume's
     * ({@code /var/lib/docker/volumes/<name>/_data}): too long for an AF_UNIX address, so the host
     * side's memfd socket is bound, and the container's reached, through {@code /proc/self/fd}; the
     * container sees it at its short mount point.
     */
    @Test
    void aHostWhoseSharedDirectoryPathIsTooLongForASocketAddressExchangesWithAContainerOverMemfd(
            @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        Path volume = Files.createDirectories(shared.resolve("volumes").resolve("conduit-" + "0123456789abcdef".repeat(4)).resolve("_data"));
        assertThat(volume.toString().length()).as("the host's path").isGreaterThan(107);
        containerSeesHostProcessDie("memfd", volume);
    }

    private static void containerSeesHostProcessDie(String plugin, Path shared) throws Exception {
        exchangeThenKill(plugin, shared, Launcher.container(), Launcher.direct(), false,
                (container, hostSide) -> assertIsolated(container, shared));
    }

    /**
     * A container child ({@code containerLauncher}) and a host-side child ({@code hostLauncher}),
     * once {@code started} checked them, connect both ways and exchange 10^4 mixed messages each way,
     * checked on arrival; then one of them gets {@code kill -9} (the container's JVM where
     * {@code killTheContainer}); the survivor's error handler reports {@code PeerFailedException} of
     * reason {@code DIED}, found by the lease watch, for its endpoint to it, and the survivor
     * reclaims the dead one's files while its worker is open; once it closed its worker, the shared
     * directory is empty.
     */
    static void exchangeThenKill(String plugin, Path shared, Launcher containerLauncher, Launcher hostLauncher, boolean killTheContainer,
                                 java.util.function.BiConsumer<RemoteTransportPeer, RemoteTransportPeer> started) throws Exception {
        long messages = 10_000;
        try (RemoteTransportPeer container = RemoteTransportPeer.start(shared, containerLauncher);
             RemoteTransportPeer hostSide = RemoteTransportPeer.start(shared, hostLauncher)) {
            started.accept(container, hostSide);
            RemoteTransportPeer survivor = killTheContainer ? hostSide : container;
            RemoteTransportPeer victim = killTheContainer ? container : hostSide;
            String survivorName = killTheContainer ? "the host side" : "the container";
            String victimName = killTheContainer ? "the container's JVM" : "a host process";
            WorkerAddress s = survivor.worker("s", plugin, "SINGLE");
            Set<String> survivors = Setup.owners(shared);
            WorkerAddress v = victim.worker("v", plugin, "SINGLE");
            survivor.receive("s");
            victim.receive("v");
            survivor.connect("s", "to-victim", v);
            victim.connect("v", "to-survivor", s);
            survivor.stream("s", "s", "to-victim", 1, Traffic.Profile.MIXED, messages, 4096);
            victim.stream("s", "v", "to-survivor", 2, Traffic.Profile.MIXED, messages, 4096);
            // Both directions as one count: the guard runs from the last message either side took.
            Setup.waitWhileProgressing(() -> survivor.messages("s") + victim.messages("v"), 2 * messages, () -> false, GUARD,
                    () -> "messages taken by both; " + survivorName + " took " + survivor.stats("s") + ", its stream: "
                            + survivor.status("s") + "; " + victimName + " took " + victim.stats("v") + ", its stream: " + victim.status("s"),
                    Setup.pause(CHILD_POLL));
            survivor.join("s", GUARD);
            victim.join("s", GUARD);
            assertThat(survivor.stats("s")).containsEntry("errors", "0").containsEntry("streams", "2:" + messages);
            assertThat(victim.stats("v")).containsEntry("errors", "0").containsEntry("streams", "1:" + messages);
            survivor.assertNoFailures("s");
            victim.assertNoFailures("v");
            List<String> before = Setup.files(shared);

            long killedAt = System.nanoTime();
            victim.kill();
            long reaped = System.nanoTime();
            Setup.waitUntil(() -> !survivor.failures("s").isEmpty(), GUARD, () -> "the error handler of " + survivorName + " was not called");
            List<String[]> failures = survivor.failures("s");
            assertThat(failures).hasSize(1);
            assertThat(failures.getFirst()[0]).isEqualTo("to-victim");
            assertThat(failures.getFirst()[2]).isEqualTo("PeerFailedException");
            assertThat(failures.getFirst()[3]).as("the reason").isEqualTo(PeerFailedException.Reason.DIED.name());
            assertThat(failures.getFirst()[4]).as("the message, blanks as _").contains("peer_worker_died_(its_lease");
            Setup.report("%s death detection, kill -9 of %s (%s) -> error handler in %s: %.1f ms (target 100; the JVM was reaped %.1f ms "
                            + "after the signal)", plugin, victimName, (killTheContainer ? containerLauncher : hostLauncher), survivorName,
                    (Long.parseLong(failures.getFirst()[1]) - killedAt) / 1e6, (reaped - killedAt) / 1e6);
            Setup.awaitReclaimOfTheDeadProcesssFiles(shared, survivors, before, GUARD);
            assertThat(survivor.progressErrors("s")).as("exceptions from progress() in %s", survivorName).isZero();

            survivor.closeWorker("s");
            assertThat(Setup.files(shared)).as("left once %s closed its worker (before: %s)", survivorName, before).isEmpty();
        }
    }

    /**
     * The host's connect to the address of a container's worker that closed in order is a peer
     * failure: the address names its shared directory by device, inode and birth time, which are
     * the host's directory's also through the container's bind mount at another path and from its
     * own mount and PID namespaces. A worker whose directory is not the host's (the container's own
     * /dev/shm) is named as such: ShmTransportTest. Where the file system records no birth time the
     * connect still says "the peer is gone, or this process sees another shared directory".
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void theHostsConnectToAContainersWorkerThatClosedIsAPeerFailure(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        try (RemoteTransportPeer container = RemoteTransportPeer.start(shared, Launcher.container())) {
            assertIsolated(container, shared);
            WorkerAddress closed = container.worker("c", plugin, "SINGLE");
            container.closeWorker("c");
            try (dev.conduit.Conduit conduit = Setup.conduit(shared, plugin);
                 dev.conduit.Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> worker.connect(closed));
                if (ShmDir.recordsBirthTimes(shared)) {
                    assertThat(thrown).isInstanceOf(dev.conduit.spi.PeerFailedException.class)
                            .hasMessageContaining(plugin + ": the peer is gone: its lease conduit-" + plugin + "-worker-")
                            .hasMessageContaining("is no longer in the shared directory " + shared + ", the very directory its address names");
                } else {
                    assertThat(thrown).isNotInstanceOf(dev.conduit.spi.PeerFailedException.class)
                            .hasMessageContaining("the peer is gone, or this process sees another shared directory");
                }
            }
        }
    }

    /**
     * The container answers the host without ever being given the host's address: each message's
     * {@code replyEndpoint()} connects back to the address the host's transport announced, from the
     * container's own view of the shared directory (its mount point, its namespaces). The host
     * ping-pongs mixed messages (up to 1 MiB) and checks every echo; when the host closes its
     * endpoint, the container's worker closes the reply endpoint, and once both workers closed
     * nothing is left in the shared directory.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aContainerAnswersTheHostThroughReplyEndpointsWithoutBeingGivenItsAddress(String plugin,
                                                                                @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        long roundTrips = 10_000;
        Traffic.Receiver echoes = new Traffic.Receiver();
        try (RemoteTransportPeer container = RemoteTransportPeer.start(shared, Launcher.container())) {
            assertIsolated(container, shared);
            try (WorkerHost host = WorkerHost.start("host", Setup.conduit(shared, plugin), ThreadMode.SINGLE, true)) {
                host.run(() -> host.worker().onMessage(Traffic.ECHO, echoes));
                WorkerAddress c = container.worker("c", plugin, "SINGLE");
                container.reply("c");
                host.connect("to-container", c);

                Future<Long> pingPong = host.submit(() -> Traffic.pingPong(host.worker(), host.endpoint("to-container"), 4,
                        Traffic.Profile.MIXED, roundTrips, echoes));
                Setup.waitWhileProgressing(() -> echoes.received(4), roundTrips, pingPong::isDone, GUARD,
                        () -> "echoes: " + echoes.summary() + "; the container: " + container.stats("c") + ", failures "
                                + container.failures("c"), Setup.pause(CHILD_POLL));
                assertThat(pingPong.get(GUARD.toSeconds(), TimeUnit.SECONDS)).as("round trips").isEqualTo(roundTrips);
                assertThat(echoes.errors()).as("what the host found wrong in the echoes").isEmpty();
                assertThat(echoes.received(4)).isEqualTo(roundTrips);
                assertThat(container.stats("c")).as("what the container received").containsEntry("errors", "0")
                        .containsEntry("streams", "4:" + roundTrips);
                container.assertNoFailures("c");
                assertThat(host.failures()).isEmpty();
                assertThat(host.progressErrors()).isEmpty();
                Setup.report("%s host -> container, answered through replyEndpoint(): %d mixed round trips, checked on both sides",
                        plugin, roundTrips);

                host.run(() -> host.endpoint("to-container").close());
                container.closeWorker("c");
            }
        }
        assertThat(Setup.files(shared)).as("left in the shared directory once both workers closed").isEmpty();
    }

    private static void assertIsolated(RemoteTransportPeer container, Path shared) {
        Map<String, String> hello = container.child().hello();
        assertThat(hello.get("hostname")).as("the container's hostname").isEqualTo(Launcher.Container.HOSTNAME)
                .isNotEqualTo(CommandLoop.hostname());
        assertThat(hello.get("shared")).as("the container's CONDUIT_SHARED_DIR")
                .isEqualTo(container.child().sharedDirectory().toString()).isNotEqualTo(shared.toString());
        // Every namespace the launcher makes, not only the PID one: a launcher that left the container in the host's IPC
        // namespace passed here until 2026-12-07, and so did any transport that relied on SysV or POSIX IPC across it.
        CommandLoop.namespaces().forEach((kind, ours) -> assertThat(hello.get("ns." + kind)).as("the container's %s namespace", kind)
                .isNotNull().isNotEqualTo(ours));
    }
}
