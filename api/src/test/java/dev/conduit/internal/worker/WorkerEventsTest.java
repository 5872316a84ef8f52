package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static dev.conduit.internal.worker.Loopbacks.longs;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Connects and endpoint failures are recorded as JFR events. */
class WorkerEventsTest {

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    @Test
    void connectsAndFailuresAreRecorded(@TempDir Path dir) throws Exception {
        LoopbackPlugin plugin = new LoopbackPlugin("lo", 1, false);
        Conduit conduit = loopbacks.conduit(plugin);
        Worker worker = conduit.newWorker(ThreadMode.SINGLE);
        Worker peer = conduit.newWorker(ThreadMode.SINGLE);
        Path file = dir.resolve("events.jfr");
        try (Recording recording = new Recording()) {
            recording.enable("dev.conduit.Connect");
            recording.enable("dev.conduit.EndpointFailure");
            recording.start();
            Endpoint ep = worker.connect(peer.address());
            ep.send(1, longs(1));
            ep.send(1, longs(2)); // waits locally
            plugin.transports.get(1).kill();
            worker.progress();
            assertThatThrownBy(() -> worker.connect(peer.address())).isInstanceOf(ConduitException.class);
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        assertThat(events).filteredOn(e -> e.getEventType().getName().equals("dev.conduit.Connect"))
                .extracting(e -> e.getString("transport") + "|" + e.getInt("tried") + "|" + e.getString("failures"))
                .containsExactly("lo|1|", "|1|'lo': no loopback transport is listening at " + plugin.transports.get(1).key);
        assertThat(events).filteredOn(e -> e.getEventType().getName().equals("dev.conduit.EndpointFailure"))
                .singleElement().satisfies(e -> {
                    assertThat(e.getString("transport")).isEqualTo("lo");
                    assertThat(e.getLong("discardedMessages")).isEqualTo(1);
                    assertThat(e.getLong("discardedBytes")).isEqualTo(8);
                });
    }
}
