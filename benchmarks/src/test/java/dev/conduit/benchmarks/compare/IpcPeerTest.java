package dev.conduit.benchmarks.compare;

import dev.conduit.benchmarks.ChildJvms;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

// A hang guard, not a speed check; in a thread of its own, since a test stuck in a spin never sees an interrupt.
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class IpcPeerTest {

    /**
     * An echo JVM that dies fails the measuring JVM, naming it and how it ended: over Aeron the measuring JVM waited for
     * good for the echo's subscription to connect, or polled for good for an echo; over Agrona's ring buffer it spun for
     * good on the ring (compare.sh ended both after 300 s, and its table then named a line of a stack trace).
     */
    @ParameterizedTest
    @ValueSource(strings = {"aeron", "agrona", "line"})
    void anEchoJvmKilledAsItStartsFailsTheRunNamingIt(String kind) throws Exception {
        CompletableFuture<ProcessHandle> killed = ChildJvms.killOnceStarted(IpcPeer.class);
        assertThatThrownBy(() -> IpcPeer.main(new String[] {kind}))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the echo JVM (pid " + killed.get().pid() + ", exit code 137: ended by signal 9 (SIGKILL");
    }
}
