package dev.conduit;

import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.RecordingTransport;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** Closing a {@code Conduit} closes what it opened, newest first, and collects every failure. */
class ConduitCloseTest {

    /** A plugin whose n-th transport records "name#n" into {@code closed} when closed, optionally throwing. */
    private static TestPlugin plugin(String name, List<String> closed, boolean throwOnClose) {
        AtomicInteger n = new AtomicInteger();
        return TestPlugin.named(name).transports(c -> {
            String id = name + "#" + n.incrementAndGet();
            return new RecordingTransport().onClose(() -> {
                closed.add(id);
                if (throwOnClose) throw new IllegalStateException("cannot close " + id);
            });
        });
    }

    @Test
    void closingTheConduitClosesWorkersNewestFirstAndTheirTransportsInReverseOrder() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        Conduit conduit = isolated().addPlugin(plugin("a", closed, false).priority(2)).addPlugin(plugin("b", closed, false).priority(1))
                .build();
        conduit.newWorker(ThreadMode.SINGLE);
        conduit.newWorker(ThreadMode.SERIALIZED);
        conduit.newWorker(ThreadMode.MULTI);
        conduit.close();
        assertThat(closed).containsExactly("b#3", "a#3", "b#2", "a#2", "b#1", "a#1");
    }

    @Test
    void closingTheConduitFromAnotherThreadClosesASingleThreadedWorkerToo() throws Exception {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        Conduit conduit = isolated().addPlugin(plugin("a", closed, false)).build();
        Thread owner = Thread.ofPlatform().start(() -> conduit.newWorker(ThreadMode.SINGLE).progress());
        owner.join();
        conduit.close();
        assertThat(closed).containsExactly("a#1");
    }

    @Test
    void aFailingCloseIsCollectedAndEverythingElseIsStillClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        Conduit conduit = isolated().addPlugin(plugin("good", closed, false).priority(2)).addPlugin(plugin("bad", closed, true).priority(1))
                .build();
        conduit.newWorker(ThreadMode.SINGLE);
        conduit.newWorker(ThreadMode.SINGLE);

        ConduitException e = catchThrowableOfType(ConduitException.class, conduit::close);
        assertThat(e).isNotNull().hasMessageContaining("closing Conduit failed");
        assertThat(closed).containsExactly("bad#2", "good#2", "bad#1", "good#1");

        List<Throwable> causes = new ArrayList<>();
        for (Throwable workerFailure : e.getSuppressed()) {
            assertThat(workerFailure).hasMessageContaining("closing the worker's transports failed");
            causes.addAll(List.of(workerFailure.getSuppressed()));
        }
        assertThat(causes).extracting(Throwable::getMessage).containsExactly("cannot close bad#2", "cannot close bad#1");

        conduit.close(); // idempotent: nothing left to fail
    }

    @Test
    void aClosedConduitOpensNothingMore() {
        Conduit conduit = isolated().addPlugin(TestPlugin.named("p")).build();
        conduit.close();
        assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void aWorkerClosedByItselfIsNotClosedAgainAndRefusesFurtherUse() {
        RecordingTransport t = new RecordingTransport();
        Conduit conduit = isolated().addPlugin(TestPlugin.named("p").transports(c -> t)).build();
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        worker.close();
        worker.close();
        assertThatThrownBy(worker::progress).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        conduit.close();
        assertThat(t.closes()).isEqualTo(1);
    }

    @Test
    void whenOpeningATransportFailsTheOnesAlreadyOpenedAreClosed() {
        List<String> closed = Collections.synchronizedList(new ArrayList<>());
        TestPlugin failing = TestPlugin.named("failing").priority(1).transports(c -> {
            throw new ConduitException("cannot create the receive queue");
        });
        try (Conduit conduit = isolated().addPlugin(plugin("first", closed, false).priority(2)).addPlugin(failing).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).hasMessage("cannot create the receive queue");
            assertThat(closed).containsExactly("first#1");
        }
    }

    @Test
    void aWorkerNeedsAPluginWithATransport() {
        try (Conduit conduit = isolated().addPlugin(TestPlugin.named("memonly").capabilities(Capability.MEMORY)).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no selected plugin provides a transport").hasMessageContaining("[memonly]");
        }
    }
}
