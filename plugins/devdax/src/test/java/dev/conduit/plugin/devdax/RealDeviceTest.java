package dev.conduit.plugin.devdax;

import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Linux;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;

import static dev.conduit.plugin.devdax.Fixtures.reader;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The plugin on a real device-DAX device, which this build machine does not have: run with
 * {@code CONDUIT_TEST_DEVDAX_DEVICE=/dev/dax0.0 mvn -q -o -f plugins/devdax/pom.xml verify}.
 * Without the variable every test here is skipped, and the reason printed; it is the only test
 * of this module that may skip.
 *
 * <p><b>The device must be a scratch device:</b> the tests write a new devdax layout over its
 * first alignment unit(s) and allocate from it ({@code devdax.on.start=reset}).
 *
 * <p>What it checks that the file-backed tests cannot: size and alignment come from the real
 * sysfs, the kernel accepts {@code MAP_SYNC}, chunks are mapped at addresses aligned to the
 * device's alignment, and the lock, the restart policies and a consumer in another JVM (through
 * a symbolic link, as a container would see the device) work on a character device.
 */
@Timeout(600) // a hang guard for child JVMs and large chunks, not a speed check
class RealDeviceTest {

    static final String VARIABLE = "CONDUIT_TEST_DEVDAX_DEVICE";

    private static Path device;
    private static String skipReason;

    @TempDir
    Path dir;

    private final DevdaxPlugin plugin = new DevdaxPlugin();

    @BeforeAll
    static void findTheDevice() {
        String value = System.getenv(VARIABLE);
        if (value != null && !value.isBlank()) {
            device = Path.of(value);
            return;
        }
        skipReason = "RealDeviceTest skipped: " + VARIABLE + " is not set. To verify the devdax plugin on real hardware, run "
                + VARIABLE + "=/dev/daxX.Y mvn -q -o -f plugins/devdax/pom.xml verify with a scratch device-DAX device "
                + "(its devdax layout is overwritten); every other test uses file-backed devices.";
        // Written once to the test JVM's own stderr, past surefire's capture of System.err, so that a quiet build shows it
        // too; the stream is not closed, which would close descriptor 2.
        new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.err), true).println("[devdax] " + skipReason);
    }

    @BeforeEach
    void requireTheDevice() {
        Assumptions.assumeTrue(device != null, skipReason);
    }

    private MemoryProvider open(Path path, String... keyValues) {
        return plugin.openMemoryProvider(Fixtures.device("pmem0", path, keyValues));
    }

    @Test
    void sizeAndAlignmentComeFromSysfsAndTheKernelAcceptsMapSync() throws Exception {
        FileStatus status;
        try (var fd = Linux.libc().open(device.toString(), 0, 0)) {
            status = Linux.libc().fstat(fd);
        }
        assertThat(status.isCharacterDevice()).as(device + " must be a device-DAX character device").isTrue();
        Path sysfs = Path.of("/sys/dev/char/" + status.rdevMajor() + ":" + status.rdevMinor());
        long size = Long.parseLong(Files.readString(sysfs.resolve("size")).trim());
        // Since 5.10 the device's own; before, the region's: next to the device (5.1 to 5.9), or in its parent (4.x).
        Path alignFile = java.util.stream.Stream.of(sysfs.resolve("align"), sysfs.toRealPath().getParent().resolve("dax_region/align"),
                sysfs.resolve("device/dax_region/align")).filter(Files::exists).findFirst().orElseThrow();
        long alignment = Long.parseLong(Files.readString(alignFile).trim());

        try (DevdaxProvider provider = (DevdaxProvider) open(device)) {
            assertThat(provider.kind()).isEqualTo(Device.Kind.DEVICE_DAX);
            assertThat(provider.pageSize()).isEqualTo(alignment);
            assertThat(provider.geometry().size()).isEqualTo(size - size % alignment);
            assertThat(provider.mapSync()).as(provider.mapMode()).isTrue();
            Chunk chunk = provider.allocate(alignment);
            assertThat(chunk.segment().address() % alignment).as("device DAX places mappings on its alignment").isZero();
            chunk.segment().set(JAVA_LONG, alignment - 8, 77L);
            assertThat(chunk.segment().get(JAVA_LONG, alignment - 8)).isEqualTo(77L);
            provider.free(chunk);
        }
        Availability availability = plugin.probe(Fixtures.device("pmem0", device));
        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.details().get("alias pmem0")).contains("device-DAX").contains("MAP_SYNC accepted");
    }

    @Test
    void anotherProcessImportsThroughItsOwnAliasAndPath() throws Exception {
        Path containerView = Files.createSymbolicLink(dir.resolve("dax-view"), device);
        try (MemoryProvider provider = open(device)) {
            long unit = provider.pageSize();
            Chunk chunk = provider.allocate(unit);
            chunk.segment().set(JAVA_LONG, 0, 4711L);
            byte[] export = provider.export(chunk);
            try (ChunkMapping mapping = plugin.ipcImporter(Fixtures.device("pmem0", containerView)).map(reader(export), unit)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(4711L);
            }
            try (ChildJvm child = ChildJvm.start("import", "pmem0=" + containerView, HexFormat.of().formatHex(export),
                    Long.toString(unit))) {
                assertThat(child.remainingLines()).containsExactly("read=4711", "left=0");
                assertThat(child.waitForExit()).as(child.stderr()).isZero();
            }
            assertThat(chunk.segment().get(JAVA_LONG, 8)).isEqualTo(DevdaxChild.WRITTEN);
            provider.free(chunk);
            assertThatThrownBy(() -> plugin.ipcImporter(Fixtures.device("pmem0", device)).map(reader(export), unit))
                    .hasMessageStartingWith("export gone: ");
        }
        assertThat(Fixtures.descriptorsOn(device)).isZero();
        assertThat(Fixtures.mappingsOf(device)).isZero();
    }

    @Test
    void theLockAndTheRestartPoliciesWorkOnTheDevice() throws Exception {
        IpcImporter importer = plugin.ipcImporter(Fixtures.device("pmem0", device));
        try (ChildJvm child = ChildJvm.start("produce", "pmem0=" + device)) {
            String[] produced = child.readLine().split(" ");
            byte[] export = HexFormat.of().parseHex(produced[0]);
            long length = Long.parseLong(produced[1]);
            assertThatThrownBy(() -> open(device)).hasMessageContaining("held by pid " + child.pid() + ".");
            child.kill();

            try (DevdaxProvider recovered = (DevdaxProvider) open(device, "devdax.on.start", "recover")) {
                assertThat(recovered.adoptedCount()).isEqualTo(1);
                try (ChunkMapping mapping = importer.map(reader(export), length)) {
                    assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(DevdaxChild.PRODUCED);
                }
                recovered.abandon();
            }
            try (MemoryProvider reset = open(device, "devdax.on.start", "reset")) {
                assertThatThrownBy(() -> importer.map(reader(export), length)).hasMessageStartingWith("export gone: ");
            }
        }
    }
}
