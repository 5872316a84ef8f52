package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * devdax between a host process and an isolated container: the "device" is a file of the device's
 * shape in the shared directory; the producer's provider holds the device lock, the consumer in the
 * container reaches the same file through its own bind mount, under its own alias table
 * ({@code CONDUIT_DEVDAX_DEVICES}), with no provider and no lock.
 */
@Timeout(120) // a hang guard, not a speed check
class DevdaxContainerTest {

    private static final long DEVICE_SIZE = 64L << 20;

    @Test
    void aConsumerInAContainerMapsRegionsOfTheHostsDeviceByAlias(@TempDir(factory = ShmDir.class) Path shared) throws Exception {
        Path device = shared.resolve("dax0.img");
        try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "rw")) {
            f.setLength(DEVICE_SIZE);
        }
        try (RemotePeer consumer = RemotePeer.start(shared, Launcher.container(),
                "CONDUIT_DEVDAX_DEVICES", "pmem=" + ChildJvm.SHARED + "/dax0.img");
             Conduit producer = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                     .sharedDirectory(shared).transports("devdax")
                     .set("devdax.devices", "pmem=" + device).set("devdax.device", "pmem").build();
             Pool pool = producer.pool("devdax")) {
            assertThat(consumer.child().pidInside()).isEqualTo(1);
            assertThat(consumer.open().get("selected").split(",")).contains("devdax");
            Region region = pool.allocate(1 << 20);
            Patterns.fill(region.segment(), 7);
            assertThat(consumer.importRegion("r", region.exportHandle())).isEqualTo(1 << 20);
            consumer.assertPattern("r", 7);
            consumer.fill("r", 8);
            assertThat(Patterns.firstMismatch(region.segment(), 8)).isEqualTo(-1);
            consumer.release("r");
            consumer.closeConduit();
        }
    }
}
