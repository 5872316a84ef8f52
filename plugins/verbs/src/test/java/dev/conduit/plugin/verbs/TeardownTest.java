package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.RemoteRegion;
import dev.conduit.spi.TransportEndpoint;
import dev.conduit.tck.RecordingLogger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static dev.conduit.plugin.verbs.TestWorker.connected;
import static dev.conduit.plugin.verbs.TestWorker.progressUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * When the device refuses to tear something down ({@code ibv_destroy_qp} or {@code ibv_dereg_mr}
 * fails, as a provider's can), everything else is still closed, the first failure is reported
 * with the others suppressed, and memory the device may still write into is kept, never freed.
 * Over {@link LoopbackVerbs}, <b>a simulation of a device</b>, told which calls to fail.
 */
class TeardownTest {

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final LoopbackVerbs verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);

    private TestWorker peer(String... keyValues) {
        TestWorker p = new TestWorker(verbs, keyValues);
        closing.add(p);
        return p;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
        verbs.reclaimLeftovers(); // what failed to go, which the kernel releases when the process exits
        assertThat(verbs.open).as("queue pairs, regions, queues and channels left open").isEmpty();
    }

    /** Freeing used to close the chunk's arena although ibv_dereg_mr had failed: a remotely writable registration over freed memory. */
    /** Every failure of a teardown is reported: the first thrown, each later one suppressed in it (directly or in the second). */
    @Test
    void everyFailureOfATeardownIsReportedTheFirstWithTheOthersSuppressed() {
        Teardown teardown = new Teardown("closing three things").other(() -> {
            throw new IllegalStateException("first");
        }).other(() -> {
            throw new IllegalStateException("second");
        }).other(() -> {
            throw new IllegalStateException("third");
        });
        List<String> reported = new ArrayList<>();
        java.util.ArrayDeque<Throwable> toVisit = new java.util.ArrayDeque<>(List.of(teardown.failure()));
        for (Throwable t; (t = toVisit.poll()) != null; ) {
            reported.add(t.getMessage());
            toVisit.addAll(List.of(t.getSuppressed()));
        }
        assertThat(reported).containsExactly("first", "second", "third");
    }

    @Test
    void aChunkWhoseDeregistrationFailsKeepsItsMemoryAndTheFailureSaysWhy() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        MemoryProvider memory = b.memory();
        closing.add(memory);
        Chunk chunk = memory.allocate(4096);
        RemoteRegion region = TestWorker.region(memory, chunk, 0, 4096);
        verbs.failNext("ibv_dereg_mr", 1, Errno.EBUSY);
        assertThatThrownBy(() -> memory.free(chunk)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("freeing a chunk of 4096 bytes")
                .hasMessageContaining("ibv_dereg_mr(loop0 mr ").hasMessageContaining("EBUSY")
                .hasMessageContaining("4096 bytes of registered memory are kept allocated, not freed, because the device may still write");
        assertThat(chunk.segment().scope().isAlive()).as("the chunk's memory").isTrue();
        // The registration still reaches it: a peer's put lands in memory that is still this chunk's.
        e.put(MemorySegment.ofArray("still mine".getBytes(StandardCharsets.UTF_8)), region, 0);
        e.flush();
        assertThat(chunk.segment().asSlice(0, 10).toArray(ValueLayout.JAVA_BYTE)).isEqualTo("still mine".getBytes(StandardCharsets.UTF_8));
    }

    /** Closing the provider used to stop at the first chunk that could not be freed, leaving the others registered. */
    @Test
    void closingTheProviderFreesEveryChunkItCanAndReportsTheOneItCannot() {
        TestWorker b = peer();
        MemoryProvider memory = b.memory();
        Chunk first = memory.allocate(4096);
        Chunk second = memory.allocate(8192);
        long regions = verbs.openOf("mr ");
        verbs.failDeregistrationsOf(first.segment(), Errno.EBUSY);
        assertThatThrownBy(memory::close).isInstanceOf(ConduitException.class).hasMessageContaining("EBUSY");
        assertThat(List.of(first.segment().scope().isAlive(), second.segment().scope().isAlive()))
                .as("the chunk whose deregistration failed kept, the other freed").containsExactly(true, false);
        assertThat(verbs.openOf("mr ")).as("registrations left: the one that failed").isEqualTo(regions - 1);
        verbs.reclaimLeftovers(); // as the process's exit would: else b's close could not release the protection domain
    }

    /**
     * A chunk whose {@code ibv_dereg_mr} failed once is deregistered, and its memory freed, at
     * the provider's next free or allocation; the provider's close then releases the protection
     * domain and the device context. Until 2026-12-07 nothing kept the chunk: its registration
     * stayed for good and, at the close of the device context's last user, {@code ibv_dealloc_pd}
     * failed ({@code EBUSY}), the protection domain held until the process exited.
     */
    @Test
    void aChunkWhoseDeregistrationFailedOnceIsDeregisteredAtTheProvidersNextFreeOrAllocationAndItsCloseReleasesEverything() {
        TestWorker b = peer();
        MemoryProvider memory = b.memory();
        Chunk first = memory.allocate(4096);
        Chunk second = memory.allocate(8192);
        verbs.failNext("ibv_dereg_mr", 1, Errno.EBUSY);
        assertThatThrownBy(() -> memory.free(first)).isInstanceOf(ConduitException.class).hasMessageContaining("ibv_dereg_mr(loop0 mr ")
                .hasMessageContaining("EBUSY").hasMessageContaining("4096 bytes of registered memory are kept allocated")
                .hasMessageContaining("the provider tries again at its next allocation or free and at the latest in its close");
        assertThat(verbs.isRegistered(first.segment())).as("the chunk whose deregistration failed, still registered").isTrue();

        memory.free(second);
        assertThat(verbs.isRegistered(first.segment())).as("deregistered by the next free").isFalse();
        assertThat(first.segment().scope().isAlive()).as("its memory, freed by the next free").isFalse();

        Chunk third = memory.allocate(4096);
        verbs.failNext("ibv_dereg_mr", 1, Errno.EBUSY);
        assertThatThrownBy(() -> memory.free(third)).hasMessageContaining("EBUSY");
        Chunk fourth = memory.allocate(4096);
        assertThat(verbs.isRegistered(third.segment())).as("deregistered by the next allocation").isFalse();
        assertThat(third.segment().scope().isAlive()).as("its memory, freed by the next allocation").isFalse();

        b.close();
        memory.close(); // the device context's last user
        assertThat(fourth.segment().scope().isAlive()).isFalse();
        assertThat(verbs.open).as("regions, protection domains, queues and channels left").isEmpty();
        assertThat(verbs.contextsOpen()).as("device contexts open").isZero();
    }

    /**
     * A chunk whose deregistration fails in the provider's close is tried again in that close,
     * before the protection domain is released: once that succeeds everything is released, and the
     * close throws nothing. Until 2026-12-07 it threw the first failure all the same, which said the
     * chunk's memory was kept allocated and would be freed by a later try: it had been freed.
     */
    @Test
    void aChunkWhoseDeregistrationFailsInTheProvidersCloseIsTriedAgainBeforeTheProtectionDomainIsReleased() {
        TestWorker b = peer();
        MemoryProvider memory = b.memory();
        Chunk chunk = memory.allocate(4096);
        b.close();
        verbs.failNext("ibv_dereg_mr", 1, Errno.EBUSY);

        memory.close();

        assertThat(chunk.segment().scope().isAlive()).as("the chunk's memory, freed by the close's second try").isFalse();
        assertThat(verbs.open).as("regions, protection domains, queues and channels left").isEmpty();
        assertThat(verbs.contextsOpen()).as("device contexts open").isZero();
    }

    /**
     * A chunk that cannot be deregistered at all: later frees and allocations try again in vain
     * and go on, and the provider's close, before it releases the protection domain, tries once
     * more and says in a WARNING what stays held (the call, the region, the errno, the memory, the
     * protection domain); every other chunk is freed and the device context closed, and the close
     * throws what the device then refuses: the protection domain's release.
     */
    @Test
    void aChunkThatCannotBeDeregisteredAtAllEndsInAWarningAtTheProvidersCloseAndNothingElseIsLeft() {
        RecordingLogger log = new RecordingLogger();
        TestWorker b = new TestWorker(verbs, log);
        closing.add(b);
        MemoryProvider memory = b.memory();
        Chunk stuck = memory.allocate(4096);
        Chunk other = memory.allocate(8192);
        verbs.failDeregistrationsOf(stuck.segment(), Errno.EBUSY);
        Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> memory.free(stuck));
        assertThat(thrown).isInstanceOf(ConduitException.class).hasMessageContaining("EBUSY");
        java.util.regex.Matcher region = java.util.regex.Pattern.compile("ibv_dereg_mr\\(loop0 mr [0-9]+\\)").matcher(thrown.getMessage());
        assertThat(region.find()).as("the region in " + thrown.getMessage()).isTrue();
        memory.free(other); // its retry fails again, and is not this free's failure
        Chunk left = memory.allocate(4096);
        assertThat(other.segment().scope().isAlive()).isFalse();
        b.close();
        assertThat(log.warnings()).as("warnings before the close").isEmpty();

        assertThatThrownBy(memory::close).hasMessageContaining("ibv_dealloc_pd").hasMessageContaining("EBUSY")
                .hasMessageContaining("freeing a chunk of 4096 bytes at 0x" + Long.toHexString(stuck.segment().address()));

        assertThat(log.warnings()).singleElement().asString()
                .startsWith("verbs: closing the memory provider on device loop0: freeing a chunk of 4096 bytes at 0x"
                        + Long.toHexString(stuck.segment().address()))
                .contains(" failed again: " + region.group() + ": EBUSY")
                .contains("its 4096 bytes of registered memory stay allocated")
                .contains("the protection domain it is registered in")
                .contains("released when the process exits");
        assertThat(stuck.segment().scope().isAlive()).as("kept: the device may still write into it").isTrue();
        assertThat(verbs.isRegistered(stuck.segment())).isTrue();
        assertThat(left.segment().scope().isAlive()).as("the chunk left allocated, freed by the close").isFalse();
        assertThat(List.of(verbs.openOf("mr "), (long) verbs.open.size()))
                .as("left on the device: the region, and the protection domain it keeps from being released; mr, all")
                .containsExactly(1L, 2L);
        assertThat(verbs.contextsOpen()).as("device contexts open: the close closed the provider's all the same").isZero();
    }

    /**
     * A chunk that cannot be deregistered at all, its provider closed while a worker still shares
     * the device context: the worker's close, the context's last, cannot release the protection
     * domain the registration is on, and says why (the chunk left on it, the call and errno that
     * kept it) and that it stays held until the process exits. Until 2026-12-07 that close threw
     * the bare {@code ibv_dealloc_pd(loop0 pd …): EBUSY}, which named neither: the provider's
     * WARNING, logged earlier by another close, was the only word of the cause.
     */
    @Test
    void aProtectionDomainARegistrationLeftOnItKeepsFromBeingReleasedIsNamedByTheCloseOfTheContextsLastUser() {
        RecordingLogger log = new RecordingLogger();
        TestWorker b = new TestWorker(verbs, log);
        closing.add(b);
        MemoryProvider memory = b.memory();
        Chunk stuck = memory.allocate(4096);
        verbs.failDeregistrationsOf(stuck.segment(), Errno.EBUSY);
        assertThatThrownBy(() -> memory.free(stuck)).hasMessageContaining("EBUSY");
        memory.close(); // logs the WARNING: the registration stays; the worker still holds the context
        assertThat(log.warnings()).singleElement().asString().contains("failed again");

        assertThatThrownBy(b::close).isInstanceOf(ConduitException.class)
                .hasMessageContaining("closing device loop0")
                .hasMessageContaining("ibv_dealloc_pd(loop0 ").hasMessageContaining("EBUSY")
                .hasMessageContaining("freeing a chunk of 4096 bytes at 0x" + Long.toHexString(stuck.segment().address()))
                .hasMessageContaining("ibv_dereg_mr(loop0 mr ")
                .hasMessageContaining("released when the process exits");
        assertThat(verbs.contextsOpen()).as("device contexts open").isZero();
    }

    /** A throwing ibv_destroy_qp used to skip the deregistrations that follow it. */
    @Test
    void anEndpointWhoseQueuePairCannotBeDestroyedDeregistersItsBuffersAndKeepsTheirMemory() {
        TestWorker a = peer();
        TestWorker b = peer();
        int before = verbs.registeredMemory().size();
        TransportEndpoint e = connected(a.connect(b), a, b);
        List<MemorySegment> buffers = verbs.registeredMemory().subList(before, before + 2); // the connector's, registered before its request
        long kept = buffers.stream().mapToLong(MemorySegment::byteSize).sum(); // the send buffers and the credit word, both
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY);
        assertThatThrownBy(e::close).isInstanceOf(ConduitException.class)
                .hasMessageContaining("closing the connection to 127.0.0.1:").hasMessageContaining("ibv_destroy_qp(loop0 qp ")
                .hasMessageContaining("EBUSY").hasMessageContaining("its " + kept + " bytes of registered memory are kept allocated");
        for (MemorySegment buffer : buffers) {
            assertThat(verbs.isRegistered(buffer)).as("deregistered all the same").isFalse();
            assertThat(buffer.scope().isAlive()).as("kept: the queue pair that may write into it is still there").isTrue();
        }
        progressUntil(() -> b.transport.inbounds().isEmpty(), b); // the wire-up socket was closed all the same
    }

    /**
     * An {@link Error} out of one of an endpoint's {@code ibv_dereg_mr}s (out of native memory for
     * the call's capture state) is thrown itself once the rest is torn down: the other buffer
     * deregistered, the endpoint unregistered from its transport, both buffers kept (a registration
     * of their memory is still there). Until 2026-12-07 the teardown caught only
     * {@code RuntimeException}s: the Error ended the close at that registration, the other buffer
     * staying registered and the endpoint holding its slot.
     */
    @Test
    void anErrorDeregisteringOneOfAnEndpointsBuffersStillDeregistersTheOtherAndUnregistersTheEndpoint() {
        TestWorker a = peer();
        TestWorker b = peer();
        int before = verbs.registeredMemory().size();
        VerbsEndpoint e = (VerbsEndpoint) connected(a.connect(b), a, b);
        List<MemorySegment> buffers = List.copyOf(verbs.registeredMemory().subList(before, before + 2)); // the connector's
        OutOfMemoryError outOfMemory = new OutOfMemoryError("native memory for ibv_dereg_mr's capture state");
        verbs.throwFromNextDeregister(outOfMemory);

        assertThatThrownBy(e::close).isSameAs(outOfMemory);

        assertThat(buffers).filteredOn(verbs::isRegistered).as("buffers left registered: the one whose deregistration threw")
                .hasSize(1);
        assertThat(buffers).allSatisfy(buffer -> assertThat(buffer.scope().isAlive()).as("kept").isTrue());
        assertThat(e.slot).as("the endpoint's slot, once unregistered from its transport").isEqualTo(-1);
        assertThat(outOfMemory.getSuppressed()).as("why the buffers are kept")
                .anySatisfy(kept -> assertThat(kept).hasMessageContaining("bytes of registered memory are kept allocated"));
        progressUntil(() -> b.transport.inbounds().isEmpty(), b); // the wire-up socket was closed all the same
    }

    /**
     * As an inbound connection's: an endpoint's queue pair that could not be destroyed may still
     * complete its outstanding work into the worker's send queue, which is sized for the outbound
     * limit (send buffers per slot). Its slot used to be handed to the next endpoint all the same,
     * so that queue could be asked to hold more than it has room for.
     */
    @Test
    void anEndpointWhoseQueuePairCannotBeDestroyedKeepsItsSlotAndOneClosedCleanlyGivesItBack() {
        TestWorker a = peer("verbs.liveness.interval", "1h"); // no liveness look retries the teardown before a's close
        TestWorker b = peer();
        VerbsEndpoint first = (VerbsEndpoint) connected(a.connect(b), a, b);
        int kept = first.slot;
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY);
        assertThatThrownBy(first::close).hasMessageContaining("EBUSY");
        VerbsEndpoint second = (VerbsEndpoint) connected(a.connect(b), a, b);
        assertThat(second.slot).as("the slot of the next endpoint").isNotEqualTo(kept);
        int freed = second.slot;
        second.close();
        VerbsEndpoint third = (VerbsEndpoint) connected(a.connect(b), a, b);
        assertThat(third.slot).as("the slot of an endpoint closed cleanly, taken again").isEqualTo(freed);
        send(third, 1, "still works", a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
        assertThat(a.transport.keptTeardowns()).as("teardowns a keeps to try again").isEqualTo(1);
    }

    /**
     * A queue pair whose {@code ibv_destroy_qp} failed once is destroyed by the worker's next
     * liveness look, which then frees the connection's buffers and slot; the worker's close then
     * destroys its completion queues and protection domains and closes the device context. Until
     * 2026-12-07 nothing kept the queue pair: its slot stayed taken for good, and at the worker's
     * close the completion queues and protection domain it was on failed to go too ({@code EBUSY}),
     * held until the process exited.
     */
    @Test
    void anEndpointsQueuePairThatFailedToBeDestroyedOnceIsDestroyedAtTheNextLivenessLookAndTheWorkerClosesCleanly() {
        TestWorker a = peer();
        TestWorker b = peer();
        int before = verbs.registeredMemory().size();
        VerbsEndpoint first = (VerbsEndpoint) connected(a.connect(b), a, b);
        List<MemorySegment> buffers = List.copyOf(verbs.registeredMemory().subList(before, before + 2)); // the connector's
        int slot = first.slot;
        long queuePairs = verbs.openOf("qp ");
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY);

        assertThatThrownBy(first::close).isInstanceOf(ConduitException.class).hasMessageContaining("ibv_destroy_qp(loop0 qp ")
                .hasMessageContaining("EBUSY").hasMessageContaining("the worker tries again at its liveness looks (verbs.liveness.interval)");
        assertThat(verbs.openOf("qp ")).as("queue pairs, the endpoint's still there").isEqualTo(queuePairs);

        progressUntil(() -> verbs.openOf("qp ") == queuePairs - 1, a); // a alone: b's inbound queue pair stays until b progresses
        assertThat(buffers).allSatisfy(buffer -> assertThat(buffer.scope().isAlive()).as("the endpoint's buffers, freed").isFalse());
        VerbsEndpoint second = (VerbsEndpoint) connected(a.connect(b), a, b);
        assertThat(second.slot).as("the slot of the next endpoint: the one given back").isEqualTo(slot);
        send(second, 1, "after the retry", a, b);
        progressUntil(() -> b.received.size() == 1, a, b);

        a.close();
        b.close();
        assertThat(verbs.open).as("queue pairs, regions, queues, channels and protection domains left after the workers closed")
                .isEmpty();
        assertThat(verbs.contextsOpen()).as("device contexts open").isZero();
    }

    /**
     * An endpoint whose queue pair fails to be destroyed once as its worker closes is tried again in
     * that close, before the completion queues: once that succeeds everything is released, and the
     * close throws nothing. Until 2026-12-07 it threw the first failure all the same, which said the
     * connection's memory was kept allocated and the worker would try again at its liveness looks:
     * the worker was closed, and the memory freed.
     */
    @Test
    void anEndpointWhoseQueuePairFailsToBeDestroyedOnceInTheWorkersCloseIsDestroyedByThatCloseWhichThrowsNothing() {
        TestWorker a = peer();
        TestWorker b = peer();
        int before = verbs.registeredMemory().size();
        connected(a.connect(b), a, b);
        List<MemorySegment> buffers = List.copyOf(verbs.registeredMemory().subList(before, before + 2)); // the connector's
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY);

        a.close();

        assertThat(buffers).allSatisfy(buffer -> assertThat(buffer.scope().isAlive()).as("the endpoint's buffers, freed").isFalse());
        progressUntil(() -> b.transport.inbounds().isEmpty(), b);
        b.close();
        assertThat(verbs.open).as("queue pairs, regions, queues, channels and protection domains left").isEmpty();
        assertThat(verbs.contextsOpen()).as("device contexts open").isZero();
    }

    /**
     * An inbound connection's queue pair that failed to be destroyed once is destroyed at a later
     * liveness look, which gives its slot back to the wire-up server.
     */
    @Test
    void anInboundQueuePairThatFailedToBeDestroyedOnceIsDestroyedLaterAndItsSlotGivenBack() {
        TestWorker a = peer();
        TestWorker b = peer();
        TransportEndpoint e = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 1, a, b);
        e.close(); // a's queue pair goes; b's destroy of its own, when it sees the end of stream, fails once
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY);
        assertThatThrownBy(() -> progressUntil(() -> b.transport.inbounds().isEmpty(), b)).hasMessageContaining("ibv_destroy_qp")
                .hasMessageContaining("EBUSY");
        progressUntil(() -> b.transport.inboundSlotsTaken() == 0, b);
        assertThat(verbs.openOf("qp ")).as("queue pairs left").isZero();
        TransportEndpoint again = connected(a.connect(b), a, b);
        send(again, 2, "in the slot given back", a, b);
        progressUntil(() -> b.received.size() == 1, a, b);
    }

    /**
     * A queue pair that cannot be destroyed at all: the worker's close tries once more, before its
     * completion queues, and says in a WARNING what stays held and why (the call, the queue pair,
     * the errno); everything else of the connection and the worker is released, and what the
     * device refuses while the queue pair is there (its completion queues and protection domain)
     * is what the close throws, naming the queue pair that keeps them (until 2026-12-07 it threw the
     * bare {@code ibv_destroy_cq(…): EBUSY}; only the WARNING said why).
     */
    @Test
    void aQueuePairThatCannotBeDestroyedAtAllEndsInAWarningAtTheWorkersCloseAndNothingElseIsLeft() {
        RecordingLogger log = new RecordingLogger();
        TestWorker a = new TestWorker(verbs, log);
        closing.add(a);
        TestWorker b = peer();
        int before = verbs.registeredMemory().size();
        VerbsEndpoint e = (VerbsEndpoint) connected(a.connect(b), a, b);
        List<MemorySegment> buffers = List.copyOf(verbs.registeredMemory().subList(before, before + 2)); // the connector's
        int number = e.queuePair().number();
        verbs.failNext("ibv_destroy_qp", Integer.MAX_VALUE, Errno.EBUSY);
        assertThatThrownBy(e::close).hasMessageContaining("EBUSY");
        long retried = a.transport.keptTeardowns();
        for (int i = 0; i < 1000; i++) {
            a.transport.progress(); // its liveness looks retry, in vain
        }
        assertThat(a.transport.keptTeardowns()).as("kept after the retries").isEqualTo(retried).isEqualTo(1);
        verbs.failNext("ibv_destroy_qp", 0, Errno.EBUSY); // b's queue pair is not the test's
        progressUntil(() -> b.transport.inbounds().isEmpty(), b);
        b.close(); // what is left on the device is then a's alone
        verbs.failNext("ibv_destroy_qp", Integer.MAX_VALUE, Errno.EBUSY);
        assertThat(log.warnings()).as("warnings before the close").isEmpty();

        assertThatThrownBy(a::close).isInstanceOf(ConduitException.class).hasMessageContaining("ibv_destroy_cq")
                .hasMessageContaining("EBUSY").hasMessageContaining("failed again: ibv_destroy_qp(loop0 qp " + number + "): EBUSY")
                .hasMessageContaining("released when the process exits");

        assertThat(log.warnings()).singleElement().asString()
                .startsWith("verbs: closing the worker on device loop0: closing the connection to 127.0.0.1:")
                .contains(" failed again: ibv_destroy_qp(loop0 qp " + number + "): EBUSY")
                .contains("its " + buffers.stream().mapToLong(MemorySegment::byteSize).sum() + " bytes of registered memory stay allocated")
                .contains("completion queues, completion channel and protection domain")
                .contains("released when the process exits");
        assertThat(buffers).allSatisfy(buffer -> {
            assertThat(verbs.isRegistered(buffer)).as("deregistered").isFalse();
            assertThat(buffer.scope().isAlive()).as("kept: the queue pair may still write into it").isTrue();
        });
        assertThat(List.of(verbs.openOf("qp "), verbs.openOf("cq "), verbs.openOf("mr "), verbs.openOf("channel "), (long) verbs.open.size()))
                .as("left on the device: the queue pair, and what it keeps from being destroyed: its two completion queues, the "
                        + "completion channel they are on and a's outbound protection domain; qp, cq, mr, channel, all")
                .containsExactly(1L, 2L, 0L, 1L, 5L);
        assertThat(verbs.open).contains("qp " + number);
        assertThat(verbs.contextsOpen()).as("device contexts open: a's close closed its own all the same").isZero();
        verbs.failNext("ibv_destroy_qp", 0, Errno.EBUSY);
    }

    private static void send(TransportEndpoint e, int id, String payload, TestWorker... progress) {
        progressUntil(() -> e.trySend(id, MemorySegment.NULL, MemorySegment.ofArray(payload.getBytes(StandardCharsets.UTF_8))), progress);
    }

    /** A connect that failed and then failed to destroy its queue pair used to throw the destroy's error, not why it failed. */
    @Test
    void aFailedConnectReportsItsCauseAlsoWhenItsTeardownFailsToo() throws Exception {
        TestWorker a = peer();
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        byte[] address = new WireFormat.Address(new byte[16], new byte[16], 1, VerbsAbi.IBV_LINK_LAYER_ETHERNET, 0, LoopbackVerbs.GID,
                VerbsAbi.IBV_MTU_1024, 64, 8192, 16, true, "127.0.0.1", port).encode();
        long regions = verbs.openOf("mr ");
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY);
        assertThatThrownBy(() -> a.transport.connect(new PayloadReader(address), c -> { }))
                .isInstanceOf(ConduitException.class).hasMessageContaining("wire-up listener 127.0.0.1:" + port)
                .satisfies(t -> assertThat(t.getSuppressed()).singleElement().extracting(Throwable::getMessage).asString()
                        .contains("ibv_destroy_qp").contains("EBUSY").contains("kept allocated"));
        assertThat(verbs.openOf("mr ")).as("its buffers deregistered past the failed destroy").isEqualTo(regions);
    }

    /** The acceptor's build used to stop at a failing destroy, leaving the connection's buffers registered. */
    @Test
    void anInboundConnectionThatCannotBeBuiltIsTornDownPastAFailingDestroy() {
        TestWorker a = peer();
        TestWorker b = peer();
        long regions = verbs.openOf("mr ");
        verbs.failNext("ibv_post_recv", 1, Errno.ENOMEM); // the build fails on the wire-up thread...
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY); // ...and so does the destroy of its queue pair
        a.connect(b);
        progressUntil(() -> !a.failures.isEmpty(), a, b);
        assertThat(a.failures.getFirst()).hasMessageContaining("before it replied");
        assertThat(verbs.openOf("mr ")).as("the connector's two buffers; none of the acceptor's").isEqualTo(regions + 2);
    }

    private record TwoEndpoints(TransportEndpoint one, TransportEndpoint two) {
    }

    /** Connects {@code a} to {@code b} twice, waits until {@code b} took both inbound connections, and sends one message on each. */
    private static TwoEndpoints twoInboundsWithAMessageSentOnEach(TestWorker a, TestWorker b) {
        TransportEndpoint one = connected(a.connect(b), a, b);
        TransportEndpoint two = connected(a.connect(b), a, b);
        progressUntil(() -> b.transport.inbounds().size() == 2, a, b);
        progressUntil(() -> one.trySend(1, MemorySegment.NULL, MemorySegment.ofArray(new byte[] {1})), a);
        progressUntil(() -> two.trySend(2, MemorySegment.NULL, MemorySegment.ofArray(new byte[] {2})), a);
        return new TwoEndpoints(one, two);
    }

    /** Dropping broken connections used to stop at the first one that failed to close. */
    @Test
    void aBrokenConnectionThatFailsToCloseLeavesNoOtherBrokenOneOpen() {
        TestWorker a = peer();
        TestWorker b = peer();
        twoInboundsWithAMessageSentOnEach(a, b);
        verbs.failNext("ibv_post_recv", 2, Errno.ENOMEM); // both break: their buffers cannot be posted again
        verbs.failNext("ibv_destroy_qp", 1, Errno.EBUSY); // and the first of them cannot be destroyed
        assertThatThrownBy(b.transport::progress).isInstanceOf(ConduitException.class).hasMessageContaining("ibv_destroy_qp");
        assertThat(b.received).hasSize(2);
        assertThat(b.transport.inbounds()).as("both broken connections closed in that progress").isEmpty();
        // The queue pair that could not be destroyed may still complete into the shared receive queue, sized for the
        // inbound limit: its slot is not given to a new connection; the other's is.
        assertThat(b.transport.inboundSlotsTaken()).isEqualTo(1);
        progressUntil(() -> a.failures.size() == 2, a);
    }

    /**
     * A credit write that cannot be posted used to be thrown out of every progress(): the other
     * inbound connections' credits, liveness checks and failure reports never ran.
     */
    @Test
    void aCreditWriteThatCannotBePostedDropsOnlyItsConnection() {
        TestWorker a = peer();
        TestWorker b = peer();
        TwoEndpoints endpoints = twoInboundsWithAMessageSentOnEach(a, b);
        verbs.failNext("ibv_post_send", 1, Errno.ENOMEM); // the first credit write b posts

        progressUntil(() -> b.received.size() == 2 && b.transport.inbounds().size() == 1, b);
        progressUntil(() -> a.failures.size() == 1, a, b);

        TransportEndpoint survivor = ((VerbsEndpoint) endpoints.one()).hasFailed() ? endpoints.two() : endpoints.one();
        assertThat(((VerbsEndpoint) survivor).hasFailed()).isFalse();
        for (int i = 0; i < 100; i++) {
            byte[] payload = {(byte) i};
            progressUntil(() -> survivor.trySend(3, MemorySegment.NULL, MemorySegment.ofArray(payload)), a, b);
        }
        progressUntil(() -> b.received.size() == 102, a, b);
    }
}
