package dev.conduit.internal;

import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/** The runtime's background thread (the keepalive, the IPC cache's sweep) when it cannot start. */
class PeriodicTest {

    /**
     * At the process's or its cgroup's limit of threads the thread's start fails with a
     * ConduitException naming the thread, the limit and the remedy, the JVM's error its cause
     * (the keepalive's reaches a worker's creation, which closes the worker). The JVM's bare
     * OutOfMemoryError came out.
     */
    @Test
    void aThreadThatCannotStartSaysWhichLimitToRaise() {
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached (injected by the test)");

        Throwable thrown = catchThrowable(() -> new Periodic("conduit-keepalive", System.getLogger("test"), Duration.ofSeconds(1),
                getClass().getClassLoader(), () -> true, run -> new Thread(run, "conduit-keepalive") {
                    @Override
                    public void start() {
                        throw noThread;
                    }
                }));

        assertThat(thrown).isInstanceOf(ConduitException.class).hasCause(noThread).hasMessageContaining("conduit-keepalive")
                .hasMessageContaining("unable to create native thread").hasMessageContaining("ulimit -u")
                .hasMessageContaining("pids.max");
    }
}
