package dev.conduit.benchmarks.compare;

import dev.conduit.benchmarks.ChildJvms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

// A hang guard, not a speed check; in a thread of its own, since a test stuck in a system call never sees an interrupt.
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class UnixSocketPeerTest {

    /**
     * An echo JVM that dies before it connects fails the run, naming it and how it ended: the measuring JVM waited in a
     * blocking accept for good, and compare.sh with it.
     */
    @Test
    void anEchoJvmKilledAsItStartsFailsTheRunNamingIt() throws Exception {
        CompletableFuture<ProcessHandle> killed = ChildJvms.killOnceStarted(UnixSocketPeer.class);
        assertThatThrownBy(() -> UnixSocketPeer.main(new String[0]))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the echo JVM (pid " + killed.get().pid() + ", exit code 137: ended by signal 9 (SIGKILL");
        assertThat(killed).isCompleted();
    }
}
