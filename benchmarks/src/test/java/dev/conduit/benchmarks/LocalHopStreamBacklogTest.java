package dev.conduit.benchmarks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code LocalHopBenchmark.stream} times a message through the transport: no send of a batch waits in the endpoint's local
 * queue. At 1 MiB, batches of 64 payloads in a 4 MiB bounce ring queued 60 of each batch's sends locally, and the stream
 * timed that queue and the hand-over's second copy.
 */
class LocalHopStreamBacklogTest {

    @ParameterizedTest
    @CsvSource({"posix, 8", "posix, 65536", "posix, 1048576", "memfd, 1048576", "posix, 4194304"})
    void everyStreamedMessageOfABatchGoesThroughTheTransport(String plugin, int size) throws Exception {
        LocalHopBenchmark bench = opened(plugin, size);
        try {
            for (int batch = 0; batch < 3; batch++) {
                for (int i = 0; i < bench.batch - 1; i++) bench.stream();
                assertThat(bench.toServer.pending()).as("sends of batch %d of %d messages queued locally", batch, bench.batch).isZero();
                bench.stream();
            }
        } finally {
            bench.close();
        }
    }

    @Test
    void aHandOverThatFindsSendsWaitingLocallyFailsTheStream() throws Exception {
        LocalHopBenchmark bench = opened("posix", 1 << 20);
        try {
            bench.batch = LocalHopBenchmark.MAX_BATCH;
            assertThatThrownBy(() -> {
                for (int i = 0; i < LocalHopBenchmark.MAX_BATCH; i++) bench.stream();
            }).isInstanceOf(IllegalStateException.class)
                    .hasMessage("60 of a batch of 64 messages of 1048576 bytes over posix wait in the local queue: the batch does "
                            + "not fit in what the transport holds");
        } finally {
            bench.close();
        }
    }

    /** Each {@code roundTrip} op is a whole round trip, its pong counted within it, at every size. */
    @ParameterizedTest
    @CsvSource({"posix, 8", "posix, 65536", "posix, 1048576", "memfd, 1048576"})
    void everyRoundTripGetsItsPongWithinTheOp(String plugin, int size) throws Exception {
        LocalHopBenchmark bench = opened(plugin, size);
        try {
            for (int i = 1; i <= 2000; i++) assertThat(bench.roundTrip()).as("pongs after round trip %d", i).isEqualTo(i + 1);
        } finally {
            bench.close();
        }
    }

    /**
     * A ping that one {@code progress()} of the server does not reach (behind a poll's {@value LocalHopBenchmark#MAX_BATCH}
     * records, here DATA sent before it) is still answered within its op: the op progresses both sides until its pong came,
     * rather than being counted with its round trip unfinished.
     */
    @Test
    void aRoundTripWhosePingOneProgressDoesNotReachStillEndsWithItsPong() throws Exception {
        LocalHopBenchmark bench = opened("posix", 8);
        try {
            for (int i = 0; i < LocalHopBenchmark.MAX_BATCH; i++) bench.toServer.send(LocalHopBenchmark.DATA, MemorySegment.ofArray(new byte[8]));
            assertThat(bench.toServer.pending()).as("DATA waiting in the local queue").isZero();
            assertThat(bench.roundTrip()).as("pongs after the round trip behind %d DATA", LocalHopBenchmark.MAX_BATCH).isEqualTo(2);
        } finally {
            bench.close();
        }
    }

    private static LocalHopBenchmark opened(String plugin, int size) throws Exception {
        LocalHopBenchmark bench = new LocalHopBenchmark();
        bench.plugin = plugin;
        bench.size = size;
        bench.open();
        return bench;
    }
}
