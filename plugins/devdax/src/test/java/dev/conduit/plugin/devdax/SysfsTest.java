package dev.conduit.plugin.devdax;

import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Size and alignment of device-DAX devices from sysfs, read from fixture trees of the shapes
 * kernels give {@code /sys/dev/char/<major>:<minor>}: a symbolic link to the device's directory
 * below {@code /sys/devices}, which holds {@code align} since 5.10; before, only the region had
 * one, next to the device (5.1 to 5.9, the dax bus) or in its parent (4.x, the dax class).
 */
class SysfsTest {

    @TempDir
    Path sys;

    private final Path device = Path.of("/dev/dax3.1");

    /**
     * A device as the dax bus (kernels since 5.1) lays it out: {@code <sys>/dev/char/<major>:<minor>}
     * links to {@code <sys>/devices/platform/e820_pmem/ndbus0/region<major>/dax<minor>.0/dax<minor>.0}
     * (the device below its region's nd_dax device), which holds {@code size}, {@code align} unless
     * it is null, and a {@code subsystem} link to {@code bus/<subsystem>}.
     *
     * @return the device's directory, the link's target
     */
    static Path daxEntry(Path sys, int major, int minor, String size, String align, String subsystem) throws IOException {
        Path region = sys.resolve("devices/platform/e820_pmem/ndbus0/region" + major + "/dax" + minor + ".0");
        Path entry = Files.createDirectories(region.resolve("dax" + minor + ".0"));
        if (size != null) Files.writeString(entry.resolve("size"), size);
        if (align != null) Files.writeString(entry.resolve("align"), align);
        Path bus = Files.createDirectories(sys.resolve("bus/" + subsystem));
        Files.createSymbolicLink(entry.resolve("subsystem"), entry.relativize(bus));
        link(sys, major, minor, entry);
        return entry;
    }

    /** A device as the dax class (kernels 4.x) lays it out: {@code <parent>/dax/dax<minor>.0}, with a {@code device} link to the parent. */
    static Path classDaxEntry(Path sys, int major, int minor, String size) throws IOException {
        Path parent = Files.createDirectories(sys.resolve("devices/platform/e820_pmem/ndbus0/region" + major + "/dax" + minor + ".0"));
        Path entry = Files.createDirectories(parent.resolve("dax/dax" + minor + ".0"));
        Files.writeString(entry.resolve("size"), size);
        Files.createSymbolicLink(entry.resolve("device"), entry.relativize(parent));
        Path dax = Files.createDirectories(sys.resolve("class/dax"));
        Files.createSymbolicLink(entry.resolve("subsystem"), entry.relativize(dax));
        link(sys, major, minor, entry);
        return entry;
    }

    private static void link(Path sys, int major, int minor, Path entry) throws IOException {
        Path chars = Files.createDirectories(sys.resolve("dev/char"));
        Files.createSymbolicLink(chars.resolve(major + ":" + minor), chars.relativize(entry));
    }

    @Test
    void readsSizeAndAlignmentOfTheDeviceByItsNumbers() throws Exception {
        daxEntry(sys, 251, 3, "17179869184\n", "2097152\n", "dax");
        Sysfs.DaxAttributes attributes = new Sysfs(sys).daxAttributes(251, 3, device);
        assertThat(attributes.size()).isEqualTo(16L << 30);
        assertThat(attributes.alignment()).isEqualTo(2 * MIB);
        assertThat(attributes.alignFile()).isEqualTo(sys.resolve("dev/char/251:3/align"));
    }

    /**
     * Kernels 5.1 to 5.9: the region's attributes are in {@code dax_region} of the parent of the
     * directory the link leads to (taken lexically, {@code <major>:<minor>/..} would be {@code dev/char}).
     */
    @Test
    void kernelsBefore510KeepTheAlignmentInTheRegionNextToTheDevice() throws Exception {
        Path entry = daxEntry(sys, 251, 4, "1073741824", null, "dax");
        Path regionAlign = Files.createDirectories(entry.getParent().resolve("dax_region")).resolve("align");
        Files.writeString(regionAlign, "1073741824\n");
        Sysfs.DaxAttributes attributes = new Sysfs(sys).daxAttributes(251, 4, device);
        assertThat(attributes.alignment()).isEqualTo(1L << 30);
        assertThat(attributes.alignFile()).isEqualTo(regionAlign.toRealPath());
    }

    /** Kernels 4.x: the device is a class device below its parent, which holds {@code dax_region}. */
    @Test
    void kernels4KeepTheAlignmentInTheRegionOfTheParentDevice() throws Exception {
        Path entry = classDaxEntry(sys, 251, 5, "1073741824");
        Path parent = entry.getParent().getParent();
        Files.writeString(Files.createDirectories(parent.resolve("dax_region")).resolve("align"), "4096\n");
        Sysfs.DaxAttributes attributes = new Sysfs(sys).daxAttributes(251, 5, device);
        assertThat(attributes.size()).isEqualTo(1L << 30);
        assertThat(attributes.alignment()).isEqualTo(4096);
        assertThat(attributes.alignFile()).isEqualTo(sys.resolve("dev/char/251:5/device/dax_region/align"));
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
        Path noAlign = daxEntry(sys, 251, 5, "1073741824", null, "dax");
        assertThatThrownBy(() -> sysfs.daxAttributes(251, 5, device))
                .hasMessageContaining("cannot read the alignment of device-DAX device " + device)
                .hasMessageContaining("none of [" + sys.resolve("dev/char/251:5/align") + ", "
                        + noAlign.toRealPath().getParent().resolve("dax_region/align") + ", "
                        + sys.resolve("dev/char/251:5/device/dax_region/align") + "] exists")
                .hasMessageContaining("mount all of it")
                .hasMessageContaining("daxctl list");
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
        try (DevdaxProvider provider = (DevdaxProvider) plugin.openMemoryProvider(Fixtures.device("zero", Path.of("/dev/zero"),
                "devdax.file.align", "64k"))) {
            assertThat(provider.kind()).isEqualTo(Device.Kind.DEVICE_DAX);
            assertThat(provider.pageSize()).as("sysfs, not devdax.file.align").isEqualTo(4 * MIB);
            assertThat(provider.geometry().size()).isEqualTo(64 * MIB);
            assertThat(provider.geometry().dataOffset()).isEqualTo(4 * MIB);
            assertThat(provider.generation()).isEqualTo(1);
            assertThatThrownBy(() -> plugin.openMemoryProvider(Fixtures.device("zero", Path.of("/dev/zero"))))
                    .hasMessageContaining("device /dev/zero (alias 'zero') is in use")
                    .hasMessageContaining("held by pid " + ProcessHandle.current().pid());
        }
    }
}
