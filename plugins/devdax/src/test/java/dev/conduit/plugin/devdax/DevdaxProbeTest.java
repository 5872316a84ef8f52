package dev.conduit.plugin.devdax;

import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Linux;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Available with a usable device table or a readable DAX device; otherwise a reason that says what to set. */
class DevdaxProbeTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path dir;

    @TempDir
    Path dev;

    @TempDir
    Path sys;

    private DevdaxPlugin plugin() {
        return new DevdaxPlugin(dev, sys, LockHolders.PROC_LOCKS);
    }

    @Test
    void withoutDevicesOrTableItIsUnavailableAndSaysWhatToSet() {
        Availability availability = plugin().probe(TestContext.of());
        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).startsWith("no " + dev.resolve("dax") + "* devices; set CONDUIT_DEVDAX_DEVICES");
        assertThat(availability.details()).containsKeys("arch", "kernel")
                .as("also where it is unavailable").containsEntry("formats", "device layout 1, handle payload 1");
    }

    /** It used to say there were no devices, though there may be some this process cannot see. */
    @Test
    void aDeviceDirectoryThatCannotBeListedIsSaidSoNotThatItHasNoDevices() {
        Path unlisted = dev.resolve("not-here");
        Availability availability = new DevdaxPlugin(unlisted, sys, LockHolders.PROC_LOCKS).probe(TestContext.of());
        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason())
                .startsWith("cannot look for " + unlisted.resolve("dax") + "* devices: " + unlisted + " cannot be listed (")
                .contains("NoSuchFileException")
                .contains("set CONDUIT_DEVDAX_DEVICES");
    }

    @Test
    void aConfiguredTableIsDescribedAliasByAlias() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
        Path missing = dir.resolve("missing.img");
        TestContext context = TestContext.of("devdax.devices", "pmem0=" + device + ",gone=" + missing, "devdax.device", "pmem0");
        Availability before = plugin().probe(context);
        assertThat(before.isAvailable()).as(before.reason()).isTrue();
        assertThat(before.details()).containsEntry("provider device", "pmem0 (set by devdax.device)")
                .containsEntry("on start", "reset")
                .containsEntry("alias pmem0", device + ": regular file, " + 32 * MIB + " bytes, alignment " + 2 * MIB
                        + ", MAP_SYNC refused (EOPNOTSUPP), chunks are mapped MAP_SHARED, no layout yet, no provider visible here "
                        + "(one in another PID namespace is not listed in /proc/locks)");
        assertThat(before.details().get("alias gone")).startsWith("unusable: cannot open device " + missing).contains("ENOENT");

        try (MemoryProvider provider = plugin().openMemoryProvider(context)) {
            Availability during = plugin().probe(context);
            assertThat(during.details().get("alias pmem0"))
                    .contains("layout generation 1 (id ")
                    .endsWith("provider: pid " + ProcessHandle.current().pid());
        }
    }

    /**
     * /proc/locks leaves out every lock whose holder is not visible in the reader's PID namespace (fs/locks.c,
     * locks_show: "if (locks_translate_pid(...) == 0) return 0"); it does not list it with pid 0. By hand on a 6.18
     * kernel: a flock held on the host is in the host's /proc/locks, and absent from "unshare --pid --fork
     * --mount-proc cat /proc/locks". Until 2026-12-07 a device held by a provider in another container read "no
     * provider" here, and a provider started on that word was refused, "in use by another devdax provider". The fixture is /proc/locks as that namespace reads it,
     * while this process's provider holds the device.
     */
    @Test
    void aDeviceHeldByAProviderThisPidNamespaceCannotSeeIsNotSaidToHaveNoProvider() throws Exception {
        Path device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
        TestContext context = TestContext.of("devdax.devices", "pmem0=" + device);
        Path locksSeenFromAnotherNamespace = Files.writeString(sys.resolve("locks"), "");
        try (MemoryProvider provider = plugin().openMemoryProvider(context)) {
            Availability availability = new DevdaxPlugin(dev, sys, locksSeenFromAnotherNamespace).probe(context);

            assertThat(availability.details().get("alias pmem0")).contains("layout generation 1")
                    .endsWith(", no provider visible here (one in another PID namespace is not listed in " + locksSeenFromAnotherNamespace + ")");
        }
    }

    /**
     * A provider device too small at its alignment rules memory out here, with the provider's own words, and stays
     * available for imports: conduit info showed devdax selected with memory, and only pool("devdax") failed (helper h5,
     * a 64 MiB file at devdax.file.align 1g). Another device of the table that has room is not the provider's.
     */
    @Test
    void aProviderDeviceTooSmallAtItsAlignmentRulesMemoryOutButNotImports() {
        Path small = Fixtures.deviceFile(dir, "small.img", 32 * MIB);
        Path large = Fixtures.deviceFile(dir, "large.img", 32 * MIB);
        Availability availability = plugin().probe(TestContext.of("devdax.devices", "pmem0=" + small + ",pmem1=" + large,
                "devdax.device", "pmem0", "devdax.file.align", "1g"));

        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.unsupportedHere()).containsOnlyKeys(Capability.MEMORY);
        assertThat(availability.unsupportedHere().get(Capability.MEMORY)).isEqualTo("device " + small + " (alias 'pmem0') is too small: "
                + 32 * MIB + " bytes in units of " + (1L << 30) + " leave no unit after the metadata (" + (1L << 30)
                + " bytes). Use a larger device or a smaller devdax.file.align (CONDUIT_DEVDAX_FILE_ALIGN)");
        assertThat(availability.details().get("alias pmem0")).endsWith(", too small to allocate from at this alignment");

        Availability roomy = plugin().probe(TestContext.of("devdax.devices", "pmem0=" + small + ",pmem1=" + large, "devdax.device", "pmem0"));
        assertThat(roomy.unsupportedHere()).isEmpty();
    }

    /**
     * A provider device that cannot be used at all rules memory out here, as one too small does, while another device
     * of the table keeps imports available: the probe rules memory out only for a device too small (DevdaxProbe#probe
     * looks the provider's alias up in tooSmall alone), so conduit info showed devdax available with memory over a
     * provider device that does not open, and only pool("devdax") failed, naming it.
     */
    @Test
    void aProviderDeviceThatCannotBeUsedRulesMemoryOutButNotImports() {
        Path missing = dir.resolve("missing.img");
        Path other = Fixtures.deviceFile(dir, "other.img", 32 * MIB);
        TestContext context = TestContext.of("devdax.devices", "pmem0=" + missing + ",pmem1=" + other, "devdax.device", "pmem0");
        assertThatThrownBy(() -> plugin().openMemoryProvider(context)).hasMessageStartingWith("cannot open device " + missing);

        Availability availability = plugin().probe(context);

        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.unsupportedHere()).containsOnlyKeys(Capability.MEMORY);
        assertThat(availability.unsupportedHere().get(Capability.MEMORY)).contains("cannot open device " + missing);
    }

    /**
     * The probe opens every device read-only, and the provider opens its device read-write. Until 2026-12-07 a
     * provider device this process may read but not write (a device node of mode 0644 or a group with read access
     * only, a container's :ro bind mount: EROFS) passed the probe with memory available, so conduit info showed
     * devdax able to allocate and conduit.pool() chose it and failed, instead of ruling memory out as it does for a
     * device that does not open at all.
     */
    @Test
    void aProviderDeviceThisProcessCannotWriteRulesMemoryOutButNotImports() throws Exception {
        Path readOnly = Fixtures.deviceFile(dir, "readonly.img", 32 * MIB);
        Path other = Fixtures.deviceFile(dir, "other.img", 32 * MIB);
        TestContext context = TestContext.of("devdax.devices", "pmem0=" + readOnly + ",pmem1=" + other, "devdax.device", "pmem0");
        boolean immutable = makeReadOnlyForThisProcess(readOnly);
        try {
            assertThatThrownBy(() -> plugin().openMemoryProvider(context)).hasMessageStartingWith("cannot open device " + readOnly);

            Availability availability = plugin().probe(context);

            assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
            assertThat(availability.unsupportedHere()).containsOnlyKeys(Capability.MEMORY);
            assertThat(availability.unsupportedHere().get(Capability.MEMORY))
                    .startsWith("cannot open device " + readOnly)
                    .contains("O_RDWR")
                    .contains(immutable ? "EPERM" : "EACCES")
                    .contains("for reading and writing");
        } finally {
            if (immutable) chattr("-i", readOnly);
        }
    }

    /**
     * Takes write access to {@code file} from this process: mode 0444, and, for a process that writes past modes (root,
     * CAP_DAC_OVERRIDE), the immutable attribute too, which it may set (CAP_LINUX_IMMUTABLE); whether it was set.
     */
    private static boolean makeReadOnlyForThisProcess(Path file) throws Exception {
        Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("r--r--r--"));
        if (!Files.isWritable(file)) return false;
        chattr("+i", file);
        assertThat(Files.isWritable(file)).as("chattr +i took write access from this process").isFalse();
        return true;
    }

    private static void chattr(String change, Path file) throws Exception {
        Process chattr = new ProcessBuilder("chattr", change, file.toString()).redirectErrorStream(true).start();
        String output = new String(chattr.getInputStream().readAllBytes());
        assertThat(chattr.waitFor()).as("chattr " + change + " " + file + ": " + output).isZero();
    }

    /** The remedy for a damaged layout named the key as "on.start", which no source knows: neither the property nor the variable. */
    @Test
    void aDamagedLayoutIsDescribedNamingTheKeyThatRewritesIt() {
        Path device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
        TestContext context = TestContext.of("devdax.devices", "pmem0=" + device);
        ((DevdaxProvider) plugin().openMemoryProvider(context)).abandon();
        Fixtures.writeLong(device, Layout.OFFSET_SIZE, 3 * Fixtures.UNIT); // breaks the header's checksum

        assertThat(plugin().probe(context).details().get("alias pmem0"))
                .contains("damaged layout (the header's checksum does not match its contents)")
                .contains("a provider opened with devdax.on.start (CONDUIT_DEVDAX_ON_START) = reset rewrites it");
    }

    /**
     * A layout its owner was writing while the probe read it (a format that outlasted the read's wait) is said so, neither
     * "no layout yet" nor "damaged", whose remedy (a reset) would write over the owner's new layout. Given the verdict
     * directly: a probe's read meets it only in a race with another process's format ({@code LayoutTest} forces those).
     */
    @Test
    void aLayoutBeingWrittenIsDescribedAsItsOwnersNotAsDamage() {
        String reason = "its owner kept rewriting it while it was read for " + Layout.FORMAT_WAIT_MILLIS + " ms";
        assertThat(DevdaxProbe.describe(new Layout.BeingWritten(reason)))
                .isEqualTo("a layout its owner is writing (" + reason + ")");
        assertThat(DevdaxProbe.describe(new Layout.Blank())).isEqualTo("no layout yet");
        assertThat(DevdaxProbe.describe(new Layout.Damaged("its magic is 0")))
                .isEqualTo("damaged layout (its magic is 0): a provider opened with devdax.on.start (CONDUIT_DEVDAX_ON_START) = reset rewrites it");
    }

    @Test
    void aTableWithNoUsableDeviceIsUnavailableNamingEachProblem() {
        Path missing = dir.resolve("missing.img");
        Availability availability = plugin().probe(TestContext.of("devdax.devices", "pmem0=" + missing + ",null=/dev/null"));
        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason())
                .startsWith("no device of devdax.devices (CONDUIT_DEVDAX_DEVICES) can be used: pmem0: cannot open device " + missing)
                .contains("; null: ")
                .contains("cannot identify character device /dev/null (1:3)");
        assertThat(availability.details()).containsKey("provider device");
    }

    /** An item without a path, with a path relative to the working directory, or with an alias no payload can carry. */
    @Test
    void aMalformedTableIsTheReason() {
        for (String item : new String[] {"pmem0", "pmem0=", "pmem0=dev/dax0.0", "Pmem0=/dev/dax0.0"}) {
            Availability availability = plugin().probe(TestContext.of("devdax.devices", item));
            assertThat(availability.isAvailable()).as(item).isFalse();
            assertThat(availability.reason()).as(item).contains("item '" + item + "' is not alias=/absolute/path")
                    .contains("CONDUIT_DEVDAX_DEVICES");
        }
    }

    /**
     * A path with a NUL (possible through Conduit.builder().set or a system property, never the
     * environment) escaped as InvalidPathException: the probe, which expects configuration errors,
     * failed instead of reporting, and the provider and the importer named neither key nor item.
     */
    @Test
    void aPathWithANulIsABadItemOfTheTableNamingTheKey() {
        TestContext context = TestContext.of("devdax.devices", "pmem0=/dev/dax0.0\0.img");
        Availability availability = plugin().probe(context);
        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason())
                .startsWith("bad value 'pmem0=/dev/dax0.0\\0.img' for config key conduit.devdax.devices (CONDUIT_DEVDAX_DEVICES) "
                        + "(from test configuration): ")
                .contains("the path of item 'pmem0=/dev/dax0.0\\0.img' contains a NUL character")
                .contains("expected a comma-separated list of alias=/absolute/path")
                .doesNotContain("\0");
        assertThatThrownBy(() -> plugin().openMemoryProvider(context))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("contains a NUL character");
        assertThatThrownBy(() -> plugin().ipcImporter(context))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("contains a NUL character");
    }

    /** A {@code /dev/dax*} node found without a table: a link to {@code /dev/zero}, which the fixture sysfs calls device DAX. */
    @Test
    void aReadableDaxDeviceMakesItAvailableAndTheDetailsSayHowToUseIt() throws Exception {
        FileStatus zero;
        try (var fd = Linux.libc().open("/dev/zero", 0, 0)) {
            zero = Linux.libc().fstat(fd);
        }
        SysfsTest.daxEntry(sys, zero.rdevMajor(), zero.rdevMinor(), Long.toString(16 * MIB), Long.toString(2 * MIB), "dax");
        Files.createSymbolicLink(dev.resolve("dax0.0"), Path.of("/dev/zero"));
        Availability availability = plugin().probe(TestContext.of());
        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.details().get(dev.resolve("dax0.0").toString()))
                .startsWith(dev.resolve("dax0.0") + ": device-DAX, " + 16 * MIB + " bytes, alignment " + 2 * MIB + ", MAP_SYNC ");
        assertThat(availability.details().get("to use them")).contains("CONDUIT_DEVDAX_DEVICES").contains("pmem0=" + dev.resolve("dax0.0"));
    }

    @Test
    void daxNodesThatAreNotDeviceDaxAreReportedNotUsed() throws Exception {
        Files.createSymbolicLink(dev.resolve("dax1.0"), Path.of("/dev/null"));
        Availability availability = plugin().probe(TestContext.of());
        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).contains("cannot identify character device " + dev.resolve("dax1.0"))
                .contains("set CONDUIT_DEVDAX_DEVICES");
    }
}
