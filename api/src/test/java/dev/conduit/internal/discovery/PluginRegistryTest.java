package dev.conduit.internal.discovery;

import dev.conduit.PluginInfo.Status;
import dev.conduit.internal.RuntimeSettings;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/** How the plugins of one build are probed and selected, where what the builder sees cannot show it. */
class PluginRegistryTest {

    /**
     * A probe whose thread cannot start (the process, or its cgroup, at its limit of threads) makes
     * its plugin unavailable, the reason naming the thread, the JVM's message, the limit and the
     * remedy, and the other plugins are probed and selected: until 2026-12-07 the JVM's bare
     * OutOfMemoryError came out of the build. The executor starts its threads on the JDK's own path,
     * not through Thread.start, so the test's factory throws what the start would.
     */
    @Test
    void aProbeWhoseThreadCannotStartMakesItsPluginUnavailableSayingWhichLimitToRaise() throws InterruptedException {
        TestPlugin starved = TestPlugin.named("starved");
        TestPlugin good = TestPlugin.named("good");
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource "
                + "limits reached (injected by the test)");
        AtomicBoolean refused = new AtomicBoolean();
        List<Thread> made = new CopyOnWriteArrayList<>();
        ThreadFactory threads = r -> {
            if (refused.compareAndSet(false, true)) throw noThread;
            Thread t = Thread.ofPlatform().daemon().unstarted(r);
            made.add(t);
            return t;
        };
        RuntimeSettings settings = new RuntimeSettings(Map.of(), Map.of(), new Properties(), PluginRegistryTest.class.getClassLoader(),
                false, List.of(starved, good));
        List<PluginRecord> records = PluginRegistry.discover(settings, null, null);

        PluginRegistry registry = PluginRegistry.probeAndSelect(records, name -> null, Duration.ofSeconds(60), "the default", List.of(),
                threads);

        PluginRecord failed = registry.find("starved").orElseThrow();
        assertThat(failed.status).isEqualTo(Status.UNAVAILABLE);
        assertThat(failed.reason).startsWith("probe failed: ConduitException: cannot start the thread (conduit-probe-*) that runs plugin "
                + "starved's probe: no thread could be started (unable to create native thread")
                .contains("limit of threads").contains("ulimit -u").contains("pids.max");
        assertThat(starved.probes).hasValue(0);
        assertThat(registry.selected()).extracting(PluginRecord::name).containsExactly("good");
        for (Thread t : made) assertThat(t.join(Duration.ofSeconds(60))).as("the probe's thread ended").isTrue();
    }
}
