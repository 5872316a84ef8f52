package dev.conduit.internal.threading;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** Errors name a thread by its name, or, when it has none (a virtual thread by default), by its id. */
class ThreadNamesTest {

    @Test
    void aNamedThreadByItsQuotedName() {
        assertThat(ThreadNames.of(Thread.ofPlatform().name("pricing-1").unstarted(() -> { }))).isEqualTo("'pricing-1'");
        assertThat(ThreadNames.of(Thread.ofVirtual().name("request-7").unstarted(() -> { }))).isEqualTo("'request-7'");
    }

    @Test
    void anUnnamedThreadByItsId() {
        Thread virtual = Thread.ofVirtual().unstarted(() -> { });
        assertThat(ThreadNames.of(virtual)).isEqualTo("#" + virtual.threadId() + " (an unnamed virtual thread)");
        Thread platform = Thread.ofPlatform().name("").unstarted(() -> { });
        assertThat(ThreadNames.of(platform)).isEqualTo("#" + platform.threadId() + " (unnamed)");
    }

    /** An overlap on a SERIALIZED worker between two unnamed virtual threads names both ("thread '' called it while thread ''" before). */
    @Test
    void anOverlapBetweenVirtualThreadsNamesBoth() throws Exception {
        OverlapCheck check = new OverlapCheck("worker");
        check.enter();
        try {
            AtomicReference<Throwable> refused = new AtomicReference<>();
            Thread other = Thread.ofVirtual().start(() -> {
                try {
                    check.enter();
                } catch (Throwable e) {
                    refused.set(e);
                }
            });
            other.join();
            assertThat(refused.get()).hasMessageContaining("thread #" + other.threadId() + " (an unnamed virtual thread) called it while thread '"
                    + Thread.currentThread().getName() + "' was inside");
        } finally {
            check.exit();
        }
    }
}
