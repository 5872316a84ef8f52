package dev.conduit.plugin.devdax;

import dev.conduit.linux.Errno;
import dev.conduit.linux.Libc;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static dev.conduit.plugin.devdax.Fixtures.reader;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * One provider per device among the processes that reach it through one device node: a second one
 * fails at once, naming the device and the holder; the kernel releases the lock of an owner that is
 * killed. A provider that another took the device over from through a second node fails at its next call.
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
        return plugin.openMemoryProvider(Fixtures.device("pmem0", path, keyValues));
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

    /**
     * A flock that fails for another reason than a held lock (ENOLCK: no lock record, or a network
     * file system's lock service that does not answer) used to name the errno and nothing to do.
     */
    @Test
    void aLockThatCannotBeTakenNamesTheCauseAndTheRemedyAndLeavesNothingOpen() {
        long descriptors = Fixtures.openDescriptors();
        Libc noLocks = FailingLibc.failing("tryFlock", Errno.ENOLCK, args -> true);
        assertThatThrownBy(() -> DevdaxProvider.open(noLocks, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS))
                .isInstanceOf(ConduitException.class)
                .hasMessageStartingWith("cannot lock device " + device + " (alias 'pmem0'): ")
                .hasMessageContaining("ENOLCK")
                .hasMessageContaining("a provider allocates only from a device it holds locked")
                .hasMessageContaining("out of memory for lock records")
                .hasMessageContaining("local file system");
        Libc refused = FailingLibc.failing("tryFlock", Errno.EINVAL, args -> true);
        assertThatThrownBy(() -> DevdaxProvider.open(refused, Fixtures.device("pmem0", device), Sysfs.SYSTEM, LockHolders.PROC_LOCKS))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("EINVAL")
                .hasMessageContaining("a provider allocates only from a device it holds locked")
                .hasMessageContaining("devdax.devices (CONDUIT_DEVDAX_DEVICES)");
        assertThat(Fixtures.openDescriptors()).isEqualTo(descriptors);
    }

    /**
     * A second device node for the same device (mknod, {@code docker run --device}) is another
     * inode, whose flock does not see the first node's: a libc that grants every flock stands in
     * for it. The first provider used to go on allocating from, freeing in and, on close, clearing
     * entries of a table the second had reset and allocated from.
     */
    @Test
    void aProviderWhoseDeviceAnotherTookOverThroughAnotherNodeFailsLoudlyAndLeavesTheTableAlone() {
        Path small = Fixtures.deviceFile(dir, "small.img", 4 * MIB); // one unit after the metadata: both providers get it
        DevdaxProvider first = (DevdaxProvider) open(small);
        Chunk mine = first.allocate(Fixtures.UNIT);
        Libc otherNode = FailingLibc.answering("tryFlock", true);
        try (DevdaxProvider second = DevdaxProvider.open(otherNode, Fixtures.device("pmem0", small), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
            Chunk theirs = second.allocate(Fixtures.UNIT);
            assertThat(((DevdaxChunk) theirs).offset()).as("the same range: the reset forgot the first one's").isEqualTo(((DevdaxChunk) mine).offset());
            byte[] theirExport = second.export(theirs);

            for (var call : List.<Runnable>of(() -> first.allocate(Fixtures.UNIT), () -> first.free(mine))) {
                assertThatThrownBy(call::run)
                        .isInstanceOf(ConduitException.class)
                        .hasMessageContaining("device " + small + " (alias 'pmem0') was taken over by another devdax provider")
                        .hasMessageContaining("its header is at generation 2, but this provider started it at generation 1")
                        .hasMessageContaining("another device node")
                        .hasMessageContaining("Run one provider per device");
            }
            assertThatThrownBy(first::close)
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("was taken over")
                    .hasMessageContaining("closed without writing the table");
            assertThat(Fixtures.mappingsOf(small)).as("the second provider's metadata and chunk").isEqualTo(2);
            try (ChunkMapping mapping = plugin.ipcImporter(Fixtures.device("pmem0", small)).map(reader(theirExport), Fixtures.UNIT)) {
                assertThat(mapping.segment().byteSize()).as("the first one's close left the second one's entry").isEqualTo(Fixtures.UNIT);
            }
        }
        assertThat(Fixtures.descriptorsOn(small)).isZero();
    }

    /**
     * A second provider through another node that finds the layout damaged writes a new one, at
     * generation 1 again: the generation alone, the same as the first provider's, does not tell
     * the takeover; the layout id does, and the refusal names both.
     */
    @Test
    void aTakeoverThatWroteANewLayoutAtTheSameGenerationIsToldByTheLayoutIdNamingBoth() {
        Path small = Fixtures.deviceFile(dir, "small.img", 4 * MIB);
        DevdaxProvider first = (DevdaxProvider) open(small);
        Fixtures.writeLong(small, Layout.OFFSET_SIZE, 3 * Fixtures.UNIT); // breaks the header's checksum: the next start resets it
        Libc otherNode = FailingLibc.answering("tryFlock", true);
        try (DevdaxProvider second = DevdaxProvider.open(otherNode, Fixtures.device("pmem0", small), Sysfs.SYSTEM, LockHolders.PROC_LOCKS)) {
            assertThat(second.generation()).as("a new layout, at the first one's generation").isEqualTo(first.generation());
            assertThatThrownBy(() -> first.allocate(Fixtures.UNIT))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("was taken over by another devdax provider: its header is at generation 1 of layout "
                            + Long.toHexString(second.layoutId()) + ", but this provider started it at generation 1 of layout "
                            + Long.toHexString(first.layoutId()));
            assertThatThrownBy(first::close).hasMessageContaining("closed without writing the table");
        }
        assertThat(Fixtures.descriptorsOn(small)).isZero();
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

    /**
     * Also what an import can tell of the killed owner's life: {@code UNKNOWN} while it lives and
     * after its {@code kill -9} (nothing on the device changes), {@code DEAD} once the recovering
     * owner started, for an import made before the kill as for one made after the recovery.
     */
    @Test
    void theExportsOfAKilledOwnerSurviveRecoverAndNotReset() throws Exception {
        Path containerView = Files.createLink(dir.resolve("container-view.img"), device);
        IpcImporter importer = plugin.ipcImporter(Fixtures.device("pmem0", containerView));
        byte[] export;
        long length;
        ChunkMapping keptAcrossTheKill;
        try (ChildJvm child = ChildJvm.start("produce", "pmem0=" + device)) {
            String[] produced = child.readLine().split(" ");
            export = HexFormat.of().parseHex(produced[0]);
            length = Long.parseLong(produced[1]);
            keptAcrossTheKill = importer.map(reader(export), length);
            assertThat(keptAcrossTheKill.segment().get(JAVA_LONG, 0)).isEqualTo(DevdaxChild.PRODUCED);
            assertThat(keptAcrossTheKill.exporterState()).as("its owner lives").isEqualTo(ExporterState.UNKNOWN);
            child.kill(); // nothing freed, nothing closed
        }
        try (keptAcrossTheKill) {
            assertThat(keptAcrossTheKill.exporterState()).as("killed, and nobody started since").isEqualTo(ExporterState.UNKNOWN);
            try (ChunkMapping mapping = importer.map(reader(export), length)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).as("the table outlives its owner").isEqualTo(DevdaxChild.PRODUCED);
            }
            DevdaxProvider recovered = (DevdaxProvider) open(device, "devdax.on.start", "recover");
            assertThat(recovered.adoptedCount()).isEqualTo(1);
            assertThat(keptAcrossTheKill.exporterState()).as("its successor started").isEqualTo(ExporterState.DEAD);
            try (ChunkMapping mapping = importer.map(reader(export), length)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(DevdaxChild.PRODUCED);
                assertThat(mapping.exporterState()).as("imported from the successor, exported by the dead owner")
                        .isEqualTo(ExporterState.DEAD);
            }
            recovered.abandon(); // a second crash: the re-adopted allocation stays for the next owner
        }

        try (MemoryProvider reset = open(device, "devdax.on.start", "reset")) {
            assertThatThrownBy(() -> importer.map(reader(export), length))
                    .hasMessageStartingWith("export gone: ")
                    .hasMessageContaining("the export is from generation 1, the device is at generation 3");
        }
    }
}
