package dev.conduit.plugin.devdax;

import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static dev.conduit.plugin.devdax.Fixtures.reader;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * One provider per device, on the whole machine: a second one fails at once, naming the device
 * and the holder; the kernel releases the lock of an owner that is killed.
 */
@Timeout(180) // a hang guard for the child JVMs, not a speed check
class DeviceLockTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path dir;

    private final DevdaxPlugin plugin = new DevdaxPlugin();
    private Path device;

    @BeforeEach
    void createDevice() {
        device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
    }

    private MemoryProvider open(Path path, String... keyValues) {
        return plugin.openMemoryProvider(TestContext.device("pmem0", path, keyValues));
    }

    @Test
    void aSecondProviderInThisProcessIsRefusedAtOnce() throws Exception {
        Path symlink = Files.createSymbolicLink(dir.resolve("link.img"), device);
        try (MemoryProvider owner = open(device)) {
            long descriptors = Fixtures.openDescriptors();
            long self = ProcessHandle.current().pid();
            for (Path path : new Path[] {device, symlink}) {
                assertThatThrownBy(() -> open(path))
                        .as(path.toString())
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("device " + path + " (alias 'pmem0') is in use by another devdax provider")
                        .hasMessageContaining("flock(LOCK_EX|LOCK_NB)")
                        .hasMessageContaining("held by pid " + self + " (this process)")
                        .hasMessageContaining("devdax.device (CONDUIT_DEVDAX_DEVICE)");
            }
            assertThat(Fixtures.openDescriptors()).as("the refused opens closed their descriptors").isEqualTo(descriptors);
            assertThat(owner.allocate(owner.pageSize()).segment().byteSize()).as("the owner is unaffected").isEqualTo(owner.pageSize());
        }
    }

    @Test
    void aProviderInAnotherProcessIsNamedByItsPidAndItsDeathReleasesTheDevice() throws Exception {
        try (ChildJvm child = ChildJvm.start("hold", "pmem0=" + device)) {
            assertThat(child.readLine()).isEqualTo("ready " + Fixtures.UNIT);
            assertThatThrownBy(() -> open(device))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("device " + device + " (alias 'pmem0') is in use")
                    .hasMessageContaining("held by pid " + child.pid() + ".");
            child.kill();
        }
        try (MemoryProvider next = open(device)) {
            assertThat(next.pageSize()).as("kill -9 released the lock").isEqualTo(Fixtures.UNIT);
        }
    }

    @Test
    void theExportsOfAKilledOwnerSurviveRecoverAndNotReset() throws Exception {
        Path containerView = Files.createLink(dir.resolve("container-view.img"), device);
        IpcImporter importer = plugin.ipcImporter(TestContext.device("pmem0", containerView));
        byte[] export;
        long length;
        try (ChildJvm child = ChildJvm.start("produce", "pmem0=" + device)) {
            String[] produced = child.readLine().split(" ");
            export = HexFormat.of().parseHex(produced[0]);
            length = Long.parseLong(produced[1]);
            try (ChunkMapping mapping = importer.map(reader(export), length)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(DevdaxChild.PRODUCED);
            }
            child.kill(); // nothing freed, nothing closed
        }
        try (ChunkMapping mapping = importer.map(reader(export), length)) {
            assertThat(mapping.segment().get(JAVA_LONG, 0)).as("the table outlives its owner").isEqualTo(DevdaxChild.PRODUCED);
        }
        DevdaxProvider recovered = (DevdaxProvider) open(device, "devdax.on.start", "recover");
        assertThat(recovered.adoptedCount()).isEqualTo(1);
        try (ChunkMapping mapping = importer.map(reader(export), length)) {
            assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(DevdaxChild.PRODUCED);
        }
        recovered.abandon(); // a second crash: the re-adopted allocation stays for the next owner

        try (MemoryProvider reset = open(device, "devdax.on.start", "reset")) {
            assertThatThrownBy(() -> importer.map(reader(export), length))
                    .hasMessageStartingWith("export gone: ")
                    .hasMessageContaining("the export is from generation 1, the device is at generation 3");
        }
    }
}
