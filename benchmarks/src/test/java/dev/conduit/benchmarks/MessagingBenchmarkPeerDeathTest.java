package dev.conduit.benchmarks;

import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A benchmark whose peer JVM dies mid-trial fails, naming the peer and how it ended, where its round trip or stream
 * spun on {@code progress()} for good: the benchmark thread never looked at JMH's interrupt, so the run hung until
 * someone killed it.
 */
// A hang guard, not a speed check; in a thread of its own, since a test stuck in a spin never sees an interrupt.
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MessagingBenchmarkPeerDeathTest {

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aPingPongWhosePeerIsKilledFailsNamingThePeer(String plugin) throws Exception {
        MessagingBenchmark benchmark = opened(plugin, 8);
        try {
            ProcessHandle peer = ChildJvms.kill(MessagingPeer.class);
            assertThatThrownBy(() -> {
                while (true) benchmark.pingPong();
            }).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("the peer JVM (MessagingPeer, pid " + peer.pid() + ", exit code 137: ended by signal 9 (SIGKILL")
                    .hasMessageContaining("failed during the trial, so no echo or acknowledgement will come: endpoint over '" + plugin + "'")
                    .hasMessageContaining(plugin + ": peer worker died")
                    .hasCauseInstanceOf(PeerFailedException.class);
        } finally {
            benchmark.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"posix"})
    void aStreamWhosePeerIsKilledFailsNamingThePeer(String plugin) throws Exception {
        MessagingBenchmark benchmark = opened(plugin, 4096);
        try {
            benchmark.stream();
            ProcessHandle peer = ChildJvms.kill(MessagingPeer.class);
            assertThatThrownBy(() -> {
                while (true) benchmark.stream();
            }).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("the peer JVM (MessagingPeer, pid " + peer.pid())
                    .hasCauseInstanceOf(PeerFailedException.class);
        } finally {
            benchmark.close();
        }
    }

    /** A trial's state set up as JMH does: the peer JVM started, one round trip made. */
    private static MessagingBenchmark opened(String plugin, int size) throws Exception {
        MessagingBenchmark benchmark = new MessagingBenchmark();
        benchmark.plugin = plugin;
        benchmark.size = size;
        benchmark.open();
        return benchmark;
    }
}
