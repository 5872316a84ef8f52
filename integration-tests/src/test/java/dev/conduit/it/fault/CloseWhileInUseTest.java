package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The usual shutdown of an application: threads sleep in {@code await} on their own SINGLE
 * workers while the main thread closes the {@code Conduit}. Every worker closes, on its own thread,
 * and nothing stays open: no descriptor, no mapping, no file. It used to close the workers'
 * transports from the main thread while their owners slept in a futex on the receive queue, which
 * kept the queue's arena in use: its unmapping failed, the close threw, and the mapping stayed.
 */
class CloseWhileInUseTest {

    private static final int OWNERS = 4;

    @TempDir
    Path shared;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "memfd"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void closingTheConduitWhileItsWorkersSleepInAwaitClosesThemAllAndLeavesNothing(String plugin) throws Exception {
        OpenResources before = OpenResources.ofThisProcess();
        Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
        CountDownLatch asleep = new CountDownLatch(OWNERS);
        AtomicReference<Throwable> unexpected = new AtomicReference<>();
        Thread[] owners = new Thread[OWNERS];
        for (int i = 0; i < OWNERS; i++) {
            owners[i] = Thread.ofPlatform().name("owner-" + i).start(() -> {
                Worker worker = conduit.newWorker(ThreadMode.SINGLE);
                asleep.countDown();
                try {
                    while (true) worker.await(Duration.ofHours(1));
                } catch (IllegalStateException closed) {
                    if (!String.valueOf(closed.getMessage()).contains("its Conduit was closed")) unexpected.set(closed);
                } catch (Throwable t) {
                    unexpected.set(t);
                }
            });
        }
        asleep.await();
        Thread.sleep(50); // not a measurement: lets the owners reach the futex

        conduit.close();

        for (Thread owner : owners) owner.join();
        assertThat(unexpected.get()).as(() -> describe(unexpected.get())).isNull();
        OpenResources after = OpenResources.ofThisProcess();
        assertThat(after.conduitMappings()).as(after.format() + ", before: " + before.format()).isEqualTo(before.conduitMappings());
        assertThat(after.conduitFds()).as(after.format() + ", before: " + before.format()).isEqualTo(before.conduitFds());
        assertThat(files()).as("files left in the shared directory").isEmpty();
    }

    private static String describe(Throwable t) {
        if (t == null) return "";
        java.io.StringWriter w = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(w));
        return w.toString();
    }

    private List<String> files() throws IOException {
        try (Stream<Path> s = Files.list(shared)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
