package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.PeerRegion;
import dev.conduit.Worker;
import dev.conduit.internal.ThreadAllocation;
import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static dev.conduit.internal.worker.Loopbacks.longs;
import static dev.conduit.internal.worker.Loopbacks.progressUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * {@code Message.replyEndpoint()}: answering a message through the address its sender's transport
 * announced, without an address exchanged by the application, as UCX's {@code reply_ep}; shown over
 * the loopback plugin, which names senders on request.
 */
class ReplyEndpointTest {

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    /** A client and a server over one loopback plugin that names senders, SINGLE, on this thread. */
    private record Setup(LoopbackPlugin plugin, Worker client, Worker server) {
        LoopbackPlugin.LoopbackTransport serverTransport() {
            return plugin.transports.get(1);
        }
    }

    private Setup setup(boolean namesSenders) {
        return setup(namesSenders, 64);
    }

    private Setup setup(boolean namesSenders, int queueCapacity) {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", queueCapacity, false);
        plugin.namesSenders = namesSenders;
        Conduit conduit = loopbacks.conduit(plugin);
        return new Setup(plugin, conduit.newWorker(ThreadMode.SINGLE), conduit.newWorker(ThreadMode.SINGLE));
    }

    /** The server answers every request of id 1 with id 2, carrying the request's first long plus 1000, through replyEndpoint(). */
    private static List<Endpoint> answerThroughReplyEndpoint(Worker server) {
        List<Endpoint> used = new ArrayList<>();
        server.onMessage(1, m -> {
            Endpoint back = m.replyEndpoint();
            used.add(back);
            back.send(2, longs(m.payloadLong(0) + 1000));
        });
        return used;
    }

    private static List<Long> recordAnswers(Worker client) {
        List<Long> answers = new ArrayList<>();
        client.onMessage(2, m -> answers.add(m.payloadLong(0)));
        return answers;
    }

    @Test
    void aHandlerAnswersThroughTheReplyEndpointWithoutTheSendersAddressAndTheEndpointIsKeptForTheConnection() {
        Setup s = setup(true);
        List<Endpoint> used = answerThroughReplyEndpoint(s.server());
        List<Long> answers = recordAnswers(s.client());
        Endpoint toServer = s.client().connect(s.server().address());
        for (long i = 1; i <= 3; i++) toServer.send(1, longs(i));
        progressUntil(() -> answers.size() == 3, s.server(), s.client());

        assertThat(answers).containsExactly(1001L, 1002L, 1003L);
        assertThat(used).hasSize(3);
        assertThat(used.get(1)).as("one endpoint for the connection").isSameAs(used.getFirst());
        assertThat(used.get(2)).isSameAs(used.getFirst());
        assertThat(used.getFirst().transport()).isEqualTo("lo");
        assertThat(s.serverTransport().senderAddressCalls.get()).as("the sender's address asked once").isEqualTo(1);
        assertThat(used.getFirst().toString()).contains("the sender of connection");
    }

    @Test
    void twoEndpointsOfOneSenderAreAnsweredThroughOneReplyEndpointEach() {
        Setup s = setup(true);
        List<Endpoint> used = answerThroughReplyEndpoint(s.server());
        List<Long> answers = recordAnswers(s.client());
        Endpoint first = s.client().connect(s.server().address());
        Endpoint second = s.client().connect(s.server().address());
        first.send(1, longs(1));
        second.send(1, longs(2));
        first.send(1, longs(3));
        progressUntil(() -> answers.size() == 3, s.server(), s.client());

        assertThat(answers).containsExactlyInAnyOrder(1001L, 1002L, 1003L);
        assertThat(used.get(0)).isSameAs(used.get(2)).isNotSameAs(used.get(1));
    }

    @Test
    void theReplyEndpointIsClosedWhenTheSendersConnectionEndsAndAnswersAfterThatFailNamingWhy() {
        Setup s = setup(true);
        List<Endpoint> used = answerThroughReplyEndpoint(s.server());
        List<Long> answers = recordAnswers(s.client());
        Endpoint toServer = s.client().connect(s.server().address());
        toServer.send(1, longs(1));
        progressUntil(() -> answers.size() == 1, s.server(), s.client());
        Endpoint reply = used.getFirst();
        long connection = s.serverTransport().inbound.keySet().iterator().next();

        toServer.close();
        progressUntil(() -> s.serverTransport().sendersClosed.contains(connection), s.server());

        assertThat(reply.toString()).as("closed by the worker when the connection ended").contains("closed");
        // The sender's failure, as the endpoint's use would have found it; not "closed: connect again", which an application
        // that was never given the sender's address cannot do.
        assertThatThrownBy(() -> reply.send(2, longs(0))).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("(connection " + Long.toHexString(connection) + " over 'lo') has ended")
                .hasMessageContaining("answer the sender's next message, should one come, through its replyEndpoint()");
        assertThatThrownBy(() -> reply.peerRegion(new byte[16])).isInstanceOf(PeerFailedException.class);
        assertThat(s.serverTransport().endpoints.getFirst().closed).as("its transport endpoint closed too").isTrue();
    }

    /**
     * Endpoint: messages are delivered "exactly once, while both workers live". A client that sends
     * its request and closes its endpoint at once, to get the answers on its own handler, ends the
     * connection the reply endpoint answers, and the worker closes that endpoint; its worker lives
     * and still receives, so an answer waiting in the reply endpoint's local queue (the client's
     * queue was full) must still reach it, as the answer the transport had taken does; the reply
     * endpoint closes once it is handed over. Until 2026-12-07 the close discarded it, with a
     * WARNING telling the application to progress until pending() is 0 before a close it never made.
     */
    @Test
    void anAnswerQueuedLocallyWhenTheSenderClosesItsEndpointStillReachesItsLiveWorker() {
        Setup s = setup(true, 1);
        List<Endpoint> used = new ArrayList<>();
        s.server().onMessage(1, m -> {
            Endpoint back = m.replyEndpoint();
            used.add(back);
            back.send(2, longs(1001));
            back.send(2, longs(1002)); // the client's queue holds one: this one waits locally
        });
        List<Long> answers = recordAnswers(s.client());
        Endpoint toServer = s.client().connect(s.server().address());
        toServer.send(1, longs(1));
        toServer.close();

        progressUntil(() -> !used.isEmpty() && used.getFirst().toString().contains("closed"), s.server(), s.client());

        assertThat(answers).containsExactly(1001L, 1002L);
        assertThat(s.serverTransport().endpoints.getFirst().closed).as("its transport endpoint closed once drained").isTrue();
    }

    /**
     * A reply endpoint whose connection ended with answers still in its local queue keeps them only
     * while the sender's worker lives: when that worker dies before it took them, the endpoint fails,
     * counting them as discarded, and is given back (its transport endpoint closed), as every failed
     * endpoint is, not kept by the worker for good.
     */
    @Test
    void anAnswerQueuedLocallyAfterItsConnectionEndedIsCountedAndItsEndpointGivenBackWhenTheSendersWorkerDies() {
        Setup s = setup(true, 1);
        List<Endpoint> used = new ArrayList<>();
        s.server().onMessage(1, m -> {
            Endpoint back = m.replyEndpoint();
            used.add(back);
            back.send(2, longs(1001));
            back.send(2, longs(1002)); // the client's queue holds one: this one waits locally
        });
        Endpoint toServer = s.client().connect(s.server().address());
        toServer.send(1, longs(1));
        toServer.close();
        progressUntil(() -> !used.isEmpty(), s.server());
        s.plugin().transports.get(0).kill(); // the client's, before it took the first answer

        progressUntil(() -> s.serverTransport().endpoints.getFirst().closed, s.server());

        assertThat(used.getFirst().isFailed()).as("the reply endpoint failed").isTrue();
        assertThat(used.getFirst().failure()).hasMessageContaining("1 message (8 bytes) waiting in the local queue was discarded");
    }

    /**
     * A reply endpoint whose sender died is logged, as every endpoint without an error handler, but not as one whose
     * application forgot to give one to connect: it gave no connect (helper h3's kill -9 of a client, 2026-12-04).
     */
    @Test
    void theFailureOfAReplyEndpointIsLoggedNamingItAndHowToBeCalledBack() {
        Setup s = setup(true, 256);
        List<Endpoint> used = answerThroughReplyEndpoint(s.server());
        List<Long> answers = recordAnswers(s.client());
        Endpoint toServer = s.client().connect(s.server().address());
        toServer.send(1, longs(1));
        progressUntil(() -> answers.size() == 1, s.server(), s.client());
        Endpoint reply = used.getFirst();
        // Messages still queued when the client dies: the loopback tells a connection's end only once its queue is empty, and
        // takes 64 a progress, so the reply endpoint's failure is reported first, as memfd reported it to h3.
        s.server().onMessage(3, m -> { });
        for (int i = 0; i < 100; i++) toServer.send(3, longs(i));
        s.plugin().transports.getFirst().kill();

        List<java.util.logging.LogRecord> warnings = dev.conduit.testing.LoggedWarnings.loggedWhile("dev.conduit.worker", () -> {
            s.server().progress();
            s.server().progress();
        });

        assertThat(reply.isFailed()).isTrue();
        assertThat(warnings).as("once").singleElement().satisfies(w -> assertThat(w.getMessage())
                .contains(reply.failure().getMessage())
                .contains("(an endpoint that replyEndpoint() gave, which has no error handler: its next use throws this; to be "
                        + "called back, connect to the sender's address with an error handler)")
                .doesNotContain("no error handler was given to connect"));
    }

    /**
     * A reply endpoint whose sender died fails with the transport's verdict (DIED), and its WARNING
     * says "its next use throws this", as Endpoint's javadoc says of every failed endpoint ("every
     * later operation throws PeerFailedException, whose cause is failure()"). The transport then
     * tells the end of the dead sender's connection, and the runtime closes the endpoint as ended
     * (RuntimeEndpoint.closeAsEnded), and its next use still throws the failure. Until 2026-12-07
     * it threw the end's PeerFailedException instead, reason UNKNOWN, "the sender closed it, or its
     * worker closed or died", its cause not failure(), as checkUsable looked at the close before
     * the failure: a failover that switches on the reason took a dead client for one that may live on.
     */
    @Test
    void aReplyEndpointWhoseSenderDiedThrowsItsFailureAtItsNextUseAlsoOnceTheConnectionsEndWasTold() {
        Setup s = setup(true, 256);
        List<Endpoint> used = answerThroughReplyEndpoint(s.server());
        List<Long> answers = recordAnswers(s.client());
        Endpoint toServer = s.client().connect(s.server().address());
        toServer.send(1, longs(1));
        progressUntil(() -> answers.size() == 1, s.server(), s.client());
        Endpoint reply = used.getFirst();
        // As above: messages still queued when the client dies have the failure reported before the connection's end.
        s.server().onMessage(3, m -> { });
        for (int i = 0; i < 100; i++) toServer.send(3, longs(i));
        long key = s.serverTransport().inbound.keySet().iterator().next();
        s.plugin().transports.getFirst().kill();
        dev.conduit.testing.LoggedWarnings.loggedWhile("dev.conduit.worker",
                () -> progressUntil(() -> s.serverTransport().sendersClosed.contains(key), s.server()));
        assertThat(reply.failure().reason()).as("the transport's verdict").isEqualTo(PeerFailedException.Reason.DIED);

        assertThatThrownBy(() -> reply.send(2, longs(2))).isInstanceOf(PeerFailedException.class)
                .hasCause(reply.failure())
                .satisfies(e -> assertThat(((PeerFailedException) e).reason()).isEqualTo(PeerFailedException.Reason.DIED));
    }

    /**
     * Once the sender closes its endpoint, the runtime closes the reply endpoint as ended, and its
     * next use throws the end as a PeerFailedException (Message.replyEndpoint(): "the end of its
     * connection once the worker closed the endpoint for it"), which its send and flush do, and so
     * does RMA on a peer region opened on it. Until 2026-12-07 that threw the region's
     * IllegalStateException instead, "its endpoint was closed (or its worker) ... open the region
     * again on a live endpoint to the peer": the region was looked at (RuntimeEndpoint.region)
     * before the endpoint (checkUsable), blaming a close the application never made, with a remedy
     * it cannot follow (it has no address of the sender).
     */
    @Test
    void rmaOnARegionOfAReplyEndpointWhoseConnectionEndedThrowsTheEndAsItsSendDoes() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false);
        plugin.namesSenders = true;
        Conduit conduit = loopbacks.conduit(plugin, new InProcessMemoryPlugin());
        Worker client = conduit.newWorker(ThreadMode.SINGLE);
        Worker server = conduit.newWorker(ThreadMode.SINGLE);
        byte[] handle = conduit.pool("inproc").allocate(4096).exportHandle();
        List<Endpoint> used = new ArrayList<>();
        server.onMessage(1, m -> used.add(m.replyEndpoint()));
        Endpoint toServer = client.connect(server.address());
        toServer.send(1, longs(1));
        progressUntil(() -> used.size() == 1, server, client);
        Endpoint reply = used.getFirst();
        PeerRegion region = reply.peerRegion(handle);
        long key = plugin.transports.get(1).inbound.keySet().iterator().next();
        toServer.close();
        progressUntil(() -> plugin.transports.get(1).sendersClosed.contains(key), server);

        Throwable sent = catchThrowable(() -> reply.send(2, longs(2)));
        assertThat(sent).isInstanceOf(PeerFailedException.class).hasMessageContaining("has ended");
        assertThatThrownBy(() -> reply.put(longs(1), region, 0)).isInstanceOf(PeerFailedException.class)
                .hasMessage(sent.getMessage());
        assertThatThrownBy(() -> reply.get(region, 0, longs(0))).isInstanceOf(PeerFailedException.class)
                .hasMessage(sent.getMessage());
    }

    /**
     * A key the transport retired (its end told) and gave to a new connection, of another sender:
     * the answer goes to the new sender, through a new endpoint, though the thread answered the
     * key last through the old sender's endpoint (kept in its delivery context, closed since).
     */
    @Test
    void aKeyGivenToANewConnectionAfterItsEndWasToldIsAnsweredThroughANewEndpointToTheNewSender() {
        Setup s = setup(true);
        s.plugin().reusedKey = 0x77;
        Worker secondClient = loopbacks.conduit(s.plugin()).newWorker(ThreadMode.SINGLE);
        List<Endpoint> used = answerThroughReplyEndpoint(s.server());
        List<Long> firstAnswers = recordAnswers(s.client());
        List<Long> secondAnswers = recordAnswers(secondClient);
        Endpoint first = s.client().connect(s.server().address());
        first.send(1, longs(1));
        progressUntil(() -> firstAnswers.size() == 1, s.server(), s.client());
        first.close();
        progressUntil(() -> s.serverTransport().sendersClosed.contains(0x77L), s.server());

        secondClient.connect(s.server().address()).send(1, longs(2));
        progressUntil(() -> secondAnswers.size() == 1, s.server(), secondClient);
        s.client().progress();

        assertThat(secondAnswers).containsExactly(1002L);
        assertThat(firstAnswers).containsExactly(1001L);
        assertThat(used.get(1)).isNotSameAs(used.getFirst());
        assertThat(((RuntimeEndpoint) used.getFirst()).isClosed()).isTrue();
    }

    /**
     * Answers to a sender whose connect failed fail at once for as long as that connect took; the end
     * of its connection ends that span too (TransportSink.onSenderClosed forgets the failure), since
     * the key may go to a new connection once its end was told: a new sender given that key is
     * connected and answered, not refused with the old sender's failure.
     */
    @Test
    void aNewSenderGivenTheKeyOfOneWhoseConnectFailedIsConnectedAndAnsweredAtOnce() {
        Setup s = setup(true);
        s.plugin().reusedKey = 0x78;
        Worker secondClient = loopbacks.conduit(s.plugin()).newWorker(ThreadMode.SINGLE);
        List<Throwable> thrown = new CopyOnWriteArrayList<>();
        s.server().onMessage(1, m -> {
            try {
                m.replyEndpoint().send(2, longs(m.payloadLong(0) + 1000));
            } catch (RuntimeException e) {
                thrown.add(e);
            }
        });
        List<Long> secondAnswers = recordAnswers(secondClient);
        Endpoint first = s.client().connect(s.server().address());
        // The failure then stands for the 2 s its connect took: far longer than the rest of the test takes.
        s.plugin().connectTakesMillis = 2000;
        s.plugin().refuseConnect = "the sender's fd server did not answer (injected by the test)";
        first.send(1, longs(1));
        progressUntil(() -> thrown.size() == 1, s.server(), s.client());
        s.plugin().connectTakesMillis = 0;
        s.plugin().refuseConnect = null;
        first.close();
        progressUntil(() -> s.serverTransport().sendersClosed.contains(0x78L), s.server());

        secondClient.connect(s.server().address()).send(1, longs(2));
        progressUntil(() -> secondAnswers.size() == 1 || thrown.size() == 2, s.server(), secondClient);

        assertThat(thrown).as("only the first sender's answer failed").hasSize(1);
        assertThat(secondAnswers).containsExactly(1002L);
    }

    /** What {@code replyEndpoint()} throws in the server's handler of one request, {@code first} run before it is asked. */
    private static Throwable thrownByReplyEndpoint(Setup s, Runnable first) {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        s.server().onMessage(1, m -> {
            first.run();
            try {
                m.replyEndpoint();
            } catch (Exception e) { // a checked one too, which a plugin threw undeclared and the worker let through
                thrown.set(e);
            }
        });
        s.client().connect(s.server().address()).send(1, longs(1));
        progressUntil(() -> thrown.get() != null, s.server(), s.client());
        return thrown.get();
    }

    @Test
    void aMessageWhoseConnectionEndedBeforeItsHandlerAnswersIsRefusedAsAPeerFailure() {
        Setup s = setup(true);
        // The transport forgot the connection: its sender went meanwhile.
        assertThat(thrownByReplyEndpoint(s, () -> s.serverTransport().inbound.clear())).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("cannot answer the sender of connection")
                .hasMessageContaining("over 'lo'")
                .hasMessageContaining("that connection has ended");
    }

    @Test
    void aTransportThatDoesNotNameSendersIsNamedWithTheRemedy() {
        assertThat(thrownByReplyEndpoint(setup(false), () -> { })).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("transport 'lo' does not name the sender")
                .hasMessageContaining("worker.address().toBytes()");
    }

    @Test
    void aTransportThatNamesSendersButNotTheirAddressesIsNamedWithTheRemedyOnce() {
        Setup s = setup(true);
        s.plugin().withholdsSenderAddresses = true;
        Throwable thrown = thrownByReplyEndpoint(s, () -> { });
        assertThat(thrown).isInstanceOf(NotSupportedException.class)
                .hasMessageStartingWith("transport 'lo'")
                .hasMessageContaining("does not carry the address of a message's sender");
        assertThat(thrown.getMessage().split("worker\\.address\\(\\)\\.toBytes\\(\\)", -1)).as("the remedy, said once: " + thrown.getMessage())
                .hasSize(2);
    }

    /**
     * A plugin whose {@code senderAddress} fails (a bug, or a state it did not expect) is named with
     * the sender and its own words; before, its exception reached the handler as it was, naming
     * neither the transport nor what was being done.
     */
    @Test
    void aTransportThatFailsToGiveTheSendersAddressIsNamedWithItsReason() {
        Setup s = setup(true);
        Throwable thrown = thrownByReplyEndpoint(s,
                () -> s.plugin().senderAddressFault = new IllegalStateException("connection table corrupt"));
        assertThat(thrown).isExactlyInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot answer the sender of connection")
                .hasMessageContaining("over 'lo'")
                .hasMessageContaining("transport 'lo' failed to give the address the sender announced")
                .hasMessageContaining("java.lang.IllegalStateException: connection table corrupt")
                .hasCauseInstanceOf(IllegalStateException.class);
    }

    /**
     * A plugin whose {@code senderAddress} throws a checked exception undeclared (Kotlin,
     * {@code @SneakyThrows}) is named as for an unchecked one. Until 2026-12-07 the checked
     * exception reached the handler as it was, undeclared, naming neither the transport nor the sender.
     */
    @Test
    void aTransportWhoseSenderAddressThrowsACheckedExceptionUndeclaredIsNamedWithItsReason() {
        Setup s = setup(true);
        java.io.IOException unreadable = new java.io.IOException("connection table: Input/output error");
        Throwable thrown = thrownByReplyEndpoint(s, () -> s.plugin().senderAddressFault = unreadable);
        assertThat(thrown).isExactlyInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot answer the sender of connection")
                .hasMessageContaining("transport 'lo' failed to give the address the sender announced: " + unreadable)
                .hasCause(unreadable);
    }

    /** A plugin that says the sender is gone when asked for its address: a peer failure, as an ended connection's. */
    @Test
    void aTransportThatFindsTheSenderGoneWhenAskedForItsAddressIsAPeerFailure() {
        Setup s = setup(true);
        Throwable thrown = thrownByReplyEndpoint(s,
                () -> s.plugin().senderAddressFault = new PeerFailedException(PeerFailedException.Reason.DIED, "the peer is dead (its lease is not held)"));
        assertThat(thrown).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("cannot answer the sender of connection")
                .hasMessageContaining("the peer is dead (its lease is not held)")
                .hasCauseInstanceOf(PeerFailedException.class);
        assertThat(((PeerFailedException) thrown).reason()).as("the transport's, kept").isEqualTo(PeerFailedException.Reason.DIED);
    }

    @Test
    void aSenderThatCannotBeReachedIsNamedWithTheTransportsReason() {
        Setup s = setup(true);
        assertThat(thrownByReplyEndpoint(s, () -> s.plugin().refuseConnect = "the sender's queue cannot be opened from here"))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot answer the sender of connection")
                .hasMessageContaining("connecting to the address it announced failed")
                .hasMessageContaining("the sender's queue cannot be opened from here");
    }

    /**
     * Answers to a sender whose reply connect failed after a while fail at once, with that failure,
     * for as long as the connect took: a stopped client with several requests queued had each answer
     * wait out memfd.connect.timeout (2 s) inside one progress() call of the server, whose other
     * clients waited too (a helper porting a request/response service from Aeron). What is counted is
     * connects, not time: the answers follow each other in one progress() call, well inside the 2 s
     * the failed connect took. Once that span has passed, an answer connects again.
     */
    @Test
    void answersToASenderWhoseConnectFailedAfterAWhileFailAtOnceForAsLongAsItTook() {
        Setup s = setup(true);
        List<Throwable> thrown = new CopyOnWriteArrayList<>();
        s.server().onMessage(1, m -> {
            try {
                m.replyEndpoint();
            } catch (RuntimeException e) {
                thrown.add(e);
            }
        });
        Endpoint toServer = s.client().connect(s.server().address());
        s.plugin().connectTakesMillis = 2000;
        s.plugin().refuseConnect = "the sender's fd server did not answer (injected by the test)";
        int before = s.plugin().connects.get();
        for (int i = 0; i < 3; i++) toServer.send(1, longs(i));
        progressUntil(() -> thrown.size() == 3, s.server(), s.client());

        assertThat(s.plugin().connects.get() - before).as("connects to the stopped sender for three answers").isEqualTo(1);
        assertThat(thrown.getFirst()).isExactlyInstanceOf(ConduitException.class)
                .hasMessageContaining("the sender's fd server did not answer (injected by the test)");
        for (Throwable later : thrown.subList(1, 3)) {
            assertThat(later).isExactlyInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot answer the sender of connection")
                    .hasMessageContaining("said again without a new connect")
                    .hasMessageContaining("answers to this sender fail at once for as long as a failed connect to it took")
                    .hasMessageContaining("the sender's fd server did not answer (injected by the test)")
                    .hasCause(thrown.getFirst());
        }

        // The sender resumes; once as long as the failed connect took has passed, an answer connects again.
        s.plugin().connectTakesMillis = 0;
        s.plugin().refuseConnect = null;
        long until = System.nanoTime() + 2_100_000_000L;
        while (System.nanoTime() - until < 0) Thread.onSpinWait();
        toServer.send(1, longs(4));
        progressUntil(() -> s.plugin().connects.get() - before == 2, s.server(), s.client());
        for (int i = 0; i < 100; i++) {
            s.server().progress();
            s.client().progress();
        }
        assertThat(thrown).as("the answer once the failure's span passed connected again, and went through").hasSize(3);
    }

    @Test
    void aSenderFoundDeadByTheConnectIsAPeerFailureNamingTheSenderAndTheTransportsReason() {
        Setup s = setup(true);
        // Its worker died, and the connection's end is not known yet (it is, at the receiver's next liveness check).
        assertThat(thrownByReplyEndpoint(s, () -> s.plugin().connectFault = new PeerFailedException(PeerFailedException.Reason.DIED,
                "the peer is dead (its lease is not held)")))
                .isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("cannot answer the sender of connection")
                .hasMessageContaining("the peer is dead (its lease is not held)")
                .hasCauseInstanceOf(PeerFailedException.class)
                .satisfies(e -> assertThat(((PeerFailedException) e).reason()).as("the transport's, kept").isEqualTo(PeerFailedException.Reason.DIED));
    }

    @Test
    void aReplyEndpointTheApplicationClosedIsReplacedAtTheNextAnswer() {
        Setup s = setup(true);
        List<Endpoint> used = new ArrayList<>();
        s.server().onMessage(1, m -> {
            Endpoint back = m.replyEndpoint();
            used.add(back);
            back.send(2, longs(m.payloadLong(0)));
            back.close();
        });
        List<Long> answers = recordAnswers(s.client());
        Endpoint toServer = s.client().connect(s.server().address());
        toServer.send(1, longs(1));
        toServer.send(1, longs(2));
        progressUntil(() -> answers.size() == 2, s.server(), s.client());

        assertThat(answers).containsExactly(1L, 2L);
        assertThat(used.get(1)).isNotSameAs(used.get(0));
    }

    /**
     * A reply endpoint the application closed, used again (kept past the handler, as
     * Message.replyEndpoint() allows), says that it is closed and how to answer that sender again:
     * through the next message's replyEndpoint(), which connects anew. Until 2026-12-07 it said
     * "connect again (Worker.connect) to reach that peer", a remedy an application that was never
     * given the sender's address cannot follow (RuntimeEndpoint's connectionEnded says as much of an ended
     * connection, and so answers with the sender's failure there).
     */
    @Test
    void aReplyEndpointTheApplicationClosedSaysToAnswerThroughTheNextMessagesReplyEndpointNotToConnect() {
        Setup s = setup(true);
        List<Endpoint> used = new ArrayList<>();
        s.server().onMessage(1, m -> {
            Endpoint back = m.replyEndpoint();
            used.add(back);
            back.close();
        });
        Endpoint toServer = s.client().connect(s.server().address());
        toServer.send(1, longs(1));
        progressUntil(() -> used.size() == 1, s.server(), s.client());

        assertThatThrownBy(() -> used.getFirst().send(2, longs(1))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is closed")
                .hasMessageContaining("replyEndpoint()")
                .hasMessageNotContaining("Worker.connect");
    }

    @Test
    void aReplyEndpointIsOnlyForTheHandlerCallAndTheWorkersCloseClosesIt() {
        Setup s = setup(true);
        AtomicReference<Message> kept = new AtomicReference<>();
        AtomicReference<Endpoint> reply = new AtomicReference<>();
        s.server().onMessage(1, m -> {
            kept.set(m);
            reply.set(m.replyEndpoint());
        });
        s.client().connect(s.server().address()).send(1, longs(1));
        progressUntil(() -> reply.get() != null, s.server(), s.client());

        assertThatThrownBy(() -> kept.get().replyEndpoint()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("only valid during the handler call")
                .hasMessageContaining("call replyEndpoint() in the handler and keep the endpoint it returns");
        s.server().close();
        assertThat(reply.get().toString()).contains("closed");
    }

    @Test
    void answeringTheSenderTheThreadAnsweredLastAllocatesNothing() {
        Setup s = setup(true);
        AtomicLong allocated = new AtomicLong(-1);
        s.server().onMessage(1, m -> {
            m.replyEndpoint(); // connects, once
            for (int i = 0; i < 10_000; i++) m.replyEndpoint(); // warm
            long before = ThreadAllocation.allocatedBytes();
            for (int i = 0; i < 100_000; i++) m.replyEndpoint();
            allocated.set(ThreadAllocation.allocatedBytes() - before);
        });
        s.client().connect(s.server().address()).send(1, longs(1));
        progressUntil(() -> allocated.get() >= 0, s.server(), s.client());

        // One object per answer would be 1.6 MB at least; what remains is the measurement's own (a few KB at most).
        assertThat(allocated.get()).as("bytes over 100,000 answers").isLessThan(16_000);
    }

    /**
     * A server answering two senders in turn finds each one's endpoint through its transport's sink
     * (a lock and a map lookup, since the thread's cache of one holds the other sender's) and
     * remembers it in its delivery context again and again: that allocates nothing, where a weak
     * reference made per remembering did (16 bytes and more an answer). The sink and the keys are
     * those two messages came with, read from the flyweight in their handlers; the answers are then
     * asked of the sink as Message.replyEndpoint() asks it, 100,000 times each, in turn.
     */
    @Test
    void answeringTwoSendersInTurnAllocatesNothing() throws ReflectiveOperationException {
        Setup s = setup(true);
        Worker secondClient = loopbacks.conduit(s.plugin()).newWorker(ThreadMode.SINGLE);
        java.lang.reflect.Field fromField = dev.conduit.Message.class.getDeclaredField("from");
        java.lang.reflect.Field senderField = dev.conduit.Message.class.getDeclaredField("sender");
        fromField.setAccessible(true);
        senderField.setAccessible(true);
        List<TransportSink> sinks = new ArrayList<>();
        List<Long> keys = new ArrayList<>();
        List<Endpoint> used = new ArrayList<>();
        s.server().onMessage(1, m -> {
            try {
                sinks.add((TransportSink) fromField.get(m));
                keys.add(senderField.getLong(m));
            } catch (IllegalAccessException e) {
                throw new AssertionError(e);
            }
            used.add(m.replyEndpoint());
        });
        s.client().connect(s.server().address()).send(1, longs(1));
        secondClient.connect(s.server().address()).send(1, longs(2));
        progressUntil(() -> used.size() == 2, s.server(), s.client(), secondClient);
        TransportSink sink = sinks.getFirst();
        long first = keys.get(0), second = keys.get(1);
        assertThat(sinks.get(1)).as("one transport, one sink").isSameAs(sink);
        assertThat(second).isNotEqualTo(first);

        long allocated = 0;
        for (int round = 0; round < 3; round++) { // the first rounds warm up
            long before = ThreadAllocation.allocatedBytes();
            for (int i = 0; i < 100_000; i++) {
                sink.replyEndpoint(first);
                sink.replyEndpoint(second);
            }
            allocated = ThreadAllocation.allocatedBytes() - before;
        }

        assertThat(sink.replyEndpoint(first)).isSameAs(used.get(0));
        assertThat(sink.replyEndpoint(second)).isSameAs(used.get(1));
        assertThat(allocated).as("bytes over 200,000 answers to two senders in turn").isLessThan(16_000);
    }

    /**
     * A worker whose threads each keep their own delivery context (MULTI over a transport that
     * declares MULTI) keeps it in a thread-local: what a thread's context holds must not reach
     * back to the worker, or the thread-local's weak key never clears and every thread that
     * answered pins the closed worker, its transports and endpoints, for as long as it lives.
     */
    @Test
    void aClosedMultiWorkerIsNotKeptByTheThreadThatAnsweredThroughIt() {
        WeakReference<Worker> server = answerOnceOnThisThreadAndClose();
        for (int i = 0; i < 50 && server.get() != null; i++) {
            System.gc();
            Thread.onSpinWait();
        }
        assertThat(server.get()).as("the closed server worker, after its conduit was closed and dropped").isNull();
    }

    private static WeakReference<Worker> answerOnceOnThisThreadAndClose() {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, true);
        plugin.namesSenders = true;
        try (Conduit conduit = Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new Properties())
                .addPlugin(plugin).build()) {
            Worker client = conduit.newWorker(ThreadMode.MULTI);
            Worker server = conduit.newWorker(ThreadMode.MULTI);
            answerThroughReplyEndpoint(server);
            List<Long> answers = recordAnswers(client);
            client.connect(server.address()).send(1, longs(1));
            progressUntil(() -> answers.size() == 1, server, client);
            return new WeakReference<>(server);
        }
    }

    /**
     * A MULTI server progressed by four threads at once, over a transport that declares MULTI (the
     * threads deliver and answer at once, each with its own delivery context) or one that does not
     * (under the runtime lock): eight connections' requests are all answered, each connection
     * through one reply endpoint whichever thread answers; once the client closes its endpoints,
     * each connection's end is told once, every reply endpoint is closed and none is kept.
     */
    @ParameterizedTest(name = "transport declares MULTI: {0}")
    @ValueSource(booleans = {true, false})
    void threadsOfAMultiWorkerAnswerAtOnceThroughOneReplyEndpointPerConnectionAllClosedWhenTheConnectionsEnd(boolean multiTransport)
            throws InterruptedException {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, multiTransport);
        plugin.namesSenders = true;
        Conduit conduit = loopbacks.conduit(plugin);
        Worker client = conduit.newWorker(ThreadMode.MULTI);
        Worker server = conduit.newWorker(ThreadMode.MULTI);
        int connections = 8;
        int requests = 500;
        Map<Long, Set<Endpoint>> repliesByConnection = new ConcurrentHashMap<>();
        server.onMessage(1, m -> {
            Endpoint back = m.replyEndpoint();
            repliesByConnection.computeIfAbsent(m.payloadLong(0), k -> ConcurrentHashMap.newKeySet()).add(back);
            back.send(2, longs(m.payloadLong(0), m.payloadLong(8)));
        });
        AtomicInteger answers = new AtomicInteger();
        client.onMessage(2, m -> answers.incrementAndGet());
        LoopbackPlugin.LoopbackTransport serverTransport = plugin.transports.get(1);
        TransportSink sink = (TransportSink) serverTransport.sink();

        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> progressing = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            progressing.add(Thread.ofPlatform().name("server-progress-" + t).start(() -> {
                try {
                    while (!stop.get()) server.progress();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        try {
            List<Endpoint> toServer = new ArrayList<>();
            for (int c = 0; c < connections; c++) toServer.add(client.connect(server.address()));
            for (int i = 0; i < requests; i++) {
                for (int c = 0; c < connections; c++) toServer.get(c).send(1, longs(c, i));
                client.progress();
            }
            waitFor(() -> answers.get() == connections * requests || failure.get() != null, client);
            assertThat(failure.get()).as("what a server thread threw").isNull();
            assertThat(repliesByConnection).hasSize(connections);
            repliesByConnection.forEach((c, used) -> assertThat(used).as("reply endpoints of connection " + c).hasSize(1));
            assertThat(sink.replyCount()).isEqualTo(connections);

            toServer.forEach(Endpoint::close);
            // The sink forgets a connection's reply endpoint under its lock and closes it after, on whichever server thread
            // was told the connection ended: wait for the closes too, not only for the table to empty.
            waitFor(() -> serverTransport.sendersClosed.size() >= connections && sink.replyCount() == 0
                    && repliesByConnection.values().stream().allMatch(used -> ((RuntimeEndpoint) used.iterator().next()).isClosed())
                    || failure.get() != null, client);
            assertThat(failure.get()).as("what a server thread threw").isNull();
            assertThat(serverTransport.sendersClosed).as("each connection's end told once").doesNotHaveDuplicates().hasSize(connections);
            repliesByConnection.values().forEach(used -> assertThat(((RuntimeEndpoint) used.iterator().next()).isClosed())
                    .as("closed when its connection ended").isTrue());
        } finally {
            stop.set(true);
            for (Thread t : progressing) t.join();
        }
    }

    /**
     * A MULTI server over a transport that declares MULTI, whose threads deliver at once: the first
     * reply endpoint connected after {@link #holdFirstConnect} waits in the transport's connect
     * until the test lets it go.
     */
    private record SlowConnect(LoopbackPlugin plugin, Worker client, Worker server, List<Endpoint> toServer,
                               java.util.concurrent.CountDownLatch held, java.util.concurrent.CountDownLatch release,
                               List<Thread> threads, AtomicBoolean stop, AtomicReference<Throwable> failure)
            implements AutoCloseable {

        LoopbackPlugin.LoopbackTransport serverTransport() {
            return plugin.transports.get(1);
        }

        /** Starts a thread that progresses the server until the test ends; what it throws is kept. */
        void progressServerOnAnotherThread() {
            threads.add(Thread.ofPlatform().name("server-progress-" + threads.size()).start(() -> {
                try {
                    while (!stop.get()) server.progress();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            release.countDown();
            for (Thread t : threads) t.join();
        }
    }

    private SlowConnect holdFirstConnect(int connections) {
        return holdFirstConnect(connections, null);
    }

    /** As {@link #holdFirstConnect(int)}; the held connect, once let go, throws {@code thenFails} unless it is null. */
    private SlowConnect holdFirstConnect(int connections, RuntimeException thenFails) {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, true);
        plugin.namesSenders = true;
        Conduit conduit = loopbacks.conduit(plugin);
        Worker client = conduit.newWorker(ThreadMode.MULTI);
        Worker server = conduit.newWorker(ThreadMode.MULTI);
        List<Endpoint> toServer = new ArrayList<>();
        for (int c = 0; c < connections; c++) toServer.add(client.connect(server.address()));
        var held = new java.util.concurrent.CountDownLatch(1);
        var release = new java.util.concurrent.CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        plugin.whileConnecting = () -> {
            if (!first.getAndSet(false)) return;
            held.countDown();
            try {
                release.await(); // let go by the test, or by SlowConnect.close() when the test failed before
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            if (thenFails != null) throw thenFails;
        };
        return new SlowConnect(plugin, client, server, toServer, held, release, new ArrayList<>(), new AtomicBoolean(), new AtomicReference<>());
    }

    /**
     * Two requests of one connection, each answered through replyEndpoint() on a thread of its own:
     * the first one's connect is held until the second is answered, then let go, and both answers
     * arrive. The reply endpoints used, by request.
     */
    private static Map<Long, Endpoint> answerTwoRequestsOfOneSenderTheFirstConnectHeld(SlowConnect s) throws InterruptedException {
        Map<Long, Endpoint> usedByRequest = new ConcurrentHashMap<>();
        AtomicInteger answers = new AtomicInteger();
        s.server().onMessage(1, m -> {
            Endpoint back = m.replyEndpoint();
            usedByRequest.put(m.payloadLong(0), back);
            back.send(2, longs(m.payloadLong(0)));
        });
        s.client().onMessage(2, m -> answers.incrementAndGet());
        s.toServer().getFirst().send(1, longs(0));
        s.progressServerOnAnotherThread();
        waitProgressing("the answer to the first request connecting", () -> s.held().getCount() == 0, s.client());

        s.toServer().getFirst().send(1, longs(1));
        s.progressServerOnAnotherThread();
        waitProgressing("the second request answered while the first one's connect is held",
                () -> answers.get() == 1 || s.failure().get() != null, s.client());

        s.release().countDown();
        waitProgressing("both answered", () -> answers.get() == 2 || s.failure().get() != null, s.client());
        assertThat(s.failure().get()).as("what a server thread threw").isNull();
        return usedByRequest;
    }

    /**
     * {@link Loopbacks#progressUntil} of {@code worker}, failing with {@code what} when its bound of
     * rounds passes: a count of calls, no clock (a wait that a lock held across the connect never
     * ends, before 12-03, ends there).
     */
    private static void waitProgressing(String what, java.util.function.BooleanSupplier done, Worker worker) {
        try {
            Loopbacks.progressUntil(done, worker);
        } catch (AssertionError e) {
            throw new AssertionError(what + ": " + e.getMessage(), e);
        }
    }

    /**
     * Review finding of 12-02: the sink's lock was held across a reply endpoint's connect, so a slow
     * connect to one sender held up every thread answering another sender of that transport. Now
     * only answers to the sender being connected to wait for it.
     */
    @Test
    void aSlowConnectToOneSenderDoesNotHoldUpTheAnswerToAnother() throws InterruptedException {
        try (SlowConnect s = holdFirstConnect(2)) {
            Map<Long, Long> answers = new ConcurrentHashMap<>();
            s.server().onMessage(1, m -> m.replyEndpoint().send(2, longs(m.payloadLong(0))));
            s.client().onMessage(2, m -> answers.put(m.payloadLong(0), m.payloadLong(0)));
            s.toServer().get(0).send(1, longs(0));
            s.progressServerOnAnotherThread();
            waitProgressing("the answer to connection 0 connecting", () -> s.held().getCount() == 0, s.client());

            s.toServer().get(1).send(1, longs(1));
            s.progressServerOnAnotherThread();
            waitProgressing("connection 1 answered while the reply endpoint of connection 0 is still connecting",
                    () -> answers.containsKey(1L) || s.failure().get() != null, s.client());
            assertThat(answers).doesNotContainKey(0L);

            s.release().countDown();
            waitProgressing("connection 0 answered", () -> answers.containsKey(0L) || s.failure().get() != null, s.client());
            assertThat(s.failure().get()).as("what a server thread threw").isNull();
            assertThat(((TransportSink) s.serverTransport().sink()).replyCount()).isEqualTo(2);
        }
    }

    /**
     * Two threads answer one sender at once, the first one's connect slow: the second connects too
     * and answers at once; the first keeps the second's endpoint, whose connect completed first,
     * and closes its own, so that the connection is answered through one endpoint, in order.
     */
    @Test
    void threadsThatConnectToOneSenderAtOnceKeepTheEndpointConnectedFirstAndCloseTheOther() throws InterruptedException {
        try (SlowConnect s = holdFirstConnect(1)) {
            Map<Long, Endpoint> usedByRequest = answerTwoRequestsOfOneSenderTheFirstConnectHeld(s);
            assertThat(usedByRequest.get(0L)).as("the first answer went through the endpoint the second made").isSameAs(usedByRequest.get(1L));
            List<LoopbackPlugin.LoopbackEndpoint> made = s.serverTransport().endpoints;
            assertThat(made).hasSize(2);
            // Closed after the handler's progress round (a close from a handler is deferred), which may end after the answer came.
            waitProgressing("the held connect's endpoint, completed second, closed", () -> made.get(0).closed, s.client());
            assertThat(made.get(1).closed).as("the kept one").isFalse();
            assertThat(((TransportSink) s.serverTransport().sink()).replyCount()).isEqualTo(1);
        }
    }

    /**
     * Two threads answer one sender at once, and the slow connect of the first fails (a refusal, a
     * transient error) after the second's was kept: the first answers through the kept endpoint, as
     * it would have had it waited for the second, rather than fail an answer that has an endpoint.
     */
    @Test
    void aThreadWhoseConnectFailsAfterAnotherThreadsConnectToTheSameSenderWasKeptAnswersThroughTheKeptOne()
            throws InterruptedException {
        try (SlowConnect s = holdFirstConnect(1, new ConduitException("the sender's queue is full of connections"))) {
            Map<Long, Endpoint> usedByRequest = answerTwoRequestsOfOneSenderTheFirstConnectHeld(s);
            assertThat(usedByRequest.get(0L)).isSameAs(usedByRequest.get(1L));
            assertThat(((TransportSink) s.serverTransport().sink()).replyCount()).isEqualTo(1);
        }
    }

    /**
     * The sender's connection ends while a thread connects its reply endpoint: the end is told at
     * once (not after the connect), the endpoint that connect made is closed, never kept (its key
     * may be a new connection's), and the answer is a peer failure.
     */
    @Test
    void aConnectionThatEndsWhileItsReplyEndpointIsConnectedKeepsNoneAndItsAnswerIsAPeerFailure() throws InterruptedException {
        try (SlowConnect s = holdFirstConnect(1)) {
            AtomicReference<Throwable> answered = new AtomicReference<>();
            s.server().onMessage(1, m -> {
                try {
                    m.replyEndpoint().send(2, longs(0));
                    answered.set(new AssertionError("answered"));
                } catch (PeerFailedException e) {
                    answered.set(e);
                }
            });
            s.toServer().getFirst().send(1, longs(0));
            s.progressServerOnAnotherThread();
            waitProgressing("the answer connecting", () -> s.held().getCount() == 0, s.client());
            long connection = s.serverTransport().inbound.keySet().iterator().next();

            s.toServer().getFirst().close();
            AtomicBoolean told = new AtomicBoolean();
            Thread teller = Thread.ofPlatform().name("server-progress-end").start(() -> {
                try {
                    while (!s.stop().get() && !s.serverTransport().sendersClosed.contains(connection)) s.server().progress();
                    told.set(true);
                } catch (Throwable e) {
                    s.failure().compareAndSet(null, e);
                }
            });
            s.threads().add(teller);
            waitProgressing("the end told, and the progress that told it returned, while the connect is held", told::get, s.client());

            s.release().countDown();
            waitProgressing("the handler's answer", () -> answered.get() != null || s.failure().get() != null, s.client());
            assertThat(s.failure().get()).as("what a server thread threw").isNull();
            assertThat(answered.get()).isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining("cannot answer the sender of connection " + Long.toHexString(connection))
                    .hasMessageContaining("ended while its reply endpoint was connected");
            assertThat(((TransportSink) s.serverTransport().sink()).replyCount()).isZero();
            waitProgressing("the endpoint the held connect made closed", () -> s.serverTransport().endpoints.getFirst().closed, s.client());
        }
    }

    /** Progresses {@code worker} on this thread until {@code done}, while other threads progress theirs; gives up after 60 s. */
    private static void waitFor(java.util.function.BooleanSupplier done, Worker worker) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("gave up waiting after 60 s");
            worker.progress();
        }
    }

    /**
     * A thread-confined plugin ({@code thread.confine}) under a worker that lets other threads
     * call: its handlers, and its onSenderClosed, run on the plugin's own thread, where the reply
     * endpoint is connected through the confined transport and closed when the connection ends.
     */
    @ParameterizedTest(name = "{0} worker")
    @EnumSource(value = ThreadMode.class, names = {"SERIALIZED", "MULTI"})
    void aThreadConfinedTransportsMessagesAreAnsweredOnItsThreadAndTheirReplyEndpointsClosedWhenTheConnectionEnds(ThreadMode mode) {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 64, false).singleOnly();
        plugin.namesSenders = true;
        Conduit conduit = loopbacks.conduit(b -> b.threadConfinement(true), plugin);
        Worker client = conduit.newWorker(mode);
        Worker server = conduit.newWorker(mode);
        List<Endpoint> used = answerThroughReplyEndpoint(server);
        List<Thread> handlerThreads = new ArrayList<>();
        server.onMessage(3, m -> handlerThreads.add(Thread.currentThread()));
        List<Long> answers = recordAnswers(client);
        Endpoint toServer = client.connect(server.address());
        toServer.send(3, longs(0));
        toServer.send(1, longs(1));
        toServer.send(1, longs(2));
        progressUntil(() -> answers.size() == 2, server, client);

        assertThat(handlerThreads).singleElement().isNotSameAs(Thread.currentThread());
        assertThat(answers).containsExactly(1001L, 1002L);
        assertThat(used.get(1)).isSameAs(used.getFirst());
        LoopbackPlugin.LoopbackTransport serverTransport = plugin.transports.get(1);
        toServer.close();
        progressUntil(() -> serverTransport.sendersClosed.size() == 1, server);
        assertThat(((RuntimeEndpoint) used.getFirst()).isClosed()).as("closed when its connection ended").isTrue();
        assertThat(((TransportSink) serverTransport.sink()).replyCount()).isZero();
    }
}
