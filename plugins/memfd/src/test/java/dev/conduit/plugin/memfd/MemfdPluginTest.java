package dev.conduit.plugin.memfd;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** What the plugin declares, and its probe. */
class MemfdPluginTest {

    private final MemfdPlugin plugin = new MemfdPlugin();

    @TempDir
    Path shared;

    @Test
    void declaresItselfAsAPreferredSharedMemoryProviderAndImporter() {
        assertThat(plugin.name()).isEqualTo("memfd");
        assertThat(plugin.version()).isEqualTo(Version.parse("0.1.0"));
        assertThat(plugin.spiVersion()).isEqualTo(ConduitPlugin.SPI_VERSION);
        assertThat(plugin.priority()).isEqualTo(110);
        assertThat(plugin.capabilities()).containsExactlyInAnyOrder(Capability.MEMORY, Capability.IPC, Capability.AM,
                Capability.RMA, Capability.ATOMICS, Capability.WAKEUP);
        assertThat(plugin.threadModes()).containsExactlyInAnyOrder(ThreadMode.SINGLE, ThreadMode.SERIALIZED);
        assertThat(plugin.description()).contains("memfd");
    }

    @Test
    void declaresItsKeysWithTheirDefaults() {
        assertThat(plugin.configKeys()).extracting(ConfigKey::name)
                .containsExactly("memfd.allowed.uids", "memfd.server.timeout", "memfd.hugepages", "memfd.connect.timeout", "memfd.trusted.uids",
                        "memfd.queue.size", "memfd.inline.max", "memfd.bounce.size", "memfd.liveness.interval",
                        "memfd.heartbeat.timeout", "memfd.unblock.timeout", "memfd.inbound.max", "memfd.inbound.bounce.max")
                .allMatch(name -> name.startsWith("memfd."));
        assertThat(MemfdConfig.ALLOWED_UIDS.defaultValue()).isEqualTo(List.of());
        assertThat(MemfdConfig.SERVER_TIMEOUT.defaultValue()).isEqualTo(Duration.ofSeconds(1));
        assertThat(MemfdConfig.CONNECT_TIMEOUT.defaultValue()).isEqualTo(Duration.ofSeconds(2));
        assertThat(MemfdConfig.TRUSTED_UIDS.defaultValue()).isEqualTo(List.of());
        assertThat(MemfdConfig.HUGEPAGES.defaultValue()).isEqualTo(dev.conduit.shm.HugePages.Mode.NO);
        assertThat(plugin.configKeys()).allSatisfy(key -> assertThat(key.doc()).isNotBlank());
    }

    @Test
    void isListedForClassPathUsers() throws IOException {
        try (InputStream services = MemfdPlugin.class.getResourceAsStream("/META-INF/services/dev.conduit.spi.ConduitPlugin")) {
            assertThat(services).isNotNull();
            assertThat(new String(services.readAllBytes(), StandardCharsets.UTF_8).trim()).isEqualTo(MemfdPlugin.class.getName());
        }
        assertThat(MemfdPlugin.class.getModule().getDescriptor().provides())
                .anySatisfy(p -> assertThat(p.providers()).containsExactly(MemfdPlugin.class.getName()));
    }

    @Test
    void isAvailableWithASharedDirectoryAndReportsItAndTheSeals() {
        Availability availability = plugin.probe(TestContext.of(shared));
        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.details())
                .containsEntry("shared.dir", shared.toString())
                .containsEntry("seals", "F_SEAL_SEAL|F_SEAL_SHRINK|F_SEAL_GROW")
                .containsEntry("formats", "receive queue layout 8, transport address 2, handle payload 2, fd protocol 1")
                .containsKeys("arch", "kernel");
        assertThat(Leaks.memfdDescriptors()).isZero();
        assertThat(Leaks.files(shared)).isEmpty();
    }

    @Test
    void reportsTheLiveAndDeadOwnersInTheSharedDirectoryAsPosixDoes() throws IOException {
        // conduit info showed posix's owners alone: a killed memfd producer's lease and socket, or a worker's lease, were not to be seen.
        assertThat(plugin.probe(TestContext.of(shared)).details()).containsEntry("live owners", "0").containsEntry("dead owners", "0");
        Files.createFile(shared.resolve("conduit-memfd-0123456789abcdef0123456789abcdef.lease"));
        Files.createFile(shared.resolve("conduit-memfd-worker-0123456789abcdef0123456789abcdef.lease"));
        Files.createFile(shared.resolve("conduit-posix-0123456789abcdef0123456789abcdef.lease")); // posix's, counted by posix
        Availability availability = plugin.probe(TestContext.of(shared));
        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.details()).containsEntry("live owners", "0").containsEntry("dead owners", "2")
                .doesNotContainKey("unreadable leases");
    }

    @Test
    void isUnavailableWithoutTheSharedDirectoryNamingTheKey() {
        Path missing = shared.resolve("missing");
        Availability availability = plugin.probe(TestContext.of(missing));
        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).contains(missing.toString()).contains("does not exist").contains("shared.dir (CONDUIT_SHARED_DIR)");
        assertThat(availability.details()).containsEntry("shared.dir", missing.toString());
    }

    /**
     * A process out of descriptors when it built its Conduit (a service holding ulimit -n of them)
     * had memfd UNAVAILABLE with "memfd_create with sealing needs Linux 3.17 or later and must not
     * be blocked by a seccomp filter; use the posix plugin instead": the wrong cause and the wrong
     * remedy (found running a service under ulimit -n 20). A shortage now says which limit to raise;
     * an errno that says memfd is not there still gets the kernel and seccomp.
     */
    @Test
    void aProbeOutOfDescriptorsSaysWhichLimitToRaiseNotThatTheKernelLacksMemfd() {
        java.util.Map<Integer, String> remedies = java.util.Map.of(
                dev.conduit.linux.Errno.EMFILE, "raise its open-file limit (ulimit -n",
                dev.conduit.linux.Errno.ENFILE, "raise fs.file-max",
                dev.conduit.linux.Errno.ENOMEM, "not enough memory",
                dev.conduit.linux.Errno.ENOSYS, "needs Linux 3.17 or later");
        remedies.forEach((errno, remedy) -> {
            Availability availability = MemfdPlugin.probe(TestContext.of(shared), FailingLibc.failing("memfdCreate", errno),
                    dev.conduit.linux.Linux.availability(), dev.conduit.shm.Meminfo.PATH);
            assertThat(availability.isAvailable()).isFalse();
            assertThat(availability.reason()).contains(dev.conduit.linux.Errno.name(errno)).contains(remedy);
            if (errno != dev.conduit.linux.Errno.ENOSYS) {
                assertThat(availability.reason()).doesNotContain("Linux 3.17").doesNotContain("seccomp").doesNotContain("posix plugin");
            }
        });
    }

    @Test
    void isUnavailableWhenTheSharedDirectoryIsAFile() throws IOException {
        Path file = Files.createFile(shared.resolve("file"));
        assertThat(plugin.probe(TestContext.of(file)).reason()).contains("not a directory");
    }

    /**
     * Importing only connects to a producer's socket, so a directory this process cannot write is
     * enough for it; pools and workers, which put a lease and a socket there, are refused naming
     * why. (The probe used to make the plugin unavailable, imports included.)
     */
    @Test
    void isAvailableForImportsOnlyWhenTheSharedDirectoryIsNotWritable() throws Exception {
        Path readOnly = Files.createDirectory(shared.resolve("ro"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("r-x------")));
        // Root may write anywhere: probe from a JVM without the capability that lets it.
        String output = WithoutDacOverride.needed() ? WithoutDacOverride.run(readOnly.toString()) : ProbingProcess.report(readOnly);
        String notWritable = "the shared directory " + readOnly + " is not writable by this user";
        assertThat(output).contains("available=true")
                .contains("notHere=MEMORY,AM,RMA,ATOMICS,WAKEUP why=" + notWritable)
                .contains("provider=NotSupportedException: memfd offers no memory provider (pool) here, only imports: " + notWritable)
                .contains("transport=NotSupportedException: memfd offers no transport here, only imports: " + notWritable)
                .contains("shared.dir (CONDUIT_SHARED_DIR)");
        assertThat(Leaks.files(readOnly)).isEmpty();
    }

    /**
     * access(2) judges by the real uid with capabilities cleared, so it calls a directory unwritable
     * for a process that can write it through CAP_DAC_OVERRIDE (a container run with --cap-add): the
     * probe creates a file to decide, and rules nothing out.
     */
    @Test
    void aDirectoryThatAccessCallsUnwritableButThatCanBeWrittenRulesNothingOut() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(WithoutDacOverride.needed(), "needs root to hand a capability to uid 65534");
        Path rootsOnly = Files.createDirectory(shared.resolve("roots"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        String output = WithoutDacOverride.runAsNobodyWithDacOverride(rootsOnly.toString());
        assertThat(output).contains("available=true").contains("notHere= why=").contains("provider=opened").contains("transport=opened");
        assertThat(Leaks.files(rootsOnly)).as("what the probe and the opened provider and transport left").isEmpty();
    }

    @Test
    void isUnavailableWhenTheSharedDirectoryCannotBeReadAndSearched() throws Exception {
        // Importing opens the directory (read) and the socket beneath it (search).
        for (String mode : List.of("rw-------", "--x------")) {
            Path closed = Files.createDirectory(shared.resolve("closed" + mode.replace('-', '_')),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(mode)));
            String output = WithoutDacOverride.needed() ? WithoutDacOverride.run(closed.toString()) : ProbingProcess.report(closed);
            assertThat(output).as(mode).contains("available=false").contains("the shared directory " + closed + " cannot be read and searched")
                    .contains("read and search (r-x) permissions").contains("shared.dir (CONDUIT_SHARED_DIR)");
        }
    }

    @Test
    void rulesNothingOutWhereTheSharedDirectoryIsWritable() {
        assertThat(plugin.probe(TestContext.of(shared)).unsupportedHere()).isEmpty();
    }

    /**
     * A container's {@code -v DIR:DIR:ro}: imports only, and the probe names the read-only mount,
     * not the user's permissions.
     */
    @Test
    void isAvailableForImportsOnlyOnAReadOnlyMountSayingSo() throws Exception {
        String output = WithoutDacOverride.runThrough(List.of("unshare", "--mount", "sh", "-c",
                "mount --bind -o ro \"$1\" \"$1\" && shift && exec \"$@\"", "read-only-mount", shared.toString()), shared.toString());
        String readOnlyMount = "the shared directory " + shared + " is on a read-only mount: mount it read-write (for a container, "
                + "-v DIR:DIR without :ro), or set shared.dir (CONDUIT_SHARED_DIR) to a writable directory";
        assertThat(output).contains("available=true").contains("notHere=MEMORY,AM,RMA,ATOMICS,WAKEUP why=" + readOnlyMount)
                .contains("provider=NotSupportedException: memfd offers no memory provider (pool) here, only imports: " + readOnlyMount)
                .contains("transport=NotSupportedException: memfd offers no transport here, only imports: " + readOnlyMount);
        assertThat(Leaks.files(shared)).isEmpty();
    }

    @Test
    void isAvailableWithASharedDirectoryTooLongForASocketAddressWhichItReachesThroughProcSelfFd() throws IOException {
        Path deep = Files.createDirectories(shared.resolve("d".repeat(120)));
        Availability availability = plugin.probe(TestContext.of(deep));
        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.details()).containsEntry("socket.address",
                "through /proc/self/fd (the shared directory's path is longer than " + FdProtocol.maxDirectoryLength() + " bytes)");
    }

    @Test
    void isUnavailableWhenTheSharedDirectoryIsTooLongForASocketAddressAndProcIsNotMounted() throws IOException {
        Path deep = Files.createDirectories(shared.resolve("d".repeat(60)));
        Path noProc = shared.resolve("proc/self/fd");
        Availability availability = MemfdPlugin.socketReachability(deep, noProc, new java.util.LinkedHashMap<>());
        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).contains(deep.toString()).contains("too long").contains(String.valueOf(FdProtocol.maxDirectoryLength()))
                .contains(noProc + ", through which a longer one is reached, is not there").contains("mount /proc")
                .contains("shared.dir (CONDUIT_SHARED_DIR)");
        assertThat(MemfdPlugin.socketReachability(shared, noProc, new java.util.LinkedHashMap<>()).isAvailable())
                .as("a short directory, without /proc").isTrue();
    }

    @Test
    void leavesRoomForSharedDirectoriesOfUsualLength() {
        assertThat(FdProtocol.SOCKET_NAME_LENGTH).isEqualTo(68);
        assertThat(FdProtocol.maxDirectoryLength()).isEqualTo(38);
    }
}
