package dev.conduit.plugin.devdax;

import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Size and alignment of device-DAX devices from sysfs, read from a fixture tree of the same shape
 * as {@code /sys/dev/char/<major>:<minor>/}.
 */
class SysfsTest {

    @TempDir
    Path sys;

    private final Path device = Path.of("/dev/dax3.1");

    /** {@code <sys>/dev/char/<major>:<minor>/} with {@code size}, {@code align} and a {@code subsystem} link to {@code bus/<subsystem>}. */
    static Path daxEntry(Path sys, int major, int minor, String size, String align, String subsystem) throws IOException {
        Path entry = Files.createDirectories(sys.resolve("dev/char/" + major + ":" + minor));
        if (size != null) Files.writeString(entry.resolve("size"), size);
        if (align != null) Files.writeString(entry.resolve("align"), align);
        Path bus = Files.createDirectories(sys.resolve("bus/" + subsystem));
        Files.createSymbolicLink(entry.resolve("subsystem"), entry.relativize(bus));
        return entry;
    }

    @Test
    void readsSizeAndAlignmentOfTheDeviceByItsNumbers() throws Exception {
        daxEntry(sys, 251, 3, "17179869184\n", "2097152\n", "dax");
        Sysfs.DaxAttributes attributes = new Sysfs(sys).daxAttributes(251, 3, device);
        assertThat(attributes.size()).isEqualTo(16L << 30);
        assertThat(attributes.alignment()).isEqualTo(2 * MIB);
        assertThat(attributes.alignFile()).isEqualTo(sys.resolve("dev/char/251:3/align"));
    }

    @Test
    void olderKernelsKeepTheAlignmentInTheParentDevice() throws Exception {
        Path entry = daxEntry(sys, 251, 4, "1073741824", null, "dax");
        Files.createDirectories(entry.resolve("device"));
        Files.writeString(entry.resolve("device/align"), "1073741824\n");
        Sysfs.DaxAttributes attributes = new Sysfs(sys).daxAttributes(251, 4, device);
        assertThat(attributes.alignment()).isEqualTo(1L << 30);
        assertThat(attributes.alignFile()).isEqualTo(entry.resolve("device/align"));
    }

    @Test
    void whatSysfsCannotSayIsAnErrorNamingTheFile() throws Exception {
        Sysfs sysfs = new Sysfs(sys);
        assertThatThrownBy(() -> sysfs.daxAttributes(251, 9, device))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining(sys.resolve("dev/char/251:9") + " does not exist")
                .hasMessageContaining("mount /sys");
        daxEntry(sys, 1, 5, "0", "4096", "mem");
        assertThatThrownBy(() -> sysfs.daxAttributes(1, 5, device))
                .hasMessageContaining(device + " is not a device-DAX device")
                .hasMessageContaining("subsystem 'mem'");
        daxEntry(sys, 251, 5, "1073741824", null, "dax");
        assertThatThrownBy(() -> sysfs.daxAttributes(251, 5, device))
                .hasMessageContaining("cannot read the alignment")
                .hasMessageContaining(sys.resolve("dev/char/251:5/device/align") + " does not exist");
        daxEntry(sys, 251, 6, "lots", "2097152", "dax");
        assertThatThrownBy(() -> sysfs.daxAttributes(251, 6, device))
                .hasMessageContaining(sys.resolve("dev/char/251:6/size") + " holds 'lots', not a decimal number");
        daxEntry(sys, 251, 7, "0", "2097152", "dax");
        assertThatThrownBy(() -> sysfs.daxAttributes(251, 7, device)).hasMessageContaining("has size 0");
        daxEntry(sys, 251, 8, "1073741824", "3000000", "dax");
        assertThatThrownBy(() -> sysfs.daxAttributes(251, 8, device)).hasMessageContaining("reports alignment 3000000");
        Files.createDirectories(sys.resolve("dev/char/251:10"));
        assertThatThrownBy(() -> sysfs.daxAttributes(251, 10, device)).hasMessageContaining("not a readable symbolic link");
    }

    /**
     * The character-device path of the provider's open, on a machine without DAX: {@code /dev/zero}
     * is a character device that can be locked and mapped shared, and a fixture sysfs that
     * describes its numbers as device DAX gives it a size and an alignment. (A shared mapping of
     * {@code /dev/zero} is new memory the size of the mapping, with a fault past it for any other
     * offset than 0, so only the metadata at offset 0 is used here: chunks need a real device,
     * see {@link RealDeviceTest}.)
     */
    @Test
    void aCharacterDeviceIsSizedAndAlignedBySysfs() throws Exception {
        FileStatus zero;
        try (var fd = Linux.libc().open("/dev/zero", 0, 0)) {
            zero = Linux.libc().fstat(fd);
        }
        daxEntry(sys, zero.rdevMajor(), zero.rdevMinor(), Long.toString(64 * MIB), Long.toString(4 * MIB), "dax");
        DevdaxPlugin plugin = new DevdaxPlugin(Path.of("/dev"), sys, LockHolders.PROC_LOCKS);
        try (DevdaxProvider provider = (DevdaxProvider) plugin.openMemoryProvider(TestContext.device("zero", Path.of("/dev/zero"),
                "devdax.file.align", "64k"))) {
            assertThat(provider.kind()).isEqualTo(Device.Kind.DEVICE_DAX);
            assertThat(provider.pageSize()).as("sysfs, not devdax.file.align").isEqualTo(4 * MIB);
            assertThat(provider.geometry().size()).isEqualTo(64 * MIB);
            assertThat(provider.geometry().dataOffset()).isEqualTo(4 * MIB);
            assertThat(provider.generation()).isEqualTo(1);
            assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.device("zero", Path.of("/dev/zero"))))
                    .hasMessageContaining("device /dev/zero (alias 'zero') is in use")
                    .hasMessageContaining("held by pid " + ProcessHandle.current().pid());
        }
    }
}
